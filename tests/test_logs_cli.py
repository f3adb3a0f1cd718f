"""`rlforge ingest logs` and `rlforge templates` through the real CLI."""

from __future__ import annotations

import csv
import json
import re

import pytest

from paths import SHARED_DATA

LOGHUB = SHARED_DATA / "loghub"
FORMATS = json.loads((LOGHUB / "formats.json").read_text())
SYSTEMS = sorted(FORMATS)


def summary(result) -> dict:
    text = result.output
    return json.loads(text[text.index("{"): text.rindex("}") + 1])


def loghub_args(system: str) -> list[str]:
    spec = FORMATS[system]
    args = [LOGHUB / system / f"{system}_2k.log", "--format", spec["log_format"]]
    for mask in spec["regex"]:
        args += ["--mask", mask]
    return args


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_loghub_system_through_the_cli_in_line_order(cli, query, system):
    result = cli("ingest", "logs", *loghub_args(system), "--json")
    assert result.exit_code == 0, result.output
    f = summary(result)["files"][0]
    assert (f["n_read"], f["n_loaded"], f["n_quarantined"], f["reconciles"]) == \
        (2000, 2000, 0, True)
    rows = query("SELECT line_no, message, template_id FROM log_lines ORDER BY line_no")
    assert [r[0] for r in rows] == list(range(1, 2001))
    truth = list(csv.DictReader(open(LOGHUB / system / f"{system}_2k.log_structured.csv",
                                     encoding="utf-8")))
    # the message is the content the benchmark's parser finds (after redaction)
    placeholder = re.compile(r"<[A-Z][A-Z0-9_]*_[0-9a-f]{6}>")
    same = sum(placeholder.search(m) is not None or m.strip() == t["Content"].strip()
               for (_, m, _), t in zip(rows, truth))
    assert same == 2000
    assert all(r[2] for r in rows)


def test_reingest_adds_zero_lines_and_status_counts_them(cli, query):
    args = loghub_args("Apache")
    cli("ingest", "logs", *args, "-q")
    again = cli("ingest", "logs", *args, "--json")
    f = summary(again)["files"][0]
    assert (f["n_read"], f["n_loaded"], f["n_duplicates"]) == (2000, 0, 2000)
    assert query("SELECT count(*) FROM log_lines") == [(2000,)]
    status = cli("status", "--json")
    tables = summary(status)["tables"]
    assert tables["log_records"] == 2000 and tables["log_templates"] >= 6


def test_summary_table_and_quiet(cli, tmp_path):
    path = tmp_path / "app.log"
    path.write_text("2024-01-01 00:00:00 INFO a: started\nnot a line\n")
    out = cli("ingest", "logs", path, "--format", "<Date> <Time> <Level> <Component>: <Content>")
    assert out.exit_code == 0
    assert "read 2 = loaded 1 + duplicates 0 + quarantined 1" in out.output
    assert "no format match (1)" in out.output
    quiet = cli("ingest", "logs", path, "-q", "--format",
                "<Date> <Time> <Level> <Component>: <Content>")
    assert quiet.exit_code == 0 and quiet.output == ""


def test_auto_detection_and_message_only(cli, query, tmp_path):
    path = tmp_path / "sys.log"
    path.write_text("Nov  3 09:23:38 veridian automount[7998]: lookup for foobar failed\n"
                    "!!! garbage\n"
                    "Nov  3 09:23:39 veridian sudo: timstack : TTY=pts/6 ; USER=root\n")
    out = cli("ingest", "logs", path, "--unparsed", "message-only", "--json")
    f = summary(out)["files"][0]
    assert (f["format"], f["n_loaded"], f["n_flagged"]) == ("syslog", 3, 1)
    assert query("SELECT host, component, flag FROM log_lines ORDER BY line_no") == \
        [("veridian", "automount", None), (None, None, "unparsed"), ("veridian", "sudo", None)]


def test_config_file_supplies_format_masks_and_keys(cli, query, tmp_path):
    (tmp_path / "rlforge.toml").write_text(
        "[ingest.logs]\n"
        'format = "jsonl"\n'
        'masks = ["job-[a-z]+"]\n'
        'keys = { message = "event" }\n')
    path = tmp_path / "app.jsonl"
    path.write_text("\n".join(json.dumps({"event": f"finished job-{x}", "level": "info"})
                              for x in ("alpha", "beta")) + "\n")
    out = cli("ingest", "logs", path, "--no-redact", "-q")
    assert out.exit_code == 0, out.output
    assert query("SELECT DISTINCT t.template FROM log_lines l JOIN log_templates t "
                 "USING (template_id)") == [("finished <*>",)]


def test_templates_command(cli):
    cli("ingest", "logs", *loghub_args("HDFS"), "-q")
    table = cli("templates", "--top", "3")
    assert table.exit_code == 0 and "PacketResponder" in table.output
    got = json.loads(cli("templates", "--json", "--top", "0").output)
    assert len(got) == 14 and sum(r["count"] for r in got) == 2000
    assert got[0]["count"] >= got[-1]["count"]
    assert set(got[0]) == {"template_id", "template", "count", "first_seen", "last_seen",
                           "example"}
    warn = json.loads(cli("templates", "--json", "--level", "WARNING").output)
    assert warn and all("<*>" in r["template"] for r in warn)
    assert sum(r["count"] for r in warn) < 2000
    bad = cli("templates", "--level", "loud")
    assert bad.exit_code == 2 and "trace, debug" in bad.output


def test_errors_are_one_line_with_exit_1(cli, tmp_path):
    path = tmp_path / "a.log"
    path.write_text("x\n")
    # a bad --format is a bad flag: exit 2 before any file is read, as in export
    bad_format = cli("ingest", "logs", path, "--format", "xml")
    assert bad_format.exit_code == 2 and "unknown log format 'xml'" in bad_format.output
    no_content = cli("ingest", "logs", path, "--format", "<Date> <Time>")
    assert no_content.exit_code == 2 and "<Content>" in no_content.output
    missing = cli("ingest", "logs", tmp_path / "nope.log")
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_templates_on_an_empty_store(cli, tmp_path):
    path = tmp_path / "empty.log"
    path.write_text("")
    cli("ingest", "logs", path, "-q")
    out = cli("templates")
    assert out.exit_code == 0 and "no templates" in out.output


def test_list_says_which_families_the_fields_cannot_support(cli):
    """Spark's 2k sample holds only INFO records: `build-tasks --list` says logs.diagnose
    cannot ask its failure questions there, and why; the counting and gap families stay."""
    assert cli("ingest", "logs", *loghub_args("Spark")).exit_code == 0
    result = cli("build-tasks", "--list", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output[result.output.index("["):])}
    skipped = rows["logs.diagnose"]["cannot_support"]
    assert skipped["burst_start"] == "no record is at level WARN, ERROR or FATAL"
    assert "longest_gap" not in skipped and "template_count" not in skipped
    table = cli("build-tasks", "--list")
    assert "skips burst_start: no record is at level WARN" in table.output.replace("\n", " ") \
        or "skips burst_start" in table.output



def test_format_help_names_every_built_in_log_format():
    """The help is written out (importing the parsers would load polars and pyarrow on
    every command's start); this keeps it in step with the registry."""
    import inspect
    import re

    from rlforge.cli.ingest import ingest_logs
    from rlforge.ingest.logformats.registry import NAMED_FORMATS

    help_text = inspect.signature(ingest_logs).parameters["fmt"].default.help
    missing = [n for n in NAMED_FORMATS if not re.search(rf"(?<![\w-]){re.escape(n)}\b", help_text)]
    assert not missing, help_text
