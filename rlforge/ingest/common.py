"""What every ingest shares: one transaction per file, and the books that must balance.

Every input record ends as exactly one of loaded, duplicate, or quarantined, and
`read == loaded + duplicates + quarantined` for every file. `FileIngest` is the context
each source runs a file inside: it opens the transaction, hands out the `ingest_runs`
id, collects quarantine rows, and on exit either commits everything of the file with its
`ingest_runs` row, or rolls the file back and records a failed run with one clear reason.
"""

from __future__ import annotations

import collections
import gzip
import io
import json
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import duckdb

from rlforge import __version__, db
from rlforge.errors import InputFileError

RAW_CAP = 64 * 1024  # bytes of raw text kept per quarantined record

# The default for every `redactor=` parameter: redact with the database's own key. Library
# callers, like CLI users, must ask (redactor=None) to store text as it is.
DATABASE_REDACTOR = "database"


def resolve_redactor(con: duckdb.DuckDBPyConnection, redactor):
    """The Redactor to use: the database's for DATABASE_REDACTOR, else what was passed."""
    if redactor == DATABASE_REDACTOR:
        from rlforge.ingest.redact import Redactor

        return Redactor(db.redaction_key(con))
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
    redactions: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def reconciles(self) -> bool:
        """True when every record read is accounted for."""
        return self.n_read == self.n_loaded + self.n_duplicates + self.n_quarantined

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reconciles"] = self.reconciles
        return out


class FileIngest:
    """One file (or repository) ingested as one transaction.

    Usage::

        with FileIngest(con, "tickets", path, fmt) as fi:
            ...                       # stage, decide, insert; fi.quarantine(...) for rejects
            fi.result.n_read = ...
        fi.result                     # status ok, or failed with the reason (file rolled back)

    `InputFileError` raised inside the block fails this file only (it is swallowed after
    the rollback and recorded); any other exception rolls back and propagates.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str, path: str | Path,
                 fmt: str | None = None, *, sha256: "str | Future | None" = None, head: str | None = None,
                 redact: Callable[[str], str] | None = None):
        self.con = con
        self.source = source
        self.path = str(path)
        self.sha256 = sha256
        self.head = head
        self._redact = redact
        self._quarantine: list[tuple[int | None, str, str]] = []
        self.result = IngestResult(source=source, path=self.path, format=fmt)
        self._started = 0.0
        self._started_at = None

    def __enter__(self) -> "FileIngest":
        self._started = time.perf_counter()
        self._started_at = db.now()
        self.result.run_id = db.next_run_id(self.con)
        self.con.execute("BEGIN TRANSACTION")
        return self

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
        if exc_type is None:
            r.n_quarantined += len(self._quarantine)
            if self._quarantine:
                rows = [(r.run_id, self.source, self.path, no,
                         self._redact(raw) if self._redact else raw, reason, db.now())
                        for no, raw, reason in self._quarantine]
                db.insert_rows(self.con, "quarantine", rows)
            self._record_run()
            self.con.execute("COMMIT")
            return False
        self.con.execute("ROLLBACK")
        r.status = "failed"
        r.error = exc.problem if isinstance(exc, InputFileError) else f"{exc_type.__name__}: {exc}"
        r.n_read = r.n_loaded = r.n_duplicates = r.n_quarantined = r.n_flagged = 0
        r.redactions = {}
        r.quarantine_reasons = {}
        self._record_run()
        return isinstance(exc, InputFileError)

    def _digest(self) -> str | None:
        """The file's sha256: a string, or a Future computing it on another thread."""
        return self.sha256.result() if isinstance(self.sha256, Future) else self.sha256

    def _record_run(self) -> None:
        r = self.result
        self.con.execute(
            "INSERT INTO ingest_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [r.run_id, self.source, self.path, r.format, self._digest(), self.head, r.status, r.error,
             r.n_read, r.n_loaded, r.n_duplicates, r.n_quarantined, r.n_flagged,
             json.dumps(r.redactions), __version__, self._started_at, db.now(), r.seconds],
        )


# --- reading files -------------------------------------------------------------------

SNIFF_BYTES = 64 * 1024


_HASHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlforge-sha256")


def sha256_in_background(path: str | Path) -> Future:
    """Start hashing a file on another thread (hashlib releases the GIL on large blocks), so
    hashing a large export overlaps with parsing it instead of adding to it."""
    return _HASHER.submit(db.sha256_file, path)


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def read_head(path: str | Path, n: int = SNIFF_BYTES) -> bytes:
    """The first n decompressed bytes of a file (gzip read transparently)."""
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as fh:
                return fh.read(n)
        with open(path, "rb") as fh:
            return fh.read(n)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFileError(str(path), f"cannot read: {exc}") from None


def read_all(path: str | Path) -> bytes:
    """The whole decompressed content; a truncated or corrupt gzip is an InputFileError."""
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return Path(path).read_bytes()
    except EOFError:
        raise InputFileError(str(path), "truncated gzip stream (file ends before the "
                             "compressed data does); re-export or re-download it") from None
    except (OSError, zlib.error) as exc:
        raise InputFileError(str(path), f"cannot read: {exc}") from None


def check_not_binary(path: str | Path, head: bytes) -> None:
    """Refuse files that are clearly not text (NUL bytes in the first block)."""
    if b"\x00" in head[:8192]:
        raise InputFileError(str(path), "binary file (contains NUL bytes), not a text export")


def decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text (BOM stripped) and whether invalid bytes had to be replaced."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def iter_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line bytes without the newline) for non-empty lines."""
    for i, line in enumerate(io.BytesIO(data), start=1):
        line = line.rstrip(b"\r\n")
        if line.strip():
            yield i, line


def merge_counts(*counters: dict[str, int]) -> dict[str, int]:
    total: collections.Counter[str] = collections.Counter()
    for c in counters:
        total.update(c)
    return dict(sorted(total.items()))
