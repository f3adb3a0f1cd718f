"""Commits of a local git repository into `commits` and `commit_files`, through the git CLI.

One `git log` pass with `--raw --numstat -z` gives every commit's metadata, message, and
per-file change type and line counts. Incremental: commits already stored for the
repository are skipped, so a second run reads none. File contents are not copied: they
can always be recreated from the repository (its path is in `ingest_runs`) by sha.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import duckdb

from rlforge.db import scanning
from rlforge.errors import InputFileError
from rlforge.ingest.common import DATABASE_REDACTOR, FileIngest, IngestResult, resolve_redactor

if TYPE_CHECKING:
    import polars as pl

SOURCE = "commits"
RS, US = "\x1e", "\x1f"
# Times as Unix seconds: real histories carry offsets no parser accepts (e.g. "+518:00").
LOG_FORMAT = f"{RS}%H{US}%P{US}%an{US}%ae{US}%at{US}%cn{US}%ce{US}%ct{US}%B{US}"

TEST_DIR = re.compile(r"(^|/)(tests?|testing|spec|specs|__tests__|test_?data)/", re.I)
TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*\.py|[^/]*_test\.(py|go|rb|rs|exs?)|[^/]*\.(test|spec)\.[cm]?[jt]sx?|"
    r"[^/]*Tests?\.(java|kt|cs|scala|swift)|[^/]*_spec\.rb|conftest\.py)$")

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".go": "go", ".rs": "rust", ".java": "java",
    ".kt": "kotlin", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".rb": "ruby",
    ".php": "php", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
    ".cs": "csharp", ".swift": "swift", ".scala": "scala", ".sh": "shell", ".sql": "sql",
    ".md": "markdown", ".rst": "rst", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
    ".json": "json", ".html": "html", ".css": "css", ".ex": "elixir", ".exs": "elixir",
}


def is_test_path(path: str) -> bool:
    """Whether a repository path is test code (tests/, test_*.py, *_test.go, spec/, ...)."""
    return bool(TEST_DIR.search(path) or TEST_FILE.search(path))


def language_of(path: str) -> str | None:
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True,
                          text=True, errors="surrogateescape", env=env)
    if proc.returncode != 0:
        raise InputFileError(str(repo), f"git {args[0]} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


def repo_root(path: str | Path) -> Path:
    """The top of the repository containing path; a clear error when it is not one."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(str(p), "no such directory")
    proc = subprocess.run(["git", "-C", str(p), "rev-parse", "--show-toplevel"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputFileError(str(p), "not a git repository (git rev-parse failed: "
                             f"{proc.stderr.strip()[:200]})")
    return Path(proc.stdout.strip()).resolve()


@dataclass
class CommitRecord:
    sha: str
    parents: list[str]
    author: str
    author_email: str
    authored_at: str
    committer: str
    committer_email: str
    committed_at: str
    message: str
    files: list[dict] = field(default_factory=list)


def parse_log(out: str) -> list[CommitRecord]:
    """Parse `git log -z --raw --numstat` output written with LOG_FORMAT."""
    commits = []
    for chunk in out.split(RS)[1:]:
        head, _, tail = chunk.rpartition(US)
        parts = head.split(US)
        sha, parents, an, ae, ai, cn, ce, ci = parts[:8]
        message = US.join(parts[8:])
        rec = CommitRecord(sha, parents.split(), an, ae, ai, cn, ce, ci, message.rstrip("\n"))
        rec.files = _parse_changes(tail)
        commits.append(rec)
    return commits


def _parse_changes(tail: str) -> list[dict]:
    """--raw entries (':old new sha sha STATUS\\0path\\0', renames off) then --numstat ones."""
    tokens = tail.lstrip("\n\0").split("\0")
    raw: list[dict] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(":"):
        status = tokens[i].split()[-1]
        kind = status[0]
        if kind in "RC":
            raw.append({"change_type": kind, "old_path": tokens[i + 1], "path": tokens[i + 2]})
            i += 3
        else:
            raw.append({"change_type": kind, "old_path": None, "path": tokens[i + 1]})
            i += 2
    stats: dict[str, tuple[int | None, int | None]] = {}
    for tok in tokens[i:]:
        fields = tok.lstrip("\n").split("\t", 2)
        if len(fields) == 3:
            a = None if fields[0] == "-" else int(fields[0])
            r = None if fields[1] == "-" else int(fields[1])
            stats[fields[2]] = (a, r)
    for entry in raw:
        a, r = stats.get(entry["path"], (None, None))
        entry["lines_added"], entry["lines_removed"] = a, r
        entry["is_binary"] = entry["path"] in stats and a is None
    return raw


#: Below this many commits one `git log` is cheaper than listing them first and splitting.
PARALLEL_MIN_COMMITS = 2000


def read(repo: Path, rev: str = "--all", known: set[str] | None = None,
         workers: int | None = None) -> list[CommitRecord]:
    """Commits reachable from rev that are not in known, with their file changes.

    Computing line counts (`--numstat` diffs every changed blob) is nearly all of the cost,
    and each commit's diff is independent of the others'. So on a machine with several
    cores a long history is listed first (`git rev-list`, cheap) and split round-robin over
    `workers` (default: the cores, at most 4) concurrent `git log --no-walk --stdin`
    processes. A short history, or one core, takes a single `git log`.
    """
    rev_args = ["--all"] if rev in ("--all", "all", "") else rev.split()
    base = ["log", "-z", "--raw", "--numstat", "--no-renames", "--no-abbrev",
            f"--format={LOG_FORMAT}", "--diff-merges=off"]
    workers = workers or min(4, os.cpu_count() or 1)
    if not known and workers == 1:  # nothing stored yet: one pass, no need to list the shas
        try:
            return parse_log(git(repo, *base, *rev_args))
        except InputFileError:
            pass  # an object git cannot read: commit by commit below finds which
    shas = git(repo, "rev-list", *rev_args).split()
    new = [s for s in shas if s not in (known or ())]
    if not new:
        return []
    if len(new) < PARALLEL_MIN_COMMITS or workers == 1:
        return _log(repo, base, new)
    parts = [new[i::workers] for i in range(workers)]  # round-robin: old and new in each
    with ThreadPoolExecutor(workers) as pool:
        outs = list(pool.map(lambda part: _log(repo, base, part), parts))
    return [c for out in outs for c in out]


def _log(repo: Path, base: list[str], shas: list[str]) -> list[CommitRecord]:
    """`git log --no-walk` of `shas`. A batch git cannot read whole (a blob or tree missing,
    as in a partial or damaged clone) is halved until the commits that fail are found;
    each of those is read without line counts (--numstat needs the blobs), or without its
    files too, so that its metadata and message are never lost."""
    def run(args: list[str], part: list[str]) -> list[CommitRecord]:
        return parse_log(git(repo, *args, "--no-walk", "--stdin", stdin="\n".join(part) + "\n"))

    try:
        return run(base, shas)
    except InputFileError:
        if len(shas) > 1:
            mid = len(shas) // 2
            return _log(repo, base, shas[:mid]) + _log(repo, base, shas[mid:])
    for drop in (("--numstat",), ("--numstat", "--raw")):
        try:
            return run([a for a in base if a not in drop], shas)
        except InputFileError:
            continue
    raise InputFileError(str(repo), f"git cannot read commit {shas[0]}")


def _frames(repo: str, commits: list[CommitRecord], redactor) -> tuple[pl.DataFrame, pl.DataFrame]:
    import polars as pl

    def person(name: str, email: str) -> str:
        if redactor is None:
            return f"{name} <{email}>"
        return redactor.pseudonym("PERSON", (email or name).strip().lower())

    messages = pl.Series("message", [c.message for c in commits], dtype=pl.Utf8)
    if redactor is not None:
        messages = redactor.redact_series(messages)
    rows = {
        "repo": [repo] * len(commits),
        "sha": [c.sha for c in commits],
        # One string per commit, split by DuckDB on insert: a list per row costs polars a
        # Series construction each (~14 µs x commits).
        "parents": [" ".join(c.parents) for c in commits],
        "author": [person(c.author, c.author_email) for c in commits],
        "committer": [person(c.committer, c.committer_email) for c in commits],
        "authored_at": [c.authored_at for c in commits],
        "committed_at": [c.committed_at for c in commits],
        "message": messages,
        "is_merge": [len(c.parents) > 1 for c in commits],
        "files_changed": [len(c.files) for c in commits],
        "lines_added": [sum(f["lines_added"] or 0 for f in c.files) for c in commits],
        "lines_removed": [sum(f["lines_removed"] or 0 for f in c.files) for c in commits],
    }
    cdf = pl.DataFrame(rows)
    cdf = cdf.with_columns(pl.col("message").str.split("\n").list.first().alias("subject"))
    files = [(c.sha, f) for c in commits for f in c.files]
    kinds: dict[str, tuple[bool, str | None]] = {}  # paths recur across a history
    for _, f in files:
        if f["path"] not in kinds:
            kinds[f["path"]] = (is_test_path(f["path"]), language_of(f["path"]))
    fdf = pl.DataFrame({
        "repo": [repo] * len(files),
        "sha": [s for s, _ in files],
        "path": [f["path"] for _, f in files],
        "old_path": [f["old_path"] for _, f in files],
        "change_type": [f["change_type"] for _, f in files],
        "lines_added": [f["lines_added"] for _, f in files],
        "lines_removed": [f["lines_removed"] for _, f in files],
        "is_binary": [f["is_binary"] for _, f in files],
        "is_test": [kinds[f["path"]][0] for _, f in files],
        "language": [kinds[f["path"]][1] for _, f in files],
    }, schema={"repo": pl.Utf8, "sha": pl.Utf8, "path": pl.Utf8, "old_path": pl.Utf8,
               "change_type": pl.Utf8, "lines_added": pl.Int32, "lines_removed": pl.Int32,
               "is_binary": pl.Boolean, "is_test": pl.Boolean, "language": pl.Utf8})
    return cdf, fdf


def ingest_repo(con: duckdb.DuckDBPyConnection, path: str | Path, *, rev: str = "--all",
                redactor=DATABASE_REDACTOR) -> IngestResult:
    """Ingest the commits of one repository not yet stored (one transaction)."""
    repo = repo_root(path)
    redactor = resolve_redactor(con, redactor)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or None
    before = dict(redactor.counts) if redactor is not None else {}
    with FileIngest(con, SOURCE, repo, "git", head=head,
                    redact=redactor.redact_text if redactor else None) as fi:
        known = {r[0] for r in con.execute("SELECT sha FROM commits WHERE repo = ?",
                                           [str(repo)]).fetchall()}
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(read, repo, rev, known)
            import polars  # noqa: F401  (git is the long pole: load polars while it works)
            commits = pending.result()
        fi.result.n_read = len(commits)
        if commits:
            cdf, fdf = _frames(str(repo), commits, redactor)
            with scanning(con, "_commits_df", cdf):
                con.execute("""
                    INSERT INTO commits SELECT repo, sha,
                        CASE WHEN parents = '' THEN []::VARCHAR[]
                             ELSE string_split(parents, ' ') END,
                        author, committer,
                        to_timestamp(authored_at::BIGINT), to_timestamp(committed_at::BIGINT),
                        subject, message,
                        is_merge, files_changed, lines_added, lines_removed, ? FROM _commits_df""",
                            [fi.result.run_id])
            if len(fdf):
                with scanning(con, "_files_df", fdf):
                    con.execute("INSERT INTO commit_files SELECT * FROM _files_df")
        fi.result.n_loaded = len(commits)
        fi.result.n_known = len(known)
        fi.result.notes.append(f"{len(known):,} commits of this repository were already stored"
                               if known else f"HEAD {head[:12] if head else '(none)'}")
        if redactor is not None:
            fi.result.redactions = {k: v - before.get(k, 0) for k, v in redactor.counts.items()
                                    if v - before.get(k, 0)}
    return fi.result
