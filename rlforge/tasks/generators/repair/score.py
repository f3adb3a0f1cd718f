"""Score a repair submission from outside the task: what `rlforge run` and trainers call.

A policy submits either the final state of its workspace (multi-turn agents) or a unified
diff (single-turn answers). Both are scored by the task's own verifier (tests/test.sh) in
the sandbox, with the task's prepared environment mounted, exactly as `rlforge validate`
scores the gold solution:

    result = await score_workspace(task_dir, workspace)   # or score_patch(task_dir, diff)
    result.reward["total"], result.outcome, result.diff

`workspace_diff` gives the unified diff of a workspace against the task's starting
workspace, for the rollout record. A runner that already holds a `TaskRunner` (with its
pool) passes it in; otherwise a one-sandbox pool is made for the call.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rlforge.sandbox import SandboxPool, copy_tree
from rlforge.taskdir import WORKSPACE, load_task
from rlforge.verify.runner import TaskRunner, fresh_workspace
from rlforge.verify.standalone.patch import split_lines
from rlforge.verify.standalone.protect import SUBMISSION_PATCH, skipped_path


@dataclass
class RepairScore:
    """A scored submission: the verifier's reward, or why there is none (infrastructure)."""

    reward: dict | None
    error: str | None
    diff: str

    @property
    def outcome(self) -> str:
        """pass / fail, or invalid when the verifier or the sandbox failed."""
        if self.reward is None:
            return "invalid"
        return "pass" if self.reward.get("total", 0.0) >= 1.0 - 1e-9 else "fail"


def _regular_files(root: Path) -> dict[str, Path]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if not full.is_symlink() and full.is_file() and not skipped_path(rel):
                out[rel] = full
    return out


DIFF_FILE_BYTES = 1_000_000  # a file this large (either side) is named, not diffed
DIFF_CHARS = 2_000_000  # the diff a rollout stores is cut here


def workspace_diff(task_dir: str | Path, workspace: str | Path) -> str:
    """The unified diff (git style, a/ b/ prefixes) from the task's starting workspace to
    `workspace`; symlinks, bytecode and .rlforge/ are left out, binary files and files over
    DIFF_FILE_BYTES named only, the whole cut at DIFF_CHARS (the workspace is the policy's:
    its size must not decide rlforge's memory)."""
    base = _regular_files(Path(task_dir) / WORKSPACE)
    now = _regular_files(Path(workspace))
    chunks, size = [], 0
    for rel in sorted(set(base) | set(now)):
        if size > DIFF_CHARS:
            chunks.append(f"[diff cut at {DIFF_CHARS:,} characters]\n")
            break
        sizes = [p.stat().st_size for p in (base.get(rel), now.get(rel)) if p is not None]
        if max(sizes) > DIFF_FILE_BYTES:
            chunks.append(f"diff --git a/{rel} b/{rel}\nLarge files differ\n")
            continue
        old = base[rel].read_bytes() if rel in base else None
        new = now[rel].read_bytes() if rel in now else None
        if old == new:
            continue
        if b"\0" in (old or b"") or b"\0" in (new or b""):
            chunks.append(f"diff --git a/{rel} b/{rel}\nBinary files differ\n")
            continue
        a = split_lines(old.decode("utf-8", "surrogateescape")) if old is not None else []
        b = split_lines(new.decode("utf-8", "surrogateescape")) if new is not None else []
        head = f"diff --git a/{rel} b/{rel}\n"
        if old is None:
            head += "new file mode 100644\n"
        elif new is None:
            head += "deleted file mode 100644\n"
        body = []
        for line in difflib.unified_diff(a, b, "a/" + rel if old is not None else "/dev/null",
                                         "b/" + rel if new is not None else "/dev/null", n=3):
            body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        chunks.append(head + "".join(body))
        size += len(chunks[-1])
    return "".join(chunks)


async def _verify(task_dir: Path, ws: Path, scratch: Path, runner: TaskRunner | None,
                  sandbox_mode: str) -> tuple[dict | None, str | None]:
    meta = load_task(task_dir).meta
    if runner is not None:
        run = await runner.verify(task_dir, meta, ws, scratch)
    else:
        async with SandboxPool(1) as pool:
            run = await TaskRunner(pool, sandbox_mode).verify(task_dir, meta, ws, scratch)
    return run.reward, run.error


async def score_workspace(task_dir: str | Path, workspace: str | Path, *,
                          runner: TaskRunner | None = None, sandbox_mode: str = "bwrap") -> RepairScore:
    """Score the final state of a workspace (the policy's files in `workspace`).

    The workspace is copied first (regular files only, links never followed), so the
    caller's directory is left as it was.
    """
    task_dir = Path(task_dir)
    scratch = Path(tempfile.mkdtemp(prefix="rlforge-score-"))
    try:
        ws = scratch / "ws"
        copy_tree(workspace, ws)
        for p in [ws, *ws.rglob("*")]:
            p.chmod(0o777 if p.is_dir() else 0o666 | (p.stat().st_mode & 0o111))
        reward, error = await _verify(task_dir, ws, scratch, runner, sandbox_mode)
        return RepairScore(reward, error, workspace_diff(task_dir, workspace))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def score_patch(task_dir: str | Path, diff: str, *, runner: TaskRunner | None = None,
                      sandbox_mode: str = "bwrap") -> RepairScore:
    """Score a unified diff against the task's starting workspace (applied by the verifier:
    `patch_applies` is 0 when it does not apply)."""
    task_dir = Path(task_dir)
    scratch = Path(tempfile.mkdtemp(prefix="rlforge-score-"))
    try:
        ws = fresh_workspace(task_dir, scratch,
                             {SUBMISSION_PATCH: diff.encode("utf-8", "surrogateescape")})
        reward, error = await _verify(task_dir, ws, scratch, runner, sandbox_mode)
        return RepairScore(reward, error, diff)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
