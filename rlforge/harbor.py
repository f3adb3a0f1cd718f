"""A Harbor environment backed by rlforge's bubblewrap sandbox: Harbor trials of rlforge
tasks without Docker.

    harbor trial start -p TASK -a oracle -e rlforge.harbor:SandboxEnvironment

Harbor (>= 0.26, Python >= 3.12) imports this class by its path; rlforge must be importable
in Harbor's Python (`pip install rlforge` there, or `PYTHONPATH` set to a checkout). Only
the standard library, `rlforge.sandbox` and `rlforge.taskdir` are used, so rlforge's own
dependencies are not needed in that environment.

What a container would be is here a set of host directories, each bound into a fresh
sandbox for every command Harbor runs: the task's starting workspace
(`rlforge.taskdir.WORKSPACE`, which its Dockerfile copies to /app) at /app, Harbor's log
directories under /logs, and whatever Harbor uploads (/tests, /solution, ...) at the path
it names. The Dockerfile is not built: the sandbox gives the host's system read-only,
Debian's python3 on PATH, and for a task that names its Python requirements
(`[metadata.rlforge] env_requirements`) the venv rlforge prepares for it at /opt/venv, as
`rlforge run` does. Every command runs as the sandbox's unprivileged user, with no network
(tasks ask for `network_mode = "no-network"`), the task's memory and CPUs, and the process
tree killed when the command ends, so nothing an agent starts outlives its command.

The trust boundary: the agent's commands never see /tests or /logs/verifier. Harbor's own
commands (as root) and those it runs once it has uploaded /tests (the verifier's: in
rlforge's tasks, `[verifier] environment_mode = "separate"`, in an environment of their
own that holds only the agent's /app) are trusted: they alone see both. There test.sh's
verifier does not run the agent's code itself, which would share its uid; it asks a
scorer in this process (`rlforge.verify.scorer`), which scores as `rlforge run` does,
the agent's code in sandboxes of its own.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from rlforge.sandbox import SandboxSpec, copy_tree, read_file, sandbox_settings
from rlforge.sandbox.mounts import Mounts, grown_past_cap, trusted_fields
from rlforge.sandbox.pool import run_in_thread
from rlforge.sandbox.spec import LOGS_MOUNT, TESTS_MOUNT, WORKSPACE_MOUNT
from rlforge.taskdir import TASK_TOML, WORKSPACE, read_task_toml
from rlforge.verify.scorer import SOCKET_MOUNT, Scorer

TYPE = "rlforge-sandbox"
DEFAULT_TIMEOUT_SEC = 3600.0
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
        self._mounts: Mounts | None = None
        self._fields: dict[str, Any] = {}
        #: an agent's command has run: a workspace too large for a sandbox is then its doing
        self._agent_ran = False

    # --- lifecycle -------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="rlforge-harbor-"))
        self._root.chmod(0o755)
        app = self._task_dir / WORKSPACE
        self._mounts = Mounts(self._root)
        workspace = self._mounts.add(WORKSPACE_MOUNT)
        if app.is_dir():
            shutil.copytree(app, workspace, dirs_exist_ok=True, symlinks=True)
        for path in LOG_DIRS:
            self._mounts.add(path)
        self._fields = self._task_fields()

    async def stop(self, delete: bool) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def _task_fields(self) -> dict[str, Any]:
        """Sandbox fields the task asks for (memory, CPUs, its prepared venv), then the
        limits the user set in the `sandbox.*` settings, which win over the task's as in
        `rlforge run` (not the mode, as Harbor's commands always run isolated, nor the
        timeout, which Harbor gives each command)."""
        from rlforge.config import Config, default_cache_dir

        settings = Config.load().settings()  # an entry point (Harbor loads it): no flags
        fields: dict[str, Any] = {}
        memory = self._effective_memory_mb
        if memory:
            fields["memory_mb"] = int(memory)
        cpus = self._effective_cpus
        if cpus:
            fields["cpus"] = float(cpus)
        if (self._task_dir / TASK_TOML).is_file():
            from rlforge.verify.runner import prepared_env_hook

            cache_dir = default_cache_dir(settings)
            fields.update(prepared_env_hook(self._task_dir, read_task_toml(self._task_dir),
                                            cache_dir))
        limits = sandbox_settings(settings.sandbox)
        for owned in ("mode", "timeout_sec"):  # Harbor gives each command its timeout
            limits.pop(owned, None)
        return {**fields, **limits}

    @property
    def _task_dir(self) -> Path:
        """The task directory Harbor took the environment from."""
        return Path(self.environment_dir).parent

    # --- where a path lives on the host ----------------------------------------------

    def _locate(self, path: str, create: str | None = None) -> Path:
        """The host path of a sandbox path; `create` names the directory to mount when no
        mounted directory holds it yet."""
        assert self._mounts is not None, "the environment is not started"
        root, relative = self._mounts.find(PurePosixPath(path), create)
        return root.joinpath(*relative.parts)

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

    def _spec(self, cwd: str | None, env: dict[str, str] | None, timeout_sec: float | None,
              trusted: bool = False) -> SandboxSpec:
        assert self._mounts is not None, "the environment is not started"
        variables = {**(self._merge_env(env) or {}), "RLFORGE_SANDBOXED": "1"}
        return SandboxSpec(**self._mounts.binds(READ_ONLY, trusted=trusted), env=variables,
                           cwd=cwd or self.task_env_config.workdir or WORKSPACE_MOUNT,
                           timeout_sec=float(timeout_sec or DEFAULT_TIMEOUT_SEC),
                           **(trusted_fields(self._fields) if trusted else self._fields))

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        """Run `command` in a fresh sandbox. Harbor's own commands (as user root) and every
        command once Harbor has uploaded /tests (the verifier's: the agent is done by then,
        and with rlforge's tasks this environment is the verifier's own) are trusted: they
        alone see /tests and /logs/verifier, and a verifier there asks this process's
        scorer (`rlforge.verify.scorer`) instead of running policy code itself. The agent's
        commands see neither.

        What the agent caused is its command's result, never an error of the trial: once
        an agent's command has run, a workspace its commands grew past the sandbox's caps
        is exit 126 with the reason on stderr (as in `rlforge run`). Only a failure of
        the sandbox itself raises. When Harbor cancels this (its agent timeout), the
        sandbox's process tree is killed and its thread ended before the cancellation
        goes on."""
        assert self._mounts is not None, "the environment is not started"
        tests, workspace = self._mounts.host(TESTS_MOUNT), self._mounts.host(WORKSPACE_MOUNT)
        trusted = self._resolve_user(user) in ("root", 0) or tests is not None
        spec = self._spec(cwd, env, timeout_sec, trusted)
        if tests is not None and workspace is not None:
            scorer = Scorer(tests, workspace, self._fields)
            async with scorer.serving() as (where, variables):
                spec = dataclasses.replace(spec, env={**spec.env, **variables},
                                           ro_binds={**spec.ro_binds, SOCKET_MOUNT: where})
                result = await run_in_thread(["bash", "-c", command], spec)
        else:
            grown = self._agent_ran and not trusted
            try:
                result = await run_in_thread(["bash", "-c", command], spec)
            finally:
                self._agent_ran = self._agent_ran or not trusted
            not_run = grown_past_cap(result, grown)
            if not_run is not None:
                return ExecResult(stdout="", stderr=f"rlforge: {not_run}\n", return_code=126)
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
