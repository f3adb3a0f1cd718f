"""Repair tasks across splits: a repair task's workspace is its repository at the fix's
parent, so it holds every earlier fix. Over the fix commits of the sample repository
(sample_data/repo), the hash split of one task per commit (today's `--split-by hash`)
puts a train workspace over a held-out fix, and the build's check says so; the history
split never does, and tasks that are not repair tasks keep their hash split."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from builds import build_options
from rlforge import db
from rlforge.errors import UserError
from rlforge.ingest import commits
from rlforge.tasks import lineage
from rlforge.tasks.build import _assign_splits
from rlforge.tasks.spec import SourceRef, Submission, TaskSpec
from rlforge.tasks.splits import hash_split

REPO_SRC = Path(__file__).resolve().parents[1] / "sample_data" / "repo"


def _build_repo(dest: Path) -> tuple[list[dict], list[str]]:
    spec = importlib.util.spec_from_file_location("sample_repo_build_splits",
                                                  REPO_SRC / "build_repo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    history = module.load_history()
    return history, module.build(dest, history)


@pytest.fixture(scope="module")
def fixes(tmp_path_factory):
    """The store with the sample repository's commits, and its fix commits (oldest first)."""
    root = tmp_path_factory.mktemp("dura")
    history, shas = _build_repo(root / "repo")
    con = db.connect(root / "x.duckdb")
    commits.ingest_repo(con, root / "repo")
    (repo,) = {r for (r,) in con.execute("SELECT repo FROM commits").fetchall()}
    fixed = [(repo, sha) for c, sha in zip(history, shas) if c["kind"].startswith("fix")]
    return con, fixed


def _spec(key: str, fix=None, time=None, text="") -> TaskSpec:
    return TaskSpec(generator="commits.repair" if fix else "tickets.triage", version=1,
                    source=SourceRef("x", [key], [""]), instruction_template="instruction.md",
                    context={}, reference={}, solution_files={}, verifier="answer",
                    group_key=key, dedup_text=text or f"task {key} " * 3,
                    null=Submission("null"), adversarial=[], fix=fix, time=time)


def test_hash_split_leaks_a_held_out_fix_and_the_check_fails_it(fixes):
    con, fixed = fixes
    assert len(fixed) >= 10
    inside = lineage.fixes_in_workspaces(con, fixed)
    # every later fix's workspace holds the earlier ones (one line of history)
    assert inside[fixed[-1]] >= {sha for _, sha in fixed[:-2]}
    # today's split: a stable hash of each commit's group key "<repo path>@<sha>"; the
    # path is fixed here so the test does not depend on where tmp_path is
    by_hash = {f: hash_split(f"/srv/dura@{f[1]}") for f in fixed}
    assert lineage.leaks(by_hash, inside)
    with pytest.raises(UserError, match="holds a held-out task's fix"):
        lineage.check(by_hash, inside)


def test_history_split_keeps_held_out_fixes_out_of_train(fixes, tmp_path):
    con, fixed = fixes
    inside = lineage.fixes_in_workspaces(con, fixed)
    times = dict(con.execute("SELECT sha, committed_at FROM commits").fetchall())
    others = [_spec(f"ticket-{i}", text=f"ticket number {i} about topic {i * 7}")
              for i in range(30)]
    repair = [_spec(f"{r}@{sha}", fix=(r, sha), time=times[sha], text=f"fix {sha}")
              for r, sha in fixed]
    opts = build_options(out=tmp_path / "out")
    splits = _assign_splits(others + repair, opts, inside)
    got = {s.fix: sp for s, sp in zip(others + repair, splits) if s.fix}
    assert not lineage.leaks(got, inside)
    assert {"train", "test"} <= set(got.values())
    # the earliest fixes train, the latest are held out
    order = [got[f] for f in fixed]
    assert order == sorted(order, key=("train", "val", "test").index)
    # tasks that are not repair tasks keep today's hash split
    assert splits[:len(others)] == [hash_split(s.group_key) for s in others]
