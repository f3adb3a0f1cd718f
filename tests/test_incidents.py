"""The incident generators (`incidents.repair`, `incidents.diagnose`) on a small company
made here: a git repository whose fix commit says "Fixes SUP-7" (with a fail-to-pass
test), a CSV ticket export where SUP-7 reports the bug with a request id, and three
services' JSON-lines logs where the database bursts first, then the checkout API fails
the ticket's request, then the edge answers 503. Everything is real: `rlforge ingest`,
the links, DuckDB, git, pytest in the sandbox, validation.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from builds import build_options
from rlforge import db, links
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.incidents_diagnose import IncidentsDiagnose, KINDS, read_shown, stated_answer
from rlforge.tasks.generators.logs_common import render_sections
from rlforge.tasks.spec import BuildContext
from rlforge.verify import shortcuts_incidents as incident_shortcuts
from rlforge.verify.validate import validate_many
from test_commits_repair import PYPROJECT as CALC_PYPROJECT

DAY = dt.datetime(2024, 9, 17)
RID = "req_7Hk2pQ9xW3"
FIX_SUBJECT = "Subtract the voucher from the order total"
FIX_BODY = "apply_discount returned the discount itself, so orders with a voucher were charged it."

TICKETS = [
    {"id": "SUP-7", "subject": "Checkout charged me the wrong amount", "created_at": "2024-09-17 14:12:00",
     "description": "Hello, I used my 15% voucher on a 40.00 order and the payment page wanted "
                    "6.00, then the checkout failed with a 503. Request id " + RID + " if that "
                    "helps. Please sort this out!"},
    # names the database service, opened soon after its burst: linked by time alone, and
    # the ticket gives away which service burst first
    {"id": "SUP-11", "subject": "Is pg main down?", "created_at": "2024-09-17 14:20:00",
     "description": "Our dashboards show pg main errors since a few minutes, is it down?"},
    # quotes the fix commit's own words: its commit is no task
    {"id": "SUP-9", "subject": "Empty basket", "created_at": "2024-09-17 15:00:00",
     "description": "Please handle empty baskets in total_cents, it crashes on an empty basket."},
    # unrelated
    {"id": "SUP-8", "subject": "Dark mode", "created_at": "2024-09-10 09:00:00",
     "description": "Please add a dark mode."},
]

PYPROJECT = CALC_PYPROJECT.replace('name = "calc"', 'name = "shop"')
PRICING = """def total_cents(items):
    return sum(price * qty for price, qty in items)


def apply_discount(cents, percent):
    return cents - cents * percent // 100
"""
TESTS = """from shop.pricing import total_cents


def test_total():
    assert total_cents([(250, 2), (100, 1)]) == 600
"""


def _git(repo: Path, *args: str, when: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org",
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def make_repo(path: Path) -> dict[str, str]:
    """The shop repository; returns commit subject -> sha."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main", when="2024-09-01T10:00:00+00:00")
    shas = {}

    def commit(when: str, message: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_text(text)
        _git(path, "add", "-A", when=when)
        _git(path, "commit", "-q", "-m", message, when=when)
        shas[message.splitlines()[0]] = _git(path, "rev-parse", "HEAD", when=when)

    buggy = PRICING.replace("return cents - cents * percent // 100", "return cents * percent // 100")
    commit("2024-09-01T10:00:00+00:00", "Initial shop with totals and vouchers",
           {"pyproject.toml": PYPROJECT, "shop/__init__.py": "", "shop/pricing.py": PRICING,
            "tests/test_pricing.py": TESTS})
    commit("2024-09-16T10:00:00+00:00", "Compute voucher amounts in whole cents",
           {"shop/pricing.py": buggy})
    commit("2024-09-18T09:00:00+00:00", f"{FIX_SUBJECT}\n\n{FIX_BODY}\n\nFixes SUP-7.",
           {"shop/pricing.py": PRICING,
            "tests/test_pricing.py": TESTS.replace("import total_cents", "import apply_discount, total_cents")
            + "\n\ndef test_discount():\n    assert apply_discount(4000, 15) == 3400\n"})
    # a real fix no ticket names: a commits.repair task, never an incident
    commit("2024-09-18T10:00:00+00:00", "Count each line once when quantities repeat",
           {"shop/pricing.py": PRICING.replace("return sum(price * qty for price, qty in items)",
                                               "return sum(p * q for p, q in items if q > 0)"),
            "tests/test_pricing.py": (path / "tests/test_pricing.py").read_text()
            + "\n\ndef test_negative_quantity():\n    assert total_cents([(250, -1), (100, 3)]) == 300\n"})
    commit("2024-09-18T11:00:00+00:00", "Handle empty baskets in total_cents\n\nCloses SUP-9.",
           {"shop/pricing.py": (path / "shop/pricing.py").read_text() + "\n\nEMPTY = 0\n",
            "tests/test_empty.py": "from shop.pricing import EMPTY\n\n\ndef test_empty():\n"
                                   "    assert EMPTY == 0\n"})
    return shas


def write_tickets(path: Path) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "subject", "description", "status", "created_at"])
        w.writeheader()
        for r in TICKETS:
            w.writerow({"status": "solved", **r})
    return path


def write_logs(root: Path) -> list[Path]:
    """Three services from 09:00 to 15:00: a quiet day, then pg-main bursts at 14:03:10,
    checkout-api fails from 14:05:00 (the ticket's request at 14:05:18 on app-2) and the
    edge answers 503 a second after each checkout failure."""
    def t(h, m, s=0.0):
        return DAY + dt.timedelta(hours=h, minutes=m, seconds=s)

    logs = {"pg-main": [], "checkout-api": [], "edge": []}
    for i in range(720):
        at = t(9, 0, 30 * i)
        logs["pg-main"].append((at, "info", "db-1", f"checkpoint complete: wrote {i % 50} buffers"))
        logs["checkout-api"].append((at + dt.timedelta(seconds=7), "info", f"app-{1 + i % 2}",
                                     f"order placed request_id=req_{i:05d}okOK"))
        logs["edge"].append((at + dt.timedelta(seconds=11), "info", "edge-1",
                             f"GET /checkout 200 request_id=req_{i:05d}okOK"))
    for i in range(20):
        logs["pg-main"].append((t(14, 3, 10 + 5 * i), "error", "db-1",
                                "FATAL: sorry, too many clients already"))
    for i in range(30):
        rid = RID if i == 3 else f"req_{i:04d}failZZ"
        host = "app-2" if i == 3 else f"app-{1 + i % 2}"
        logs["checkout-api"].append((t(14, 5, 6 * i), "error", host,
                                     f"checkout failed: db timeout request_id={rid}"))
        logs["edge"].append((t(14, 5, 6 * i + 1), "error", "edge-1",
                             f"POST /checkout 503 request_id={rid}"))
    paths = []
    for name, recs in logs.items():
        p = root / f"{name}.jsonl"
        with open(p, "w") as fh:
            for at, level, host, msg in sorted(recs):
                fh.write(json.dumps({"ts": at.isoformat() + "Z", "level": level, "host": host,
                                     "msg": msg}) + "\n")
        paths.append(p)
    return paths


@pytest.fixture
def company(cli, tmp_path, db_path):
    assert cli("ingest", "tickets", write_tickets(tmp_path / "tickets.csv"), "-q").exit_code == 0
    got = cli("ingest", "logs", *write_logs(tmp_path), "-q")
    assert got.exit_code == 0, got.output
    shas = make_repo(tmp_path / "shop")
    assert cli("ingest", "commits", tmp_path / "shop", "-q").exit_code == 0
    return {"root": tmp_path, "db": db_path, "shas": shas}


def _tasks(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if (p / "task.toml").is_file())


def _meta(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]


def _specs(con, **options) -> tuple[IncidentsDiagnose, list]:
    gen = IncidentsDiagnose(**options)
    return gen, list(gen.specs(BuildContext(con, seed=3)))


def test_diagnose_answers_each_family_by_its_rule(company):
    """Each family, asked alone, gets the answer the logs were made with; the ticket that
    names the database is not asked which service burst first."""
    con = db.connect(company["db"])
    by_ticket = {r["ticket_id"] for r in links.links(con) if r["target_kind"] == "log_window"}
    assert {"csv:SUP-7", "csv:SUP-11"} <= by_ticket and "csv:SUP-8" not in by_ticket
    expect = {"id_first_service": "checkout-api", "id_failure_host": "app-2",
              "id_failure_time": "2024-09-17 14:05:18", "burst_first_service": "pg-main",
              "burst_start_minute": "2024-09-17 14:03", "burst_first_host": "db-1"}
    assert set(expect) == set(KINDS)
    for kind, answer in expect.items():  # each family asked, shortcuts or not (next test)
        gen, specs = _specs(con, families=[kind], context_tokens="8k", screen_shortcuts=False)
        sup7 = [s for s in specs if s.extra_metadata["ticket_id"] == "csv:SUP-7"]
        assert len(sup7) == 1, (kind, gen.rejections)
        spec = sup7[0]
        assert spec.reference["answer"] == answer, kind
        # the stated rule, applied to the text the policy reads, gives it too
        shown = read_shown(spec.context["window"], spec.extra_metadata["files"][0])
        assert stated_answer(kind, shown, spec.reference["stated_rule"]) == answer
        assert 0.95 * 8192 <= spec.extra_metadata["context_tokens"] <= 1.05 * 8192
        assert set(spec.extra_metadata["files"]) == {"pg-main.log", "checkout-api.log", "edge.log"}
        assert "Request id " + RID in spec.context["ticket"]
        if kind == "burst_first_service":
            sup11 = [r["reason"] for r in gen.rejections if r["source"].startswith("csv:SUP-11")]
            assert sup11 and "answer in the ticket" in sup11[0], gen.rejections
    con.close()


def test_diagnose_asks_no_question_a_shortcut_answers(company):
    """The planted day is easy: the first error of all the logs starts pg-main's burst and
    the first record holding the ticket's id is the first failure holding it. Every family
    of SUP-7 falls to a shortcut of the battery, so none is asked, and the drop names it."""
    con = db.connect(company["db"])
    screened = {}
    for kind in KINDS:
        gen, specs = _specs(con, families=[kind], context_tokens="8k")
        assert not [s for s in specs if s.extra_metadata["ticket_id"] == "csv:SUP-7"], kind
        [why] = [r["reason"] for r in gen.rejections if r["source"].startswith("csv:SUP-7")]
        assert why.startswith("shortcut ") and f"answers {kind} " in why, why
        screened[kind] = why.split()[1]
    con.close()
    assert screened["burst_first_service"] in ("first_error", "first_failure", "first_error_in_span")
    assert screened["id_failure_host"] in ("first_record_holding_id", "first_error_holding_id")
    # The strategies read only what the policy sees: the shown window, question and ticket.
    v = incident_shortcuts.view("Which service logged X? The customer's ticket quotes `r1`.",
                                "my request r1 failed",
                                "==> /app/logs/a.log <==\n2024-01-01T00:00:02 h1 ERROR web: r1 failed\n"
                                "==> /app/logs/b.log <==\n2024-01-01T00:00:01 h2 INFO db: got r1\n"
                                "2024-01-01T00:00:03 h2 WARN db: slow r1\n")
    assert v.services == ["a", "b"] and v.asked == "service"
    assert incident_shortcuts.first_record_holding_id(v) == "b"
    assert incident_shortcuts.first_error_holding_id(v) == "a"
    assert incident_shortcuts.first_failure(v) == "a" and incident_shortcuts.most_failing(v) is None


def test_diagnose_tasks_validate_at_two_budgets(company):
    con = db.connect(company["db"])
    out = company["root"] / "tasks"
    # Unscreened (the fixture's questions mostly fall to a shortcut), validated below:
    # `rlforge validate` runs the incident battery too, so a task a shortcut solves fails
    # there with the typed reason `shortcut`; every other check holds on every task.
    report = build_tasks(con, build_options(
        out=out, generators=["incidents.diagnose"], seed=5, validate=False,
        generator_options={"incidents.diagnose": {"context_tokens": "8k,16k",
                                                  "screen_shortcuts": False}}))
    con.close()
    assert report.per_generator["incidents.diagnose"]["emitted"] >= 3, report.drops
    tasks = _tasks(out)
    results = asyncio.run(validate_many(tasks))
    names = set()
    for r in results:
        assert r.ok or r.failure == "shortcut", r.reason
        checks = {c.name: c.got for c in r.checks}
        assert checks["oracle"] == 1.0 and checks["null"] == 0.0
        assert all(v == 0.0 for k, v in checks.items()
                   if k not in ("oracle", "leak") and not k.startswith("shortcut_"))
        names |= set(checks)
    assert {"empty", "every_option", "long_candidate_list", "echo_instruction"} <= names
    assert {"ticket_opened_time", "ticket_opened_minute"} & names or \
        any(n.startswith("service_the_ticket_names") for n in names)
    budgets = sorted({_meta(t)["context_budget"] for t in tasks})
    assert budgets == [8192, 16384]
    for t in tasks:
        meta = _meta(t)
        assert 0.95 * meta["context_budget"] <= meta["context_tokens"] <= 1.05 * meta["context_budget"]
        assert sorted(p.name for p in (t / "environment" / "app" / "logs").iterdir()) == \
            sorted(meta["files"])


def test_read_shown_keeps_each_file_apart():
    from rlforge.tasks.generators.logs_common import Record

    a = [Record(1, DAY + dt.timedelta(seconds=s), "h1", None, "error", f"x{s}", None, 1) for s in (0, 30, 60)]
    b = [Record(1, DAY + dt.timedelta(seconds=s), "h2", None, "error", f"y{s}", None, 2) for s in (10, 20, 30)]
    shown = read_shown(render_sections([("a.log", a), ("b.log", b)]), "a.log")
    assert [(s, len(r)) for s, r in shown] == [("a", 3), ("b", 3)]
    params = {"from": str(DAY), "to": str(DAY + dt.timedelta(minutes=5))}
    assert stated_answer("burst_first_service", shown, params) == "a"
    assert stated_answer("burst_first_host", shown, params) == "h1"
    params["from"] = str(DAY + dt.timedelta(seconds=5))  # a's burst now starts at 30 s
    assert stated_answer("burst_first_service", shown, params) == "b"
    assert stated_answer("id_failure_host", shown, {"id": "y20"}) == "h2"


@pytest.mark.slow
@pytest.mark.sandbox
def test_repair_task_is_the_ticket_not_the_commit_message(company):
    con = db.connect(company["db"])
    out = company["root"] / "tasks"
    report = build_tasks(con, build_options(
        out=out, generators=["incidents.repair"], seed=5, validate=True,
        generator_options={"incidents.repair": {
            "repo_settings": {"shop": {"collect_timeout": 20, "per_test_timeout": 10}}}}))
    drops = {d["source"].rsplit("@", 1)[-1]: d["reason"] for d in report.drops}
    con.close()
    shas = company["shas"]
    assert report.per_generator["incidents.repair"]["emitted"] == 1, json.dumps(report.drops, indent=1)
    (task,) = _tasks(out)
    meta = _meta(task)
    assert meta["commit"] == shas[FIX_SUBJECT] and meta["ticket_id"] == "csv:SUP-7"
    assert meta["link_confidence"] >= links.THRESHOLD
    # decoys: a fix no ticket names, a ticket that quotes its commit, commits without tests
    assert drops[shas["Count each line once when quantities repeat"]].startswith("no linked ticket")
    assert drops[shas["Handle empty baskets in total_cents"]].startswith("ticket quotes the commit message")
    instruction = (task / "instruction.md").read_text()
    assert "charged me the wrong amount" in instruction and RID in instruction
    for text in (FIX_SUBJECT, FIX_BODY, "Fixes SUP-7", "SUP-7"):
        assert text not in instruction
    assert "checkout failed: db timeout request_id=" + RID in instruction  # the log excerpt
    ref = json.loads((task / "tests" / "reference.json").read_text())
    assert ref["fail_to_pass"] == ["tests/test_pricing.py::test_discount"]
    assert (task / "environment" / "Dockerfile").read_text().startswith("# The starting state")
    results = asyncio.run(validate_many([task]))
    (r,) = results
    assert r.ok, r.reason
    checks = {c.name: c.got for c in r.checks}
    assert checks["oracle"] == 1.0 and checks["null"] == 0.0
    assert len(checks) > 15 and all(v == 0.0 for k, v in checks.items() if k not in ("oracle", "leak"))


def test_repair_shows_the_customer_before_the_fix_not_the_agents(company):
    """The conversation a repair task shows: the customer's messages written before the
    commit; the agents' public replies of that time only when asked; never a private note."""
    from rlforge.tasks.generators.incidents_repair import IncidentsRepair
    from rlforge.tasks.generators.repair.select import window

    con = db.connect(company["db"])
    con.execute("""INSERT INTO ticket_messages VALUES
        ('csv:SUP-7', 1, 'agent', 'a', 'Found it: apply_discount returns the discount.', TIMESTAMP '2024-09-17 15:00', true),
        ('csv:SUP-7', 2, 'customer', 'c', 'Any news on this?', TIMESTAMP '2024-09-17 16:00', true),
        ('csv:SUP-7', 3, 'agent', 'a', 'note: the voucher code path', TIMESTAMP '2024-09-17 16:30', false),
        ('csv:SUP-7', 4, 'customer', 'c', 'It works now, thanks.', TIMESTAMP '2024-09-18 12:00', true)""")
    (row,) = [r for r in window(con, 0) if r.subject == FIX_SUBJECT]
    shown = IncidentsRepair()._ticket(con, "csv:SUP-7", row)
    assert [m.text[:12] for m in shown.messages] == ["Hello, I use", "Any news on "]
    hints = IncidentsRepair(agent_messages=True)._ticket(con, "csv:SUP-7", row)
    assert [m.role for m in hints.messages] == ["customer", "agent", "customer"]
    assert "voucher code path" not in hints.text() and "works now" not in hints.text()
    con.close()
