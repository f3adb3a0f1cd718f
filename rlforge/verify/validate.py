"""Prove every task before anyone trains on it: gold scores 1, null and tricks score 0.

For each task directory:
- the oracle: `solution/solve.sh` runs in a fresh workspace in the sandbox, then the
  task's verifier scores what it left, exactly as a rollout is scored (policy code in
  sandboxes of its own, the reward computed here: see `rlforge.verify.boundary`);
- the null submission (an untouched workspace) must give 0;
- every adversarial submission listed in `tests/validation.json` (and, for answer and reply
  tasks, the instruction echoed back; for the questions a shortcut battery screens, each
  of its guesses or cheap programs: `rlforge.verify.battery`) must give 0, as a scored
  fail, not a missing reward (a guess that scores fails the task with the typed reason
  `shortcut`);
- a leak check: the reference answer must not appear in the instruction or the workspace,
  outside the parts where it legitimately may (the offered options, the source text).
A sandbox that cannot start or broken verifier data makes the task invalid, not passed.

A submission whose 0 the task's verifier knows before running any of it (a gate decided
before the run fails it: `rlforge.verify.kinds`' `settle`) is scored by that alone, and a
submission whose tree is the same as an earlier one's gets its result; the other runs,
the oracle's among them, go at once, up to the pool's sandboxes (`score_submissions`).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from rlforge.errors import UserError
from rlforge.sandbox import SandboxPool
from rlforge.taskdir import INSTRUCTION, TESTS, WORKSPACE, load_task
from rlforge.verify import battery, kinds
from rlforge.verify.runner import TaskRunner, VerifierRun, fresh_workspace

#: In the task's tests/: the adversarial submissions and secrets validation checks it with.
VALIDATION_FILE = "validation.json"


@dataclass
class Check:
    name: str
    expected: str
    got: float | None
    ok: bool
    detail: str = ""
    #: wall seconds this check took (a settled one: reading its submission)
    seconds: float = 0.0
    #: how a submission was scored without a run of its own, or "" (it ran): a gate that
    #: fails it before anything runs, or the same tree as a submission that ran
    settled: str = ""


@dataclass
class ValidationResult:
    task_id: str
    path: str
    generator: str
    ok: bool
    checks: list[Check] = field(default_factory=list)
    reason: str = ""
    #: What failed first, typed: `leak`, `oracle`, `null`, `adversarial`, `shortcut` (a
    #: cheap strategy of the shortcut battery got the answer) or `verifier_error`.
    failure: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def leak_check(task_dir: Path, validation: dict) -> str | None:
    """The reason the task gives its answer away, or None."""
    secrets = [s for s in validation.get("secret_strings", []) if s and len(s.strip()) >= 2]
    if not secrets:
        return None
    instruction = (task_dir / INSTRUCTION).read_text(encoding="utf-8", errors="replace")
    for allowed in sorted(validation.get("leak_allowed", []), key=len, reverse=True):
        if allowed:
            instruction = instruction.replace(allowed, " ")
    for s in secrets:
        if _mentions(instruction, s):
            return f"the reference answer {s.strip()[:60]!r} appears in the instruction"
    app = task_dir / WORKSPACE
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
    meta = load_task(task_dir).meta
    rl = meta.get("metadata", {}).get("rlforge", {})
    result = ValidationResult(rl.get("task_id", task_dir.name), str(task_dir),
                              rl.get("generator", "?"), ok=True)
    vpath = task_dir / TESTS / VALIDATION_FILE
    validation = json.loads(vpath.read_text()) if vpath.is_file() else {}
    scratch = Path(tempfile.mkdtemp(prefix="validate-", dir=scratch_root))
    try:
        leak = leak_check(task_dir, validation)
        result.checks.append(Check("leak", "no leak", None, leak is None, leak or ""))

        async def oracle() -> tuple[VerifierRun, float]:
            """The gold solution, then the verifier, in one sandbox."""
            started = time.perf_counter()
            run = await runner.oracle(task_dir, meta, fresh_workspace(task_dir, scratch), scratch)
            return run, time.perf_counter() - started

        # Null and adversarial submissions, scored beside the oracle.
        subs = [{"name": "null", "files": {}}] + [
            {"name": s["name"], "files": s["files"]} for s in validation.get("adversarial", [])]
        kind = kinds.kinds().get(rl.get("verifier", ""))
        if kind is not None and kind.submission == "text":  # the instruction echoed back
            instruction = (task_dir / INSTRUCTION).read_text(encoding="utf-8", errors="surrogateescape")
            subs.append({"name": "echo_instruction", "files": {"answer.txt": instruction}})
        subs.extend(battery.submissions(task_dir, meta))  # the cheap strategies
        (run, seconds), scored = await asyncio.gather(
            oracle(), score_submissions(task_dir, meta, subs, runner, scratch))
        got = None if run.reward is None else run.reward.get("total")
        result.checks.append(Check("oracle", "1.0", got, got is not None and got >= 1.0 - 1e-9,
                                   run.error or _why(run.reward), round(seconds, 3)))
        for sub in subs:
            run, seconds, settled = scored[sub["name"]]
            got = None if run.reward is None else run.reward.get("total")
            result.checks.append(Check(sub["name"], "0", got, got is not None and got <= 1e-9,
                                       run.error or _why(run.reward), round(seconds, 3), settled))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    failed = [c for c in result.checks if not c.ok]
    if failed:
        result.ok = False
        c = failed[0]
        result.failure = failure_kind(c)
        if c.name == "leak":
            result.reason = f"leak: {c.detail}"
        elif c.got is None:
            result.reason = f"{c.name}: verifier error: {c.detail}"
        elif result.failure == "shortcut":
            result.reason = (f"shortcut: {c.name.removeprefix('shortcut_')} solves the task "
                             f"(scored {c.got:g}, expected {c.expected}; {c.detail})")
        else:
            result.reason = f"{c.name} scored {c.got:g}, expected {c.expected} ({c.detail})"
    return result


async def score_submissions(task_dir: Path, meta: dict, subs: list[dict], runner: TaskRunner,
                            scratch: Path) -> dict[str, tuple[VerifierRun, float, str]]:
    """{name: (its scored run, wall seconds, how it was settled or "")} of each submission
    ({"name", "files"}). Each is first read as the verifier reads it before running
    anything (`TaskRunner.settle`): one that a gate fails there is scored by that alone
    (its 0 is certain); one whose tree is the same as an earlier one's gets that one's
    result; the others run, at most the pool's sandboxes at once."""
    out: dict[str, tuple[VerifierRun, float, str]] = {}
    runs_tree: dict[str, str] = {}  # tree digest -> the submission that runs it
    same: dict[str, tuple[str, float]] = {}
    slots = asyncio.Semaphore(max(1, runner.pool.workers))

    async def run(name: str, ws: Path, spent: float) -> None:
        async with slots:
            started = time.perf_counter()
            out[name] = (await runner.verify(task_dir, meta, ws, scratch),
                         spent + time.perf_counter() - started, "")

    running = []  # each started as soon as it is known to need a run
    try:
        for sub in subs:
            started = time.perf_counter()
            files = {k: v.encode("utf-8", "surrogateescape") for k, v in sub["files"].items()}
            ws = fresh_workspace(task_dir, scratch, files)
            known = await runner.settle(task_dir, meta, ws)
            spent = time.perf_counter() - started
            if isinstance(known, VerifierRun):
                reason = (known.reward or {}).get("reason", "")
                out[sub["name"]] = (known, spent, f"failed before any run ({reason})")
            elif isinstance(known, str) and known in runs_tree:
                same[sub["name"]] = (runs_tree[known], spent)
            else:
                if isinstance(known, str):
                    runs_tree[known] = sub["name"]
                running.append(asyncio.ensure_future(run(sub["name"], ws, spent)))
                continue
            shutil.rmtree(ws, ignore_errors=True)
        await asyncio.gather(*running)
    except BaseException:  # a bad submission path, Ctrl-C: no run is left behind
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    for name, (first, spent) in same.items():
        out[name] = (out[first][0], spent, f"the same tree as {first}")
    return out


def failure_kind(check: Check) -> str:
    """The type of a failed check (`ValidationResult.failure`)."""
    if check.name in ("leak", "oracle", "null"):
        return check.name if check.got is not None or check.name == "leak" else "verifier_error"
    if check.got is None:
        return "verifier_error"
    return "shortcut" if check.name.startswith("shortcut_") else "adversarial"


def _why(reward: dict | None) -> str:
    if not reward:
        return ""
    parts = [f"{k}={v.get('value', 0):g}" for k, v in sorted(reward.get("components", {}).items())]
    return ", ".join(parts)


class ValidationBackend(Protocol):
    """Where tasks are validated: an `rlforge.execution` backend, chosen by the CLI and
    handed down."""

    async def validate(self, task_dirs: list[Path], *, workers: int = 0,
                       sandbox_mode: str = "bwrap",
                       progress: Callable[[ValidationResult], None] | None = None,
                       concurrency: int | None = None,
                       settings: dict[str, Any] | None = None) -> list[ValidationResult]:
        """`validate_task` on each task; results in input order, with the caller's paths."""


async def validate_many(task_dirs: list[Path], *, workers: int = 0, sandbox_mode: str = "bwrap",
                        progress: Callable[[ValidationResult], None] | None = None,
                        concurrency: int | None = None,
                        settings: dict[str, Any] | None = None,
                        cache_dir: Path | None = None) -> list[ValidationResult]:
    """Validate tasks concurrently through one sandbox pool on this machine; results in
    input order. `settings`, `cache_dir`: the user's sandbox settings and where prepared
    environments are built (`TaskRunner`'s). Other backends (`rlforge.execution`) run
    `validate_task` elsewhere.
    """
    scratch_root = Path(tempfile.mkdtemp(prefix="rlforge-validate-"))
    try:
        async with SandboxPool(workers) as pool:
            runner = TaskRunner(pool, sandbox_mode, settings, cache_dir)
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
