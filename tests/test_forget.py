"""`rlforge forget` end to end on sample_data: a customer's deletion request.

One project is made per module (the three sample ticket exports ingested, reply and
triage tasks built, a run of a scripted policy, an export) and restored at the same path
before each test, since the database stores absolute paths. A customer is chosen from the
data (one whose ticket built tasks and sits in another task's knowledge base), never
named here; the strings that identify them are taken from the raw sample file: the
e-mail they wrote and lines of their tickets that no other ticket of the three exports
holds.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from paths import ROOT, SAMPLE_DATA
from rated_policy import RatedPolicy

TICKETS = SAMPLE_DATA / "tickets"
KILL_HOOK = "RLFORGE_TEST_FORGET_KILL_AFTER"  # rlforge.forget.KILL_HOOK


def _cli(db: Path, *args: str):
    from rlforge.cli import app

    result = CliRunner().invoke(app, ["--db", str(db), *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory, shared_cache):
    """(the project directory, a pristine copy of it): ingested, built, run, exported."""
    base = tmp_path_factory.mktemp("forget")
    proj = base / "proj"
    proj.mkdir()
    db = proj / "rlforge.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("RLFORGE_"):
                mp.delenv(key)
        mp.setenv("HOME", str(base))
        mp.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
        mp.chdir(proj)
        _cli(db, "ingest", "tickets", TICKETS / "tickets.csv", "-q")
        _cli(db, "ingest", "tickets", TICKETS / "zendesk_export.json",
             "--map", "category=custom_fields.360041872211", "-q")
        _cli(db, "ingest", "tickets", TICKETS / "jira_export.csv", "--map", "category=Component/s", "-q")
        _cli(db, "build-tasks", "--out", proj / "tasks", "--generators",
             "tickets.reply,tickets.triage", "--limit", "24", "--seed", "1", "--no-validate", "-q")
        tasks = {p.name: p for p in (proj / "tasks").iterdir() if p.is_dir()}
        policy = RatedPolicy(tasks).start()
        try:
            _cli(db, "run", proj / "tasks", "--base-url", policy.url, "--model", "scripted",
                 "--samples", "2", "--runs-dir", proj / "runs", "--run-id", "r1", "--seed", "3", "-q")
        finally:
            policy.stop()
        _cli(db, "export", "tasks", proj / "tasks", "-f", "jsonl", "--split", "all",
             "-o", proj / "exported", "-q")
    pristine = base / "pristine"
    shutil.copytree(proj, pristine, symlinks=True)
    return proj, pristine


@pytest.fixture
def proj(project, monkeypatch):
    """The project as built, at its own path (restored for each test)."""
    path, pristine = project
    shutil.rmtree(path)
    shutil.copytree(pristine, path, symlinks=True)
    monkeypatch.chdir(path)
    return path


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _customer(proj: Path) -> tuple[str, list[str]]:
    """(e-mail as written, identifying strings) of a tickets.csv customer whose tickets
    built tasks: preferably one whose ticket is in another task's knowledge base, who
    signed with the e-mail, and whose stored text keeps a string of theirs alone."""
    con = duckdb.connect(str(proj / "rlforge.duckdb"), read_only=True)
    built = [k for (k,) in con.execute("SELECT unnest(source_keys) FROM tasks").fetchall()]
    stored = con.execute("SELECT string_agg(concat_ws(' ', subject, body, resolution), ' ') "
                         "FROM tickets").fetchall()[0][0]
    con.close()
    rows = _rows(TICKETS / "tickets.csv")
    by_id = {f"csv:{r['id']}": r for r in rows}
    task_text = "\n".join(p.read_text(errors="replace") for p in (proj / "tasks").rglob("*.md"))
    raw = {name: (TICKETS / name).read_text() for name in ("zendesk_export.json", "jira_export.csv")}

    def strings(email: str) -> list[str]:
        theirs = [r for r in rows if r["requester_email"] == email]
        others = "\n".join(json.dumps(r) for r in rows if r["requester_email"] != email)
        others += "\n".join(raw.values())
        text = "\n".join(r[f] for r in theirs for f in ("subject", "description", "resolution"))
        pieces = {p.strip() for p in re.split(r"(?<=[.!?])\s+|\n", text)} | set(text.split())
        return [email] + sorted(p for p in pieces if len(p) >= 8 and '"' not in p
                                and p not in others and (len(p) >= 25 or re.search(r"\d", p)))

    def score(email: str) -> tuple[bool, bool, bool, int]:
        ids = [i for i, r in by_id.items() if r["requester_email"] == email]
        return (any(f"ticket: {i}\n" in task_text for i in ids),  # in a knowledge base
                any(s in stored for s in strings(email)[1:]),  # a string of theirs stored
                any(email in by_id[i]["description"] for i in ids),  # signed with it
                sum(built.count(i) for i in ids))

    email = max(sorted({by_id[k]["requester_email"] for k in built if k in by_id}), key=score)
    return email, strings(email)


def _pseudonym(proj: Path, email: str) -> str:
    from rlforge.ingest.redaction.redactor import Redactor

    con = duckdb.connect(str(proj / "rlforge.duckdb"), read_only=True)
    key = con.execute("SELECT value FROM meta WHERE key = 'redaction_key'").fetchall()[0][0]
    con.close()
    return Redactor(bytes.fromhex(key), kinds=()).pseudonym("EMAIL", email)


def _in_database(db: Path, needle: str) -> list[str]:
    """The table.column cells (any column, as text) that hold `needle`."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = []
        for table, column in con.execute(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = 'main'").fetchall():
            n = con.execute(f'SELECT count(*) FROM "{table}" WHERE contains("{column}"::VARCHAR, ?)',
                            [needle]).fetchall()[0][0]
            if n:
                found.append(f"{table}.{column}")
        return found
    finally:
        con.close()


def _in_files(root: Path, needle: str) -> list[str]:
    forms = {needle, json.dumps(needle)[1:-1], json.dumps(needle, ensure_ascii=False)[1:-1]}
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file()
            and any(f in p.read_bytes().decode("utf-8", errors="replace") for f in forms)]


def _forget(proj: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`rlforge forget ...` in a process of its own (this worktree's rlforge)."""
    return subprocess.run([sys.executable, "-m", "rlforge", "--db", str(proj / "rlforge.duckdb"),
                           "forget", *args], cwd=proj, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300)


def test_forget_a_customer_leaves_no_text_or_pseudonym(proj):
    db = proj / "rlforge.duckdb"
    email, strings = _customer(proj)
    pseudonym = _pseudonym(proj, email)
    # before: the customer is in the database, task directories and the run's files
    assert _in_database(db, pseudonym)
    assert [s for s in strings if _in_database(db, s)], "no line of theirs survived redaction"
    assert [s for s in [*strings, pseudonym] if _in_files(proj / "tasks", s)]
    assert [s for s in [*strings, pseudonym] if _in_files(proj / "runs", s)]

    dry = _forget(proj, email, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["matched"] and planned["dry_run"] and planned["counts"]["tickets"] >= 1
    whys = {t["why"] for t in planned["tasks"]}
    assert whys == {"built from", "holds a copy"}  # their tasks, and a knowledge base of theirs
    assert planned["counts"]["rollouts"] >= 2 and planned["counts"]["run_file_lines"] >= 2
    assert _in_database(db, pseudonym), "a dry run changed the database"

    done = _forget(proj, email)
    assert done.returncode == 0, done.stderr
    assert "removed" in done.stdout and "tasks retired" in done.stdout
    assert "\x1b[" not in done.stdout  # readable in a pipe: no terminal codes
    assert email not in done.stdout + done.stderr

    for s in [*strings, pseudonym]:
        assert not _in_database(db, s), f"{s!r} still in {_in_database(db, s)}"
        assert not _in_files(proj / "tasks", s), f"{s!r} still in {_in_files(proj / 'tasks', s)}"
        assert not _in_files(proj / "runs", s), f"{s!r} still in {_in_files(proj / 'runs', s)}"

    con = duckdb.connect(str(db), read_only=True)
    log = con.execute("SELECT key_kind, status, counts, pending FROM forget_log").fetchall()
    versions = con.execute("SELECT version, retired FROM dataset_versions ORDER BY version").fetchall()
    stale = con.execute("SELECT out FROM exports WHERE stale_since IS NOT NULL").fetchall()
    con.close()
    (kind, status, counts, pending), = log
    assert (kind, status, pending) == ("email", "done", None)
    counts = json.loads(counts)
    assert counts["tickets"] == planned["counts"]["tickets"] and counts["tasks"] >= 2
    assert versions[-1] == (2, counts["tasks"])
    assert stale == [(str(proj / "exported"),)] and "exported" in done.stdout

    # the retirements show in `tasks diff`, each with its lineage
    diff = subprocess.run([sys.executable, "-m", "rlforge", "--db", str(db), "tasks", "diff",
                           "1", "2", "--dir", str(proj / "tasks"), "--json"], cwd=proj,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    d = json.loads(diff.stdout)
    assert len(d["removed"]) == counts["tasks"] and not d["added"] and not d["changed"]
    assert {r["task_id"] for r in d["removed"]} == {t["task_id"] for t in planned["tasks"]}
    manifest = __import__("polars").read_parquet(proj / "tasks" / "manifest.parquet")
    retired = set(manifest.filter(manifest["status"] == "retired")["task_id"])
    assert retired == {t["task_id"] for t in planned["tasks"]}
    assert all(not (proj / "tasks" / t).exists() for t in retired)


def test_forget_is_idempotent(proj):
    email, _ = _customer(proj)
    first = _forget(proj, email)
    assert first.returncode == 0 and "removed" in first.stdout
    state = _state(proj)
    second = _forget(proj, email)
    assert second.returncode == 0, second.stderr
    assert "nothing matched" in second.stdout
    assert _state(proj) == state
    unknown = _forget(proj, "nobody-at-all@example.invalid")
    assert unknown.returncode == 0 and "nothing matched" in unknown.stdout
    assert _state(proj) == state
    log = _forget(proj, "--log")
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 1
    assert "key: email" in log.stdout and "tickets 1" in log.stdout
    assert email not in log.stdout and _pseudonym(proj, email) not in log.stdout


@settings(max_examples=300, deadline=None)
@given(value=st.text(alphabet="aAbZ09_.@ -ëß+(", min_size=1, max_size=8),
       text=st.text(alphabet="aAbZ09_.@ -ëß+(\n", max_size=30), fold=st.booleans())
def test_a_term_matches_alike_in_duckdb_and_python(value, text, fold):
    """What finds a key in the database (RE2) and in files (Python) agree."""
    from rlforge.forget.match import Term

    term = Term(value, fold=fold)
    in_python = re.search(term.py(), text) is not None
    in_duckdb = _MEMORY.execute("SELECT regexp_matches(?, ?)", [text, term.re2()]).fetchall()[0][0]
    assert in_python == in_duckdb


_MEMORY = duckdb.connect()


@pytest.mark.parametrize("step", ["db", "files"])
def test_kill_mid_forget_then_rerun_ends_as_one_run(proj, project, step):
    email, _ = _customer(proj)
    # the uninterrupted forget, on the project as built
    assert _forget(proj, email).returncode == 0
    expected = _state(proj)
    shutil.rmtree(proj)
    shutil.copytree(project[1], proj, symlinks=True)

    killed = _forget(proj, email, env={KILL_HOOK: step})
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    con = duckdb.connect(str(proj / "rlforge.duckdb"), read_only=True)
    assert con.execute("SELECT status FROM forget_log").fetchall() == [("pending",)]
    con.close()
    assert _state(proj) != expected  # killed half way: the files were not all done
    again = _forget(proj, email)
    assert again.returncode == 0, again.stderr
    assert "finished pending request" in again.stdout and "nothing matched" in again.stdout
    assert _state(proj) == expected


def _state(proj: Path) -> dict:
    """Everything a forget changes, less what differs between two runs of it by nature
    (times, the request's id, process ids in lock files)."""
    files = {}
    for p in sorted(proj.rglob("*")):
        rel = str(p.relative_to(proj))
        if p.is_file() and not rel.startswith("rlforge.duckdb"):
            files[rel] = "" if p.name == "lock" else hashlib.sha256(p.read_bytes()).hexdigest()
    con = duckdb.connect(str(proj / "rlforge.duckdb"), read_only=True)
    tables = {}
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables WHERE "
                                "table_schema = 'main' ORDER BY 1").fetchall():
        cols = [c for c, t in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position", [table]).fetchall()
            if not t.startswith("TIMESTAMP") and c not in ("forget_id", "build_id", "stale_forget")]
        rows = con.execute(f'SELECT {", ".join(f"{c}::VARCHAR" for c in cols)} FROM "{table}"').fetchall()
        tables[table] = sorted(map(repr, rows))
    con.close()
    return {"files": files, "tables": tables}
