"""Log ingest into DuckDB: nothing lost, multi-line records, duplicates, stable template ids,
merges, redaction, compressed and broken files."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import time

import duckdb
import polars as pl
import pytest

from rlforge import db
from rlforge.ingest import logs
from rlforge.ingest.logformats import reader as log_reader
from rlforge.ingest.logformats import records as log_records
from rlforge.ingest.common import DATABASE_REDACTOR, resolve_redactor
from rlforge.ingest.redaction.redactor import Redactor

from paths import SHARED_DATA

APP = "<Date> <Time> <Level> <Component>: <Content>"

JAVA_LOG = """\
2024-05-01 10:00:00,001 INFO api.Server: started on port 8080
2024-05-01 10:00:01,002 ERROR api.Handler: request 17 failed
java.lang.IllegalStateException: pool exhausted
\tat com.acme.db.Pool.take(Pool.java:88)
\tat com.acme.api.Handler.run(Handler.java:41)
Caused by: java.net.SocketTimeoutException: connect timed out
\t... 12 more
2024-05-01 10:00:02,003 INFO api.Handler: request 18 done in 12 ms

2024-05-01 10:00:03,004 INFO api.Handler: request 19 done in 7 ms
"""


@pytest.fixture
def con(tmp_path):
    c = db.connect(tmp_path / "logs.duckdb")
    yield c
    c.close()


def lines_of(con, run=None):
    where = f"WHERE ingest_run = {run}" if run else ""
    return con.execute(f"SELECT line_no, n_lines, level, component, message, template_id "
                       f"FROM log_lines {where} ORDER BY ingest_run, line_no").fetchall()


def test_stack_traces_join_the_record_before_them(con, tmp_path):
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG)
    r = logs.ingest_file(con, path, fmt=APP)
    assert (r.status, r.n_read, r.n_loaded, r.n_quarantined) == ("ok", 4, 4, 0) and r.reconciles
    rows = lines_of(con)
    assert [(no, n) for no, n, *_ in rows] == [(1, 1), (2, 6), (8, 1), (10, 1)]
    assert rows[1][4].startswith("request 17 failed\njava.lang.IllegalStateException")
    assert rows[1][4].endswith("\t... 12 more")
    assert rows[2][5] == rows[3][5]  # "request <*> done in <*> ms"
    params = con.execute("SELECT params FROM log_lines WHERE line_no = 8").fetchall()[0][0]
    assert params == ["18", "12"]


@pytest.mark.parametrize("chunk", [40, 97, 1 << 20])
def test_chunk_boundaries_do_not_change_records(con, tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(log_reader, "CHUNK_BYTES", chunk)
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG * 3)
    r = logs.ingest_file(con, path, fmt=APP)
    assert (r.n_read, r.n_loaded) == (12, 12)
    rows = lines_of(con)
    assert [n for _, n, *_ in rows] == [1, 6, 1, 1] * 3
    assert rows[5][4] == rows[1][4]


def test_read_buffers_are_used_again_only_once_nothing_reads_them(tmp_path, monkeypatch):
    """Blocks are read into buffers that are used again, but not while the background
    hash still reads one: with a hash slower than the reads, the digest is still the
    file's, every block keeps its text, and most blocks are read into a buffer read
    into before."""
    lines = [f"2024-05-01 10:00:{i % 60:02d} INFO w{i % 7}: é{i} " + "x" * (i * 37 % 300)
             for i in range(6000)]
    text = "\ufeff" + "\n".join(line + ("\r" if i % 5 == 0 else "")
                                 for i, line in enumerate(lines)) + "\n"
    path = tmp_path / "blocks.log"
    path.write_text(text, encoding="utf-8")
    reused = []  # per block: read into a buffer read into before?
    take = log_reader._BufferPool.take

    def recording(pool):
        before = {id(b) for b in pool.buffers}  # alive, held by the pool: ids are unique
        buf = take(pool)
        reused.append(id(buf) in before)
        return buf

    class SlowSha256:  # hashes a block 2 ms after it is handed over
        def __init__(self):
            self.inner = hashlib.sha256()

        def update(self, data):
            time.sleep(0.002)
            self.inner.update(data)

    monkeypatch.setattr(log_reader._BufferPool, "take", recording)
    hasher = logs._BackgroundHash()
    hasher._hash = slow = SlowSha256()
    kept = [block.lines for block in log_reader.iter_line_blocks(path, chunk_bytes=8192, hasher=hasher)]
    hasher.close()
    assert pl.concat(kept).to_list() == lines
    assert slow.inner.hexdigest() == db.sha256_file(path)
    assert len(reused) > 100 and sum(reused) > len(reused) // 2


def test_unparsed_lines_quarantine_or_load_message_only(con, tmp_path):
    path = tmp_path / "mixed.log"
    path.write_text("  orphan continuation before any record\n" + JAVA_LOG +
                    "### not a log line ###\n")
    r = logs.ingest_file(con, path, fmt=APP)
    assert (r.n_read, r.n_loaded, r.n_quarantined) == (6, 4, 2) and r.reconciles
    q = con.execute("SELECT record_no, raw, reason FROM quarantine ORDER BY record_no").fetchall()
    assert [x[0] for x in q] == [1, 12]
    assert q[1][1] == "### not a log line ###" and q[1][2].startswith("no format match")
    r2 = logs.ingest_file(con, path, fmt=APP, unparsed="message-only")
    assert (r2.n_read, r2.n_loaded, r2.n_duplicates, r2.n_quarantined) == (6, 2, 4, 0)
    assert r2.n_flagged == 2
    only = con.execute("SELECT line_no, ts, message, flag FROM log_lines WHERE flag IS NOT NULL "
                       "ORDER BY line_no").fetchall()
    assert [(x[0], x[1], x[3]) for x in only] == [(1, None, "unparsed"), (12, None, "unparsed")]


def test_reingest_adds_nothing_and_an_appended_file_adds_only_new_lines(con, tmp_path):
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG)
    original = db.sha256_file(path)
    logs.ingest_file(con, path, fmt=APP)
    again = logs.ingest_file(con, path, fmt=APP)
    assert (again.n_read, again.n_loaded, again.n_duplicates) == (4, 0, 4)
    with open(path, "a") as fh:
        fh.write("2024-05-01 10:00:04,005 WARN api.Handler: request 20 slow\n")
    grown = logs.ingest_file(con, path, fmt=APP)
    assert (grown.n_read, grown.n_loaded, grown.n_duplicates) == (5, 1, 4)
    assert con.execute("SELECT count(*) FROM log_lines").fetchall() == [(5,)]
    # no message row is left without a record
    assert con.execute("SELECT count(*) FROM log_messages m WHERE NOT EXISTS "
                       "(SELECT 1 FROM log_records r WHERE r.message_id = m.message_id)"
                       ).fetchall() == [(0,)]
    runs = con.execute("SELECT n_read, n_loaded, n_duplicates, sha256 FROM ingest_runs "
                       "ORDER BY run_id").fetchall()
    assert [r[:3] for r in runs] == [(4, 4, 0), (4, 0, 4), (5, 1, 4)]
    # the first two runs read the original file, the third the grown one
    grown_sha = db.sha256_file(path)
    assert runs[0][3] == runs[1][3] == original != grown_sha == runs[2][3]


def test_gzip_is_read_transparently_and_a_truncated_one_fails_cleanly(con, tmp_path):
    gz = tmp_path / "app.log.gz"
    gz.write_bytes(gzip.compress(JAVA_LOG.encode()))
    r = logs.ingest_file(con, gz, fmt=APP)
    assert (r.status, r.n_loaded) == ("ok", 4)
    assert r.format == APP
    broken = tmp_path / "broken.log.gz"
    broken.write_bytes(gzip.compress((JAVA_LOG * 50).encode())[:-40])
    bad = logs.ingest_file(con, broken, fmt=APP)
    assert bad.status == "failed" and "truncated gzip" in bad.error
    assert con.execute("SELECT status, n_loaded FROM ingest_runs ORDER BY run_id").fetchall() == \
        [("ok", 4), ("failed", 0)]
    assert con.execute("SELECT count(*) FROM log_lines").fetchall() == [(4,)]


def test_a_file_that_breaks_after_some_chunks_leaves_nothing_and_no_thread(con, tmp_path,
                                                                           monkeypatch):
    # chunks are parsed on a background thread, one ahead of the insert: an error there
    # must still fail the file as a whole, and the thread must not outlive the ingest
    monkeypatch.setattr(log_reader, "CHUNK_BYTES", 4096)
    broken = tmp_path / "long.log.gz"
    broken.write_bytes(gzip.compress((JAVA_LOG * 400).encode())[:-40])
    bad = logs.ingest_file(con, broken, fmt=APP)
    assert bad.status == "failed" and "truncated gzip" in bad.error
    assert con.execute("SELECT count(*) FROM log_records").fetchall() == [(0,)]
    assert not [t for t in threading.enumerate() if t.name.startswith("rlforge-log")]
    whole = tmp_path / "long.log"
    whole.write_text(JAVA_LOG * 400)
    good = logs.ingest_file(con, whole, fmt=APP)
    assert good.status == "ok" and good.n_loaded == 400 * 4


def test_background_parser_stops_early_and_releases_its_source():
    released = threading.Event()

    def source():
        try:
            yield from range(1000)
        finally:
            released.set()

    chunks = logs._Prefetch(source())
    got = []
    for item in chunks:
        got.append(item)
        if len(got) == 3:
            break  # the consumer gives up (an error while storing, say)
    chunks.close()
    assert got == [0, 1, 2]
    assert released.wait(5) and not chunks._thread.is_alive()


def test_invalid_utf8_is_replaced_and_flagged(con, tmp_path):
    path = tmp_path / "bytes.log"
    path.write_bytes(b"2024-05-01 10:00:00,001 INFO a.B: caf\xe9 opened\n"
                     b"2024-05-01 10:00:00,002 INFO a.B: fine\n")
    r = logs.ingest_file(con, path, fmt=APP)
    assert (r.n_loaded, r.n_flagged) == (2, 1)
    assert con.execute("SELECT message, flag FROM log_lines ORDER BY line_no").fetchall() == \
        [("caf\ufffd opened", "invalid_utf8"), ("fine", None)]


def test_empty_and_binary_files(con, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    r = logs.ingest_file(con, empty)
    assert (r.status, r.n_read) == ("ok", 0) and "empty file" in r.notes[0]
    binary = tmp_path / "bin.log"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    b = logs.ingest_file(con, binary)
    assert b.status == "failed" and "binary" in b.error


def test_template_ids_are_stable_across_ingests_and_merges_repoint_lines(con, tmp_path):
    first = tmp_path / "a.log"
    first.write_text("".join(f"2024-05-01 10:00:0{i},000 INFO auth: user admin logged in\n"
                             for i in range(3)))
    logs.ingest_file(con, first, fmt=APP)
    (old_id, old_text), = con.execute("SELECT template_id, template FROM log_templates").fetchall()
    assert old_text == "user admin logged in"
    second = tmp_path / "b.log"
    second.write_text("".join(f"2024-05-02 10:00:0{i},000 INFO auth: user {u} logged in\n"
                              for i, u in enumerate(["alice", "bob", "carol", "dave"])))
    r = logs.ingest_file(con, second, fmt=APP)
    templates = con.execute("SELECT template_id, template, count, first_seen, last_seen "
                            "FROM log_templates").fetchall()
    assert len(templates) == 1
    new_id, new_text, count, first_seen, last_seen = templates[0]
    assert new_text == "user <*> logged in" and count == 7
    assert str(first_seen) == "2024-05-01 10:00:00" and str(last_seen) == "2024-05-02 10:00:03"
    assert con.execute("SELECT old_id, new_id, old_template, new_template, ingest_run "
                       "FROM template_merges").fetchall() == \
        [(old_id, new_id, old_text, new_text, r.run_id)]
    # every stored line, old ones too, points at the final template
    assert con.execute("SELECT DISTINCT template_id FROM log_lines").fetchall() == [(new_id,)]
    # a third ingest of a known line maps to the same id, with no new merge
    third = tmp_path / "c.log"
    third.write_text("2024-05-03 09:00:00,000 INFO auth: user zed logged in\n")
    logs.ingest_file(con, third, fmt=APP)
    assert con.execute("SELECT count(*) FROM template_merges").fetchall() == [(1,)]
    assert con.execute("SELECT template_id FROM log_lines WHERE message LIKE '%zed%'"
                       ).fetchall() == [(new_id,)]


def test_every_stored_template_id_exists(con, tmp_path):
    for i, users in enumerate([["a1x"], ["bob", "carol"], ["dan", "eve", "fay", "gus"]]):
        path = tmp_path / f"{i}.log"
        path.write_text("".join(f"2024-05-0{i + 1} 10:00:00,000 WARN k: disk {u} full on node\n"
                                for u in users))
        logs.ingest_file(con, path, fmt=APP)
    assert con.execute("SELECT count(*) FROM log_lines l WHERE NOT EXISTS (SELECT 1 FROM "
                       "log_templates t WHERE t.template_id = l.template_id)").fetchall() == [(0,)]
    assert con.execute("SELECT sum(count) FROM log_templates").fetchall() == [(7,)]


def test_redaction_happens_before_anything_is_written(con, tmp_path):
    path = tmp_path / "pii.jsonl"
    path.write_text("\n".join(json.dumps({"ts": "2024-01-01T00:00:00Z", "level": "info",
                                          "msg": f"password reset sent to {u}@example.com",
                                          "client": f"10.0.0.{i}"})
                              for i, u in enumerate(["ann", "ben", "cat", "dee"], start=10)) +
                    "\nnot json with bob@example.com\n")
    r = logs.ingest_file(con, path, redactor=Redactor(db.redaction_key(con)))
    # four messages, the same four in the stored objects (fields), one quarantined line
    assert r.redactions == {"EMAIL": 9, "IPV4": 4}
    dump = json.dumps([con.execute(f"SELECT * FROM {t}").fetchall() for t in
                       ("log_messages", "log_records", "log_templates", "quarantine")],
                      default=str)
    assert "@example.com" not in dump and "10.0.0.1" not in dump
    (tpl,), = con.execute("SELECT template FROM log_templates").fetchall()
    assert tpl == "password reset sent to <*>"


def _stored_users(con, tmp_path, monkeypatch, users: list[str]) -> list[str]:
    """Ingest one line per user name (its address in the header's User field) in chunks of
    ~25 lines, redacting; the stored User field of each line, in line order."""
    monkeypatch.setattr(log_reader, "CHUNK_BYTES", 2048)
    fmt = "<Date> <Time> <User> <Level> <Component>: <Content>"
    path = tmp_path / "users.log"
    path.write_text("".join(f"2024-05-01 10:00:{i % 60:02d},{i:03d} {u}@example.com "
                            f"INFO a.B: step {i} done\n" for i, u in enumerate(users)))
    r = logs.ingest_file(con, path, fmt=fmt, redactor=Redactor(db.redaction_key(con)))
    assert r.status == "ok" and r.n_loaded == len(users)
    return [json.loads(f)["User"] for (f,) in con.execute(
        "SELECT fields FROM log_records ORDER BY line_no").fetchall()]


def test_fields_are_redacted_alike_in_every_chunk(con, tmp_path, monkeypatch):
    # field values are redacted once per file and remembered across chunks: a value seen in
    # an early chunk must still be replaced later, and a new one found where it first appears
    users = _stored_users(con, tmp_path, monkeypatch,
                          ["bob" if i == 170 else "ann" for i in range(200)])
    assert all("@" not in u and u.startswith("<EMAIL_") for u in users)
    assert len(set(users[:170] + users[171:])) == 1 and users[170] != users[0]


def test_database_from_before_0007_keeps_its_records_and_finds_them_again(tmp_path,
                                                                          database_before):
    """Migration 0007 drops `log_records.record_hash`: a database written at schema 6
    keeps every record in line order, and a re-ingest of its file finds all of them (by
    line number and content) as duplicates."""
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG)
    source = db.connect(tmp_path / "source.duckdb")
    assert logs.ingest_file(source, path, fmt=APP).n_loaded == 4
    source.close()
    old_path = tmp_path / "old.duckdb"
    old = database_before(old_path, "0007")
    assert db.schema_version(old) == 6
    old.execute(f"ATTACH '{tmp_path / 'source.duckdb'}' AS source (READ_ONLY)")
    for table in ("ingest_runs", "log_messages", "log_templates"):
        old.execute(f"INSERT INTO {table} SELECT * FROM source.{table}")
    old.execute("INSERT INTO log_records SELECT *, hash(line_no) FROM source.log_records")
    old.execute("SELECT nextval('ingest_run_seq') FROM range((SELECT max(run_id) FROM ingest_runs))")
    records = old.execute("SELECT * EXCLUDE (record_hash) FROM log_records ORDER BY rowid").fetchall()
    old.close()

    con = db.connect(old_path)
    assert db.schema_version(con) == len(db.MIGRATIONS)
    columns = [c for c, in con.execute("SELECT column_name FROM duckdb_columns() "
                                       "WHERE table_name = 'log_records'").fetchall()]
    assert "record_hash" not in columns and "line_no" in columns
    assert con.execute("SELECT * FROM log_records ORDER BY rowid").fetchall() == records
    assert [no for no, *_ in lines_of(con)] == [1, 2, 8, 10]
    again = logs.ingest_file(con, path, fmt=APP)
    assert (again.n_read, again.n_loaded, again.n_duplicates) == (4, 0, 4)
    con.close()


def test_unknown_settings_are_user_errors(con, tmp_path):
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG)
    from rlforge.errors import UserError

    with pytest.raises(UserError, match="unparsed"):
        logs.ingest_file(con, path, unparsed="drop")
    with pytest.raises(UserError, match="not a valid regular expression"):
        logs.ingest_file(con, path, masks=["(unclosed"])
    with pytest.raises(UserError, match="unknown log format"):
        logs.ingest_file(con, path, fmt="xml")
    missing = logs.ingest_file(con, tmp_path / "nope.log")
    assert missing.status == "failed" and missing.error == "no such file"


def test_read_log_is_the_parse_face_without_a_database(tmp_path):
    path = tmp_path / "app.log"
    path.write_text(JAVA_LOG + "junk\n")
    df = logs.read_log(path, APP)
    assert df["line_no"].to_list() == [1, 2, 8, 10, 11]
    assert df["ok"].to_list() == [True, True, True, True, False]
    assert isinstance(duckdb.__version__, str)


def test_a_record_longer_than_the_limit_is_cut_and_stays_one_record(con, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setattr(log_reader, "CHUNK_BYTES", 64)
    monkeypatch.setattr(log_records, "MAX_RECORD_LINES", 4)
    path = tmp_path / "long.log"
    trace = "".join(f"\tat frame.number{i}(F.java:{i})\n" for i in range(12))
    path.write_text("2024-05-01 10:00:00,001 ERROR a.B: boom\n" + trace +
                    "2024-05-01 10:00:01,001 INFO a.B: fine\n")
    r = logs.ingest_file(con, path, fmt=APP)
    assert r.reconciles and (r.n_read, r.n_loaded, r.n_quarantined, r.n_flagged) == (2, 2, 0, 1)
    first, last = con.execute("SELECT n_lines, flag, message FROM log_lines "
                              "ORDER BY line_no").fetchall()
    assert 4 < first[0] < 13 and first[1] == "truncated" and last == (1, None, "fine")
    assert first[2].startswith("boom\n\tat frame.number0(")
    assert any(f"{13 - first[0]} continuation line(s)" in note for note in r.notes)


def test_fields_stay_redacted_when_the_memo_starts_over(con, tmp_path, monkeypatch):
    # the memo of redacted field values is bounded; when a chunk's new values push it past
    # its bound it starts over, and the values of that chunk it had already seen must still
    # be redacted (they are not "seen" any more once it is empty)
    monkeypatch.setattr(logs._RedactMemo, "LIMIT", 3)
    # ann on every other line, and a new user every 50 lines (two chunks or so)
    users = _stored_users(con, tmp_path, monkeypatch,
                          ["ann" if i % 2 else f"u{i // 50}" for i in range(300)])
    assert [u for u in users if not u.startswith("<EMAIL_")] == []
    assert len(set(users)) == 7 and len(set(users[1::2])) == 1


@pytest.mark.slow
@pytest.mark.parametrize("cache_rows", [logs.MESSAGE_CACHE_ROWS, 40])
def test_template_counts_and_times_agree_with_the_stored_records(con, tmp_path, monkeypatch,
                                                                 cache_rows):
    """`log_templates` is brought up to date from each file's own records and the counts it
    held before (nothing stored is read again): after ingests in many chunks, templates
    generalised within a file and across files, and a re-ingest of duplicates, every count
    and first/last seen equals a recount of the stored lines. With a message cache of 40
    rows, messages a file repeats are forgotten between chunks and numbered again: every
    record still has its own text."""
    monkeypatch.setattr(logs, "MESSAGE_CACHE_ROWS", cache_rows)
    spec = json.loads((SHARED_DATA / "loghub" / "formats.json").read_text())["BGL"]
    lines = (SHARED_DATA / "loghub" / "BGL" / "BGL_2k.log").read_text().splitlines(keepends=True)
    halves = [tmp_path / "first.log", tmp_path / "second.log"]
    halves[0].write_text("".join(lines[:1000]))
    halves[1].write_text("".join(lines[1000:]))
    monkeypatch.setattr(log_reader, "CHUNK_BYTES", 3_000)  # ~100 chunks per file
    for path in (*halves, halves[0]):
        r = logs.ingest_file(con, path, fmt=spec["log_format"], masks=spec["regex"])
        assert r.status == "ok" and r.reconciles
    assert r.n_duplicates == 1000 and r.n_loaded == 0
    merges = con.execute("SELECT count(*), count(*) FILTER (WHERE ingest_run > 1) "
                         "FROM template_merges").fetchall()[0]
    assert merges[1] > 0, merges  # the second file generalised templates stored by the first
    stored = con.execute("SELECT template_id, count, first_seen, last_seen FROM log_templates "
                         "ORDER BY template_id").fetchall()
    recount = con.execute("SELECT template_id, count(*), min(ts), max(ts) FROM log_lines "
                          "GROUP BY template_id ORDER BY template_id").fetchall()
    assert stored == recount and sum(row[1] for row in stored) == 2000
    redactor = resolve_redactor(con, DATABASE_REDACTOR)
    expected = [m for path in halves for m in redactor.redact_series(
        logs.read_log(path, spec["log_format"])["message"]).to_list()]
    got = con.execute("SELECT message FROM log_lines WHERE ingest_run < 3 "
                      "ORDER BY ingest_run, line_no").fetchall()
    assert [m for (m,) in got] == expected


def test_an_ingest_leaves_the_connection_settings_as_it_found_them(con, tmp_path):
    """A log ingest narrows DuckDB's threads and write buffer while it runs; afterwards,
    and after a file that fails half way, the connection has its own settings back."""
    settings = "SELECT current_setting('threads'), current_setting('write_buffer_row_group_count')"
    con.execute("SET threads = 2; SET write_buffer_row_group_count = 3")
    before = con.execute(settings).fetchall()
    good = tmp_path / "app.log"
    good.write_text(JAVA_LOG)
    assert logs.ingest_file(con, good, fmt=APP).status == "ok"
    assert con.execute(settings).fetchall() == before
    broken = tmp_path / "broken.log.gz"
    broken.write_bytes(gzip.compress(JAVA_LOG.encode() * 2000)[:-200])
    assert logs.ingest_file(con, broken, fmt=APP).status == "failed"
    assert con.execute(settings).fetchall() == before == [(2, 3)]


def test_the_cli_keeps_openblas_from_starting_workers():
    """numpy (imported by pyarrow) would start OpenBLAS worker threads that spin on a core
    while an ingest runs; once the command line is loaded (`rlforge.cli`, what the console
    script and `python -m rlforge` import) it starts as many threads as with
    OPENBLAS_NUM_THREADS=1, and a value the user set is kept. Importing the library alone
    leaves the environment as it was."""
    import os
    import subprocess
    import sys

    count = ("import os{}; before = len(os.listdir('/proc/self/task')); import pyarrow; "
             "print(len(os.listdir('/proc/self/task')) - before, "
             "os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def run(code: str, **extra: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra},
                             capture_output=True, text=True, check=True)
        return out.stdout.split()

    with_cli = run(count.format(", rlforge.cli"))
    one_thread = run(count.format(""), OPENBLAS_NUM_THREADS="1")
    assert with_cli == one_thread
    if (os.cpu_count() or 1) > 1:  # on one core OpenBLAS starts no worker either way
        assert int(run(count.format(""))[0]) > int(one_thread[0])
    assert run(count.format(", rlforge.cli"), OPENBLAS_NUM_THREADS="4")[1] == "4"
    assert run(count.format(", rlforge, rlforge.db"))[1] == "None"


def test_polars_shares_one_allocator_arena_on_a_small_machine():
    """On up to 4 cores the command line gives polars' jemalloc one arena (threads reuse
    each other's freed memory during an ingest); on more it keeps polars' default; a value
    the user set is kept. Read from jemalloc's own statistics, printed at exit."""
    import os
    import re
    import subprocess
    import sys

    code = ("import os; import rlforge.cli; os.environ['_RJEM_MALLOC_CONF'] = "
            "os.environ.get('_RJEM_MALLOC_CONF', '') + ',stats_print:true'; "
            "import polars; polars.Series(range(10)).sum()")
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}

    def narenas(**extra: str) -> int:
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra},
                             capture_output=True, text=True, check=True)
        return int(re.search(r"opt\.narenas: (\d+)", out.stdout + out.stderr).group(1))

    cores = os.cpu_count() or 1
    assert (narenas() == 1) == (cores <= 4)
    assert narenas(_RJEM_MALLOC_CONF="narenas:3") == 3


def test_tuning_sets_defaults_and_keeps_the_users_values():
    """The decision itself, on a given core count: one arena up to 4 cores only, and a
    value already set is never replaced."""
    from rlforge.cli.tuning import tune_environment

    small, large, mine = {}, {}, {"OPENBLAS_NUM_THREADS": "8", "_RJEM_MALLOC_CONF": "narenas:2"}
    tune_environment(small, cpus=4)
    tune_environment(large, cpus=5)
    tune_environment(mine, cpus=2)
    assert small == {"OPENBLAS_NUM_THREADS": "1", "_RJEM_MALLOC_CONF": "narenas:1"}
    assert large == {"OPENBLAS_NUM_THREADS": "1"}
    assert mine == {"OPENBLAS_NUM_THREADS": "8", "_RJEM_MALLOC_CONF": "narenas:2"}
