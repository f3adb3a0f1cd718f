"""The trust boundary: the one place rlforge runs policy code while it scores a submission.

Every verifier kind scores with the standalone functions a task carries (`score_script`,
`score_repair`, ...), and those run code the policy controls only through a launcher. Under
Harbor that is `LocalPolicy` (a child process under another uid); in rlforge it is
`SandboxPolicy` below: each launch is a fresh bubblewrap sandbox that holds a private copy
of the tree at /app and the data it is given, read-only, at a path drawn at random, and
nothing else of the task — not tests/, not the reference, not the reward. The scorer is
this process: it reads the reference on the host, takes results only from the sandbox's
stdout pipe and the FIFOs it made itself, and computes the reward here, so code in the
sandbox can neither read what it is judged against nor write, delay or kill the judgement.

Outcome rule: what fails before policy code runs, or outside its sandbox (the sandbox
cannot start), raises `SandboxBroken` and makes the rollout `invalid`; once policy code has
run, a crash, a signal, a timeout or a missing result is a `fail` with a typed reason. A
tree too large for the sandbox's capped file system raises `TreeTooLarge` (a kind of
`SandboxBroken`): the caller knows whether the policy made it so (a fail) or not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import secrets
from pathlib import Path
from typing import Any, Mapping

from rlforge.sandbox import FailureReason, SandboxPool, SandboxResult, spec_of
from rlforge.taskdir import REFERENCE, TESTS
from rlforge.verify import kinds
from rlforge.verify.standalone.policy_code import Ran, SandboxBroken
from rlforge.verify.standalone.rewards import RESULT_NAME, component, reward
from rlforge.verify.standalone.testrun import python_site_dirs

VENV_PYTHON = "/opt/venv/bin/python"


class TreeTooLarge(SandboxBroken):
    """The tree to score does not fit the sandbox's capped file system; nothing ran."""


class _SandboxHandle:
    """A sandboxed run in flight: poll(), kill(), result(), as `LocalPolicy` gives."""

    def __init__(self, future: concurrent.futures.Future, log: str | None):
        self.future, self.log = future, log
        self.killed = False

    def poll(self) -> bool:
        return self.future.done()

    def kill(self) -> None:
        if not self.future.done():
            self.killed = True
            self.future.cancel()

    def result(self) -> Ran:
        try:
            res: SandboxResult = self.future.result()
        except concurrent.futures.CancelledError:
            return Ran(None, "", "killed by the verifier", timed_out=True)
        if res.failure is not None:
            if res.failure.reason is FailureReason.TOO_LARGE:
                raise TreeTooLarge(res.failure.detail)
            raise SandboxBroken(str(res.failure))
        if self.log:
            with open(self.log, "wb") as fh:
                fh.write(res.stdout + res.stderr)
        code = None if res.timed_out or res.killed else res.exit_code
        return Ran(code, res.stdout_text, res.stderr_text, timed_out=res.timed_out)


class SandboxPolicy:
    """Runs policy code in rlforge's sandbox, one fresh sandbox per launch.

    Args:
        pool: The sandbox pool the launches go through (it bounds how many run at once).
        loop: The event loop the pool belongs to; launches are made from a scoring thread.
        mode: The sandbox mode ("bwrap", or "none" when the user asked for no isolation).
        fields: Further `SandboxSpec` fields for every launch: what the task asks for (its
            prepared venv, memory, /tmp size) under the user's sandbox settings, as
            `TaskRunner` gives them.
    """

    def __init__(self, pool: SandboxPool, loop: asyncio.AbstractEventLoop, mode: str = "bwrap",
                 fields: Mapping[str, Any] | None = None):
        self.pool, self.loop, self.mode = pool, loop, mode
        self.fields = dict(fields or {})
        self.env = dict(self.fields.pop("env", {}))
        self.python = VENV_PYTHON if self.fields.get("venv") else "python3"
        self.token = "/" + secrets.token_hex(8)

    def places(self, tree: str, data: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        """The tree is /app; each data directory sits under a directory named at random."""
        if self.mode == "none":
            return tree, dict(data)
        return "/app", {name: f"{self.token}/{name}" for name in data}

    def site_dirs(self) -> list[str]:
        """site-packages of the venv the tests run with, read on the host."""
        venv = self.fields.get("venv")
        return python_site_dirs(str(Path(venv) / "bin" / "python")) if venv else []

    def start(self, argv, tree, data=None, env=None, timeout=30.0, log=None) -> _SandboxHandle:
        data = data or {}
        _, places = self.places(tree, data)
        binds = {} if self.mode == "none" else {places[n]: Path(p) for n, p in data.items()}
        _open_up(Path(tree))
        spec = spec_of(self.fields, mode=self.mode, workspace=Path(tree), ro_binds=binds,
                       env={**self.env, **(env or {})}, timeout_sec=float(timeout),
                       cwd=None if self.mode != "none" else tree)
        future = asyncio.run_coroutine_threadsafe(self.pool.run(list(argv), spec), self.loop)
        return _SandboxHandle(future, log)

    def run(self, argv, tree, data=None, env=None, timeout=30.0) -> Ran:
        return self.start(argv, tree, data, env, timeout).result()

    def sweep(self) -> None:
        """Nothing to do: a sandbox's processes die with it."""


def _open_up(tree: Path) -> None:
    """Make a scratch tree writable by the sandbox's user (it is a private copy)."""
    tree.chmod(0o777)
    for p in tree.rglob("*"):
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666 | (p.stat().st_mode & 0o111))


def score_workspace(task_dir: Path, reference: dict, workspace: Path,
                    policy: SandboxPolicy) -> dict:
    """Score the submission in `workspace` with the task's own verifier functions, policy
    code in the sandbox; the reward (raises `SandboxBroken` when a sandbox cannot start)."""
    return score_tree(task_dir / TESTS, reference, workspace, policy)


def score_tree(tests: Path, reference: dict, workspace: Path, policy: SandboxPolicy) -> dict:
    """`score_workspace` with the tests directory given where it is (as Harbor uploaded it)."""
    return kinds.get(reference["verifier"]).score(reference, str(tests), str(workspace), policy)


def bad_path_reward(detail: str) -> dict:
    """The fail of a submission naming a file outside the workspace (refused, not written)."""
    return reward(
        {"submission_paths": component(0, 0, "medium", gate=True, detail=detail)},
        detail="a submitted path leaves the workspace", reason="bad_submission_path")


def too_large_reward(detail: str) -> dict:
    """The fail of a submission over a cap (copy-out, or the sandbox's file system)."""
    return reward(
        {"submission_size": component(0, 0, "medium", gate=True, detail=detail)},
        detail="submission too large", reason="submission_too_large")


def unreadable_reward(detail: str) -> dict:
    """The fail of a reply or submission rlforge could not take apart (an error raised
    while handling the policy's own bytes): policy-made, so never `invalid`."""
    return reward(
        {"readable": component(0, 0, "medium", gate=True, detail=detail)},
        detail="the policy's reply or submission could not be handled", reason="unreadable")


def read_logged_result(logs_dir: Path) -> dict:
    """The reward a task's test.sh logged in `logs_dir` (a Harbor trial's verifier/
    directory): rlforge's detailed result (rlforge_result.json) when it is there, else
    Harbor's flat reward.json read as components of weight 1. Links and special files
    are never followed. Only for results scored outside rlforge (under Harbor): `rlforge
    run` and `rescore` compute the reward in their own process and never read a file the
    sandbox could have written."""
    from rlforge.sandbox import read_file

    try:
        return json.loads(read_file(logs_dir, RESULT_NAME))
    except FileNotFoundError:
        pass
    flat = json.loads(read_file(logs_dir, "reward.json"))
    if not isinstance(flat, dict) or not all(isinstance(v, (int, float)) for v in flat.values()):
        raise ValueError(f"{logs_dir}/reward.json is not a flat map of numbers")
    total = float(flat.get("reward", 0.0))
    comps = {name: component(v) for name, v in flat.items() if name != "reward"}
    return {"components": comps, "total": total, "outcome": "pass" if total >= 1.0 else "fail",
            "detail": "from reward.json"}


def load_reference(task_dir: Path) -> dict:
    """tests/reference.json of a task (read on the host; never shown to policy code)."""
    return json.loads((task_dir / REFERENCE).read_text(encoding="utf-8"))


__all__ = ["SandboxBroken", "SandboxPolicy", "TreeTooLarge", "load_reference", "read_logged_result",
           "bad_path_reward", "score_tree", "score_workspace", "too_large_reward"]
