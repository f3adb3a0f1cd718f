"""Prove every task before anyone trains on it: gold scores 1, null and tricks score 0.

For each task directory, in the sandbox:
- the oracle: `solution/solve.sh` runs in a fresh workspace, then `tests/test.sh` must give 1.0;
- the null submission (an untouched workspace) must give 0;
- every adversarial submission listed in `tests/validation.json` (and, for answer and reply
  tasks, the instruction echoed back) must give 0;
- a leak check: the reference answer must not appear in the instruction or the workspace,
  outside the parts where it legitimately may (the offered options, the source text).
A verifier that crashes or a sandbox that fails makes the task invalid, not passed.
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
from rlforge.sandbox import SandboxPool, SandboxSpec, prepare_env, read_file
from rlforge.verify.standalone import BATCH_PREFIX, REWARD_PREFIX

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
    """One scored submission: the reward, or why there is none (an infrastructure error)."""

    reward: dict | None
    error: str | None = None
    stdout: str = ""


def parse_reward(stdout: str, logs_dir: Path | None) -> dict | None:
    """The reward the verifier printed (first RLFORGE_REWARD line), else reward.json/.txt."""
    for line in stdout.splitlines():
        if line.startswith(REWARD_PREFIX):
            try:
                return json.loads(line[len(REWARD_PREFIX):])
            except ValueError:
                return None
    if logs_dir is not None:
        for name in ("reward.json", "reward.txt"):
            try:
                data = read_file(logs_dir, name).decode()
            except (OSError, ValueError):
                continue
            try:
                value = json.loads(data)
            except ValueError:
                continue
            if isinstance(value, dict) and "total" in value:
                return value
            if isinstance(value, (int, float)):
                return {"total": float(value), "components": {}, "outcome": "pass" if value >= 1 else "fail"}
    return None


def _logs_dir(scratch: Path) -> Path:
    """A fresh /logs/verifier for one sandboxed run (writable by the sandbox's user)."""
    logs = Path(tempfile.mkdtemp(prefix="logs-", dir=scratch))
    logs.chmod(0o777)
    return logs


def _reward_run(result, logs: Path) -> VerifierRun:
    """The reward a finished test.sh left (stdout or reward files), or why there is none."""
    reward = parse_reward(result.stdout_text, logs)
    if reward is None:
        return VerifierRun(None, f"verifier gave no reward (exit {result.exit_code}): "
                           f"{result.stderr_text.strip()[-300:]}", result.stdout_text)
    return VerifierRun(reward, None, result.stdout_text)


def load_task(task_dir: Path) -> dict[str, Any]:
    """task.toml as a dict; a clear error when the directory is not a task."""
    toml_path = task_dir / "task.toml"
    if not toml_path.is_file():
        raise UserError(f"{task_dir}: not a task directory (no task.toml)")
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
    """Runs a task's scripts in sandboxes; shared by validation and by `rlforge run`."""

    def __init__(self, pool: SandboxPool, sandbox_mode: str = "bwrap",
                 spec_hook: Callable[[Path, dict], dict] | None = None):
        self.pool = pool
        self.mode = sandbox_mode
        self.spec_hook = spec_hook or prepared_env_hook

    def _spec(self, task_dir: Path, meta: dict, **fields) -> SandboxSpec:
        extra = self.spec_hook(task_dir, meta) if self.spec_hook else {}
        env = {"RLFORGE_SANDBOXED": "1", **extra.pop("env", {})}
        return SandboxSpec(mode=self.mode, env=env, **{**extra, **fields})

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

    async def verify(self, task_dir: Path, meta: dict, ws: Path, scratch: Path) -> VerifierRun:
        """Run tests/test.sh against the workspace and read the reward."""
        logs = _logs_dir(scratch)
        timeout = float(meta.get("verifier", {}).get("timeout_sec", 60))
        spec = self._spec(task_dir, meta, workspace=ws, tests=task_dir / "tests", logs=logs,
                          timeout_sec=timeout)
        result = await self.pool.run(["bash", "/tests/test.sh"], spec)
        if result.failure:
            return VerifierRun(None, str(result.failure))
        if result.timed_out:
            return VerifierRun(None, f"verifier timed out after {timeout:.0f}s")
        return _reward_run(result, logs)

    async def oracle(self, task_dir: Path, meta: dict, ws: Path, scratch: Path) -> VerifierRun:
        """solution/solve.sh, then tests/test.sh, in one sandbox (as Harbor's oracle agent and
        verifier share one container)."""
        logs = _logs_dir(scratch)
        timeout = (float(meta.get("agent", {}).get("timeout_sec", 120))
                   + float(meta.get("verifier", {}).get("timeout_sec", 60)))
        spec = self._spec(task_dir, meta, workspace=ws, tests=task_dir / "tests", logs=logs,
                          timeout_sec=timeout, ro_binds={"/solution": task_dir / "solution"})
        script = ('bash /solution/solve.sh; s=$?; if [ "$s" -ne 0 ]; then '
                  'echo "solve.sh exited $s" >&2; exit 97; fi; exec bash /tests/test.sh')
        result = await self.pool.run(["bash", "-c", script], spec)
        if result.failure:
            return VerifierRun(None, str(result.failure))
        if result.timed_out:
            return VerifierRun(None, f"oracle timed out after {timeout:.0f}s")
        if result.exit_code == 97:
            return VerifierRun(None, f"solve.sh failed: {result.stderr_text.strip()[-300:]}")
        return _reward_run(result, logs)

    async def verify_batch(self, task_dir: Path, meta: dict, submissions: list[dict],
                           scratch: Path) -> dict[str, VerifierRun]:
        """Score several submissions with rlforge's own verifier in one sandboxed run, each
        against a fresh copy of the starting workspace (`rlforge_verify.py --batch`)."""
        ws = fresh_workspace(task_dir, scratch)
        batch_dir = Path(tempfile.mkdtemp(prefix="batch-", dir=scratch))
        (batch_dir / "submissions.json").write_text(json.dumps(submissions))
        batch_dir.chmod(0o755)
        timeout = float(meta.get("verifier", {}).get("timeout_sec", 60)) * max(1, len(submissions))
        spec = self._spec(task_dir, meta, workspace=ws, tests=task_dir / "tests",
                          timeout_sec=timeout, ro_binds={"/rlforge-batch": batch_dir})
        result = await self.pool.run(["python3", f"/tests/{VERIFIER_FILE}", "/tests/reference.json",
                                      "--batch", "/rlforge-batch/submissions.json"], spec)
        if result.failure or result.timed_out:
            error = str(result.failure) if result.failure else f"batch timed out after {timeout:.0f}s"
            return {s["name"]: VerifierRun(None, error) for s in submissions}
        for line in result.stdout_text.splitlines():
            if line.startswith(BATCH_PREFIX):
                found = json.loads(line[len(BATCH_PREFIX):])
                return {s["name"]: VerifierRun(found.get(s["name"]),
                                               None if s["name"] in found else "not scored")
                        for s in submissions}
        error = f"batch verifier gave no result (exit {result.exit_code}): {result.stderr_text.strip()[-300:]}"
        return {s["name"]: VerifierRun(None, error) for s in submissions}


BATCHABLE = ("answer", "reply", "script")


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
        own_verifier = (task_dir / "tests" / VERIFIER_FILE).is_file()
        if own_verifier and rl.get("verifier") in BATCHABLE:
            runs = await runner.verify_batch(task_dir, meta, subs, scratch)
        else:
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
                        concurrency: int | None = None, ray=None) -> list[ValidationResult]:
    """Validate tasks concurrently through one sandbox pool; results in input order.

    With `ray` (an `rlforge.executors.cluster.RayOptions`), each task is validated by the
    same `validate_task` in a Ray worker on some node, with that node's sandbox pool of
    `workers` (0: two per CPU of the node); see `rlforge.executors.validation`.
    """
    if ray is not None:
        from rlforge.executors.validation import validate_on_ray

        return await validate_on_ray(task_dirs, ray, workers=workers, sandbox_mode=sandbox_mode,
                                     spec_hook=spec_hook, progress=progress,
                                     concurrency=concurrency)
    scratch_root = Path(tempfile.mkdtemp(prefix="rlforge-validate-"))
    try:
        async with SandboxPool(workers) as pool:
            runner = TaskRunner(pool, sandbox_mode, spec_hook)
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
