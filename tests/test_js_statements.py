"""The allowlist that says which JavaScript/TypeScript tests checked asserts alone decide
(`rlforge.tasks.generators.repair.runners.js_statements`): real test files parsed by the
tree-sitter grammars. Each shape through which code other than a checked assert can
decide a verdict (an unchecked or aliased assert, a throw, a `done` callback, a returned
promise chain, `t.plan`, a custom matcher, `try`, a conditional, a statement after the
last checked assert, a helper or hook that judges, setup files) keeps its test out;
plain tests beside it still count.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlforge.tasks.generators.repair.runners import javascript
from rlforge.tasks.generators.repair.runners.js_statements import decided_by_checks, explain, own_names
from rlforge.verify.standalone import jsasserts

HEAD = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify, isSlug } = require('../lib');
"""
PLAIN = """
test('plain', () => {
  const s = slugify('A b');
  assert.strictEqual(slugify('Rock & Roll'), 'rock-roll');
});
"""


def counted(body: str, head: str = HEAD, rel: str = "test/slug.test.js") -> set[str]:
    return decided_by_checks((head + PLAIN + body).encode(), rel, frozenset({"slug"}))


def test_a_test_of_checked_asserts_and_inert_statements_counts():
    assert counted("") == {"plain"}
    # declarations, awaits, nested describes, functions that only compute, a trusted helper
    assert counted("""
function norm(x) { if (!x) { return ''; } for (const c of x) { slugify(c); } return x.trim(); }
describe('nested', () => {
  const cases = ['a', 'b'].map((x) => norm(x));
  it('async', async () => {
    const got = await Promise.resolve(slugify(norm(' A ')));
    assert.deepStrictEqual([got, cases.length], ['a', 2]);
  });
});
""") == {"plain", "nested > async"}


# each: a test body (after the plain one) that must not count
ESCAPES = {
    "unchecked assert": "assert.strictEqual(slugify('a b'), 'a-b');\n  assert(!isSlug('a b'));",
    "assert.throws": "assert.strictEqual(slugify('a b'), 'a-b');\n  assert.throws(() => slugify(null), TypeError);",
    "assert under another name": "const ok = assert.ok;\n  ok(isSlug('a'));\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "aliased module": "const check = require('node:assert');\n  check(isSlug('a'));\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "throw": "if (!isSlug('a')) throw new Error('no');\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "bare throw": "throw new Error('x');\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "try/catch": "try { slugify(null); } catch (e) {}\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "conditional check": "if (isSlug('a')) {\n    assert.strictEqual(slugify('a b'), 'a-b');\n  }",
    "statement after the last check": "assert.strictEqual(slugify('a b'), 'a-b');\n  slugify('c');",
    "returned promise": "assert.strictEqual(slugify('a b'), 'a-b');\n  return Promise.resolve(isSlug('a'));",
    "then chain": "Promise.resolve(1).then((v) => assert.ok(isSlug(v)));\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "callback judging": "['a'].forEach((x) => { assert.ok(isSlug(x)); });\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "expect matcher": "expect(isSlug('a')).toBeTruthy();\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "this": "this.timeout(100);\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "process": "process.exitCode = 0;\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "no check at all": "slugify('a b');",
    "declaration without a value": "let x;\n  assert.strictEqual(slugify('a b'), 'a-b');",
    "a check of an expression that judges": "assert.strictEqual(slugify((assert.ok(1), 'a b')), 'a-b');",
    "label": "x: slugify('a');\n  assert.strictEqual(slugify('a b'), 'a-b');",
}


@pytest.mark.parametrize("shape", sorted(ESCAPES))
def test_a_statement_that_can_decide_a_verdict_keeps_its_test_out(shape):
    body = ESCAPES[shape].replace("\n", "\n")
    assert counted(f"test('escape', function () {{\n  {body}\n}});\n") == {"plain"}, shape


@pytest.mark.parametrize("fn", ["(done) => {", "function (done) {", "async (t) => {"])
def test_a_callback_or_context_the_test_uses_keeps_it_out(fn):
    uses = "done();" if "done" in fn else "t.plan(1);"
    body = f"test('cb', {fn}\n  assert.strictEqual(slugify('a b'), 'a-b');\n  {uses}\n}});\n"
    assert counted(body) == {"plain"}
    before = f"test('cb', {fn}\n  {uses}\n  assert.strictEqual(slugify('a b'), 'a-b');\n}});\n"
    assert counted(before) == {"plain"}
    # a parameter the body never uses decides nothing (node's unused context)
    unused = f"test('cb', {fn}\n  assert.strictEqual(slugify('a b'), 'a-b');\n}});\n"
    assert counted(unused) == {"plain", "cb"}


def test_a_helper_that_judges_keeps_out_the_tests_that_call_it():
    assert counted("""
function expectSlug(x) { assert.ok(isSlug(x)); return x; }
function boom(x) { if (!x) throw new TypeError('x'); return x; }
test('judge', () => {
  const v = expectSlug('a');
  assert.strictEqual(slugify('a b'), 'a-b');
});
test('throws', () => {
  boom(1);
  assert.strictEqual(slugify('a b'), 'a-b');
});
test('untouched', () => {
  assert.strictEqual(slugify('x y'), 'x-y');
});
""") == {"plain", "untouched"}


def test_an_alias_made_while_the_file_loads_is_untrusted():
    # `const check = assert.ok` only names an assert: no code runs, but `check` judges
    body = "test('alias', () => {\n  assert.strictEqual(slugify('a b'), 'a-b');\n  check(isSlug('a'));\n});\n"
    assert counted(body, head=HEAD + "const check = assert.ok;\n") == {"plain"}
    assert counted(body, head=HEAD + "const check = require('../lib').isSlug;\n") == {"plain"}  # last is no check
    body = "test('alias', () => {\n  check(isSlug('a'));\n  assert.strictEqual(slugify('a b'), 'a-b');\n});\n"
    assert counted(body, head=HEAD + "const check = require('../lib').isSlug;\n") == {"plain", "alias"}
    assert counted(body, head=HEAD + "const { ok: check } = assert;\n") == {"plain"}
    # a member of an untrusted module: its name untrusted, no code of the file's own
    head = HEAD + ("const check = require('../lib').isSlug;\nvar Buffer = require('safe-buffer').Buffer;\n"
                   "const ok = (await import('chai')).assert;\n")
    assert counted(body, head=head) == {"plain", "alias"}
    assert counted(body.replace("check(isSlug('a'))", "Buffer.from(isSlug('a'))"), head=head) == {"plain"}


def test_a_helper_trusted_only_while_a_judging_one_was_being_read_is_read_again():
    # deciding `judge` reads `relay`, which calls `judge` (assumed trusted while it is
    # being read); `judge` then turns out to judge, so `relay` must not stay trusted
    assert counted("""
function judge(x) { relay(x); assert.ok(x); return x; }
function relay(x) { return judge(x); }
test('first', () => {
  const a = judge(1);
  assert.strictEqual(slugify('a b'), 'a-b');
});
test('second', () => {
  const b = relay(1);
  assert.strictEqual(slugify('a b'), 'a-b');
});
""") == {"plain"}


def test_hooks_in_scope_must_be_inert_and_after_hooks_empty():
    body = """
describe('{name}', () => {{
  {hook}
  it('t', () => {{
    assert.strictEqual(slugify('a b'), 'a-b');
  }});
}});
"""
    ok = {"plain", "h > t"}
    assert counted(body.format(name="h", hook="let s; beforeEach(() => { s = slugify('q'); });")) == ok
    assert counted(body.format(name="h", hook="afterEach(() => {});")) == ok
    for hook in ("beforeEach(() => { assert.ok(isSlug('a')); });",
                 "before((done) => { done(); });",
                 "afterEach(() => { slugify('z'); });",
                 "after(function () { assert.ok(true); });"):
        assert counted(body.format(name="h", hook=hook)) == {"plain"}, hook


@pytest.mark.parametrize("code", [
    "assert.ok(isSlug('a'));",                      # an assert while the file loads
    "expect.extend({ toBeSlug: (x) => ({ pass: true }) });",  # a custom matcher
    "require('chai').use(() => {});",
    "if (isSlug('a')) { test('maybe', () => {}); }",  # a conditional test
    "process.on('exit', () => {});",
    "class Thing { static { assert.ok(1); } }",
    "test(assert.ok(1) || 'x', () => {});",          # a title a judge computes at load
    "test.each([[assert.ok(1)]])('each %s', (x) => {});",  # a table a judge computes
    "describe.each([[1]])('each %s', (x) => { assert.ok(x); });",  # a table describe that judges
    "test.custom('hook by another name', () => { assert.ok(1); });",
])
def test_code_run_while_the_file_loads_must_be_inert_or_nothing_counts(code):
    assert counted(code + "\n") == set()
    assert counted(f"describe('d', () => {{\n  {code}\n}});\n") == set()


def test_a_loop_that_only_computes_or_prints_while_the_file_loads_is_inert():
    loop = """
describe('conflicts', function () {
  console.warn('changed mappings:');
  for (const [ext, old] of Object.entries({ a: slugify('A') })) {
    console.warn(`${ext} -> ${old}`);
  }
});
"""
    assert counted(loop) == {"plain"}
    why = explain((HEAD + PLAIN + loop.replace("console.warn", "assert.ok")).encode(), "test/t.test.js")
    assert why[""].startswith("line 12: a statement that is not inert") and why["plain"] == why[""]


def test_table_tests_never_count_and_an_inert_table_spoils_nothing():
    table = """
describe.each([{ path: '/a', expected: 'a' }])('parse $path', ({ path, expected }) => {
  const parsed = slugify(path);
  it('parses', () => {
    expect(parsed).toEqual(expected);
  });
});
it.each([[1, 2]])('adds %i', (a, b) => {
  assert.strictEqual(a + b, 3);
});
"""
    assert counted(table) == {"plain"}


def test_explain_says_why_each_test_does_not_count():
    why = explain((HEAD + PLAIN + """
test('unchecked', () => {
  assert.strictEqual(slugify('a b'), 'a-b');
  assert(!isSlug('a b'));
});
test('no check', () => {
  slugify('a b');
});
test('cb', (done) => {
  assert.strictEqual(slugify('a b'), 'a-b');
  done();
});
""").encode(), "test/slug.test.js")
    assert why == {"plain": "",
                   "unchecked": "line 13: a statement that is not inert (an unchecked assert, a judge)",
                   "no check": "no checked assert",
                   "cb": "line 18: the test uses its parameter (done, t)"}


def test_only_plainly_titled_tests_under_plain_describes_count_and_only_once():
    assert counted("""
describe.skip('skipped', () => {
  it('a', () => { assert.strictEqual(slugify('a b'), 'a-b'); });
});
describe(`tpl`, () => {
  it('b', () => { assert.strictEqual(slugify('a b'), 'a-b'); });
});
it.skip('c', () => { assert.strictEqual(slugify('a b'), 'a-b'); });
it.only('d', () => {
  assert.strictEqual(slugify('a b'), 'a-b');
});
it('one line', () => { assert.strictEqual(slugify('a b'), 'a-b'); });
test('plain', () => { assert.strictEqual(slugify('x'), 'x'); });
""") == {"d"}  # 'plain' now names two tests: neither counts; a check shares no line


def test_imports_of_judges_are_untrusted_and_the_package_itself_is_trusted():
    head = """import { test, expect } from 'vitest';
import * as chai from 'chai';
import slug, { isSlug } from 'slug';
import { join } from 'node:path';
"""
    body = """
test('esm', async () => {
  const p = join('a', slug('b'));
  expect(isSlug(p)).toBe(false);
});
test('chai', () => {
  chai.expect(isSlug('a')).to.equal(true);
  expect(slug('a b')).toBe('a-b');
});
"""
    got = decided_by_checks((head + body).encode(), "test/slug.test.js", frozenset({"slug"}))
    assert got == {"esm"}
    # the same test where the package is not its own: an untrusted import
    assert decided_by_checks((head + body).encode(), "test/slug.test.js", frozenset()) == set()
    assert own_names({"package.json": json.dumps({"name": "@scope/slug"}).encode()}) == {"@scope/slug"}


def test_typescript_types_are_skipped_and_tsx_parses():
    head = """import { describe, it, expect } from 'vitest';
import { slugify, type Options } from '../src/slug';
interface Case { input: string }
type Pair = [string, string];
"""
    body = """
describe('ts', () => {
  const opts: Options = { lower: true } as Options;
  it('typed', () => {
    const c: Case = { input: 'A B' } satisfies Case;
    expect(slugify(c.input, opts)!).toBe('a-b');
  });
  it('generic', () => {
    const p = slugify<string>('A B') as unknown as Pair;
    expect(p).toEqual(['a', 'b']);
  });
});
"""
    assert decided_by_checks((head + body).encode(), "src/slug.test.ts") == {"ts > typed", "ts > generic"}
    tsx = head + "const el = <div>{slugify('a')}</div>;\n" + body
    assert decided_by_checks(tsx.encode(), "src/slug.test.tsx") == {"ts > typed", "ts > generic"}


def test_a_file_that_does_not_parse_counts_nothing():
    assert counted("test('broken', () => {\n") == set()


@pytest.mark.parametrize("config,why", [
    ({"jest.config.js": b"module.exports = { setupFilesAfterEnv: ['./jest.setup.js'] };"}, "jest.config.js"),
    ({"vitest.config.ts": b"export default { test: { setupFiles: ['./setup.ts'] } }"}, "vitest.config.ts"),
    ({".mocharc.yml": b"require:\n  - ./test/hooks.js\n"}, ".mocharc.yml"),
    ({".mocharc.json": b'{"file": ["test/setup.js"]}'}, ".mocharc.json"),
    ({"package.json": json.dumps({"jest": {"setupFiles": ["./s.js"]}}).encode()}, "package.json jest"),
])
def test_setup_code_the_configuration_loads_keeps_every_test_out(config, why):
    assert javascript.setup_code(config) == why
    hidden = {"test/slug.test.js": (HEAD + PLAIN).encode()}
    assert javascript.counting(hidden, ["test/slug.test.js::plain"], config) == {}


def test_transpilers_a_mocha_configuration_requires_are_no_setup_code():
    for text in (b"require: ts-node/register\n", b'{"require": ["tsx", "source-map-support/register"]}'):
        assert javascript.setup_code({".mocharc.yml": text}) is None
    hidden = {"test/slug.test.js": (HEAD + PLAIN).encode()}
    assert javascript.counting(hidden, ["test/slug.test.js::plain"], {}) == {"test/slug.test.js": {"plain"}}


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="{}()[];,.'\"`/\\*=!?:<>-+ \nabtdescriitxpon0$", max_size=300))
def test_any_text_is_read_without_error_and_counts_only_tests_with_checks(text):
    got = decided_by_checks(text.encode("utf-8", "surrogatepass"), "t.test.js")
    # never an exception; only tests that have a checked assert
    assert got <= {c["test"] for c in jsasserts.find_checks(text)}


# red team s49: a judge reached through test code the submission can replace or that
# registers hooks at load (B1, q05, p06), or put into a trusted name elsewhere (F1, q01-q04)
TEST_CODE = {
    "relative helper": "const { expectSlug } = require('./helpers');",
    "helper through the package's own name": "const h = require('slug/test/helpers');",
    "hooks loaded for their effects": "require('./support/hooks');",
    "an import of a helper": "import { expectSlug } from './helpers.js';",
    "an import for its effects": "import 'chai/register-should';",
    "a sibling test file": "const other = require('./other.test');",
}


@pytest.mark.parametrize("shape", sorted(TEST_CODE))
def test_test_code_loaded_by_the_file_keeps_every_test_out(shape):
    why = explain((HEAD + TEST_CODE[shape] + "\n" + PLAIN).encode(), "test/slug.test.js",
                  frozenset({"slug"}))
    assert why["plain"] and why["plain"] == why[""], shape


def test_the_projects_own_code_beside_a_colocated_test_is_still_trusted():
    head = HEAD.replace("'../lib'", "'./lib'") + "const { norm } = require('slug/src/norm');\n"
    assert decided_by_checks((head + PLAIN).encode(), "src/slug.test.js", frozenset({"slug"})) \
        == {"plain"}


WRITTEN_ELSEWHERE = {
    "let assigned in another test": ("let check;", "test('setup', () => { check = assert.throws; });"),
    "let assigned in a sibling describe's hook": (
        "let check;", "describe('a', () => { before(() => { check = assert.throws; }); });"),
    "a property written in another test": (
        "const check = {}.constructor;", "test('setup', () => { check.x = assert.throws; });"),
    "a function declaration reassigned": (
        "function check() {}", "test('setup', () => { check = assert.throws; });"),
    "Object.assign onto it": (
        "const h = {};\nconst check = h;", "test('setup', () => { Object.assign(h, { x: assert.throws }); });"),
    "a global's property": ("const check = Math;", "Math.max = assert.throws;"),
    "passed to an untrusted helper": (
        "const chai = require('chai');\nconst check = {};", "chai.use(check);"),
}


@pytest.mark.parametrize("shape", sorted(WRITTEN_ELSEWHERE))
def test_a_name_written_anywhere_with_a_judge_is_untrusted(shape):
    decl, write = WRITTEN_ELSEWHERE[shape]
    use = "test('counted', () => {\n  check.x(() => slugify(null), TypeError);\n" \
          "  assert.strictEqual(slugify('A.B'), 'ab');\n});\n"
    if "reassigned" in shape or "let" in shape:
        use = use.replace("check.x(", "check(")
    body = decl + "\n" + write + "\n" + use
    why = explain((HEAD + PLAIN + body).encode(), "test/slug.test.js", frozenset({"slug"}))
    assert why.get("counted") and "not inert" in why["counted"], (shape, why)
    # the same file with an inert write counts the test
    inert = body.replace("assert.throws", "slugify")
    assert "counted" in counted(inert.replace("chai.use(check);", "slugify(check);")), shape


def test_inert_writes_loop_variables_and_callbacks_keep_a_name_trusted():
    assert counted("""
let total = 0;
const seen = {};
for (const w of ['a', 'b']) { total += w.length; seen[w] = slugify(w); }
['c'].forEach((w) => { seen[w] = slugify(w); });
test('counted', () => {
  const n = seen.a;
  assert.strictEqual(slugify(n + total), 'a2');
});
""") == {"plain", "counted"}


def _refused(hidden: dict[str, str], workspace: dict[str, str] | None = None) -> dict[str, str]:
    files = {p: t.encode() for p, t in hidden.items()}
    ws = {"package.json": b'{"name": "slug"}'} | {p: t.encode() for p, t in (workspace or {}).items()}
    return javascript.refusals(files, ["test/slug.test.js::counted"], ws)


def test_a_checked_literal_or_call_that_code_in_the_sandbox_can_read_elsewhere_keeps_the_test_out():
    # red team s49 C1: the counted check's call and literal repeated in a sibling test
    counted_test = "test('counted', () => {\n  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');\n});\n"
    sibling = ("test('other', () => {\n  assert.throws(() => slugify(null), TypeError);\n"
               "  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');\n});\n")
    alone = {"test/slug.test.js": HEAD + counted_test}
    assert _refused(alone) == {"test/slug.test.js::counted": ""}
    why = _refused({"test/slug.test.js": HEAD + counted_test + sibling})["test/slug.test.js::counted"]
    assert "'rock-roll' also appears in test/slug.test.js" in why
    # the literal in another test file, in a constant, in another quote style
    for where, text in [("test/other.test.js", "const want = \"rock-roll\";\n"),
                        ("test/data.json", '{"a": "rock-roll"}')]:
        why = _refused({**alone, where: text})["test/slug.test.js::counted"]
        assert f"also appears in {where}" in why, where
    why = _refused(alone, {"test/visible.test.js": "x(`rock-roll`)"})["test/slug.test.js::counted"]
    assert "also appears in test/visible.test.js" in why
    # a boolean every file holds: the call text repeated is what gives it away
    bool_test = "test('counted', () => {\n  assert.strictEqual(isSlug('a b'), false);\n});\n"
    assert _refused({"test/slug.test.js": HEAD + bool_test + "const z = false;\n"}) == \
        {"test/slug.test.js::counted": ""}
    why = _refused({"test/slug.test.js": HEAD + bool_test + "console.log(isSlug( 'a b' ));\n"})
    assert "the call it checks (isSlug('ab')) also appears" in why["test/slug.test.js::counted"]


def test_a_checked_strings_text_anywhere_in_the_test_code_keeps_the_test_out():
    # red team s50 T1: the value unquoted in the test's own title, read from the stack.
    # s51: the sandbox's copy of a hidden file has neutral titles and no comments
    # (`jstitles`), so only what it keeps, and the files it does not hide, are searched
    body = "  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');\n});\n"
    titled = {"test/slug.test.js": HEAD + "test('counted', () => {\n" + body}
    assert _refused(titled) == {"test/slug.test.js::counted": ""}
    in_title = HEAD + "describe('turns punctuation into Rock-Roll', () => {\n" \
        "test('counted', () => {\n" + body + "});\n"
    real = "test/slug.test.js::turns punctuation into Rock-Roll > counted"
    why = javascript.refusals({"test/slug.test.js": in_title.encode()}, [real],
                              {"package.json": b'{"name": "slug"}'})
    assert why == {real: ""}, why
    commented = HEAD + "// gives rock-roll\ntest('counted', () => {\n" + body
    assert _refused({"test/slug.test.js": commented}) == {"test/slug.test.js::counted": ""}
    # a title the framework computes is kept in the copy, so it is still searched
    each = titled["test/slug.test.js"] + "test.each([1])('rock-roll %s', (n) => {});\n"
    why = _refused({"test/slug.test.js": each})["test/slug.test.js::counted"]
    assert why.startswith("the text of its checked literal 'rock-roll' also appears"), why
    for where, text in [("test/other.test.js", "// gives rock-roll\n"),
                        ("test/fixtures/words.txt", "Rock & Roll -> rock-roll\n")]:
        why = _refused(titled, {where: text})["test/slug.test.js::counted"]
        assert why.startswith("the text of its checked literal") and where in why, (where, why)
    why = _refused(titled, {"test/visible.test.js": "test('into Rock-Roll', () => {});\n"})
    assert "also appears in test/visible.test.js" in why["test/slug.test.js::counted"], why
    # the call text in a file of the package beside the tests (an example in the README)
    why = _refused(titled, {"README.md": "slugify('  Rock & Roll  ') // a slug\n"})
    assert "the call it checks (slugify('Rock&Roll')) also appears in README.md" in \
        why["test/slug.test.js::counted"]
    # a string under 3 characters is looked for only quoted
    short = HEAD + "test('counted slab', () => {\n  assert.strictEqual(slugify('A.B'), 'ab');\n});\n"
    assert javascript.refusals({"test/slug.test.js": short.encode()}, ["test/slug.test.js::counted slab"],
                               {"package.json": b'{"name": "slug"}'}) == {"test/slug.test.js::counted slab": ""}


EXPECT_HELPER = "const assert = require('node:assert');\nmodule.exports = { rejects: (f, k) => assert.throws(f, k) };\n"
JUDGING_HELPERS = {
    # module path -> its text, and the package.json beside it
    "support/expect.js": (EXPECT_HELPER, '{"name": "slug"}'),
    "helpers/expect.js": (EXPECT_HELPER, '{"name": "slug"}'),
    "testUtils.js": (EXPECT_HELPER, '{"name": "slug"}'),
    "src/expect.js": ("module.exports = require('./inner');\n", '{"name": "slug"}'),
    "lib/should.js": ("const { expect } = require('chai');\nmodule.exports = { rejects: expect };\n",
                      '{"name": "slug"}'),
    "lib/check.js": ("const judge = require('my-judge');\nmodule.exports = { rejects: judge };\n",
                     '{"name": "slug", "devDependencies": {"my-judge": "1"}}'),
    "lib/by-hand.js": ("module.exports = { rejects(f) { try { f(); } catch (e) { return; } "
                       "throw new Error('no throw'); } };\n",
                       '{"name": "slug", "main": "lib.js", "files": ["lib.js"]}'),
}


@pytest.mark.parametrize("helper", sorted(JUDGING_HELPERS))
def test_a_helper_that_judges_is_test_code_wherever_it_lives(helper):
    # red team s50 G1: `rejects` from a project module outside the test tree that wraps
    # assert.throws; the submission may make it a no-op
    text, manifest = JUDGING_HELPERS[helper]
    source = "../" + helper.removesuffix(".js")
    test = HEAD + f"const {{ rejects }} = require('{source}');\n" \
        "test('counted', () => {\n  rejects(() => slugify(null), TypeError);\n" \
        "  assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');\n});\n"
    ws = {"package.json": manifest.encode(), "lib.js": b"module.exports = {};\n", helper: text.encode(),
          "src/inner.js": EXPECT_HELPER.encode()}
    why = javascript.refusals({"test/slug.test.js": test.encode()}, ["test/slug.test.js::counted"], ws)
    assert f"it loads test code ({source})" in why["test/slug.test.js::counted"], why
    # the same module reached from the package's entry point and loading no judge is its code
    ws = {"package.json": b'{"name": "slug", "files": ["index.js"]}', "lib.js": b"module.exports = {};\n",
          "index.js": f"require('./lib');\nmodule.exports = require('./{helper}');\n".encode(),
          helper: b"module.exports = { rejects: (f) => f() };\n"}
    why = javascript.refusals({"test/slug.test.js": test.encode()}, ["test/slug.test.js::counted"], ws)
    assert why == {"test/slug.test.js::counted": ""}, why


def test_an_array_or_object_literals_strings_seen_elsewhere_keep_the_test_out():
    # s51: a literal is also looked for element by element (strings of 3+ characters, at
    # any depth, object values not keys) and as a whole with white space ignored
    body = ("test('counted', () => {\n  assert.deepStrictEqual(slugify.split('A/b C'), "
            "['alpha/beta', 'ga', {kind: 'sierra-x'}]);\n});\n")
    alone = {"test/slug.test.js": HEAD + body}
    assert _refused(alone) == {"test/slug.test.js::counted": ""}
    for where, text, element in [("test/fixtures/words.txt", "split: Alpha/Beta\n", "alpha/beta"),
                                 ("test/other.test.js", "// sierra-x is the kind\n", "sierra-x")]:
        why = _refused(alone, {where: text})["test/slug.test.js::counted"]
        assert why.startswith("the text of its checked literal") and where in why \
            and repr(element) in why, (where, why)
    # the whole literal, spaced and quoted otherwise than the check's
    why = _refused(alone, {"test/other.test.js": "x(['alpha/beta','ga',{kind:'sierra-x'}]);\n"})
    assert why["test/slug.test.js::counted"].startswith("its checked literal ['alpha/beta'"), why
    # short strings and keys are not looked for on their own
    assert _refused(alone, {"test/other.test.js": "const kind = 'ga';\n"}) == \
        {"test/slug.test.js::counted": ""}
