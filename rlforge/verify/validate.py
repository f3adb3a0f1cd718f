"""Prove every task before anyone trains on it: gold scores 1, null and tricks score 0.

For each task directory:
- the oracle: `solution/solve.sh` runs in a fresh workspace in the sandbox, then the
  task's verifier scores what it left, exactly as a rollout is scored (policy code in
  sandboxes of its own, the reward computed here: see `rlforge.verify.boundary`);
- the null submission (an untouched workspace) must give 0;
- every adversarial submission listed in `tests/validation.json` (and, for answer and reply
  tasks, the instruction echoed back) must give 0, as a scored fail, not a missing reward;
- a leak check: the reference answer must not appear in the instruction or the workspace,
  outside the parts where it legitimately may (the offered options, the source text).
A sandbox that cannot start or broken verifier data makes the task invalid, not passed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import shutil
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from rlforge.errors import UserError
from rlforge.sandbox import SandboxPool, SandboxSpec, prepare_env, settings_or_configured, spec_of
from rlforge.tasks.staging import check_task
from rlforge.verify.boundary import (SandboxBroken, SandboxPolicy, TreeTooLarge, load_reference,
                                     score_workspace)

VERIFIER_FILE = "rlforge_verify.py"

VALIDATION_FILE = "validation.json"


@dataclass
class Check:
    name: str
    expected: str
    got: float | None
    ok: bool
    detail: str = ""


@dataclass
class ValidationResult:
    task_id: str
    path: str
    generator: str
    ok: bool
    checks: list[Check] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VerifierRun:
    """One scored submission: the reward, or why there is none (an infrastructure error).
    `too_large` says the workspace did not fit the sandbox's capped file system: the
    policy's fail when the policy wrote it (see `rlforge.run.environment`)."""

    reward: dict | None
    error: str | None = None
    stdout: str = ""
    too_large: str | None = None


def load_task(task_dir: Path) -> dict[str, Any]:
    """task.toml as a dict; a clear error when the directory is not a task, or not whole."""
    toml_path = task_dir / "task.toml"
    if not toml_path.is_file():
        raise UserError(f"{task_dir}: not a task directory (no task.toml)")
    check_task(task_dir)
    return tomllib.loads(toml_path.read_text(encoding="utf-8"))


def fresh_workspace(task_dir: Path, root: Path, files: dict[str, bytes] | None = None) -> Path:
    """A new copy of the task's starting workspace (environment/app), plus submitted files."""
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
    app = task_dir / "environment" / "app"
    if app.is_dir():
        shutil.copytree(app, ws, dirs_exist_ok=True, symlinks=True)
    for rel, data in (files or {}).items():
        target = ws / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    ws.chmod(0o777)
    for p in ws.rglob("*"):
        p.chmod(0o777 if p.is_dir() else 0o666 | (p.stat().st_mode & 0o111))
    return ws


@functools.lru_cache(maxsize=32)
def _prepared_env(requirements: tuple[str, ...], pip_args: tuple[str, ...], cache_dir: Path) -> Path:
    return prepare_env(list(requirements), cache_dir, pip_args=list(pip_args))


def prepared_env_hook(task_dir: Path, meta: dict) -> dict:
    """Sandbox fields a task asks for in [metadata.rlforge]: `env_requirements` (and
    `env_pip_args`) get the prepared venv at /opt/venv, built once and cached;
    `sandbox_tmp_mb` a larger /tmp."""
    rl = meta.get("metadata", {}).get("rlforge", {})
    fields: dict[str, Any] = {}
    if "env_requirements" in rl:
        from rlforge.config import Config, default_cache_dir
        fields["venv"] = _prepared_env(tuple(rl["env_requirements"]), tuple(rl.get("env_pip_args", ())),
                                       default_cache_dir(Config.load()))
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
                 spec_hook: Callable[[Path, dict], dict] | None = None,
                 settings: dict[str, Any] | None = None):
        """`settings`: the user's sandbox settings (`rlforge.sandbox.sandbox_settings`);
        None reads them from the flag-less configuration. `sandbox_mode`, unless None,
        wins over theirs."""
        self.pool = pool
        self.settings = settings_or_configured(settings, sandbox_mode)
        self.mode = self.settings["mode"]
        self.spec_hook = spec_hook or prepared_env_hook

    def _fields(self, task_dir: Path, meta: dict) -> dict[str, Any]:
        """SandboxSpec fields every sandbox of this task gets: what the task asks for (its
        venv, /tmp size, [environment] memory_mb), under the user's sandbox settings."""
        asked = dict(self.spec_hook(task_dir, meta)) if self.spec_hook else {}
        memory = meta.get("environment", {}).get("memory_mb")
        if memory and "memory_mb" not in asked:
            asked["memory_mb"] = int(memory)
        env = {"RLFORGE_SANDBOXED": "1", **asked.pop("env", {})}
        return {**asked, **self.settings, "env": env}

    def _spec(self, task_dir: Path, meta: dict, **fields) -> SandboxSpec:
        return spec_of(self._fields(task_dir, meta), **fields)

    async def run_solution(self, task_dir: Path, meta: dict, ws: Path) -> str | None:
        """Run solution/solve.sh in the workspace; an error message if it failed."""
        timeout = float(meta.get("agent", {}).get("timeout_sec", 120))
        spec = self._spec(task_dir, meta, workspace=ws, timeout_sec=timeout,
                          ro_binds={"/solution": task_dir / "solution"})
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
        except (KeyError, TypeError, ValueError) as exc:
            return VerifierRun(None, f"the task's verifier data is broken: {type(exc).__name__}: {exc}")
        return VerifierRun(reward)

    async def oracle(self, task_dir: Path, meta: dict, ws: Path, scratch: Path | None = None) -> VerifierRun:
        """solution/solve.sh in the workspace, then the verifier on what it left."""
        why = await self.run_solution(task_dir, meta, ws)
        if why is not None:
            return VerifierRun(None, f"solve.sh failed: {why}")
        return await self.verify(task_dir, meta, ws, scratch)


def leak_check(task_dir: Path, validation: dict) -> str | None:
    """The reason the task gives its answer away, or None."""
    secrets = [s for s in validation.get("secret_strings", []) if s and len(s.strip()) >= 2]
    if not secrets:
        return None
    instruction = (task_dir / "instruction.md").read_text(encoding="utf-8", errors="replace")
    for allowed in sorted(validation.get("leak_allowed", []), key=len, reverse=True):
        if allowed:
            instruction = instruction.replace(allowed, " ")
    for s in secrets:
        if _mentions(instruction, s):
            return f"the reference answer {s.strip()[:60]!r} appears in the instruction"
    app = task_dir / "environment" / "app"
    if app.is_dir() and not validation.get("workspace_may_contain_answer", False):
        for p in sorted(app.rglob("*")):
            if p.is_file() and p.stat().st_size < 5_000_000:
                text = p.read_text(encoding="utf-8", errors="replace")
                for s in secrets:
                    if _mentions(text, s):
                        return f"the reference answer appears in workspace file {p.relative_to(app)}"
    return None


def _mentions(text: str, secret: str) -> bool:
    """Whether text contains the secret as a whole token (not inside a word or a path)."""
    needle = re.escape(secret.strip())
    return re.search(rf"(?<![\w/-])(?<!\w\.){needle}(?![\w/-])(?!\.\w)", text, re.I) is not None


async def validate_task(task_dir: Path, runner: TaskRunner, scratch_root: Path) -> ValidationResult:
    """Run every check of one task; see the module docstring."""
    task_dir = Path(task_dir)
    meta = load_task(task_dir)
    rl = meta.get("metadata", {}).get("rlforge", {})
    result = ValidationResult(rl.get("task_id", task_dir.name), str(task_dir),
                              rl.get("generator", "?"), ok=True)
    vpath = task_dir / "tests" / VALIDATION_FILE
    validation = json.loads(vpath.read_text()) if vpath.is_file() else {}
    scratch = Path(tempfile.mkdtemp(prefix="validate-", dir=scratch_root))
    try:
        leak = leak_check(task_dir, validation)
        result.checks.append(Check("leak", "no leak", None, leak is None, leak or ""))
        # The oracle: gold solution, then the verifier, in one sandbox.
        run = await runner.oracle(task_dir, meta, fresh_workspace(task_dir, scratch), scratch)
        got = None if run.reward is None else run.reward.get("total")
        result.checks.append(Check("oracle", "1.0", got, got is not None and got >= 1.0 - 1e-9,
                                   run.error or _why(run.reward)))
        # Null and adversarial submissions.
        subs = [{"name": "null", "files": {}}] + [
            {"name": s["name"], "files": s["files"]} for s in validation.get("adversarial", [])]
        if rl.get("verifier") in ("answer", "reply"):
            instruction = (task_dir / "instruction.md").read_text(encoding="utf-8", errors="surrogateescape")
            subs.append({"name": "echo_instruction", "files": {"answer.txt": instruction}})
        runs = {}
        for sub in subs:
            files = {k: v.encode("utf-8", "surrogateescape") for k, v in sub["files"].items()}
            runs[sub["name"]] = await runner.verify(
                task_dir, meta, fresh_workspace(task_dir, scratch, files), scratch)
        for sub in subs:
            run = runs[sub["name"]]
            got = None if run.reward is None else run.reward.get("total")
            result.checks.append(Check(sub["name"], "0", got, got is not None and got <= 1e-9,
                                       run.error or _why(run.reward)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failed = [c for c in result.checks if not c.ok]
    if failed:
        result.ok = False
        c = failed[0]
        if c.name == "leak":
            result.reason = f"leak: {c.detail}"
        elif c.got is None:
            result.reason = f"{c.name}: verifier error: {c.detail}"
        else:
            result.reason = f"{c.name} scored {c.got:g}, expected {c.expected} ({c.detail})"
    return result


def _why(reward: dict | None) -> str:
    if not reward:
        return ""
    parts = [f"{k}={v.get('value', 0):g}" for k, v in sorted(reward.get("components", {}).items())]
    return ", ".join(parts)


async def validate_many(task_dirs: list[Path], *, workers: int = 0, sandbox_mode: str = "bwrap",
                        spec_hook=None, progress: Callable[[ValidationResult], None] | None = None,
                        concurrency: int | None = None, ray=None,
                        settings: dict[str, Any] | None = None) -> list[ValidationResult]:
    """Validate tasks concurrently through one sandbox pool; results in input order.
    `settings`: the user's sandbox settings (None: the flag-less configuration's).

    With `ray` (an `rlforge.executors.cluster.RayOptions`), each task is validated by the
    same `validate_task` in a Ray worker on some node, with that node's sandbox pool of
    `workers` (0: two per CPU of the node); see `rlforge.executors.validation`.
    """
    if ray is not None:
        from rlforge.executors.validation import validate_on_ray

        return await validate_on_ray(task_dirs, ray, workers=workers, sandbox_mode=sandbox_mode,
                                     spec_hook=spec_hook, progress=progress,
                                     concurrency=concurrency, settings=settings)
    scratch_root = Path(tempfile.mkdtemp(prefix="rlforge-validate-"))
    try:
        async with SandboxPool(workers) as pool:
            runner = TaskRunner(pool, sandbox_mode, spec_hook, settings)
            limit = asyncio.Semaphore(concurrency or pool.workers * 2)

            async def one(d: Path) -> ValidationResult:
                async with limit:
                    try:
                        r = await validate_task(d, runner, scratch_root)
                    except UserError as exc:
                        r = ValidationResult(d.name, str(d), "?", False, reason=str(exc))
                if progress:
                    progress(r)
                return r

            return await asyncio.gather(*(one(Path(d)) for d in task_dirs))
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)
