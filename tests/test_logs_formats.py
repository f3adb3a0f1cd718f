"""Log formats: parsing realistic lines of every format (broken ones too), detection, time
and level normalisation, and the real specimens in ../shared/data/formats."""

from __future__ import annotations

import datetime as dt
import json
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paths import SHARED_DATA
from rlforge.errors import UserError
from rlforge.ingest.logformats.access import AccessFormat
from rlforge.ingest.logformats.base import LogFormat
from rlforge.ingest.logformats.header import HeaderFormat
from rlforge.ingest.logformats.jsonl import JsonFormat
from rlforge.ingest.logformats.levels import normalise_level
from rlforge.ingest.logformats.plain import PlainFormat
from rlforge.ingest.logformats.registry import detect, make_format
from rlforge.ingest.logformats.syslog import SyslogFormat
from rlforge.ingest.logformats.timestamps import TimeParser
from rlforge.ingest import logs

FORMATS = SHARED_DATA / "formats"
HINT = dt.datetime(2026, 6, 1)


def parse(fmt: LogFormat, lines: list[str]) -> pl.DataFrame:
    series = pl.Series(lines, dtype=pl.String)
    fmt.prepare(series, HINT)
    return fmt.parse(series)


def fields(frame: pl.DataFrame, i: int) -> dict:
    value = frame["fields"][i]
    if isinstance(value, dict):
        return value
    return json.loads(value) if value else {}


# --- header format strings -----------------------------------------------------------

HDFS = "<Date> <Time> <Pid> <Level> <Component>: <Content>"


def test_header_format_fields_roles_and_broken_lines():
    f = HeaderFormat(HDFS)
    out = parse(f, [
        "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 terminating",
        "081109 203807 222 WARN dfs.FSNamesystem:   BLOCK* ask 10.0.0.1:50010 to delete",
        "this line is not in the format",
        "081109 203808 223 ERROR dfs.DataNode: ",
    ])
    assert out["ok"].to_list() == [True, True, False, True]
    assert out["component"].to_list()[:2] == ["dfs.DataNode$PacketResponder", "dfs.FSNamesystem"]
    assert out["message"][1] == "BLOCK* ask 10.0.0.1:50010 to delete"  # blanks taken
    assert out["message"][3] == ""
    assert out["level"].to_list() == ["info", "warn", None, "error"]
    assert out["ts"][0] == dt.datetime(2008, 11, 9, 20, 36, 15)
    assert out["ts_text"][0] == "081109 203615"
    assert fields(out, 0) == {"Pid": "148"}


@pytest.mark.parametrize("spec, problem", [
    ("<Date> <Time> <Level>", "no <Content>"),
    ("no fields at all", "no <Field>"),
    ("<Date> <Date> <Content>", "twice"),
    ("<Date> (<Time> <Content>", "not a valid pattern"),
])
def test_bad_header_formats_are_user_errors(spec, problem):
    with pytest.raises(UserError, match=re.escape(problem)):
        HeaderFormat(spec)


def test_regex_fragments_optional_groups_and_literal_brackets():
    f = HeaderFormat(r"<Label> <Component>(\[<PID>\])?: <Content>")
    out = parse(f, ["- crond(pam_unix)[2915]: session closed for user root",
                    "- kernel: eth0: link up", "- sshd[]: empty pid"])
    assert out["component"].to_list() == ["crond(pam_unix)", "kernel", "sshd"]
    assert [fields(out, i).get("PID") for i in range(3)] == ["2915", None, ""]
    assert out["message"].to_list() == ["session closed for user root", "eth0: link up",
                                        "empty pid"]


def _exact(spec: str, lines: list[str]) -> pl.DataFrame:
    return pl.Series(lines, dtype=pl.String).str.extract_groups(
        HeaderFormat(spec).exact).struct.unnest()


@pytest.mark.parametrize("spec", [
    HDFS, r"<Date> <Time> <Level> \[<Process>\] <Component>: <Content>",
    r"<Label> <Timestamp> <Date> <User> <Month> <Day> <Time> <Location> <Component>(\[<PID>\])?: <Content>",
    r"<Date> <Day> <Time> <Component> sshd\[<Pid>\]: <Content>",
    r"<Date> <Time> - <Level>  \[<Node>:<Component>@<Id>\] - <Content>",
])
@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet=" \tab:[]-@.1", min_size=0, max_size=12), min_size=1,
                max_size=14))
def test_fast_paths_give_exactly_the_fields_of_the_pattern(spec, parts):
    """The token plan and the fast pattern are shortcuts: same fields as the plain
    Loghub-convention pattern on every line, or they leave the line to it."""
    line = " ".join(parts)
    f = HeaderFormat(spec)
    got = f._fields(pl.Series([line]))
    want = _exact(spec, [line])
    for name in f.names:
        assert got[name][0] == want[name][0], (line, name)


# --- syslog ------------------------------------------------------------------------------

def test_syslog_rfc3164_and_5424():
    out = parse(SyslogFormat(), [
        "Nov  3 09:23:38 veridian automount[7998]: lookup(file): lookup for foobar failed",
        "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
        "Nov  3 09:23:38 veridian lookup for opt failed",
        '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 '
        '[exampleSDID@32473 iut="3" eventSource="Application"] An application event',
        "<13>1 2024-01-02T03:04:05+01:00 host app 99 - -",
        "garbage line without a time",
        "<999 broken pri Nov 3",
    ])
    assert out["ok"].to_list() == [True, True, True, True, True, False, False]
    assert out["host"].to_list()[:5] == ["veridian", "mymachine", "veridian",
                                         "mymachine.example.com", "host"]
    assert out["component"].to_list()[:5] == ["automount", "su", None, "evntslog", "app"]
    assert out["level"].to_list()[:5] == [None, "fatal", None, "notice", "notice"]
    assert out["message"][2] == "lookup for opt failed"
    assert out["message"][4] == ""
    assert fields(out, 0)["procid"] == "7998"
    assert fields(out, 3)["sd"].startswith("[exampleSDID@32473")
    # no year, in a file whose dated lines span 2003-10-11 .. 2024-01-02: the year of the
    # latest dated line, or one either side, that puts it nearest them (not the hint's)
    assert out["ts"][0] == dt.datetime(2023, 11, 3, 9, 23, 38)
    assert out["ts"][3] == dt.datetime(2003, 10, 11, 22, 14, 15, 3000)
    assert out["ts"][4] == dt.datetime(2024, 1, 2, 2, 4, 5)  # zone -> UTC


# --- access logs ---------------------------------------------------------------------------

def test_access_combined_common_extra_fields_and_broken_lines():
    out = parse(AccessFormat(), [
        '203.0.113.9 - alice [10/Oct/2023:13:55:36 -0700] "GET /a.gif HTTP/1.1" 200 2326 '
        '"http://example.com/start" "Mozilla/5.0 (X11)"',
        '198.51.100.4 - - [10/Oct/2023:13:55:37 -0700] "POST /login HTTP/1.1" 503 -',
        '198.51.100.4 - - [10/Oct/2023:13:55:38 -0700] "GET /x HTTP/1.1" 404 12 "-" "curl/8" "10.1.1.1"',
        '198.51.100.4 - - [10/Oct/2023:13:55:38 -0700] "GET /unterminated',
    ])
    assert out["ok"].to_list() == [True, True, True, False]
    assert out["message"].to_list()[:3] == ["GET /a.gif HTTP/1.1 200 OK",
                                            "POST /login HTTP/1.1 503 Service Unavailable",
                                            "GET /x HTTP/1.1 404 Not Found"]
    assert out["level"].to_list()[:3] == ["info", "error", "warn"]
    assert out["ts"][0] == dt.datetime(2023, 10, 10, 20, 55, 36)
    f0, f2 = fields(out, 0), fields(out, 2)
    assert f0["user"] == "alice" and f0["agent"] == "Mozilla/5.0 (X11)" and f0["extra"] is None
    assert f2["extra"] == '"10.1.1.1"'


# --- JSON lines --------------------------------------------------------------------------

def test_jsonl_keys_found_levels_and_broken_lines():
    f = JsonFormat()
    out = parse(f, [
        '{"time":1731391316698,"level":30,"msg":"incoming request","hostname":"web-1","name":"api"}',
        '{"time":1731391316999,"level":50,"msg":"request failed","hostname":"web-1","name":"api"}',
        '{"time":1731391317000,"level":40,"msg":"slow","hostname":"web-2","name":"api"',
        "plain text in a json log",
        '{"time":1731391318000,"level":20,"hostname":"web-1","name":"api"}',
    ])
    assert f.keys == {"ts_text": "time", "level": "level", "message": "msg",
                      "component": "name", "host": "hostname"}
    assert out["ok"].to_list() == [True, True, False, False, True]
    assert out["level"].to_list()[:2] == ["info", "error"]
    assert out["ts"][0] == dt.datetime(2024, 11, 12, 6, 1, 56, 698000)
    assert out["message"][4].startswith('{"time"')  # no message key: the whole object
    assert json.loads(out["fields"][0])["name"] == "api"


def test_jsonl_key_mapping_and_nested_keys():
    f = JsonFormat({"message": "event", "level": "log.severity", "ts": "at"})
    out = parse(f, ['{"at":"2024-05-01T10:00:00Z","event":"disk full","log":{"severity":"WARNING"}}'])
    assert (out["message"][0], out["level"][0]) == ("disk full", "warn")
    assert out["ts"][0] == dt.datetime(2024, 5, 1, 10)
    with pytest.raises(UserError, match="unknown log key role"):
        JsonFormat({"colour": "x"})


# --- container logs ----------------------------------------------------------------------

def test_docker_json_partial_lines_are_joined(tmp_path):
    path = tmp_path / "c.log"
    long_part = "x" * 50
    path.write_text("\n".join([
        json.dumps({"log": "ERROR boot failed\n", "stream": "stderr", "time": "2024-01-01T00:00:00.1Z"}),
        json.dumps({"log": long_part, "stream": "stdout", "time": "2024-01-01T00:00:01Z"}),
        json.dumps({"log": "tail of the long line\n", "stream": "stdout", "time": "2024-01-01T00:00:01Z"}),
        "not json",
        json.dumps({"log": "done\r\n", "stream": "stdout", "time": "2024-01-01T00:00:02.123456789Z"}),
    ]) + "\n")
    df = logs.read_log(path)
    assert df["ok"].to_list() == [True, True, False, True]
    assert df["message"].to_list() == ["ERROR boot failed", long_part + "tail of the long line",
                                       "not json", "done"]
    assert df["n_lines"].to_list() == [1, 2, 1, 1]
    assert df["level"][0] == "error"
    assert json.loads(df["fields"][0]) == {"stream": "stderr"}


def test_cri_partial_and_full_lines(tmp_path):
    path = tmp_path / "cri.log"
    path.write_text("2024-03-01T10:00:00.000000001Z stdout P first half \n"
                    "2024-03-01T10:00:00.000000002Z stdout F second half\n"
                    "2024-03-01T10:00:01Z stderr F WARN low disk\n")
    df = logs.read_log(path)
    assert detect(path.read_text().splitlines()).name == "cri"
    assert df["message"].to_list() == ["first half second half", "WARN low disk"]
    assert df["level"].to_list() == [None, "warn"]


# --- plain text and detection --------------------------------------------------------------

def test_plain_lines_pick_up_leading_time_and_level():
    out = parse(PlainFormat(), ["no time here", "WARN disk 91% full", "plain words"])
    assert out["ok"].to_list() == [True, True, True]  # no times: every line is a record
    assert out["level"].to_list() == [None, "warn", None]
    assert out["ts"].to_list() == [None, None, None]


def test_plain_timestamped_lines_with_a_layout_and_continuations(tmp_path):
    path = tmp_path / "app.log"
    path.write_text("2024-02-03 04:05:06,789 ERROR [main] com.acme.Db: connection lost\n"
                    "java.io.IOException: reset\n"
                    "\tat com.acme.Db.read(Db.java:10)\n"
                    "2024-02-03 04:05:07 Started in 3 s\n"
                    "wrapped text without a time\n")
    df = logs.read_log(path)
    assert detect(path.read_text().splitlines()).name == "plain"
    assert df["n_lines"].to_list() == [3, 2]
    first = df.row(0, named=True)
    assert (first["level"], first["component"], first["ts"]) == \
        ("error", "com.acme.Db", dt.datetime(2024, 2, 3, 4, 5, 6, 789000))
    assert first["message"].startswith("connection lost\njava.io.IOException: reset")
    assert json.loads(first["fields"]) == {"thread": "main"} if isinstance(first["fields"], str) \
        else first["fields"] == {"thread": "main"}
    assert df["message"][1] == "Started in 3 s\nwrapped text without a time"


@pytest.mark.parametrize("lines, name", [
    (['{"a":1,"msg":"x"}', '{"a":2,"msg":"y"}'], "jsonl"),
    (['{"log":"x\\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}'], "docker"),
    (["Nov  3 09:23:38 host prog[1]: hi", "Nov  3 09:23:39 host prog[1]: ho"], "syslog"),
    (['1.2.3.4 - - [10/Oct/2023:13:55:36 -0700] "GET / HTTP/1.1" 200 1'], "access"),
    (["2024-03-01T10:00:00Z stdout F x"], "cri"),
    (["just some text", "more text"], "plain"),
    ([], "plain"),
])
def test_detection(lines, name):
    assert detect(lines).name == name


def test_unknown_format_name_lists_the_valid_ones():
    with pytest.raises(UserError, match="valid: auto, jsonl, syslog"):
        make_format("xml")


# --- time and level --------------------------------------------------------------------

@pytest.mark.parametrize("texts, expected", [
    (["2015-10-18 18:01:47,978"], dt.datetime(2015, 10, 18, 18, 1, 47, 978000)),
    (["17/06/09 20:10:40"], dt.datetime(2017, 6, 9, 20, 10, 40)),
    (["2005-06-03-15.42.50.675872"], dt.datetime(2005, 6, 3, 15, 42, 50, 675872)),
    (["Sun Dec 04 04:47:44 2005"], dt.datetime(2005, 12, 4, 4, 47, 44)),
    (["03-17 16:13:38.811"], dt.datetime(2026, 3, 17, 16, 13, 38, 811000)),
    (["Dec 10 06:55:46"], dt.datetime(2025, 12, 10, 6, 55, 46)),  # would be after the hint
    (["août 19 11:08:37"], dt.datetime(2025, 8, 19, 11, 8, 37)),
    (["1117838570"], dt.datetime(2005, 6, 3, 22, 42, 50)),
    (["1731391316698"], dt.datetime(2024, 11, 12, 6, 1, 56, 698000)),
    (["2024-11-12T14:13:36.574+0900"], dt.datetime(2024, 11, 12, 5, 13, 36, 574000)),
    (["not a time at all"], None),
])
def test_time_layouts(texts, expected):
    times = TimeParser(HINT)
    times.choose(pl.Series(texts))
    assert times.parse(pl.Series(texts))[0] == expected


def test_a_second_time_layout_later_in_the_file_is_learnt():
    times = TimeParser(HINT)
    times.choose(pl.Series(["Jan  1 02:21:38"]))
    got = times.parse(pl.Series(["Jan  2 02:21:38", "2022-06-09T14:44:11-06:00"]))
    assert got.to_list() == [dt.datetime(2026, 1, 2, 2, 21, 38), dt.datetime(2022, 6, 9, 20, 44, 11)]


@pytest.mark.parametrize("raw, level", [
    ("INFO", "info"), ("Warning", "warn"), ("E", "error"), ("SEVERE", "error"),
    ("CRIT", "fatal"), ("notice", "notice"), ("30", "info"), ("60", "fatal"), ("VRB", "trace"),
    ("[DEBUG]", "debug"), ("whatever", None), (None, None),
])
def test_levels(raw, level):
    assert normalise_level(pl.Series([raw], dtype=pl.String))[0] == level


# --- the real specimens --------------------------------------------------------------------

SPECIMENS = [
    ("access_log/lnav_shop_access_log/logfile_shop_access_log.0", "access", 1000, 1000),
    ("docker_json/plaso_container_json/container-json.log", "docker", 10, 10),
    ("syslog_rfc3164/lnav_syslog_samples/logfile_syslog.0", "syslog", 4, 4),
    ("syslog_rfc3164/lnav_syslog_samples/logfile_bad_syslog.0", "syslog", 4, 4),
    ("syslog_rfc3164/lnav_syslog_samples/logfile_syslog_fr.0", "syslog", 1, 1),
    ("syslog_rfc3164/lnav_syslog_samples/logfile_syslog_with_mixed_times.0", "syslog", 13, 13),
    ("syslog_mixed/elastic_integrations_opnsense/test-opensense.log", "syslog", 5, 5),
    ("jsonl/humanlog_logger_samples/sample-pino.log", "jsonl", 1000, 1000),
    ("jsonl/humanlog_logger_samples/sample-bunyan.log", "jsonl", 1000, 1000),
    ("jsonl/humanlog_logger_samples/sample-zap.log", "jsonl", 758, 758),
    ("jsonl/humanlog_logger_samples/sample-serilog-json.log", "jsonl", 1000, 1000),
    ("jsonl/humanlog_logger_samples/sample-loguru-json.log", "jsonl", 1000, 1000),
    ("jsonl/humanlog_logger_samples/sample-log4j2-json.log", "jsonl", 1000, 1000),
    ("jsonl/elastic_nginxplus_json/nginxplus_json_logs", "jsonl", 500, 500),
]


@pytest.mark.parametrize("rel, name, records, with_time", SPECIMENS)
def test_real_specimens(rel, name, records, with_time):
    path = FORMATS / rel
    assert logs.resolve_format(path).name == name
    df = logs.read_log(path)
    assert df.height == records and df["ok"].all()
    assert df["ts"].is_not_null().sum() == with_time
    assert df["line_no"].to_list() == sorted(df["line_no"].to_list())


def test_specimen_details():
    bad = logs.read_log(FORMATS / "syslog_rfc3164/lnav_syslog_samples/logfile_bad_syslog.0")
    assert bad.row(2, named=True)["component"] is None  # the line without a tag
    assert bad["message"][2] == "lookup for opt failed"
    zap = logs.read_log(FORMATS / "jsonl/humanlog_logger_samples/sample-zap.log")
    assert set(zap["level"].unique().to_list()) <= {"info", "warn", "error", "debug"}
    assert zap["ts"][0] == dt.datetime(2024, 11, 12, 5, 13, 36, 574000)  # +0900 -> UTC
    loguru = logs.read_log(FORMATS / "jsonl/humanlog_logger_samples/sample-loguru-json.log")
    assert loguru["level"][0] == "debug" and loguru["message"][0] == "Processing item 7 of 23"
    access = logs.read_log(FORMATS / "access_log/lnav_shop_access_log/logfile_shop_access_log.0")
    assert access["ts"][0] == dt.datetime(2019, 1, 22, 0, 26, 14)  # +0330 -> UTC
    docker = logs.read_log(FORMATS / "docker_json/plaso_container_json/container-json.log")
    assert docker["ts"][9] == dt.datetime(2016, 1, 7, 16, 49, 10, 237222)


@pytest.mark.parametrize("line, want", [
    # log4j's `[%d] %p %m (%c)`: the logger after the message, in parentheses
    ("[2024-02-03 04:05:06,789] WARN Fetch of partition p-7 took 930 ms (com.acme.net.Fetcher)",
     ("warn", "com.acme.net.Fetcher", "Fetch of partition p-7 took 930 ms",
      dt.datetime(2024, 2, 3, 4, 5, 6, 789000), None)),
    # a bracketed ISO time with a zone, a bracketed lower-case level, a thread, `logger:`
    ("[2024-02-03T04:05:06.5Z] [error] [worker-3] pool: exhausted after 12 waits",
     ("error", "pool", "exhausted after 12 waits", dt.datetime(2024, 2, 3, 4, 5, 6, 500000),
      "worker-3")),
    # logback's default: the thread before the level, `dotted.logger - message`
    ("2024-02-03 04:05:06.001 [main] INFO com.acme.App - started in 3 s",
     ("info", "com.acme.App", "started in 3 s", dt.datetime(2024, 2, 3, 4, 5, 6, 1000), "main")),
    # a parenthesised word that is not a dotted logger stays in the message
    ("[2024-02-03 04:05:06] ERROR Disk full (retrying)",
     ("error", None, "Disk full (retrying)", dt.datetime(2024, 2, 3, 4, 5, 6), None)),
])
def test_plain_bracketed_and_iso_headers(tmp_path, line, want):
    path = tmp_path / "app.log"
    path.write_text(line + "\n" + line.replace("04:05:06", "04:05:09") + "\n"
                    "java.io.IOException: reset\n\tat com.acme.X.y(X.java:1)\n")
    df = logs.read_log(path)
    assert detect(path.read_text().splitlines()).name == "plain"
    assert df["n_lines"].to_list() == [1, 3]  # the trace continues the second record
    first = df.row(0, named=True)
    fields = first["fields"]
    thread = (json.loads(fields) if isinstance(fields, str) else fields or {}).get("thread")
    assert (first["level"], first["component"], first["message"], first["ts"], thread) == want
