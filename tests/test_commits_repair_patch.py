"""The repair verifier's unified-diff applier (standard library, runs inside tasks).

A submitted diff is applied by `apply_patch` in the sandbox, where git may not exist. It
must reproduce what `git diff` describes exactly, refuse what it cannot do (binary
changes, renames, paths outside the tree) without touching the tree, and agree with the
diffs rlforge itself writes (`workspace_diff`).
"""

from __future__ import annotations

import difflib
import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlforge.tasks.generators.repair.score import workspace_diff
from rlforge.verify.standalone.patch import apply_patch, parse_patch, split_lines

GIT_ENV = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, check=True,
                          capture_output=True).stdout.decode("utf-8", "surrogateescape")


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def write(root: Path, files: dict[str, bytes | None]) -> None:
    for rel, data in files.items():
        path = root / rel
        if data is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def git_diff_case(tmp_path: Path, before: dict[str, bytes], after: dict[str, bytes | None]):
    """(diff text from `git diff`, a copy of `before` to apply it to, the expected files)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, before)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    write(repo, after)
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--no-renames")
    expected = files_of(repo)
    target = tmp_path / "target"
    target.mkdir()
    write(target, before)
    return diff, target, expected


CASES = {
    "modify": ({"a.py": b"one\ntwo\nthree\n"}, {"a.py": b"one\n2\nthree\n"}),
    "add_and_delete": ({"a.py": b"x = 1\n", "old.py": b"gone\nsoon\n"},
                       {"new/pkg/b.py": b"y = 2\n", "old.py": None}),
    "empty_files": ({"keep.py": b"k\n", "empty_gone.py": b""},
                    {"pkg/__init__.py": b"", "empty_gone.py": None}),
    "no_newline_at_end": ({"a.py": b"a\nb"}, {"a.py": b"a\nc"}),
    "newline_added_at_end": ({"a.py": b"a\nb"}, {"a.py": b"a\nb\n"}),
    "crlf_and_form_feed": ({"a.py": b"x = 1\r\n\x0c# page\r\ny = 2\r\n"},
                           {"a.py": b"x = 1\r\n\x0c# page\r\ny = 3\r\n"}),
    "many_hunks": ({"a.py": "".join(f"line {i}\n" for i in range(60)).encode()},
                   {"a.py": "".join(f"line {i}\n" if i % 20 else f"changed {i}\n"
                                    for i in range(60)).encode()}),
    "utf8_and_latin1": ({"a.py": "é = 1\n".encode(), "b.txt": b"caf\xe9\n"},
                        {"a.py": "é = 2\n".encode(), "b.txt": b"caf\xe9s\n"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_git_diffs_apply_exactly(tmp_path, name):
    before, after = CASES[name]
    diff, target, expected = git_diff_case(tmp_path, before, after)
    ok, detail = apply_patch(str(target), diff)
    assert ok, detail
    assert files_of(target) == expected


def test_hunks_apply_at_an_offset(tmp_path):
    """A diff made before lines were inserted above its hunk still applies (as patch does)."""
    diff, target, _ = git_diff_case(tmp_path, {"a.py": b"a\nb\nc\nd\n"}, {"a.py": b"a\nb\nC\nd\n"})
    (target / "a.py").write_bytes(b"new 1\nnew 2\na\nb\nc\nd\n")
    ok, detail = apply_patch(str(target), diff)
    assert ok, detail
    assert (target / "a.py").read_bytes() == b"new 1\nnew 2\na\nb\nC\nd\n"


@pytest.mark.parametrize("diff, why", [
    ("--- a/../escape.py\n+++ b/../escape.py\n@@ -0,0 +1 @@\n+x\n", "unsafe path"),
    ("--- /dev/null\n+++ /etc/evil.py\n@@ -0,0 +1 @@\n+x\n", "unsafe path"),
    ("diff --git a/a.py b/a.py\nindex 1..2\nGIT binary patch\nliteral 3\n", "binary"),
    ("diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n", "renames"),
    ("--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-not there\n+x\n keep\n", "does not apply"),
    ("--- a/missing.py\n+++ b/missing.py\n@@ -1 +1 @@\n-a\n+b\n", "does not exist"),
    ("--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+x\n", "already exists"),
    ("--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n-keep\n", "shorter than its header"),
])
def test_bad_diffs_are_refused_and_change_nothing(tmp_path, diff, why):
    write(tmp_path, {"a.py": b"keep\nmore\n", "other.py": b"o\n"})
    # a good change to another file first: all or nothing
    good = "--- a/other.py\n+++ b/other.py\n@@ -1 +1 @@\n-o\n+O\n"
    before = files_of(tmp_path)
    ok, detail = apply_patch(str(tmp_path), good + diff)
    assert not ok and why in detail
    assert files_of(tmp_path) == before


def test_text_that_is_not_a_diff_is_refused(tmp_path):
    write(tmp_path, {"a.py": b"a\n"})
    ok, detail = apply_patch(str(tmp_path), "I fixed it, trust me.\n")
    assert not ok and "no file changes" in detail


def test_empty_diff_applies_and_changes_nothing(tmp_path):
    write(tmp_path, {"a.py": b"a\n"})
    assert apply_patch(str(tmp_path), "") == (True, "0 file(s) changed")
    assert files_of(tmp_path) == {"a.py": b"a\n"}


def test_patch_never_writes_through_a_planted_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pkg").symlink_to(outside, target_is_directory=True)
    ok, _ = apply_patch(str(tree), "--- /dev/null\n+++ b/pkg/x.py\n@@ -0,0 +1 @@\n+x = 1\n")
    assert ok
    assert list(outside.iterdir()) == []  # the link was replaced by a real directory
    assert (tree / "pkg" / "x.py").read_text() == "x = 1\n" and not (tree / "pkg").is_symlink()


def test_split_lines_splits_at_newlines_only():
    assert split_lines("a\x0cb\nc\r\nd") == ["a\x0cb\n", "c\r\n", "d"]
    assert split_lines("") == [] and split_lines("\n") == ["\n"]


lines = st.lists(st.sampled_from(["a", "b", "c", "", "  x", "é", "tab\there", "\x0c"]), max_size=25)


@settings(max_examples=150, deadline=None)
@given(old=lines, new=lines, old_eol=st.booleans(), new_eol=st.booleans())
def test_difflib_round_trip(tmp_path_factory, old, new, old_eol, new_eol):
    """What rlforge's workspace_diff writes (difflib), the verifier applies back exactly."""
    root = tmp_path_factory.mktemp("rt")
    before = "\n".join(old) + ("\n" if old and old_eol else "")
    after = "\n".join(new) + ("\n" if new and new_eol else "")
    task, ws = root / "task", root / "ws"
    write(task / "environment" / "app", {"f.py": before.encode()})
    write(ws, {"f.py": after.encode()})
    diff = workspace_diff(task, ws)
    target = root / "target"
    write(target, {"f.py": before.encode()})
    ok, detail = apply_patch(str(target), diff)
    assert ok, (detail, diff)
    assert (target / "f.py").read_bytes() == after.encode()


def test_workspace_diff_lists_added_and_deleted_files_and_skips_bytecode(tmp_path):
    base = tmp_path / "task" / "environment" / "app"
    write(base, {"a.py": b"a\n", "gone.py": b"g\n"})
    ws = tmp_path / "ws"
    write(ws, {"a.py": b"a\n", "new.py": b"n\n", "__pycache__/a.cpython-311.pyc": b"\0\1",
               ".rlforge/submission.diff": b"x"})
    diff = workspace_diff(tmp_path / "task", ws)
    parsed = parse_patch(diff)
    assert [(f["old"], f["new"]) for f in parsed] == [("a/gone.py", None), (None, "b/new.py")]
    target = tmp_path / "target"
    write(target, {"a.py": b"a\n", "gone.py": b"g\n"})
    assert apply_patch(str(target), diff)[0]
    assert files_of(target) == {"a.py": b"a\n", "new.py": b"n\n"}


def test_unified_diff_without_git_header():
    text = "".join(difflib.unified_diff(["a\n"], ["b\n"], "x.py", "x.py"))
    assert parse_patch(text)[0]["hunks"] == [(1, ["a\n"], ["b\n"])]


HEADER_PIECES = ["--- a/x.py\n", "+++ b/x.py\n", "--- /dev/null\n", "+++ b/", "@@ -1,1 +1,1 @@\n",
                 "@@ -", "1", "9" * 5000, ",", " +", " @@\n", "-a\n", "+b\n", " a\n", "\\ No newline\n",
                 '"a/\\ud800.py"', "\ud800", "\udc80", "\0", "../", "a" * 300, "d/" * 300, "\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(HEADER_PIECES) | st.text(max_size=8), max_size=30))
@example(["--- a/x.py\n", "+++ b/x.py\n", "@@ -", "9" * 5000, " +1 @@\n", "-a\n"])
@example(["--- a/x.py\n", "+++ b/x.py\n", "@@ -1,", "9" * 5000, " +1 @@\n", "-a\n"])
@example(['--- "a/\\ud800.py"\n', '+++ "b/\\ud800.py"\n', "@@ -0,0 +1 @@\n", "+b\n"])
@example(["--- /dev/null\n", "+++ b/", "a" * 300, ".py\n", "@@ -0,0 +1 @@\n", "+b\n"])
def test_any_submitted_text_is_applied_or_refused_never_an_exception(tmp_path_factory, pieces):
    """A submitted diff is the policy's bytes: whatever they are (numbers of thousands of
    digits, paths no file system can name, lone surrogates), the answer is applied or
    refused with a reason, which scores the policy's fail, never an exception (which
    once made the rollout "invalid": the task's verifier data is broken)."""
    root = tmp_path_factory.mktemp("tree")
    (root / "x.py").write_text("a\n")
    ok, why = apply_patch(str(root), "".join(pieces))
    assert isinstance(ok, bool) and isinstance(why, str)


def test_a_diff_cannot_cost_the_scorer_more_than_its_budget(tmp_path):
    """A red team's diff: a file of one repeated line, and hunks of 30,000 context lines
    that apply only at its end. Each position the search passes matches the first line,
    so every one compared a 30,000-line block: hunks x 9e8 comparisons before any policy
    code ran (over 212 s for 8 hunks under Harbor: a verifier timeout, no reward). The
    budget now counts compared lines, so it is refused within the budget."""
    (tmp_path / "big.txt").write_text("x\n" * 60_000 + "y\n")
    hunk = "@@ -1,30001 +1,30001 @@\n" + " x\n" * 30_000 + " y\n"
    diff = "--- a/big.txt\n+++ b/big.txt\n" + hunk * 8
    started = time.perf_counter()
    ok, why = apply_patch(tmp_path, diff)
    assert time.perf_counter() - started < 10
    assert not ok and "too long" in why
    assert (tmp_path / "big.txt").read_text() == "x\n" * 60_000 + "y\n"


def test_insertions_cannot_cost_the_scorer_more_than_its_budget(tmp_path):
    """Round two of the red team: hunks that remove nothing search nothing, but each splice
    moved the whole file after it: 20,000 one-line insertions into a 4M-line file moved
    8e10 lines (a 6 MB diff ran past Harbor's verifier timeout). Splices are budgeted too."""
    (tmp_path / "big.txt").write_text("\n" * 4_000_000)
    diff = "--- a/big.txt\n+++ b/big.txt\n" + "@@ -0,0 +1 @@\n+x\n" * 20_000
    started = time.perf_counter()
    ok, why = apply_patch(tmp_path, diff)
    assert time.perf_counter() - started < 10
    assert not ok and "too long" in why
