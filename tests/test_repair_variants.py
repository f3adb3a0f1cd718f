"""Held-back pass-to-pass checks (`rlforge/verify/standalone/variants.py`): what a variant
changes, which the build keeps, and how the verifier plants and checks them."""

from __future__ import annotations

import ast
import random

from rlforge.verify.standalone import asserts, variants
from rlforge.verify.standalone.plugin import encode_value

TESTS = b'''from pkg import fmt, parse


def test_short():
    assert fmt(5400) == "1h 30m"
    assert fmt(90061) == "1d 1h 1m 1s"


def test_parse_words():
    assert parse("2 hours") == 7200


def test_no_input():
    assert fmt_default() == "0s"


@decorated
def test_decorated():
    assert fmt(60) == "1m"
'''
CHECKED = {"tests/test_t.py::test_short": [1, 2], "tests/test_t.py::test_parse_words": [1],
           "tests/test_t.py::test_no_input": [1], "tests/test_t.py::test_decorated": [1]}


def _made(seed=1):
    return variants.candidates({"tests/test_t.py": TESTS}, CHECKED, random.Random(seed))


def _asserts(source):
    fn = ast.parse(source).body[0]
    return fn, [s.test for s in fn.body]


def test_a_variant_changes_one_input_literal_and_never_the_expected_one():
    made = _made()
    assert made, "no variant made"
    originals = {n.name: n for n in ast.parse(TESTS).body if isinstance(n, ast.FunctionDef)}
    for v in made:
        assert v["original"] in ("test_short", "test_parse_words"), v  # inputs to change
        fn, tests = _asserts(v["source"])
        _, old = _asserts(ast.unparse(originals[v["original"]]))
        changed = [i for i, (a, b) in enumerate(zip(tests, old)) if ast.dump(a) != ast.dump(b)]
        assert changed == [v["line"] - 1], v
        new, was = tests[changed[0]], old[changed[0]]
        assert ast.dump(new.comparators[0]) == ast.dump(was.comparators[0])  # expected side kept
        assert ast.dump(new.left) != ast.dump(was.left)
        assert v["expected"] == repr(ast.literal_eval(was.comparators[0]))
        words, were = fn.name.split("_"), v["original"].split("_")
        assert fn.name == v["test"] and len(words) == len(were)
        assert sum(a != b for a, b in zip(words, were)) == 1, (fn.name, v["original"])
        assert fn.name not in originals


def test_the_same_generator_makes_the_same_variants():
    assert _made(3) == _made(3)
    assert len({v["test"] for v in _made(3)}) == len(_made(3))


def _run(values, outcome="passed", nodeid="tests/test_t.py::test_x"):
    return {"outcomes": {nodeid: outcome},
            "checks": {nodeid: {str(i): encode_value(v) for i, v in values.items()}}}


def _variant(expected="'1h 30m'"):
    return {"file": "tests/test_t.py", "test": "test_x", "original": "test_short", "line": 1,
            "source": "def test_x():\n    assert fmt(7335) == '1h 30m'\n", "expected": expected}


PLAN = {0: {"file": "tests/test_t.py", "test": "test_x", "line": 1}}


def test_the_build_keeps_a_variant_only_when_every_run_agrees_on_a_new_value():
    v = _variant()
    kept = variants.kept([v], PLAN, [_run({0: "2h 2m 15s"})] * 4)
    assert kept == [{k: x for k, x in v.items() if k != "expected"} | {"checks": {"1": "'2h 2m 15s'"}}]
    assert variants.kept([v], PLAN, [_run({0: "1h 30m"})] * 4) == []  # echoing would pass
    assert variants.kept([v], PLAN, [_run({0: ""})] * 4) == []  # trivial
    assert variants.kept([v], PLAN, [_run({0: "2h"})] * 3 + [_run({0: "3h"})]) == []  # the fix changed it
    assert variants.kept([v], PLAN, [_run({0: "2h"})] * 3 + [_run({0: "2h"}, "failed")]) == []
    assert variants.kept([v], PLAN, [_run({0: "2h"})] * 3 + [_run({})]) == []  # did not run
    assert variants.kept([v], PLAN, [_run({0: float("nan")})] * 4) == []  # no literal holds it
    assert variants.kept([v], PLAN, [_run({0: 2})] * 2 + [_run({0: 2.0})] * 2) == []


def test_the_verifier_plants_a_variant_whose_value_never_enters_the_tree(tmp_path):
    held = {**_variant(), "checks": {"1": "'2h 2m 15s'"}}
    held.pop("expected")
    (tmp_path / "tests").mkdir()
    path = tmp_path / "tests" / "test_t.py"
    path.write_bytes(TESTS)
    planted = variants.plant(str(tmp_path), [held, {**held, "file": "tests/missing.py"}], random.Random(5))
    assert list(planted) == ["tests/test_t.py::test_x"]
    text, plan = asserts.externalize_checks(path.read_bytes(), {"test_x"}, "_c")
    assert b"2h 2m 15s" not in text and b"_c(0, (fmt(7335)))" in text
    item = variants.held_back(plan[0], planted["tests/test_t.py::test_x"])
    assert asserts.check_holds(item, encode_value("2h 2m 15s"))
    assert not asserts.check_holds(item, encode_value("1h 30m"))
    ast.parse(text)
    again = variants.plant(str(tmp_path), [held], random.Random(5))  # the name is taken now
    assert list(again) != ["tests/test_t.py::test_x"] and list(again)[0].startswith("tests/test_t.py::test_x_")


def test_a_task_keeps_a_few_variants_spread_over_their_originals():
    kept = [{"file": "a.py", "original": o, "test": f"test_{o}_{i}"} for o in "abc" for i in range(3)]
    chosen = variants.chosen(kept, random.Random(0))
    assert len(chosen) == variants.PER_TASK
    assert {v["original"] for v in chosen} == {"a", "b", "c"}
    assert chosen == variants.chosen(kept, random.Random(0))


def test_a_text_input_gets_a_form_of_its_word_no_visible_test_has():
    """Held-back copies once changed only digits inside text (`"2 hours"` to `"5 hours"`):
    code that answered the words the policy saw one way and every other word another (a
    red team's router) passed them all. Then half of them changed a word's form too, but
    most often its case, which such code undoes by lower-casing. A copy now takes a form no
    visible test holds in any case where there is one ("hours" -> "hour"), and another
    digit, so that its value is new."""
    texts = set()
    for seed in range(40):
        for v in _made(seed):
            if v["original"] == "test_parse_words":
                texts.add(ast.literal_eval(_asserts(v["source"])[1][0].left.args[0]))
                assert v["fresh_word"]
    assert {t.split()[-1] for t in texts} == {"hour"}, texts
    assert "2" not in {t.split()[0] for t in texts} and len(texts) > 1, texts
    assert variants._word_form("mins", random.Random(0), {"mins"}) == ("min", True)
    form, fresh = variants._word_form("mins", random.Random(0), {"mins", "min"})
    assert form in ("Mins", "MINS") and not fresh  # no new word: a new case at least


def test_a_task_keeps_copies_with_a_new_word_first():
    kept = [{"file": "a.py", "original": o, "test": f"test_{o}_{i}", "fresh_word": o == "d" and i == 2}
            for o in "abcde" for i in range(3)]
    for seed in range(20):
        chosen = variants.chosen(kept, random.Random(seed))
        assert "test_d_2" in {v["test"] for v in chosen}
        assert len({v["original"] for v in chosen}) == variants.PER_TASK
