"""How `commits.repair` spends its sandboxes: a commit its first runs already drop is not
run again; the fix runs first and the parent only the tests that passed with it; candidates are checked side by side, kept in a fixed order; a build in a pipe
says how many were checked, kept and dropped, at what rate, and how long is left.

A real git history, real pytest, the real sandbox; the pool's `run` is counted, not
replaced.
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest

from rlforge import db
from rlforge.cli.common import rate_eta
from rlforge.ingest.commits import ingest_repo
from rlforge.sandbox.pool import SandboxPool
from rlforge.tasks.build import build_tasks
from builds import build_options
from test_commits_repair import MUL_TEST, OPS, PYPROJECT, TESTS, Repo

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

SETTINGS = {"repo_settings": {"calc": {"collect_timeout": 4, "per_test_timeout": 5}}}
DIV_FIX = ("def div(a, b):\n    if b == 0:\n        raise ZeroDivisionError('cannot divide by zero')\n"
           "    return a / b")


def _history(path: Path) -> dict[str, str]:
    """calc with one commit whose test already passes at the parent (dropped: no F2P; its
    literal assert gets it past the screen of `test_repair_screen`) and one real fix
    (kept); {subject: sha}."""
    r = Repo(path)
    shas = {}
    shas["init"] = r.commit("Initial calculator with add, sub, mul and div",
                            {"pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/ops.py": OPS,
                             "tests/test_ops.py": TESTS})
    shas["div"] = r.commit("div by zero: say what went wrong",
                           {"calc/ops.py": OPS.replace("def div(a, b):\n    return a / b", DIV_FIX),
                            "tests/test_div.py": "import pytest\nfrom calc.ops import div\n\n\n"
                                                 "def test_div_by_zero():\n"
                                                 "    with pytest.raises(ZeroDivisionError):\n"
                                                 "        div(1, 0)\n"
                                                 "    assert div(6, 3) == 2.0\n"})
    shas["mul"] = r.commit(
        "mul returns the sum of its arguments instead of the product\n\nmul(3, 4) gives 7.",
        {"calc/ops.py": (path / "calc/ops.py").read_text().replace(
            "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"),
         "tests/test_ops.py": TESTS + MUL_TEST})
    return shas


BROKEN_TEST = "def test_never():\n    assert 1 == 2\n"
FIXED_OPS = OPS.replace("def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b")


def _broken_history(path: Path) -> dict[str, str]:
    """calc whose suite has a test that fails everywhere, a real fix (kept), then a
    commit whose fix breaks the import of every test (nothing passes with it)."""
    r = Repo(path)
    shas = {"init": r.commit("Initial calculator with add, sub, mul and div",
                             {"pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/ops.py": OPS,
                              "tests/test_ops.py": TESTS, "tests/test_broken.py": BROKEN_TEST})}
    shas["mul"] = r.commit(
        "mul returns the sum of its arguments instead of the product\n\nmul(3, 4) gives 7.",
        {"calc/ops.py": FIXED_OPS, "tests/test_ops.py": TESTS + MUL_TEST})
    shas["unimportable"] = r.commit(
        "ops: take the operators from a module that is not installed",
        {"calc/ops.py": "from nowhere_to_be_found import *\n" + FIXED_OPS,
         "tests/test_ops.py": TESTS + MUL_TEST + "\n\ndef test_add_seven():\n    assert add(2, 7) == 9\n"})
    return shas


def _ingested(tmp_path, shared_cache, monkeypatch, history) -> dict:
    """A clean rlforge home in tmp_path with the repository `history(path)` writes there
    ingested; {root, shas, db}."""
    for key in [k for k in os.environ if k.startswith("RLFORGE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    shas = history(tmp_path / "calc")
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, tmp_path / "calc")
    con.close()
    return {"root": tmp_path, "shas": shas, "db": tmp_path / "rlforge.duckdb"}


@pytest.fixture
def calc(tmp_path, shared_cache, monkeypatch):
    return _ingested(tmp_path, shared_cache, monkeypatch, _history)


@pytest.fixture
def calc_broken(tmp_path, shared_cache, monkeypatch):
    return _ingested(tmp_path, shared_cache, monkeypatch, _broken_history)


def _checked(repo: dict, monkeypatch) -> tuple:
    """Build (no validation) with the pool's runs observed, not replaced: the report, the
    sandboxes per commit, the test ids each run reported per (commit, tree) in order, and
    the verdicts {sha: reason}."""
    runs: collections.Counter[str] = collections.Counter()
    seen: dict[tuple[str, str], list[list[str]]] = collections.defaultdict(list)
    original = SandboxPool.run

    async def counted(self, cmd, spec=None):
        result = await original(self, cmd, spec)
        if spec is not None and spec.workspace is not None:
            tree = Path(spec.workspace)
            sha = tree.parent.name.split("-")[0]  # <sha[:12]>-.../parent
            runs[sha] += 1
            results = Path(spec.logs or tree) / "results.json"
            if results.is_file():
                seen[(sha, tree.name)].append(sorted(json.loads(results.read_text())["outcomes"]))
        return result

    monkeypatch.setattr(SandboxPool, "run", counted)
    con = db.connect(repo["db"])
    report = build_tasks(con, build_options(out=repo["root"] / "tasks", generators=["commits.repair"],
                                            seed=7, validate=False,
                                            generator_options={"commits.repair": SETTINGS}))
    con = db.connect(repo["db"])
    verdicts = dict(con.execute("SELECT sha, reason FROM repair_checks").fetchall())
    con.close()
    return report, runs, seen, verdicts


def test_a_commit_its_first_runs_drop_is_not_run_again(calc, monkeypatch):
    """Before, every candidate ran its tests twice at the parent and twice with the fix;
    a commit with no fail-to-pass test after the first run of each side now stops there
    (dropped for the same reason), and a kept one still runs all four (and its held-back
    pass-to-pass copies)."""
    report, runs, _, verdicts = _checked(calc, monkeypatch)
    div, mul = calc["shas"]["div"], calc["shas"]["mul"]
    assert verdicts[div] == "no F2P" and verdicts[mul] == ""
    assert report.emitted == 1
    assert runs[div[:12]] == 2  # one at the parent, one with the fix
    # twice each: flaky tests are still found; then the held-back copies of its
    # pass-to-pass tests, twice a side
    assert runs[mul[:12]] == 4 + 4


def test_the_parent_runs_only_the_tests_that_pass_with_the_fix(calc_broken, monkeypatch):
    """The fix runs first; a commit with which no test passes is dropped after that one
    run, and a kept one runs at the parent (and again on both sides) only the tests that
    passed with the fix: a test failing everywhere is never run at the parent."""
    report, runs, seen, verdicts = _checked(calc_broken, monkeypatch)
    con = db.connect(calc_broken["db"])
    kept = dict(con.execute("SELECT sha, fail_to_pass FROM repair_checks WHERE status = 'kept'").fetchall())
    con.close()
    unimportable, mul = calc_broken["shas"]["unimportable"], calc_broken["shas"]["mul"]
    assert verdicts[unimportable] == "no F2P" and verdicts[mul] == ""
    assert report.emitted == 1 and kept[mul] == ["tests/test_ops.py::test_mul"]
    assert runs[unimportable[:12]] == 1  # with the fix only: nothing passed there
    assert runs[mul[:12]] == 4 + 4  # and its held-back copies, twice a side
    never = "tests/test_broken.py::test_never"
    assert never in seen[(mul[:12], "fixed")][0]  # the whole suite, once
    passed = [i for i in seen[(mul[:12], "fixed")][0] if i != never]
    assert seen[(mul[:12], "parent")][:2] == [passed, passed]
    assert seen[(mul[:12], "fixed")][1] == passed


def test_a_build_in_a_pipe_says_checked_kept_dropped_and_rate(calc, cli):
    (calc["root"] / "rlforge.toml").write_text(f'db = "{calc["db"]}"\n')
    result = cli("build-tasks", "--out", calc["root"] / "tasks", "--generators", "commits.repair",
                 "--no-validate")
    assert result.exit_code == 0, result.output
    done = [x for x in result.stderr.splitlines() if x.startswith("build-tasks: checking commits.repair 2/2")]
    assert done, result.stderr
    assert "(1 kept, 1 dropped" in done[0], done[0]  # then the rate, once a second has passed


def test_rate_and_time_left():
    assert rate_eta(0, 10, 5.0) == ""
    assert rate_eta(2, 10, 60.0) == "2.0/min, ETA 4m00s"
    assert rate_eta(5, None, 60.0) == "5.0/min"
    assert rate_eta(300, 3600, 60.0) == "5.0/s, ETA 11m00s"
    assert rate_eta(1, 100, 3600.0) == "1.0/h, ETA 99h00m"
