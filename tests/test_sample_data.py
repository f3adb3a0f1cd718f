"""The project's own sample data: ticket exports and the demo git repository.

The demo and the task generators rely on these files being what sample_data/README.md
says: the ticket generator is deterministic and its three exports parse with the
standard library in the documented counts, with labels a reader can infer and planted
PII to redact; the demo repository builds to the same SHAs every time, and each fix
commit behaves as history.toml claims when its tests are run for real with pytest
(fail-to-pass, hang at the parent, or a test that already passes at the parent).
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TICKETS = ROOT / "sample_data" / "tickets"
REPO_SRC = ROOT / "sample_data" / "repo"
COUNTS = {"tickets.csv": 120, "zendesk_export.json": 100, "jira_export.csv": 80}
HANG_SECONDS = 2  # a fix-hang test still running after this long at the parent hangs


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    saved = list(sys.path)  # generate.py puts its folder on sys.path for its siblings
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


generate = _load(TICKETS / "generate.py", "sample_tickets_generate")
build_repo = _load(REPO_SRC / "build_repo.py", "sample_repo_build")
content = generate.c


# ---------------------------------------------------------------- tickets

def test_generator_is_deterministic_and_matches_committed_files(tmp_path):
    in_process, other_process = tmp_path / "a", tmp_path / "b"
    in_process.mkdir()
    other_process.mkdir()
    generate.main(["--out-dir", str(in_process)])
    subprocess.run([sys.executable, str(TICKETS / "generate.py"), "--out-dir",
                    str(other_process)], check=True, capture_output=True)
    for name in COUNTS:
        committed = (TICKETS / name).read_bytes()
        assert (in_process / name).read_bytes() == committed, f"{name}: regenerate it"
        assert (other_process / name).read_bytes() == committed, name


def test_other_seed_gives_other_tickets(tmp_path):
    generate.main(["--out-dir", str(tmp_path), "--seed", "7"])
    assert (tmp_path / "tickets.csv").read_bytes() != (TICKETS / "tickets.csv").read_bytes()


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_generic_csv():
    rows = _csv_rows(TICKETS / "tickets.csv")
    assert len(rows) == COUNTS["tickets.csv"]
    assert list(rows[0]) == generate.CSV_COLUMNS
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["category"] for r in rows} <= set(content.CATEGORIES)
    assert {r["priority"] for r in rows} == set(content.PRIORITIES)
    assert any("\n" in r["description"] for r in rows), "multi-line quoted fields"
    for r in rows:
        solved = r["status"] in ("resolved", "closed")
        assert bool(r["resolution"]) == solved == bool(r["resolved_at"]), r["id"]
        assert r["created_at"] < r["resolved_at"] or not solved


def test_zendesk_export():
    doc = json.loads((TICKETS / "zendesk_export.json").read_text(encoding="utf-8"))
    tickets = doc["tickets"]
    assert len(tickets) == COUNTS["zendesk_export.json"] and doc["end_of_stream"] is True
    users = {u["id"]: u for u in doc["users"]}
    needed = {"id", "subject", "description", "status", "priority", "type", "tags",
              "created_at", "updated_at", "requester_id", "assignee_id", "via",
              "custom_fields", "comments"}
    for t in tickets:
        assert needed <= set(t), t["id"]
        assert t["status"] in ("new", "open", "pending", "hold", "solved", "closed")
        assert t["comments"][0]["body"] == t["description"]
        assert t["comments"][0]["author_id"] == t["requester_id"]
        for cm in t["comments"]:
            assert {"id", "author_id", "body", "public", "created_at"} <= set(cm)
            assert cm["author_id"] in users
        times = [cm["created_at"] for cm in t["comments"]]
        assert times == sorted(times) and times[-1] == t["updated_at"]
    assert any(not cm["public"] for t in tickets for cm in t["comments"]), "internal notes"


def test_zendesk_ndjson_variant(tmp_path):
    out = tmp_path / "export.ndjson"
    generate.main(["--rows", "5", "--format", "zendesk-ndjson", "--out", str(out)])
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and all(json.loads(line)["comments"] for line in lines)


JIRA_DATE = r"\d{2}/[A-Z][a-z]{2}/\d{2} \d{1,2}:\d{2} [AP]M"


def test_jira_export():
    with open(TICKETS / "jira_export.csv", newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    assert len(rows) == COUNTS["jira_export.csv"]
    assert header.count("Labels") > 1 and header.count("Comment") > 1
    col = {name: header.index(name) for name in header}  # first of repeated names
    comments = [i for i, name in enumerate(header) if name == "Comment"]
    for row in rows:
        assert len(row) == len(header)
        assert re.fullmatch(r"SUP-\d+", row[col["Issue key"]])
        assert re.fullmatch(JIRA_DATE, row[col["Created"]])
        assert row[col["Priority"]] in ("Highest", "High", "Medium", "Low")
        for i in comments:
            if row[i]:
                assert re.fullmatch(JIRA_DATE + r";[\w:-]+;.+", row[i], re.DOTALL), row[i]


def test_bulk_csv_has_the_sample_columns_and_distinct_rows(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv.gz"
    generate.main(["--rows", "3000", "--format", "csv", "--out", str(a)])
    generate.main(["--rows", "3000", "--format", "csv", "--out", str(b)])
    rows = _csv_rows(a)
    assert len(rows) == 3000 and list(rows[0]) == generate.CSV_COLUMNS
    assert len({r["description"] for r in rows}) == 3000
    assert [r["id"] for r in rows[:3]] == ["1", "2", "3"]
    assert gzip.decompress(b.read_bytes()) == a.read_bytes()


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _iban_ok(iban: str) -> bool:
    s = iban.replace(" ", "")
    return int("".join(str(int(ch, 36)) for ch in s[4:] + s[:4])) % 97 == 1


def test_planted_pii_and_secrets_are_there_to_redact():
    text = "\n".join((TICKETS / name).read_text(encoding="utf-8") for name in COUNTS)
    cards = {re.sub(r"\D", "", m) for m in re.findall(r"\b(?:\d{4}[ -]?){3}\d{4}\b", text)}
    ibans = re.findall(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?\d{1,3})?\b", text)
    found = {
        "card": sum(_luhn_ok(c) for c in cards),
        "iban": sum(_iban_ok(i) for i in ibans),
        "api key": len(set(re.findall(
            r"\b(?:tb_live_|sk_live_|ghp_|xoxb-)[\w-]{16,}|\bAKIA[A-Z0-9]{16}\b", text))),
        "password": len(re.findall(r"password is \S+|Tried \S+\d\S", text)),
        "ipv4": len(set(re.findall(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", text))),
        "email": len(set(re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text))),
        "phone": len(set(re.findall(r"\+\d{1,2} [\d -]{8,}\d", text))),
    }
    assert all(n >= 3 for n in found.values()), found


def test_labels_are_mostly_inferable_from_the_text():
    """A crude keyword rule gets most labels right, so a triage task is fair."""
    keywords = [
        ("integration_api", r"api|webhook|shopify|woocommerce|quickbooks|xero|401|429"),
        ("privacy_deletion", r"delete|gdpr|personal data|remove"),
        ("login_access", r"log ?in|password|2fa|two.factor|sso|saml|locked"),
        ("feature_request", r"feature|suggestion|roadmap|would love|please add|plans for"),
        ("shipping_order", r"order|deliver|tracking|arrived|parcel|damaged"),
        ("performance", r"slow|lag|seconds to|timeout|504|freez|takes"),
        ("billing", r"charge|refund|invoice|vat|payment|card|bill"),
        ("account_management", r"seat|users|owner|transfer|plan|logins"),
    ]
    urgency = [("urgent", r"urgent|emergency|down|cannot take payments"),
               ("high", r"blocking|asap|complaining"), ("low", r"no rush|whenever")]

    def first(rules, text, default):
        return next((label for label, rx in rules if re.search(rx, text)), default)

    tickets = generate.draw_tickets(300, generate.DEFAULT_SEED)
    cat = sum(first(keywords, (t.subject + " " + t.messages[0].text).lower(), "bug_report")
              == t.category for t in tickets) / len(tickets)
    pri = sum(first(urgency, t.messages[0].text.lower(), "normal") == t.priority
              for t in tickets) / len(tickets)
    print(f"keyword baseline: category {cat:.0%}, priority {pri:.0%}")
    assert cat >= 0.8 and pri >= 0.75
    assert cat < 1 and pri < 1, "some noise, as in real triage"


def test_solved_replies_carry_the_resolution_facts():
    for t in generate.draw_tickets(100, generate.DEFAULT_SEED):
        if t.solved:
            assert t.resolution in t.messages[-1].text and t.messages[-1].role == "agent"
            assert t.messages[-1].public
        else:
            assert t.resolution == ""


# ---------------------------------------------------------------- demo repository

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, text=True,
                          capture_output=True).stdout.strip()


@pytest.fixture(scope="module")
def dura(tmp_path_factory):
    """The demo repository, built once: (path, history, shas)."""
    path = tmp_path_factory.mktemp("dura") / "repo"
    history = build_repo.load_history()
    return path, history, build_repo.build(path, history)


def test_repo_builds_to_identical_shas(dura, tmp_path):
    path, history, shas = dura
    assert build_repo.build(tmp_path / "again", history) == shas
    assert _git(path, "rev-parse", "HEAD") == shas[-1]
    assert int(_git(path, "rev-list", "--all", "--count")) == len(history)
    assert 20 <= len(history) <= 40


def test_readme_commit_table_matches_the_build(dura):
    _, history, shas = dura
    readme = (ROOT / "sample_data" / "README.md").read_text(encoding="utf-8")
    assert build_repo.commit_table(history, shas) in readme


def test_history_has_every_kind_of_commit(dura):
    path, history, shas = dura
    kinds = [c["kind"] for c in history]
    assert kinds.count("fix") >= 6
    for kind in ("feature", "refactor", "docs", "tests", "merge", "fix-hang", "fix-no-f2p"):
        assert kind in kinds, kind
    merge = shas[kinds.index("merge")]
    assert len(_git(path, "rev-list", "--parents", "-n1", merge).split()) == 3
    for c, sha in zip(history, shas):
        changed = _git(path, "show", "--format=", "--name-only", sha).splitlines()
        tests = [f for f in changed if f.startswith("tests/")]
        if c["kind"] in ("docs", "refactor"):
            assert not tests, c["id"]
        if c["kind"] == "tests":
            assert changed == tests, c["id"]
        if c["kind"].startswith("fix"):
            assert tests and len(tests) < len(changed), c["id"]
    for who in _git(path, "log", "--format=%an <%ae>|%cn <%ce>").splitlines():
        assert "example" in who and "dev@" not in who


def _checkout(repo: Path, sha: str, dest: Path, tests_from: str | None = None) -> Path:
    """The tree of `sha` in `dest`, with tests/ taken from `tests_from` if given."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", sha], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    if tests_from:
        for name in _git(repo, "diff", "--name-only", sha, tests_from, "--", "tests"
                         ).splitlines():
            (dest / name).write_bytes(subprocess.run(
                ["git", "-C", str(repo), "show", f"{tests_from}:{name}"], check=True,
                capture_output=True).stdout)
    return dest


def _pytest(where: Path, ids: list[str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # dura needs no plugins; saves ~0.5 s a run
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *ids],
        cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


@pytest.fixture(scope="module")
def fix_runs(dura, tmp_path_factory):
    """Run every fix commit's tests at its parent (with the fix's tests) and at the
    fix itself, all at once: {(commit id, "parent"|"fix"): (exit code, output)}.
    A fix-hang parent run gets HANG_SECONDS from its start; its exit code is None
    if it was still running then."""
    path, history, shas = dura
    kinds = {c["id"]: c["kind"] for c in history}
    runs: dict[tuple[str, str], subprocess.Popen] = {}
    try:
        for c, sha in zip(history, shas):
            if not c["kind"].startswith("fix"):
                continue
            ids = c["fail_to_pass"] or c["tests_added"]
            base = tmp_path_factory.mktemp(c["id"])
            parent = _checkout(path, f"{sha}^", base / "parent", tests_from=sha)
            fixed = _checkout(path, sha, base / "fix")
            runs[(c["id"], "parent")] = _pytest(parent, ids)
            runs[(c["id"], "fix")] = _pytest(fixed, ids)
        launched = time.monotonic()  # all runs started just before this
        results = {}
        hangs = [k for k in runs if k[1] == "parent" and kinds[k[0]] == "fix-hang"]
        for key, proc in runs.items():
            if key not in hangs:
                out, _ = proc.communicate(timeout=120)
                results[key] = (proc.returncode, out)
        for key in hangs:
            proc = runs[key]
            try:
                left = max(launched + HANG_SECONDS - time.monotonic(), 0.1)
                out, _ = proc.communicate(timeout=left)
                results[key] = (proc.returncode, out)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                results[key] = (None, proc.communicate()[0])
    finally:
        for proc in runs.values():  # never leave a looping test behind
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return results


def _fix_commits(kind: str) -> list[dict]:
    return [c for c in build_repo.load_history() if c["kind"] == kind]


@pytest.mark.parametrize("commit", _fix_commits("fix"), ids=lambda c: c["id"])
def test_fix_tests_fail_at_parent_and_pass_at_fix(commit, fix_runs):
    code, out = fix_runs[(commit["id"], "parent")]
    assert code == 1, out
    for test_id in commit["fail_to_pass"]:
        assert f"FAILED {test_id}" in out, out
    code, out = fix_runs[(commit["id"], "fix")]
    assert code == 0, out


@pytest.mark.parametrize("commit", _fix_commits("fix-hang"), ids=lambda c: c["id"])
def test_hang_fix_tests_hang_at_parent_and_pass_at_fix(commit, fix_runs):
    code, out = fix_runs[(commit["id"], "parent")]
    assert code is None, f"expected a hang at the parent, got exit {code}:\n{out}"
    code, out = fix_runs[(commit["id"], "fix")]
    assert code == 0, out


@pytest.mark.parametrize("commit", _fix_commits("fix-no-f2p"), ids=lambda c: c["id"])
def test_test_added_later_passes_at_parent(commit, fix_runs):
    assert commit["fail_to_pass"] == [] and commit["tests_added"]
    for side in ("parent", "fix"):
        code, out = fix_runs[(commit["id"], side)]
        assert code == 0, out


def test_suite_passes_at_head(dura, tmp_path):
    path, _, shas = dura
    proc = _pytest(_checkout(path, shas[-1], tmp_path / "head"), [])
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert re.search(r"\d+ passed", out)
