"""What every ingest shares: one transaction per file, and the books that must balance.

Every input record ends as exactly one of loaded, duplicate, or quarantined, and
`read == loaded + duplicates + quarantined` for every file. `FileIngest` is the context
each source runs a file inside: it opens the transaction, hands out the `ingest_runs`
id, collects quarantine rows, and on exit either commits everything of the file with its
`ingest_runs` row, or rolls the file back and records a failed run with one clear reason.

`ingest_guarded` and `IngestSession` are the file boundary of a command over several
files: whatever goes wrong with one file (see `file_failure`) fails that file alone, on
the record, and the next one starts on a usable database. That includes a bug: its
traceback is kept with the file's result for the command to show.
"""

from __future__ import annotations

import collections
import csv
import errno
import json
import os
import time
import traceback
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import duckdb

from rlforge import __version__, db
from rlforge.errors import InputFileError, UserError
from rlforge.ingest.textfile import PERMISSION_DENIED

RAW_CAP = 64 * 1024  # bytes of raw text kept per quarantined record

# The default for every `redactor=` parameter: redact with the database's own key. Library
# callers, like CLI users, must ask (redactor=None) to store text as it is.
DATABASE_REDACTOR = "database"


def resolve_redactor(con: duckdb.DuckDBPyConnection, redactor, logs: bool = False):
    """The Redactor to use: the database's for DATABASE_REDACTOR (`logs`: set for ops
    logs), else what was passed."""
    if redactor == DATABASE_REDACTOR:
        from rlforge.ingest.redaction.redactor import Redactor

        return Redactor(db.redaction_key(con), logs=logs)
    return redactor


@dataclass
class IngestResult:
    """The outcome of ingesting one file or repository."""

    source: str
    path: str
    format: str | None = None
    run_id: int | None = None
    status: str = "ok"  # ok | failed
    error: str | None = None
    n_read: int = 0
    n_loaded: int = 0
    n_duplicates: int = 0
    n_quarantined: int = 0
    n_flagged: int = 0
    n_known: int = 0  # already stored before this run and skipped unread (commits)
    redactions: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    line_endings: str | None = None  # LF | CRLF | CR, as detected in the file
    traceback: str | None = None  # of an unexpected error (a bug) that failed this file
    # the failed run's `ingest_runs` row, when the database could not take it at the time
    unrecorded: list | None = field(default=None, repr=False)

    @property
    def reconciles(self) -> bool:
        """True when every record read is accounted for."""
        return self.n_read == self.n_loaded + self.n_duplicates + self.n_quarantined

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("unrecorded")
        out["reconciles"] = self.reconciles
        return out


def source_path(path: str | Path) -> str:
    """The identity of an input file or repository: its absolute path, with `..` and
    symbolic links resolved. `app.log` in one directory and `app.log` in another are two
    sources; `app.log`, `./app.log`, its absolute path and a link to it are one. Every
    record and quarantine row is keyed by it (with its line or record number)."""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError):  # a loop of links, a directory that cannot be entered
        return os.path.abspath(path)


class FileIngest:
    """One file (or repository) ingested as one transaction.

    Usage::

        with FileIngest(con, "tickets", path, fmt) as fi:
            ...                       # stage, decide, insert; fi.quarantine(...) for rejects
            fi.result.n_read = ...
        fi.result                     # status ok, or failed with the reason (file rolled back)

    A problem of the file itself (`file_error_reason`: unreadable, unparsable, nested too
    deep, disk full, ...) raised inside the block fails this file only: it is rolled back,
    recorded as a failed run with the reason, and swallowed. So is a bug (any other
    Exception), recorded with its type and message, its traceback kept in the result. A
    `UserError` about the command (a --map column the export lacks) and Ctrl-C roll back
    and propagate: they end the command.

    A quarantined record already in `quarantine` for the same file (same record number,
    same redacted text, same reason: a re-ingest) is not stored again; it counts as a
    duplicate, like a loaded record seen before.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str, path: str | Path,
                 fmt: str | None = None, *, sha256: "str | Future | None" = None, head: str | None = None,
                 redact: Callable[[str], str] | None = None):
        self.con = con
        self.source = source
        self.path = source_path(path)
        self.sha256 = sha256
        self.head = head
        self._redact = redact
        self._quarantine: list[tuple[int | None, str, str]] = []
        self.known_quarantined = 0  # quarantined records an earlier run already stored
        self._quarantined_before: bool | None = None
        self.result = IngestResult(source=source, path=self.path, format=fmt)
        self._started = 0.0
        self._started_at: datetime | None = None

    def __enter__(self) -> "FileIngest":
        self._started = time.perf_counter()
        self._started_at = db.now()
        self.result.run_id = db.next_run_id(self.con)
        self.con.execute("BEGIN TRANSACTION")
        return self

    @property
    def run_id(self) -> int:
        """This ingest's run id (given on entering the `with` block)."""
        run_id = self.result.run_id
        assert run_id is not None, "FileIngest.run_id is read inside its with block"
        return run_id

    def quarantine(self, record_no: int | None, raw: str | bytes | None, reason: str) -> None:
        """Set a record aside with the reason; its raw text is redacted and capped."""
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="replace")
        raw = raw or ""
        if len(raw) > RAW_CAP:
            raw = raw[:RAW_CAP] + f"\n[... truncated, {len(raw):,} characters in all]"
        self._quarantine.append((record_no, raw, reason))
        key = reason.split(":", 1)[0]
        self.result.quarantine_reasons[key] = self.result.quarantine_reasons.get(key, 0) + 1

    def __exit__(self, exc_type, exc, tb) -> bool:
        r = self.result
        r.seconds = time.perf_counter() - self._started
        late = None
        if exc_type is None:
            try:
                self._store_quarantine()
                if self.known_quarantined:
                    r.notes.append(f"{self.known_quarantined:,} record(s) already in quarantine "
                                   "from an earlier ingest of this file (counted as duplicates)")
                self._record_run()
                self.con.execute("COMMIT")
                return False
            except Exception as exc_at_end:  # e.g. the disk fills up at the commit
                late = exc_type, exc = type(exc_at_end), exc_at_end
        failure = file_failure(exc)
        reason = failure[0] if failure else None
        self._rollback()
        r.status = "failed"
        r.error = reason or f"{exc_type.__name__}: {exc}"
        r.traceback = failure[1] if failure else None
        r.n_read = r.n_loaded = r.n_duplicates = r.n_quarantined = r.n_flagged = 0
        r.redactions = {}
        r.quarantine_reasons = {}
        try:
            self._record_run()
        except Exception as again:  # the database itself is unusable (disk full, ...)
            r.unrecorded = self._run_row()
            r.error += not_recorded(r.error, again)
        if late is not None and reason is None:
            raise exc
        return reason is not None

    def _rollback(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except Exception:  # nothing to roll back, or the connection is gone: both fine
            pass

    def quarantined_before(self) -> bool:
        """Whether an earlier run of this file left records in quarantine (looked up once)."""
        if self._quarantined_before is None:
            self._quarantined_before = in_quarantine(self.con, self.source, self.path)
        return self._quarantined_before

    def _store_quarantine(self) -> None:
        """Insert this file's quarantined records, except those stored by an earlier run."""
        r = self.result
        if not self._quarantine:
            return
        rows = [(r.run_id, self.source, self.path, no,
                 self._redact(raw) if self._redact else raw, reason, db.now())
                for no, raw, reason in self._quarantine]
        known = store_quarantine(self.con, db.rows_frame(rows, list(QUARANTINE_COLUMNS)),
                                 self.quarantined_before())
        r.n_quarantined += len(rows) - len(known)
        r.n_duplicates += len(known)
        for i in known:  # the reasons count what is set aside now
            key = self._quarantine[i][2].split(":", 1)[0]
            r.quarantine_reasons[key] -= 1
        r.quarantine_reasons = {k: v for k, v in r.quarantine_reasons.items() if v}
        self.known_quarantined += len(known)

    def _digest(self) -> str | None:
        """The file's sha256: a string, or a Future computing it on another thread."""
        return self.sha256.result() if isinstance(self.sha256, Future) else self.sha256

    def _run_row(self) -> list:
        r = self.result
        try:
            digest = self._digest()
        except Exception:  # the file could not be read to the end: no digest
            digest = None
        return [r.run_id, self.source, self.path, r.format, digest, self.head, r.status,
                r.error, r.n_read, r.n_loaded, r.n_duplicates, r.n_quarantined, r.n_flagged,
                json.dumps(r.redactions), __version__, self._started_at, db.now(), r.seconds]

    def _record_run(self) -> None:
        record_run(self.con, self._run_row())


QUARANTINE_COLUMNS = ("ingest_run", "source", "file", "record_no", "raw", "reason", "created_at")


def record_run(con: duckdb.DuckDBPyConnection, row: list) -> None:
    """Write one `ingest_runs` row (in the column order of the table)."""
    con.execute("INSERT INTO ingest_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?)", row)


def store_quarantine(con: duckdb.DuckDBPyConnection, frame, check: bool = True) -> list[int]:
    """Insert quarantine rows (a polars frame in the table's column order, all of one source
    and file) except those already stored: same source, file, record number, (redacted)
    text and reason, the key a re-ingest of the file reproduces. Only the stored rows of
    that file between the frame's first and last record numbers are looked at; `check`
    False (nothing of the file is in quarantine) skips the lookup. Returns the positions in
    `frame` of the rows skipped."""
    import polars as pl

    if frame.height == 0:
        return []
    frame = frame.with_row_index("_pos")
    known: list[int] = []
    if check:
        low, high = frame["record_no"].min(), frame["record_no"].max()
        window = ("q.record_no IS NULL" if low is None else
                  f"(q.record_no BETWEEN {int(low)} AND {int(high)} OR q.record_no IS NULL)")
        with db.scanning(con, "_new_quarantine", frame):
            known = pl.DataFrame(con.sql(f"""
                SELECT n._pos FROM _new_quarantine n SEMI JOIN (
                    SELECT * FROM quarantine q WHERE q.source = ? AND q.file = ? AND {window}) q
                ON q.record_no IS NOT DISTINCT FROM n.record_no AND q.reason = n.reason
                   AND q.raw IS NOT DISTINCT FROM n.raw""",
                params=[frame["source"][0], frame["file"][0]]))["_pos"].to_list()
    fresh = frame.filter(~pl.col("_pos").is_in(known)).drop("_pos") if known else frame.drop("_pos")
    if fresh.height:
        with db.scanning(con, "_new_quarantine", fresh):
            con.execute(f"INSERT INTO quarantine SELECT {', '.join(QUARANTINE_COLUMNS)} "
                        "FROM _new_quarantine")
    return known


def in_quarantine(con: duckdb.DuckDBPyConnection, source: str, path: str) -> bool:
    """Whether any record of this file is in quarantine (from an earlier run)."""
    return bool(con.execute("SELECT count(*) FROM (SELECT 1 FROM quarantine WHERE source = ? "
                            "AND file = ? LIMIT 1)", [source, path]).fetchall()[0][0])


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's run over several lines)."""
    text = str(exc).strip()
    return text.split("\n", 1)[0] if text else type(exc).__name__


def file_error_reason(exc: BaseException) -> str | None:
    """One line saying what is wrong with a file, for an exception that is the file's (or
    its disk's) problem rather than a bug in rlforge; None for anything else.

    Covered: `InputFileError`; permissions and other I/O errors, a full disk included
    (from Python or from DuckDB); nesting too deep for the parsers (RecursionError); a
    CSV the csv module cannot read; running out of memory on one huge file.
    """
    if isinstance(exc, InputFileError):
        return exc.problem
    if isinstance(exc, RecursionError):
        return ("nested too deeply to parse (a JSON value inside more than ~1,000 levels "
                "of arrays or objects)")
    if isinstance(exc, PermissionError):
        return PERMISSION_DENIED
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOSPC:
            return "no space left on device (free some space and ingest this file again)"
        return f"I/O error: {exc.strerror or exc}"
    if isinstance(exc, csv.Error):
        return f"not readable as CSV: {exc}"
    if isinstance(exc, MemoryError):
        return "out of memory while reading this file"
    if isinstance(exc, duckdb.Error):
        text = first_line(exc)
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return "no space left on device (free some space and ingest this file again): " + text
        if isinstance(exc, (duckdb.IOException, duckdb.FatalException)) or \
                "Could not write file" in text or "Could not read from file" in text:
            return f"database I/O error: {text}"
        if isinstance(exc, duckdb.OutOfMemoryException):
            return f"out of memory while storing this file: {text}"
    return None


def file_failure(exc: BaseException) -> tuple[str, str | None] | None:
    """How an exception raised while ingesting one file fails that file alone: the reason
    to record, and the traceback to show (None for the file's own problems, see
    `file_error_reason`; the formatted traceback for any other Exception, a bug, recorded
    as an unexpected error with its type and message). None for what ends the whole
    command instead: a `UserError` about the command, and BaseExceptions (Ctrl-C)."""
    reason = file_error_reason(exc)
    if reason is not None:
        return reason, None
    if not isinstance(exc, Exception) or isinstance(exc, UserError):
        return None
    return (f"unexpected error, a bug in rlforge ({type(exc).__name__}: {first_line(exc)})",
            "".join(traceback.format_exception(exc)))


def not_recorded(error: str, exc: BaseException) -> str:
    """What to add to a failed file's error when its `ingest_runs` row could not be written
    (the database refused it with `exc`)."""
    why = first_line(exc)
    return f"{NOT_RECORDED}: {'the same error' if why in error else why})"


def merge_counts(*counters: dict[str, int]) -> dict[str, int]:
    total: collections.Counter[str] = collections.Counter()
    for c in counters:
        total.update(c)
    return dict(sorted(total.items()))


def ingest_guarded(con: duckdb.DuckDBPyConnection, source: str, path: str | Path,
                   ingest: Callable[[duckdb.DuckDBPyConnection, Path], IngestResult]
                   ) -> IngestResult:
    """`ingest(con, path)` with the file boundary around it: a failure of the file alone
    (see `file_failure`: its own problem, or a bug), raised before its transaction began as
    well as inside it, becomes a failed result, and every failed result gets its
    `ingest_runs` row (status failed, the reason) as soon as the database can take it."""
    started = db.now()
    try:
        result = ingest(con, Path(path))
    except Exception as exc:
        failure = file_failure(exc)
        if failure is None:
            raise
        result = IngestResult(source=source, path=source_path(path), status="failed",
                              error=failure[0], traceback=failure[1])
    if result.status != "ok":
        record_failure(con, result, started)
    return result


def record_failure(con: duckdb.DuckDBPyConnection, r: IngestResult, started=None) -> None:
    """Write the `ingest_runs` row of a failed result that has none yet (failed before its
    transaction began, or when the database could not take the row)."""
    if r.run_id is not None and r.unrecorded is None:
        return  # FileIngest recorded it
    assert r.error is not None, "a failed result says why"
    row = r.unrecorded
    try:
        if row is None:
            r.run_id = db.next_run_id(con)
            row = [r.run_id, r.source, r.path, r.format, None, None, "failed", r.error,
                   0, 0, 0, 0, 0, "{}", __version__, started or db.now(), db.now(), r.seconds]
        else:
            r.error = r.error.split(NOT_RECORDED, 1)[0]
            row[7] = r.error
        record_run(con, row)
        r.unrecorded = None
    except Exception as exc:
        r.unrecorded = row
        if NOT_RECORDED not in r.error:
            r.error += not_recorded(r.error, exc)


NOT_RECORDED = " (not yet recorded in ingest_runs"


class IngestSession:
    """The database connection of one ingest command over several files, and what keeps
    one file's failure from reaching the others.

    `run` ingests one file through `ingest_guarded`. When a failure left the connection
    unusable (DuckDB invalidates a database after a write fails, e.g. on a full disk), the
    database is opened again, so the next file starts on a clean one, and the failure is
    recorded once the database can take it.
    """

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        self.con = db.connect(self.db_path)
        self.close_error: str | None = None  # what went wrong closing (a full disk...)

    def run(self, source: str, path: str | Path,
            ingest: Callable[[duckdb.DuckDBPyConnection, Path], IngestResult]) -> IngestResult:
        """Ingest one file with `ingest(con, path)`; never raises for the file's own problems."""
        started = db.now()
        result = ingest_guarded(self.con, source, path, ingest)
        if result.unrecorded is not None and not self._usable():
            self._reopen(result)
            record_failure(self.con, result, started)
        return result

    def _usable(self) -> bool:
        try:
            self.con.execute("SELECT 1").fetchall()
            return True
        except Exception:
            return False

    def _reopen(self, r: IngestResult) -> None:
        try:
            self.con.close()
        except Exception:
            pass
        try:
            self.con = db.connect(self.db_path)
        except Exception as exc:
            raise UserError(f"the database {self.db_path} cannot be opened again after "
                            f"{r.path} failed ({r.error}): {first_line(exc)}") from None

    def close(self) -> None:
        """Close the database. A failure here (DuckDB checkpoints on close, which a full
        disk can refuse) loses nothing committed: it is kept in `close_error`."""
        try:
            self.con.close()
        except (duckdb.Error, OSError) as exc:
            self.close_error = (f"closing {self.db_path} failed ({first_line(exc)}); what was "
                                "committed is kept in its write-ahead log and applied when "
                                "the database is next opened with space free")


def service_name(path: str) -> str:
    """A log file's service name: its file name without log/compression suffixes."""
    name = PurePosixPath(path).name
    while True:
        stem, dot, ext = name.rpartition(".")
        if dot and ext.lower() in ("log", "gz", "jsonl", "json", "txt", "syslog", "out"):
            name = stem
        else:
            return name or "logs"
