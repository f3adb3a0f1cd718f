"""`rlforge ingest commits`: every commit once, per-file facts, incremental re-runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlforge.ingest import gitbytes
from rlforge.ingest.commits import is_test_path, language_of

GIT_ENV = {"GIT_AUTHOR_NAME": "Ada Lovelace", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada Lovelace", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_AUTHOR_DATE": "2024-01-01T10:00:00+02:00",
           "GIT_COMMITTER_DATE": "2024-01-01T10:00:00+02:00"}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args],
                          check=True, capture_output=True, text=True, env=env).stdout


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (r / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    commit_all(r, "Add calculator")
    (r / "tests").mkdir()
    (r / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (r / "tests" / "test_calc.py").write_text("from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n")
    commit_all(r, "Add sub()\n\nReported by ops@example.com, token=ghp_0123456789abcdefABCDEF0123456789abcd")
    git(r, "checkout", "-q", "-b", "feature")
    (r / "README.md").write_text("# calc\n")
    commit_all(r, "Docs")
    git(r, "checkout", "-q", "main")
    (r / "logo.png").unlink()
    commit_all(r, "Remove logo")
    git(r, "merge", "-q", "--no-ff", "feature", "-m", "Merge feature")
    return r


def test_every_commit_once_with_file_facts(cli, repo, query):
    result = cli("ingest", "commits", repo, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    expected = int(git(repo, "rev-list", "--all", "--count"))
    assert query("SELECT count(*) FROM commits") == [(expected,)] == [(5,)]
    merge = query("SELECT is_merge, len(parents), files_changed FROM commits WHERE subject = 'Merge feature'")
    assert merge == [(True, 2, 0)]
    files = dict(((p, c), (a, r, b, t, lang)) for p, c, a, r, b, t, lang in query(
        "SELECT path, change_type, lines_added, lines_removed, is_binary, is_test, language "
        "FROM commit_files"))
    assert files[("calc.py", "M")] == (4, 0, False, False, "python")
    assert files[("tests/test_calc.py", "A")] == (5, 0, False, True, "python")
    assert files[("logo.png", "A")][2] is True and files[("logo.png", "D")][2] is True
    authored = query("SELECT authored_at FROM commits WHERE subject = 'Add calculator'")[0][0]
    assert authored.utcoffset() is not None and authored.hour in (8, 10)  # stored as an instant
    run = query("SELECT source, path, head, n_read, n_loaded FROM ingest_runs")[0]
    assert run[:2] == ("commits", str(repo.resolve()))
    assert run[2] == git(repo, "rev-parse", "HEAD").strip() and run[3:] == (5, 5)


def test_second_run_reads_nothing_and_new_commits_are_picked_up(cli, repo, query):
    cli("ingest", "commits", repo, "--no-redact", "-q")
    again = json.loads(cli("ingest", "commits", repo, "--no-redact", "--json").output)
    assert again["totals"]["n_read"] == 0
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    commit_all(repo, "Swap operands")
    third = json.loads(cli("ingest", "commits", repo, "--no-redact", "--json").output)
    assert third["totals"]["n_read"] == third["totals"]["n_loaded"] == 1
    assert query("SELECT count(*) FROM commits") == [(6,)]


def test_rev_range_limits_what_is_read(cli, repo, query):
    result = cli("ingest", "commits", repo, "--rev", "main~1..main", "--no-redact", "--json")
    # main~1 is "Remove logo"; the range holds the merge and the feature branch commit "Docs".
    assert json.loads(result.output)["totals"]["n_loaded"] == 2
    assert sorted(r[0] for r in query("SELECT subject FROM commits")) == ["Docs", "Merge feature"]


def test_not_a_repository_is_one_clear_error(cli, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = cli("ingest", "commits", plain)
    assert result.exit_code == 1
    assert "not a git repository" in result.output


@pytest.mark.parametrize("path,expected", [
    ("tests/test_x.py", True), ("src/pkg/test_util.py", True), ("pkg/util_test.go", True),
    ("spec/models/user_spec.rb", True), ("web/app.test.tsx", True), ("conftest.py", True),
    ("src/main/java/FooTest.java", True), ("src/testing/helpers.py", True),
    ("src/contest.py", False), ("docs/testimonials.md", False), ("latest.py", False),
    ("pkg/attestation.py", False),
])
def test_is_test_path(path, expected):
    assert is_test_path(path) is expected


def test_language_of():
    assert language_of("a/b.py") == "python" and language_of("x.tsx") == "typescript"
    assert language_of("Makefile") is None


def test_authors_and_messages_are_redacted_by_default(cli, repo, query):
    result = cli("ingest", "commits", repo, "--json")
    assert result.exit_code == 0
    authors = {r[0] for r in query("SELECT DISTINCT author FROM commits")}
    assert len(authors) == 1 and next(iter(authors)).startswith("<PERSON_")
    message = query("SELECT message FROM commits WHERE subject = 'Add sub()'")[0][0]
    assert "ops@example.com" not in message and "ghp_" not in message
    assert "<EMAIL_" in message


def test_concurrent_git_log_reads_what_one_reads(repo, monkeypatch):
    from rlforge.ingest import commits

    for i in range(12):  # a longer history, with edits, additions and a deletion
        (repo / f"mod{i % 4}.py").write_text(f"VALUE = {i}\n" * (i + 1))
        if i == 7:
            (repo / "mod1.py").unlink()
        commit_all(repo, f"Step {i}")

    def facts(records):
        return sorted((c.sha, tuple(c.parents), c.message, c.authored_at,
                       json.dumps(c.files, sort_keys=True)) for c in records)

    one = commits.read(repo, workers=1)
    monkeypatch.setattr(commits, "PARALLEL_MIN_COMMITS", 1)  # split even this short history
    split = commits.read(repo, workers=3)
    assert len(one) == int(git(repo, "rev-list", "--all", "--count")) == 17
    assert facts(split) == facts(one)
    known = {c.sha for c in one[:5]}
    assert facts(commits.read(repo, known=known, workers=3)) == facts(c for c in one
                                                                      if c.sha not in known)


@given(st.binary(max_size=64))
def test_any_bytes_split_into_text_and_exact_bytes(data):
    text = data.decode("utf-8", "surrogateescape")  # as rlforge reads git's output
    shown, exact = gitbytes.split(text)
    assert shown is not None
    shown.encode("utf-8")  # storable text: no stray byte is left in it
    assert (exact if exact is not None else shown.encode()) == data
    assert exact is None or shown != text

