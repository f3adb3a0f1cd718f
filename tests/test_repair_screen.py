"""`commits.repair` reads a commit's changed tests before running them: a commit none of
whose tests could be a checked fail-to-pass test is dropped before any sandbox run.

A real git history, real pytest, the real sandbox; the pool's `run` is counted, not
replaced (`test_repair_schedule._checked`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlforge.tasks.generators.repair.runners import get
from test_commits_repair import OPS, PYPROJECT, TESTS, Repo
from test_repair_schedule import _checked, _ingested

# the fix of the first commit; the second adds mod() and a test of it with a literal
SQUARE = "\n\ndef square(a):\n    return a * a\n"
MOD = "\n\ndef mod(a, b):\n    return a % b\n"
# Its only assert is truthy, or compares with a value the test computes: nothing the
# verifier could hold back, whatever the runs find.
UNCHECKED_TEST = ("from calc.ops import mul, square\n\n\ndef test_square():\n"
                  "    assert square(3)\n    expected = mul(3, 3)\n    assert square(3) == expected\n")
CHECKED_TEST = "from calc.ops import mod\n\n\ndef test_mod():\n    assert mod(17, 5) == 2\n"
UNCHECKABLE = "no checkable assert in the changed tests"
FIXED_OPS = OPS.replace("def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b")


def _history(path: Path) -> dict[str, str]:
    r = Repo(path)
    shas = {"init": r.commit("Initial calculator with add, sub, mul and div",
                             {"pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/ops.py": FIXED_OPS,
                              "tests/test_ops.py": TESTS})}
    shas["square"] = r.commit("Add square() for the square of a number",
                              {"calc/ops.py": FIXED_OPS + SQUARE, "tests/test_square.py": UNCHECKED_TEST})
    shas["mod"] = r.commit("Add mod() for the remainder of a division",
                           {"calc/ops.py": FIXED_OPS + SQUARE + MOD, "tests/test_mod.py": CHECKED_TEST})
    return shas


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_commit_without_a_checkable_assert_is_dropped_unrun(tmp_path, shared_cache, monkeypatch):
    repo = _ingested(tmp_path, shared_cache, monkeypatch, _history)
    report, runs, _, verdicts = _checked(repo, monkeypatch)
    square, mod = repo["shas"]["square"], repo["shas"]["mod"]
    reasons = {d["source"].rsplit("@", 1)[-1]: d["reason"] for d in report.drops}
    assert reasons.get(square, "").startswith(UNCHECKABLE), report.drops
    assert runs[square[:12]] == 0 and square not in verdicts  # never checked in the sandbox
    assert report.emitted == 1 and verdicts[mod] == "" and runs[mod[:12]] > 0
    assert mod not in reasons


def test_the_python_screen_reads_only_what_the_check_would_count():
    """Over-approximate: a test whose literal the policy has seen, or that a trivial value
    passes, cannot be checked; a new literal might be (the runs decide)."""
    python = get("python")
    seen = {"tests/test_mod.py": CHECKED_TEST.encode()}
    assert python.could_check({"tests/test_mod.py": CHECKED_TEST.encode()}, {})
    assert not python.could_check({"tests/test_mod.py": CHECKED_TEST.encode()}, seen)
    assert not python.could_check({"tests/test_square.py": UNCHECKED_TEST.encode()}, {})
    trivial = CHECKED_TEST.replace("== 2", "in '01234'").encode()
    assert not python.could_check({"tests/test_mod.py": trivial}, {})
    moved = CHECKED_TEST + "\n\nclass TestMod:\n    def test_more(self):\n        assert mod(9, 5) == 4\n"
    assert python.could_check({"tests/test_mod.py": moved.encode()}, seen)
    assert not python.could_check({"tests/conftest.py": b"X = 3\n", "README.md": b"== 4"}, {})


def test_other_runners_leave_it_to_the_runs():
    for name in ("go", "javascript", "typescript"):
        assert get(name).could_check({"x_test.go": b"package x\n"}, {})
