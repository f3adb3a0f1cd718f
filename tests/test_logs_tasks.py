"""logs.diagnose and logs.script: windows, rendering, answers from DuckDB, proofs."""

from __future__ import annotations

import datetime as dt
import json
import tomllib

import pytest

from paths import SAMPLE_DATA, SHARED_DATA
from rlforge import db
from rlforge.ingest import logs
from rlforge.tasks.logs_common import Record, ids_in, pattern_regex, render, service_name
from rlforge.tasks.logs_script import fact_value

LOGS = SAMPLE_DATA / "logs"


@pytest.fixture
def logs_db(db_path):
    con = db.connect(db_path)
    for path in sorted(LOGS.iterdir()):
        if path.suffix not in (".py", ".md") and path.name != "incident.json":
            logs.ingest_file(con, path)
    con.close()
    return db_path


def test_render_is_one_line_per_record_with_tab_continuations():
    ts = dt.datetime(2024, 9, 17, 14, 5, 11, 798000)
    recs = [Record(1, ts, None, "billing.api", "error", "db.connect_failed", "t1"),
            Record(2, None, "pg-main", None, None, "first line\n\tat x.y(Z.java:1)\nCaused by: boom", "t2")]
    assert render(recs) == ("2024-09-17T14:05:11.798 - ERROR billing.api: db.connect_failed\n"
                            "- pg-main - -: first line\n\tat x.y(Z.java:1)\n\tCaused by: boom\n")


def test_service_name_and_ids():
    assert service_name("/x/pos-gateway.json.log.gz") == "pos-gateway"
    assert service_name("HDFS_2k.log") == "HDFS_2k"
    assert ids_in("Receiving block blk_-1608999687919862906 src: <IPV4_3f9a1c>") == {"blk_-1608999687919862906"}
    assert ids_in("request_id req_3ee975aa715e failed for <EMAIL_00aa11>") == {"req_3ee975aa715e"}


def test_pattern_regex_matches_like_the_miner():
    rx = pattern_regex("Receiving block <*> src: <*> dest: <*>")
    assert rx.fullmatch("Receiving block blk_1 src: /10.0.0.1:5 dest: /10.0.0.2:50010")
    assert not rx.fullmatch("Received block blk_1 of size 5")


def test_fact_values_and_ties():
    t = dt.datetime(2024, 1, 1)
    recs = [Record(i, t, None, comp, lvl, "m", None) for i, (comp, lvl) in
            enumerate([("a", "error"), ("b", "error"), ("a", "fatal"), ("b", "info")])]
    assert fact_value("error_count", recs) == 3
    assert fact_value("top_error_component", recs) == "a"
    assert fact_value("top_error_component", recs[:2]) is None  # a tie has no single answer


def test_build_and_validate_both_log_generators(cli, logs_db, tmp_path, query):
    out = tmp_path / "tasks"
    result = cli("build-tasks", "--out", out, "--generators", "logs.diagnose,logs.script",
                 "--mix", "logs.diagnose=1,logs.script=1", "--limit", "10", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["per_generator"]["logs.diagnose"]["emitted"] == 5
    assert report["per_generator"]["logs.script"]["emitted"] == 5
    for d in (p for p in out.iterdir() if p.is_dir()):
        meta = tomllib.loads((d / "task.toml").read_text())["metadata"]["rlforge"]
        ref = json.loads((d / "tests" / "reference.json").read_text())
        window = (d / "environment" / "app" / "logs" / f"{meta['service']}.log").read_text()
        if meta["generator"] == "logs.diagnose@2":
            assert window in (d / "instruction.md").read_text()
            assert meta["kind"] == "answer"
        else:
            assert meta["kind"] == "terminal"
            hidden = (d / "tests" / "variant" / "logs" / f"{meta['service']}.log").read_text()
            assert hidden != window and hidden not in (d / "instruction.md").read_text()
            answers = [c["answer"]["answer"] for c in ref["cases"]]
            assert answers[0] != answers[1]
    checks = json.loads(cli("validate", out, "--json").output)
    assert checks["failed"] == 0
    names = {c["name"] for r in checks["results"] if r["generator"] == "logs.script@2" for c in r["checks"]}
    assert {"oracle", "null", "hard_coded", "silent_exit", "edits_tests"} <= names


def test_diagnose_answers_agree_with_sql(cli, logs_db, tmp_path, query):
    out = tmp_path / "tasks"
    cli("build-tasks", "--out", out, "--generators", "logs.diagnose", "--no-validate", "-q")
    checked = 0
    for d in (p for p in out.iterdir() if p.is_dir()):
        meta = tomllib.loads((d / "task.toml").read_text())["metadata"]["rlforge"]
        if meta["question_kind"] != "peak_error_minute":
            continue
        file, span = meta["source_keys"][0].rsplit(":", 1)
        lo, hi = (int(x) for x in span.split("-"))
        ref = json.loads((d / "tests" / "reference.json").read_text())
        levels = ref["stated_rule"]["levels"]
        peak = query("SELECT strftime(date_trunc('minute', ts), '%Y-%m-%d %H:%M') AS m, count(*) AS n "
                     "FROM log_lines WHERE file = ? AND line_no BETWEEN ? AND ? "
                     "AND list_contains(?, level) GROUP BY m ORDER BY n DESC LIMIT 2",
                     [file, lo, hi, levels])
        assert peak[0][1] > peak[1][1] and ref["answer"] == peak[0][0]
        checked += 1
    assert checked >= 1


@pytest.mark.skipif(not (SHARED_DATA / "loghub").is_dir(), reason="shared Loghub data not present")
def test_loghub_system_yields_validated_tasks(cli, tmp_path):
    formats = json.loads((SHARED_DATA / "loghub" / "formats.json").read_text())
    spec = formats["BGL"]
    args = ["ingest", "logs", SHARED_DATA / "loghub" / "BGL" / "BGL_2k.log", "--format",
            spec["log_format"], "-q"]
    for m in spec["regex"]:
        args += ["--mask", m]
    assert cli(*args).exit_code == 0
    result = cli("build-tasks", "--out", tmp_path / "t", "--generators", "logs.diagnose,logs.script",
                 "--limit", "6", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["emitted"] == 6 and not report["drops"]
