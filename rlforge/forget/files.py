"""The file part of a forget: task directories removed, manifests marking the tasks
retired, run files rewritten without the removed rollouts. Every step can run again after
a kill and ends the same; the work is given as ids and paths (`Plan.pending`), never text."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from rlforge.taskdir import MANIFEST, WORK_SUFFIX


class Matcher:
    """Finds any of a plan's needles (`match.Term`) in text, a file tree or a run line."""

    def __init__(self, terms: list[Any]):
        self.rx = re.compile("|".join(t.py() for t in terms)) if terms else None

    def in_text(self, text: str) -> bool:
        return self.rx is not None and self.rx.search(text) is not None

    def in_tree(self, root: Path) -> bool:
        """Whether a file under `root` (a task directory) holds a needle."""
        if self.rx is None or not root.is_dir():
            return False
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            try:
                if self.in_text(path.read_bytes().decode("utf-8", errors="replace")):
                    return True
            except OSError:
                continue
        return False


def doomed(line: str, task_ids: set[str], rollout_ids: set[str], match: Matcher | None) -> bool:
    """Whether a run file's line is a removed task's or rollout's, or holds a needle."""
    if match is not None and match.in_text(line):
        return True
    try:
        rec = json.loads(line)
    except ValueError:
        return False
    return isinstance(rec, dict) and (rec.get("task_id") in task_ids
                                      or rec.get("rollout_id") in rollout_ids)


def run_files(run_dir: Path) -> list[Path]:
    """The JSON-lines files of a run (rollouts.jsonl, its pre-rescore copies, groups.jsonl)."""
    if not run_dir.is_dir():
        return []
    return sorted(p for p in run_dir.iterdir() if p.is_file() and ".jsonl" in p.name
                  and not p.name.endswith(".tmp"))


def run_lines(run_dir: Path, task_ids: set[str], rollout_ids: set[str], match: Matcher) -> int:
    """How many lines of the run's files go; the rollout ids of those that hold a needle
    join `rollout_ids`, so that the file step finds them by id alone."""
    n = 0
    for path in run_files(run_dir):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip() and doomed(line, task_ids, rollout_ids, match):
                n += 1
                try:
                    rid = json.loads(line).get("rollout_id")
                except (ValueError, AttributeError):
                    rid = None
                if rid:
                    rollout_ids.add(rid)
    return n


def do_files(pending: dict[str, Any], kill_point=lambda step: None) -> None:
    """Do a plan's file work (`Plan.pending`); `kill_point` is the test hook."""
    task_ids = set(pending["task_ids"])
    for path in pending["task_dirs"]:
        for copy in (Path(path), *_work_copies(Path(path))):
            if copy.is_dir():
                shutil.rmtree(copy)
    kill_point("files")
    for out_dir, version in pending["out_dirs"].items():
        retire_in_manifest(Path(out_dir), task_ids, int(version))
    rollout_ids = set(pending["rollout_ids"])
    for run_dir in pending["runs"]:
        for path in run_files(Path(run_dir)):
            drop_lines(path, task_ids, rollout_ids)


def _work_copies(task_dir: Path) -> list[Path]:
    """Where an unfinished build into the task's output may hold a copy of it
    (`rlforge.tasks.staging`: `.<out>.rlforge-build/tree|tmp/<task_id>`)."""
    out = task_dir.parent
    area = Path(os.path.realpath(out)).parent / f".{out.name}{WORK_SUFFIX}"
    return [area / part / task_dir.name for part in ("tree", "tmp")]


def retire_in_manifest(out: Path, task_ids: set[str], version: int) -> bool:
    """Mark the tasks retired (in `version`) in `out`'s manifest; whether it changed."""
    import polars as pl

    path = out / MANIFEST
    if not path.is_file():
        return False
    frame = pl.read_parquet(path)
    if "status" not in frame.columns:  # a manifest from before dataset versions
        frame = frame.with_columns(pl.lit("active").alias("status"),
                                   pl.lit(None, pl.Int64).alias("retired_in"),
                                   pl.lit(None, pl.Utf8).alias("retired_by"))
    hit = pl.col("task_id").is_in(sorted(task_ids)) & (pl.col("status").fill_null("active") == "active")
    if not frame.select(hit.any()).item():
        return False
    frame = frame.with_columns(
        pl.when(hit).then(pl.lit("retired")).otherwise(pl.col("status")).alias("status"),
        pl.when(hit).then(pl.lit(version, pl.Int64)).otherwise(pl.col("retired_in")).alias("retired_in"),
        pl.when(hit).then(pl.lit("")).otherwise(pl.col("retired_by")).alias("retired_by"))
    frame = frame.sort(pl.col("status") != "active", maintain_order=True)  # active ones first
    tmp = path.with_name(path.name + ".forget.tmp")
    frame.write_parquet(tmp, statistics=False)
    os.replace(tmp, path)
    return True


def drop_lines(path: Path, task_ids: set[str], rollout_ids: set[str]) -> int:
    """Rewrite a run file without the removed rollouts' lines, atomically, under the run's
    lock (a run still working on it: a clear error; the request stays pending)."""
    from rlforge.run.store import RunStore

    lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln.strip() and doomed(ln, task_ids, rollout_ids, None))]
    if len(kept) == len(lines):
        return 0
    store = RunStore(path.parent)
    store.lock()
    try:
        tmp = path.with_name(path.name + ".forget.tmp")
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.writelines(kept)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        store.close()
    return len(lines) - len(kept)
