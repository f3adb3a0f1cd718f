"""Prepared environments: a venv with a task's dependencies, built once and mounted read-only.

Sandboxed code cannot use the interpreter rlforge itself runs on when that lives under a
private home (a pyenv build in /root, say), and it has no network to install anything. So a
task declares its requirements; `prepare_env` builds a venv from the system interpreter
(`/usr/bin/python3`) on the host, where pip has network, into the cache directory, keyed by
a hash of everything that decides its contents. Later calls, from any process, reuse it. The
venv is made for the sandbox: its scripts point at `/opt/venv`, where `SandboxSpec(venv=...)`
mounts it read-only.

The venv is created without pip of its own (fast, and Debian's python3-venv package is not
needed); rlforge's own pip (22.3 or newer) installs into it with `pip --python`.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rlforge.errors import SandboxUnavailable, UserError
from rlforge.sandbox.spec import VENV_MOUNT

SYSTEM_PYTHON = "/usr/bin/python3"
_FORMAT = 1  # bump when the layout of a prepared env changes
_MARKER = "rlforge-env.json"


def env_key(requirements: Sequence[str], python: str = SYSTEM_PYTHON,
            pip_args: Sequence[str] = ()) -> str:
    """The content hash naming a prepared env.

    It covers the interpreter's version, the requirement lines, the pip arguments and, for a
    requirement that names a local file (a wheel, say), that file's bytes.
    """
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, check=True, env={}).stdout.strip()
    local = {}
    for req in requirements:
        if os.path.isfile(req):
            local[req] = hashlib.sha256(Path(req).read_bytes()).hexdigest()
    blob = json.dumps({"format": _FORMAT, "python": [os.path.realpath(python), version],
                       "requirements": list(requirements), "pip_args": list(pip_args),
                       "local_files": local}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def prepare_env(requirements: Sequence[str], cache_dir: str | os.PathLike, *,
                python: str = SYSTEM_PYTHON, pip_args: Sequence[str] = (),
                timeout_sec: float = 1800) -> Path:
    """Return a venv holding `requirements`, creating it on first use.

    Safe to call from many processes at once: one builds while the others wait on a lock,
    then all get the same directory. A failed build leaves nothing behind.

    Args:
        requirements: pip requirement specifiers ("pytest==8.3.3", a path to a wheel, ...);
            may be empty for a bare venv.
        cache_dir: rlforge's cache directory (`rlforge.config.default_cache_dir`); it must
            not be under a directory the sandbox user cannot read, such as /root.
        python: Interpreter to build from; it must also exist inside the sandbox (/usr/...).
        pip_args: Extra `pip install` arguments (e.g. ["--no-index", "--find-links", DIR]).
        timeout_sec: Give up on pip after this long.

    Returns:
        The venv directory; pass it as `SandboxSpec(venv=...)`.

    Raises:
        SandboxUnavailable: `python -m venv` does not work.
        UserError: pip is missing or too old in rlforge's environment, or could not install
            the requirements (its output tail is included).
    """
    envs = Path(cache_dir) / "envs"
    envs.mkdir(parents=True, exist_ok=True)
    key = env_key(requirements, python, pip_args)
    final = envs / key
    if (final / _MARKER).is_file():
        return final
    with open(envs / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / _MARKER).is_file():
            return final
        staging = envs / f".{key}.building-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _build(staging, requirements, python, pip_args, timeout_sec)
            (staging / _MARKER).write_text(json.dumps(
                {"key": key, "requirements": list(requirements), "pip_args": list(pip_args),
                 "python": python, "created": time.time()}, indent=2) + "\n")
            shutil.rmtree(final, ignore_errors=True)  # an unfinished leftover without marker
            staging.rename(final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return final


def installed_versions(venv: str | os.PathLike) -> list[str]:
    """`name==version` of every distribution installed in a prepared venv, sorted: the
    exact set a Dockerfile pins to reproduce it."""
    found = set()
    for meta in sorted(Path(venv).glob("lib/python*/site-packages/*.dist-info/METADATA")):
        fields = dict(line.split(": ", 1) for line in meta.read_text(encoding="utf-8", errors="replace")
                      .split("\n\n", 1)[0].splitlines() if ": " in line)
        if fields.get("Name") and fields.get("Version"):
            found.add(f"{fields['Name']}=={fields['Version']}")
    return sorted(found, key=str.lower)


def _build(where: Path, requirements: Sequence[str], python: str, pip_args: Sequence[str],
           timeout_sec: float) -> None:
    made = subprocess.run([python, "-m", "venv", "--without-pip", str(where)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        last = (made.stderr.strip().splitlines() or [f"exit {made.returncode}"])[-1]
        raise SandboxUnavailable(f"{python} -m venv failed ({last}); sandboxed code needs a system "
                                 "Python 3 outside /root: `apt-get install -y python3`")
    if requirements:
        if importlib.util.find_spec("pip") is None:
            raise UserError("preparing an environment needs pip in rlforge's own Python: "
                            f"`{sys.executable} -m ensurepip --upgrade`")
        (where / "requirements.txt").write_text("".join(f"{r}\n" for r in requirements))
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(where / "bin" / "python"), "install",
             "--disable-pip-version-check", "--no-input", *pip_args,
             "-r", str(where / "requirements.txt")],
            capture_output=True, text=True, timeout=timeout_sec)
        if pip.returncode != 0:
            output = (pip.stderr or pip.stdout).strip()
            if "no such option: --python" in output:
                raise UserError("preparing an environment needs pip 22.3 or newer in rlforge's own "
                                f"Python: `{sys.executable} -m pip install -U pip`")
            tail = " | ".join(output.splitlines()[-3:])
            raise UserError(f"could not prepare the environment ({', '.join(requirements)}): {tail}")
    _point_scripts_at_mount(where)
    for root, dirs, files in os.walk(where):  # readable by the sandbox user, whatever the umask
        for names, bits in ((dirs, 0o555), (files, 0o444)):
            for name in names:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode | bits)


def _point_scripts_at_mount(where: Path) -> None:
    """Rewrite the build path to /opt/venv in bin/ (shebangs of console scripts, activate)."""
    old, new = str(where).encode(), VENV_MOUNT.encode()
    for entry in (where / "bin").iterdir():
        if entry.is_symlink() or not entry.is_file():
            continue
        data = entry.read_bytes()
        if old in data:
            mode = entry.stat().st_mode
            entry.write_bytes(data.replace(old, new))
            entry.chmod(mode)
