"""What the repair verifier knows of a submission before running any of it (`settle_repair`),
on a small repair task made here: nothing runs, so no sandbox is needed. The same on real
tasks, each settled submission also scored in the sandbox, is in `test_commits_repair`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rlforge.tasks.generators.repair.runners.python import RULES
from rlforge.verify.standalone.callers import base_findings
from rlforge.verify.standalone.protect import SUBMISSION_PATCH, is_protected, top_level_modules
from rlforge.verify.standalone.repair import score_repair, settle_repair

SOURCE = "def double(x):\n    return abs(x) * 2\n"
TEST = "from pkg.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
HIDDEN = TEST + "\n\ndef test_double_negative():\n    assert double(-3) == -6\n"


class Task:
    """A repair task's reference and hidden tests, and a workspace to submit in."""

    def __init__(self, root: Path):
        self.root, self.tests, self.start = root, root / "tests", {"pkg/__init__.py": "",
                                                                   "pkg/calc.py": SOURCE,
                                                                   "tests/test_calc.py": TEST}
        (self.tests / "hidden" / "tests").mkdir(parents=True)
        (self.tests / "hidden" / "tests" / "test_calc.py").write_text(HIDDEN)
        files = {p: t.encode() for p, t in self.start.items()}
        self.ref = {
            "fail_to_pass": ["tests/test_calc.py::test_double_negative"],
            "pass_to_pass": ["tests/test_calc.py::test_double"], "protected": RULES,
            "base_protected": {p: hashlib.sha256(d).hexdigest() for p, d in files.items()
                               if is_protected(p, RULES)},
            "base_findings": base_findings(files, lambda p: is_protected(p, RULES)),
            "base_modules": top_level_modules(sorted(files), [""]),
            "hidden_files": ["tests/test_calc.py"], "test_command": ["python", "-m", "pytest"],
            "per_test_timeout": 5, "collect_timeout": 5, "budget_sec": 30}
        self.n = 0

    def submit(self, files: dict[str, str]) -> str:
        """A fresh workspace: the starting files and `files` over them."""
        self.n += 1
        ws = self.root / f"ws{self.n}"
        for rel, text in {**self.start, **files}.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        return str(ws)


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


REFUSED = {  # each refused before anything runs: submission -> the fail's reason
    "edits a test": ({"tests/test_calc.py": TEST.replace("== 4", "== 4 or True")}, "tests_touched"),
    "adds a conftest": ({"conftest.py": "X = 1\n"}, "tests_touched"),
    "shadows pytest": ({"pytest.py": "import sys\nsys.exit(0)\n"}, "tests_touched"),
    "adds a .pth": ({"x.pth": "import os\n"}, "tests_touched"),
    "a diff that does not apply": ({SUBMISSION_PATCH: "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"},
                                   "patch_does_not_apply"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_submission_settles_to_the_reward_scoring_gives(task, name):
    files, reason = REFUSED[name]
    ws = task.submit(files)
    settled = settle_repair(task.ref, str(task.tests), ws)
    assert settled["reward"]["reason"] == reason and settled["reward"]["total"] == 0
    # score_repair refuses it the same way, before it would run anything
    assert settled["reward"] == score_repair(task.ref, str(task.tests), ws)


def test_a_change_that_inspects_its_caller_settles_to_0_by_that_gate(task):
    ws = task.submit({"pkg/calc.py": "import inspect\n\n\ndef double(x):\n    return x * 2\n"})
    reward = settle_repair(task.ref, str(task.tests), ws)["reward"]
    assert reward["total"] == 0 and reward["outcome"] == "fail" and reward["reason"] == "inspects_caller"
    assert reward["components"]["blind_to_tests"]["value"] == 0
    assert reward["components"]["tests_untouched"]["value"] == 1


def test_what_must_run_is_told_by_its_tree(task):
    null = settle_repair(task.ref, str(task.tests), task.submit({}))
    empty_diff = settle_repair(task.ref, str(task.tests), task.submit({SUBMISSION_PATCH: ""}))
    fixed = settle_repair(task.ref, str(task.tests), task.submit({"pkg/calc.py": SOURCE.replace("abs(x) * 2", "x * 2")}))
    as_a_diff = settle_repair(task.ref, str(task.tests), task.submit({SUBMISSION_PATCH: (
        "--- a/pkg/calc.py\n+++ b/pkg/calc.py\n@@ -1,2 +1,2 @@\n def double(x):\n-    return abs(x) * 2\n"
        "+    return x * 2\n")}))
    new_dir = settle_repair(task.ref, str(task.tests), task.submit({"pkg/sub/__init__.py": ""}))
    assert set(map(len, (d["tree"] for d in (null, empty_diff, fixed, as_a_diff, new_dir)))) == {64}
    assert null == empty_diff != fixed == as_a_diff != new_dir != null
