"""JavaScript repair tasks end to end: a real npm package (node's test runner, nothing to
install) in a git repository made in tmp_path, real node, real bubblewrap. The build keeps
the fail-to-pass test whose checked assert the parent fails; validation proves the gold
fix scores 1 and the null and every adversarial submission 0; and code that forges the
framework's results (a passing report, canaries read from the test file, the values a
trivial answer sends) still scores 0, because the expected values never leave the
verifier's process.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tomllib
from pathlib import Path

import duckdb
import pytest

from builds import build_options, build_repair, repair_home
from rlforge import db
from rlforge.tasks.build import build_tasks
from rlforge.verify.standalone import jsasserts, jsvalues
from rlforge.verify.validate import validate_many
from test_commits_repair import Repo

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]

MANIFEST = json.dumps({"name": "slug", "version": "1.0.0", "scripts": {"test": "node --test"}}) + "\n"
LIB = """'use strict';
// Turn a title into a URL slug.
function slugify(text) {
  return String(text).toLowerCase().replace(/\\s+/g, '-');
}
function words(text) {
  return String(text).trim().split(/\\s+/);
}
module.exports = { slugify, words };
"""
LIB_FIXED = LIB.replace(
    "return String(text).toLowerCase().replace(/\\s+/g, '-');",
    "return String(text).toLowerCase().replace(/[^a-z0-9\\s-]/g, '').trim().replace(/\\s+/g, '-');")
TEST = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify, words } = require('../lib');

test('lowercases and joins words', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});
test('splits words', () => {
  assert.deepStrictEqual(words(' a b  c '), ['a', 'b', 'c']);
});
"""
TEST_FIXED = TEST + """
test.describe('punctuation', () => {
  test.it('is dropped from the slug', () => {
    assert.strictEqual(slugify('Hello, Moon!'), 'hello-moon');
    assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
  });
});
"""
CAUGHT_BY = {
    "null": "fail_to_pass", "empty_patch": "fail_to_pass", "unreadable_patch": "patch_applies",
    "delete_failing_tests": "tests_untouched", "skip_failing_tests": "tests_untouched",
    "edit_hidden_tests": "tests_untouched", "runner_config_forces_pass": "tests_untouched",
    "package_json_hooks": "tests_untouched", "node_modules_shadows_runner": "tests_untouched",
    "nested_node_modules": "tests_untouched", "adds_test_file": "tests_untouched", "exit_zero_at_import": "fail_to_pass",
    "exit_zero_at_exit": "fail_to_pass", "patch_assertions": "fail_to_pass",
    "forge_stdout": "fail_to_pass", "global_hooks": "fail_to_pass",
    "forge_report": "fail_to_pass", "send_made_up_values": "fail_to_pass",
}


def build_slug(path: Path) -> None:
    repo = Repo(path)
    repo.commit("Start the slug package with slugify and words",
                {"package.json": MANIFEST, "lib.js": LIB, "test/lib.test.js": TEST})
    repo.commit("Drop punctuation from slugs so titles with commas or ampersands make clean URLs",
                {"lib.js": LIB_FIXED, "test/lib.test.js": TEST_FIXED})


@pytest.fixture(scope="module")
def slug(tmp_path_factory, shared_cache):
    root = tmp_path_factory.mktemp("slug")
    with repair_home(root, shared_cache):
        build_slug(root / "slug")
        report = build_repair(root, [root / "slug"], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
        tasks = sorted(p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file())
        yield {"root": root, "report": report, "tasks": tasks, "db": root / "rlforge.duckdb"}


def test_javascript_commits_make_no_task_unless_the_user_accepts_forgeable_results(slug, tmp_path):
    # tests are read as statements (`js_statements`), but until a red team re-checks that
    # reading JavaScript stays opt-in: by default the build drops the commit and says why
    con = db.connect(slug["db"])
    try:
        report = build_tasks(con, build_options(
            out=tmp_path / "tasks", generators=["commits.repair"], seed=7, validate=False,
            generator_options={"commits.repair": {"language": "javascript"}}))
    finally:
        con.close()
    assert report.emitted == 0
    reasons = [d["reason"] for d in report.drops if d["reason"] != "no parent commit"]
    assert reasons and all(r.startswith("the test runner's results can be forged (javascript@1: ")
                           and 'forgeable_runners = ["javascript"]' in r for r in reasons), reasons
    assert slug["report"].emitted == 1, slug["report"].drops  # the fixture opts in


def test_the_fix_becomes_a_javascript_task_with_its_checked_test(slug):
    con = duckdb.connect(str(slug["db"]), read_only=True)
    drops = con.execute("SELECT reason FROM task_drops WHERE generator = 'commits.repair'").fetchall()
    con.close()
    assert len(slug["tasks"]) == 1, drops
    task = slug["tasks"][0]
    ref = json.loads((task / "tests" / "reference.json").read_text())
    assert ref["verifier"] == "repair-js" and ref["framework"] == "node"
    assert ref["fail_to_pass"] == ["test/lib.test.js::punctuation > is dropped from the slug"]
    assert set(ref["pass_to_pass"]) == {"test/lib.test.js::lowercases and joins words",
                                        "test/lib.test.js::splits words"}
    assert (task / "tests" / "rlforge_noderepair.py").is_file()
    assert (task / "tests" / "rlforge_noderun.py").is_file()
    assert "FROM node:" in (task / "environment" / "Dockerfile").read_text()
    assert "rlforge_noderepair.py" in (task / "tests" / "test.sh").read_text()
    meta = tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]
    assert meta["node_requirements"] == []
    instruction = (task / "instruction.md").read_text()
    assert "The JavaScript project **slug**" in instruction
    # the expected value is nowhere the policy looks
    assert "rock-roll" not in instruction
    assert "rock-roll" not in (task / "environment" / "app" / "test" / "lib.test.js").read_text()


def _forgers(task: Path) -> dict[str, dict[str, bytes]]:
    """Submissions that forge results knowing everything the policy can see. `forge_report`:
    the lib finds node's report path in its parent's argv (/proc), reads the test file it
    is loaded by, reports every test passed but the canaries (the tests appended after the
    last one it knows from the workspace) failed, and exits 0 before any test runs.
    `send_trivial_values`: it sends, for every checked assert, values a trivial answer
    has."""
    lib = (task / "environment" / "app" / "lib.js").read_bytes()
    visible = (task / "environment" / "app" / "test" / "lib.test.js").read_text()
    known = json.dumps(sorted(set(re.findall(r"test\('([^']+)'", visible))))
    forge_report = r"""
;(function () {
  const fs = require('fs');
  const known = new Set(KNOWN);
  let dest = null;
  for (const pid of ['self', String(process.ppid)]) {
    try {
      const argv = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\0');
      for (const a of argv) if (a.startsWith('--test-reporter-destination=')) dest = a.split('=').slice(1).join('=');
    } catch (e) {}
  }
  const file = process.argv.find((a) => a.endsWith('.test.js'));
  if (!dest || !file) return;
  const text = fs.readFileSync(file, 'utf8');
  const lines = [];
  const re = /(?:^|[^\w.])(?:test|it|test\.it|test\.describe)\(\s*("[^"]*"|'[^']*')/g;
  const stack = [];
  for (const m of text.matchAll(re)) {
    const title = JSON.parse(m[1].replace(/^'|'$/g, '"'));
    if (m[0].includes('describe')) { stack[0] = title; continue; }
    const titles = (m[0].includes('it(') && stack.length) ? [stack[0], title] : [title];
    const canary = !known.has(title) && !(m[0].includes('it(') && stack.length);
    lines.push(JSON.stringify({titles, outcome: canary ? 'failed' : 'passed', kind: 'test'}));
  }
  // blank lines first: the runner's own reporter writes from the start of the file
  fs.appendFileSync(dest, '\n'.repeat(4096) + lines.join('\n') + '\n');
  process.exit(0);
})();
""".replace("KNOWN", known)
    trivial = r"""
;(function () {
  const fs = require('fs');
  const out = process.env.RLFORGE_JS_CHECKS;
  if (out) for (let i = 0; i < 50; i++) for (const v of [['s', ''], ['N'], ['b', true], ['n', '0']])
    fs.appendFileSync(out, JSON.stringify([i, v]) + '\n');
})();
"""
    return {"forge_report": {"lib.js": lib + forge_report.encode()},
            "send_trivial_values": {"lib.js": lib + trivial.encode()}}


def test_validation_gold_one_null_and_every_adversarial_zero(slug):
    results = asyncio.run(validate_many(slug["tasks"]))
    assert len(results) == 1
    r = results[0]
    assert r.ok, r.reason
    checks = {c.name: c for c in r.checks}
    assert checks["oracle"].got == 1.0
    seen = set()
    for name, check in checks.items():
        if name in ("leak", "oracle"):
            continue
        assert check.got == 0.0, (name, check.detail)
        assert f"{CAUGHT_BY[name]}=0" in check.detail, (name, check.detail)
        seen.add(name)
    assert seen == set(CAUGHT_BY)


def test_forged_reports_and_trivial_values_score_zero(slug):
    """Run through `rlforge`'s own scoring path (the sandbox launcher): the forgers make
    node report passes and send values, and still score 0 on the fail-to-pass test."""
    from rlforge.sandbox import SandboxPool
    from rlforge.verify.runner import TaskRunner, fresh_workspace

    task = slug["tasks"][0]
    meta = tomllib.loads((task / "task.toml").read_text())

    async def score(files):
        pool = SandboxPool(2)
        try:
            runner = TaskRunner(pool, "bwrap")
            ws = fresh_workspace(task, slug["root"], files)
            return (await runner.verify(task, meta, ws)).reward
        finally:
            pool.close()

    for name, files in _forgers(task).items():
        got = asyncio.run(score(files))
        assert got is not None and got["total"] == 0.0, (name, got)
        comps = got["components"]
        assert comps["fail_to_pass"]["value"] == 0, (name, comps)
        assert "a checked assert" in comps["fail_to_pass"]["detail"], (name, comps)
        # the canaries alone would not have caught the forger that read them
        assert comps["results_trusted"]["value"] == 1, (name, comps)


def test_checked_asserts_compare_as_javascript_does():
    same, loose = "same", "loose"
    assert jsvalues.matches(same, ["n", "6"], ["n", "6"]) and not jsvalues.matches(same, ["s", "6"], ["n", "6"])
    assert jsvalues.matches(loose, ["s", "6"], ["n", "6"]) and jsvalues.matches(loose, ["u"], ["N"])
    assert not jsvalues.matches(same, ["n", "-0"], ["n", "0"]) and jsvalues.matches(same, ["n", "NaN"], ["n", "NaN"])
    obj = jsvalues.parse_literal("{a: 1, 'b': [2, -3.5e2], c: undefined}")
    sent = ["o", [["a", ["n", "1"]], ["b", ["a", [["n", "2"], ["n", "-350"]]]]]]
    assert jsvalues.matches("equal", sent, obj) and not jsvalues.matches("strict_deep", sent, obj)
    assert jsvalues.trivially_holds(same, ["b", True]) and jsvalues.trivially_holds("loose", ["s", "0"])
    assert not jsvalues.trivially_holds("equal", ["a", [["s", "a"]]])
    for bad in ("`a${b}`", "foo()", "[1, x]", "{...a}", "010"):
        assert jsvalues.parse_literal(bad) is None, bad


def test_only_literal_asserts_of_plainly_named_tests_are_rewritten():
    source = b"""describe('mul', () => {
  it('multiplies', () => {
    assert.strictEqual(mul(2, 3), 6);
    expect(mul(4, 5)).toEqual([20]); // a comment
    assert(mul(2, 2) === 4);
    if (ok) assert.equal(3, mul(1, 3));
  });
  it.each([1])('x %s', () => { assert.strictEqual(mul(2, 3), 6); });
});
test(`tpl`, () => { expect(y).toBe(1) });
"""
    found = jsasserts.find_checks(source)
    assert [(c["test"], c["ordinal"], c["kind"]) for c in found] == [
        ("mul > multiplies", 0, "same"), ("mul > multiplies", 1, "equal")]
    text, plan = jsasserts.externalize(source, "t.test.js", {"mul > multiplies"}, "CHK")
    body = text.decode()
    assert "CHK(0, (mul(2, 3)));" in body and "CHK(1, (mul(4, 5)));" in body
    assert ", 6)" not in body.split("it.each")[0] and "[20]" not in body
    assert body.count("\n") >= source.decode().count("\n")  # lines kept
    assert {i: p["literal"] for i, p in plan.items()} == {0: ["n", "6"], 1: ["a", [["n", "20"]]]}


def test_the_framework_starts_from_the_bin_its_package_names(tmp_path):
    """Mocha before 10 ships bin/mocha, not bin/mocha.js: the driver reads the bin."""
    from rlforge.verify.standalone import noderun

    old = tmp_path / "node_modules" / "mocha"
    (old / "bin").mkdir(parents=True)
    (old / "bin" / "mocha").write_text("#!/usr/bin/env node\n")
    (old / "package.json").write_text(json.dumps({"name": "mocha", "version": "9.1.3",
                                                  "bin": {"mocha": "./bin/mocha", "_mocha": "./bin/_mocha"}}))
    assert noderun.entry_of(str(tmp_path / "node_modules"), "mocha") == str(old / "bin" / "mocha")
    # a package.json naming nothing that exists: the current layout
    (old / "package.json").write_text(json.dumps({"bin": "./nowhere.js"}))
    assert noderun.entry_of(str(tmp_path / "node_modules"), "mocha") == str(old / "bin" / "mocha.js")


def test_a_test_whose_verdict_rests_on_unchecked_code_is_not_kept():
    # a red team (s48) fixed only what a test's checked assert measures and passed the
    # rest of it: assert.throws / assert.ok patched to no-ops, or a function reading its
    # call site (`assert(!isSlug(..))`) from a stack trace. Only tests whose every
    # verdict-deciding statement is a checked assert count (`js_statements`).
    from rlforge.tasks.generators.repair.runners.javascript import counting

    hidden = b"""const assert = require('node:assert');
const { slugify, isSlug } = require('../lib');
test('only checked', () => {
  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
});
test('plain asserts', () => {
  assert.strictEqual(slugify('a b'), 'a-b');
  assert(!isSlug('a b'));
});
test('throws', () => {
  assert.throws(() => slugify(null), TypeError);
  assert.strictEqual(slugify('x y'), 'x-y');
});
"""
    f2p = [f"test/slug.test.js::{t}" for t in ("only checked", "plain asserts", "throws")]
    every = {t: [0] for t in f2p}
    files = {"test/slug.test.js": hidden}
    keep = jsasserts.checked_tests(files, f2p, {}, {}, every, counting(files, f2p, {}))
    assert keep == ["test/slug.test.js::only checked"]
    helper = {"test/slug.test.js": hidden + b"function check(x) { assert.ok(x); }\ncheck(1);\n"}
    assert jsasserts.checked_tests(helper, f2p, {}, {}, every, counting(helper, f2p, {})) == []
    # nothing counts unless the build read it as statements
    assert jsasserts.checked_tests(files, f2p, {}, {}, every, {}) == []
