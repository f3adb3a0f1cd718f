"""Ops logs: any common log format into `log_records`, `log_messages` and `log_templates`
(read through the `log_lines` view), every record with its mined template.

A file is read in bounded chunks (`CHUNK_BYTES` of text at a time, `.gz` transparently),
so memory stays flat on files larger than RAM. Per chunk, everything is vectorised:

1. the format's parser (a Rust regex or JSON path per column) splits every line into time,
   host, component, level, message and other fields; a line the format does not match
   joins the record before it when it looks like a continuation (stack trace, indented
   text), else it is quarantined with the reason (or, with `unparsed="message-only"`,
   loaded with only its message);
2. the distinct messages are redacted, masked and normalised, and only the distinct
   normalised messages go through the template miner (`templates.TemplateMiner`);
3. records are written with DuckDB from Arrow; a record already stored (same line number
   and content, e.g. the same file ingested again) is a duplicate.

Counts reconcile per file: records read = loaded + duplicates + quarantined. A record is a
line with its continuation lines; blank lines are not records. When a template generalises
during an ingest, the merge is recorded in `template_merges` and every stored message is
re-pointed, so by the end of the ingest grouping by `template_id` is the final grouping.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import duckdb
import polars as pl

from rlforge import db
from rlforge.errors import UserError
from rlforge.ingest import templates as tm
from rlforge.ingest.logformats import reader as log_reader
from rlforge.ingest.logformats import records as log_records
from rlforge.ingest.logformats.base import LogFormat
from rlforge.ingest.logformats.header import HeaderFormat
from rlforge.ingest.logformats.reader import sample_lines
from rlforge.ingest.logformats.records import RECORD_COLUMNS, TIME_UNPARSED, iter_chunks
from rlforge.ingest.logformats.registry import detect, make_format
from rlforge.ingest.common import (DATABASE_REDACTOR, RAW_CAP, FileIngest, IngestResult,
                                   resolve_redactor, source_path, store_quarantine)
from rlforge.ingest.textfile import file_encoding, is_gzip, line_endings, read_head

SOURCE = "logs"
UNPARSED = ("quarantine", "message-only")


def resolve_format(path: str | Path, spec: str = "auto",
                   keys: dict[str, str] | None = None, year: int | None = None) -> LogFormat:
    """The format of a file (detected from its first lines when `spec` is auto), prepared
    on that sample (time layout, JSON keys). Times written without a year get `year`, else
    the year nearest the file's times written with one, else the year of the file's
    modification time."""
    sample = sample_lines(path)
    fmt = detect(sample.to_list(), keys) if spec == "auto" else make_format(spec, keys)
    fmt.year = year
    mtime = dt.datetime.fromtimestamp(os.path.getmtime(path), dt.timezone.utc)
    fmt.prepare(sample, mtime.replace(tzinfo=None))
    return fmt


def read_log(path: str | Path, fmt: str = "auto", keys: dict[str, str] | None = None,
             unparsed: str = "quarantine", year: int | None = None) -> pl.DataFrame:
    """All records of a log file as a polars frame (no database, no redaction, no mining);
    unparsed lines come back with `ok` false and only `message` (the raw text)."""
    parser = resolve_format(path, fmt, keys, year)
    frames = []
    for chunk in iter_chunks(path, parser, newline=line_endings(read_head(path))):
        frames.append(chunk.records.with_columns(pl.lit(True).alias("ok")))
        if chunk.unparsed.height:
            frames.append(_message_only(chunk.unparsed, chunk.records)
                          .with_columns(pl.lit(False).alias("ok")))
    if not frames:
        return pl.DataFrame(schema={c: pl.String for c in RECORD_COLUMNS} | {"ok": pl.Boolean})
    return pl.concat(frames, how="vertical_relaxed").sort("line_no")


def _message_only(unparsed: pl.DataFrame, like: pl.DataFrame) -> pl.DataFrame:
    """Unparsed records as records with only a message (and the flag `unparsed`)."""
    fields_type = like.schema.get("fields", pl.String)
    return unparsed.select(
        "line_no", "n_lines", pl.lit(None, pl.Datetime("us")).alias("ts"),
        *[pl.lit(None, pl.String).alias(c) for c in ("ts_text", "host", "component", "level")],
        pl.col("raw").alias("message"), pl.lit(None, fields_type).alias("fields"),
        pl.col("flag").fill_null("unparsed").alias("flag"))


# --- ingest ----------------------------------------------------------------------------

ARROW = pl.CompatLevel.newest()  # string views: handed to DuckDB without a copy
MESSAGE_CACHE_ROWS = 500_000     # distinct messages remembered across chunks of a file


@dataclass
class _TemplateBook:
    """Templates touched by one file: what to write to `log_templates` at its end."""

    miner: tm.TemplateMiner
    touched: set[str] = field(default_factory=set)
    merges: list[tuple[str, str]] = field(default_factory=list)
    examples: dict[str, str] = field(default_factory=dict)
    stats: list[pl.DataFrame] = field(default_factory=list)  # records per template, per chunk

    def count(self, records: pl.DataFrame, *lookups: pl.DataFrame) -> None:
        """Add a chunk's records (message_id, ts) to the per-template statistics, by the
        template each message has now (`lookups`: frames of message_id, template_id that
        together hold every message of the chunk). Records are counted per message first:
        grouping integers is cheaper than joining every record."""
        per_message = records.group_by("message_id").agg(
            pl.len().cast(pl.Int64).alias("n"), pl.col("ts").min().alias("first_seen"),
            pl.col("ts").max().alias("last_seen"))
        stats = _merge_stats([per_message.join(ids.select("message_id", "template_id"),
                                               on="message_id") for ids in lookups])
        self.touched.update(stats["template_id"].to_list())
        self.stats.append(stats)
        if len(self.stats) >= 32:  # keep a long file's statistics small
            self.stats = [_merge_stats(self.stats)]


def _merge_stats(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Statistics (template_id, n, first_seen, last_seen) of several parts, per template."""
    return pl.concat(parts).group_by("template_id").agg(
        pl.col("n").sum(), pl.col("first_seen").min(), pl.col("last_seen").max())


class _BackgroundHash:
    """sha256 of the bytes read, computed on another thread (hashlib lets go of the GIL)
    while the chunk is parsed."""

    def __init__(self):
        self._hash = hashlib.sha256()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlforge-sha256")
        self._last = None

    def update(self, data: bytes) -> None:
        if self._last is not None:
            self._last.result()  # at most one block waits: memory stays bounded
        self._last = self._pool.submit(self._hash.update, data)

    def hexdigest(self) -> str:
        self.close()
        return self._hash.hexdigest()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._last is not None:
            self._last.result()
            self._last = None


class _Writer:
    """Runs one file's inserts on a background thread, in order, so that DuckDB writes a
    chunk while polars parses the next. The connection is only ever used under `lock`."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self.lock = threading.Lock()
        self.queue: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="rlforge-log-writer",
                                       daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            job = self.queue.get()
            if job is None:
                return
            if self.error is None:
                try:
                    with self.lock:
                        job()
                except BaseException as exc:  # handed to the main thread in close()
                    self.error = exc

    def submit(self, job) -> None:
        if self.error is not None:
            self.close()
        self.queue.put(job)

    def close(self) -> None:
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise error


class _Prefetch:
    """Runs an iterator on a background thread, one item ahead, so that the next chunk is
    parsed (polars lets go of the GIL) while the caller stores this one. Exceptions reach
    the caller at the item where they happened; `close` stops the thread early."""

    _END = object()

    def __init__(self, items: Iterable):
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(iter(items),),
                                        name="rlforge-log-parser", daemon=True)
        self._thread.start()

    def _run(self, items) -> None:
        try:
            for item in items:
                if not self._put((True, item)):
                    return
            self._put((True, self._END))
        except BaseException as exc:  # handed to the consumer
            self._put((False, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:  # a generator stopped early: release its file now
                close()

    def _put(self, entry) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        while True:
            ok, item = self._queue.get()
            if not ok:
                raise item
            if item is self._END:
                return
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _load_miner(con: duckdb.DuckDBPyConnection) -> tm.TemplateMiner:
    rows = con.execute("SELECT template FROM log_templates").fetchall()
    return tm.TemplateMiner(tm.split_tokens(r[0]) for r in rows)


def _next_message_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(message_id), 0) + 1 FROM log_messages").fetchall()[0][0]


class _RedactMemo:
    """The values of one text column that a file's earlier chunks already redacted, and
    the ones redaction changed (old -> new): a value seen again is not scanned again.
    Like the message cache, it counts each distinct value's redactions once per file."""

    LIMIT = 200_000  # distinct values remembered per column; past it, start over

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.seen = pl.Series("v", [], dtype=pl.String)
        self.old = pl.Series("v", [], dtype=pl.String)
        self.new = pl.Series("v", [], dtype=pl.String)

    def apply(self, values: pl.Series, distinct: pl.Series, redactor) -> pl.Series:
        fresh = distinct.filter(~distinct.is_in(self.seen.implode()))
        if self.seen.len() + fresh.len() > self.LIMIT:
            # Start over with this chunk's values: every one of them is scanned again, so
            # none that redaction changes slips through as "seen" once the memo is empty.
            self.clear()
            fresh = distinct
        if fresh.len():
            redacted = redactor.redact_series(fresh)
            changed = fresh != redacted
            self.seen = pl.concat([self.seen, fresh.alias("v")])
            self.old = pl.concat([self.old, fresh.filter(changed).alias("v")])
            self.new = pl.concat([self.new, redacted.filter(changed).alias("v")])
        here = self.old.is_in(distinct.implode())
        if not here.any():
            return values
        return values.replace(self.old.filter(here), self.new.filter(here))


def _redact_distinct(values: pl.Series, redactor, memo: _RedactMemo) -> pl.Series:
    """Redact a text column by its distinct values (log columns repeat a lot), those not
    in `memo` yet; a column of mostly unique values is redacted as it is."""
    if redactor is None or values.dtype != pl.String or values.null_count() == values.len():
        return values
    distinct = values.drop_nulls().unique()
    if distinct.len() > values.len() // 2:
        return redactor.redact_series(values)
    return memo.apply(values, distinct, redactor)


def _redact_fields(fields: pl.Series, redactor, plain: set[str],
                   memos: dict[str, _RedactMemo]) -> pl.Series:
    """The other fields as JSON text, each text field redacted (except time fields).
    `memos` (one per field, kept across a file's chunks) spares values seen before another
    scan. (polars encodes the JSON here for less than DuckDB's to_json costs the writer.)"""
    if fields.dtype == pl.String:
        return _redact_distinct(fields, redactor, memos.setdefault("", _RedactMemo()))
    if not isinstance(fields.dtype, pl.Struct):
        return pl.Series("fields", [None] * len(fields), dtype=pl.String)
    parts = [(fields.struct.field(f.name) if f.name in plain else
              _redact_distinct(fields.struct.field(f.name), redactor,
                               memos.setdefault(f.name, _RedactMemo()))).alias(f.name)
             for f in fields.dtype.fields]
    return pl.DataFrame(parts).select(pl.struct(pl.all()).struct.json_encode()
                                      .alias("fields")).to_series()


class _ChunkStore:
    """Turns chunks of records into rows of `log_messages` and `log_records`.

    Distinct messages are remembered across the chunks of a file (`MESSAGE_CACHE_ROWS`):
    a message seen before keeps its message id, redaction and template, so only new
    messages are redacted, mined and inserted. Records go to the `_Writer` thread.
    """

    def __init__(self, con, writer: _Writer, fi: FileIngest, book: _TemplateBook, masks,
                 redactor, plain_fields: set[str], earlier_runs: list[int]):
        self.con, self.writer, self.fi, self.book = con, writer, fi, book
        self.masks, self.redactor, self.plain = masks, redactor, plain_fields
        self.earlier = earlier_runs  # runs that stored this file before: its duplicates
        self.check = bool(earlier_runs)
        self.next_id = self.first_id = _next_message_id(con)
        self.field_memos: dict[str, _RedactMemo] = {}
        self.cache = pl.DataFrame(schema={"message": pl.String, "message_id": pl.Int64,
                                          "red": pl.String, "template_id": pl.String})

    def store(self, chunk: pl.DataFrame) -> tuple[int, int]:
        """Queue one chunk for writing; returns (loaded, duplicates)."""
        if chunk.height == 0:
            return 0, 0
        # Each record's message id comes from one join with the messages seen before; in
        # most chunks every message is among them and nothing else is looked up. The join
        # carries only the message column: the chunk's other columns are not copied.
        ids = chunk.select("message").join(
            self.cache.select("message", "message_id"), on="message", how="left",
            maintain_order="left")["message_id"]
        missing = ids.is_null()
        fresh = self._new_messages(chunk["message"].filter(missing))
        if fresh.height:
            rows = missing.arg_true()
            ids = ids.scatter(rows, chunk["message"].gather(rows).replace_strict(
                fresh["message"], fresh["message_id"], default=None))
        recs = chunk.with_columns(ids.alias("message_id"))
        recs = recs.with_columns(_redact_fields(recs["fields"], self.redactor, self.plain,
                                                self.field_memos))
        dup = 0
        if self.check:
            flags = self._duplicates(recs, fresh)
            dup = int(flags.sum())
            if dup:
                recs = recs.filter(~flags)
                fresh = fresh.filter(pl.col("message_id").is_in(recs["message_id"].implode()))
        if recs.height == 0:
            return 0, dup
        # The records go to the writer before their new messages are mined (mining a
        # file's first chunk is the longest step of all; the writer need not wait for it).
        # A column the same on every record (no flag, one line each: the common case) goes
        # to DuckDB as a constant, which it stores for almost nothing.
        const = {}
        if recs["flag"].null_count() == recs.height:
            const["flag"] = "NULL::VARCHAR"
        if recs["n_lines"].min() == recs["n_lines"].max():
            const["n_lines"] = f"{int(recs['n_lines'][0])}::INTEGER"
        rows = recs.drop("message", *const).to_arrow(compat_level=ARROW)
        run_id = self.fi.result.run_id
        con = self.con
        n_lines, flag = const.get("n_lines", "c.n_lines"), const.get("flag", "c.flag")

        def write_records() -> None:
            # DuckDB reads these Arrow tables by their variable names (a replacement scan):
            # `register` would keep every chunk alive until the file's transaction ends.
            _log_chunk = rows  # noqa: F841
            con.execute(f"""
                INSERT INTO log_records
                SELECT {run_id}, c.line_no, {n_lines}, c.ts, c.ts_text, c.host,
                       c.component, c.level, c.message_id, c.fields, {flag}
                FROM _log_chunk c""")

        self.writer.submit(write_records)
        messages = self._mine(fresh)
        self.book.count(recs, self.cache, messages)
        self.cache = pl.concat([self.cache, messages.select(
            "message", "message_id", "red", "template_id")])
        if self.cache.height > MESSAGE_CACHE_ROWS:
            self.cache = self.cache.tail(MESSAGE_CACHE_ROWS // 2)
        if messages.height:
            new_rows = messages.select("message_id", pl.col("red").alias("message"),
                                       "template_id", "params").to_arrow(compat_level=ARROW)

            def write_messages() -> None:
                _log_new = new_rows  # noqa: F841
                con.execute("INSERT INTO log_messages SELECT * FROM _log_new")

            self.writer.submit(write_messages)
        return recs.height, dup

    def _new_messages(self, unseen: pl.Series) -> pl.DataFrame:
        """The distinct messages not seen before (message, message_id, red), numbered in
        order of first appearance and redacted."""
        fresh = unseen.unique(maintain_order=True).to_frame("message")
        fresh = fresh.with_columns(
            pl.int_range(self.next_id, self.next_id + fresh.height, dtype=pl.Int64)
            .alias("message_id"),
            (self.redactor.redact_series(fresh["message"]) if self.redactor is not None
             else fresh["message"]).alias("red"))
        self.next_id += fresh.height
        return fresh

    def _duplicates(self, recs: pl.DataFrame, fresh: pl.DataFrame) -> pl.Series:
        """Which records this file already stored (same line number, same content), in the
        runs that ingested the same path before.

        Stored records are looked up between the chunk's first and last line numbers, a
        range DuckDB answers from the few row groups whose min/max hold it: the check
        reads about a chunk's worth of rows per stored file, however large the files."""
        table = recs.select("line_no", "ts_text", "host", "component", "level", "fields",
                            "message_id").to_arrow(compat_level=ARROW)
        present = recs.select(pl.col("message_id").unique())
        texts = pl.concat([present.join(known.select("message_id", "red"), on="message_id")
                           for known in (self.cache, fresh)])
        texts = texts.to_arrow(compat_level=ARROW)
        _log_probe, _log_probe_texts = table, texts  # noqa: F841 (read by DuckDB by name)
        # polars types min() of any column as a union of every scalar; line_no's is an int
        low, high = int(recs["line_no"].min()), int(recs["line_no"].max())  # type: ignore[arg-type]
        with self.writer.lock:
            stored = pl.DataFrame(self.con.sql(f"""
                SELECT DISTINCT c.line_no
                FROM _log_probe c
                JOIN _log_probe_texts t ON t.message_id = c.message_id
                JOIN log_records r ON r.line_no = c.line_no
                     AND r.ts_text IS NOT DISTINCT FROM c.ts_text
                     AND r.host IS NOT DISTINCT FROM c.host
                     AND r.component IS NOT DISTINCT FROM c.component
                     AND r.level IS NOT DISTINCT FROM c.level
                     AND r.fields IS NOT DISTINCT FROM c.fields
                JOIN log_messages s ON s.message_id = r.message_id AND s.message = t.red
                WHERE r.line_no BETWEEN {low} AND {high}
                  AND r.ingest_run IN ({", ".join(str(int(i)) for i in self.earlier)})"""))
        # a record's line number is unique within a file: it names the record
        return recs["line_no"].is_in(stored["line_no"].implode())

    def _mine(self, fresh: pl.DataFrame) -> pl.DataFrame:
        """Template id and parameters of each new message."""
        if fresh.height == 0:
            return fresh.with_columns(pl.lit(None, pl.String).alias("template_id"),
                                      pl.lit(None, pl.List(pl.String)).alias("params"))
        norm = tm.normalise(fresh["red"], self.masks)
        texts = norm.unique(maintain_order=True)
        ids, update = self.book.miner.assign(texts.to_list())
        self.book.merges.extend(update.merges)
        tids = norm.replace_strict(texts, pl.Series(ids, dtype=pl.String))
        by_text = {t: self.book.miner.templates.get(i) for t, i in zip(texts.to_list(), ids)}
        params = tm.extract_params(fresh["red"], [by_text[t] for t in norm.to_list()])
        out = fresh.with_columns(tids.alias("template_id"), params.alias("params"))
        for tid, msg in out.unique("template_id", keep="first", maintain_order=True)\
                .select("template_id", "red").iter_rows():
            self.book.examples.setdefault(tid, msg)
            self.book.touched.add(tid)
        return out


def _finish_templates(con, book: _TemplateBook, run_id: int) -> None:
    """Apply merges to stored messages and bring `log_templates` up to date.

    A template's count and first/last seen are what `log_templates` held before this file
    (for it and for every stored template merged into it) combined with this file's records
    (counted chunk by chunk in `book.stats`), so no stored record is read again."""
    now = db.now()
    final = tm.resolve_merges(book.merges)
    stored = pl.DataFrame(con.sql("SELECT template_id, count AS n, first_seen, last_seen, "
                                  "template FROM log_templates"))  # Arrow C stream: no pyarrow
    if final:
        known = dict(zip(stored["template_id"], stored["template"]))
        rows = []
        for old, new in book.merges:
            old_text = known.get(old) or tm.template_text(book.miner.retired.get(old, ()))
            rows.append((old, final.get(new, new), old_text,
                         tm.template_text(book.miner.templates.get(final.get(new, new), ())),
                         run_id, now))
        db.insert_rows(con, "template_merges", rows)
        _merge_map = pl.DataFrame({"old": list(final), "new": list(final.values())})  # noqa: F841
        con.execute("UPDATE log_messages SET template_id = mm.new FROM _merge_map mm "
                    "WHERE log_messages.template_id = mm.old")
        con.execute("DELETE FROM log_templates WHERE template_id IN (SELECT old FROM _merge_map)")
        book.touched = {final.get(t, t) for t in book.touched}
    live = [t for t in book.touched if t in book.miner.templates]
    if not live:
        return
    final_id = pl.col("template_id").replace(final) if final else pl.col("template_id")
    parts = [f.select(final_id, "n", "first_seen", "last_seen")
             for f in (*book.stats, stored.cast({"n": pl.Int64}))]
    stats = _merge_stats(parts).filter(pl.col("template_id").is_in(live))
    existing = set(stored["template_id"].to_list()) - set(final)
    upd, ins = [], []
    for tid, n, first, last in stats.iter_rows():
        tokens = book.miner.templates[tid]
        if tid in existing:
            upd.append((n, first, last, run_id, tid))
        else:
            ins.append((tid, tm.template_text(tokens), len(tokens), n, first, last,
                        book.examples.get(tid), run_id, run_id))
    if upd:
        updates = db.rows_frame(upd, ["n", "first_seen", "last_seen", "run", "template_id"])
        with db.scanning(con, "_template_updates", updates):
            con.execute("""UPDATE log_templates t SET count = u.n, first_seen = u.first_seen,
                               last_seen = u.last_seen, updated_run = u.run
                           FROM _template_updates u WHERE t.template_id = u.template_id""")
    if ins:
        db.insert_rows(con, "log_templates", ins)
        # a template made only by merging older ones has no example from this file yet
        con.execute("""UPDATE log_templates t SET example = (
                           SELECT min(m.message) FROM log_messages m
                           WHERE m.template_id = t.template_id)
                       WHERE t.example IS NULL""")


def ingest_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str = "auto",
                masks: Iterable[str] = (), keys: dict[str, str] | None = None,
                unparsed: str = "quarantine", redactor=DATABASE_REDACTOR,
                year: int | None = None) -> IngestResult:
    """Ingest one log file as one transaction; see the module docstring.

    Args:
        fmt: `auto`, a format name (`logformats.registry.log_formats`) or a header format string.
        masks: regexes whose matches are parameters (`<*>`) before template mining.
        keys: JSON-lines key mapping (role -> key), e.g. {"message": "event"}.
        unparsed: what to do with a line no format matches: quarantine, or message-only.
        redactor: a `Redactor` (`rlforge.ingest.redaction.redactor`); by default the database's own; None stores text as it is.
        year: the year of times written without one (classic syslog); by default the year
            that puts them nearest the file's times written with a year, where it has some,
            else the year of the file's modification time. The summary says which was used.
    """
    path = Path(path)
    masks = list(masks)
    tm.Masks(masks)
    if unparsed not in UNPARSED:
        raise UserError(f"unknown value {unparsed!r} for unparsed lines; valid: "
                        f"{', '.join(UNPARSED)}")
    if fmt != "auto" and "<" not in fmt:
        make_format(fmt, keys)  # an unknown name is the user's error, not the file's
    elif "<" in fmt:
        HeaderFormat(fmt)
    if not path.is_file():
        return IngestResult(SOURCE, source_path(path), status="failed",
                            error="no such file" if not path.exists() else "not a regular file")
    redactor = resolve_redactor(con, redactor, logs=True)
    before = dict(redactor.counts) if redactor is not None else {}
    with FileIngest(con, SOURCE, path, None if fmt == "auto" else fmt,
                    redact=redactor.redact_text if redactor is not None else None) as fi:
        r = fi.result
        r.line_endings = line_endings(read_head(path))
        parser = resolve_format(path, fmt, keys, year)
        r.format = parser.describe() if fmt != "auto" else parser.name
        book = _TemplateBook(_load_miner(con))
        # A record's identity is its file and line (with its content): only records this
        # path loaded before can be duplicates, never another file's lines that happen to
        # be the same at the same line numbers.
        earlier = [row[0] for row in con.execute(
            "SELECT run_id FROM ingest_runs WHERE source = ? AND path = ? AND status = 'ok' "
            "AND n_loaded > 0 ORDER BY run_id", [SOURCE, fi.path]).fetchall()]
        fi.quarantined_before()  # looked up before this run adds any
        # (the hash is of the file's bytes: a decompressed or transcoded file is hashed apart)
        hasher = None if is_gzip(path) or file_encoding(path) != "utf-8" else _BackgroundHash()
        writer, chunks = _Writer(con), None
        threads, buffered = con.execute(
            "SELECT current_setting('threads'), current_setting('write_buffer_row_group_count')"
        ).fetchall()[0]
        # DuckDB writes on all but one core; polars parses the next chunk on that one.
        con.execute(f"SET threads = {max(1, min(int(threads), (os.cpu_count() or 2) - 1))}")
        # Each full row group is compressed and written while the next chunks are parsed,
        # not five at a time (DuckDB's default), which stalls the writer and leaves four
        # for the commit: BGL 1M commits in 40 ms instead of 145.
        con.execute("SET write_buffer_row_group_count = 1")
        try:
            store = _ChunkStore(con, writer, fi, book, masks, redactor, parser.time_fields,
                                earlier)
            lines_read = skipped = 0
            chunks = _Prefetch(iter_chunks(path, parser, hasher=hasher,
                                              newline=r.line_endings))
            for chunk in chunks:
                lines_read += chunk.lines
                skipped += chunk.skipped
                records = chunk.records
                if chunk.unparsed.height:
                    if unparsed == "message-only":
                        records = pl.concat([records, _message_only(chunk.unparsed, records)],
                                            how="vertical_relaxed").sort("line_no")
                    else:
                        with writer.lock:
                            _quarantine(con, fi, chunk.unparsed, parser, redactor)
                r.n_read += records.height
                loaded, dup = store.store(records)
                r.n_loaded += loaded
                r.n_duplicates += dup
        finally:
            if chunks is not None:
                chunks.close()
            writer.close()
            con.execute(f"SET threads = {int(threads)}")
            con.execute(f"SET write_buffer_row_group_count = {int(buffered)}")
            if hasher is not None:
                hasher.close()
        fi.sha256 = hasher.hexdigest() if hasher is not None else db.sha256_file(path)
        copy_of = con.execute(
            "SELECT path FROM ingest_runs WHERE source = ? AND sha256 = ? AND status = 'ok' "
            "AND path <> ? AND n_read > 0 ORDER BY run_id LIMIT 1",
            [SOURCE, fi.sha256, fi.path]).fetchall()
        if copy_of and r.n_loaded + r.n_quarantined:
            _drop_copy(con, r, store.first_id, copy_of[0][0])
            return fi.result
        _finish_templates(con, book, fi.run_id)
        r.n_flagged = con.execute(
            "SELECT count(*) FROM log_records WHERE ingest_run = ? AND flag IS NOT NULL",
            [r.run_id]).fetchall()[0][0]
        if lines_read == 0:
            r.notes.append("empty file: nothing to ingest")
        elif r.line_endings == "CR":
            r.notes.append("lines end in CR only (no LF): split at CR")
        if skipped:
            r.notes.append(f"{skipped:,} continuation line(s) past the {log_records.MAX_RECORD_LINES:,}-line "
                           "maximum of a record were left out of it (the record is flagged "
                           "truncated)")
        if book.merges:
            r.notes.append(f"{len(book.merges)} template(s) generalised (see template_merges)")
        r.notes.extend(_time_notes(con, fi.run_id, parser))
        if redactor is not None:
            r.redactions = {k: v - before.get(k, 0) for k, v in redactor.counts.items()
                            if v - before.get(k, 0)}
    return fi.result


def _time_notes(con, run_id: int, parser: LogFormat) -> list[str]:
    """What the summary says about times and levels: records whose time field parsed to
    no time (flagged `time_unparsed`, with an example), where the year of times written
    without one came from, a level field that holds no levels and a field taken as the
    host."""
    notes = []
    times = parser.times
    bad = con.execute(
        "SELECT count(*), min(ts_text) FROM log_records WHERE ingest_run = ? AND flag = ?",
        [run_id, TIME_UNPARSED]).fetchall()[0]
    if bad[0]:
        layouts = ("no layout was recognised in the sample" if times is None or not
                   (times.chosen or times.epoch) else "it fits none of the layouts the file's "
                   "other times are in")
        notes.append(f"{bad[0]:,} record(s) have a time field that parses to no time, "
                     f"flagged {TIME_UNPARSED} (e.g. {bad[1]!r}: {layouts})")
    source = times.year_source if times is not None else None
    if times is not None and source is not None:
        first = con.execute("SELECT min(year(ts)), max(year(ts)) FROM log_records "
                            "WHERE ingest_run = ?", [run_id]).fetchall()[0]
        years = (f"{first[0]}" if first[0] == first[1] else f"{first[0]}-{first[1]}") \
            if first[0] is not None else "-"
        notes.append("times are written without a year: " + (
            f"year {times.year} from --year" if source == "--year" else
            f"year {years} from the file's records written with a year (nearest them)"
            if source == "dated records" else
            f"year {years} from the file's modification time (give --year if that is wrong)"))
    if parser.level_warning:
        notes.append(parser.level_warning)
    if parser.host_note:
        notes.append(parser.host_note)
    return notes


def _quarantine(con, fi: FileIngest, unparsed: pl.DataFrame, parser: LogFormat,
                redactor) -> None:
    """Set unparsed records aside in bulk (raw text redacted and capped); those this file
    set aside in an earlier ingest are not stored again and count as duplicates."""
    raw = unparsed["raw"]
    if redactor is not None:
        raw = redactor.redact_series(raw)
    raw = pl.select(pl.when(raw.str.len_bytes() > RAW_CAP).then(
        raw.str.slice(0, RAW_CAP) + "\n[... truncated]").otherwise(raw)).to_series()
    reason = f"no format match: not a {parser.describe()} line"
    long = unparsed["length"].is_not_null() if "length" in unparsed.columns else None
    reasons = pl.Series("reason", [reason] * unparsed.height, dtype=pl.String)
    if long is not None and long.any():
        reasons = pl.select(pl.when(long).then(pl.format(
            "record too long: {} bytes, over the maximum of {} (the record is this one "
            "entry, its text kept to the maximum); " + reason, unparsed["length"],
            pl.lit(str(log_reader.MAX_LINE_BYTES)))).otherwise(reasons)).to_series()
    frame = pl.DataFrame({
        "ingest_run": pl.Series([fi.result.run_id] * unparsed.height, dtype=pl.Int64),
        "source": SOURCE, "file": fi.path, "record_no": unparsed["line_no"], "raw": raw,
        "reason": reasons, "created_at": db.now()})
    known = store_quarantine(con, frame, fi.quarantined_before())
    r = fi.result
    r.n_read += unparsed.height
    r.n_quarantined += unparsed.height - len(known)
    r.n_duplicates += len(known)
    stored = frame["reason"].str.split(":").list.first()
    if known:
        stored = stored.filter(~pl.int_range(0, frame.height, eager=True).is_in(known))
    for key, count in stored.value_counts().iter_rows():
        r.quarantine_reasons[key] = r.quarantine_reasons.get(key, 0) + count
    fi.known_quarantined += len(known)


def _drop_copy(con, r: IngestResult, first_message_id: int, original: str) -> None:
    """A file byte for byte the same as one stored from another path: the same source, so
    every record of it is a duplicate. Its rows (records, new messages, quarantine) go."""
    con.execute("DELETE FROM log_records WHERE ingest_run = ?", [r.run_id])
    con.execute("DELETE FROM log_messages WHERE message_id >= ?", [first_message_id])
    con.execute("DELETE FROM quarantine WHERE ingest_run = ?", [r.run_id])
    r.n_duplicates, r.n_loaded, r.n_quarantined, r.n_flagged = r.n_read, 0, 0, 0
    r.quarantine_reasons, r.redactions = {}, {}
    r.notes.append(f"the same content as {original}, stored before: every record is a "
                   "duplicate")
