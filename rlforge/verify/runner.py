"""Run a task's scripts in sandboxes and score submissions: the one way every part of rlforge
(validation, `rlforge run`, rescoring, repair scoring, the Ray workers and the Python API)
executes a task.

`TaskRunner` holds a sandbox pool and the user's sandbox settings; `run_solution` runs the
gold solution, `verify` scores a workspace under the trust boundary
(`rlforge.verify.boundary`). `fresh_workspace` makes the workspace a submission is scored in.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlforge.config import Config, default_cache_dir
from rlforge.errors import UnknownName, UserError
from rlforge.sandbox import node_envs
from rlforge.sandbox import (WORKSPACE_MOUNT, SandboxPool, SandboxSpec, prepare_env,
                             settings_with_mode, spec_of)
from rlforge.taskdir import SOLUTION, TESTS, WORKSPACE
from rlforge.verify import kinds
from rlforge.verify.standalone import patch
from rlforge.verify.standalone.rewards import unscorable_reward
from rlforge.verify.boundary import (SandboxBroken, SandboxPolicy, TreeTooLarge, load_reference,
                                     score_workspace)


@dataclass
class VerifierRun:
    """One scored submission: the reward, or why there is none (an infrastructure error).
    `too_large` says the workspace did not fit the sandbox's capped file system: the
    policy's fail when the policy wrote it (see `rlforge.run.environment`)."""

    reward: dict | None
    error: str | None = None
    stdout: str = ""
    too_large: str | None = None


class BadSubmissionPath(UserError):
    """A submitted file's path does not name a file in the workspace (absolute elsewhere,
    '..', a NUL or a character without bytes): the submission's fault."""


def submission_path(path: str) -> str:
    """The workspace-relative path a submitted file names: relative, or absolute under
    /app; `BadSubmissionPath` for anything that would leave the workspace."""
    rel = path[len(WORKSPACE_MOUNT) + 1:] if path.startswith(WORKSPACE_MOUNT + "/") else path
    safe = patch._safe_rel(rel) if isinstance(rel, str) else None
    if safe is None:
        raise BadSubmissionPath(f"{path!r} is not a path inside the workspace "
                                f"(give it relative to {WORKSPACE_MOUNT}, without '..')")
    return safe


def remove_submitted(ws: Path, path: str) -> None:
    """Delete the regular file a submission names as deleted, never through a link."""
    rel = submission_path(path)
    cur = ws
    for part in rel.split("/"):
        cur = cur / part
        if cur.is_symlink():
            return
    if cur.is_file():
        cur.unlink()


def fresh_workspace(task_dir: Path, root: Path, files: dict[str, bytes] | None = None) -> Path:
    """A new copy of the task's starting workspace (`WORKSPACE`), plus submitted files,
    each written inside it whatever links stand on its way (`submission_path` says which
    paths are refused)."""
    named = {submission_path(rel): data for rel, data in (files or {}).items()}
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
    app = task_dir / WORKSPACE
    if app.is_dir():
        shutil.copytree(app, ws, dirs_exist_ok=True, symlinks=True)
    for rel, data in named.items():
        patch.write_file(str(ws), rel, data)
    ws.chmod(0o777)
    for p in ws.rglob("*"):
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666 | (p.stat().st_mode & 0o111))
    return ws


@functools.lru_cache(maxsize=32)
def _prepared_env(requirements: tuple[str, ...], pip_args: tuple[str, ...], cache_dir: Path) -> Path:
    return prepare_env(list(requirements), cache_dir, pip_args=list(pip_args))


def prepared_env_hook(task_dir: Path, meta: dict, cache_dir: Path) -> dict:
    """Sandbox fields a task asks for in [metadata.rlforge]: `env_requirements` (and
    `env_pip_args`) get the prepared venv at /opt/venv, built once and cached in
    `cache_dir` (`rlforge.config.default_cache_dir`), `node_requirements` the prepared
    node_modules environment there (`rlforge.sandbox.node_envs`); `sandbox_tmp_mb` a
    larger /tmp."""
    rl = meta.get("metadata", {}).get("rlforge", {})
    fields: dict[str, Any] = {}
    if "env_requirements" in rl:
        fields["venv"] = _prepared_env(tuple(rl["env_requirements"]), tuple(rl.get("env_pip_args", ())),
                                       Path(cache_dir))
    elif "node_requirements" in rl:
        fields["venv"] = node_envs.prepare_node_env(list(rl["node_requirements"]), Path(cache_dir))
    if rl.get("sandbox_tmp_mb"):
        fields["tmp_mb"] = int(rl["sandbox_tmp_mb"])
    return fields


class TaskRunner:
    """Runs a task's scripts in sandboxes and scores submissions on the host; shared by
    validation, `rlforge run`, rescoring and the Python API.

    Scoring follows the trust boundary (`rlforge.verify.boundary`): the reference is read
    here, policy code runs in sandboxes that see only what it needs, and the reward is
    computed in this process. `VerifierRun.error` is set only for infrastructure failures
    (a sandbox that could not start, a broken task), never for what policy code did.
    """

    def __init__(self, pool: SandboxPool, sandbox_mode: str | None = "bwrap",
                 settings: dict[str, Any] | None = None, cache_dir: Path | None = None):
        """`settings`: the user's sandbox settings (`rlforge.sandbox.sandbox_settings`;
        None: the built-in defaults). `sandbox_mode`, unless None, wins over theirs.
        `cache_dir`: where the tasks' prepared environments are built
        (`rlforge.config.default_cache_dir` of the caller's settings; None: the one the
        environment's RLFORGE_* variables and the defaults give, no config file read)."""
        self.pool = pool
        self.settings = settings_with_mode(settings, sandbox_mode)
        self.mode = self.settings["mode"]
        self.cache_dir = cache_dir or default_cache_dir(Config().settings())

    def _fields(self, task_dir: Path, meta: dict) -> dict[str, Any]:
        """SandboxSpec fields every sandbox of this task gets: what the task asks for (its
        venv, /tmp size, [environment] memory_mb), under the user's sandbox settings."""
        asked = prepared_env_hook(task_dir, meta, self.cache_dir)
        memory = meta.get("environment", {}).get("memory_mb")
        if memory and "memory_mb" not in asked:
            asked["memory_mb"] = int(memory)
        env = {"RLFORGE_SANDBOXED": "1", **asked.pop("env", {})}
        return {**asked, **self.settings, "env": env}

    def spec(self, task_dir: Path, meta: dict, **fields) -> SandboxSpec:
        """A sandbox for one of the task's runs: its fields (`_fields`) and `fields`."""
        return spec_of(self._fields(task_dir, meta), **fields)

    async def run_solution(self, task_dir: Path, meta: dict, ws: Path) -> str | None:
        """Run solution/solve.sh in the workspace; an error message if it failed."""
        timeout = float(meta.get("agent", {}).get("timeout_sec", 120))
        spec = self.spec(task_dir, meta, workspace=ws, timeout_sec=timeout,
                          ro_binds={"/solution": task_dir / SOLUTION})
        result = await self.pool.run(["bash", "/solution/solve.sh"], spec)
        if result.failure or result.timed_out or result.exit_code != 0:
            return (str(result.failure) if result.failure else
                    "timed out" if result.timed_out else
                    f"exit {result.exit_code}: {result.stderr_text[-300:]}")
        return None

    async def verify(self, task_dir: Path, meta: dict, ws: Path, scratch: Path | None = None) -> VerifierRun:
        """Score the submission in `ws` with the task's verifier, policy code sandboxed."""
        try:
            reference = load_reference(task_dir)
        except (OSError, ValueError) as exc:
            return VerifierRun(None, f"the task's tests/reference.json cannot be read: {exc}")
        policy = SandboxPolicy(self.pool, asyncio.get_running_loop(), self.mode,
                               self._fields(task_dir, meta))
        try:
            reward = await asyncio.to_thread(score_workspace, task_dir, reference, ws, policy)
        except TreeTooLarge as exc:
            return VerifierRun(None, f"sandbox: {exc}", too_large=str(exc))
        except SandboxBroken as exc:
            return VerifierRun(None, f"sandbox: {exc}")
        except UnknownName as exc:  # the reference names no verifier: read before any run
            return VerifierRun(None, f"the task's verifier data is broken: {exc}")
        except Exception as exc:
            # Raised on what policy code left (a results file forged into a shape the
            # scorer chokes on, a file nothing can read): its fail, with a reward, as
            # test.sh scores it. A task whose own data raises fails its gold solution in
            # validation, so it is never emitted.
            return VerifierRun(unscorable_reward(f"{type(exc).__name__}: {exc}"[:300]))
        return VerifierRun(reward)

    async def settle(self, task_dir: Path, meta: dict, ws: Path) -> VerifierRun | str | None:
        """What the task's verifier knows of the submission in `ws` before running any of
        it (`VerifierKind.settle`): its reward when a gate decided before the run fails it
        (the same 0 `verify` would give), else a digest of the tree its tests would run in
        (str), or None when the kind cannot tell without running. Nothing is run."""
        try:
            reference = load_reference(task_dir)
            kind = kinds.get(reference["verifier"])
        except (OSError, ValueError, KeyError, UnknownName):
            return None  # `verify` reports the broken data
        if kind.settle is None:
            return None
        policy = SandboxPolicy(self.pool, asyncio.get_running_loop(), self.mode,
                               self._fields(task_dir, meta))
        try:
            known = await asyncio.to_thread(kind.settle, reference, str(task_dir / TESTS), str(ws), policy)
        except Exception:  # noqa: BLE001 - whatever it is, `verify` meets it and reports it
            return None
        if "reward" in known:
            return VerifierRun(known["reward"])
        return known.get("tree")

    async def oracle(self, task_dir: Path, meta: dict, ws: Path, scratch: Path | None = None) -> VerifierRun:
        """solution/solve.sh in the workspace, then the verifier on what it left."""
        why = await self.run_solution(task_dir, meta, ws)
        if why is not None:
            return VerifierRun(None, f"solve.sh failed: {why}")
        return await self.verify(task_dir, meta, ws, scratch)
