"""Commits of a local git repository into `commits` and `commit_files`, through the git CLI.

One `git log` pass with `--raw --numstat -z` gives every commit's metadata, message, and
per-file change type and line counts. Incremental: commits already stored for the
repository are skipped, so a second run reads none. File contents are not copied: they
can always be recreated from the repository (its path is in `ingest_runs`) by sha.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable

import duckdb

from rlforge.db import scanning
from rlforge.errors import InputFileError
from rlforge.ingest import gitbytes
from rlforge.ingest.common import DATABASE_REDACTOR, FileIngest, IngestResult, resolve_redactor

if TYPE_CHECKING:
    import polars as pl

SOURCE = "commits"
# The fields of a commit read from `git log`, in order. Times are Unix seconds: real
# histories carry offsets no parser accepts (e.g. "+518:00").
FIELDS = ("%H", "%P", "%an", "%ae", "%at", "%cn", "%ce", "%ct", "%B")
# Times DuckDB's TIMESTAMPTZ holds and a reader expects: years 1 to 9999.
TIME_RANGE = (-62135596800, 253402300799)


@dataclass(frozen=True)
class LogFormat:
    """The marks that frame each commit and each field in `git log` output.

    A message or a name may hold any byte git lets through (control characters
    included), so a fixed separator could occur inside one and split a commit; these
    marks carry a random token drawn for each read, which no history holds."""

    token: str

    @classmethod
    def fresh(cls) -> "LogFormat":
        return cls(secrets.token_hex(8))

    @property
    def record(self) -> str:
        return "\x1e" + self.token

    @property
    def field(self) -> str:
        return "\x1f" + self.token

    def pretty(self) -> str:
        """The `--format=` argument."""
        return self.record + "".join(f + self.field for f in FIELDS)


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


def git(repo: Path, *args: str, stdin: str | None = None,
        marks: tuple[str, Callable[[int], None]] | None = None) -> str:
    """Run git in `repo` and return its output, decoded with surrogateescape (every byte
    kept). With `marks` (a mark and a callback), the output is read as it comes and the
    callback hears how many marks each piece of it held: progress over a long history."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    cmd = ["git", "-C", str(repo), *args]
    data = None if stdin is None else stdin.encode("utf-8", "surrogateescape")
    if marks is None:
        proc = subprocess.run(cmd, input=data, capture_output=True, env=env)
        out, err, code = proc.stdout, proc.stderr, proc.returncode
    else:
        out, err, code = _git_counting(cmd, data, env, marks)
    if code != 0:
        raise InputFileError(str(repo), f"git {args[0]} failed: "
                             f"{err.decode('utf-8', 'replace').strip()[:300]}")
    return out.decode("utf-8", "surrogateescape")


def _git_counting(cmd: list[str], data: bytes | None, env: dict[str, str],
                  marks: tuple[str, Callable[[int], None]]) -> tuple[bytes, bytes, int]:
    mark, seen = marks[0].encode(), marks[1]
    pieces = []
    with tempfile.TemporaryFile() as err:  # a file: a full stderr pipe cannot block git
        with subprocess.Popen(cmd, stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=err, env=env,
                              bufsize=0) as proc:  # unbuffered: a read returns what is there
            assert proc.stdout is not None
            if data is not None:
                assert proc.stdin is not None
                proc.stdin.write(data)  # git log --stdin reads all of it before writing
                proc.stdin.close()
            carry = b""  # the end of the last piece: a mark may span two
            while piece := proc.stdout.read(1 << 16):
                pieces.append(piece)
                if n := (carry + piece).count(mark):
                    seen(n)
                carry = piece[-len(mark) + 1:]
            code = proc.wait()
        err.seek(0)
        return b"".join(pieces), err.read(), code


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
    # Why this commit cannot be stored (it is quarantined), and its fields as git gave them.
    problem: str | None = None
    raw: str | None = None


_COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def parse_log(out: str, fmt: LogFormat) -> list[CommitRecord]:
    """Parse `git log -z --raw --numstat` output written with `fmt.pretty()`. A record
    that cannot be stored (an unreadable id, a time out of range) comes back with its
    `problem` set, never as an exception: one commit must not cost the others."""
    commits = []
    for chunk in out.split(fmt.record)[1:]:
        parts = chunk.split(fmt.field)
        if len(parts) != len(FIELDS) + 1:
            commits.append(CommitRecord(parts[0][:64], [], "", "", "", "", "", "", "",
                                        problem=f"unreadable git log record ({len(parts) - 1} "
                                        f"fields, expected {len(FIELDS)})",
                                        raw="\x1f".join(parts)))
            continue
        sha, parents, an, ae, ai, cn, ce, ci, message, tail = parts
        rec = CommitRecord(sha, parents.split(), an, ae, ai, cn, ce, ci, message.rstrip("\n"))
        rec.problem = _problem(rec)
        if rec.problem is None:
            rec.files = _parse_changes(tail)
        else:
            rec.raw = "\x1f".join(parts[:-1])
        commits.append(rec)
    return commits


def _problem(rec: CommitRecord) -> str | None:
    """Why a commit git listed cannot be stored, or None."""
    for what, ids in (("commit id", [rec.sha]), ("parent id", rec.parents)):
        for sha in ids:
            if not _COMMIT_ID.fullmatch(sha):
                return f"unreadable {what}: {sha[:80]!r}"
    for what, value in (("author time", rec.authored_at), ("commit time", rec.committed_at)):
        try:
            seconds = int(value)
        except ValueError:
            return f"unreadable {what}: {value[:80]!r}"
        if not TIME_RANGE[0] <= seconds <= TIME_RANGE[1]:
            return f"{what} out of range (years 1 to 9999): {value[:80]}"
    return None


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

#: progress(commits read, commits to read), from any thread
ReadProgress = Callable[[int, int], None]


class _Tally:
    """Commits read so far by concurrent `git log`s, told to a progress callback."""

    def __init__(self, progress: ReadProgress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.lock = threading.Lock()

    def __call__(self, n: int) -> None:
        with self.lock:  # a batch read again after a failure counts twice: cap at total
            self.done = min(self.total, self.done + n)
            self.progress(self.done, self.total)


def read(repo: Path, rev: str = "--all", known: set[str] | None = None,
         workers: int | None = None, progress: ReadProgress | None = None) -> list[CommitRecord]:
    """Commits reachable from rev that are not in known, with their file changes.

    Computing line counts (`--numstat` diffs every changed blob) is nearly all of the cost,
    and each commit's diff is independent of the others'. So on a machine with several
    cores a long history is listed first (`git rev-list`, cheap) and split round-robin over
    `workers` (default: the cores, at most 4) concurrent `git log --no-walk --stdin`
    processes. A short history, or one core, takes a single `git log`. `progress`, when
    given, hears how many commits are read as git writes them.
    """
    rev_args = ["--all"] if rev in ("--all", "all", "") else rev.split()
    fmt = LogFormat.fresh()
    base = ["log", "-z", "--raw", "--numstat", "--no-renames", "--no-abbrev",
            f"--format={fmt.pretty()}", "--diff-merges=off"]
    workers = workers or min(4, os.cpu_count() or 1)
    if not known and workers == 1:  # nothing stored yet: one pass, no need to list the shas
        tally = None if progress is None else \
            _Tally(progress, int(git(repo, "rev-list", "--count", *rev_args)))
        try:
            return parse_log(git(repo, *base, *rev_args, marks=_marks(fmt, tally)), fmt)
        except InputFileError:
            pass  # an object git cannot read: commit by commit below finds which
    shas = git(repo, "rev-list", *rev_args).split()
    new = [s for s in shas if s not in (known or ())]
    if not new:
        return []
    tally = None if progress is None else _Tally(progress, len(new))
    if len(new) < PARALLEL_MIN_COMMITS or workers == 1:
        return _log(repo, base, new, fmt, tally)
    parts = [new[i::workers] for i in range(workers)]  # round-robin: old and new in each
    with ThreadPoolExecutor(workers) as pool:
        outs = list(pool.map(lambda part: _log(repo, base, part, fmt, tally), parts))
    return [c for out in outs for c in out]


def _marks(fmt: LogFormat, tally: _Tally | None) -> tuple[str, Callable[[int], None]] | None:
    return None if tally is None else (fmt.record, tally)


def _log(repo: Path, base: list[str], shas: list[str], fmt: LogFormat,
         tally: _Tally | None = None) -> list[CommitRecord]:
    """`git log --no-walk` of `shas`. A batch git cannot read whole (a blob or tree missing,
    as in a partial or damaged clone) is halved until the commits that fail are found;
    each of those is read without line counts (--numstat needs the blobs), or without its
    files too, so that its metadata and message are never lost."""
    def run(args: list[str], part: list[str]) -> list[CommitRecord]:
        return parse_log(git(repo, *args, "--no-walk", "--stdin", stdin="\n".join(part) + "\n",
                             marks=_marks(fmt, tally)), fmt)

    try:
        return run(base, shas)
    except InputFileError:
        if len(shas) > 1:
            mid = len(shas) // 2
            return _log(repo, base, shas[:mid], fmt, tally) + _log(repo, base, shas[mid:], fmt, tally)
    for drop in (("--numstat",), ("--numstat", "--raw")):
        try:
            return run([a for a in base if a not in drop], shas)
        except InputFileError:
            continue
    raise InputFileError(str(repo), f"git cannot read commit {shas[0]}")


def _messages(commits: list[CommitRecord], redactor) -> tuple[pl.Series, pl.Series]:
    """The messages as text (redacted unless `redactor` is None) and, where they are not
    UTF-8, their exact (redacted) bytes (see `gitbytes`)."""
    import polars as pl

    texts = [c.message for c in commits]
    odd = [i for i, t in enumerate(texts) if gitbytes.has_stray_bytes(t)]
    exact: list[bytes | None] = [None] * len(texts)
    fixed = []
    for i in odd:  # few: redacted one by one (polars holds no stray bytes), then split
        text = texts[i] if redactor is None else redactor.redact_text(texts[i])
        shown, exact[i] = gitbytes.split(text)
        fixed.append(shown)
        texts[i] = ""
    messages = pl.Series("message", texts, dtype=pl.Utf8)
    if redactor is not None:
        messages = redactor.redact_series(messages)
    if odd:
        messages = messages.scatter(odd, fixed)
    return messages, pl.Series("message_bytes", exact, dtype=pl.Binary)


def _frames(repo: str, commits: list[CommitRecord], redactor) -> tuple[pl.DataFrame, pl.DataFrame]:
    import polars as pl

    def person(name: str, email: str) -> tuple[str | None, bytes | None]:
        if redactor is None:
            return gitbytes.split(f"{name} <{email}>")
        return redactor.pseudonym("PERSON", (email or name).strip().lower()), None

    messages, message_bytes = _messages(commits, redactor)
    authors = [person(c.author, c.author_email) for c in commits]
    committers = [person(c.committer, c.committer_email) for c in commits]
    rows = {
        "repo": [repo] * len(commits),
        "sha": [c.sha for c in commits],
        # One string per commit, split by DuckDB on insert: a list per row costs polars a
        # Series construction each (~14 µs x commits).
        "parents": [" ".join(c.parents) for c in commits],
        "author": [a for a, _ in authors],
        "committer": [a for a, _ in committers],
        "authored_at": [int(c.authored_at) for c in commits],
        "committed_at": [int(c.committed_at) for c in commits],
        "message": messages,
        "is_merge": [len(c.parents) > 1 for c in commits],
        "files_changed": [len(c.files) for c in commits],
        "lines_added": [sum(f["lines_added"] or 0 for f in c.files) for c in commits],
        "lines_removed": [sum(f["lines_removed"] or 0 for f in c.files) for c in commits],
        "message_bytes": message_bytes,
        "author_bytes": pl.Series([b for _, b in authors], dtype=pl.Binary),
        "committer_bytes": pl.Series([b for _, b in committers], dtype=pl.Binary),
    }
    cdf = pl.DataFrame(rows)
    cdf = cdf.with_columns(pl.col("message").str.split("\n").list.first().alias("subject"))
    files = [(c.sha, f) for c in commits for f in c.files]
    # paths recur across a history: is it a test, its language, its text and exact bytes
    kinds: dict[str, tuple[bool, str | None, str | None, bytes | None]] = {}
    for _, f in files:
        if f["path"] not in kinds:
            kinds[f["path"]] = (is_test_path(f["path"]), language_of(f["path"]),
                                *gitbytes.split(f["path"]))
    old = [gitbytes.split(f["old_path"]) for _, f in files]
    fdf = pl.DataFrame({
        "repo": [repo] * len(files),
        "sha": [s for s, _ in files],
        "path": [kinds[f["path"]][2] for _, f in files],
        "old_path": [o for o, _ in old],
        "change_type": [f["change_type"] for _, f in files],
        "lines_added": [f["lines_added"] for _, f in files],
        "lines_removed": [f["lines_removed"] for _, f in files],
        "is_binary": [f["is_binary"] for _, f in files],
        "is_test": [kinds[f["path"]][0] for _, f in files],
        "language": [kinds[f["path"]][1] for _, f in files],
        "path_bytes": [kinds[f["path"]][3] for _, f in files],
        "old_path_bytes": [b for _, b in old],
    }, schema={"repo": pl.Utf8, "sha": pl.Utf8, "path": pl.Utf8, "old_path": pl.Utf8,
               "change_type": pl.Utf8, "lines_added": pl.Int32, "lines_removed": pl.Int32,
               "is_binary": pl.Boolean, "is_test": pl.Boolean, "language": pl.Utf8,
               "path_bytes": pl.Binary, "old_path_bytes": pl.Binary})
    return cdf, fdf


FILE_COLUMNS = ("repo", "sha", "path", "old_path", "change_type", "lines_added", "lines_removed",
                "is_binary", "is_test", "language", "path_bytes", "old_path_bytes")


def ingest_repo(con: duckdb.DuckDBPyConnection, path: str | Path, *, rev: str = "--all",
                redactor=DATABASE_REDACTOR, progress: ReadProgress | None = None) -> IngestResult:
    """Ingest the commits of one repository not yet stored (one transaction).

    A commit that cannot be stored (see `parse_log`) is quarantined with its reason, alone;
    text that is not UTF-8 is stored readable with its exact bytes beside it (`gitbytes`).
    `progress` hears how many commits git has written so far, and of how many.
    """
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
            pending = pool.submit(read, repo, rev, known, progress=progress)
            import polars  # noqa: F401  (git is the long pole: load polars while it works)
            read_back = pending.result()
        fi.result.n_read = len(read_back)
        commits = [c for c in read_back if c.problem is None]
        for c in read_back:
            if c.problem is not None:  # by its text, not a position: re-reads dedupe
                fi.quarantine(None, (c.raw or "").encode("utf-8", "surrogateescape"),
                              c.problem)
        if commits:
            cdf, fdf = _frames(str(repo), commits, redactor)
            with scanning(con, "_commits_df", cdf):
                con.execute("""
                    INSERT INTO commits (repo, sha, parents, author, committer, authored_at,
                        committed_at, subject, message, is_merge, files_changed, lines_added,
                        lines_removed, ingest_run, message_bytes, author_bytes, committer_bytes)
                    SELECT repo, sha,
                        CASE WHEN parents = '' THEN []::VARCHAR[]
                             ELSE string_split(parents, ' ') END,
                        author, committer, to_timestamp(authored_at), to_timestamp(committed_at),
                        subject, message, is_merge, files_changed, lines_added, lines_removed, ?,
                        message_bytes, author_bytes, committer_bytes FROM _commits_df""",
                            [fi.result.run_id])
            if len(fdf):
                with scanning(con, "_files_df", fdf):
                    names = ", ".join(FILE_COLUMNS)
                    con.execute(f"INSERT INTO commit_files ({names}) SELECT {names} FROM _files_df")
        fi.result.n_loaded = len(commits)
        fi.result.n_known = len(known)
        fi.result.notes.append(f"{len(known):,} commits of this repository were already stored"
                               if known else f"HEAD {head[:12] if head else '(none)'}")
        if redactor is not None:
            fi.result.redactions = {k: v - before.get(k, 0) for k, v in redactor.counts.items()
                                    if v - before.get(k, 0)}
    return fi.result
