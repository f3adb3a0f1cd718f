"""Support tickets: CSV, JSON, JSONL, Zendesk and Jira exports into `tickets`.

Each file is staged into a temporary table (plain CSV straight through DuckDB's reader,
every other format through the parsers in `ticket_formats`), redacted there, then each
staged record is decided — load, duplicate (its content hash is already stored), or
quarantine (unparsable, or the same ticket id with different content) — and the loaded
ones are inserted, all in the file's one transaction.

Flat exports (one request and one resolution per row) have no `ticket_messages` rows:
their conversation is `body` then `resolution`. Exports that carry a conversation
(Zendesk comments, Jira comments, JSON `messages`) fill `ticket_messages` in order.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb
import polars as pl

from rlforge import db
from rlforge.errors import InputFileError
from rlforge.ingest import ticket_formats as tf
from rlforge.ingest.common import (DATABASE_REDACTOR, FileIngest, IngestResult,
                                   resolve_redactor, source_path)
from rlforge.ingest.textfile import (NUL_REPLACEMENT, check_not_binary, decode, file_encoding,
                                     is_gzip, line_endings, read_all, read_head,
                                     sha256_in_background, text_lines)

SOURCE = "tickets"
MAX_FIELD_BYTES = 256 * 1024 * 1024  # a single CSV record may be this large
STAGE = "_stage_tickets"
STAGE_MSG = "_stage_messages"
REDACTED_COLUMNS = ("subject", "body", "resolution", "extra")
TIME_FORMATS = ["%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p", "%m/%d/%Y %H:%M", "%m/%d/%Y %I:%M %p",
                "%d.%m.%Y %H:%M", "%Y/%m/%d %H:%M:%S", "%d/%m/%Y %H:%M"]
# How content hashes of CSV rows are computed; stored in `meta` so a later DuckDB whose hash
# differs is noticed (its re-ingests would not recognise rows stored before as duplicates).
CONTENT_HASH_SCHEME = f"duckdb-hash/{duckdb.__version__}"

Progress = Callable[[int], None]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _setup(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET TimeZone = 'UTC'")
    fmts = "[" + ", ".join(_sql_str(f) for f in TIME_FORMATS) + "]"
    con.execute(f"""
        CREATE OR REPLACE TEMP MACRO rlf_ts(x) AS coalesce(
            try_cast(try_cast(x AS TIMESTAMPTZ) AT TIME ZONE 'UTC' AS TIMESTAMP),
            try_strptime(x, {fmts}),
            CASE WHEN regexp_full_match(x, '[0-9]{{10}}') THEN make_timestamp(x::BIGINT * 1000000)
                 WHEN regexp_full_match(x, '[0-9]{{13}}') THEN make_timestamp(x::BIGINT * 1000) END)
    """)


# --- staging: CSV through DuckDB ------------------------------------------------------

def _csv_header(text_head: str) -> tuple[list[str], str]:
    first = next(text_lines(text_head), "")
    try:
        delim = csv.Sniffer().sniff(first, delimiters=",;\t|").delimiter
    except csv.Error:
        delim = ","
    header = next(csv.reader(io.StringIO(text_head, newline=""), delimiter=delim), [])
    seen: dict[str, int] = {}
    names = []
    for i, h in enumerate(header):
        name = h.strip() or f"column{i + 1}"
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 1
        names.append(name)
    return names, delim


def _load_csv(con, path: Path, text_head: str, mapping: dict[str, str], fi: FileIngest,
              final: str | None) -> None:
    """Read a CSV with DuckDB into the stage, or — given the final projection — straight
    into `tickets` (the fast path when nothing needs to happen between parse and store).
    Rows DuckDB rejects are quarantined with their line; rows rejected only for invalid
    UTF-8 are re-read with the bad bytes replaced, flagged, and staged."""
    columns, delim = _csv_header(text_head)
    if not columns:
        return
    m = tf.resolve_mapping(columns, mapping)
    if not any(f in m for f in ("subject", "body", "resolution")):
        shown = ", ".join(repr(c) for c in columns[:8]) + (", ..." if len(columns) > 8 else "")
        raise InputFileError(str(path), f"read as CSV, no column holds a ticket's text (a "
                             f"subject, body or resolution); its header is {shown}: is it "
                             "another format (--format), or name the column (--map body=COLUMN)?")
    unmapped = [c for c in columns if c not in m.values()]

    def col(f: str, trim: bool = True) -> str:
        if f not in m:
            return "NULL::VARCHAR"
        return f"NULLIF(trim({_ident(m[f])}), '')" if trim else f"NULLIF({_ident(m[f])}, '')"

    # 128 bits from two seeded DuckDB hashes of every column (md5 over the row would cost
    # as much as the parse itself). See CONTENT_HASH_SCHEME.
    cols = ", ".join(_ident(c) for c in columns)
    hash_expr = f"printf('%016x%016x', hash({cols}), hash({cols}, 'rlforge'))"
    extra = ("json_object(" + ", ".join(f"{_sql_str(c)}, {_ident(c)}" for c in unmapped) + ")"
             if unmapped else "'{}'::JSON")
    tags = "[]::VARCHAR[]"
    if "tags" in m:
        # every separator becomes a comma, then one split (plain replaces cost less than a
        # regex split: 0.44 vs 0.57 CPU-s on 1M rows)
        text = f"coalesce({_ident(m['tags'])}, '')"
        for sep in tf.TAG_SEPARATORS.replace(",", ""):
            text = f"replace({text}, chr({ord(sep)}), ',')"
        tags = f"list_filter(string_split({text}, ','), lambda x: x <> '')"
    col_types = "{" + ", ".join(f"{_sql_str(c)}: 'VARCHAR'" for c in columns) + "}"
    compression = "gzip" if is_gzip(path) else "none"

    def records(buffers: str) -> str:
        return f"""
        SELECT NULL::BIGINT AS record_no, * EXCLUDE (h), h AS content_hash FROM (
          SELECT coalesce({col('source_id')}, substr({hash_expr}, 1, 16)) AS source_id,
                 {col('subject')} AS subject, {col('body', trim=False)} AS body,
                 {col('category')} AS category, {col('intent')} AS intent,
                 {col('priority')} AS priority, {col('status')} AS status,
                 {col('resolution', trim=False)} AS resolution,
                 {col('created_at')} AS created_raw, {col('resolved_at')} AS resolved_raw,
                 {tags} AS tags, {extra} AS extra, []::VARCHAR[] AS flags,
                 {hash_expr} AS h
          FROM read_csv({_sql_str(str(path))}, auto_detect = false, header = true,
                        columns = {col_types}, delim = {_sql_str(delim)}, quote = '"',
                        escape = '"', store_rejects = true, rejects_table = '_rej_err',
                        rejects_scan = '_rej_scan', compression = {_sql_str(compression)},
                        strict_mode = true{buffers}))"""

    # DuckDB's default buffers hold records up to 2 MB. Large buffers for every file would
    # slow every ingest (allocating and freeing them costs more than a second), so a file
    # with a longer record is read again, whole, with buffers that fit MAX_FIELD_BYTES.
    for buffers in ("", f", max_line_size = {MAX_FIELD_BYTES}, buffer_size = {MAX_FIELD_BYTES * 2}"):
        con.execute("DROP TABLE IF EXISTS _rej_err; DROP TABLE IF EXISTS _rej_scan")
        # On the fast path rows keep record_no NULL: numbering them (row_number() OVER ()
        # while parsing, or an UPDATE after) costs a third of the whole ingest. DuckDB keeps
        # insertion order, so a row's place among its file's rows (rowid order) is its
        # record number; the decision step uses that order and numbers quarantined rows.
        if final is None:
            con.execute(f"INSERT INTO {STAGE} {records(buffers)}")
            con.execute(f"UPDATE {STAGE} SET record_no = rowid - (SELECT min(rowid) FROM {STAGE}) + 1")
        else:
            con.execute(f"INSERT INTO tickets {final.format(source=f'({records(buffers)})')}")
        too_long = con.execute("SELECT count(*) FROM _rej_err WHERE error_type = "
                               "'LINE SIZE OVER MAXIMUM'").fetchall()[0][0]
        if not too_long or buffers:
            break
        con.execute(f"DELETE FROM {STAGE}")
        con.execute("DELETE FROM tickets WHERE ingest_run = ?", [fi.result.run_id])
    rejects = con.execute("""
        SELECT line, min(line_byte_position), string_agg(DISTINCT error_type, ', '),
               first(csv_line), first(error_message)
        FROM _rej_err GROUP BY line ORDER BY line""").fetchall()
    if not rejects:
        return
    recovered: list[tf.TicketRecord] = []
    data: bytes | None = None
    for line, byte_pos, kinds, raw, message in rejects:
        if kinds == "INVALID ENCODING":
            data = data if data is not None else read_all(path)
            rec = _recover_invalid_utf8(data, byte_pos, columns, delim, m, line)
            if rec is not None:
                recovered.append(rec)
                continue
        fi.quarantine(line, raw, f"malformed CSV row ({kinds.lower()}): {message}")
    if recovered:
        taken = con.execute(f"SELECT coalesce(max(record_no), 0) FROM {STAGE}").fetchall()[0][0]
        if final is not None:
            taken = max(taken, con.execute("SELECT count(*) FROM tickets WHERE ingest_run = ?",
                                           [fi.result.run_id]).fetchall()[0][0])
        for i, rec in enumerate(recovered, start=1):
            rec.record_no = taken + i
        _append_records(con, recovered, with_messages=False)


def _recover_invalid_utf8(data: bytes, byte_pos: int, columns: list[str], delim: str,
                          m: dict[str, str], line: int) -> tf.TicketRecord | None:
    """Re-read one row whose bytes are not UTF-8: replace the bad bytes and flag the row."""
    start = byte_pos - 1  # DuckDB reports a 1-based byte position of the line start
    if start < 0 or (start > 0 and data[start - 1:start] != b"\n"):
        start = data.rfind(b"\n", 0, max(byte_pos, 0)) + 1
    text = data[start:start + MAX_FIELD_BYTES].decode("utf-8", errors="replace")
    row = next(csv.reader(io.StringIO(text, newline=""), delimiter=delim), None)
    if row is None or len(row) != len(columns):
        return None
    values = dict(zip(columns, row))
    rec = tf.generic_record(line, values, m)
    if isinstance(rec, tf.Rejected):
        return None
    if "tags" in m:
        rec.fields["tags"] = tf._tags(values[m["tags"]])
    rec.flags.append("invalid_utf8")
    return rec


def _empty_stage_sql() -> str:
    return ("(SELECT NULL::BIGINT AS record_no, NULL::VARCHAR AS source_id, NULL::VARCHAR AS subject, "
            "NULL::VARCHAR AS body, NULL::VARCHAR AS category, NULL::VARCHAR AS intent, "
            "NULL::VARCHAR AS priority, NULL::VARCHAR AS status, NULL::VARCHAR AS resolution, "
            "NULL::VARCHAR AS created_raw, NULL::VARCHAR AS resolved_raw, NULL::VARCHAR[] AS tags, "
            "NULL::VARCHAR AS extra, NULL::VARCHAR[] AS flags, NULL::VARCHAR AS content_hash "
            "WHERE false)")


# --- staging: everything else through Python parsers ----------------------------------

def _record_hash(rec: tf.TicketRecord) -> str:
    payload = json.dumps([rec.fields, rec.messages, rec.extra], sort_keys=True, default=str,
                         ensure_ascii=False)
    return hashlib.md5(payload.encode("utf-8", errors="surrogatepass")).hexdigest()


def _frames(records: list[tf.TicketRecord]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, msgs = [], []
    for r in records:
        f = r.fields
        h = _record_hash(r)
        sid = f.get("source_id")
        rows.append({
            "record_no": r.record_no,
            "source_id": str(sid).strip() if sid not in (None, "") else h[:16],
            **{k: (None if f.get(k) in (None, "") else str(f[k])) for k in
               ("subject", "body", "category", "intent", "priority", "status", "resolution")},
            "created_raw": None if f.get("created_at") in (None, "") else str(f["created_at"]),
            "resolved_raw": None if f.get("resolved_at") in (None, "") else str(f["resolved_at"]),
            "tags": [str(t) for t in (f.get("tags") or [])],
            "extra": json.dumps(r.extra, ensure_ascii=False, default=str),
            "flags": list(r.flags),
            "content_hash": h,
        })
        for seq, m in enumerate(r.messages):
            msgs.append({"record_no": r.record_no, "seq": seq, "role": m.get("role"),
                         "author": None if m.get("author") is None else str(m["author"]),
                         "text": m.get("text"),
                         "created_raw": None if m.get("created_at") is None else str(m["created_at"]),
                         "is_public": bool(m.get("is_public", True))})
    schema: dict[str, Any] = {
        "record_no": pl.Int64, "source_id": pl.Utf8, "subject": pl.Utf8, "body": pl.Utf8,
        "category": pl.Utf8, "intent": pl.Utf8, "priority": pl.Utf8, "status": pl.Utf8,
        "resolution": pl.Utf8, "created_raw": pl.Utf8, "resolved_raw": pl.Utf8,
        "tags": pl.List(pl.Utf8), "extra": pl.Utf8, "flags": pl.List(pl.Utf8),
        "content_hash": pl.Utf8}
    mschema: dict[str, Any] = {
        "record_no": pl.Int64, "seq": pl.Int32, "role": pl.Utf8, "author": pl.Utf8,
        "text": pl.Utf8, "created_raw": pl.Utf8, "is_public": pl.Boolean}
    return pl.DataFrame(rows, schema=schema), pl.DataFrame(msgs, schema=mschema)


def _append_records(con, records: list[tf.TicketRecord], with_messages: bool = True) -> None:
    df, mdf = _frames(records)
    with db.scanning(con, "_records_df", df):
        con.execute(f"INSERT INTO {STAGE} SELECT * FROM _records_df")
    if with_messages and len(mdf):
        with db.scanning(con, "_msgs_df", mdf):
            con.execute(f"INSERT INTO {STAGE_MSG} SELECT * FROM _msgs_df")


def _parse_records(text: str, fmt: str, mapping: dict[str, str],
                   fi: FileIngest) -> list[tf.TicketRecord]:
    reader = tf.get(fmt).read
    assert reader is not None, "plain CSV is read by DuckDB, not parsed here"
    try:
        return _keep(reader(text, mapping, fi.result.line_endings), fi)
    except tf.NotThisFormat as exc:
        raise InputFileError(fi.path, str(exc)) from None


def _keep(items: Iterable, fi: FileIngest) -> list[tf.TicketRecord]:
    kept = []
    for x in items:
        if isinstance(x, tf.Rejected):
            fi.quarantine(x.record_no, x.raw, x.reason)
        else:
            kept.append(x)
    return kept


# --- redaction, decision, insert ------------------------------------------------------

def _redact_stage(con, redactor) -> None:
    df = pl.DataFrame(con.sql(f"SELECT * FROM {STAGE}"))  # Arrow C stream: no pyarrow
    if len(df):
        df = df.with_columns([redactor.redact_series(df[c]).alias(c) for c in REDACTED_COLUMNS])
        with db.scanning(con, "_redacted_df", df):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {STAGE} AS SELECT * FROM _redacted_df")
    mdf = pl.DataFrame(con.sql(f"SELECT * FROM {STAGE_MSG}"))
    if len(mdf):
        authors = [None if a is None else redactor.pseudonym("PERSON", a) for a in mdf["author"]]
        mdf = mdf.with_columns(redactor.redact_series(mdf["text"]).alias("text"),
                               pl.Series("author", authors, dtype=pl.Utf8))
        with db.scanning(con, "_redacted_msgs", mdf):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {STAGE_MSG} AS SELECT * FROM _redacted_msgs")


def _final_projection(origin: str, path: str, run_id: int) -> str:
    """SELECT turning staged columns ({source}) into `tickets` rows: ids, times, flags."""
    o = _sql_str(origin)
    return f"""
        SELECT {o} || ':' || source_id, {o}, source_id, subject, body, category, intent, priority,
               status, resolution, c_ts, r_ts, tags,
               CASE WHEN unparsed THEN json_merge_patch(extra::JSON, json_object('_unparsed_time',
                    json_object('created_at', created_raw, 'resolved_at', resolved_raw)))
                    ELSE extra::JSON END,
               content_hash,
               CASE WHEN unparsed THEN list_append(flags, 'unparsed_time') ELSE flags END,
               {_sql_str(path)}, record_no, {int(run_id)}
        FROM (SELECT *, (created_raw IS NOT NULL AND c_ts IS NULL)
                        OR (resolved_raw IS NOT NULL AND r_ts IS NULL) AS unparsed
              FROM (SELECT *, rlf_ts(created_raw) AS c_ts, rlf_ts(resolved_raw) AS r_ts
                    FROM {{source}}))"""


def _decide_after_insert(con, fi: FileIngest, on_conflict: str) -> None:
    """Keep, as duplicates drop, or quarantine each row this file inserted.

    A new export with unique ids and content not yet stored — the common case — is
    recognised with aggregate queries; only otherwise is every row decided.
    """
    r = fi.result
    run = fi.run_id
    n, n_hash, n_id = con.execute(
        "SELECT count(*), count(DISTINCT content_hash), count(DISTINCT ticket_id) FROM tickets "
        "WHERE ingest_run = ?", [run]).fetchall()[0]
    older = f"(SELECT {{col}} FROM tickets WHERE ingest_run <> {run})"
    overlap = 0
    if n and con.execute(f"SELECT count(*) FROM (SELECT 1 FROM tickets WHERE ingest_run <> {run} "
                         "LIMIT 1)").fetchall()[0][0]:
        overlap = con.execute(f"""
            SELECT count(*) FROM tickets WHERE ingest_run = {run}
              AND (content_hash IN {older.format(col='content_hash')}
                   OR ticket_id IN {older.format(col='ticket_id')})""").fetchall()[0][0]
    counts = {"load": n}
    if not (n == n_hash == n_id and overlap == 0):
        # Rows inserted on the fast path have no record_no yet: their rowid order is their
        # order in the file (see _load_csv); number them here, where it is cheap to need it.
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE _decided AS
            SELECT rid, coalesce(record_no, rid - min(rid) OVER () + 1) AS record_no, ticket_id,
              CASE WHEN content_hash IN {older.format(col='content_hash')}
                     OR row_number() OVER (PARTITION BY content_hash ORDER BY rid) > 1
                   THEN 'duplicate'
                   WHEN row_number() OVER (PARTITION BY ticket_id ORDER BY rid) > 1
                   THEN 'conflict_in_file'
                   WHEN ticket_id IN {older.format(col='ticket_id')} THEN 'conflict'
                   ELSE 'load' END AS decision
            FROM (SELECT rowid AS rid, * FROM tickets WHERE ingest_run = {run})""")
        if on_conflict == "replace":
            stale = "(SELECT ticket_id FROM _decided WHERE decision = 'conflict')"
            replaced = con.execute(f"SELECT count(*) FROM {stale}").fetchall()[0][0]
            if replaced:
                con.execute(f"DELETE FROM ticket_messages WHERE ticket_id IN {stale}")
                con.execute(f"DELETE FROM tickets WHERE ingest_run <> {run} AND ticket_id IN {stale}")
                con.execute("UPDATE _decided SET decision = 'load' WHERE decision = 'conflict'")
                r.notes.append(f"{replaced} stored ticket(s) replaced by a newer version")
        for record_no, sid, payload, decision in con.execute(f"""
                SELECT d.record_no, t.source_id, to_json(t)::VARCHAR, d.decision
                FROM (SELECT rowid AS rid, * EXCLUDE (content_hash, ingest_run, record_no)
                      FROM tickets WHERE ingest_run = {run}) t JOIN _decided d USING (rid)
                WHERE d.decision LIKE 'conflict%' ORDER BY d.record_no""").fetchall():
            where = "earlier in this file" if decision == "conflict_in_file" else "already stored"
            fi.quarantine(record_no, payload, f"conflicting id: ticket {sid!r} {where} with "
                          "different content (use --on-conflict replace to take the newer one)")
        counts = dict(con.execute("SELECT decision, count(*) FROM _decided GROUP BY ALL").fetchall())
        con.execute(f"DELETE FROM tickets WHERE ingest_run = {run} AND rowid IN "
                    "(SELECT rid FROM _decided WHERE decision <> 'load')")
    con.execute(f"""
        INSERT INTO ticket_messages
        SELECT t.ticket_id, m.seq, m.role, m.author, m.text, rlf_ts(m.created_raw), m.is_public
        FROM {STAGE_MSG} m JOIN (SELECT record_no, ticket_id FROM tickets WHERE ingest_run = {run}) t
             USING (record_no)
        ORDER BY m.record_no, m.seq""")
    r.n_loaded = counts.get("load", 0)
    r.n_duplicates = counts.get("duplicate", 0)
    conflicts = counts.get("conflict", 0) + counts.get("conflict_in_file", 0)
    r.n_read = sum(counts.values()) + len(fi._quarantine) - conflicts
    r.n_flagged = con.execute(f"SELECT count(*) FROM tickets WHERE ingest_run = {run} "
                              "AND len(flags) > 0").fetchall()[0][0]


# --- the face every source shares -----------------------------------------------------

def ingest_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str = "auto",
                mapping: dict[str, str] | None = None, redactor=DATABASE_REDACTOR,
                on_conflict: str = "quarantine", origin: str | None = None) -> IngestResult:
    """Ingest one ticket export as one transaction; see the module docstring."""
    path = Path(path)
    mapping = dict(mapping or {})
    if fmt != "auto":
        tf.get(fmt)  # an unknown name: UnknownName, listing the valid ones
    if not path.is_file():
        r = IngestResult(SOURCE, source_path(path), status="failed",
                         error="no such file" if not path.exists() else "not a regular file")
        return r
    _setup(con)
    redactor = resolve_redactor(con, redactor)
    before = dict(redactor.counts) if redactor is not None else {}
    redact_text = redactor.redact_text if redactor is not None else None
    with FileIngest(con, SOURCE, path, None if fmt == "auto" else fmt,
                    sha256=sha256_in_background(path), redact=redact_text) as fi:
        head_bytes = read_head(path)
        check_not_binary(path, head_bytes)
        head, _ = decode(head_bytes)
        fi.result.line_endings = line_endings(head_bytes)
        if not head.strip():
            fi.result.format = fmt if fmt != "auto" else "empty"
            fi.result.notes.append("empty file: nothing to ingest")
            return fi.result
        chosen = tf.detect(head) if fmt == "auto" else fmt
        fi.result.format = chosen
        scheme = db.meta_get(con, "tickets_hash_scheme")
        if scheme is None:
            db.meta_set(con, "tickets_hash_scheme", CONTENT_HASH_SCHEME)
        elif scheme != CONTENT_HASH_SCHEME and chosen == "csv":
            fi.result.notes.append(f"rows stored earlier were hashed by {scheme}, this is "
                                   f"{CONTENT_HASH_SCHEME}: re-ingested CSV rows from before may "
                                   "not be recognised as duplicates")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {STAGE} AS SELECT * FROM {_empty_stage_sql()}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE {STAGE_MSG} (record_no BIGINT, seq INTEGER, "
                    "role VARCHAR, author VARCHAR, text VARCHAR, created_raw VARCHAR, "
                    "is_public BOOLEAN)")
        final = _final_projection(origin or tf.get(chosen).origin, fi.path, fi.run_id)
        if chosen == "csv":
            try:
                with _as_duckdb_reads(path) as csv_path:
                    _load_csv(con, csv_path, head, mapping, fi,
                              final if redactor is None else None)
            except (duckdb.IOException, duckdb.FatalException):
                raise  # the disk or the database, not the file: said as such by FileIngest
            except duckdb.Error as exc:
                raise InputFileError(str(path), f"not readable as CSV: {_first_line(exc)}") from None
        else:
            text, bad_bytes = decode(read_all(path))
            nul = "\x00" in text
            if nul:  # the one rule for NUL bytes (textfile.check_not_binary): replace and flag
                text = text.replace("\x00", NUL_REPLACEMENT)
            records = _parse_records(text, chosen, mapping, fi)
            if bad_bytes or nul:
                for rec in records:
                    if "\ufffd" in json.dumps([rec.fields, rec.messages, rec.extra],
                                              ensure_ascii=False, default=str):
                        rec.flags.append("nul_bytes" if nul else "invalid_utf8")
            if records:
                _append_records(con, records)
            elif fi._quarantine:
                fi.result.notes.append("no record of this file could be parsed")
        if chosen == "csv" and _may_hold_nul(path):
            _replace_nul_bytes(con, fi.run_id)
        if redactor is not None:
            _redact_stage(con, redactor)
        # (Skipped when the stage is empty: an append after the fast path's bulk insert in the
        # same transaction makes DuckDB log its last row group and rewrite it at checkpoint.)
        if con.execute(f"SELECT count(*) FROM {STAGE}").fetchall()[0][0]:
            con.execute(f"INSERT INTO tickets {final.format(source=STAGE)}")
        _decide_after_insert(con, fi, on_conflict)
        if redactor is not None:
            fi.result.redactions = {k: v - before.get(k, 0) for k, v in redactor.counts.items()
                                    if v - before.get(k, 0)}
    return fi.result


NUL_COLUMNS = ("ticket_id", "source_id", "subject", "body", "category", "intent", "priority",
               "status", "resolution")


def _may_hold_nul(path: Path) -> bool:
    """Whether a CSV file has a NUL byte (a gzip or UTF-16/32 one is assumed to)."""
    if is_gzip(path) or file_encoding(path) != "utf-8":
        return True
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return False
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"\x00") >= 0


def _replace_nul_bytes(con, run_id: int) -> None:
    """The one rule for NUL bytes (see `textfile.check_not_binary`) on rows DuckDB's CSV
    reader staged or stored: each NUL becomes U+FFFD and the row is flagged `nul_bytes`."""
    any_nul = " OR ".join(f"contains(coalesce({c}, ''), chr(0))" for c in NUL_COLUMNS[1:]) + \
        " OR len(list_filter(coalesce(tags, []), lambda t: contains(t, chr(0)))) > 0" \
        " OR contains(coalesce(extra::VARCHAR, ''), '\\u0000')"
    rep = _sql_str(NUL_REPLACEMENT)
    for table, where, cols in ((STAGE, "true", NUL_COLUMNS[1:]),
                               ("tickets", f"ingest_run = {int(run_id)}", NUL_COLUMNS)):
        sets = ", ".join(f"{c} = replace({c}, chr(0), {rep})" for c in cols)
        con.execute(f"""UPDATE {table} SET {sets},
                            tags = list_transform(tags, lambda t: replace(t, chr(0), {rep})),
                            extra = replace(extra::VARCHAR, '\\u0000', {rep})::JSON,
                            flags = list_append(flags, 'nul_bytes')
                        WHERE {where} AND ({any_nul})""")


@contextlib.contextmanager
def _as_duckdb_reads(path: Path):
    """The path of the CSV as DuckDB's reader takes it: UTF-8 (its lines may end in LF,
    CRLF or CR). A UTF-16/32 file is transcoded into a temporary file for the read (records
    keep the original file's name and line numbers)."""
    if file_encoding(path) == "utf-8":
        yield path
        return
    data = read_all(path)
    with tempfile.TemporaryDirectory(prefix="rlforge-csv-") as tmp:
        copy = Path(tmp) / "export.csv"
        copy.write_bytes(data)
        del data
        yield copy


def _first_line(exc: Exception) -> str:
    return str(exc).strip().split("\n", 1)[0]
