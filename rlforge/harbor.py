"""A Harbor environment backed by rlforge's bubblewrap sandbox: Harbor trials of rlforge
tasks without Docker.

    harbor trial start -p TASK -a oracle -e rlforge.harbor:SandboxEnvironment

Harbor (>= 0.26, Python >= 3.12) imports this class by its path; rlforge must be importable
in Harbor's Python (`pip install rlforge` there, or `PYTHONPATH` set to a checkout). Only
the standard library and `rlforge.sandbox` are used, so rlforge's own dependencies are not
needed in that environment.

What a container would be is here a set of host directories, each bound into a fresh
sandbox for every command Harbor runs: the task's starting workspace (`environment/app`,
which its Dockerfile copies to /app) at /app, Harbor's log directories under /logs, and
whatever Harbor uploads (/tests, /solution, ...) at the path it names. The Dockerfile is
not built: the sandbox gives the host's system read-only, Debian's python3 on PATH, and
for a task that names its Python requirements (`[metadata.rlforge] env_requirements`) the
venv rlforge prepares for it at /opt/venv, as `rlforge run` does. Every command runs as
the sandbox's unprivileged user (Harbor's `user` is not honoured: there is no root
inside), with no network (tasks ask for `network_mode = "no-network"`), the task's memory
and CPUs, and the process tree killed when the command ends, so nothing an agent starts
outlives its command.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from rlforge.sandbox import SandboxSpec, copy_tree, read_file, run
from rlforge.sandbox.spec import LOGS_MOUNT, TESTS_MOUNT, VENV_MOUNT, WORKSPACE_MOUNT

TYPE = "rlforge-sandbox"
DEFAULT_TIMEOUT_SEC = 3600.0
#: Paths the sandbox owns (the host's read-only system, its private /tmp): nothing can be
#: uploaded there.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                "/proc", "/dev", "/tmp", "/sys", "/run", "/var", VENV_MOUNT)
#: Read-only inside the sandbox: the tests and the solution Harbor uploads (the verifier
#: and solve.sh only read them).
READ_ONLY = (TESTS_MOUNT, "/solution")
LOG_DIRS = ("/logs/agent", LOGS_MOUNT, "/logs/artifacts")
DOWNLOAD_LIMIT = 1_000_000_000


class SandboxEnvironment(BaseEnvironment):
    """Harbor's `BaseEnvironment` on rlforge's sandbox (see the module docstring)."""

    @staticmethod
    def type() -> str:
        return TYPE

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        if not Path(self.environment_dir).is_dir():
            raise FileNotFoundError(f"{self.environment_dir}: no environment directory")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._root: Path | None = None
        self._mounts: dict[str, Path] = {}
        self._fields: dict[str, Any] = {}

    # --- lifecycle -------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="rlforge-harbor-"))
        self._root.chmod(0o755)
        app = Path(self.environment_dir) / "app"
        self._mounts = {}
        workspace = self._mount(WORKSPACE_MOUNT)
        if app.is_dir():
            shutil.copytree(app, workspace, dirs_exist_ok=True, symlinks=True)
        for path in LOG_DIRS:
            self._mount(path)
        self._fields = self._task_fields()

    async def stop(self, delete: bool) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def _task_fields(self) -> dict[str, Any]:
        """Sandbox fields the task asks for: memory, CPUs, its prepared venv."""
        fields: dict[str, Any] = {}
        memory = self._effective_memory_mb
        if memory:
            fields["memory_mb"] = int(memory)
        cpus = self._effective_cpus
        if cpus:
            fields["cpus"] = float(cpus)
        toml = Path(self.environment_dir).parent / "task.toml"
        if toml.is_file():
            from rlforge.verify.runner import prepared_env_hook

            meta = tomllib.loads(toml.read_text(encoding="utf-8"))
            fields.update(prepared_env_hook(toml.parent, meta))
        return fields

    # --- where a path lives on the host ----------------------------------------------

    def _mount(self, path: str) -> Path:
        assert self._root is not None, "the environment is not started"
        host = self._root / "mounts" / str(len(self._mounts))
        host.mkdir(parents=True)
        host.chmod(0o777)
        self._mounts[path] = host
        return host

    def _locate(self, path: str, create: str | None = None) -> Path:
        """The host path of a sandbox path; `create` names the directory to mount when no
        mounted directory holds it yet."""
        p = PurePosixPath(path)
        if not p.is_absolute() or ".." in p.parts:
            raise ValueError(f"{path!r}: give an absolute path without '..'")
        for mount in sorted(self._mounts, key=len, reverse=True):
            if p == PurePosixPath(mount) or PurePosixPath(mount) in p.parents:
                return self._mounts[mount].joinpath(*p.relative_to(mount).parts)
        if create is None:
            raise FileNotFoundError(f"{path}: not in this environment")
        top = PurePosixPath(create)
        if str(top) == "/" or any(str(top) == s or str(top).startswith(s + "/") for s in SYSTEM_PATHS):
            raise ValueError(f"{create}: rlforge's sandbox keeps {create} read-only; "
                             "upload below another directory")
        self._mount(str(top))
        return self._locate(path)

    # --- files -----------------------------------------------------------------------

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._locate(target_path, create=str(PurePosixPath(target_path).parent))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source_path, target)
        _open(target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        target = self._locate(target_dir, create=target_dir)
        shutil.copytree(source_dir, target, dirs_exist_ok=True, symlinks=True)
        _open(target)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        source = self._locate(source_path)
        data = read_file(source.parent, source.name, max_bytes=DOWNLOAD_LIMIT)
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        Path(target_path).write_bytes(data)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source, target = self._locate(source_dir), Path(target_dir)
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(source, Path(tmp) / "d", max_bytes=DOWNLOAD_LIMIT)  # never follows links
            shutil.copytree(Path(tmp) / "d", target, dirs_exist_ok=True)

    # --- commands --------------------------------------------------------------------

    def _spec(self, cwd: str | None, env: dict[str, str] | None, timeout_sec: float | None) -> SandboxSpec:
        mounts = dict(self._mounts)
        workspace, logs = mounts.pop(WORKSPACE_MOUNT), mounts.pop(LOGS_MOUNT)
        tests = mounts.pop(TESTS_MOUNT, None)
        ro = {p: h for p, h in mounts.items() if p in READ_ONLY}
        rw = {p: h for p, h in mounts.items() if p not in READ_ONLY}
        variables = {**(self._merge_env(env) or {}), "RLFORGE_SANDBOXED": "1"}
        return SandboxSpec(workspace=workspace, logs=logs, tests=tests, ro_binds=ro, rw_binds=rw,
                           env=variables, cwd=cwd or self.task_env_config.workdir or WORKSPACE_MOUNT,
                           timeout_sec=float(timeout_sec or DEFAULT_TIMEOUT_SEC), **self._fields)

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        spec = self._spec(cwd, env, timeout_sec)
        result = await asyncio.to_thread(run, ["bash", "-c", command], spec)
        if result.failure is not None:
            raise RuntimeError(f"rlforge sandbox: {result.failure}")
        if result.timed_out:
            raise RuntimeError(f"Command timed out after {spec.timeout_sec:g} seconds")  # as Docker's
        code = result.exit_code if result.exit_code is not None else 137
        return ExecResult(stdout=result.stdout_text, stderr=result.stderr_text, return_code=code)


def _open(path: Path) -> None:
    """Uploaded files readable (and directories passable) by the sandbox's user."""
    paths = [path, *path.rglob("*")] if path.is_dir() else [path]
    for p in paths:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | (0o755 if p.is_dir() else 0o644))
