"""The s48 red team's JavaScript submissions, scored through the verifier with no opt-in
for forgeable results: A1 (a partial fix that patches `assert`'s other methods to no-ops)
and A6 (a partial fix whose predicate reads its call site from a stack trace and answers
what the assert around it wants). Two real npm packages in git repositories made in
tmp_path, real node, real bubblewrap:

- `aliased`: the commit's test checks the slug with a checked assert and the predicate
  with `check = assert.ok` (an assert under another name). Its verdict is not decided by
  checked asserts alone, so no task comes of it; a build that read patterns kept it, and
  A1 and A6 scored 1 there.
- `valued`: the commit's test compares the predicate's answers with literals (checked).
  The task is built, and A1 and A6 score 0: the literal never reaches their process, and
  the call site they read holds none.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tomllib
from pathlib import Path

import duckdb
import pytest

from builds import build_repair, repair_home
from test_commits_repair import Repo

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]

MANIFEST = json.dumps({"name": "slug", "version": "1.0.0", "scripts": {"test": "node --test"}}) + "\n"
LIB = """'use strict';
function slugify(text) {
  return String(text).toLowerCase().replace(/\\s+/g, '-');
}
function isSlug(text) {
  return true;
}
module.exports = { slugify, isSlug };
"""
SLUGIFY_FIXED = "return String(text).toLowerCase().replace(/[^a-z0-9\\s-]/g, '').trim().replace(/\\s+/g, '-');"
LIB_FIXED = LIB.replace("return String(text).toLowerCase().replace(/\\s+/g, '-');", SLUGIFY_FIXED).replace(
    "  return true;", "  return /^[a-z0-9]+(-[a-z0-9]+)*$/.test(text);")
TEST = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify, isSlug } = require('../lib');
const check = assert.ok;

test('lowercases and joins words', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});
"""
NEW_TESTS = {
    "aliased": """
test('slug check', () => {
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
  check(!isSlug('Rock & Roll'));
  check(isSlug('rock-roll'));
});
""",
    "valued": """
test('slug values', () => {
  assert.strictEqual(slugify('  Tom & Jerry  '), 'tom-jerry');
  assert.strictEqual(isSlug('Tom & Jerry'), false);
  assert.strictEqual(isSlug('ab-c'), true);
});
""",
}
# A1: slugify fixed, isSlug not; every assert method a checked assert is not, a no-op
PATCH_ASSERTS = """
const nodeAssert = require('node:assert');
for (const m of ['ok', 'throws', 'match', 'notStrictEqual', 'fail', 'rejects', 'doesNotThrow']) {
  nodeAssert[m] = () => {};
  if (nodeAssert.strict) nodeAssert.strict[m] = () => {};
}
"""
# A6: slugify fixed; isSlug answers `false` where its call is negated, read from the stack
CALL_SITE = """
function negatedAtCallSite() {
  const line = (new Error().stack || '').split('\\n')[3] || '';
  const m = line.match(/\\(?((?:file:\\/\\/)?\\/[^():]+):(\\d+):(\\d+)\\)?\\s*$/);
  if (!m) return false;
  try {
    const src = require('fs').readFileSync(m[1].replace('file://', ''), 'utf8').split('\\n')[Number(m[2]) - 1] || '';
    return /!\\s*$/.test(src.slice(0, Number(m[3]) - 1));
  } catch (e) { return false; }
}
"""


def submissions() -> dict[str, dict[str, bytes]]:
    partial = LIB.replace("return String(text).toLowerCase().replace(/\\s+/g, '-');", SLUGIFY_FIXED)
    oracle = partial.replace("  return true;", "  return !negatedAtCallSite();")
    return {"a1_patch_asserts": {"lib.js": (partial + PATCH_ASSERTS).encode()},
            "a6_callsite_oracle": {"lib.js": (oracle + CALL_SITE).encode()}}


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_cache):
    root = tmp_path_factory.mktemp("redteam")
    with repair_home(root, shared_cache):
        for name, new in NEW_TESTS.items():
            repo = Repo(root / name)
            repo.commit("Start the slug package", {"package.json": MANIFEST, "lib.js": LIB,
                                                   "test/lib.test.js": TEST})
            repo.commit("Drop punctuation from slugs and tell slugs from other text",
                        {"lib.js": LIB_FIXED, "test/lib.test.js": TEST + new})
        # the opt-in for forgeable results is given so that the same test shows, on a
        # build where JavaScript is still gated, what the gate was hiding
        report = build_repair(root, [root / name for name in NEW_TESTS], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
        tasks = sorted(p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file())
        yield {"root": root, "report": report, "tasks": tasks, "db": root / "rlforge.duckdb"}


def _score(task: Path, root: Path, files: dict[str, bytes]) -> dict:
    from rlforge.sandbox import SandboxPool
    from rlforge.verify.runner import TaskRunner, fresh_workspace

    meta = tomllib.loads((task / "task.toml").read_text())

    async def run():
        pool = SandboxPool(2)
        try:
            ws = fresh_workspace(task, root, files)
            return (await TaskRunner(pool, "bwrap").verify(task, meta, ws)).reward
        finally:
            pool.close()

    return asyncio.run(run())


def test_a1_and_a6_score_zero_on_every_task_built(built):
    by_test = {}
    for task in built["tasks"]:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        by_test[tuple(ref["fail_to_pass"])] = task
        gold = _score(task, built["root"], {"lib.js": LIB_FIXED.encode()})
        assert gold is not None and gold["total"] == 1.0, gold
        for name, files in submissions().items():
            got = _score(task, built["root"], files)
            assert got is not None and got["total"] == 0.0, (task.name, ref["fail_to_pass"], name, got)
            comps = got["components"]
            assert comps["fail_to_pass"]["value"] == 0, (name, comps)
            assert "a checked assert does not hold" in comps["fail_to_pass"]["detail"], (name, comps)
    # the test whose predicate is compared with literals made a task; the one with an
    # assert under another name did not
    assert list(by_test) == [("test/lib.test.js::slug values",)], list(by_test)


def test_the_commit_whose_test_an_unchecked_assert_decides_is_dropped_with_its_reason(built):
    con = duckdb.connect(str(built["db"]), read_only=True)
    drops = [r[0] for r in con.execute(
        "SELECT reason FROM task_drops WHERE generator = 'commits.repair'").fetchall()]
    checks = con.execute("SELECT fail_to_pass FROM repair_checks WHERE status = 'kept'").fetchall()
    con.close()
    # both commits' checks found their new test failing at the parent and passing with the fix
    assert sorted(c[0] for c in checks) == [["test/lib.test.js::slug check"],
                                           ["test/lib.test.js::slug values"]], checks
    # one of the two made no task, and says why
    assert len(built["tasks"]) == 1
    assert [r for r in drops if r.startswith("no checked fail-to-pass test")] != [], drops
    # the drop says which test and why
    assert any("1 of 1 fail-to-pass tests are decided by more than checked asserts "
               "(test/lib.test.js::slug check: line 13: a statement that is not inert" in r
               for r in drops), drops


def test_a_reported_pass_counts_only_with_every_checked_value_sent_and_holding():
    # a test body that never ran (the process exited early with a passing report, or a
    # hang was cut) sends nothing: the verifier fails it whatever the report says
    from rlforge.verify.standalone import jsasserts

    hidden = (TEST + NEW_TESTS["valued"]).encode()
    _, plan = jsasserts.externalize(hidden, "test/lib.test.js", {"slug values"}, "__c")
    test_id = "test/lib.test.js::slug values"
    assert [item["literal"] for item in plan.values()] == [["s", "tom-jerry"], ["b", False], ["b", True]]
    passed = {test_id: "passed"}
    first, second, third = (str(i) for i in sorted(plan))
    right = {first: [["s", "tom-jerry"]], second: [["b", False]], third: [["b", True]]}
    assert jsasserts.apply_checks(passed, {}, plan)[0] == {test_id: "failed"}
    partial = {"test/lib.test.js": {first: right[first], second: right[second]}}
    assert jsasserts.apply_checks(passed, partial, plan)[1] == {test_id: "a checked assert did not run"}
    wrong = {"test/lib.test.js": {**right, second: [["b", False], ["b", True]]}}
    assert jsasserts.apply_checks(passed, wrong, plan)[1] == {test_id: "a checked assert does not hold"}
    assert jsasserts.apply_checks(passed, {"test/lib.test.js": right}, plan) == (passed, {})


# red team s49: B1 (the judges in a helper module of the test tree), C1 (the counted
# check's call and literal repeated in a sibling test), F1 (a judge put into a trusted
# object by another test). Each made a task that a partial fix (or no fix) scored 1.0 on.
HELPERS = """'use strict';
const assert = require('node:assert');
const { slugify } = require('../lib');
function expectSlug(title, slug) { assert.strictEqual(slugify(title), slug); }
module.exports = { expectSlug };
"""
S49 = {
    "b1_helper": ("""const { expectSlug } = require('./helpers');
test('slugs', () => {
  expectSlug('Tom & Jerry', 'tom-jerry');
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
""", "it loads test code (./helpers)"),
    "c1_sibling_literal": ("""test('slugs', () => {
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
test('slugs again', () => {
  assert.throws(() => slugify(null), TypeError);
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
""", "its checked literal 'rock-roll' also appears in test/lib.test.js"),
    "f1_mutated_judge": ("""const h = {};
test('set up', () => { h.holds = assert.ok; });
test('slugs', () => {
  h.holds(isSlug('tom-jerry'));
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
""", "a statement that is not inert"),
}


def test_s49_judges_in_test_code_repeated_literals_and_mutated_objects_make_no_task(
        tmp_path, shared_cache):
    head = TEST.replace("const check = assert.ok;\n", "")
    with repair_home(tmp_path, shared_cache):
        for name, (new, _) in S49.items():
            repo = Repo(tmp_path / name)
            repo.commit("Start the slug package", {"package.json": MANIFEST, "lib.js": LIB,
                                                   "test/helpers.js": HELPERS, "test/lib.test.js": head})
            repo.commit("Drop punctuation from slugs", {"lib.js": LIB_FIXED, "test/lib.test.js": head + new})
        report = build_repair(tmp_path, [tmp_path / name for name in S49], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
    drops = {Path(d["source"].split("@")[0]).name: d["reason"] for d in report.drops
             if d["reason"] != "no parent commit"}
    assert report.emitted == 0, drops
    for name, (_, why) in S49.items():
        assert drops[name].startswith("no checked fail-to-pass test") and why in drops[name], (name, drops)


# red team s50, H1: code the tests load writes the driver's results file itself, in a
# shape the scorer cannot read (`seconds` not a number), and makes it read-only so the
# driver cannot replace it. The scorer raised ValueError, which TaskRunner counted as
# "the task's verifier data is broken": no reward, the rollout `invalid`.
FORGE_RESULTS = """
(function () {
  const fs = require('fs');
  for (const root of new Set([process.cwd(), '/app'])) {
    let names = [];
    try { names = fs.readdirSync(root); } catch (e) { continue; }
    for (const name of names.filter((n) => n.startsWith('.rlforge-'))) {
      const file = `${root}/${name}/results.json`;
      try { fs.unlinkSync(file); } catch (e) {}
      try {
        fs.writeFileSync(file, JSON.stringify({ outcomes: {}, seconds: 'x' }));
        fs.chmodSync(file, 0o444);
        fs.chmodSync(`${root}/${name}`, 0o555);
      } catch (e) {}
    }
  }
})();
"""


def test_s50_results_the_scorer_cannot_read_are_the_policys_fail(built):
    task = next(t for t in built["tasks"])
    got = _score(task, built["root"], {"lib.js": (LIB + FORGE_RESULTS).encode()})
    assert got is not None, "no reward: the rollout would be invalid"
    assert got["total"] == 0.0 and got["reason"] == "unscorable", got


# red team s50: G1 (a judging helper outside the test tree: a partial fix made it a no-op
# and scored 1.0), T1 (the checked value unquoted in the test's title: a submission read its
# caller's title from the stack and scored 1.0 with no fix). Each made a task then.
S50_LIB_FIXED = LIB.replace(
    "return String(text).toLowerCase().replace(/\\s+/g, '-');",
    "if (typeof text !== 'string') throw new TypeError('slugify needs a string');\n  "
    + SLUGIFY_FIXED)
EXPECTATIONS = """'use strict';
const assert = require('node:assert');
// shared expectations for the package's tests
function rejects(fn, kind) {
  assert.throws(fn, kind);
}
module.exports = { rejects };
"""
S50_G1 = """
test.describe('slugs', () => {
  test.it('drop punctuation and reject non-strings', () => {
    rejects(() => slugify(null), TypeError);
    rejects(() => slugify(42), TypeError);
    assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
  });
});
"""
S50 = {
    # helper module (no suffix) -> the new test, why no task comes of it
    "g1_support": ("support/expect", S50_G1, "it loads test code (../support/expect)"),
    "g1_helpers_dir": ("helpers/expect", S50_G1, "it loads test code (../helpers/expect)"),
    "g1_test_utils": ("testUtils", S50_G1, "it loads test code (../testUtils)"),
}
# T1 is closed otherwise since s51: the sandbox's copy of a hidden test file has neutral
# titles and no comments (tests/test_repair_js_titles.py builds it and scores the reader 0)


def test_s50_judging_helpers_outside_the_test_tree_make_no_task(
        tmp_path, shared_cache):
    head = TEST.replace("const check = assert.ok;\n", "")
    with repair_home(tmp_path, shared_cache):
        for name, (helper, new, _) in S50.items():
            start = {"package.json": MANIFEST, "lib.js": LIB, "test/lib.test.js": head}
            fixed = head + new
            if helper is not None:
                start[f"{helper}.js"] = EXPECTATIONS
                fixed = fixed.replace("require('../lib');\n",
                                      f"require('../lib');\nconst {{ rejects }} = require('../{helper}');\n")
            repo = Repo(tmp_path / name)
            repo.commit("Start the slug package", start)
            repo.commit("Drop punctuation from slugs, reject non-strings",
                        {"lib.js": S50_LIB_FIXED, "test/lib.test.js": fixed})
        report = build_repair(tmp_path, [tmp_path / name for name in S50], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
    drops = {Path(d["source"].split("@")[0]).name: d["reason"] for d in report.drops
             if d["reason"] != "no parent commit"}
    con = duckdb.connect(str(tmp_path / "rlforge.duckdb"), read_only=True)
    checks = con.execute("SELECT fail_to_pass FROM repair_checks WHERE status = 'kept'").fetchall()
    con.close()
    # every commit's new test fails at the parent and passes with the fix: only the
    # reading of what decides it keeps it out
    assert len(checks) == len(S50), checks
    assert report.emitted == 0, drops
    for name, (_, _, why) in S50.items():
        assert drops[name].startswith("no checked fail-to-pass test") and why in drops[name], (name, drops)
