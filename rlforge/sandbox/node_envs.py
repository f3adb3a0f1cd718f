"""Prepared environments of JavaScript/TypeScript tests: node_modules built outside the sandbox.

The direct dependencies a project's tests need (`name@version` lines) are installed with
`npm install --ignore-scripts` (no install script of the project or a dependency runs on
the host), with network, into a directory of the cache keyed by those lines and node's
and npm's versions; the sandbox mounts it read-only at /opt/venv. The build prepares it
through the JavaScript test runner, and scoring prepares it again from the task's
`[metadata.rlforge] node_requirements` (`rlforge.verify.runner`).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from rlforge.errors import UserError

MANIFEST = "package.json"
FORMAT = 1  # bump when the layout of a prepared environment changes
MARKER = "rlforge-node-env.json"


def split_requirement(req: str) -> tuple[str, str]:
    """(`name`, `spec`) of a requirement line `name@spec` (`@scope/name@spec` too)."""
    at = req.find("@", 1)
    return (req, "") if at < 0 else (req[:at], req[at + 1:])


@functools.cache
def tool_versions() -> dict[str, str]:
    """node's and npm's versions (the runtime environments are built with)."""
    out = {}
    for tool in ("node", "npm"):
        try:
            proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            out[tool] = proc.stdout.strip().lstrip("v")
        except (OSError, subprocess.TimeoutExpired):
            out[tool] = ""
    return out


def _npm_env(home: Path, cache: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "npm_config_cache": str(cache), "npm_config_update_notifier": "false",
            "npm_config_fund": "false", "npm_config_audit": "false",
            "npm_config_ignore_scripts": "true", "npm_config_save_exact": "true",
            "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items()
               if k.lower() in ("http_proxy", "https_proxy", "no_proxy", "npm_config_registry")}}


def _npm_install(build: Path, requirements: list[str], npm_cache: Path) -> dict[str, str]:
    """Install `requirements` into `build/node_modules`; {name: version installed}."""
    deps = dict(split_requirement(r) for r in requirements)
    (build / MANIFEST).write_text(json.dumps(
        {"name": "rlforge-test-env", "version": "0.0.0", "private": True,
         "devDependencies": {k: v or "*" for k, v in deps.items()}}, indent=1, sort_keys=True))
    home = build / ".home"
    home.mkdir()
    if deps:
        try:
            proc = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                                   "--loglevel=error", "--include=dev"],
                                  cwd=build, env=_npm_env(home, npm_cache), capture_output=True,
                                  text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"npm install failed: {exc}") from None
        if proc.returncode != 0:
            raise UserError(f"npm install of {len(deps)} package(s) failed: "
                            f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    else:
        (build / "node_modules").mkdir()
    shutil.rmtree(home, ignore_errors=True)
    versions = {}
    for name in deps:
        try:
            meta = json.loads((build / "node_modules" / name / MANIFEST).read_text())
            versions[name] = str(meta["version"])
        except (OSError, ValueError, KeyError):
            versions[name] = ""
    return versions


def env_key(requirements: list[str]) -> str:
    """The content key of the environment of these requirement lines."""
    blob = json.dumps({"format": FORMAT, "tools": tool_versions(),
                       "requirements": sorted(requirements)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def prepare_node_env(requirements: list[str], cache_dir: str | os.PathLike) -> Path:
    """The environment of `requirements` (`cache_dir/node-<key>`), installed on first use;
    `UserError` when npm cannot install them."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    dest = cache_dir / f"node-{env_key(requirements)}"
    if (dest / MARKER).is_file():
        return dest
    with open(cache_dir / f"{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / MARKER).is_file():
            return dest
        build = Path(tempfile.mkdtemp(prefix=f"{dest.name}-", dir=cache_dir))
        try:
            versions = _npm_install(build, sorted(requirements), cache_dir / "npm-cache")
            (build / MARKER).write_text(json.dumps(
                {"requirements": sorted(requirements), "installed": versions,
                 "tools": tool_versions()}, indent=1, sort_keys=True))
            for path in [build, *build.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
            shutil.rmtree(dest, ignore_errors=True)
            os.rename(build, dest)
        finally:
            shutil.rmtree(build, ignore_errors=True)
    return dest


def pinned(env: Path, requirements: list[str]) -> list[str]:
    """`name@version` of each requirement as the environment `env` holds it."""
    installed = json.loads((env / MARKER).read_text())["installed"]
    return [f"{name}@{installed.get(name, spec)}" for name, spec in map(split_requirement, requirements)]
