"""`rlforge ingest tickets`: every format, the books balance, bad input handled."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from paths import SAMPLE_DATA, SHARED_DATA

BITEXT = SHARED_DATA / "tickets" / "bitext" / "bitext_customer_support_sample.csv"
BAD = Path(__file__).parent / "data" / "bad_tickets"
BITEXT_MAP = ["--map", "body=instruction", "--map", "resolution=response",
              "--map", "category=category", "--map", "intent=intent"]


def summary(result) -> dict:
    """The --json summary printed by the command."""
    text = result.output
    return json.loads(text[text.index("{"): text.rindex("}") + 1])


def file_result(result, i: int = 0) -> dict:
    return summary(result)["files"][i]


def test_bitext_loads_4514_then_reingest_adds_zero(cli, query):
    first = cli("ingest", "tickets", BITEXT, *BITEXT_MAP, "--no-redact", "--json")
    assert first.exit_code == 0, first.output
    f = file_result(first)
    assert (f["n_read"], f["n_loaded"], f["n_duplicates"], f["n_quarantined"]) == (4514, 4514, 0, 0)
    assert query("SELECT count(*), count(DISTINCT category), count(DISTINCT intent) FROM tickets") \
        == [(4514, 11, 27)]
    second = cli("ingest", "tickets", BITEXT, *BITEXT_MAP, "--no-redact", "--json")
    f2 = file_result(second)
    assert (f2["n_read"], f2["n_loaded"], f2["n_duplicates"]) == (4514, 0, 4514)
    assert query("SELECT count(*) FROM tickets") == [(4514,)]
    runs = query("SELECT n_read, n_loaded, n_duplicates, status, sha256 IS NOT NULL "
                 "FROM ingest_runs ORDER BY run_id")
    assert runs == [(4514, 4514, 0, "ok", True), (4514, 0, 4514, "ok", True)]


def test_unmapped_columns_land_in_extra(cli, query):
    cli("ingest", "tickets", BITEXT, *BITEXT_MAP, "--no-redact", "-q")
    extra = json.loads(query("SELECT extra FROM tickets ORDER BY record_no LIMIT 1")[0][0])
    assert set(extra) == {"context", "role", "entity_type", "entity_value", "start_offset",
                          "end_offset"}
    assert query("SELECT tags FROM tickets ORDER BY record_no LIMIT 1") == [(["BIL"],)]


def test_map_to_unknown_field_or_column_is_a_user_error(cli):
    bad_field = cli("ingest", "tickets", BITEXT, "--map", "colour=instruction", "--no-redact")
    assert bad_field.exit_code == 1
    assert "unknown field" in bad_field.output and "subject" in bad_field.output
    bad_col = cli("ingest", "tickets", BITEXT, "--map", "body=nope", "--no-redact")
    assert bad_col.exit_code == 1 and "no column 'nope'" in bad_col.output


def test_gzip_is_read_transparently(cli, tmp_path, query):
    gz = tmp_path / "bitext.csv.gz"
    gz.write_bytes(gzip.compress(BITEXT.read_bytes()))
    result = cli("ingest", "tickets", gz, *BITEXT_MAP, "--no-redact", "--json")
    assert file_result(result)["n_loaded"] == 4514


def test_jira_rest_json_with_real_pages(cli, query):
    pages = sorted((SHARED_DATA / "formats" / "tickets" / "perceval_jira_rest").glob("jira_issues_page_*.json"))
    result = cli("ingest", "tickets", *pages, "--no-redact", "--json")
    assert result.exit_code == 0
    s = summary(result)
    assert s["totals"]["n_loaded"] == 3 and all(f["format"] == "jira-json" for f in s["files"])
    rows = query("SELECT ticket_id, subject, category, priority, status, created_at FROM tickets "
                 "ORDER BY ticket_id")
    assert all(r[0].startswith("jira:") for r in rows)
    assert rows[0][2] == "extRequest" and rows[0][3] == "Major" and rows[0][4] == "Open"
    assert rows[0][5] is not None


def test_jira_comment_page_alone_is_refused_with_a_reason(cli, query):
    page = SHARED_DATA / "formats" / "tickets" / "perceval_jira_rest" / "jira_comments_issue_page_1.json"
    result = cli("ingest", "tickets", page, "--format", "jira-json", "--no-redact")
    assert result.exit_code == 1
    assert "comment page" in result.output
    assert query("SELECT count(*) FROM tickets") == [(0,)]
    assert query("SELECT status FROM ingest_runs") == [("failed",)]


def test_github_issues_json_maps_by_synonyms(cli, query):
    path = SHARED_DATA / "formats" / "tickets" / "github_to_sqlite_issues" / "issues.json"
    result = cli("ingest", "tickets", path, "--no-redact", "--json")
    assert file_result(result)["n_loaded"] == 2
    subject, status, extra = query("SELECT subject, status, extra FROM tickets ORDER BY record_no")[0]
    assert subject and status in ("open", "closed")
    assert "html_url" in json.loads(extra)


# --- the bad-input corpus -------------------------------------------------------------

def test_malformed_csv_rows_are_quarantined_with_line_and_reason(cli, query):
    result = cli("ingest", "tickets", BAD / "malformed.csv", "--no-redact", "--json")
    f = file_result(result)
    assert f["reconciles"] and (f["n_read"], f["n_loaded"], f["n_quarantined"]) == (6, 3, 3)
    q = query("SELECT record_no, reason FROM quarantine ORDER BY record_no")
    assert [r[0] for r in q] == [3, 5, 7]
    assert "too many columns" in q[0][1] and "missing columns" in q[1][1] and "quote" in q[2][1]
    assert query("SELECT body FROM tickets WHERE source_id = '3'") == [("Cannot log in\nsince the update",)]


def test_truncated_json_keeps_what_parsed_and_quarantines_the_tail(cli, query):
    f = file_result(cli("ingest", "tickets", BAD / "truncated.json", "--no-redact", "--json"))
    assert f["reconciles"] and (f["n_loaded"], f["n_quarantined"]) == (3, 1)
    assert "truncated" in query("SELECT reason FROM quarantine")[0][0]


def test_invalid_utf8_is_replaced_and_flagged_not_dropped(cli, query):
    f = file_result(cli("ingest", "tickets", BAD / "invalid_utf8.csv", "--no-redact", "--json"))
    assert (f["n_loaded"], f["n_flagged"], f["n_quarantined"]) == (2, 1, 0)
    subject, flags = query("SELECT subject, flags FROM tickets WHERE source_id = '1'")[0]
    assert "\ufffd" in subject and flags == ["invalid_utf8"]


@pytest.mark.parametrize("name,problem", [("binary.csv", "binary file"),
                                          ("truncated.csv.gz", "truncated gzip")])
def test_unreadable_file_fails_alone_and_writes_nothing(cli, query, name, problem, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("id,subject,description\n1,hello,world\n")
    result = cli("ingest", "tickets", BAD / name, good, "--no-redact", "--json")
    assert result.exit_code == 1
    err_lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(err_lines) == 1 and name in err_lines[0] and problem in result.output
    assert query("SELECT count(*) FROM tickets") == [(1,)]
    assert query("SELECT count(*) FROM quarantine") == [(0,)]
    assert query("SELECT status FROM ingest_runs ORDER BY run_id") == [("failed",), ("ok",)]


def test_empty_file_is_read_as_zero_records(cli, query):
    result = cli("ingest", "tickets", BAD / "empty.csv", "--no-redact")
    assert result.exit_code == 1 and "nothing loaded" in result.stderr  # unless asked for
    result = cli("ingest", "tickets", BAD / "empty.csv", "--no-redact", "--json", "--allow-empty")
    assert result.exit_code == 0
    assert file_result(result)["n_read"] == 0
    assert query("SELECT n_read, status FROM ingest_runs") == [(0, "ok")] * 2


def test_same_id_with_different_content_is_quarantined_or_replaced(cli, query, tmp_path):
    path = BAD / "same_id_different_content.jsonl"
    f = file_result(cli("ingest", "tickets", path, "--no-redact", "--json"))
    assert f["reconciles"]
    assert (f["n_read"], f["n_loaded"], f["n_duplicates"], f["n_quarantined"]) == (5, 2, 1, 2)
    reasons = sorted(r[0].split(":")[0] for r in query("SELECT reason FROM quarantine"))
    assert reasons == ["conflicting id", "invalid JSON line"]
    # A later export with a newer version of T-2: quarantined by default, replaced on request.
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"id": "T-2", "subject": "Invoice", "description": "Sent it",
                                 "category": "billing"}) + "\n")
    f = file_result(cli("ingest", "tickets", newer, "--no-redact", "--json"))
    assert f["n_quarantined"] == 1
    f = file_result(cli("ingest", "tickets", newer, "--no-redact", "--json", "--on-conflict", "replace"))
    assert f["n_loaded"] == 1
    assert query("SELECT body FROM tickets WHERE source_id = 'T-2'") == [("Sent it",)]


def test_ten_megabyte_single_field_loads(cli, query, tmp_path):
    big = tmp_path / "big_field.csv"
    body = "x" * (10 * 1024 * 1024)
    big.write_text(f'id,subject,description\n1,huge,"{body}"\n2,small,"ok"\n')
    f = file_result(cli("ingest", "tickets", big, "--no-redact", "--json"))
    assert (f["n_read"], f["n_loaded"]) == (2, 2)
    assert query("SELECT length(body) FROM tickets WHERE source_id = '1'") == [(len(body),)]


def test_missing_file_is_one_error_line(cli, tmp_path):
    result = cli("ingest", "tickets", tmp_path / "nope.csv", "--no-redact")
    assert result.exit_code == 1
    assert "nope.csv: no such file" in result.output


def test_declared_format_that_does_not_match_fails_the_file(cli, query):
    result = cli("ingest", "tickets", BITEXT, "--format", "json", "--no-redact", "--json")
    f = file_result(result)
    # Not JSON at all: the one record is quarantined with the reason, nothing else written.
    assert f["reconciles"] and f["n_loaded"] == 0


def test_copy_of_file_under_other_name_is_all_duplicates(cli, tmp_path):
    copy = tmp_path / "copy.csv"
    shutil.copy(BAD / "malformed.csv", copy)
    cli("ingest", "tickets", BAD / "malformed.csv", "--no-redact", "-q")
    f = file_result(cli("ingest", "tickets", copy, "--no-redact", "--json"))
    assert (f["n_loaded"], f["n_duplicates"], f["n_quarantined"]) == (0, 3, 3)


# --- the project's own exports (sample_data) -------------------------------------------

SAMPLE_TICKETS = SAMPLE_DATA / "tickets"


def test_zendesk_export_with_comments_and_custom_field_category(cli, query):
    result = cli("ingest", "tickets", SAMPLE_TICKETS / "zendesk_export.json",
                 "--map", "category=custom_fields.360041872211", "--no-redact", "--json")
    f = file_result(result)
    assert f["format"] == "zendesk" and f["reconciles"] and f["n_loaded"] == f["n_read"] > 0
    assert query("SELECT count(*) FROM tickets WHERE category IN ('question', 'incident')") == [(0,)]
    # The conversation: the first message is the requester's, and the resolution is the
    # last public agent message.
    first_roles = query("SELECT DISTINCT role FROM ticket_messages WHERE seq = 0")
    assert first_roles == [("customer",)]
    mismatched = query("""
        SELECT count(*) FROM tickets t WHERE resolution IS DISTINCT FROM (
            SELECT last(m.text ORDER BY m.seq) FROM ticket_messages m
            WHERE m.ticket_id = t.ticket_id AND m.role = 'agent' AND m.is_public)""")
    assert mismatched == [(0,)]


def test_jira_csv_export_repeated_labels_and_comments(cli, query):
    result = cli("ingest", "tickets", SAMPLE_TICKETS / "jira_export.csv", "--no-redact", "--json")
    f = file_result(result)
    assert f["format"] == "jira-csv" and f["reconciles"] and f["n_loaded"] == f["n_read"] > 0
    row = query("SELECT ticket_id, created_at, tags, extra FROM tickets ORDER BY record_no LIMIT 1")[0]
    assert row[0].startswith("jira:") and row[1] is not None and len(row[2]) >= 2
    assert "Resolution" in json.loads(row[3])
    roles = query("SELECT role, count(*) FROM ticket_messages GROUP BY ALL ORDER BY ALL")
    assert dict(roles).keys() == {"agent", "customer"}
    assert query("SELECT DISTINCT role FROM ticket_messages WHERE seq = 0") == [("customer",)]


def test_all_three_sample_exports_in_one_command(cli, query):
    paths = [SAMPLE_TICKETS / n for n in ("tickets.csv", "zendesk_export.json", "jira_export.csv")]
    result = cli("ingest", "tickets", *paths, "--no-redact", "--json")
    s = summary(result)
    assert result.exit_code == 0 and s["failed"] == 0
    assert s["totals"]["n_read"] == s["totals"]["n_loaded"] == query("SELECT count(*) FROM tickets")[0][0]
    assert [f["format"] for f in s["files"]] == ["csv", "zendesk", "jira-csv"]


# --- redaction before anything is written --------------------------------------------

def test_redaction_on_by_default_and_consistent_across_ingests(cli, query):
    paths = [SAMPLE_TICKETS / n for n in ("tickets.csv", "zendesk_export.json", "jira_export.csv")]
    result = cli("ingest", "tickets", *paths, "--json")
    s = summary(result)
    assert s["redactions"].get("EMAIL", 0) > 0 and s["redactions"].get("PERSON", 0) > 0
    leaked = query(r"""
        SELECT count(*) FROM (
          SELECT subject || ' ' || coalesce(body, '') || ' ' || coalesce(resolution, '') || ' ' ||
                 coalesce(extra::VARCHAR, '') AS t FROM tickets
          UNION ALL SELECT coalesce(text, '') || ' ' || coalesce(author, '') FROM ticket_messages
          UNION ALL SELECT raw FROM quarantine)
        WHERE regexp_matches(t, '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[a-z]{2,}')""")
    assert leaked == [(0,)]
    before = query("SELECT ticket_id, body FROM tickets ORDER BY ticket_id")
    # The same file again: the same pseudonyms, so every record is a duplicate.
    again = summary(cli("ingest", "tickets", *paths, "--json"))
    assert again["totals"]["n_duplicates"] == again["totals"]["n_read"] == s["totals"]["n_read"]
    assert query("SELECT ticket_id, body FROM tickets ORDER BY ticket_id") == before


def test_no_redact_must_be_asked_for_and_warns(cli, query, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,subject,description\n1,hi,mail me at jane.doe@example.com\n")
    cli("ingest", "tickets", path, "-q")
    body = query("SELECT body FROM tickets")[0][0]
    assert __import__("re").fullmatch(r"mail me at <EMAIL_[0-9a-f]{6}>", body), body
    other = tmp_path / "u.csv"
    other.write_text("id,subject,description\n2,hi,mail me at john@example.com\n")
    result = cli("ingest", "tickets", other, "--no-redact")
    assert "redaction is off" in result.output
    assert query("SELECT body FROM tickets WHERE source_id = '2'") == [("mail me at john@example.com",)]


@pytest.mark.parametrize("redact", [False, True], ids=["direct", "staged"])
def test_in_file_duplicates_and_conflicts_in_csv(cli, query, tmp_path, redact):
    path = tmp_path / "dups.csv"
    path.write_text("id,subject,description\n"
                    "1,Refund,charged twice\n"
                    "1,Refund,charged twice\n"
                    "2,Login,cannot log in\n"
                    "2,Login,cannot log in since Monday\n"
                    "3,Slow,dashboard is slow\n")
    args = ["--json"] + ([] if redact else ["--no-redact"])
    f = file_result(cli("ingest", "tickets", path, *args))
    assert f["reconciles"]
    assert (f["n_read"], f["n_loaded"], f["n_duplicates"], f["n_quarantined"]) == (5, 3, 1, 1)
    assert query("SELECT source_id, body FROM tickets ORDER BY source_id") == [
        ("1", "charged twice"), ("2", "cannot log in"), ("3", "dashboard is slow")]
    assert query("SELECT record_no FROM quarantine") == [(4,)]


def test_tag_lists_split_the_same_from_csv_and_from_json(cli, query, tmp_path):
    """A tag list written as text is cut at commas, semicolons, bars and ASCII whitespace,
    empty pieces dropped: the CSV path (SQL) and the JSON path (Python) agree."""
    cases = {"a": ["a"], "a, b,c": ["a", "b", "c"], " x ;y|z ": ["x", "y", "z"],
             "one  two\tthree": ["one", "two", "three"], ",,a,, ,b,": ["a", "b"],
             "multi\nline\r\nlist\x0bv\x0cf": ["multi", "line", "list", "v", "f"],
             "dark-mode v1.2 über": ["dark-mode", "v1.2", "über"], "": [], " , ; ": []}
    rows = [{"id": f"t{i}", "subject": f"s{i}", "tags": text} for i, text in enumerate(cases)]
    csv_path = tmp_path / "tags.csv"
    with csv_path.open("w", newline="") as fh:
        import csv
        writer = csv.DictWriter(fh, fieldnames=["id", "subject", "tags"])
        writer.writeheader()
        writer.writerows(rows)
    jsonl = tmp_path / "tags.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for path in (csv_path, jsonl):
        assert cli("ingest", "tickets", path, "--no-redact", "-q").exit_code == 0
    expected = {f"t{i}": tags for i, tags in enumerate(cases.values())}
    for origin in ("csv", "json"):
        got = dict(query("SELECT source_id, tags FROM tickets WHERE origin = ?", [origin]))
        assert got == expected, origin


def test_database_from_before_zstd_text_is_rebuilt_keeping_every_row_in_order(
        tmp_path, database_before):
    """Migration 0006 rebuilds `tickets` and `ticket_messages` with zstd for their free
    text: a database written at schema 5 keeps every row, in file order, and a re-ingest of
    the same exports still finds them all as duplicates."""
    from rlforge import db
    from rlforge.ingest import tickets

    path = tmp_path / "old.duckdb"
    con = database_before(path, "0006")
    assert db.schema_version(con) == 5
    exports = [SAMPLE_DATA / "tickets" / "tickets.csv", SAMPLE_DATA / "tickets" / "zendesk_export.json"]
    for p in exports:
        assert tickets.ingest_file(con, p, redactor=None).status == "ok"
    ordered = "SELECT * FROM {} ORDER BY rowid"
    old_tickets = con.execute(ordered.format("tickets")).fetchall()
    old_messages = con.execute(ordered.format("ticket_messages")).fetchall()
    assert len(old_tickets) > 100 and len(old_messages) > 100
    con.close()

    con = db.connect(path)
    assert db.schema_version(con) == len(db.MIGRATIONS)
    assert con.execute(ordered.format("tickets")).fetchall() == old_tickets
    assert con.execute(ordered.format("ticket_messages")).fetchall() == old_messages
    con.execute("CHECKPOINT")
    zstd = {c for c, in con.execute("SELECT DISTINCT column_name FROM pragma_storage_info('tickets') "
                                     "WHERE compression = 'ZSTD'").fetchall()}
    assert {"body", "subject", "resolution", "extra", "content_hash"} <= zstd
    assert "category" not in zstd
    again = [tickets.ingest_file(con, p, redactor=None) for p in exports]
    assert sum(r.n_loaded for r in again) == 0
    assert sum(r.n_duplicates for r in again) == len(old_tickets)
