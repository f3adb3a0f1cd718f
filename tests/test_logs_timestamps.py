"""Times are never silently lost: real shapes parse, a time that does not is flagged with
a reason, and year-less logs say where their year came from.

The HealthApp and Proxifier lines are real lines of the public Loghub samples (LogPAI,
HealthApp_2k.log and Proxifier_2k.log); the sshd lines are from the OpenSSH sample in
../shared/data/loghub.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from rlforge import db
from rlforge.ingest.logformats.records import TIME_UNPARSED
from rlforge.ingest import logs

HEALTHAPP = r"<Time>\|<Component>\|<Pid>\|<Content>"
HEALTHAPP_LINES = [
    "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
    "20171223-22:15:29:615|Step_LSC|30002312|onExtend:1514038530000 14 0 4",
    "20171223-22:15:29:633|Step_StandReportReceiver|30002312|onReceive action: "
    "android.intent.action.SCREEN_ON",
]
PROXIFIER = r"\[<Time>\] <Program> - <Content>"
PROXIFIER_LINES = [
    "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy "
    "proxy.cse.cuhk.edu.hk:5070 HTTPS",
    "[10.30 17:59:17] svchost.exe *64 - proxy close, 303 bytes sent",
]
SSHD_LINES = [
    "Dec 10 06:55:46 LabSZ sshd[24200]: reverse mapping checking getaddrinfo for "
    "ns.marryaldkfaczcz.com [173.234.31.186] failed - POSSIBLE BREAK-IN ATTEMPT!",
    "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186",
    "Dec 10 07:02:47 LabSZ sshd[24203]: Connection closed by 212.47.254.145 [preauth]",
]


def _write(path, lines, mtime: dt.datetime | None = None):
    path.write_text("\n".join(lines) + "\n")
    if mtime is not None:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def _times(con, name):
    return con.execute("SELECT ts, flag FROM log_lines WHERE file LIKE ? ORDER BY line_no",
                       [f"%{name}"]).fetchall()


def test_healthapp_times_with_millis_after_a_colon(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    r = logs.ingest_file(con, _write(tmp_path / "HealthApp.log", HEALTHAPP_LINES), fmt=HEALTHAPP)
    assert (r.n_loaded, r.n_flagged) == (3, 0)
    assert [t for t, _ in _times(con, "HealthApp.log")] == [
        dt.datetime(2017, 12, 23, 22, 15, 29, 606000), dt.datetime(2017, 12, 23, 22, 15, 29, 615000),
        dt.datetime(2017, 12, 23, 22, 15, 29, 633000)]
    assert not any("without a year" in n for n in r.notes)  # this layout has its year


def test_proxifier_month_dot_day_takes_the_year_given(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    path = _write(tmp_path / "Proxifier.log", PROXIFIER_LINES)
    r = logs.ingest_file(con, path, fmt=PROXIFIER, year=2016)
    assert [t for t, _ in _times(con, "Proxifier.log")] == [
        dt.datetime(2016, 10, 30, 16, 49, 6), dt.datetime(2016, 10, 30, 17, 59, 17)]
    assert "times are written without a year: year 2016 from --year" in r.notes
    comps = [c for (c,) in con.execute("SELECT component FROM log_lines ORDER BY line_no").fetchall()]
    assert comps == ["chrome.exe", "svchost.exe *64"]


def test_yearless_syslog_takes_the_mtime_year_and_says_so(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    # modified in March 2017: December times are from the December before
    path = _write(tmp_path / "auth.log", SSHD_LINES, mtime=dt.datetime(2017, 3, 1, 12))
    r = logs.ingest_file(con, path)
    assert r.format == "syslog" and r.n_flagged == 0
    assert {t.year for t, _ in _times(con, "auth.log")} == {2016}
    assert any("without a year: year 2016 from the file's modification time" in n for n in r.notes)
    con2 = db.connect(tmp_path / "y.duckdb")
    r2 = logs.ingest_file(con2, path, year=2015)
    assert {t.year for t, _ in _times(con2, "auth.log")} == {2015}
    assert "times are written without a year: year 2015 from --year" in r2.notes


def test_yearless_lines_take_the_year_of_the_files_dated_lines(tmp_path):
    """A syslog file mixing RFC 3164 lines (no year) and RFC 5424 lines (a year), modified
    years later: the year-less times take the year nearest the dated ones, not the file's
    modification time's, so one window never holds two years a day apart; and a dated
    line in January after December ones puts the December ones in the year before."""
    dated = ["<190>1 2019-12-31T23:59:58.000Z db-1 pgbouncer 914 stats - stats: 12 xacts/s",
             "<190>1 2020-01-01T00:00:03.000Z db-1 pgbouncer 914 stats - stats: 9 xacts/s"]
    lines = [SSHD_LINES[0].replace("Dec 10 06:55:46", "Dec 31 23:59:57"), dated[0],
             SSHD_LINES[1].replace("Dec 10 06:55:46", "Jan  1 00:00:01"), dated[1],
             SSHD_LINES[2].replace("Dec 10 07:02:47", "Jan  1 00:00:05")]
    path = _write(tmp_path / "mixed.syslog", lines, mtime=dt.datetime(2023, 6, 1, 12))
    con = db.connect(tmp_path / "x.duckdb")
    r = logs.ingest_file(con, path)
    assert r.n_flagged == 0
    assert [t for t, _ in _times(con, "mixed.syslog")] == [
        dt.datetime(2019, 12, 31, 23, 59, 57), dt.datetime(2019, 12, 31, 23, 59, 58),
        dt.datetime(2020, 1, 1, 0, 0, 1), dt.datetime(2020, 1, 1, 0, 0, 3),
        dt.datetime(2020, 1, 1, 0, 0, 5)]
    assert any("year 2019-2020 from the file's records written with a year" in n for n in r.notes)
    # --year still wins
    con2 = db.connect(tmp_path / "y.duckdb")
    logs.ingest_file(con2, path, year=2015)
    assert {t.year for t, _ in _times(con2, "mixed.syslog")} >= {2015}


def test_a_time_that_does_not_parse_is_flagged_with_a_reason(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    lines = [HEALTHAPP_LINES[0], "20171299-22:15:29:615|Step_LSC|30002312|onStandStepChanged 3580",
             HEALTHAPP_LINES[1]]
    r = logs.ingest_file(con, _write(tmp_path / "h.log", lines), fmt=HEALTHAPP)
    got = _times(con, "h.log")
    assert [f for _, f in got] == [None, TIME_UNPARSED, None]
    assert got[1][0] is None and got[0][0] is not None
    assert r.n_flagged == 1
    note = next(n for n in r.notes if TIME_UNPARSED in n)
    assert note.startswith("1 record(s) have a time field that parses to no time")
    assert "'20171299-22:15:29:615'" in note


def test_no_silent_nulls_on_any_loghub_system_or_shape(tmp_path):
    """Every record with a time text either has a time or a flag."""
    from paths import SHARED_DATA

    loghub = SHARED_DATA / "loghub"
    if not loghub.is_dir():
        pytest.skip("shared Loghub data not present")
    formats = json.loads((loghub / "formats.json").read_text())
    con = db.connect(tmp_path / "x.duckdb")
    for system, spec in formats.items():
        logs.ingest_file(con, loghub / system / f"{system}_2k.log", fmt=spec["log_format"],
                         masks=spec["regex"], year=2017)
    logs.ingest_file(con, _write(tmp_path / "HealthApp.log", HEALTHAPP_LINES), fmt=HEALTHAPP)
    logs.ingest_file(con, _write(tmp_path / "Proxifier.log", PROXIFIER_LINES), fmt=PROXIFIER)
    silent = con.execute("SELECT count(*) FROM log_lines WHERE ts IS NULL AND trim(ts_text) <> '' "
                         "AND flag IS NULL").fetchall()[0][0]
    assert silent == 0
    assert con.execute("SELECT count(*) FROM log_lines WHERE ts IS NULL").fetchall()[0][0] == 0


def test_a_level_field_holding_hosts_is_taken_as_the_host_and_said(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    path = _write(tmp_path / "sshd.log", SSHD_LINES)
    # a wrong format: the host name sits where it says <Level>, right after the time
    r = logs.ingest_file(con, path, fmt=r"<Month> <Day> <Time> <Level> sshd\[<Pid>\]: <Content>",
                         year=2015)
    note = next(n for n in r.notes if "field <Level> after the time holds host names" in n)
    assert "'LabSZ'" in note
    assert con.execute("SELECT DISTINCT host, level FROM log_lines").fetchall() == [("LabSZ", None)]
    r2 = logs.ingest_file(con, _write(tmp_path / "h.log", HEALTHAPP_LINES), fmt=HEALTHAPP)
    assert not any("level field" in n for n in r2.notes)


def test_year_flag_through_the_cli(cli, tmp_path):
    path = _write(tmp_path / "Proxifier.log", PROXIFIER_LINES)
    result = cli("ingest", "logs", path, "--format", PROXIFIER, "--year", "2016", "--json")
    assert result.exit_code == 0, result.output
    text = result.output
    f = json.loads(text[text.index("{"): text.rindex("}") + 1])["files"][0]
    assert "times are written without a year: year 2016 from --year" in f["notes"]


# Real HealthApp lines (Loghub HealthApp_2k.log, lines 78-81 and 1244): the milliseconds
# after the last colon are written without leading zeros, like the hours and minutes.
HEALTHAPP_SHORT = [
    "20171223-22:15:35:98|Step_SPUtils|30002312|setTodayTotalDetailSteps=1514038440000##7017",
    "20171223-22:15:35:104|Step_ExtSDM|30002312|calculateCaloriesWithCache totalCalories=126797",
    "20171223-22:15:35:11|Step_SPUtils|30002312|getTodayTotalDetailSteps = 1514038440000##7007",
    "20171223-23:1:5:7|Step_LSC|30002312|processHandleBroadcastAction action:android.intent",
]


def test_healthapp_short_millis_and_unpadded_fields(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    r = logs.ingest_file(con, _write(tmp_path / "h.log", HEALTHAPP_SHORT), fmt=HEALTHAPP)
    assert r.n_flagged == 0
    assert [t for t, _ in _times(con, "h.log")] == [
        dt.datetime(2017, 12, 23, 22, 15, 35, 98000), dt.datetime(2017, 12, 23, 22, 15, 35, 104000),
        dt.datetime(2017, 12, 23, 22, 15, 35, 11000), dt.datetime(2017, 12, 23, 23, 1, 5, 7000)]


@pytest.mark.parametrize("fmt,stamp", [
    ("<Time> <Level> <Content>", "20171223-22:15:35{sep}{frac}"),
    ("<Date> <Time> <Level> <Content>", "2017-12-23 22:15:35{sep}{frac}"),
    (r"\[<Time>\] <Level> <Content>", "[2017-12-23T22:15:35{sep}{frac}]"),
    ("<Month> <Day> <Time> <Level> <Content>", "Dec 23 22:15:35{sep}{frac}"),
])
@pytest.mark.parametrize("sep,frac,micros", [
    (":", "7", 7000), (":", "98", 98000), (":", "104", 104000),
    (".", "7", 700000), (".", "98", 980000), (".", "104", 104000),
    (",", "7", 700000), (",", "98", 980000), (",", "104", 104000),
])
def test_a_fraction_of_one_to_three_digits_parses_in_every_layout(tmp_path, fmt, stamp, sep,
                                                                  frac, micros):
    """Milliseconds after a colon count (`:7` is 7 ms); after a dot or comma they are a
    decimal fraction (`.7` is 0.7 s)."""
    con = db.connect(tmp_path / "x.duckdb")
    line = f"{stamp.format(sep=sep, frac=frac)} ERROR disk full"
    r = logs.ingest_file(con, _write(tmp_path / "a.log", [line]), fmt=fmt, year=2017)
    assert (r.n_loaded, r.n_flagged) == (1, 0)
    assert _times(con, "a.log") == [(dt.datetime(2017, 12, 23, 22, 15, 35, micros), None)]
