"""Checked asserts of JavaScript/TypeScript tests: the literals stay here, the values come out.

The tested code runs in the same process as the test framework, so any outcome the
framework reports can be forged. What it cannot forge is a value it does not know. Each
statement of a test that compares an expression with a literal, alone on its lines:

    expect(EXPR).toBe(LIT);            expect(EXPR).toEqual(LIT);   .toStrictEqual(LIT)
    assert.strictEqual(EXPR, LIT);     assert.equal / deepEqual / deepStrictEqual
    (also `assert.strict.*`, `t.assert.*`, and with the literal first)

becomes a call `CHECK(index, (EXPR))` that appends the value, encoded, to a file the
driver names (`RLFORGE_JS_CHECKS`); the literal stays with the verifier, which compares
with JavaScript's own rules (`jsvalues.matches`: Object.is, `==`, Jest's and node's deep
equality). A fail-to-pass test passes only when the framework says so *and* every
checked assert of it ran and every value it sent holds.

Which test a statement belongs to is read from the nesting of `describe`/`test`/`it`
calls around it (their titles joined with ` > `, as `noderun` names tests); a statement
under a title that is not a plain string (template, `.each`) is left alone.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.jsasserts
    from .jsvalues import matches, parse_literal, trivially_holds
else:  # tests/rlforge_jsasserts.py: its siblings by their copied names
    from rlforge_jsvalues import matches, parse_literal, trivially_holds

SEP = " > "
ENV = "RLFORGE_JS_CHECKS"
EXPECT_MATCHERS = {"toBe": "same", "toEqual": "equal", "toStrictEqual": "strict_deep"}
ASSERT_MATCHERS = {"strictEqual": "same", "equal": "loose", "deepStrictEqual": "strict_deep",
                   "deepEqual": "loose_deep"}
FRAME = re.compile(r"(?<![\w$.])(?:[A-Za-z_$][\w$]*\.)?(describe|test|it|suite|context|specify)"
                   r"((?:\.(?:only|concurrent|sequential|serial))*)((?:\.[A-Za-z_$][\w$]*)*)\s*\(")
ASSERT_START = re.compile(r"(?:expect|(?:t\.)?assert(?:\.strict)?\s*\.\s*([A-Za-z]+))\s*\(")
# Sends a value out, encoded as `encode` in Python reads it; returns it unchanged. One
# declaration appended to the test file (hoisted in scripts and modules alike).
HELPER_JS = r"""
;function {name}(i{any}, v{any}){any} {
  const enc = (x{any}, d{num}){any} => {
    if (d > 40) return ["?", "deep"];
    if (x === undefined) return ["u"];
    if (x === null) return ["N"];
    const t = typeof x;
    if (t === "boolean") return ["b", x];
    if (t === "number") return ["n", Object.is(x, -0) ? "-0" : String(x)];
    if (t === "bigint") return ["g", String(x)];
    if (t === "string") return ["s", x];
    if (Array.isArray(x)) return ["a", Array.from(x, (y{any}) => enc(y, d + 1))];
    if (t === "object") {
      const p = Object.getPrototypeOf(x);
      if (p === Object.prototype || p === null) return ["o", Object.keys(x).map((k) => [k, enc(x[k], d + 1)])];
    }
    return ["?", t];
  };
  try {
    const g{any} = globalThis;
    const out = g.process && g.process.env && g.process.env.{env};
    if (out) {
      let fs{any} = g.process.getBuiltinModule ? g.process.getBuiltinModule("fs") : null;
      if (!fs) fs = eval("typeof require === 'function' ? require('fs') : null");
      if (fs) fs.appendFileSync(out, JSON.stringify([i, enc(v, 0)]) + "\n");
    }
  } catch (e) {}
  return v;
}
"""


class _Scan:
    """Positions of code in JavaScript source: what is inside strings, comments and regex
    literals (never code), the matching bracket of each opening one, and where each
    comment is (`comments`: [(start, end)])."""

    def __init__(self, text):
        self.text = text
        self.code = bytearray(len(text))  # 1 where the character is code
        self.match = {}
        self.comments = []
        stack, i, n, last = [], 0, len(text), ""
        while i < n:
            c = text[i]
            if c in "'\"`":
                j = self._string_end(i)
                last, i = "s", j
                continue
            if c == "/" and text.startswith("//", i):
                j = text.find("\n", i)
                self.comments.append((i, n if j < 0 else j))
                i = n if j < 0 else j
                continue
            if c == "/" and text.startswith("/*", i):
                j = text.find("*/", i + 2)
                self.comments.append((i, n if j < 0 else j + 2))
                i = n if j < 0 else j + 2
                continue
            if c == "/" and (last == "" or last in "(,=:[!&|?{};+-*%<>~^"):
                j = self._regex_end(i)
                if j:
                    last, i = "s", j
                    continue
            self.code[i] = 1
            if c in "([{":
                stack.append(i)
            elif c in ")]}" and stack:
                self.match[stack.pop()] = i
            if not c.isspace():
                last = "w" if (c.isalnum() or c in "_$") else c
            i += 1

    def _string_end(self, i):
        text, q, j = self.text, self.text[i], i + 1
        depth = 0
        while j < len(text):
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if q == "`" and c == "$" and text.startswith("${", j):
                depth += 1
                j += 2
                continue
            if q == "`" and depth and c == "}":
                depth -= 1
            elif c == q and not depth:
                return j + 1
            elif c == "\n" and q != "`":
                return j
            j += 1
        return j

    def _regex_end(self, i):
        text, j, klass = self.text, i + 1, False
        while j < len(text) and text[j] != "\n":
            c = text[j]
            if c == "\\":
                j += 2
                continue
            if c == "[":
                klass = True
            elif c == "]":
                klass = False
            elif c == "/" and not klass:
                j += 1
                while j < len(text) and (text[j].isalnum()):
                    j += 1
                return j
            j += 1
        return None

    def is_code(self, i):
        return 0 <= i < len(self.code) and self.code[i] == 1


# --- finding and rewriting the checks ------------------------------------------------------

def _split_args(scan, start, end):
    """(start, end) of each top-level argument between the parentheses at start..end."""
    args, i, begin = [], start + 1, start + 1
    while i < end:
        if scan.is_code(i):
            c = scan.text[i]
            if c in "([{" and i in scan.match:
                i = scan.match[i] + 1
                continue
            if c == ",":
                args.append((begin, i))
                begin = i + 1
        i += 1
    if scan.text[begin:end].strip():
        args.append((begin, end))
    return args


def _title(scan, open_paren):
    """The plain-string first argument of a describe/test call, or None."""
    args = _split_args(scan, open_paren, scan.match.get(open_paren, open_paren))
    if not args:
        return None
    value = parse_literal(scan.text[args[0][0]:args[0][1]].strip())
    return value[1] if value and value[0] == "s" else None


def _frames(scan):
    """[(start, end, title or None, is a test)] of every describe/test/it call."""
    out = []
    for m in FRAME.finditer(scan.text):
        paren = m.end() - 1
        if not scan.is_code(m.start()) or paren not in scan.match:
            continue
        title = _title(scan, paren) if not m.group(3) else None  # .skip/.each/.todo: unmapped
        out.append((paren, scan.match[paren], title, m.group(1) not in ("describe", "suite", "context")))
    return out


def find_checks(source, suffix=".js", alone=True):
    """Every checked-assert statement of a test file: dicts with `test` (the titles
    joined), `ordinal` (its place among its test's checks), `kind`, `literal` (tagged),
    `literal_src`, the statement's span (`start`, `end`), its expression's (`expr_start`,
    `expr_end`) and its literal's (`lit_start`, `lit_end`). `alone` False: also a
    statement that shares its lines with other code (one a canary may copy, never one
    to rewrite)."""
    text = source.decode("utf-8", "surrogateescape") if isinstance(source, bytes) else source
    scan = _Scan(text)
    frames = _frames(scan)
    found, per_test = [], {}
    for m in ASSERT_START.finditer(text):
        s = m.start()
        line_start = text.rfind("\n", 0, s) + 1
        if (alone and text[line_start:s].strip()) or not scan.is_code(s):
            continue
        paren = m.end() - 1
        if paren not in scan.match:
            continue
        close = scan.match[paren]
        args = _split_args(scan, paren, close)
        if m.group(0).startswith("expect"):
            rest = re.compile(r"\s*\.\s*(toBe|toEqual|toStrictEqual)\s*\(").match(text, close + 1)
            if len(args) != 1 or not rest or rest.end() - 1 not in scan.match:
                continue
            kind = EXPECT_MATCHERS[rest.group(1)]
            mclose = scan.match[rest.end() - 1]
            margs = _split_args(scan, rest.end() - 1, mclose)
            if len(margs) != 1:
                continue
            expr, lit, end, literal_left = args[0], margs[0], mclose + 1, False
        else:
            name = m.group(1)
            if name not in ASSERT_MATCHERS or len(args) not in (2, 3):
                continue
            if len(args) == 3 and parse_literal(text[args[2][0]:args[2][1]].strip()) is None:
                continue  # a message that is not a literal may have effects
            kind = ASSERT_MATCHERS[name]
            left, right = (parse_literal(text[a:b].strip()) for a, b in args[:2])
            if (left is None) == (right is None):
                continue
            literal_left = left is not None
            expr, lit = (args[1], args[0]) if literal_left else (args[0], args[1])
            end = close + 1
        tail = re.compile(r"[ \t]*;?[ \t]*(//[^\n]*)?(\n|$)" if alone else "").match(text, end)
        if not tail:
            continue
        literal_src = text[lit[0]:lit[1]].strip()
        literal = parse_literal(literal_src)
        if literal is None or parse_literal(text[expr[0]:expr[1]].strip()) is not None:
            continue
        if kind in ("same", "loose") and literal[0] in ("a", "o"):
            continue  # identity with a fresh object never holds
        around = [f for f in frames if f[0] < s < f[1]]
        if not around or any(f[2] is None for f in around) or not around[-1][3]:
            continue
        test = SEP.join(f[2] for f in sorted(around))
        ordinal = per_test[test] = per_test.get(test, -1) + 1
        found.append({"test": test, "ordinal": ordinal, "kind": kind, "literal": literal,
                      "literal_src": literal_src, "literal_left": literal_left,
                      "trivial": trivially_holds(kind, literal),
                      "start": s, "end": end + len(tail.group(0).rstrip("\n")),
                      "expr_start": expr[0], "expr_end": expr[1],
                      "lit_start": lit[0] + len(text[lit[0]:lit[1]]) - len(text[lit[0]:lit[1]].lstrip()),
                      "lit_end": lit[0] + len(text[lit[0]:lit[1]].rstrip())})
    return found


def helper_source(name, suffix):
    """The check function, typed for TypeScript files."""
    ts = suffix.endswith((".ts", ".mts", ".cts", ".tsx"))
    return (HELPER_JS.replace("{name}", name).replace("{env}", ENV)
            .replace("{any}", ": any" if ts else "").replace("{num}", ": number" if ts else ""))


def externalize(source, rel, tests, name, start=0, keep=False):
    """Rewrite the checked asserts of the tests named in `tests` (titles joined) of the test
    file `rel` (see the module docstring); (new bytes, plan {index: item}). `keep`: the
    assertion stays, only its expression is wrapped (a build's runs, where nothing is
    hidden). Line numbers are kept. (source, {}) when there is nothing to rewrite."""
    text = source.decode("utf-8", "surrogateescape")
    items = [c for c in find_checks(text) if c["test"] in tests]
    if not items:
        return source, {}
    plan, edits = {}, []
    for n, item in enumerate(items):
        index = start + n
        expr = text[item["expr_start"]:item["expr_end"]]
        call = f"{name}({index}, ({expr.strip()}))"
        if keep:
            edits.append((item["expr_start"], item["expr_end"], call))
        else:
            stmt = text[item["start"]:item["end"]]
            edits.append((item["start"], item["end"], call + ";" + "\n" * stmt.count("\n")))
        plan[index] = {"file": rel, "test": item["test"], "line": item["ordinal"],
                       "kind": item["kind"], "literal": item["literal"],
                       "literal_src": item["literal_src"], "trivial": item["trivial"]}
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    text += ("" if text.endswith("\n") else "\n") + helper_source(name, rel)
    return text.encode("utf-8", "surrogateescape"), plan


def read_sent(text, limit=10_000):
    """{index: [values]} of the lines a test process appended to its checks file."""
    out = {}
    for count, line in enumerate((text or "").splitlines()):
        if count >= limit:
            break
        try:
            index, value = json.loads(line)
        except (ValueError, TypeError, RecursionError):
            continue
        if isinstance(index, int) and not isinstance(index, bool) and isinstance(value, list):
            out.setdefault(str(index), []).append(value)
    return out


def holds(item, values):
    """Whether a checked assert ran (some value sent) and every value sent passes it."""
    return bool(values) and all(matches(item["kind"], v, item["literal"]) for v in values)


def apply_checks(outcomes, sent, plan):
    """Outcomes with every reported pass that a checked assert contradicts (did not run,
    or a value that fails it) turned into `failed`; and {id: why} of those.
    `sent`: {file: {index: [values]}} as `noderun` collects them."""
    by_test = {}
    for index, item in plan.items():
        by_test.setdefault(f"{item['file']}::{item['test']}", []).append((str(index), item))
    out, why = dict(outcomes), {}
    for test_id, outcome in outcomes.items():
        wanted = by_test.get(test_id, [])
        if outcome != "passed" or not wanted:
            continue
        got = sent.get(test_id.split("::", 1)[0], {})
        for index, item in wanted:
            if not got.get(index):
                why[test_id] = "a checked assert did not run"
                break
            if not holds(item, got[index]):
                why[test_id] = "a checked assert does not hold"
                break
        if test_id in why:
            out[test_id] = "failed"
    return out, why


def held_lines(plan, sent, ids):
    """{test id: [ordinals]} of the checked asserts of `ids` whose values (`sent`, as
    `apply_checks` reads them) all held in one run."""
    out = {}
    wanted = set(ids)
    for index, item in plan.items():
        test_id = f"{item['file']}::{item['test']}"
        if test_id in wanted and holds(item, sent.get(item["file"], {}).get(str(index), [])):
            out.setdefault(test_id, set()).add(item["line"])
    return {k: sorted(v) for k, v in out.items()}


def literal_seen(literal_src, literal, visible):
    """Whether the policy's copy of a test file (`visible` text) shows this literal."""
    squeeze = re.compile(r"\s+")
    if squeeze.sub("", literal_src) in squeeze.sub("", visible):
        return True
    if literal[0] == "s":
        return any(f"{q}{literal[1]}{q}" in visible for q in "'\"`")
    return False


def checked_tests(hidden, fail_to_pass, workspace, held_at_parent, held_with_fix, counting):
    """The fail-to-pass ids whose verdict tested code cannot forge: the test is one whose
    verdict nothing but its checked asserts can decide (`counting`, {file: test names}, as
    the build reads the file's statements: `rlforge.tasks.generators.repair.runners.
    js_statements`), every checked assert of it held in every run with the fix
    (`held_with_fix`, {id: ordinals}), and at least one discriminates: no trivial value
    passes it, its literal is not in the policy's copy of the file, and the parent's code
    did not pass it (`held_at_parent`)."""
    keep = []
    for test_id in fail_to_pass:
        rel, _, test = test_id.partition("::")
        if rel not in hidden or test not in counting.get(rel, ()):
            continue
        items = [c for c in find_checks(hidden[rel]) if c["test"] == test]
        if not items or {c["ordinal"] for c in items} - set(held_with_fix.get(test_id, ())):
            continue
        visible = (workspace.get(rel) or b"").decode("utf-8", "replace")
        if any(not c["trivial"] and c["ordinal"] not in set(held_at_parent.get(test_id, ()))
               and not literal_seen(c["literal_src"], c["literal"], visible) for c in items):
            keep.append(test_id)
    return keep
