"""One ingest command's work over many files: `rlforge ingest tickets|commits|logs`.

`load_tickets`, `load_commits` and `load_logs` open one database session, build the
database's redactor, ingest each file as its own transaction (a file that fails does not
stop the others: `IngestSession`), then link what was loaded to the incidents
(`rlforge.links`). They return an `IngestBatch`, which the command prints; a progress
callback, when given, hears of each file as it starts and ends (and, for a repository,
of the commits read from it as git writes them).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Sequence

import duckdb

from rlforge import db
from rlforge.ingest.common import IngestResult, IngestSession, merge_counts

if TYPE_CHECKING:
    from rlforge.ingest.redaction.redactor import Redactor
    from rlforge.links import UpdateReport

COUNTS = ("n_read", "n_loaded", "n_duplicates", "n_quarantined", "n_flagged")


def make_redactor(con: duckdb.DuckDBPyConnection, enabled: bool, *, off: Iterable[str] = (),
                  patterns: dict[str, str] | None = None, regions: Iterable[str] | None = None,
                  logs: bool = False, recognizer: str = "") -> Redactor | None:
    """The database's redactor (same key, same pseudonyms every run), or None if disabled.

    Args:
        off, patterns, regions: the `[redaction]` settings (kinds left as they are, extra
            patterns, phone regions); the defaults are rlforge's own.
        logs: the text is ops logs (a bare run of digits is a counter, not a phone number).
        recognizer: a model-based name recognizer, ``NAME:MODEL`` (``[redaction]
            recognizer``), or "" for the rules alone; not used on logs.
    """
    if not enabled:
        return None
    from rlforge.ingest.redaction.redactor import Redactor

    model = None
    if recognizer and not logs:
        from rlforge.ingest.redaction.recognizers import get_recognizer

        model = get_recognizer(recognizer)
    return Redactor.configured(db.redaction_key(con), off=off, patterns=patterns,
                               regions=regions, logs=logs, recognizer=model)


@dataclass(frozen=True)
class IngestOptions:
    """What every ingest command shares: redaction (`redact`, `[redaction]`) and how the
    incident links are found afterwards (`[links]`)."""

    redact: bool = True
    redaction_off: Sequence[str] = ()
    redaction_patterns: dict[str, str] | None = None
    phone_regions: Sequence[str] | None = None
    recognizer: str = ""
    link_patterns: Sequence[str] = ()
    link_repos: dict[str, str] | None = None


@dataclass(frozen=True)
class FileProgress:
    """Where an ingest over several files is, for a progress display.

    `stage` is `reading` as a file starts, `statement` while DuckDB works through it (then
    `files_done` counts the fraction of it done), `records` as records of the current file
    are read (`records` of `records_total`; commits, which git writes slowly), `done` when
    it ends.
    """

    stage: Literal["reading", "statement", "records", "done"]
    path: Path
    files_done: float
    files: int
    rows: int  # records read from the files finished
    seconds: float
    records: int = 0  # of the current file, at stage `records`
    records_total: int | None = None


Progress = Callable[[FileProgress], None]
#: records(read so far, of how many) while one file is read
RecordProgress = Callable[[int, int], None]


def nothing_loaded(r: IngestResult) -> str | None:
    """Why an ingested file gave the database nothing, or None when it did (or held only
    what was already stored): most often the wrong --format or --map."""
    if r.status != "ok" or r.n_loaded or r.n_duplicates or r.n_known:
        return None
    if not r.n_read:
        return (f"nothing loaded: no record read as {r.format or 'this format'} "
                "(check --format and --map)")
    top = max(r.quarantine_reasons.items(), key=lambda kv: kv[1], default=("", 0))[0]
    return (f"nothing loaded: all {r.n_read:,} records read as {r.format or 'this format'} "
            f"were quarantined" + (f" ({top})" if top else "") + " (check --format)")


@dataclass
class IngestBatch:
    """What one ingest command did: a result per file, the links it updated, and what went
    wrong around the files (linking, closing the database)."""

    source: str
    results: list[IngestResult]
    redacted: bool
    links: UpdateReport | None = None
    links_error: str | None = None  # the links were not updated (the records are loaded)
    close_error: str | None = None  # closing the database failed (nothing committed is lost)

    @property
    def failed(self) -> list[IngestResult]:
        return [r for r in self.results if r.status != "ok"]

    def empty(self) -> list[tuple[IngestResult, str]]:
        """The files from which nothing loaded, each with why."""
        return [(r, why) for r in self.results if (why := nothing_loaded(r))]

    @property
    def totals(self) -> dict[str, int]:
        return {k: sum(getattr(r, k) for r in self.results) for k in COUNTS}

    @property
    def redactions(self) -> dict[str, int]:
        return merge_counts(*(r.redactions for r in self.results))

    @property
    def quarantine_reasons(self) -> dict[str, int]:
        return merge_counts(*(r.quarantine_reasons for r in self.results))

    @property
    def reconciles(self) -> bool:
        return all(r.reconciles for r in self.results)

    def to_dict(self, allow_empty: bool = False) -> dict[str, Any]:
        """The summary `--json` prints."""
        return {"files": [r.to_dict() for r in self.results], "totals": self.totals,
                "redactions": self.redactions, "failed": len(self.failed),
                "nothing_loaded": 0 if allow_empty else len(self.empty())}


def load_tickets(db_path: str | Path, paths: Iterable[Path], *, fmt: str = "auto",
                 mapping: dict[str, str] | None = None, on_conflict: str = "quarantine",
                 origin: str | None = None, options: IngestOptions = IngestOptions(),
                 progress: Progress | None = None,
                 watch_statements: bool = False) -> IngestBatch:
    """Ingest ticket exports (`rlforge.ingest.tickets.ingest_file` on each).

    Args:
        watch_statements: also report, from a thread, how far DuckDB is through the
            current file's statement (a single large export then does not look stuck).
    """
    from rlforge.ingest import tickets

    def one(con: duckdb.DuckDBPyConnection, path: Path, redactor: Any,
            _records: RecordProgress | None) -> IngestResult:
        return tickets.ingest_file(con, path, fmt=fmt, mapping=mapping, redactor=redactor,
                                   on_conflict=on_conflict, origin=origin)

    return _load(db_path, "tickets", paths, one, options, progress, watch=watch_statements)


def load_commits(db_path: str | Path, repos: Iterable[Path], *, rev: str = "--all",
                 options: IngestOptions = IngestOptions(),
                 progress: Progress | None = None) -> IngestBatch:
    """Ingest the commits of local git repositories not stored yet."""
    from rlforge.ingest import commits

    def one(con: duckdb.DuckDBPyConnection, path: Path, redactor: Any,
            records: RecordProgress | None) -> IngestResult:
        return commits.ingest_repo(con, path, rev=rev, redactor=redactor, progress=records)

    return _load(db_path, "commits", repos, one, options, progress)


def load_logs(db_path: str | Path, paths: Iterable[Path], *, fmt: str = "auto",
              masks: Iterable[str] = (), keys: dict[str, str] | None = None,
              unparsed: str = "quarantine", year: int | None = None,
              options: IngestOptions = IngestOptions(),
              progress: Progress | None = None) -> IngestBatch:
    """Ingest ops logs and mine their templates (`rlforge.ingest.logs.ingest_file` on each)."""
    from rlforge.ingest import logs

    masks = list(masks)

    def one(con: duckdb.DuckDBPyConnection, path: Path, redactor: Any,
            _records: RecordProgress | None) -> IngestResult:
        return logs.ingest_file(con, path, fmt=fmt, masks=masks, keys=keys, unparsed=unparsed,
                                redactor=redactor, year=year)

    return _load(db_path, "logs", paths, one, options, progress, logs=True)


def _load(db_path: str | Path, source: str, paths: Iterable[Path],
          one: Callable[[duckdb.DuckDBPyConnection, Path, Any, RecordProgress | None], IngestResult],
          options: IngestOptions, progress: Progress | None, *, watch: bool = False,
          logs: bool = False) -> IngestBatch:
    session = IngestSession(db_path)
    try:
        redactor = make_redactor(session.con, options.redact, off=options.redaction_off,
                                 patterns=options.redaction_patterns,
                                 regions=options.phone_regions, logs=logs,
                                 recognizer=options.recognizer)
        results = _each_file(session, source, list(paths),
                             lambda con, p, records: one(con, p, redactor, records), progress,
                             watch and progress is not None)
        batch = IngestBatch(source, results, redacted=bool(options.redact))
        _link(session.con, options, batch)
    finally:
        session.close()
    batch.close_error = session.close_error
    return batch


def _each_file(session: IngestSession, source: str, paths: list[Path],
               ingest: Callable[[duckdb.DuckDBPyConnection, Path, RecordProgress | None], IngestResult],
               progress: Progress | None, watch: bool) -> list[IngestResult]:
    """Ingest the files one by one, telling `progress` as each starts and ends, and as
    the ingest reports records read from one."""
    results: list[IngestResult] = []
    started, rows = time.perf_counter(), 0

    def tell(stage: Any, path: Path, done: float, records: int = 0,
             total: int | None = None) -> None:
        if progress is not None:
            progress(FileProgress(stage, path, done, len(paths), rows,
                                  time.perf_counter() - started, records, total))

    def read_some(done: int, total: int) -> None:
        if current:
            tell("records", current[-1], len(results) + (done / total if total else 0),
                 done, total)

    records = None if progress is None else read_some

    current: list[Path] = []
    stop = threading.Event()
    con = session.con

    def poll() -> None:
        while not stop.wait(0.25):
            try:
                pct = con.query_progress()
            except Exception:  # no statement running at this instant
                continue
            if current and pct is not None and 0 <= pct <= 100:
                tell("statement", current[-1], len(results) + pct / 100)

    watcher = threading.Thread(target=poll, daemon=True) if watch else None
    if watcher:
        con.execute("SET enable_progress_bar = true")  # tracked, not printed (db.connect)
        watcher.start()
    try:
        for p in paths:
            current.append(p)
            tell("reading", p, len(results))
            r = session.run(source, p, lambda con, path: ingest(con, path, records))
            results.append(r)
            rows += r.n_read
            tell("done", p, len(results))
    finally:
        stop.set()
        if watcher:
            watcher.join()
    return results


def _link(con: duckdb.DuckDBPyConnection, options: IngestOptions, batch: IngestBatch) -> None:
    """Update the incident links with what was loaded. The records are committed already:
    a failure here is kept in `links_error`, and the next ingest or `rlforge links
    --update` links them."""
    from rlforge import links

    try:
        batch.links = links.update(con, patterns=options.link_patterns,
                                   repos=options.link_repos)
    except duckdb.Error as exc:
        batch.links_error = str(exc)
