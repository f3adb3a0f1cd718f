"""Incident links (rlforge.links): tickets joined to the commits that name them and to the
log windows that share their identifiers or burst on the service they name, with the
evidence and a confidence; incremental over ingests; `rlforge links`.

Everything is real: a CSV ticket export, a git repository made in tmp_path, JSON-lines
logs, the `rlforge ingest` commands and DuckDB.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
from pathlib import Path

from rlforge import db, links

T0 = dt.datetime(2024, 9, 17, 14, 0)


def _tickets(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "subject", "description", "status", "created_at",
                                           "resolution"])
        w.writeheader()
        for r in rows:
            w.writerow({"status": "solved", "resolution": "", **r})
    return path


TICKETS = [
    # reports the outage with the request id the logs hold
    {"id": "SUP-7", "subject": "Checkout fails", "created_at": "2024-09-17 14:12:00",
     "description": "Hello, checkout fails since a few minutes with a 503. Request id "
                    "req_7Hk2pQ9xW3 if that helps."},
    # fixed by a commit that names it; also names the service that burst
    {"id": "10117", "subject": "Inventory sync keeps running", "created_at": "2024-09-17 14:20:00",
     "description": "Our inventory sync has been stuck since 2pm and stock levels are wrong."},
    # decoys: an id in no log, a service on a quiet day, a ticket nobody references
    {"id": "SUP-8", "subject": "Invoice question", "created_at": "2024-09-17 14:15:00",
     "description": "About request req_ZZ99nope11: why was I charged twice?"},
    {"id": "SUP-9", "subject": "Inventory sync question", "created_at": "2024-03-02 10:00:00",
     "description": "How often does the inventory sync run?"},
    {"id": "10200", "subject": "Dark mode", "created_at": "2024-09-10 09:00:00",
     "description": "Please add dark mode; host pg-main-01 is mentioned for no reason."},
]


def _logs(path: Path) -> Path:
    lines = []
    for i in range(600):  # a quiet day of info lines on two hosts, then a burst of errors
        t = T0 - dt.timedelta(hours=5) + dt.timedelta(seconds=30 * i)
        lines.append({"ts": t.isoformat() + "Z", "level": "info", "host": "pg-main-01",
                      "msg": f"sync batch {i} ok"})
    for i in range(40):
        t = T0 + dt.timedelta(minutes=5, seconds=6 * i)
        rid = "req_7Hk2pQ9xW3" if i in (3, 4) else f"req_{i:04d}abcdEF"
        lines.append({"ts": t.isoformat() + "Z", "level": "error", "host": "pg-main-01",
                      "msg": f"checkout failed: db timeout request_id={rid}"})
    with open(path, "w") as fh:
        for rec in lines:
            fh.write(json.dumps(rec) + "\n")
    return path


def _git(repo: Path, *args: str, when: str | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    commits = [
        ("2024-01-05T10:00:00+00:00", "Initial import"),
        ("2024-01-06T10:00:00+00:00", "Handle ticket 10117 style inputs"),  # before the ticket existed
        ("2024-09-17T16:00:00+02:00", "Stop the full resync loop\n\nFixes #10117."),
        ("2024-09-18T09:00:00+00:00", "Merge pull request #10200 from dev/dark"),
        ("2024-09-18T10:00:00+00:00", "Bump the pool size to 20000 connections"),
        ("2024-09-18T11:00:00+00:00", "Retry checkout on db timeouts (SUP-7)\n\n"
                                      "See https://help.example.org/browse/SUP-7"),
    ]
    for i, (when, message) in enumerate(commits):
        (path / "f.txt").write_text(f"{i}\n")
        _git(path, "add", "f.txt")
        _git(path, "commit", "-q", "-m", message, when=when)
    return path


def _by_ticket(con, floor=0.0) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in links.links(con, floor):
        out.setdefault(r["ticket_id"], []).append(r)
    return out


def test_links_join_tickets_commits_and_log_windows_with_evidence(cli, tmp_path, db_path):
    assert cli("ingest", "tickets", _tickets(tmp_path / "t.csv", TICKETS), "-q").exit_code == 0
    log = cli("ingest", "logs", _logs(tmp_path / "checkout-api.jsonl"))
    assert log.exit_code == 0, log.output
    assert "links: " in log.output  # the ingest linked what it loaded
    assert cli("ingest", "commits", _repo(tmp_path / "repo"), "-q").exit_code == 0
    con = db.connect(db_path)
    above = _by_ticket(con, links.THRESHOLD)
    # SUP-7: the commit naming it (key and URL) and the log window holding its request id
    sup7 = {r["target_kind"]: r for r in above["csv:SUP-7"]}
    assert {e["kind"] for e in sup7["commit"]["evidence"]} == {"ticket_key", "ticket_url"}
    window = sup7["log_window"]
    assert [e["value"] for e in window["evidence"] if e["kind"] == "shared_id"] == ["req_7Hk2pQ9xW3"]
    assert window["window_start"] <= T0 + dt.timedelta(minutes=5, seconds=20) <= window["window_end"]
    assert window["window_end"] - window["window_start"] < dt.timedelta(minutes=15)
    assert window["host"] == "pg-main-01" and window["log_file"].endswith("checkout-api.jsonl")
    # 10117: "Fixes #10117" after the ticket; the same number in a commit months before it
    # does not count (it could not fix a ticket not yet written)
    c10117 = [r for r in above["csv:10117"] if r["target_kind"] == "commit"]
    assert len(c10117) == 1 and c10117[0]["confidence"] >= 0.85
    subjects = dict(con.execute("SELECT sha, subject FROM commits").fetchall())
    assert subjects[c10117[0]["sha"]] == "Stop the full resync loop"
    everything = _by_ticket(con)
    old = [r for r in everything["csv:10117"] if subjects.get(r["sha"]) == "Handle ticket 10117 style inputs"]
    assert old and old[0]["confidence"] < links.THRESHOLD
    # decoys: nothing at or above the threshold
    for decoy in ("csv:SUP-8", "csv:SUP-9", "csv:10200"):
        assert decoy not in above, above.get(decoy)
    con.close()


def test_a_burst_on_a_named_service_links_a_ticket_opened_soon_after(cli, tmp_path, db_path):
    """No shared id and no commit: the ticket names the service whose log burst minutes
    before it was opened, and no other burst of that service is near."""
    rows = [{"id": "SUP-20", "subject": "Checkout API down?", "created_at": "2024-09-17 14:25:00",
             "description": "The checkout api returns errors for all our tills."},
            {"id": "SUP-21", "subject": "Checkout API question", "created_at": "2024-09-17 19:30:00",
             "description": "Does the checkout api support refunds?"}]
    assert cli("ingest", "tickets", _tickets(tmp_path / "t.csv", rows), "-q").exit_code == 0
    assert cli("ingest", "logs", _logs(tmp_path / "checkout-api.jsonl"), "-q").exit_code == 0
    con = db.connect(db_path)
    above = _by_ticket(con, links.THRESHOLD)
    (window,) = above["csv:SUP-20"]
    assert [e["kind"] for e in window["evidence"]] == ["time_component"]
    assert "checkout-api burst 2024-09-17 14:05" in window["evidence"][0]["value"]
    assert "csv:SUP-21" not in above  # opened hours after the burst
    con.close()


def test_links_are_updated_incrementally_and_shown_by_the_command(cli, tmp_path, db_path):
    assert cli("ingest", "tickets", _tickets(tmp_path / "t.csv", TICKETS), "-q").exit_code == 0
    con = db.connect(db_path)
    assert links.links(con, 0.0) == []  # nothing to link a ticket to yet
    con.close()
    assert cli("ingest", "commits", _repo(tmp_path / "repo"), "-q").exit_code == 0
    con = db.connect(db_path)
    assert {r["target_kind"] for r in links.links(con)} == {"commit"}
    again = links.update(con)  # nothing new: no work
    assert (again.new_runs, again.tickets_relinked) == (0, 0)
    con.close()
    assert cli("ingest", "logs", _logs(tmp_path / "checkout-api.jsonl"), "-q").exit_code == 0
    shown = cli("links", "--json")
    rows = json.loads(shown.stdout)
    assert {(r["ticket_id"], r["target_kind"]) for r in rows} == {
        ("csv:SUP-7", "commit"), ("csv:SUP-7", "log_window"), ("csv:10117", "commit")}
    con = db.connect(db_path)
    before = sorted((r["link_id"], r["confidence"]) for r in links.links(con, 0.0))
    full = links.update(con, full=True)  # relinking everything gives the same links
    assert sorted((r["link_id"], r["confidence"]) for r in links.links(con, 0.0)) == before
    assert full.tickets_relinked == len(TICKETS) and len(before) >= 4
    con.close()
    table = cli("links")
    assert table.exit_code == 0 and "csv:SUP-7" in table.output and "shared_id" in table.output
    one = json.loads(cli("links", "--json", "--ticket", "csv:10117").stdout)
    assert [r["target_kind"] for r in one] == ["commit"]


def test_key_references_in_commit_messages():
    refs = links.key_references
    assert [(k, v) for k, v, _ in refs("Fix login (PROJ-123)")] == [("ticket_key", "PROJ-123")]
    assert refs("Fixes #42")[0][2] > refs("Touches #42")[0][2]
    assert refs("Merge pull request #42 from a/b") == []
    assert [v for _, v, _ in refs("see https://jira.example.org/browse/ABC-9?focus=1")] == ["ABC-9"]
    assert refs("bumped to v1.2.3 on 2024-09-17") == []
    assert [v for _, v, _ in refs("SUPPORT-77 done", patterns=[r"SUPPORT-([0-9]+)"])] == ["SUPPORT-77", "77"]
    assert refs("Speed up the index (#3156)")[0][2] < links.THRESHOLD  # a squash merge's PR
    assert refs("Speed up the index\n\nFixes #3156")[0][2] >= links.THRESHOLD
    assert refs('Revert "Fix login (PROJ-123)"')[0][2] < links.THRESHOLD
    assert len(refs("PROJ-123: fix it; PROJ-123 again, see PROJ-123")) == 1
    assert refs("Merge branch 'ann/PROJ-77-fix-login'") == [("ticket_key", "PROJ-77", 0.6)]
    assert not links.is_identifier("4.12.3") and not links.is_identifier("2024-09-17T14:05:02Z")
    assert not links.is_identifier("PHONE_43d714") and links.is_identifier("req_7Hk2pQ9xW3")


def test_a_bare_number_in_an_unrelated_history_is_not_a_link(cli, tmp_path, db_path):
    """A help desk numbers its tickets 1, 2, 3...; so does every issue tracker. "Fixes
    #124" in a repository's history years from ticket 124 is another tracker's issue: it
    linked at 0.85 before. Declared as the help desk's repository, it is that ticket's."""
    tickets = _tickets(tmp_path / "t.csv", [
        {"id": "53", "subject": "Cannot export", "created_at": "2024-05-02 10:00:00",
         "description": "The export button does nothing."},
        {"id": "124", "subject": "Login loop", "created_at": "2024-05-03 11:00:00",
         "description": "After signing in I am sent back to the sign-in page."},
        {"id": "125", "subject": "Slow reports", "created_at": "2024-05-04 12:00:00",
         "description": "Reports take a minute to load."},
    ])
    assert cli("ingest", "tickets", tickets, "-q").exit_code == 0
    repo = tmp_path / "parser-lib"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    history = [("2020-07-15T10:00:00+00:00", "Handle unicode escapes\n\nCloses #53"),
               ("2025-03-01T10:00:00+00:00", "Fix #124: crash when the input is empty"),
               ("2021-01-10T10:00:00+00:00", "Speed up the tokenizer, see issue 125"),
               # near ticket 125's time: corroborated by it
               ("2024-05-05T09:00:00+00:00", "Cache report queries\n\nFixes #125")]
    for i, (when, message) in enumerate(history):
        (repo / "f.txt").write_text(f"{i}\n")
        _git(repo, "add", "f.txt")
        _git(repo, "commit", "-q", "-m", message, when=when)
    assert cli("ingest", "commits", repo, "-q").exit_code == 0
    con = db.connect(db_path)
    above = _by_ticket(con, links.THRESHOLD)
    con.close()
    assert "csv:124" not in above and "csv:53" not in above
    assert [r["target_kind"] for r in above["csv:125"]] == ["commit"]
    # The repository declared as the help desk's: its numbers are its tickets', however
    # long after (never before: a commit cannot fix a ticket not yet written).
    (tmp_path / "rlforge.toml").write_text('[links]\nrepos = { "parser-lib" = "csv" }\n')
    result = cli("--config", tmp_path / "rlforge.toml", "links", "--update", "--json")
    assert result.exit_code == 0, result.output
    con = db.connect(db_path)
    above = _by_ticket(con, links.THRESHOLD)
    con.close()
    assert {"csv:124", "csv:125"} <= set(above) and "csv:53" not in above
