"""sample_data's planted incidents: one company's tickets, logs and repository agree.

incidents.json (written by sample_data/tallybird_incidents.py) says, for each incident,
which ticket reported it, where its error burst is in the logs and which dura commit
fixes it. These tests ingest the real files with rlforge and build the real repository,
and check each claim: the ticket exists under that id and opened shortly after the
burst began, the identifiers it quotes are in the burst's records, the errors sit in
the stated window, the fix commit is a fail-to-pass fix whose message names the ticket;
and the decoys are what they claim (an id in no log, a number that is no ticket
reference, a service without errors that day).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from paths import SAMPLE_DATA
from rlforge import db
from rlforge.ingest import logs, tickets
from rlforge.ingest.commits import ingest_repo

TRUTH = json.loads((SAMPLE_DATA / "incidents.json").read_text(encoding="utf-8"))
HISTORY = tomllib.loads((SAMPLE_DATA / "repo" / "history.toml").read_text())["commit"]


def _module():
    spec = importlib.util.spec_from_file_location("tallybird_incidents",
                                                  SAMPLE_DATA / "tallybird_incidents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ts(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Every ticket export, every incident day's log file and the dura repository,
    ingested into one database."""
    root = tmp_path_factory.mktemp("incidents")
    con = db.connect(root / "s.duckdb")
    for name in ("tickets.csv", "zendesk_export.json", "jira_export.csv"):
        tickets.ingest_file(con, SAMPLE_DATA / "tickets" / name)
    for path in sorted(SAMPLE_DATA.glob("logs/2024-*/*")) + sorted(
            p for p in SAMPLE_DATA.glob("logs/*") if p.suffix not in (".py", ".md", ".json")
            and p.is_file()):
        logs.ingest_file(con, path)
    subprocess.run([sys.executable, str(SAMPLE_DATA / "repo" / "build_repo.py"), str(root / "dura")],
                   check=True, capture_output=True)
    ingest_repo(con, root / "dura")
    yield con
    con.close()


def _ticket_text(con, ticket_id: str) -> tuple[str, dt.datetime]:
    rows = con.execute("SELECT subject || ' ' || body || ' ' || coalesce(resolution, '') || ' ' "
                       "|| coalesce(extra::VARCHAR, ''), created_at FROM tickets "
                       "WHERE ticket_id = ?", [ticket_id]).fetchall()
    assert len(rows) == 1, ticket_id
    return rows[0]


def _records(con, file: str, where: str = "TRUE") -> int:
    return con.execute(f"SELECT count(*) FROM log_lines WHERE file = ? AND ({where})",
                       [str(SAMPLE_DATA / file)]).fetchall()[0][0]


def test_ground_truth_is_what_the_script_writes():
    assert _module().ground_truth() == TRUTH
    assert len(TRUTH["incidents"]) == 3 and len(TRUTH["decoys"]) == 3


@pytest.mark.parametrize("inc", TRUTH["incidents"], ids=lambda i: i["id"])
def test_ticket_log_and_commit_tell_one_story(inc, store):
    text, opened = _ticket_text(store, inc["ticket"])
    first = min(_ts(w["start"]) for w in inc["log"])
    assert first < opened < first + dt.timedelta(hours=2), (opened, first)
    for window in inc["log"]:
        start, end = _ts(window["start"]), _ts(window["end"])
        span = f"ts BETWEEN '{start}' AND '{end + dt.timedelta(seconds=59)}'"
        errors = "level IN ('error', 'fatal')"
        inside = _records(store, window["file"], f"{errors} AND {span}")
        outside = _records(store, window["file"], f"{errors} AND NOT ({span})")
        assert inside >= 10 and inside > 5 * outside, (window["file"], inside, outside)
        for ident in window["ids"]:
            assert ident in text, ident
            assert _records(store, window["file"], f"{span} AND (message LIKE '%{ident}%' "
                                                   f"OR fields::VARCHAR LIKE '%{ident}%')"), ident
    commit = next(c for c in HISTORY if c["message"].strip().splitlines()[0] == inc["commit_subject"])
    assert commit["kind"] == "fix" and commit["fail_to_pass"]
    message = store.execute("SELECT message FROM commits WHERE subject = ?",
                            [inc["commit_subject"]]).fetchall()[0][0]
    origin, key = inc["ticket"].split(":", 1)
    refs = {"ticket_key": rf"(?<![\w-]){re.escape(key)}\b" if origin == "jira" else rf"#{key}\b",
            "ticket_url": rf"https?://\S+/{re.escape(key)}\b"}
    for kind in set(inc["evidence"]) & set(refs):
        assert re.search(refs[kind], message), (kind, message)
    if "shared_id" not in inc["evidence"]:
        # linkable only by the key and time/component: no identifier of the logs in the text
        for ident in re.findall(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{8,}\b", text):
            assert not any(_records(store, w["file"], f"fields::VARCHAR LIKE '%{ident}%'")
                           for w in inc["log"]), ident
        service = inc["log"][0]["file"].rsplit("/", 1)[-1].split(".")[0]
        assert service in text.lower()


def test_decoys_are_not_links(store):
    by_kind = {d["kind"]: d for d in TRUTH["decoys"]}
    unknown = by_kind["request_id_in_no_log"]
    assert unknown["value"] in _ticket_text(store, unknown["ticket"])[0]
    assert store.execute("SELECT count(*) FROM log_lines WHERE message LIKE ? OR fields::VARCHAR "
                         "LIKE ?", [f"%{unknown['value']}%"] * 2).fetchall() == [(0,)]
    number = by_kind["number_not_a_ticket_key"]
    message = store.execute("SELECT message FROM commits WHERE subject = ?",
                            [number["commit_subject"]]).fetchall()[0][0]
    assert number["value"] in message
    assert not re.search(rf"#{number['value']}|(ticket|issue|case)\W+{number['value']}", message, re.I)
    assert _ticket_text(store, f"csv:{number['value']}")  # the number is a real ticket id
    quiet = by_kind["service_on_a_quiet_day"]
    text, opened = _ticket_text(store, quiet["ticket"])
    assert quiet["value"] in text.lower() and opened.date().isoformat() in quiet["log"]
    assert _records(store, quiet["log"]) > 100
    assert _records(store, quiet["log"], "level IN ('error', 'fatal')") == 0


def test_every_incident_is_linked_and_no_false_link_reaches_the_threshold(store):
    """rlforge.links over the whole sample_data (300 tickets, five days of logs, the dura
    history): each planted incident's ticket is linked to its fix commit and to the log
    file holding its burst, and every link at or above the default threshold is one of
    an incident's (ticket -> its commit or one of its log files)."""
    from rlforge import links

    links.update(store, full=True)
    got = set()
    for r in links.links(store):
        target = r["subject"] if r["target_kind"] == "commit" else \
            str(Path(r["log_file"]).relative_to(SAMPLE_DATA))
        got.add((r["ticket_id"], r["target_kind"], target))
    wanted, allowed = set(), set()
    for inc in TRUTH["incidents"]:
        wanted.add((inc["ticket"], "commit", inc["commit_subject"]))
        primary = [w for w in inc["log"] if w["ids"]] or inc["log"][:1]
        wanted |= {(inc["ticket"], "log_window", w["file"]) for w in primary}
        allowed |= {(inc["ticket"], "log_window", w["file"]) for w in inc["log"]}
    allowed |= wanted
    print(f"\nlinks at >= {links.THRESHOLD}: {len(got)}; planted found {len(wanted & got)}/{len(wanted)}")
    assert wanted <= got, sorted(wanted - got)
    assert got <= allowed, sorted(got - allowed)
