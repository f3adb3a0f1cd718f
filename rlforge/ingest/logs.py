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
import gzip
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from rlforge import db
from rlforge.errors import InputFileError, UserError
from rlforge.ingest import logformats as lf
from rlforge.ingest import templates as tm
from rlforge.ingest.common import FileIngest, IngestResult, check_not_binary, is_gzip, read_head

SOURCE = "logs"
CHUNK_BYTES = 32 << 20      # text read per chunk
MAX_LINE_BYTES = 64 << 20   # a "line" longer than this is cut (a file with no newlines)
SAMPLE_LINES = 1000         # lines looked at to detect the format and time layout
UNPARSED = ("quarantine", "message-only")
_RECORD_COLUMNS = ["line_no", "n_lines", "ts", "ts_text", "host", "component", "level",
                   "message", "fields", "flag"]


# --- reading ---------------------------------------------------------------------------

def _open(path: Path):
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def iter_text_blocks(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Blocks of whole lines (each ends with a newline, except maybe the last)."""
    path = Path(path)
    try:
        with _open(path) as fh:
            carry = b""
            while True:
                data = fh.read(chunk_bytes)
                if not data:
                    if carry:
                        yield carry
                    return
                data = carry + data
                cut = data.rfind(b"\n")
                if cut < 0 and len(data) < MAX_LINE_BYTES:
                    carry = data
                    continue
                cut = len(data) - 1 if cut < 0 else cut
                yield data[:cut + 1]
                carry = data[cut + 1:]
    except EOFError:
        raise InputFileError(str(path), "truncated gzip stream (the file ends before the "
                             "compressed data does); re-copy it") from None
    except (OSError, zlib.error) as exc:
        raise InputFileError(str(path), f"cannot read: {exc}") from None


def _lines(block: bytes) -> tuple[pl.Series, bool]:
    """The lines of a block, and whether invalid UTF-8 had to be replaced."""
    if block.startswith(b"\xef\xbb\xbf"):
        block = block[3:]
    try:
        text, bad = block.decode("utf-8"), False
    except UnicodeDecodeError:
        text, bad = block.decode("utf-8", errors="replace"), True
    if text.endswith("\n"):
        text = text[:-1]
    parts = pc.split_pattern(pa.array([text], type=pa.large_string()), "\n").flatten()
    lines = pl.from_arrow(parts).cast(pl.String).str.strip_suffix("\r")
    return lines, bad  # type: ignore[return-value]


# --- records from lines ----------------------------------------------------------------

@dataclass
class Chunk:
    """The records of one chunk, and the unparsed records set aside."""

    records: pl.DataFrame
    unparsed: pl.DataFrame  # line_no, n_lines, raw
    lines: int


def _records(fmt: lf.LogFormat, lines: pl.Series, first_no: int, bad_utf8: bool,
             final: bool) -> tuple[Chunk, int]:
    """Parse lines into records; returns the chunk and how many trailing lines to carry
    into the next chunk (the last record may continue there)."""
    n = len(lines)
    parsed = fmt.parse(lines)
    blank = lines.str.strip_chars().str.len_chars() == 0
    ok = parsed["ok"] & ~blank
    cont_like = fmt.continuation(lines) & ~ok & ~blank
    frame = parsed.with_columns(
        pl.Series("raw", lines), pl.int_range(first_no, first_no + n, eager=True).alias("line_no"),
        ok.alias("ok"), blank.alias("blank"), cont_like.alias("cont_like"))
    frame = frame.filter(~pl.col("blank"))
    # A record starts at a parsed line (unless the previous one said it continues, as
    # Docker/CRI partial lines do) or at an unparsed line that does not look like a
    # continuation; the lines of the file before the first record start records too.
    prev_cont = frame["continues"].shift(1, fill_value=False) & frame["ok"].shift(1, fill_value=False)
    joins_partial = frame["ok"] & prev_cont
    starts = (frame["ok"] & ~joins_partial) | (~frame["ok"] & ~frame["cont_like"])
    rid = starts.cast(pl.Int64).cum_sum()
    frame = frame.with_columns(
        rid.alias("rid"), joins_partial.alias("partial"),
        pl.when(frame["ok"]).then(frame["message"]).otherwise(frame["raw"]).alias("piece"))
    carry = 0
    if not final and frame.height:
        last_start = frame.filter(starts)["line_no"].tail(1)
        if last_start.len() and last_start[0] > first_no:
            carry = first_no + n - last_start[0]
            frame = frame.filter(pl.col("line_no") < last_start[0])
    orphan = frame["rid"] == 0  # continuation lines with no record before them
    if orphan.any():
        frame = frame.with_columns(
            pl.when(orphan).then(-pl.col("line_no")).otherwise(pl.col("rid")).alias("rid"))
    single = frame["rid"].is_unique() if frame.height else pl.Series([], dtype=pl.Boolean)
    one = frame.filter(single).with_columns(pl.lit(1, pl.Int32).alias("n_lines"),
                                            pl.col("piece").alias("text"))
    multi = frame.filter(~single)
    if multi.height:
        multi = multi.with_columns(
            pl.when(pl.col("partial")).then(pl.col("piece"))
            .otherwise(pl.concat_str([pl.lit("\n"), pl.col("piece")])).alias("glued"))
        agg = multi.group_by("rid", maintain_order=True).agg(
            pl.all().exclude("glued", "piece").first(),
            pl.len().cast(pl.Int32).alias("n_lines"),
            (pl.col("piece").first() + pl.col("glued").slice(1).str.join("")).alias("text"),
            pl.concat_str([pl.col("raw")], separator="\n").str.join("\n").alias("raw_all"))
        agg = agg.with_columns(pl.col("raw_all").alias("raw")).drop("raw_all")
        frame = pl.concat([one.select(agg.columns), agg]).sort("line_no")
    else:
        frame = one
    flag = pl.lit(None, dtype=pl.String)
    if bad_utf8:
        flag = pl.when(pl.col("raw").str.contains("\ufffd", literal=True)).then(
            pl.lit("invalid_utf8")).otherwise(None)
    frame = frame.with_columns(pl.col("text").alias("message"), flag.alias("flag"))
    records = frame.filter(pl.col("ok")).select(_RECORD_COLUMNS)
    unparsed = frame.filter(~pl.col("ok")).select("line_no", "n_lines", "raw", "flag")
    return Chunk(records, unparsed, n - carry), carry


def iter_chunks(path: str | Path, fmt: lf.LogFormat,
                chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Chunks of records of a file, in line order."""
    pending: pl.Series | None = None
    pending_bad = False
    next_no = 1
    blocks = iter_text_blocks(path, chunk_bytes)
    block = next(blocks, None)
    while block is not None:
        following = next(blocks, None)
        lines, bad = _lines(block)
        if pending is not None:
            lines = pl.concat([pending, lines])
            bad = bad or pending_bad
        chunk, carry = _records(fmt, lines, next_no, bad, final=following is None)
        yield chunk
        next_no += chunk.lines
        pending = lines.tail(carry) if carry else None
        pending_bad = bad
        block = following


def sample_lines(path: str | Path, n: int = SAMPLE_LINES) -> pl.Series:
    """The first n non-blank lines of a file (for detection)."""
    head = read_head(path, 1 << 20)
    check_not_binary(path, head)
    lines, _ = _lines(head[: head.rfind(b"\n") + 1] or head)
    return lines.filter(lines.str.strip_chars().str.len_chars() > 0).head(n)


def resolve_format(path: str | Path, spec: str = "auto",
                   keys: dict[str, str] | None = None) -> lf.LogFormat:
    """The format of a file (detected from its first lines when `spec` is auto), prepared
    on that sample (time layout, JSON keys)."""
    sample = sample_lines(path)
    fmt = lf.detect(sample.to_list(), keys) if spec == "auto" else lf.make_format(spec, keys)
    mtime = dt.datetime.fromtimestamp(os.path.getmtime(path), dt.timezone.utc)
    fmt.prepare(sample, mtime.replace(tzinfo=None))
    return fmt


def read_log(path: str | Path, fmt: str = "auto", keys: dict[str, str] | None = None,
             unparsed: str = "quarantine") -> pl.DataFrame:
    """All records of a log file as a polars frame (no database, no redaction, no mining);
    unparsed lines come back with `ok` false and only `message` (the raw text)."""
    parser = resolve_format(path, fmt, keys)
    frames = []
    for chunk in iter_chunks(path, parser):
        frames.append(chunk.records.with_columns(pl.lit(True).alias("ok")))
        if chunk.unparsed.height:
            frames.append(_message_only(chunk.unparsed).with_columns(pl.lit(False).alias("ok")))
    if not frames:
        return pl.DataFrame(schema={c: pl.String for c in _RECORD_COLUMNS} | {"ok": pl.Boolean})
    return pl.concat(frames, how="vertical_relaxed").sort("line_no")


def _message_only(unparsed: pl.DataFrame) -> pl.DataFrame:
    return unparsed.select(
        "line_no", "n_lines", pl.lit(None, pl.Datetime("us")).alias("ts"),
        *[pl.lit(None, pl.String).alias(c) for c in ("ts_text", "host", "component", "level")],
        pl.col("raw").alias("message"), pl.lit(None, pl.String).alias("fields"),
        pl.col("flag").fill_null("unparsed").alias("flag"))


# --- ingest ----------------------------------------------------------------------------

@dataclass
class _TemplateBook:
    """Templates touched by one file: what to write to `log_templates` at its end."""

    miner: tm.TemplateMiner
    touched: set[str] = field(default_factory=set)
    merges: list[tuple[str, str]] = field(default_factory=list)
    examples: dict[str, str] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)


def _load_miner(con: duckdb.DuckDBPyConnection) -> tm.TemplateMiner:
    rows = con.execute("SELECT template FROM log_templates").fetchall()
    return tm.TemplateMiner(tm.split_tokens(r[0]) for r in rows)


def _next_message_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT coalesce(max(message_id), 0) + 1 FROM log_messages").fetchall()[0][0]


_HASH = "hash(line_no, ts_text, host, component, level, message, fields)"


def _store_chunk(con, fi: FileIngest, chunk: pl.DataFrame, book: _TemplateBook, masks,
                 redactor, check_duplicates: bool, next_id: int) -> tuple[int, int, int]:
    """Redact, deduplicate, mine and insert one chunk of records.

    Returns (loaded, duplicates, next free message id)."""
    if chunk.height == 0:
        return 0, 0, next_id
    msgs = chunk.select(pl.col("message").unique(maintain_order=True))
    raw_msgs = msgs["message"]
    red = redactor.redact_series(raw_msgs) if redactor is not None else raw_msgs
    recs = chunk.join(pl.DataFrame({"message": raw_msgs, "_red": red}), on="message",
                      how="left", maintain_order="left")
    recs = recs.with_columns(pl.col("_red").alias("message")).drop("_red")
    if redactor is not None and recs["fields"].null_count() < recs.height:
        recs = recs.with_columns(redactor.redact_series(recs["fields"]).alias("fields"))
    con.register("_log_chunk", recs.to_arrow())
    try:
        dup = 0
        if check_duplicates:
            flags = con.execute(f"""
                SELECT EXISTS (SELECT 1 FROM log_records r JOIN log_messages m USING (message_id)
                               WHERE r.record_hash = {_HASH.replace('hash(', 'hash(c.')
                                                      .replace(', ', ', c.')}
                                 AND r.line_no = c.line_no AND m.message = c.message
                                 AND r.ts_text IS NOT DISTINCT FROM c.ts_text
                                 AND r.host IS NOT DISTINCT FROM c.host
                                 AND r.component IS NOT DISTINCT FROM c.component
                                 AND r.level IS NOT DISTINCT FROM c.level
                                 AND r.fields::VARCHAR IS NOT DISTINCT FROM c.fields)
                FROM _log_chunk c""").pl().to_series()
            dup = int(flags.sum())
            if dup:
                recs = recs.filter(~flags)
                con.unregister("_log_chunk")
                con.register("_log_chunk", recs.to_arrow())
        if recs.height == 0:
            return 0, dup, next_id
        # Mine the distinct messages of the records to load.
        distinct = recs.select(pl.col("message").unique(maintain_order=True))["message"]
        norm = tm.normalise(distinct, masks)
        texts = norm.unique(maintain_order=True)
        ids, update = book.miner.assign(texts.to_list())
        tid_of_text = dict(zip(texts.to_list(), ids))
        tids = [tid_of_text[t] for t in norm.to_list()]
        if update.merges:
            book.merges.extend(update.merges)
        book.created.update(update.new)
        tokens = [book.miner.templates.get(t) for t in tids]
        params = tm.extract_params(distinct, tokens)
        ids_col = pl.int_range(next_id, next_id + len(distinct), eager=True)
        messages = pl.DataFrame({"message_id": ids_col, "message": distinct,
                                 "template_id": pl.Series(tids, dtype=pl.String),
                                 "params": params})
        for tid, msg in zip(tids, distinct.to_list()):
            if tid not in book.examples:
                book.examples[tid] = msg
        book.touched.update(tids)
        con.register("_log_msgs", messages.to_arrow())
        con.execute("INSERT INTO log_messages SELECT message_id, message, template_id, params "
                    "FROM _log_msgs")
        con.execute(f"""
            INSERT INTO log_records
            SELECT {fi.result.run_id}, c.line_no, c.n_lines, c.ts, c.ts_text, c.host,
                   c.component, c.level, m.message_id, c.fields, c.flag, {_HASH.replace(
                       'hash(', 'hash(c.').replace(', ', ', c.')}
            FROM _log_chunk c JOIN _log_msgs m ON m.message = c.message
            ORDER BY c.line_no""")
        con.unregister("_log_msgs")
        return recs.height, dup, next_id + len(distinct)
    finally:
        try:
            con.unregister("_log_chunk")
        except Exception:  # already unregistered
            pass


def _finish_templates(con, book: _TemplateBook, run_id: int) -> None:
    """Apply merges to stored messages and bring `log_templates` up to date."""
    now = db.now()
    final = tm.resolve_merges(book.merges)
    if final:
        known = dict(con.execute("SELECT template_id, template FROM log_templates").fetchall())
        rows = []
        for old, new in book.merges:
            old_text = known.get(old) or tm.template_text(book.miner.retired.get(old, ()))
            rows.append((old, final.get(new, new), old_text,
                         tm.template_text(book.miner.templates.get(final.get(new, new), ())),
                         run_id, now))
        con.executemany("INSERT INTO template_merges VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.register("_merge_map", pl.DataFrame({"old": list(final), "new": list(final.values())})
                     .to_arrow())
        con.execute("UPDATE log_messages SET template_id = mm.new FROM _merge_map mm "
                    "WHERE log_messages.template_id = mm.old")
        con.execute("DELETE FROM log_templates WHERE template_id IN (SELECT old FROM _merge_map)")
        con.unregister("_merge_map")
        book.touched = {final.get(t, t) for t in book.touched}
    live = [t for t in book.touched if t in book.miner.templates]
    if not live:
        return
    con.register("_touched", pl.DataFrame({"template_id": live}).to_arrow())
    stats = con.execute("""
        SELECT m.template_id, count(*) AS n, min(r.ts) AS first_seen, max(r.ts) AS last_seen
        FROM log_records r JOIN log_messages m USING (message_id)
        WHERE m.template_id IN (SELECT template_id FROM _touched)
        GROUP BY m.template_id""").fetchall()
    con.unregister("_touched")
    existing = {r[0] for r in con.execute("SELECT template_id FROM log_templates").fetchall()}
    upd, ins = [], []
    for tid, n, first, last in stats:
        tokens = book.miner.templates[tid]
        if tid in existing:
            upd.append((n, first, last, run_id, tid))
        else:
            ins.append((tid, tm.template_text(tokens), len(tokens), n, first, last,
                        book.examples.get(tid), run_id, run_id))
    if upd:
        con.executemany("UPDATE log_templates SET count = ?, first_seen = ?, last_seen = ?, "
                        "updated_run = ? WHERE template_id = ?", upd)
    if ins:
        con.executemany("INSERT INTO log_templates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", ins)


def ingest_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str = "auto",
                masks: Iterable[str] = (), keys: dict[str, str] | None = None,
                unparsed: str = "quarantine", redactor=None) -> IngestResult:
    """Ingest one log file as one transaction; see the module docstring.

    Args:
        fmt: `auto`, a format name (`lf.NAMED_FORMATS`) or a header format string.
        masks: regexes whose matches are parameters (`<*>`) before template mining.
        keys: JSON-lines key mapping (role -> key), e.g. {"message": "event"}.
        unparsed: what to do with a line no format matches: quarantine, or message-only.
        redactor: `redact.Redactor` of the database, or None to store text as it is.
    """
    path = Path(path)
    masks = list(masks)
    lf.Masks(masks)
    if unparsed not in UNPARSED:
        raise UserError(f"unknown value {unparsed!r} for unparsed lines; valid: "
                        f"{', '.join(UNPARSED)}")
    if fmt != "auto" and "<" not in fmt:
        lf.make_format(fmt, keys)  # an unknown name is the user's error, not the file's
    elif "<" in fmt:
        lf.HeaderFormat(fmt)
    if not path.is_file():
        return IngestResult(SOURCE, str(path), status="failed",
                            error="no such file" if not path.exists() else "not a regular file")
    before = dict(redactor.counts) if redactor is not None else {}
    with FileIngest(con, SOURCE, path, None if fmt == "auto" else fmt,
                    sha256=db.sha256_file(path),
                    redact=redactor.redact_text if redactor is not None else None) as fi:
        r = fi.result
        parser = resolve_format(path, fmt, keys)
        r.format = parser.describe() if fmt != "auto" else parser.name
        book = _TemplateBook(_load_miner(con))
        check = con.execute("SELECT count(*) FROM log_records").fetchall()[0][0] > 0
        next_id = _next_message_id(con)
        lines_read = 0
        for chunk in iter_chunks(path, parser):
            lines_read += chunk.lines
            records = chunk.records
            if chunk.unparsed.height:
                if unparsed == "message-only":
                    records = pl.concat([records, _message_only(chunk.unparsed)],
                                        how="vertical_relaxed").sort("line_no")
                else:
                    _quarantine(con, fi, chunk.unparsed, parser, redactor)
            r.n_read += records.height
            loaded, dup, next_id = _store_chunk(con, fi, records, book, masks, redactor,
                                                check, next_id)
            r.n_loaded += loaded
            r.n_duplicates += dup
        r.n_read += r.n_quarantined
        _finish_templates(con, book, r.run_id)
        r.n_flagged = con.execute(
            "SELECT count(*) FROM log_records WHERE ingest_run = ? AND flag IS NOT NULL",
            [r.run_id]).fetchall()[0][0]
        if lines_read == 0:
            r.notes.append("empty file: nothing to ingest")
        if book.merges:
            r.notes.append(f"{len(book.merges)} template(s) generalised (see template_merges)")
        if redactor is not None:
            r.redactions = {k: v - before.get(k, 0) for k, v in redactor.counts.items()
                            if v - before.get(k, 0)}
    return fi.result


def _quarantine(con, fi: FileIngest, unparsed: pl.DataFrame, parser: lf.LogFormat,
                redactor) -> None:
    """Set unparsed records aside in bulk (raw text redacted and capped)."""
    from rlforge.ingest.common import RAW_CAP

    raw = unparsed["raw"]
    if redactor is not None:
        raw = redactor.redact_series(raw)
    raw = pl.select(pl.when(raw.str.len_bytes() > RAW_CAP).then(
        raw.str.slice(0, RAW_CAP) + "\n[... truncated]").otherwise(raw)).to_series()
    reason = f"no format match: not a {parser.describe()} line"
    frame = pl.DataFrame({
        "ingest_run": pl.Series([fi.result.run_id] * unparsed.height, dtype=pl.Int64),
        "source": SOURCE, "file": fi.path, "record_no": unparsed["line_no"], "raw": raw,
        "reason": reason, "created_at": db.now()})
    con.register("_log_quarantine", frame.to_arrow())
    con.execute("INSERT INTO quarantine SELECT * FROM _log_quarantine")
    con.unregister("_log_quarantine")
    fi.result.n_quarantined += unparsed.height
    key = "no format match"
    fi.result.quarantine_reasons[key] = fi.result.quarantine_reasons.get(key, 0) + unparsed.height


def ingest_logs(con: duckdb.DuckDBPyConnection, paths: Iterable[str | Path],
                **kwargs: Any) -> list[IngestResult]:
    """Ingest several log files, each as its own transaction (see `ingest_file`)."""
    return [ingest_file(con, p, **kwargs) for p in paths]
