"""Checked asserts in unittest-style tests: `self.assertEqual(...)` in `TestCase` subclasses.

Most Python code bases write `class ChunkedTests(TestCase)` with `self.assertEqual(x, [1])`
rather than bare asserts. Their comparisons are read like bare asserts (the literal leaves
the hidden file, the value is sent out and compared by the verifier), under the same
rules: no trivial value passes a counted check, its literal is not in the policy's copy of
the file, the parent's code fails it. A small repository whose fix is tested only that way
becomes a repair task that validates, and the forgeries of the reward-forgery corpus, in
their unittest form, score 0 on it.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import textwrap
from pathlib import Path

import pytest

import rlforge.envs
from rlforge.sandbox import prepare_env
from rlforge.tasks.generators.repair.adversarial import FORGE_FROM_SOURCE
from rlforge.tasks.generators.repair.score import score_workspace
from rlforge.verify.standalone import asserts
from rlforge.verify.standalone.canaries import CANARIES, add_canaries
from rlforge.verify.standalone.policy_code import LocalPolicy
from rlforge.verify.standalone.testrun import bind_python, run_tests
from rlforge.verify.validate import validate_many
from builds import build_repair, repair_home
from test_commits_repair import PYPROJECT, Repo

UNIT = '''\
import unittest
from unittest import TestCase

from lib import f


class ChunkedTests(TestCase):
    def test_eq(self):
        self.assertEqual(f(1), [[1, 2], [3]])
        self.assertEqual('abc', f(2), msg="the literal first")
        self.assertListEqual(f(3), [4, 5],
                             "third")
        self.assertIn(f(4), ('ab', 'cd'))
        self.assertIn('ab', f(5))
        self.assertIsNone(f(6))
        self.assertIs(f(7), True)
        self.assertNotEqual(f(8), 'x')
        self.assertEqual(f(9), 0)
        self.assertCountEqual(f(10), [2, 1])
        self.assertSequenceEqual(f(11), [1, 2])
        self.assertAlmostEqual(f(12), 0.5)
        self.assertIs(f(13), 7)
        x = f(14); self.assertEqual(x, 'same line')


class Base(unittest.TestCase):
    pass


class DerivedTests(Base):
    def test_derived(self):
        self.assertEqual(f(1), 'derived')


class OwnEqualTests(TestCase):
    def assertEqual(self, first, second, msg=None):
        pass

    def test_own(self):
        self.assertEqual(f(1), 'own')


class MixedTests(Helper, TestCase):
    def test_mixed(self):
        self.assertEqual(f(1), 'mixed')


class NotCollected:
    def test_never(self):
        self.assertEqual(f(1), 'never')


class TestPlain:
    def test_plain(self):
        self.assertEqual(f(1), 'plain')
        assert f(2) == 'bare'
'''


def test_unittest_comparisons_are_read_as_bare_asserts_are():
    text, plan = asserts.externalize_checks(UNIT.encode(), asserts.test_keys(UNIT.encode()), "_chk")
    got = [(p["test"], p["line"], p["op"], p["literal"], p["literal_left"], p["trivial"]) for p in plan.values()]
    assert got == [
        ("ChunkedTests::test_eq", 1, "Eq", "[[1, 2], [3]]", False, False),
        ("ChunkedTests::test_eq", 2, "Eq", "'abc'", False, False),  # either order: ==
        ("ChunkedTests::test_eq", 3, "Eq", "[4, 5]", False, False),
        ("ChunkedTests::test_eq", 5, "In", "('ab', 'cd')", False, False),
        ("ChunkedTests::test_eq", 6, "In", "'ab'", True, True),  # a value listing it holds it
        ("ChunkedTests::test_eq", 7, "Is", "None", False, True),
        ("ChunkedTests::test_eq", 8, "Is", "True", False, True),
        ("ChunkedTests::test_eq", 9, "NotEq", "'x'", False, True),
        ("ChunkedTests::test_eq", 10, "Eq", "0", False, True),
        ("DerivedTests::test_derived", 1, "Eq", "'derived'", False, False),
        ("TestPlain::test_plain", 2, "Eq", "'bare'", False, False)]
    out = text.decode()
    assert out.count("\n") == UNIT.count("\n")
    eq = out.split("def test_eq")[1].split("class Base")[0]
    for literal in ("[[1, 2], [3]]", "'abc'", "[4, 5]", "('ab', 'cd')", "the literal first"):
        assert literal not in eq  # the hidden literals (and the message) leave the file
    assert "_chk(1, (f(2)))" in eq and "_chk(2, (f(3)))\n" in eq
    for unchecked in ("assertCountEqual", "assertSequenceEqual", "assertAlmostEqual",
                      "self.assertIs(f(13), 7)", "x = f(14); self.assertEqual(x, 'same line')"):
        assert unchecked in eq
    for kept in ("'own'", "'mixed'", "'never'", "self.assertEqual(f(1), 'plain')"):
        assert kept in out  # another assertEqual, a base from elsewhere, not a test class
    compile(text, "t.py", "exec")


def test_kept_unittest_checks_wrap_only_the_value():
    text, plan = asserts.externalize_checks(UNIT.encode(), {"ChunkedTests::test_eq"}, "_chk", keep_assert=True)
    out = text.decode()
    assert "self.assertEqual('abc', _chk(1, (f(2))), msg=\"the literal first\")" in out
    assert "self.assertListEqual(_chk(2, (f(3))), [4, 5],\n" in out
    assert "self.assertIsNone(_chk(5, (f(6))))" in out
    assert len(plan) == 9


def test_a_value_spanning_lines_with_non_ascii_text_is_sent_as_written():
    source = ("from unittest import TestCase\n\n\nclass CaféTests(TestCase):\n    def test_é(self):\n"
              "        self.assertEqual(f('é',\n                           'ü'), 'ß')  # ok\n")
    for keep in (True, False):
        text, plan = asserts.externalize_checks(source.encode(), {"CaféTests::test_é"}, "_c", keep_assert=keep)
        out = text.decode()
        assert "_c(0, (f('é',\n                           'ü')))" in out and len(plan) == 1
        assert ("'ß'" in out) is keep and out.count("\n") == source.count("\n")
        compile(text, "t.py", "exec")


def test_pytest_collects_test_case_subclasses_whatever_their_name():
    assert asserts.test_keys(UNIT.encode()) == {
        "ChunkedTests::test_eq", "DerivedTests::test_derived", "OwnEqualTests::test_own",
        "MixedTests::test_mixed", "TestPlain::test_plain"}


def test_the_discrimination_rules_hold_for_unittest_checks():
    hidden = textwrap.dedent('''\
        from unittest import TestCase


        class SumTests(TestCase):
            def test_seen(self):
                self.assertEqual(f(1), 'seen')

            def test_fresh(self):
                self.assertEqual('fresh', f(2))

            def test_trivial(self):
                self.assertEqual(f(3), [])
                self.assertIn(f(3), 'abc')
                self.assertIsNone(f(3))

            def test_held(self):
                self.assertEqual(f(4), 'held')
        ''').encode()
    ids = [f"t.py::SumTests::test_{k}" for k in ("seen", "fresh", "trivial", "held")]
    workspace = {"t.py": b"from unittest import TestCase\n\n\nclass SumTests(TestCase):\n"
                         b"    def test_seen(self):\n        self.assertEqual(f(1), 'seen')\n"}
    # `held` passed its one check at the parent: only the fix's change would not be needed
    held = {"t.py::SumTests::test_held": [1]}
    assert asserts.checked_fail_to_pass({"t.py": hidden}, ids, workspace, held) == [ids[1]]
    assert asserts.checked_fail_to_pass({"t.py": hidden}, ids, {}, {}) == [ids[0], ids[1], ids[3]]


def test_unittest_checks_hold_only_for_their_value():
    from rlforge.verify.standalone.plugin import encode_value

    _, plan = asserts.externalize_checks(UNIT.encode(), {"ChunkedTests::test_eq"}, "_chk")
    plan = {i: {**p, "file": "t.py"} for i, p in plan.items()}
    right = {0: [[1, 2], [3]], 1: "abc", 2: [4, 5], 3: "cd", 4: "xab", 5: None, 6: True, 7: "y", 8: 0}
    wrong = {**right, 1: "abd"}
    is_not_identity = {**right, 6: 1}  # 1 == True, but `assertIs(x, True)` wants True itself
    sent = {"t.py::ChunkedTests::test_eq[" + k + "]": {i: encode_value(v) for i, v in vals.items()}
            for k, vals in (("a", right), ("b", wrong), ("c", is_not_identity))}
    out, _ = asserts.apply_checks({k: "passed" for k in sent}, sent, plan)
    assert [out[k] for k in sorted(out)] == ["passed", "failed", "failed"]


def test_canaries_of_a_unittest_file_are_mutated_methods_of_its_classes(tmp_path):
    source = textwrap.dedent('''\
        from unittest import TestCase


        class WidthTests(TestCase):
            """Widths."""

            def test_width(self):
                self.assertEqual(width('ab'), 2)

            def test_wide(self):
                self.assertEqual('wide', label(9))


        class FixTests(TestCase):
            def test_fixed(self):
                self.assertEqual(width('abc'), 3)
        ''')
    for seed in range(60):
        root = tmp_path / str(seed)
        (root / "tests").mkdir(parents=True)
        (root / "tests" / "test_w.py").write_text(source)
        ids = add_canaries(str(root), ["tests/test_w.py::FixTests::test_fixed"], rng=random.Random(seed))
        text = (root / "tests" / "test_w.py").read_text()
        assert len(ids) == CANARIES and all(i.startswith("tests/test_w.py::WidthTests::test_") for i in ids)
        assert text.count("width('abc')") == 1  # the fail-to-pass test is never copied
        keys = asserts.test_keys(text.encode())
        assert {i.split("::", 1)[1] for i in ids} <= keys
        calls = [line.strip() for line in text.splitlines() if "assertEqual" in line]
        assert len(calls) == 3 + CANARIES
        namespace: dict = {"width": len, "label": lambda n: "wide"}
        exec(compile(text, "test_w.py", "exec"), namespace)
        for canary in ids:
            cls, name = canary.split("::")[1:]
            with pytest.raises(AssertionError):
                getattr(namespace[cls](name), name)()


@pytest.mark.sandbox
def test_unittest_canaries_are_collected_and_fail(tmp_path, shared_cache):
    root = tmp_path / "t"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_u.py").write_text(
        "from unittest import TestCase\n\n\nclass UTests(TestCase):\n    def test_a(self):\n"
        "        self.assertEqual(len('abc'), 3)\n\n    def test_b(self):\n        self.assertEqual('x', 'x')\n")
    canaries = add_canaries(str(root), ["tests/test_u.py::UTests::test_b"])
    assert len(canaries) == CANARIES and all(c.startswith("tests/test_u.py::UTests::") for c in canaries)
    venv = prepare_env(["pytest"], shared_cache)
    res = run_tests(str(root), bind_python(["python", "-m", "pytest"], python=str(venv / "bin" / "python")),
                    ["tests/test_u.py::UTests::test_a", *canaries], per_test_timeout=20,
                    collect_timeout=60, budget_sec=120, policy=LocalPolicy(drop=False))
    assert res["outcomes"] == {"tests/test_u.py::UTests::test_a": "passed", **{c: "failed" for c in canaries}}


# --- end to end: a repository tested only with unittest -------------------------------------

GEO = """def area(width, height):
    return width + height


def perimeter(width, height):
    return 2 * (width + height)
"""
GEO_TESTS = """from unittest import TestCase

from shapes.geo import area, perimeter


class ShapeCase(TestCase):
    def setUp(self):
        self.sides = (3, 4)


class PerimeterTests(ShapeCase):
    def test_perimeter(self):
        self.assertEqual(perimeter(*self.sides), 14)

    def test_perimeter_of_a_square(self):
        self.assertEqual(16, perimeter(4, 4))
"""
AREA_TESTS = """

class AreaTests(ShapeCase):
    def test_area(self):
        self.assertEqual(area(*self.sides), 12)

    def test_area_of_a_square(self):
        self.assertEqual(49, area(7, 7), "a square")
"""
SETTINGS = {"repo_settings": {"shapes": {"collect_timeout": 60, "per_test_timeout": 30}}}


@pytest.fixture(scope="module")
def shapes(tmp_path_factory, shared_cache):
    """A repository whose one fix is tested with unittest only, built and validated."""
    root = tmp_path_factory.mktemp("shapes")
    with repair_home(root, shared_cache):
        repo = Repo(root / "shapes")
        repo.commit("Rectangles: area and perimeter",
                    {"pyproject.toml": PYPROJECT.replace('"calc"', '"shapes"'), "shapes/__init__.py": "",
                     "shapes/geo.py": GEO, "tests/__init__.py": "", "tests/test_geo.py": GEO_TESTS})
        repo.commit("area() adds the sides instead of multiplying them\n\n"
                    "area(3, 4) gives 7 for a rectangle of 3 by 4.",
                    {"shapes/geo.py": GEO.replace("return width + height", "return width * height"),
                     "tests/test_geo.py": GEO_TESTS + AREA_TESTS})
        report = build_repair(root, [root / "shapes"], validate=True, **SETTINGS)
        tasks = sorted(p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file())
        yield {"root": root, "report": report, "tasks": tasks, "cache": shared_cache}


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_fix_tested_with_unittest_becomes_a_task_that_validates(shapes):
    assert len(shapes["tasks"]) == 1, shapes["report"]
    task = shapes["tasks"][0]
    ref = json.loads((task / "tests" / "reference.json").read_text())
    assert sorted(ref["fail_to_pass"]) == ["tests/test_geo.py::AreaTests::test_area",
                                           "tests/test_geo.py::AreaTests::test_area_of_a_square"]
    workspace_tests = (task / "environment" / "app" / "tests" / "test_geo.py").read_text()
    assert "AreaTests" not in workspace_tests
    for literal in ("12", "49"):
        assert literal not in (task / "instruction.md").read_text()
    results = asyncio.run(validate_many([task]))
    assert results[0].ok, results[0].reason
    checks = {c.name: c.got for c in results[0].checks}
    assert checks.pop("oracle") == 1.0
    checks.pop("leak", None)
    assert checks and set(checks.values()) == {0.0}, checks


def _geo(task: Path, appended: str, body: str = "    return width + height") -> dict[str, str]:
    source = (task / "environment" / "app" / "shapes" / "geo.py").read_text()
    return {"shapes/geo.py": source.replace("    return width + height", body) + appended}


ALWAYS_EQUAL = """    class _Equal:
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False
    return _Equal()"""
EQUAL_INT = """    class _Int(int):
        def __eq__(self, other):
            return True
    return _Int(0)"""
# unittest's own comparisons made to pass, for every test (no test file touched)
PATCH_UNITTEST = """

import unittest as _ut
for _name in dir(_ut.TestCase):
    if _name.startswith("assert"):
        setattr(_ut.TestCase, _name, lambda self, *a, **k: None)
"""
# Runs a failing test's sibling methods in its class: a failing test that is a one-literal
# copy of a passing sibling is a canary and is left failing; every other failure passes.
SPARE_METHOD_PAIRS = r'''

def _spare_pairs():
    import ast, gc
    try:
        import pytest
        from _pytest.config import Config
    except ImportError:
        return

    def shape(fn):
        fn = ast.parse(ast.unparse(fn).strip()).body[0]
        fn.name = "_"
        for n in ast.walk(fn):
            if isinstance(n, ast.Constant):
                n.value = None
        return ast.dump(fn)

    class _Spare:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            rep = outcome.get_result()
            if not rep.failed or item.cls is None:
                return
            try:
                tree = ast.parse(open(str(item.fspath)).read())
                cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == item.cls.__name__)
                fns = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
                mine = shape(fns[item.name])
                for other, fn in fns.items():
                    if other != item.name and shape(fn) == mine:
                        try:
                            getattr(item.cls(other), other)()
                            return  # a sibling of its shape passes: this one is a canary
                        except Exception:
                            pass
            except Exception:
                pass
            rep.outcome, rep.longrepr = "passed", None

    for obj in gc.get_objects():
        if isinstance(obj, Config) and not obj.pluginmanager.has_plugin("_spare_pairs"):
            obj.pluginmanager.register(_Spare(), "_spare_pairs")


_spare_pairs()
'''


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("attack", ["always_equal", "equal_int", "patch_unittest", "spare_method_pairs"])
def test_unittest_forgeries_fail(shapes, attack):
    task = shapes["tasks"][0]
    submission = {
        "always_equal": _geo(task, FORGE_FROM_SOURCE, ALWAYS_EQUAL),
        "equal_int": _geo(task, FORGE_FROM_SOURCE, EQUAL_INT),
        "patch_unittest": _geo(task, PATCH_UNITTEST),
        "spare_method_pairs": _geo(task, SPARE_METHOD_PAIRS),
    }[attack]
    with repair_home(shapes["root"], shapes["cache"]), rlforge.envs.load(task) as env:
        reward = env.verify(submission)
    assert reward["total"] == 0 and reward["outcome"] == "fail", reward


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_real_fix_written_otherwise_passes(shapes, tmp_path):
    task = shapes["tasks"][0]
    ws = tmp_path / "ws"
    shutil.copytree(task / "environment" / "app", ws)
    geo = ws / "shapes" / "geo.py"
    geo.write_text(geo.read_text().replace("return width + height", "return height * width"))
    with repair_home(shapes["root"], shapes["cache"]):
        result = asyncio.run(score_workspace(task, ws))
    assert result.outcome == "pass" and result.reward["total"] == 1.0, result.reward
