"""Bad inputs fail alone and never merge, split or drop a record.

Every case runs the real command on real files in tmp_path, several files per command with
good ones after the bad one: the good ones always load, every file's counts reconcile
(read = loaded + duplicates + quarantined), and a file that cannot be ingested fails with
one line naming it and its problem, an `ingest_runs` row (status failed, the reason),
exit code 1 and no traceback.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import duckdb
import pytest

from rlforge.ingest.logformats import reader as log_reader
from rlforge.ingest.logformats import records as log_records

APP = "<Date> <Time> <Level> <Component>: <Content>"


def app_lines(n: int, text: str = "request {i} done", start: int = 0) -> list[str]:
    def ts(i: int) -> str:
        return f"2024-05-01 {10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d},000"

    return [f"{ts(start + i)} INFO api.Server: " + text.format(i=start + i) for i in range(n)]


def write_lines(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes((newline.join(lines) + newline).encode())
    return path


def summary(result) -> dict:
    """The --json summary (stdout only: error lines go to stderr)."""
    return json.loads(result.stdout)


def by_name(result) -> dict[str, dict]:
    return {Path(f["path"]).name: f for f in summary(result)["files"]}


def assert_books_balance(result) -> None:
    for f in summary(result)["files"]:
        assert f["reconciles"], f
        assert f["n_read"] == f["n_loaded"] + f["n_duplicates"] + f["n_quarantined"], f


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def assert_fails_alone(result, query, name: str, problem: str) -> None:
    """One error line naming the file and the problem, no traceback, exit 1, and a failed
    `ingest_runs` row with the reason."""
    assert result.exit_code == 1
    errors = error_lines(result)
    assert len([e for e in errors if name in e]) == 1, errors
    assert any(name in e and problem in e for e in errors), errors
    assert "Traceback" not in result.output
    rows = query("SELECT status, error FROM ingest_runs WHERE path LIKE ?", [f"%{name}"])
    assert rows and all(s == "failed" and problem in e for s, e in rows), rows


# --- 1. duplicates are per file, not across files by position ----------------------------

def test_lines_shared_by_two_log_files_are_not_duplicates_of_each_other(cli, query, tmp_path):
    lines = app_lines(20)
    a = write_lines(tmp_path / "a.log", lines)
    other = list(lines)
    other[4] = "2024-05-01 10:00:04,000 INFO api.Server: something else"
    b = write_lines(tmp_path / "b.log", other)
    first = cli("ingest", "logs", a, b, "--format", APP, "--no-redact", "--json")
    assert first.exit_code == 0
    files = by_name(first)
    assert [(files[n]["n_loaded"], files[n]["n_duplicates"]) for n in ("a.log", "b.log")] == \
        [(20, 0), (20, 0)]
    assert query("SELECT file, count(*) FROM log_lines GROUP BY file ORDER BY file") == \
        [(str(a), 20), (str(b), 20)]
    assert_books_balance(first)
    again = by_name(cli("ingest", "logs", b, a, "--format", APP, "--no-redact", "--json"))
    assert [(again[n]["n_loaded"], again[n]["n_duplicates"]) for n in ("a.log", "b.log")] == \
        [(0, 20), (0, 20)]
    # a byte-for-byte copy under another name is the same source: its records are duplicates
    copy = tmp_path / "copy-of-a.log"
    shutil.copy(a, copy)
    copied = cli("ingest", "logs", copy, "--format", APP, "--no-redact", "--json")
    (f,) = summary(copied)["files"]
    assert (f["n_read"], f["n_loaded"], f["n_duplicates"]) == (20, 0, 20)
    assert query("SELECT count(*) FROM log_records") == [(40,)]
    assert query("SELECT count(*) FROM log_messages m ANTI JOIN log_records r USING "
                 "(message_id)") == [(0,)]


def one_file(result) -> tuple:
    """(path, read, loaded, duplicates, quarantined) of a one-file summary."""
    (f,) = summary(result)["files"]
    assert f["reconciles"], f
    return f["path"], f["n_read"], f["n_loaded"], f["n_duplicates"], f["n_quarantined"]


def test_same_named_files_in_different_directories_are_different_sources(cli, query, tmp_path,
                                                                        monkeypatch):
    # `cd a; rlforge ingest logs app.log` then `cd b; rlforge ingest logs app.log`: two files
    a, b = tmp_path / "a", tmp_path / "b"
    lines = app_lines(21) + ["### not a log line ###"]
    other = list(lines)
    other[3] = "2024-05-01 10:00:03,000 INFO api.Server: something else"
    tickets = [json.dumps({"id": 1, "subject": "one"}), "{broken", json.dumps({"id": 2})]
    for d, log, ids in ((a, lines, (1, 2)), (b, other, (11, 12))):
        d.mkdir()
        write_lines(d / "app.log", log)
        (d / "export.jsonl").write_text("\n".join(t.replace('"id": 1', f'"id": {ids[0]}')
                                                  .replace('"id": 2', f'"id": {ids[1]}')
                                                  for t in tickets) + "\n")
        make_repo(d / "repo")
    seen = []
    for d in (a, b):
        monkeypatch.chdir(d)
        seen.append(one_file(cli("ingest", "logs", "app.log", "--format", APP, "--no-redact",
                                 "--json")))
        seen.append(one_file(cli("ingest", "tickets", "export.jsonl", "--no-redact", "--json")))
        seen.append(one_file(cli("ingest", "commits", "repo", "--no-redact", "--json")))
    assert seen == [(str(a / "app.log"), 22, 21, 0, 1), (str(a / "export.jsonl"), 3, 2, 0, 1),
                    (str(a / "repo"), 2, 2, 0, 0),
                    (str(b / "app.log"), 22, 21, 0, 1), (str(b / "export.jsonl"), 3, 2, 0, 1),
                    (str(b / "repo"), 2, 2, 0, 0)]
    assert query("SELECT file, count(*) FROM log_lines GROUP BY file ORDER BY file") == \
        [(str(a / "app.log"), 21), (str(b / "app.log"), 21)]
    assert query("SELECT file, source_id FROM tickets ORDER BY ingest_run, source_id") == \
        [(str(a / "export.jsonl"), "1"), (str(a / "export.jsonl"), "2"),
         (str(b / "export.jsonl"), "11"), (str(b / "export.jsonl"), "12")]
    assert query("SELECT source, file, record_no FROM quarantine ORDER BY ingest_run") == \
        [("logs", str(a / "app.log"), 22), ("tickets", str(a / "export.jsonl"), 2),
         ("logs", str(b / "app.log"), 22), ("tickets", str(b / "export.jsonl"), 2)]
    assert query("SELECT repo, count(*) FROM commits GROUP BY repo ORDER BY repo") == \
        [(str(a / "repo"), 2), (str(b / "repo"), 2)]


def test_one_file_under_other_spellings_of_its_path_is_stored_once(cli, query, tmp_path,
                                                                   monkeypatch):
    d = tmp_path / "logs"
    d.mkdir()
    log = write_lines(d / "app.log", app_lines(10) + ["### not a log line ###"])
    export = d / "export.jsonl"
    export.write_text(json.dumps({"id": 1, "subject": "one"}) + "\n{broken\n")
    repo = make_repo(d / "repo")
    (repo / "sub").mkdir()
    (tmp_path / "current.log").symlink_to(log)
    monkeypatch.chdir(d)
    spellings = ["app.log", "./app.log", str(log), "../logs/app.log", "../current.log"]
    seen = []
    for i, spelling in enumerate(spellings):
        if i:  # the file grew since: not a byte-for-byte copy of what was stored
            with log.open("a") as fh:
                fh.write("\n".join(app_lines(2, start=100 + 2 * i)) + "\n")
            with export.open("a") as fh:
                fh.write(json.dumps({"id": 100 + i, "subject": "more"}) + "\n")
        seen.append(one_file(cli("ingest", "logs", spelling, "--format", APP, "--no-redact",
                                 "--json")))
        seen.append(one_file(cli("ingest", "tickets", spelling.replace("app.log", "export.jsonl")
                                 .replace("current.log", "logs/export.jsonl"),
                                 "--no-redact", "--json")))
    assert seen[0::2] == [(str(log), 11, 10, 0, 1)] + [
        (str(log), 11 + 2 * i, 2, 9 + 2 * i, 0) for i in range(1, len(spellings))]
    assert seen[1::2] == [(str(export), 2, 1, 0, 1)] + [
        (str(export), 2 + i, 1, 1 + i, 0) for i in range(1, len(spellings))]
    assert query("SELECT count(*), count(DISTINCT line_no) FROM log_records") == [(18, 18)]
    assert query("SELECT count(*) FROM tickets") == [(5,)]
    assert query("SELECT source, file, record_no FROM quarantine ORDER BY source") == \
        [("logs", str(log), 11), ("tickets", str(export), 2)]
    assert query("SELECT DISTINCT path FROM ingest_runs ORDER BY path") == \
        [(str(log),), (str(export),)]
    # a repository is the same one from any path inside it
    for spelling in ("repo", "./repo/", str(repo), "repo/sub"):
        assert one_file(cli("ingest", "commits", spelling, "--no-redact", "--json"))[1:3] == \
            ((2, 2) if spelling == "repo" else (0, 0))


# --- 2. line endings: LF, CRLF, CR only; records longer than the maximum ----------------

def test_line_endings_are_detected_per_file_and_cr_only_is_split(cli, query, tmp_path):
    lines = app_lines(20)
    cr = write_lines(tmp_path / "cr.log", lines, "\r")
    crlf = write_lines(tmp_path / "crlf.log", app_lines(20, start=20), "\r\n")
    lf_ = write_lines(tmp_path / "lf.log", app_lines(20, start=40))
    result = cli("ingest", "logs", cr, crlf, lf_, "--format", APP, "--no-redact", "--json")
    assert result.exit_code == 0
    rows = query("SELECT line_no, message FROM log_lines WHERE file = ? ORDER BY line_no", [str(cr)])
    assert rows == [(i + 1, f"request {i} done") for i in range(20)]
    assert query("SELECT count(*) FROM log_lines WHERE contains(message, chr(13))") == [(0,)]
    files = by_name(result)
    assert {n: (f["line_endings"], f["n_read"], f["n_loaded"]) for n, f in files.items()} == {
        "cr.log": ("CR", 20, 20), "crlf.log": ("CRLF", 20, 20), "lf.log": ("LF", 20, 20)}
    assert_books_balance(result)
    table = cli("ingest", "logs", cr, "--format", APP, "--no-redact")  # the summary says so
    assert "CR" in table.stdout and "lines end in CR only" in table.stdout


def test_cr_only_ticket_csv_loads_and_the_files_after_it_too(cli, query, tmp_path):
    cr = tmp_path / "cr.csv"
    cr.write_bytes(b"id,subject,description\r" +
                   b"".join(b"%d,hello %d,world %d\r" % (i, i, i) for i in range(5)))
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n100,hi,there\n")
    result = cli("ingest", "tickets", cr, good, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    files = by_name(result)
    assert (files["cr.csv"]["line_endings"], files["cr.csv"]["n_loaded"]) == ("CR", 5)
    assert files["good.csv"]["n_loaded"] == 1
    assert query("SELECT source_id, subject, body FROM tickets WHERE file = ? ORDER BY 1",
                 [str(cr)]) == [(str(i), f"hello {i}", f"world {i}") for i in range(5)]


# Characters str.splitlines() also breaks at; U+2028, U+2029 and U+0085 are legal in a JSON
# string as they are (json.dumps(ensure_ascii=False) writes them), the others are control
# characters JSON wants escaped.
LINE_BREAKS_THAT_ARE_NOT_LINE_ENDS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_jsonl_tickets_are_split_at_line_ends_only(cli, query, tmp_path, newline):
    def export(name: str, texts: list[str]) -> Path:
        path = tmp_path / name
        path.write_bytes(newline.join(json.dumps({"id": f"{name}-{i}", "subject": t},
                                                 ensure_ascii=False)
                                      for i, t in enumerate(texts)).encode() + newline.encode())
        return path

    # in the first record (format detection reads the first line) and in a middle one
    first = export("first.jsonl", ["a\u2028b", "plain", "c\u0085d"])
    middle = export("middle.jsonl", ["plain", "e\u2029f\u2028g", "last"])
    # raw control characters make a line invalid JSON: that line, whole, is quarantined
    raw = tmp_path / "raw-controls.jsonl"
    raw.write_bytes(newline.join([json.dumps({"id": "r-0", "subject": "ok"}),
                                  '{"id": "r-1", "subject": "x\x0by\x0cz\x1c\x1d\x1e"}',
                                  json.dumps({"id": "r-2", "subject": "ok too"})]).encode())
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n100,hi,there\n")
    result = cli("ingest", "tickets", first, middle, raw, good, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    assert_books_balance(result)
    files = by_name(result)
    assert {n: (f["format"], f["n_read"], f["n_loaded"], f["n_quarantined"])
            for n, f in files.items()} == {
        "first.jsonl": ("jsonl", 3, 3, 0), "middle.jsonl": ("jsonl", 3, 3, 0),
        "raw-controls.jsonl": ("jsonl", 3, 2, 1), "good.csv": ("csv", 1, 1, 0)}
    assert query("SELECT source_id, subject, record_no FROM tickets WHERE file <> ? "
                 "ORDER BY source_id", [str(good)]) == [
        ("first.jsonl-0", "a\u2028b", 1), ("first.jsonl-1", "plain", 2),
        ("first.jsonl-2", "c\u0085d", 3), ("middle.jsonl-0", "plain", 1),
        ("middle.jsonl-1", "e\u2029f\u2028g", 2), ("middle.jsonl-2", "last", 3),
        ("r-0", "ok", 1), ("r-2", "ok too", 3)]
    (record_no, text, reason), = query("SELECT record_no, raw, reason FROM quarantine")
    assert (record_no, text) == (2, '{"id": "r-1", "subject": "x\x0by\x0cz\x1c\x1d\x1e"}')
    assert reason.startswith("invalid JSON line")
    if newline != "\r":  # a CR inside a line is not its end, e.g. JSON whitespace
        spaced = tmp_path / "cr-inside.jsonl"
        spaced.write_bytes(newline.join(['{"id": "s-0",\r"subject": "a"}', '{"id": "s-1"}'])
                           .encode())
        (f,) = summary(cli("ingest", "tickets", spaced, "--no-redact", "--json"))["files"]
        assert (f["format"], f["n_read"], f["n_loaded"]) == ("jsonl", 2, 2)


def test_log_lines_are_split_at_line_ends_only(cli, query, tmp_path):
    odd = "".join(LINE_BREAKS_THAT_ARE_NOT_LINE_ENDS)
    plain = write_lines(tmp_path / "app.log", app_lines(3, text="request {i} " + odd))
    crlf = write_lines(tmp_path / "crlf.log", app_lines(3, text=odd + " job {i}", start=10),
                       "\r\n")
    cr = write_lines(tmp_path / "cr.log", app_lines(3, text="step {i} " + odd, start=20), "\r")
    # a JSON log with the odd characters in its first line (format detection) and later
    js = tmp_path / "app.jsonl"
    js.write_text("\n".join(json.dumps({"msg": f"m{i} \u2028\u2029\u0085", "level": "info"},
                                       ensure_ascii=False) for i in range(3)) + "\n")
    result = cli("ingest", "logs", plain, crlf, cr, "--format", APP, "--no-redact", "--json")
    auto = cli("ingest", "logs", js, "--no-redact", "--json")
    for r in (result, auto):
        assert r.exit_code == 0, r.output
        assert_books_balance(r)
    assert {n: (f["n_read"], f["n_loaded"]) for n, f in by_name(result).items()} == \
        {"app.log": (3, 3), "crlf.log": (3, 3), "cr.log": (3, 3)}
    (f,) = summary(auto)["files"]
    assert (f["format"], f["n_read"], f["n_loaded"]) == ("jsonl", 3, 3)
    assert query("SELECT message FROM log_lines ORDER BY ingest_run, line_no") == \
        [(f"request {i} {odd}",) for i in range(3)] + [(f"{odd} job {i}",) for i in range(10, 13)] \
        + [(f"step {i} {odd}",) for i in range(20, 23)] + \
        [(f"m{i} \u2028\u2029\u0085",) for i in range(3)]


@pytest.fixture
def small_line_limit(monkeypatch):
    """A 1 MiB line limit, so that a file of a few MB exercises what a 64 MiB one would."""
    monkeypatch.setattr(log_reader, "MAX_LINE_BYTES", 1 << 20)
    return 1 << 20


def test_a_line_longer_than_the_maximum_is_one_record_kept_to_the_maximum(cli, query, tmp_path,
                                                                          small_line_limit):
    head = "2024-05-01 10:00:01,000 INFO api.Server: blob "
    long_line = head + "é" + "A" * (3 * small_line_limit)
    lines = app_lines(1) + [long_line] + app_lines(1, start=2)
    path = write_lines(tmp_path / "long.log", lines)
    # a file that is one long line with no newline, cut in the middle of a 2-byte character
    no_newline = tmp_path / "one-line.log"
    wide_line = "2024-05-01 10:00:01,000 INFO api.Server: blob! " + "é" * small_line_limit
    no_newline.write_text(wide_line)
    good = write_lines(tmp_path / "good.log", app_lines(3, start=10))
    result = cli("ingest", "logs", path, no_newline, good, "--format", APP, "--no-redact",
                 "--json")
    assert result.exit_code == 0
    files = by_name(result)
    assert [(files[n]["n_read"], files[n]["n_loaded"], files[n]["n_flagged"])
            for n in ("long.log", "one-line.log", "good.log")] == [(3, 3, 1), (1, 1, 1), (3, 3, 0)]
    assert_books_balance(result)
    rows = query("SELECT line_no, flag, strlen(message) FROM log_lines WHERE file = ? "
                 "ORDER BY line_no", [str(path)])
    kept = small_line_limit - len("2024-05-01 10:00:01,000 INFO api.Server: ")  # the message
    assert rows == [(1, None, len("request 0 done")), (2, "truncated", kept),
                    (3, None, len("request 2 done"))]
    (flag, message), = query("SELECT flag, message FROM log_lines WHERE file = ?",
                             [str(no_newline)])
    assert flag == "truncated" and message.startswith("blob! éé") and message.endswith("é")
    assert len(message.encode()) == kept - 1 and "\ufffd" not in message  # a whole character


def test_a_json_line_longer_than_the_maximum_is_quarantined_once_with_its_length(
        cli, query, tmp_path, small_line_limit):
    big = json.dumps({"msg": "x" * (3 * small_line_limit), "level": "info"})
    path = tmp_path / "app.jsonl"
    path.write_text("\n".join([json.dumps({"msg": "one", "level": "info"}), big,
                               json.dumps({"msg": "three", "level": "info"})]) + "\n")
    good = write_lines(tmp_path / "good.log", app_lines(2))
    result = cli("ingest", "logs", path, good, "--no-redact", "--json")
    assert result.exit_code == 0
    f = by_name(result)["app.jsonl"]
    assert (f["n_read"], f["n_loaded"], f["n_quarantined"]) == (3, 2, 1)
    assert by_name(result)["good.log"]["n_loaded"] == 2
    (record_no, reason), = query("SELECT record_no, reason FROM quarantine")
    assert record_no == 2
    assert reason.startswith(f"record too long: {len(big)} bytes, over the maximum of "
                             f"{small_line_limit} ")


# --- 3. a bad file never takes the command down -----------------------------------------

def test_deeply_nested_json_fails_one_record_not_the_command(cli, query, tmp_path):
    deep_array = tmp_path / "deep.json"
    deep_array.write_text("[" * 100_000 + "]" * 100_000)
    tickets = [{"id": 1, "subject": "a", "description": "x"},
               {"id": 2, "subject": "b", "description": "y", "custom": "@"},
               {"id": 3, "subject": "c", "description": "z"}]
    field = tmp_path / "deep-field.json"
    field.write_text(json.dumps(tickets).replace('"@"', "[" * 5000 + "]" * 5000))
    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text(json.dumps({"id": 7, "subject": "ok"}) + "\n" +
                          '{"id": 8, "x": ' + "[" * 5000 + "]" * 5000 + "}\n")
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n100,hi,there\n")
    result = cli("ingest", "tickets", deep_array, field, deep_lines, good, "--no-redact", "--json",
                 "--allow-empty")  # deep.json's only record is quarantined
    assert result.exit_code == 0, result.output
    files = by_name(result)
    assert [(files[n]["n_read"], files[n]["n_loaded"], files[n]["n_quarantined"]) for n in
            ("deep.json", "deep-field.json", "deep.jsonl", "good.csv")] == \
        [(1, 0, 1), (3, 2, 1), (2, 1, 1), (1, 1, 0)]
    assert_books_balance(result)
    assert query("SELECT source_id FROM tickets ORDER BY ingest_run, source_id") == \
        [("1",), ("3",), ("7",), ("100",)]
    reasons = query("SELECT DISTINCT reason FROM quarantine")
    assert len(reasons) == 1 and reasons[0][0].startswith("nested too deeply")


def test_nested_json_log_lines_do_not_stop_detection(cli, query, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n" +
                    "\n".join(json.dumps({"msg": f"m{i}", "level": "info"}) for i in range(3)) + "\n")
    good = write_lines(tmp_path / "good.log", app_lines(2))
    result = cli("ingest", "logs", path, good, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    assert_books_balance(result)
    assert by_name(result)["good.log"]["n_loaded"] == 2
    assert by_name(result)["deep.jsonl"]["n_read"] == 4


def test_comment_bodies_that_are_objects_load_as_their_json_text(cli, query, tmp_path):
    # Jira Cloud's REST API v3 writes comment bodies as documents (ADF), not text; a
    # Zendesk export may carry an object too. Both used to end the command (polars error).
    adf = {"type": "doc", "version": 1,
           "content": [{"type": "paragraph", "content": [{"type": "text", "text": "fixed"}]}]}
    jira = tmp_path / "jira.json"
    jira.write_text(json.dumps({"issues": [
        {"key": "P-1", "fields": {"summary": "s", "description": "d", "reporter": "ann",
                                  "comment": {"comments": [{"author": "bob", "body": adf}]}}},
        {"key": "P-2", "fields": {"summary": "t", "comment": [{"author": "bob", "body": "ok"},
                                                              "not a comment"]}}]}))
    zendesk = tmp_path / "zendesk.json"
    zendesk.write_text(json.dumps({"tickets": [
        {"id": 7, "subject": "z", "requester_id": 1, "description": "help",
         "comments": [{"author_id": 2, "body": {"html": "<p>done</p>"}}]}]}))
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n100,hi,there\n")
    result = cli("ingest", "tickets", jira, zendesk, good, "--no-redact", "--json")
    assert result.exit_code == 0, result.output
    assert_books_balance(result)
    assert {n: (f["format"], f["n_loaded"]) for n, f in by_name(result).items()} == \
        {"jira.json": ("jira-json", 2), "zendesk.json": ("zendesk", 1), "good.csv": ("csv", 1)}
    texts = dict(query("SELECT ticket_id, list(text ORDER BY seq) FROM ticket_messages "
                       "GROUP BY ticket_id"))
    assert texts == {"jira:P-1": ["d", json.dumps(adf, sort_keys=True)], "jira:P-2": ["ok"],
                     "zendesk:7": [json.dumps({"html": "<p>done</p>"})]}


def without_file_permission_override(*args: str, env: dict | None = None):
    """Run rlforge in a child process that keeps root's uid but not its power to read any
    file (the DAC override capabilities), so that mode 000 means what it says."""
    setpriv = shutil.which("setpriv")
    prefix = ([setpriv, "--bounding-set=-dac_override,-dac_read_search"]
              if os.geteuid() == 0 and setpriv else [])
    if os.geteuid() == 0 and not prefix:
        pytest.skip("root reads every file and setpriv is missing to drop that")
    return subprocess.run([*prefix, sys.executable, "-m", "rlforge", *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)


def test_an_unreadable_file_fails_alone_with_its_reason(query, tmp_path):
    locked = write_lines(tmp_path / "locked.log", app_lines(3))
    locked.chmod(0)
    hidden_dir = tmp_path / "closed"
    hidden_dir.mkdir()
    write_lines(hidden_dir / "inner.log", app_lines(3))
    hidden_dir.chmod(0)
    good = write_lines(tmp_path / "good.log", app_lines(5))
    locked_csv = tmp_path / "locked.csv"
    locked_csv.write_text("id,subject\n1,a\n")
    locked_csv.chmod(0)
    good_csv = tmp_path / "good.csv"
    good_csv.write_text("id,subject\n2,b\n")
    try:
        logs = without_file_permission_override("ingest", "logs", str(locked),
                                                str(hidden_dir / "inner.log"), str(good),
                                                "--no-redact", "--json")
        tickets = without_file_permission_override("ingest", "tickets", str(locked_csv),
                                                   str(good_csv), "--no-redact", "--json")
    finally:
        hidden_dir.chmod(0o755)
    for result, bad in ((logs, ["locked.log", "inner.log"]), (tickets, ["locked.csv"])):
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        errors = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(errors) == len(bad), errors
        for name, line in zip(bad, errors):
            assert name in line and "permission denied" in line
        assert json.loads(result.stdout)["failed"] == len(bad)
    assert query("SELECT path, status FROM ingest_runs ORDER BY run_id") == [
        (str(locked), "failed"), (str(hidden_dir / "inner.log"), "failed"), (str(good), "ok"),
        (str(locked_csv), "failed"), (str(good_csv), "ok")]
    assert query("SELECT count(*) FROM log_records") == [(5,)]
    assert query("SELECT source_id FROM tickets") == [("2",)]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=Dev", "-c", "user.email=dev@x.org",
                    *args], check=True, capture_output=True)


def make_repo(path: Path, n: int = 2) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for i in range(n):
        (path / "f.txt").write_text(f"{i}\n")
        git(path, "add", "f.txt")
        git(path, "commit", "-q", "-m", f"change {i}")
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_blob_missing_from_the_clone_loses_no_commit(query, tmp_path, workers, monkeypatch):
    """A damaged or partial clone: git cannot diff the commit whose blob is gone, which
    used to fail the whole repository (loaded 0). Now every commit loads, that one
    without line counts; the others keep theirs."""
    from rlforge import db
    from rlforge.ingest import commits as commits_lib

    repo = make_repo(tmp_path / "repo", n=5)
    blob = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD~2:f.txt"], check=True,
                          capture_output=True, text=True).stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    monkeypatch.setattr(commits_lib, "PARALLEL_MIN_COMMITS", 1)  # the split path too
    monkeypatch.setattr(commits_lib.os, "cpu_count", lambda: workers)
    con = db.connect(tmp_path / "rlforge.duckdb")
    result = commits_lib.ingest_repo(con, repo)
    con.close()
    assert result.status == "ok" and result.n_loaded == 5, result.error
    rows = query("SELECT c.subject, f.lines_added FROM commits c JOIN commit_files f USING (sha) "
                 "ORDER BY c.authored_at, c.subject")
    counted = {subject: added for subject, added in rows}
    assert len(counted) == 5
    # the blob is the new side of "change 2" and the old side of "change 3"
    assert counted["change 2"] is None and counted["change 3"] is None
    assert counted["change 0"] == 1 and counted["change 4"] == 1


def test_a_path_that_is_not_a_repository_fails_alone(cli, query, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    repo = make_repo(tmp_path / "repo")
    result = cli("ingest", "commits", plain, tmp_path / "missing", repo, "--no-redact", "--json")
    assert_fails_alone(result, query, "plain", "not a git repository")
    assert_fails_alone(result, query, "missing", "no such directory")
    files = by_name(result)
    assert files["repo"]["status"] == "ok" and files["repo"]["n_loaded"] == 2
    assert query("SELECT count(*) FROM commits") == [(2,)]


def test_an_unexpected_error_fails_its_file_with_a_traceback_and_the_others_load(
        cli, query, tmp_path, monkeypatch):
    # A bug (an exception no rule foresees) in one file's parsing, inside its transaction
    # (tickets), on the parser thread of a log ingest, and before a repository's (commits).
    from rlforge.ingest import commits as commits_lib
    from rlforge.ingest import ticket_formats as tf

    def buggy(real, marker: str):
        def call(*args, **kwargs):
            if any(marker in str(a) for a in args):
                raise KeyError(f"simulated bug at {marker}")
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(tf, "iter_jsonl_records", buggy(tf.iter_jsonl_records, "BUG"))
    monkeypatch.setattr(log_records, "assemble", buggy(log_records.assemble, "BUG"))
    monkeypatch.setattr(commits_lib, "repo_root", buggy(commits_lib.repo_root, "buggy"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": 1, "subject": "fine"}) + "\n" +
                   json.dumps({"id": 2, "subject": "BUG"}) + "\n")
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n100,hi,there\n")
    bad_log = write_lines(tmp_path / "bad.log", app_lines(3) + ["BUG"])
    good_log = write_lines(tmp_path / "good.log", app_lines(2, start=10))
    tickets = cli("ingest", "tickets", bad, good, "--no-redact", "--json")
    logs = cli("ingest", "logs", bad_log, good_log, "--format", APP, "--no-redact", "--json")
    commits = cli("ingest", "commits", make_repo(tmp_path / "buggy"),
                  make_repo(tmp_path / "repo"), "--no-redact", "--json")
    for result, name, good_name in ((tickets, "bad.jsonl", "good.csv"),
                                    (logs, "bad.log", "good.log"), (commits, "buggy", "repo")):
        assert result.exit_code == 1
        # the traceback of the bug, for that file, then its one error line
        assert "Traceback (most recent call last)" in result.stderr
        assert "KeyError: 'simulated bug at " in result.stderr
        errors = [e for e in error_lines(result) if e.startswith("error:")]
        assert len(errors) == 1 and name in errors[0], errors
        assert "unexpected error" in errors[0] and "KeyError" in errors[0]
        files = by_name(result)
        assert files[name]["status"] == "failed" and "KeyError" in files[name]["error"]
        assert files[good_name]["status"] == "ok" and files[good_name]["n_loaded"] > 0
        assert summary(result)["failed"] == 1
        rows = query("SELECT status, error FROM ingest_runs WHERE path = ?",
                     [str(tmp_path / name)])
        assert len(rows) == 1 and rows[0][0] == "failed", rows
        assert "KeyError" in rows[0][1] and "simulated bug" in rows[0][1]
    # the failed files were rolled back; the good ones loaded
    assert query("SELECT source_id FROM tickets") == [("100",)]
    assert query("SELECT file, count(*) FROM log_lines GROUP BY file") == [(str(good_log), 2)]
    assert query("SELECT DISTINCT repo FROM commits") == [(str(tmp_path / "repo"),)]


# --- 4. a full disk --------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs mounted for the test (root only); unmounted at the end."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or 'mount failed'}); "
                    "the disk-full test needs root and a kernel that allows mounts")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path) -> Path:
    """Take every byte left on a disk (one file of zeros, written until ENOSPC)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as fh:  # unbuffered: nothing left to write at close
        try:
            while fh.write(b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def stored(db_path: Path) -> tuple[list, int]:
    """The database as it is on disk, write-ahead log and all: (ingest_runs rows as
    (file name, status, error), count of log records)."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        runs = con.execute("SELECT path, status, error FROM ingest_runs ORDER BY run_id").fetchall()
        records = con.execute("SELECT count(*) FROM log_records").fetchall()[0][0]
    finally:
        con.close()
    return [(Path(p).name, s, e) for p, s, e in runs], records


def test_a_full_disk_fails_the_files_that_do_not_fit_and_the_next_ingest_is_exact(
        cli, tmp_path, small_disk, monkeypatch):
    db_path = small_disk / "rlforge.duckdb"
    monkeypatch.setenv("RLFORGE_DB", str(db_path))
    first = write_lines(tmp_path / "first.log", app_lines(20))
    # ~6 MB of distinct messages: more than the 3 MB disk holds
    big = write_lines(tmp_path / "big.log",
                      app_lines(60_000, text="request " + "{i} " + uuid.uuid4().hex + " token {i}x{i}"))
    big2 = write_lines(tmp_path / "big2.log",
                       app_lines(60_000, text="job {i} " + uuid.uuid4().hex + " step {i}y{i}"))
    last = write_lines(tmp_path / "last.log", app_lines(20, start=100))
    paths = [first, big, big2, last]
    result = cli("ingest", "logs", *paths, "--no-redact", "--json")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    files = by_name(result)
    assert files["first.log"]["status"] == "ok"
    for name in ("big.log", "big2.log"):
        assert files[name]["status"] == "failed"
        assert "no space left on device" in files[name]["error"]
    assert all(f["status"] == "ok" or "no space left" in f["error"] for f in files.values())
    errors = error_lines(result)
    assert len(errors) == summary(result)["failed"]
    assert all("no space left on device" in e for e in errors)
    # the database is usable: it opens, and what it holds is exactly the files that loaded,
    # and a failed run for each file that did not, with the reason
    loaded = {n for n, f in files.items() if f["status"] == "ok"}
    runs, records = stored(db_path)
    assert {n for n, s, _ in runs if s == "ok"} == loaded
    assert len(runs) == len(paths)
    for name, status, error in runs:
        assert status == "ok" or (name not in loaded and status == "failed"
                                  and error.startswith("no space left on device")), runs
    assert records == sum(files[n]["n_loaded"] for n in loaded)
    # an ingest while the disk is still full (not one byte left) fails cleanly again
    filler = fill(small_disk)
    late = write_lines(tmp_path / "late.log", app_lines(5, start=300))
    again = cli("ingest", "logs", late, "--no-redact", "--json")
    assert again.exit_code == 1
    assert "Traceback" not in again.output
    (error,) = error_lines(again)
    assert "late.log" in error and "no space left on device" in error, error
    assert summary(again)["failed"] == 1
    assert stored(db_path) == (runs, records)  # still usable, and nothing half-written
    # with space again (the same database, where it is: the tmpfs grown), the next ingest
    # is exact
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    paths.append(late)
    exact = cli("ingest", "logs", *paths, "--no-redact", "--json")
    assert exact.exit_code == 0, exact.stderr
    files2 = by_name(exact)
    assert_books_balance(exact)
    for name, f in files2.items():
        expected = (0, f["n_read"]) if name in loaded else (f["n_read"], 0)
        assert (f["n_loaded"], f["n_duplicates"]) == expected, name
    runs2, records2 = stored(db_path)
    assert records2 == 20 + 60_000 + 60_000 + 20 + 5
    assert runs2[:len(runs)] == runs
    assert [(n, s) for n, s, _ in runs2[len(runs):]] == [(p.name, "ok") for p in paths]


# --- 5. quarantine is keyed like loaded rows --------------------------------------------

def test_re_ingesting_adds_no_quarantine_rows(cli, query, tmp_path):
    log = tmp_path / "mixed.log"
    log.write_text("\n".join(app_lines(3) + ["### not a log line ###", "%%% nor this %%%"]) + "\n")
    csv = tmp_path / "bad-rows.csv"
    csv.write_text('id,subject,description\n1,a,b\n2,"unterminated,c\n')
    dup_ids = tmp_path / "conflict.json"
    dup_ids.write_text(json.dumps([{"id": 5, "subject": "x"}, {"id": 5, "subject": "y"}]))
    good = write_lines(tmp_path / "good.log", app_lines(2, start=50))
    counts = []
    for _ in range(2):
        logs = cli("ingest", "logs", log, good, "--format", APP, "--no-redact", "--json")
        tickets = cli("ingest", "tickets", csv, dup_ids, "--no-redact", "--json")
        assert_books_balance(logs)
        assert_books_balance(tickets)
        counts.append((query("SELECT count(*) FROM quarantine")[0][0],
                       {n: (f["n_quarantined"], f["n_duplicates"]) for n, f in
                        {**by_name(logs), **by_name(tickets)}.items()}))
    (first_q, first), (second_q, second) = counts
    assert first_q == second_q == 4
    assert first == {"mixed.log": (2, 0), "good.log": (0, 0), "bad-rows.csv": (1, 0),
                     "conflict.json": (1, 0)}
    assert second == {"mixed.log": (0, 5), "good.log": (0, 2), "bad-rows.csv": (0, 2),
                      "conflict.json": (0, 2)}


# --- 6. NUL bytes and UTF-16/32 ----------------------------------------------------------

def test_nul_bytes_follow_one_rule_wherever_they_are(cli, query, tmp_path):
    lines = app_lines(400)
    lines[1] = lines[1] + " early\x00nul"      # within the first 8 KB
    lines[399] = lines[399] + " late\x00nul"   # well after it
    log = tmp_path / "nul.log"
    log.write_bytes(("\n".join(lines) + "\n").encode())
    assert log.stat().st_size > 2 * 8192
    binary = tmp_path / "binary.log"
    binary.write_bytes(bytes(range(256)) * 64)
    good = write_lines(tmp_path / "good.log", app_lines(3, start=500))
    result = cli("ingest", "logs", log, binary, good, "--format", APP, "--no-redact", "--json")
    assert_fails_alone(result, query, "binary.log", "binary file")
    files = by_name(result)
    assert (files["nul.log"]["n_loaded"], files["nul.log"]["n_flagged"]) == (400, 2)
    assert files["good.log"]["n_loaded"] == 3
    assert query("SELECT line_no, flag, message FROM log_lines WHERE flag IS NOT NULL "
                 "ORDER BY line_no") == [(2, "nul_bytes", "request 1 done early\ufffdnul"),
                                         (400, "nul_bytes", "request 399 done late\ufffdnul")]
    csv = tmp_path / "nul.csv"
    csv.write_bytes(b"id,subject,description\n1,a\x00b,c\n" +
                    b"".join(b"%d,s%d,d%d\n" % (i, i, i) for i in range(2, 500)) + b"500,x,late\x00\n")
    js = tmp_path / "nul.json"
    js.write_bytes(b'[{"id": 1, "subject": "a\x00b"}, {"id": 2, "subject": "fine"}]')
    tickets = cli("ingest", "tickets", csv, js, "--no-redact", "--json")
    assert tickets.exit_code == 0, tickets.output
    assert query("SELECT file, source_id, subject, body, flags FROM tickets "
                 "WHERE len(flags) > 0 ORDER BY file, source_id") == [
        (str(csv), "1", "a\ufffdb", "c", ["nul_bytes"]),
        (str(csv), "500", "x", "late\ufffd", ["nul_bytes"]),
        (str(js), "1", "a\ufffdb", None, ["nul_bytes"])]


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_a_bom_are_decoded(cli, query, tmp_path, codec):
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
           "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}[codec]
    lines = app_lines(5, text="café {i} naïve")
    log = tmp_path / "wide.log"
    log.write_bytes(bom + ("\r\n".join(lines) + "\r\n").encode(codec))
    csv = tmp_path / "wide.csv"
    csv.write_bytes(bom + "id,subject,description\n1,héllo,wörld\n2,b,c\n".encode(codec))
    js = tmp_path / "wide.json"
    js.write_bytes(bom + json.dumps([{"id": 3, "subject": "zürich"}], ensure_ascii=False)
                   .encode(codec))
    good = write_lines(tmp_path / "good.log", app_lines(2, start=9))
    logs = cli("ingest", "logs", log, good, "--format", APP, "--no-redact", "--json")
    assert logs.exit_code == 0, logs.output
    assert by_name(logs)["wide.log"]["line_endings"] == "CRLF"
    assert query("SELECT message FROM log_lines WHERE file = ? ORDER BY line_no", [str(log)]) == \
        [(f"café {i} naïve",) for i in range(5)]
    tickets = cli("ingest", "tickets", csv, js, "--no-redact", "--json")
    assert tickets.exit_code == 0, tickets.output
    assert query("SELECT source_id, subject FROM tickets ORDER BY source_id") == \
        [("1", "héllo"), ("2", "b"), ("3", "zürich")]


def test_utf16_without_a_bom_is_refused_with_a_message_that_says_so(cli, query, tmp_path):
    wide = tmp_path / "wide.log"
    wide.write_bytes(("\n".join(app_lines(50)) + "\n").encode("utf-16-le"))
    good = write_lines(tmp_path / "good.log", app_lines(2))
    result = cli("ingest", "logs", wide, good, "--no-redact", "--json")
    assert_fails_alone(result, query, "wide.log", "UTF-16")
    assert by_name(result)["good.log"]["n_loaded"] == 2


# --- 7. status while an ingest holds the database -----------------------------------------

def test_status_during_an_ingest_says_which_ingest_holds_the_database_since_when(tmp_path):
    repo = make_repo(tmp_path / "repo")
    fake = tmp_path / "bin"
    fake.mkdir()
    marker, stop = tmp_path / "git-log-started", tmp_path / "stop"
    # a git whose `log` waits for the test: the ingest holds the database meanwhile
    (fake / "git").write_text(
        f"#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = log ]; then touch {marker}; "
        f"while [ ! -e {stop} ]; do sleep 0.05; done; fi; done\n"
        f"exec {shutil.which('git')} \"$@\"\n")
    (fake / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    ingest = subprocess.Popen([sys.executable, "-m", "rlforge", "ingest", "commits", str(repo),
                               "-q"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the ingest never reached git log"
        status = subprocess.run([sys.executable, "-m", "rlforge", "status"], capture_output=True,
                                text=True, timeout=60)
    finally:
        stop.touch()
        ingest.kill()
        ingest.wait()
    assert status.returncode == 1
    assert "Traceback" not in status.stderr
    message = status.stderr.strip()
    assert "an ingest holds it" in message and "rlforge ingest commits" in message
    assert f"PID {ingest.pid}" in message and "running since 20" in message
    assert len(message.splitlines()) == 1
