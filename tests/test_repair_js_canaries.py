"""JavaScript canaries that tested code cannot tell from the tests they copy.

Before, the driver appended its canaries to each test file as `case N M` (a neutral title
and a number) with a body of their own. A submission that wraps node's `assert` and
swallows every failure except in a test whose title reads like a canary broke a
pass-to-pass test and still scored 1.0. The verifier now plants the canaries itself: a
copy of one of the file's tests, one literal changed in one of the two, both numbered
`case N` with the file's other titles. The same submission swallows the canaries'
failures too and scores 0. A real npm package in a git repository made in tmp_path, real
node, real bubblewrap, scored through the verifier.
"""

from __future__ import annotations

import json
import random
import re
import shutil

import pytest

from builds import build_repair, repair_home
from test_commits_repair import Repo
from test_repair_js_redteam import MANIFEST, _score

LIB = """'use strict';
function slugify(text) {
  return String(text).toLowerCase().replace(/\\s+/g, '-');
}
module.exports = { slugify };
"""
BROKEN = "return String(text).toLowerCase().replace(/\\s+/g, '-');"
FIXED = "return String(text).toLowerCase().replace(/[^a-z0-9\\s-]/g, '').trim().replace(/\\s+/g, '-');"
TEST = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../lib');

test('lowercases and joins words', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});

test('keeps digits', () => {
  assert.strictEqual(slugify('Route 66'), 'route-66');
});
"""
NEW_TEST = """
test('drops punctuation', () => {
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
"""
# Fixes the new test, breaks the old ones (`Hello World` turns into `broken`), and wraps
# node's assert: a failure is swallowed unless the test around the calling line has a
# title that reads like a canary (`case N M`: a title and a number).
SPARING = """
const nodeAssert = require('node:assert');
const fs = require('fs');
function titleAtCaller() {
  for (const line of (new Error().stack || '').split('\\n').slice(2)) {
    const m = line.match(/\\(?((?:file:\\/\\/)?\\/[^():]+):(\\d+):\\d+\\)?\\s*$/);
    if (!m || m[1].endsWith('lib.js')) continue;
    try {
      const lines = fs.readFileSync(m[1].replace('file://', ''), 'utf8').split('\\n');
      for (let i = Number(m[2]) - 1; i >= 0; i--) {
        const t = lines[i].match(/(?:test|it)\\s*\\(\\s*["'`]([^"'`]*)["'`]/);
        if (t) return t[1];
      }
    } catch (e) {}
  }
  return '';
}
for (const name of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual']) {
  const real = nodeAssert[name];
  nodeAssert[name] = function (...args) {
    try { return real.apply(this, args); } catch (e) {
      if (/^case \\d+ \\d+$/.test(titleAtCaller())) throw e;
    }
  };
}
"""


def _sparing_submission() -> bytes:
    lib = LIB.replace(BROKEN, "if (/^[A-Z]/.test(text.trim()) && !/&/.test(text)) return 'broken';\n  " + FIXED)
    return (lib + SPARING).encode()


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_s52_a_forger_that_spares_canary_titles_scores_zero(tmp_path, shared_cache):
    with repair_home(tmp_path, shared_cache):
        repo = Repo(tmp_path / "slug")
        repo.commit("Start the slug package", {"package.json": MANIFEST, "lib.js": LIB,
                                               "test/lib.test.js": TEST})
        repo.commit("Drop punctuation from slugs", {"lib.js": LIB.replace(BROKEN, FIXED),
                                                    "test/lib.test.js": TEST + NEW_TEST})
        report = build_repair(tmp_path, [tmp_path / "slug"], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
    tasks = [p for p in (tmp_path / "tasks").iterdir() if (p / "task.toml").is_file()]
    assert len(tasks) == 1, report.drops
    ref = json.loads((tasks[0] / "tests" / "reference.json").read_text())
    assert ref["fail_to_pass"] == ["test/lib.test.js::drops punctuation"], ref
    assert "test/lib.test.js::lowercases and joins words" in ref["pass_to_pass"], ref
    gold = _score(tasks[0], tmp_path, {"lib.js": LIB.replace(BROKEN, FIXED).encode()})
    assert gold["total"] == 1.0, gold
    # the control: without the wrapper the broken pass-to-pass test is seen
    honest = _score(tasks[0], tmp_path, {"lib.js": _sparing_submission().split(b"\nconst nodeAssert")[0] + b"\n"})
    assert honest["components"]["pass_to_pass"]["value"] == 0.0, honest
    got = _score(tasks[0], tmp_path, {"lib.js": _sparing_submission()})
    assert got["total"] == 0.0, got
    assert got["components"]["results_trusted"]["value"] == 0.0, got


SOURCE = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
// one
test('a', () => {
  assert.strictEqual(f('x'), 'one');
});
test.describe('group', () => {
  it('b', async () => {
    expect(g(2)).toBe(12);
  });
  it('branch', () => { if (h()) { assert.equal(h(), 3); } });
  it.skip('skipped', () => { assert.equal(h(), 4); });
  it('c', function () {
    assert.deepStrictEqual(k(), true);
  });
});
"""


def test_canaries_are_copies_named_and_placed_like_the_tests_they_copy():
    from rlforge.verify.standalone import jscanaries, jstitles

    seen = set()
    for seed in range(40):
        text, parens = jscanaries.plant(SOURCE, random.Random(seed))
        out, names, canaries = jstitles.neutralize(text, canaries=set(parens))
        out = out.decode()
        assert len(canaries) == 3
        # every title is `case N`, numbered in file order with no gap: the canaries' too
        titles = re.findall(r'(?:test|it|describe)(?:\.\w+)?\("([^"]*)"', out)
        assert titles == [f"case {n}" for n in range(1, len(titles) + 1)], out
        assert all(re.fullmatch(r"(case \d+ > )?case \d+", c) for c in canaries)
        assert not set(canaries) & set(names)
        # each canary sits beside its twin: the same lines, one literal apart
        assert out.count("h()") == SOURCE.count("h()")  # the branch and the skipped: never copied
        seen.add(tuple(sorted(canaries)))
        # the same seed, the same canaries
        assert jscanaries.plant(SOURCE, random.Random(seed)) == (text, parens)
    # which copy is the canary changes with the seed (the first or the second of a pair)
    assert len(seen) > 1, seen


def test_a_canary_differs_from_its_twin_by_one_literal_that_the_check_refuses():
    from rlforge.verify.standalone import jscanaries
    from rlforge.verify.standalone.jsvalues import matches, parse_literal

    for seed in range(60):
        text, _ = jscanaries.plant(SOURCE, random.Random(seed))
        lines = text.splitlines()
        asserts = [line for line in lines if re.search(r"strictEqual\(f|toBe\(|deepStrictEqual\(k", line)]
        assert len(asserts) == 6, text
        for a, b in zip(asserts[::2], asserts[1::2]):
            lit = re.search(r"(?:, |toBe\()(.+?)\)+;$", a)
            other = re.search(r"(?:, |toBe\()(.+?)\)+;$", b)
            assert a[:lit.start(1)] == b[:other.start(1)] and a[lit.end(1):] == b[other.end(1):], (a, b)
            lit, other = lit.group(1), other.group(1)
            # same quotes, same length (a boolean aside)
            assert lit[0] == other[0] if lit[0] in "'\"" else other[0] not in "'\""
            assert len(lit) == len(other) or {lit, other} == {"true", "false"}
            kind = "strict_deep" if "deep" in a else "same"
            assert not matches(kind, parse_literal(lit), parse_literal(other))


def test_a_file_whose_canary_did_not_fail_fails_every_test_of_it():
    from rlforge.verify.standalone.jscanaries import judge

    outcomes = {"a.test.js::case 1": "passed", "a.test.js::case 2": "passed",
                "b.test.js::case 1": "passed", "b.test.js::case 2": "failed"}
    real, canaries, forged = judge(outcomes, ["a.test.js::case 2", "b.test.js::case 2", "c.test.js::case 9"])
    assert forged == ["a.test.js", "c.test.js"]
    assert real == {"a.test.js::case 1": "failed", "b.test.js::case 1": "passed"}
    assert canaries == {"a.test.js::case 2": "passed", "b.test.js::case 2": "failed",
                        "c.test.js::case 9": "missing"}


def test_snapshot_keys_follow_the_neutral_titles_in_jest_and_vitest_form():
    from rlforge.verify.standalone.jstitles import neutral_snapshots, neutralize

    source = ("describe('a `b`', () => {\n  it('c', () => { expect(1).toMatchSnapshot(); });\n"
              "  it.each([1])('d %i', (n) => { expect(n).toMatchSnapshot(); });\n});\n")
    _, names, _ = neutralize(source)
    snap = ("exports[`a \\`b\\` c 1`] = `1`;\n\nexports[`a \\`b\\` c 2`] = `2`;\n\n"
            "exports[`a \\`b\\` > c 1`] = `1`;\n\nexports[`a \\`b\\` d 1 1`] = `1`;\n"
            "exports[`a \\`b\\` cc 1`] = `1`;\n")
    assert neutral_snapshots(snap, names) == (
        "exports[`case 1 case 2 1`] = `1`;\n\nexports[`case 1 case 2 2`] = `2`;\n\n"
        "exports[`case 1 > case 2 1`] = `1`;\n\nexports[`case 1 d 1 1`] = `1`;\n"
        "exports[`case 1 cc 1`] = `1`;\n")
    assert neutral_snapshots("exports[`other 1`] = `1`;\n", names) == "exports[`other 1`] = `1`;\n"


def test_every_test_comparing_with_a_literal_gets_a_twin():
    """Code that spares both tests of every pair (alike but for one literal) must find
    no test outside a pair to forge freely: each such test is copied, not a few."""
    from rlforge.verify.standalone import jscanaries

    source = "".join(f"test('t{n}', () => {{\n  assert.strictEqual(f({n}), {n * 7});\n}});\n"
                     for n in range(12))
    text, parens = jscanaries.plant(source, random.Random(1))
    assert len(parens) == 12 and text.count("assert.strictEqual(") == 24
