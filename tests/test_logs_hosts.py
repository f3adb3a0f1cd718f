"""Loghub-style header formats write syslog's host under other names (`<User>` on macOS
and Thunderbird, `<Level>` on Linux): the field right after the time that holds host names
is stored as the host, and the ingest says so; fields that hold components, levels or
numbers there are left alone.

Mac and Linux lines are real lines of the public Loghub samples (LogPAI, Mac_2k.log and
Linux_2k.log); Thunderbird is read from ../shared/data/loghub.
"""

from __future__ import annotations

import json

import pytest

from rlforge import db
from rlforge.ingest import logs

MAC = r"<Month>  <Date> <Time> <User> <Component>\[<PID>\]( \(<Address>\))?: <Content>"
MAC_LINES = [
    "Jul  1 09:00:55 calvisitor-10-105-160-95 kernel[0]: IOThunderboltSwitch<0>(0x0)::"
    "listenerCallback - Thunderbolt HPD packet for route = 0x0 port = 11 unplug = 0",
    "Jul  1 09:01:05 calvisitor-10-105-160-95 com.apple.CDScheduler[43]: Thermal pressure "
    "state: 1 Memory pressure state: 0",
    "Jul  1 09:01:06 authorMacBook-Pro QQ[10018]: FA||Url||taskID[2019352994] dealloc",
    "Jul  1 09:01:07 authorMacBook-Pro kernel[0]: ERROR: AppleThunderboltNHIType2 failed",
]
LINUX = r"<Month> <Date> <Time> <Level> <Component>(\[<PID>\])?: <Content>"
LINUX_LINES = [
    "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 "
    "euid=0 tty=NODEVssh ruser= rhost=218.188.2.4",
    "Jun 14 15:16:02 combo sshd(pam_unix)[19937]: check pass; user unknown",
    "Jun 14 15:16:02 combo sshd(pam_unix)[19937]: check pass; user unknown",
]


def _ingest(tmp_path, name, lines, fmt):
    con = db.connect(tmp_path / "x.duckdb")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    r = logs.ingest_file(con, path, fmt=fmt, year=2017)
    rows = con.execute("SELECT host, component, level FROM log_lines ORDER BY line_no").fetchall()
    return r, rows


def test_the_user_field_after_the_time_is_the_host(tmp_path):
    r, rows = _ingest(tmp_path, "mac.log", MAC_LINES, MAC)
    assert [h for h, _, _ in rows] == ["calvisitor-10-105-160-95"] * 2 + ["authorMacBook-Pro"] * 2
    assert [c for _, c, _ in rows] == ["kernel", "com.apple.CDScheduler", "QQ", "kernel"]
    note = next(n for n in r.notes if "<User>" in n)
    assert "holds host names" in note and "'calvisitor-10-105-160-95'" in note


def test_a_level_field_holding_a_host_becomes_the_host(tmp_path):
    r, rows = _ingest(tmp_path, "linux.log", LINUX_LINES, LINUX)
    assert {h for h, _, _ in rows} == {"combo"}
    assert not any("level field" in n for n in r.notes)  # it is the host, not a bad level
    assert any("<Level>" in n and "holds host names" in n for n in r.notes)


@pytest.mark.parametrize("fmt,lines", [
    # a component after the time (HealthApp), levels after it (Spark), numbers (HDFS)
    (r"<Time>\|<Component>\|<Pid>\|<Content>",
     ["20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
      "20171223-22:15:29:615|Step_LSC|30002312|onExtend:1514038530000 14 0 4"]),
    ("<Date> <Time> <Level> <Component>: <Content>",
     ["17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers",
      "17/06/09 20:10:41 INFO spark.SecurityManager: Changing view acls to: yarn,curi"]),
    ("<Date> <Time> <Pid> <Level> <Component>: <Content>",
     ["081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block "
      "blk_38865049064139660 terminating",
      "081109 203807 222 INFO dfs.DataNode$PacketResponder: PacketResponder 0 for block "
      "blk_-6952295868487656571 terminating"]),
])
def test_fields_that_are_not_hosts_stay_what_they_are(tmp_path, fmt, lines):
    r, rows = _ingest(tmp_path, "a.log", lines, fmt)
    assert {h for h, _, _ in rows} == {None}
    assert not any("holds host names" in n for n in r.notes)


def test_thunderbird_hosts_after_its_time_fields(tmp_path):
    from paths import SHARED_DATA

    loghub = SHARED_DATA / "loghub"
    if not loghub.is_dir():
        pytest.skip("shared Loghub data not present")
    fmt = json.loads((loghub / "formats.json").read_text())["Thunderbird"]["log_format"]
    path = loghub / "Thunderbird" / "Thunderbird_2k.log"
    expected = [line.split()[3] for line in path.read_text().splitlines()]
    con = db.connect(tmp_path / "x.duckdb")
    logs.ingest_file(con, path, fmt=fmt)
    got = [h for (h,) in con.execute("SELECT host FROM log_lines ORDER BY line_no").fetchall()]
    assert got == expected and len(set(got)) > 1


NODE = r"<Date> <Time> - <Level>  \[<Node>:<Component>@<Line>\] - <Content>"


def _node_lines(nodes: list[str]) -> list[str]:
    return [f"2015-07-29 19:04:{i % 60:02},071 - WARN  [{node}:Sender@{100 + i}] - send {i} failed"
            for i, node in enumerate(nodes)]


def test_a_field_named_as_the_host_that_holds_thread_names_is_no_host(tmp_path):
    """`<Node>` is a host by its name; where most of its values are thread or class names
    (a lower-case letter before a capital, brackets) it is not stored as the host, so no
    question asks which host failed first, and the ingest says why."""
    threads = ["SendWorker", "RecvWorker", "QuorumPeer[myid=1]/0", "CommitProcessor",
               "/10.10.34.11", "NIOServerCxn.Factory"] * 4
    r, rows = _ingest(tmp_path, "threads.log", _node_lines(threads), NODE)
    assert {h for h, _, _ in rows} == {None}
    assert {c for _, c, _ in rows} == {"Sender"}
    note = next(n for n in r.notes if "<Node>" in n)
    assert "not stored as the host" in note and "'SendWorker'" in note


def test_a_field_named_as_the_host_that_holds_hosts_and_addresses_stays_the_host(tmp_path):
    hosts = ["web-01", "db.internal", "R02-M1-N0-C", "/10.10.34.11", "10.0.0.7",
             "NODE7"] * 4
    r, rows = _ingest(tmp_path, "hosts.log", _node_lines(hosts), NODE)
    assert [h for h, _, _ in rows][:6] == ["web-01", "db.internal", "R02-M1-N0-C",
                                           "/10.10.34.11", "10.0.0.7", "NODE7"]
    assert not any("not stored as the host" in n for n in r.notes)
