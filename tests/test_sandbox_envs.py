"""Prepared environments: built once from the system python, cached by hash, mounted read-only."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlforge.errors import UserError
from rlforge.sandbox import SandboxSpec, prepare_env, run
from rlforge.sandbox.envs import env_key

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[1]


def make_wheel(where: Path, version: str = "0.1") -> Path:
    """A tiny pure-Python wheel with a console script, so pip can install it offline."""
    files = {
        "rlforge_hello/__init__.py": f"def main():\n    print('hello from rlforge-hello {version}')\n",
        f"rlforge_hello-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: rlforge-hello\nVersion: {version}\n",
        f"rlforge_hello-{version}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: rlforge-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"rlforge_hello-{version}.dist-info/entry_points.txt":
            "[console_scripts]\nhello-rlforge = rlforge_hello:main\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"rlforge_hello-{version}.dist-info/RECORD,,")
    files[f"rlforge_hello-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = where / f"rlforge_hello-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def test_a_bare_env_runs_inside_at_opt_venv(shared_cache):
    venv = prepare_env([], shared_cache)
    r = run(["python", "-c", "import sys; print(sys.prefix, sys.executable, sys.version_info[:2])"],
            SandboxSpec(venv=venv))
    assert r.stdout_text.split()[:2] == ["/opt/venv", "/opt/venv/bin/python"], r
    assert run(["sh", "-c", "touch /opt/venv/x"], SandboxSpec(venv=venv)).exit_code != 0  # read-only


def test_the_env_is_cached_by_content(shared_cache, tmp_path):
    first = prepare_env([], shared_cache)
    marker = (first / "rlforge-env.json").stat()
    assert prepare_env([], shared_cache) == first
    assert (first / "rlforge-env.json").stat().st_mtime_ns == marker.st_mtime_ns  # not rebuilt
    wheel = make_wheel(tmp_path)
    assert env_key([str(wheel)]) != env_key([])
    key = env_key([str(wheel)])
    make_wheel(tmp_path).write_bytes(wheel.read_bytes() + b"\0")  # same name, other bytes
    assert env_key([str(wheel)]) != key


def test_installed_console_scripts_work_in_the_sandbox(tmp_path):
    wheel = make_wheel(tmp_path)
    venv = prepare_env([str(wheel)], tmp_path / "cache", pip_args=["--no-index"])
    assert (venv / "bin" / "hello-rlforge").read_text().startswith("#!/opt/venv/bin/python")
    r = run(["hello-rlforge"], SandboxSpec(venv=venv))
    assert r.stdout_text == "hello from rlforge-hello 0.1\n", r


def test_concurrent_callers_share_one_build(tmp_path):
    wheel = make_wheel(tmp_path)
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from rlforge.sandbox import prepare_env\n"
            f"p = prepare_env([{str(wheel)!r}], {str(tmp_path / 'cache')!r}, pip_args=['--no-index'])\n"
            "print(p, (p / 'rlforge-env.json').stat().st_ino)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = {p.communicate(timeout=300)[0] for p in procs}
    assert len(outputs) == 1, outputs  # same path, same marker file: built exactly once
    envs = tmp_path / "cache" / "envs"
    assert sorted(p.name for p in envs.iterdir() if p.is_dir()) == [Path(outputs.pop().split()[0]).name]


def test_a_failed_install_says_why_and_leaves_nothing(tmp_path):
    with pytest.raises(UserError, match="no-such-package-rlforge"):
        prepare_env(["no-such-package-rlforge==9.9"], tmp_path / "cache", pip_args=["--no-index"])
    assert [p for p in (tmp_path / "cache" / "envs").iterdir() if p.is_dir()] == []
