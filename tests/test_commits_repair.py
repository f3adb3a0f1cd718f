"""`commits.repair` end to end: a real git history, real pytest, the real sandbox.

`calc` is a small repository built here commit by commit so that its history holds one
commit for every reason a commit is not a task (merge, no test change, no source change,
another language, a binary file, too large, a one-word message, no parent, no fail-to-pass
test, no checkable assert, a flaky test, a hang at the parent, a dependency that cannot be
installed, a fix that changes a symlink, a fix that breaks every other test) and two that
are: a fix whose test goes into an existing test file, and one with a new test file. The
module builds the tasks once, validates them (gold 1, null and every adversarial 0, each
caught by the component meant to catch it), and checks what the policy can see,
determinism, the scoring API and the CLI. The demo repository `dura` (sample_data/) is checked against the
fail-to-pass tests its history.toml promises.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import duckdb
import pytest

from rlforge import db
from rlforge.config import Config
from rlforge.errors import UserError
import rlforge.envs
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.commits_repair import UNCHECKABLE, distinctive_lines
from rlforge.tasks.generators.repair.gitrepo import CommitSnapshot, snapshot
from rlforge.tasks.generators.repair.runners.python import RULES
from rlforge.tasks.generators.repair.score import score_patch, score_workspace, workspace_diff
from rlforge.verify.standalone.asserts import checked_fail_to_pass
from rlforge.sandbox import SandboxPool
from rlforge.verify.runner import TaskRunner, VerifierRun, fresh_workspace
from rlforge.verify.validate import validate_many
from builds import build_options, build_repair, repair_home
from paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

PYPROJECT = """[project]
name = "calc"
version = "0.1.0"
dependencies = []

[project.optional-dependencies]
test = ["pytest"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""
OPS = """def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a + b


def div(a, b):
    return a / b
"""
TESTS = """from calc.ops import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2
"""
MUL_TEST = """

def test_mul():
    from calc.ops import mul
    assert mul(3, 4) == 12
"""
BROKEN_DEP = PYPROJECT.replace('dependencies = []', 'dependencies = ["calc-helper @ file:///nonexistent/calc_helper-1.0.tar.gz"]')


class Repo:
    """A git repository written commit by commit with fixed authors and dates."""

    def __init__(self, path: Path):
        self.path = path
        self.n = 0
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        self.n += 1
        date = f"2024-03-01T10:{self.n // 60:02d}:{self.n % 60:02d}+00:00"
        env = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Ada Example",
               "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada Example",
               "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_AUTHOR_DATE": date,
               "GIT_COMMITTER_DATE": date}
        return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=self.path, env=env,
                              check=True, capture_output=True, text=True).stdout.strip()

    def commit(self, message: str, files: dict[str, str | bytes | None], links: dict[str, str] | None = None) -> str:
        for rel, data in files.items():
            p = self.path / rel
            if data is None:
                p.unlink()
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data.encode() if isinstance(data, str) else data)
        for rel, target in (links or {}).items():
            p = self.path / rel
            if p.is_symlink():
                p.unlink()
            p.symlink_to(target)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()


def build_calc(path: Path) -> dict[str, str]:
    """The calc history; returns the commit subject -> the reason it must get (or 'kept')."""
    r = Repo(path)
    expect = {}

    def c(reason, message, files, links=None):
        r.commit(message, files, links)
        expect[message.splitlines()[0]] = reason

    c("no parent commit", "Initial calculator with add, sub, mul and div",
      {"pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TESTS})
    c("kept", "mul returns the sum of its arguments instead of the product\n\nmul(3, 4) gives 7.",
      {"calc/ops.py": OPS.replace("def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"),
       "tests/test_ops.py": TESTS + MUL_TEST})
    c("no test change", "Document the operations in the README", {"README.md": "# calc\n\nadd, sub, mul, div\n"})
    c("no source change", "Tests: cover negative numbers",
      {"tests/test_ops.py": r.read("tests/test_ops.py") + "\n\ndef test_add_negative():\n    assert add(-1, -1) == -2\n"})
    r.git("checkout", "-q", "-b", "docs")
    c("no test change", "Add a usage example to the README", {"README.md": "# calc\n\n    add(1, 2)\n"})
    r.git("checkout", "-q", "main")
    r.git("merge", "-q", "--no-ff", "-m", "Merge branch 'docs' into main", "docs")
    expect["Merge branch 'docs' into main"] = "merge commit"
    c("other language", "Add a C accelerator for add",
      {"calc/fast.c": "int add(int a, int b) { return a + b; }\n",
       "calc/ops.py": r.read("calc/ops.py") + "\nFAST = True\n",
       "tests/test_fast.py": "from calc.ops import FAST\n\ndef test_fast():\n    assert FAST\n"})
    c("binary file changed", "Ship a logo with the package",
      {"calc/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)),
       "calc/ops.py": r.read("calc/ops.py") + "\nLOGO = 'logo.png'\n",
       "tests/test_logo.py": "from calc.ops import LOGO\n\ndef test_logo():\n    assert LOGO\n"})
    c("too large", "Split every operation into its own module",
      {**{f"calc/op{i}.py": f"def op{i}(x):\n    return x + {i}\n" for i in range(11)},
       "tests/test_split.py": "from calc.op1 import op1\n\ndef test_op1():\n    assert op1(1) == 2\n"})
    c("message too short", "fix",
      {"calc/ops.py": r.read("calc/ops.py") + "\n\ndef neg(a):\n    return -a\n",
       "tests/test_neg.py": "from calc.ops import neg\n\ndef test_neg():\n    assert neg(2) == -2\n"})
    c("no F2P", "div by zero: say what went wrong",
      {"calc/ops.py": r.read("calc/ops.py").replace(
          "def div(a, b):\n    return a / b",
          "def div(a, b):\n    if b == 0:\n        raise ZeroDivisionError('cannot divide by zero')\n    return a / b"),
       "tests/test_div.py": "import pytest\nfrom calc.ops import div\n\n\ndef test_div_by_zero():\n"
                            "    with pytest.raises(ZeroDivisionError):\n        div(1, 0)\n"
                            "    assert div(6, 3) == 2.0\n"})
    # The test passes on the first run in a tree and fails on the next: flaky by construction.
    c("flaky", "power() ignores negative exponents",
      {"calc/ops.py": r.read("calc/ops.py") + "\n\ndef power(a, n):\n    return a ** n\n",
       "tests/test_power.py": "import os\nfrom calc.ops import power\n\n\ndef test_power_negative():\n"
                              "    assert power(2, -1) == 0.5\n"
                              "    os.close(os.open('.power_marker', os.O_CREAT | os.O_EXCL))\n"})
    c("no test change", "Depend on the helper library", {"pyproject.toml": BROKEN_DEP})
    c("environment failed to build", "negate() flips the sign twice",
      {"calc/ops.py": r.read("calc/ops.py") + "\n\ndef negate(a):\n    return -a\n",
       "tests/test_negate.py": "from calc.ops import negate\n\ndef test_negate():\n    assert negate(3) == -3\n"})
    c("no test change", "Drop the helper library again", {"pyproject.toml": PYPROJECT})
    c("no test change", "Point calc/current.py at the operations", {}, links={"calc/current.py": "ops.py"})
    c("patch does not apply", "absolute() is missing from the current operations",
      {"calc/ops2.py": "from calc.ops import *\n\n\ndef absolute(a):\n    return abs(a)\n",
       "tests/test_abs.py": "from calc.ops2 import absolute\n\ndef test_absolute():\n    assert absolute(-2) == 2\n"},
      links={"calc/current.py": "ops2.py"})
    # The fix adds clamp.py and breaks the calc package: every other test fails with it.
    c("no P2P", "clamp() is missing",
      {"clamp.py": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
       "calc/__init__.py": "raise ImportError('calc is being rewritten')\n",
       "tests/test_clamp.py": "from clamp import clamp\n\ndef test_clamp():\n    assert clamp(5, 0, 3) == 3\n"})
    c("no test change", "Bring the calc package back", {"calc/__init__.py": ""})
    c("no test change", "Precompute a table of squares at import",
      {"calc/__init__.py": "from calc import table\n",
       "calc/table.py": "SQUARES = {}\nn = 0\nwhile True:\n    SQUARES[n % 10] = n * n\n    n += 1\n"})
    c("hang at parent", "Importing calc never finishes",
      {"calc/table.py": "SQUARES = {n: n * n for n in range(10)}\n",
       "tests/test_table.py": "from calc.table import SQUARES\n\ndef test_squares():\n    assert SQUARES[3] == 9\n"})
    c("leak", "Add average()\n\nSo that `assert average([1, 2, 3, 6]) == 3.0` holds.",
      {"calc/stats.py": "def average(xs):\n    return sum(xs) / len(xs)\n",
       "tests/test_stats.py": "from calc.stats import average\n\n\ndef test_average():\n"
                              "    assert average([1, 2, 3, 6]) == 3.0\n"})
    c("kept", "Add percent() for shares of a total",
      {"calc/percent.py": "def percent(part, total):\n    return 100.0 * part / total\n",
       "tests/test_percent.py": "from calc.percent import percent\n\n\ndef test_percent():\n"
                                "    assert percent(1, 4) == 25.0\n\n\ndef test_percent_of_zero():\n"
                                "    assert percent(0, 5) == 0.0\n"})
    # A check that the empty string passes (it is in every string) is no check: the only
    # fail-to-pass test of this fix could be passed by a digit() that returns "". Read
    # from the test file alone, it is dropped before any sandbox run.
    c("no checkable assert in the changed tests", "Add digit() for the last digit of a number",
      {"calc/digits.py": "def digit(n):\n    return str(n)[-1]\n",
       "tests/test_digits.py": "from calc.digits import digit\n\n\ndef test_digit():\n"
                               "    assert digit(1234) in \"0123456789\"\n"})
    c("no test change", "Read numbers written in text", {"calc/parse.py": "def parse(s):\n    return int(s)\n"})
    # The one checked assert of this fix's test already holds at the parent (parse("12")
    # was 12 before it); what fails there is unchecked (`is None`): forging the pytest
    # verdict alone would pass it.
    c("no checked fail-to-pass test", "parse() gives None for text that is not a number",
      {"calc/parse.py": "def parse(s):\n    try:\n        return int(s)\n    except ValueError:\n"
                        "        return None\n",
       "tests/test_parse.py": "from calc.parse import parse\n\n\ndef test_parse_text():\n"
                              "    assert parse(\"12\") == 12\n    assert parse(\"twelve\") is None\n"})
    # The verifier refuses code that looks at its caller (`callers`): the gold fix would fail.
    c("gold fix inspects its caller", "Add caller() naming the function that called it",
      {"calc/where.py": "import inspect\n\n\ndef caller():\n    return inspect.stack()[2].function\n",
       "tests/test_where.py": "from calc.where import caller\n\n\ndef named():\n    return caller()\n\n\n"
                              "def test_caller():\n    assert named() == 'test_caller'\n"})
    # It also refuses an import of a module of the tree's own packages that no tree file
    # holds (code could write it at run time): a fix that needs a generated file is dropped
    # under a reason that says so.
    c("gold fix imports a module the tree lacks", "Add version() from the generated version file",
      {"calc/about.py": "from calc._version import VERSION\n\n\ndef version():\n    return VERSION\n",
       "tests/test_about.py": "from calc.about import version\n\n\ndef test_version():\n"
                              "    assert version() == '1.2'\n"})
    return expect


REPAIR_OPTIONS = {"repo_settings": {"calc": {"collect_timeout": 4, "per_test_timeout": 5}}}


def _build(con, out: Path, validate: bool, **options) -> object:
    opts = build_options(out=out, generators=["commits.repair"], seed=7, validate=validate,
                         generator_options={"commits.repair": {**REPAIR_OPTIONS, **options}})
    return build_tasks(con, opts)


@pytest.fixture(scope="module")
def calc(tmp_path_factory, shared_cache):
    """The calc repository ingested and built into validated tasks (once for the module)."""
    root = tmp_path_factory.mktemp("calc")
    with repair_home(root, shared_cache):
        expect = build_calc(root / "calc")
        report = build_repair(root, [root / "calc"], validate=True, **REPAIR_OPTIONS)
        yield {"root": root, "repo": root / "calc", "expect": expect, "report": report,
               "db": root / "rlforge.duckdb", "out": root / "tasks", "cache": shared_cache}


def _tasks(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if (p / "task.toml").is_file())


def _meta(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]


def test_every_commit_is_kept_or_rejected_with_its_reason(calc):
    con = duckdb.connect(str(calc["db"]), read_only=True)
    subjects = dict(con.execute("SELECT repo || '@' || sha, subject FROM commits").fetchall())
    drops = con.execute("SELECT source_keys, reason FROM task_drops WHERE generator = 'commits.repair'"
                        ).fetchall()
    checks = con.execute("SELECT count(*) FROM repair_checks").fetchall()[0][0]
    con.close()
    got = {subjects[src]: reason.split(" (")[0].split(":")[0] for src, reason in drops}
    for task in _tasks(calc["out"]):
        key = f"{_meta(task)['source_keys'][0]}"
        got[subjects[key]] = "kept"
    assert got == calc["expect"]
    assert calc["report"].per_generator["commits.repair"]["emitted"] == 2
    # the 11 candidates that passed screening, less the environment failure (retried) and
    # the one whose changed tests have no checkable assert (never run)
    assert checks == 9


def test_leaks_are_code_lines_not_prose():
    snap = CommitSnapshot(
        repo="r", sha="s", parent="p", executable=set(), hidden_deleted=[], gold_diff="",
        workspace={"m.py": b'"""Changes.\n"""\nX = 1\n', "tests/test_m.py": b"import m\n"},
        hidden={"tests/test_m.py": b"import m\n\n\ndef test_y():\n    assert m.y(40) == 'forty-two'\n"},
        gold_paths=["m.py"],
        fixed={"m.py": b'"""Changes.\n\n- 1.1 y() says numbers in words, long enough\n"""\nX = 1\n'
                       b"def y(n):\n    # a comment that is long enough to count\n"
                       b"    return NUMBER_WORDS.get(n + 2, 'unknown')\n"})
    assert distinctive_lines(snap) == ["assert m.y(40) == 'forty-two'",
                                       "return NUMBER_WORDS.get(n + 2, 'unknown')"]


def test_kept_tasks_have_the_right_tests(calc):
    by_subject = {json.loads((t / "tests" / "reference.json").read_text())["hidden_files"][0]:
                  json.loads((t / "tests" / "reference.json").read_text()) for t in _tasks(calc["out"])}
    mul = by_subject["tests/test_ops.py"]
    assert mul["fail_to_pass"] == ["tests/test_ops.py::test_mul"]
    assert "tests/test_ops.py::test_add" in mul["pass_to_pass"]
    pct = by_subject["tests/test_percent.py"]
    # test_percent_of_zero only checks `== 0.0`, a value a forger could send without the fix:
    # a fail-to-pass test counts only with a checked literal that is not trivial.
    assert pct["fail_to_pass"] == ["tests/test_percent.py::test_percent"]
    assert "tests/test_table.py::test_squares" in pct["pass_to_pass"]
    assert "calc/__init__.py" not in pct["base_protected"] and "pyproject.toml" in pct["base_protected"]


def test_hidden_tests_never_reach_the_workspace_or_the_instruction(calc):
    for task in _tasks(calc["out"]):
        ref = json.loads((task / "tests" / "reference.json").read_text())
        seen = [(task / "instruction.md").read_bytes()]
        seen += [p.read_bytes() for p in (task / "environment").rglob("*") if p.is_file()]
        names = {i.split("::")[-1].split("[")[0] for i in ref["fail_to_pass"]}
        assert names
        for name in names:
            assert not any(f"def {name}".encode() in blob for blob in seen), (task.name, name)
        for rel in ref["hidden_files"]:
            hidden = (task / "tests" / "hidden" / rel).read_bytes()
            assert not (task / "environment" / "app" / rel).exists() or \
                (task / "environment" / "app" / rel).read_bytes() != hidden
        gold_added = [line[1:].strip() for line in (task / "solution" / "gold.diff").read_text().splitlines()
                      if line.startswith("+") and not line.startswith("+++") and len(line.strip()) > 12]
        assert gold_added
        instruction = (task / "instruction.md").read_text()
        assert not any(line in instruction for line in gold_added)
        assert "calc/ops.py" not in instruction and "calc/percent.py" not in instruction  # no file hints


def test_validation_proves_every_task(calc):
    results = asyncio.run(validate_many(_tasks(calc["out"])))
    caught_by = {
        "null": "fail_to_pass", "empty_patch": "fail_to_pass", "unreadable_patch": "patch_applies",
        "delete_failing_tests": "tests_untouched", "skip_failing_tests": "tests_untouched",
        "edit_hidden_tests": "tests_untouched", "conftest_forces_success": "tests_untouched",
        "sys_exit_at_import": "fail_to_pass", "os_exit_at_import": "fail_to_pass",
        "forge_results_from_source": "blind_to_tests",
        "forge_sparing_canaries": "blind_to_tests", "forge_results_at_exit": "blind_to_tests",
        "signals_the_verifier": "blind_to_tests", "shadows_pytest": "tests_untouched",
        "plugin_in_dist_info": "tests_untouched", "pytest_toml_addopts": "tests_untouched",
        "dot_pytest_toml_addopts": "tests_untouched", "plugin_in_egg_info": "tests_untouched",
        "pth_imports_forge": "tests_untouched", "shadows_stdlib_module": "tests_untouched",
        "plants_reward_files": "blind_to_tests", "routes_on_caller": "blind_to_tests",
    }
    # what needs a run: the rest fail a gate decided before any run, and are settled by it
    # (`test_submissions_settled_unrun_score_as_they_would_run`); empty_patch is null's tree
    ran = {"null", "sys_exit_at_import", "os_exit_at_import", "fix_breaks_other_module"}
    # Made only where the task has what it needs (a module that pass-to-pass tests import).
    optional = {"fix_breaks_other_module": "pass_to_pass"}
    seen = set()
    for r in results:
        assert r.ok, r.reason
        checks = {c.name: c for c in r.checks}
        assert checks["oracle"].got == 1.0
        for name, check in checks.items():
            if name in ("leak", "oracle"):
                continue
            assert check.got == 0.0
            assert f"{(caught_by | optional)[name]}=0" in check.detail, (name, check.detail)
            assert (check.settled == "") == (name in ran), (name, check.settled)
            seen.add(name)
        assert checks["empty_patch"].settled == "the same tree as null"
    assert set(caught_by) <= seen <= set(caught_by) | set(optional)


def test_submissions_settled_unrun_score_as_they_would_run(calc, tmp_path):
    """Validation scores without a run each submission that a gate decided before any run
    fails, and gives a tree that ran once its result again. On every calc task, each
    submission so settled, scored in the sandbox as well, gets the same total and outcome
    from the same gate; a refusal's whole reward is the same; and the run catches what the
    caller gate settles on its own (a forger: by the canaries)."""
    async def score_both() -> list[tuple[str, object, object]]:
        out = []
        async with SandboxPool(2) as pool:
            runner = TaskRunner(pool)
            for task in _tasks(calc["out"]):
                meta = tomllib.loads((task / "task.toml").read_text())
                subs = [{"name": "null", "files": {}}] + json.loads(
                    (task / "tests" / "validation.json").read_text())["adversarial"]
                for sub in subs:
                    files = {k: v.encode("utf-8", "surrogateescape") for k, v in sub["files"].items()}
                    settled = await runner.settle(task, meta, fresh_workspace(task, tmp_path, files))
                    if sub["name"] in ("null", "empty_patch", "sys_exit_at_import") or \
                            isinstance(settled, VerifierRun):
                        ran = await runner.verify(task, meta, fresh_workspace(task, tmp_path, files))
                        out.append((f"{task.name}:{sub['name']}", settled, ran))
        return out

    scored = asyncio.run(score_both())
    by_gate = {}
    for key, settled, ran in scored:
        name = key.split(":", 1)[1]
        assert ran.reward is not None, (key, ran.error)
        if name in ("null", "empty_patch", "sys_exit_at_import"):
            assert isinstance(settled, str) and len(settled) == 64, (key, settled)
            continue
        assert isinstance(settled, VerifierRun) and settled.reward is not None, key
        got, want = settled.reward, ran.reward
        assert got["total"] == want["total"] == 0 and got["outcome"] == want["outcome"] == "fail", key
        gate = next(n for n, c in got["components"].items() if c["gate"] and c["value"] < 1)
        assert want["components"][gate] == got["components"][gate], (key, gate)
        if got["reason"] != "inspects_caller":
            assert got == want, key
        by_gate.setdefault(gate, set()).add(name)
        if name == "forge_results_from_source":  # every test reported passed, yet caught
            comps = want["components"]
            assert comps["results_trusted"]["value"] == 0 and comps["fail_to_pass"]["value"] == 0, comps
    trees = {key: settled for key, settled, _ in scored if isinstance(settled, str)}
    runs = {key: ran.reward for key, _, ran in scored}
    for task in _tasks(calc["out"]):
        null, empty, exits = (f"{task.name}:{n}" for n in ("null", "empty_patch", "sys_exit_at_import"))
        assert trees[null] == trees[empty] != trees[exits]
        assert runs[null]["total"] == runs[empty]["total"] == 0
        assert {n: c["value"] for n, c in runs[null]["components"].items()} == \
            {n: c["value"] for n, c in runs[empty]["components"].items()}
    assert by_gate["patch_applies"] == {"unreadable_patch"}
    assert {"delete_failing_tests", "conftest_forces_success", "shadows_pytest",
            "pth_imports_forge"} <= by_gate["tests_untouched"]
    assert {"routes_on_caller", "forge_results_from_source", "forge_results_at_exit"} <= \
        by_gate["blind_to_tests"]


# The gold fix kept under a private name, the public one broken unless a test file's code
# is on the stack (what runs outside the tests goes unchecked).
TEST_FILE_ROUTER = """
import sys as _rf_sys


def _rf_wrap(real):
    def under_test_only(*args, **kwargs):
        frame = _rf_sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename.rsplit("/", 1)[-1].startswith("test_"):
                return real(*args, **kwargs)
            frame = frame.f_back
        return "broken outside the tests"
    return under_test_only


for _rf_key, _rf_fn in list(vars().items()):
    if type(_rf_fn) is type(_rf_wrap) and _rf_fn.__module__ == __name__ and _rf_key[:4] != "_rf_":
        vars()[_rf_key] = _rf_wrap(_rf_fn)
"""
# the same with every frame name built at run time
TEST_FILE_ROUTER_HIDDEN = (TEST_FILE_ROUTER
                           .replace("_rf_sys._getframe(1)", "getattr(_rf_sys, '_get' + 'frame')(1)")
                           .replace("frame.f_code.", "getattr(frame, 'f_' + 'code')."))


@pytest.mark.parametrize("router", ["plain", "hidden"])
def test_a_fix_that_answers_only_under_a_test_scores_0(calc, tmp_path, router):
    """The gold fix, its functions answering only when a `test*` frame is on the stack:
    every test passes, held-back copies too, so only the static gate
    (`blind_to_tests`) stands between it and a full score. The gold fix alone still
    scores 1 through the same API."""
    code = {"plain": TEST_FILE_ROUTER, "hidden": TEST_FILE_ROUTER_HIDDEN}[router]
    task = next(t for t in _tasks(calc["out"]) if _reference(t)["pass_to_pass"])
    ws = tmp_path / "app"
    shutil.copytree(task / "environment" / "app", ws)
    subprocess.run(["git", "apply", str(task / "solution" / "gold.diff")], cwd=ws, check=True)
    gold_paths = sorted({line[6:] for line in (task / "solution" / "gold.diff").read_text().splitlines()
                         if line.startswith("+++ b/") and line.endswith(".py")})
    assert gold_paths
    gold = {p: (ws / p).read_text() for p in gold_paths}
    routed = {p: text + "\n" + code for p, text in gold.items()}
    with rlforge.envs.load(task) as env:
        gold_reward = env.verify(gold)
        reward = env.verify(routed)
    assert gold_reward["total"] == 1.0, gold_reward
    assert reward["total"] == 0 and reward["reason"] == "inspects_caller", reward
    comps = reward["components"]
    assert comps["pass_to_pass"]["value"] == 1 and comps["fail_to_pass"]["value"] == 1, comps
    assert comps["blind_to_tests"]["value"] == 0, comps


def _reference(task: Path) -> dict:
    return json.loads((task / "tests" / "reference.json").read_text())


def test_rebuild_is_byte_identical_without_running_tests(calc, monkeypatch):
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(calc["cache"]))
    con = db.connect(calc["db"])
    before = con.execute("SELECT checked_at FROM repair_checks ORDER BY ALL").fetchall()
    out = calc["root"] / "again"
    report = _build(con, out, validate=False)
    after = con.execute("SELECT checked_at FROM repair_checks ORDER BY ALL").fetchall()
    con.close()

    def digest(root: Path) -> dict[str, str]:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file() and p.name != "manifest.parquet"}

    assert report.emitted == 3  # not validated: the leaking task is still there
    kept = {t.name for t in _tasks(calc["out"])}
    assert {k: v for k, v in digest(out).items() if k.split("/")[0] in kept} == digest(calc["out"])
    assert before == after  # every check came from repair_checks


def test_file_hints_name_the_touched_files(calc, monkeypatch, tmp_path):
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(calc["cache"]))
    con = db.connect(calc["db"])
    _build(con, tmp_path / "hinted", validate=False, file_hints=True)
    con.close()
    texts = [(t / "instruction.md").read_text() for t in _tasks(tmp_path / "hinted")]
    assert any("- `calc/ops.py`" in t for t in texts) and any("- `calc/percent.py`" in t for t in texts)


def _mul_task(calc) -> Path:
    return next(t for t in _tasks(calc["out"])
                if json.loads((t / "tests" / "reference.json").read_text())["hidden_files"] == ["tests/test_ops.py"])


def _mul_attempt(calc, tmp_path: Path, body: str) -> tuple[Path, Path]:
    """The mul task, and a copy of its workspace with mul's body replaced."""
    task = _mul_task(calc)
    ws = tmp_path / "ws"
    shutil.copytree(task / "environment" / "app", ws)
    ops = ws / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace("def mul(a, b):\n    return a + b", "def mul(a, b):\n" + body))
    return task, ws


def test_scoring_a_workspace_and_a_diff(calc, monkeypatch, tmp_path):
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(calc["cache"]))
    task, ws = _mul_attempt(calc, tmp_path, "    return b * a")
    fixed = asyncio.run(score_workspace(task, ws))
    assert fixed.outcome == "pass" and fixed.reward["total"] == 1.0
    assert "-    return a + b\n+    return b * a" in fixed.diff
    assert fixed.diff == workspace_diff(task, ws)
    as_diff = asyncio.run(score_patch(task, fixed.diff))
    assert as_diff.outcome == "pass"
    gold = asyncio.run(score_patch(task, (task / "solution" / "gold.diff").read_text()))
    assert gold.reward["total"] == 1.0
    stale = asyncio.run(score_patch(task, fixed.diff.replace("return a + b", "return a + c")))
    assert stale.reward["total"] == 0.0
    assert stale.reward["components"]["patch_applies"]["value"] == 0.0
    (ws / "tests" / "test_ops.py").write_text("def test_nothing():\n    pass\n")
    tampered = asyncio.run(score_workspace(task, ws))
    assert tampered.reward["total"] == 0.0
    assert "tests/test_ops.py" in tampered.reward["components"]["tests_untouched"]["detail"]


def test_a_hanging_fix_attempt_scores_zero_not_invalid(calc, monkeypatch, tmp_path):
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(calc["cache"]))
    task, ws = _mul_attempt(calc, tmp_path, "    while True:\n        pass")
    result = asyncio.run(score_workspace(task, ws))
    assert result.outcome == "fail" and result.reward["total"] == 0.0
    assert "timeout" in result.reward["components"]["fail_to_pass"]["detail"]


def test_cli_build_reads_per_repository_settings(calc, cli, tmp_path):
    (tmp_path / "rlforge.toml").write_text(
        f'cache_dir = "{calc["cache"]}"\n\n[tasks.repair]\nlast = 9\n\n'
        '[tasks.repair.repos.calc]\nper_test_timeout = 7\ncollect_timeout = 4\n'
        'test_command = "python -m pytest -p no:doctest"\n')
    assert cli("ingest", "commits", calc["repo"], "-q").exit_code == 0
    listed = cli("build-tasks", "--list", "--json")
    row = next(r for r in json.loads(listed.output) if r["name"] == "commits.repair")
    assert row["usable_rows"] == 7  # of the last 9, all but 'Precompute a table...' and 'Read numbers...'
    result = cli("build-tasks", "--generators", "commits.repair", "--out", tmp_path / "t", "--no-validate")
    assert result.exit_code == 0, result.output
    assert "dropped 2 × commits.repair: no test change" in result.output
    assert "dropped 1 × commits.repair: hang at parent" in result.output
    assert "dropped 1 × commits.repair: no checked fail-to-pass test" in result.output
    assert "dropped 1 × commits.repair: no checkable assert in the changed tests" in result.output
    assert "dropped 1 × commits.repair: gold fix inspects its caller" in result.output
    assert "dropped 1 × commits.repair: gold fix imports a module the tree lacks" in result.output
    ref = json.loads((_tasks(tmp_path / "t")[0] / "tests" / "reference.json").read_text())
    assert ref["per_test_timeout"] == 7 and ref["test_command"] == ["python", "-m", "pytest", "-p", "no:doctest"]
    (tmp_path / "rlforge.toml").write_text('[tasks.repair.repos.calc]\nresult_format = "tap"\n')
    failed = cli("build-tasks", "--generators", "commits.repair", "--out", tmp_path / "u")
    assert failed.exit_code == 1 and "pytest-junit" in failed.output


def test_a_config_given_to_build_tasks_reaches_the_generator(calc, tmp_path):
    bad = tmp_path / "elsewhere.toml"
    bad.write_text('[tasks.repair]\nlanguage = "cobol"\n')
    con = db.connect(tmp_path / "rlforge.duckdb")
    opts = build_options(out=tmp_path / "t", generators=["commits.repair"], config=Config.load(bad))
    with pytest.raises(UserError, match="unknown commits.repair language 'cobol'; valid: .*python"):
        build_tasks(con, opts)


# --- the demo repository -----------------------------------------------------------------

def test_dura_fix_commits_become_tasks_with_the_promised_tests(tmp_path, monkeypatch, shared_cache):
    history = tomllib.loads((ROOT / "sample_data" / "repo" / "history.toml").read_text())["commit"]
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "sample_data" / "repo" / "build_repo.py"),
                    str(tmp_path / "dura")], check=True, capture_output=True)
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, tmp_path / "dura")
    opts = build_options(out=tmp_path / "tasks", generators=["commits.repair"], validate=False,
                         generator_options={"commits.repair": {"per_test_timeout": 3.0}})
    report = build_tasks(con, opts)
    sources = {s: (repo, sha, (parents or [None])[0]) for repo, sha, parents, s in
               con.execute("SELECT repo, sha, parents, subject FROM commits").fetchall()}
    dropped = {s: next((d["reason"] for d in report.drops if d["source"] == f"{repo}@{sha}"), "")
               for s, (repo, sha, _) in sources.items()}
    rows = con.execute("SELECT c.subject, r.status, r.reason, r.fail_to_pass FROM repair_checks r "
                       "JOIN commits c USING (repo, sha)").fetchall()
    con.close()
    by_subject = {s: (status, reason, f2p) for s, status, reason, f2p in rows}
    screened: list[str] = []
    for c in history:
        subject = c["message"].splitlines()[0]
        if c["kind"] in ("fix", "fix-hang") and dropped[subject].startswith(UNCHECKABLE):
            # read before any run: its promised tests compare with no literal (a datetime),
            # so the full check would have found none of them checked either
            snap = snapshot(*sources[subject], RULES)
            assert checked_fail_to_pass(snap.hidden, c["fail_to_pass"], snap.workspace) == [], subject
            screened.append(subject)
        elif c["kind"] in ("fix", "fix-hang"):
            status, _, f2p = by_subject[subject]
            assert status == "kept", subject
            assert sorted(f2p) == sorted(c["fail_to_pass"]), subject
        elif c["kind"] == "fix-no-f2p":  # found by the runs, or read before them
            assert dropped[subject].startswith(("no F2P", "no checkable assert in the changed tests"))
            assert by_subject.get(subject, ("rejected", "no F2P"))[:2] == ("rejected", "no F2P")
    # most of the fixes are still checked in the sandbox against what history.toml promises
    assert len(screened) < sum(c["kind"] in ("fix", "fix-hang") for c in history) / 2, screened


def test_a_repository_that_moved_is_reported_not_fatal(tmp_path):
    r = Repo(tmp_path / "gone")
    r.commit("Initial calculator with four operations", {"calc/ops.py": OPS, "tests/test_ops.py": TESTS})
    r.commit("mul returns the sum of its arguments",
             {"calc/ops.py": OPS.replace("return a + b\n\n\ndef div", "return a * b\n\n\ndef div"),
              "tests/test_ops.py": TESTS + MUL_TEST})
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, r.path)
    shutil.rmtree(r.path)
    report = _build(con, tmp_path / "tasks", validate=False)
    con.close()
    assert report.emitted == 0
    reasons = sorted(d["reason"].split(" (")[0] for d in report.drops)
    assert reasons == ["no parent commit", "repository unavailable"]


KNOWN_TESTS_FORGE = '''

def _forge_known():
    """Report passed every test whose name the workspace's own test files held when this
    was written (so the canaries, which they did not, fail as they must)."""
    import gc
    import pytest
    from _pytest.config import Config
    known = KNOWN

    class _Forge:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            if item.name.split("[")[0] in known:
                report = outcome.get_result()
                report.outcome, report.longrepr = "passed", None

    for obj in gc.get_objects():
        if isinstance(obj, Config) and not obj.pluginmanager.has_plugin("_forge_known"):
            obj.pluginmanager.register(_Forge(), "_forge_known")


_forge_known()
'''


def test_a_real_fix_cannot_hide_a_broken_pass_to_pass_test(calc, monkeypatch, tmp_path):
    """mul fixed for real, add broken, and a forger in the module reporting every test the
    workspace knows by name as passed: the canaries (new names) fail honestly and mul's
    checked values hold. Pass-to-pass verdicts once came from the test process alone, so
    this scored 1.0; now the values of pass-to-pass literal asserts go to the verifier."""
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(calc["cache"]))
    task, ws = _mul_attempt(calc, tmp_path, "    return a * b")
    ref = json.loads((task / "tests" / "reference.json").read_text())
    assert "tests/test_ops.py::test_add" in ref["pass_to_pass"]
    ops = ws / "calc" / "ops.py"
    import re
    known = {n for f in (ws / "tests").glob("test_*.py") for n in re.findall(r"def (test_\w+)", f.read_text())}
    ops.write_text(ops.read_text().replace("def add(a, b):\n    return a + b", "def add(a, b):\n    return a - b")
                   + f"\nKNOWN = {sorted(known)!r}\n" + KNOWN_TESTS_FORGE)
    result = asyncio.run(score_workspace(task, ws))
    assert result.outcome == "fail" and result.reward["total"] == 0.0, result.reward
    detail = result.reward["components"]["pass_to_pass"]["detail"]
    assert "test_add" in detail, detail
