"""Which JavaScript/TypeScript tests checked asserts alone decide: test files read as statements.

A JavaScript test runs in one process with the code it tests, so the framework's verdict
(passed, failed) is the submission's to forge; what it cannot forge is a checked assert
(`rlforge.verify.standalone.jsasserts`): a value compared, outside the process, with a
literal it never sees. A fail-to-pass test may count only when nothing but its checked
asserts can decide its verdict. This module decides that at build time, from the hidden
test file parsed by tree-sitter (its JavaScript, TypeScript and TSX grammars), and the
decision is stored in the task (the reference's `fail_to_pass`); the verifier needs no
parser.

The rule is an allowlist: a construct this grammar does not name makes the test (or its
scope) not count.

*Inert expression* (computes, cannot judge): literals (strings, templates, numbers,
regexes, `true`/`false`/`null`/`undefined`), JSX elements (their tags and attributes inert), arrays, objects (plain properties, spreads,
methods and accessors whose bodies are inert functions), parentheses, unary, binary,
logical, conditional, sequence, assignment and update operators, member and subscript
access, calls and `new` whose parts are inert, `await`, TypeScript's `as`, `satisfies`,
`!` and `<T>x` (types are skipped), function and arrow expressions whose bodies are inert
functions, `require(S)` / `import(S)` with S a string naming a *trusted module*, and
identifiers that resolve to a *trusted binding*.

*Trusted module*: a relative path or the package's own name (from `package.json`, with or
without a subpath) naming the project's own code, or a node built-in that judges nothing (`path`, `fs`, `os`,
`url`, `util`, `buffer`, `events`, `stream`, `crypto`, `querystring`, `zlib`,
`string_decoder`, with or without `node:`). Never `assert`, `node:test`, `chai`, `expect`,
`sinon`, a framework or any other package: their bindings are not trusted. Nor the
project's *test code*: a module under the test tree (`test/`, `tests/`, `__tests__/`,
`spec/`, `fixtures/`, `__mocks__/`, `test-utils/`, ...), a test file by its name, an
absolute path or one outside the repository, or a module that is test support by what it
does wherever it lives (`js_modules.support_modules`: it loads an assertion or test
library directly or through its own imports, or the package's public modules never reach
it); the submission may replace what it exports,
and its load-time code (hooks it registers) is not read, so a file that loads one (by
`require`, `import`, with or without names) counts nothing. An import run only for its
effects (`import 'x'`) counts nothing unless its module is trusted.

*Trusted binding*: a parameter of an enclosing inert function; a `const`/`let`/`var`
(destructured or not) whose initialiser is inert, or that has none outside a test body; an
import or require of a trusted module; a function declaration of the file whose body is an
inert function; or one of the global constructors and functions that judge nothing
(`Object`, `Array`, `String`, `Number`, `Boolean`, `BigInt`, `Symbol`, `Math`, `JSON`,
`Date`, `RegExp`, `Map`, `Set`, `WeakMap`, `WeakSet`, `Promise`, `Error` and its kinds,
typed arrays, `Buffer`, `URL`, `URLSearchParams`, `TextEncoder`, `TextDecoder`,
`parseInt`, `parseFloat`, `isNaN`, `isFinite`, the URI codecs, `NaN`, `Infinity`,
`console`, whose `assert` only prints). Any
other name (`assert`, `expect`, `t`, `done`, `this`, `process`, `globalThis`, an alias of
any of them) is not. And any of these only while every place of the file that may change
what the name holds is inert, read in the scopes around it: an assignment to it or to a
property of it (in another test, a hook of another describe, a `let` declared without a
value, a function declaration reassigned), a `for-in/of` onto it, a method call on it or a
call it is passed to (`Object.assign(h, ...)`, `chai.use(h)`), except calls of `assert`,
`expect` and the framework, which put no judge into their arguments. Namesakes in other
scopes share their writes (stricter, never looser). A callback's parameters are trusted
only when an inert call passes them (`xs.map((x) => ...)`, a table row), never a test's,
a hook's or a judge's.

*Inert function body*: declarations (initialisers inert), inert expression statements,
`return`, `if`/`else`, `for`/`for-in`/`for-of`/`while`/`do`, blocks, `break`/`continue`,
nested function declarations with inert bodies. No `throw`, `try`, `switch`, label,
class, `yield`.

*A test that counts* is a call `test|it|specify(TITLE, [OPTIONS,] FN[, TIMEOUT])` (also as
a member, `test.it`, and with `.only`), TITLE a plain string, inside `describe|suite|
context` calls of plain titles only (their function without parameters, its body a
block), where:

- FN is an arrow or `function` expression whose body is a block and whose parameters (a
  `done` callback, node's context `t`) are never referenced, OPTIONS and TIMEOUT inert;
- each statement of the body is a declaration whose every declarator has an inert
  initialiser, an inert expression statement, or a checked assert (`jsasserts.find_checks`,
  the compared expression inert); the last statement is a checked assert. So any throw
  of the tested code stops a checked assert that the verifier then finds did not run;
  nothing can fail after the last one; no `return` hands a promise to the framework; no
  `if`, loop, `try` or `throw` is around or beside a checked assert;
- every code that runs while the file is collected is inert: the file's top level and
  every `describe` body hold only imports, declarations (inert, or a require/import of any
  module: an untrusted one's names are untrusted), function declarations, `'use strict'`, TypeScript
  type declarations, test calls, hook calls, inert expression statements and the
  statements of an inert function body (a loop that only computes or prints); a
  declaration that only names something (`const check = assert.ok`) is no code, its name
  is untrusted unless what it names is. A custom
  matcher (`expect.extend`), `chai.use`, a conditional test, a class with code: none
  counts in the file;
- every `before`/`beforeEach`/`beforeAll`/`setup`/`suiteSetup` hook in its scope takes
  no parameter it uses and has an inert function body; no `after`/`afterEach`/`afterAll`/
  `teardown`/`suiteTeardown` hook in its scope has a statement (it would run after the
  last checked assert);
- its full title (titles joined as `jsasserts` names tests) is given to one test of the
  file only.

A table test (`describe.each(TABLE)(TITLE, FN)`, `it.each(...)(...)`) never counts; its
table and title must be inert, and the body of a table `describe` is read as code run at
collection (its parameters, a row, trusted).

The runner (`javascript`) adds one project rule: no test counts when the framework's
configuration loads setup code into every test file (Jest's `setupFiles*`, Vitest's
`setupFiles`, Mocha's `require`/`file`), which could hold hooks or matchers of its own.

What this leaves: a promise the test creates and never awaits, whose rejection the
framework would report after the test; the tested code's own verdict-free effects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from rlforge.tasks.generators.repair.runners.js_inert import (
    DECLARATIONS,
    FUNCTIONS,
    TYPE_ONLY,
    Reader,
    Scope,
    alias,
    module_root,
    parameters,
    parse,
)
from rlforge.tasks.generators.repair.runners.js_modules import test_support, trusted_module
from rlforge.verify.standalone import jsasserts

FRAME_NAMES = {"describe", "suite", "context"}
TEST_NAMES = {"test", "it", "specify"}
BEFORE_HOOKS = {"before", "beforeEach", "beforeAll", "setup", "suiteSetup"}
AFTER_HOOKS = {"after", "afterEach", "afterAll", "teardown", "suiteTeardown"}
HOOKS = BEFORE_HOOKS | AFTER_HOOKS
#: modifiers of a test or describe that keep it out of the count but are read alike
SET_ASIDE = {"skip", "todo", "concurrent", "sequential", "serial", "failing", "fails"}


def _callee(node) -> tuple[str, list[str]] | None:
    """(name, modifiers) of a framework call's function: `it` -> ("it", []),
    `test.describe.only` -> ("describe", ["only"]); None for any other callee."""
    fn = node.child_by_field_name("function")
    parts: list[str] = []
    while fn is not None and fn.type == "member_expression":
        prop = fn.child_by_field_name("property")
        if prop is None or prop.type != "property_identifier" or prop.text is None:
            return None
        parts.append(prop.text.decode("utf-8", "replace"))
        fn = fn.child_by_field_name("object")
    if fn is None or fn.type != "identifier" or fn.text is None:
        return None
    parts.append(fn.text.decode("utf-8", "replace"))
    parts.reverse()
    if parts[0] not in FRAME_NAMES | TEST_NAMES | HOOKS:
        return None
    if parts[0] in TEST_NAMES and len(parts) > 1 and parts[1] in FRAME_NAMES | TEST_NAMES | HOOKS:
        parts = parts[1:]  # node's test.describe, test.it
    return parts[0], parts[1:]


class _File(Reader):
    """The tests of one file that checked asserts alone decide."""

    QUIET_CALLS = Reader.QUIET_CALLS | FRAME_NAMES | TEST_NAMES | HOOKS

    def __init__(self, data: bytes, rel: str, own_names: frozenset[str],
                 support: frozenset[str] = frozenset()):
        super().__init__(data, own_names, rel, support)
        self.tree = parse(data, rel)
        text = data.decode("utf-8", "surrogateescape")
        self.checks = {}
        for c in jsasserts.find_checks(text):
            at = len(text[:c["start"]].encode("utf-8", "surrogateescape"))
            a = len(text[:c["expr_start"]].encode("utf-8", "surrogateescape"))
            b = a + len(text[c["expr_start"]:c["expr_end"]].encode("utf-8", "surrogateescape"))
            self.checks[at] = (c, a, b)
        self.poisoned = ""  # why code run at collection is not inert: then nothing counts
        self.found: dict[str, list[str]] = {}  # test name -> why each such test does not count, or ""

    def poison(self, node, why: str) -> None:
        if not self.poisoned:
            line = node.start_point[0] + 1 if node is not None else 0
            self.poisoned = f"line {line}: {why}"

    def title(self, node) -> str | None:
        value = jsasserts.parse_literal(self.text(node))
        return value[1] if value and value[0] == "s" else None

    def unused_params(self, fn) -> bool:
        """Whether a test or hook function's parameters are never referenced in it."""
        names: set[str] = set()
        stack = parameters(fn)
        while stack:
            n = stack.pop()
            if n.type in ("identifier", "shorthand_property_identifier_pattern"):
                names.add(self.text(n))
            stack.extend(n.named_children)
        if not names:
            return True
        stack = [fn.child_by_field_name("body")]
        while stack:
            n = stack.pop()
            if n is None:
                continue
            if n.type in ("identifier", "shorthand_property_identifier") and self.text(n) in names:
                return False
            stack.extend(n.named_children)
        return True

    def container(self, statements, scope: Scope, titles: list[str] | None, refused: str) -> None:
        """Read a block run at collection (the file's top level, a describe body);
        `refused`: why no test in it counts ("" while they may)."""
        if not self.declare_container(statements, scope):
            self.poison(statements[0] if statements else None, "a declaration's pattern")
        calls = []
        for s in statements:
            t = s.type
            if t in DECLARATIONS:
                for d in s.named_children:
                    v = d.child_by_field_name("value") if d.type == "variable_declarator" else None
                    source = self.module_source(module_root(v)) if v is not None else None
                    if source is not None and test_support(source, self.rel, self.own, self.support):
                        self.poison(s, f"it loads test code ({source}) whose load-time code is not read")
                    elif v is not None and source is None and not alias(v) \
                            and not self.expr_ok(v, scope):
                        self.poison(s, "a declaration runs code that is not inert")
            elif t == "import_statement":
                src = s.child_by_field_name("source")
                value = jsasserts.parse_literal(self.text(src)) if src is not None else None
                source = value[1] if value and value[0] == "s" else ""
                if test_support(source, self.rel, self.own, self.support):
                    self.poison(s, f"it loads test code ({source}) whose load-time code is not read")
                elif not any(c.type == "import_clause" for c in s.named_children) \
                        and not trusted_module(source, self.own, self.rel, self.support):
                    self.poison(s, f"an import run for its effects ({source or 'computed'})")
            elif t in TYPE_ONLY or t in (
                    "function_declaration", "generator_function_declaration", "empty_statement"):
                continue
            elif t == "expression_statement":
                expr = s.named_children[0] if s.named_children else None
                source = self.module_source(expr) if expr is not None else None
                if source is not None and test_support(source, self.rel, self.own, self.support):
                    self.poison(s, f"it loads test code ({source}) whose load-time code is not read")
                elif expr is not None and expr.type == "call_expression" and _callee(expr):
                    calls.append(expr)
                elif expr is not None and _table(expr):
                    self.table(expr, scope)
                elif expr is None or not (expr.type == "string" or self.expr_ok(expr, scope)):
                    self.poison(s, "a statement that is not inert")
            elif not self.statement_ok(s, scope):  # a loop or `if` that only computes
                self.poison(s, f"a statement that is not inert ({t})")
        for call in calls:  # hooks first: they cover every test of the block
            name, mods = _callee(call)  # type: ignore[misc]
            fn = self.function_arg(call)
            line = call.start_point[0] + 1
            if name in BEFORE_HOOKS:
                if fn is None or mods or not self.unused_params(fn) or not self.function_ok(fn, scope):
                    refused = refused or f"line {line}: a {name} hook that is not inert"
            elif name in AFTER_HOOKS:
                body = fn.child_by_field_name("body") if fn is not None else None
                if body is None or body.type != "statement_block" or any(
                        c.type != "comment" for c in body.named_children):
                    refused = refused or f"line {line}: an {name} hook with statements"
        for call in calls:
            name, mods = _callee(call)  # type: ignore[misc]
            if name in FRAME_NAMES:
                self.frame(call, mods, scope, titles, refused)
            elif name in TEST_NAMES:
                self.test(call, mods, scope, titles, refused)

    def declare_container(self, statements, scope: Scope) -> bool:
        self.declare_imports(statements, scope)
        return self.declare_block(statements, scope)

    def function_arg(self, call):
        args = call.child_by_field_name("arguments")
        fns = [c for c in (args.named_children if args is not None else []) if c.type in FUNCTIONS]
        return fns[-1] if fns else None

    def arguments(self, call, scope: Scope):
        """(title or None, the function argument or None) of a describe or test call, or
        None when an argument beside them is not inert (computed at collection)."""
        args = call.child_by_field_name("arguments")
        named = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        fn = self.function_arg(call)
        title = self.title(named[0]) if named and named[0].type == "string" else None
        rest = [c for c in named[1 if title is not None else 0:] if c != fn]
        if not all(self.expr_ok(c, scope) for c in rest):
            return None
        return title, fn

    def frame(self, call, mods, scope, titles, refused) -> None:
        read = self.arguments(call, scope)
        body = read[1].child_by_field_name("body") if read and read[1] is not None else None
        if read is None or body is None or body.type != "statement_block" \
                or not set(mods) <= SET_ASIDE | {"only"}:
            self.poison(call, "a describe whose body is not read")
            return
        title, fn = read
        mapped = titles is not None and title is not None and set(mods) <= {"only"} \
            and not parameters(fn)
        self.container([c for c in body.named_children if c.type != "comment"], Scope(scope, fn),
                       titles + [title] if mapped and titles is not None and title is not None
                       else None, refused)

    def table(self, call, scope: Scope) -> None:
        """`describe.each(TABLE)(TITLE, FN)` / `it.each(...)(...)`: no test of it counts;
        the table and title must be inert, and a describe's body is read as code run at
        collection, its parameters (a row) trusted."""
        inner = call.child_by_field_name("function")
        name, _ = _callee(inner)  # type: ignore[misc]
        args = [c for a in (inner.child_by_field_name("arguments"), call.child_by_field_name("arguments"))
                if a is not None for c in a.named_children if c.type != "comment"]
        fn = self.function_arg(call)
        if not all(self.expr_ok(c, scope) for c in args if c != fn):
            self.poison(call, "a table test with an argument that is not inert")
            return
        if name in FRAME_NAMES:
            body = fn.child_by_field_name("body") if fn is not None else None
            inner_scope = Scope(scope, fn)
            if body is None or body.type != "statement_block" or not all(
                    self.bind_pattern(p, inner_scope, True, inner_scope) for p in parameters(fn)):
                self.poison(call, "a table describe whose body is not read")
                return
            self.container([c for c in body.named_children if c.type != "comment"], inner_scope,
                           None, "a table describe")

    def test(self, call, mods, scope, titles, refused) -> None:
        read = self.arguments(call, scope)
        if read is None or not set(mods) <= SET_ASIDE | {"only"}:
            # an option or a table computed at collection, a hook by another name
            self.poison(call, "a test call with an argument or modifier that is not inert")
            return
        title, fn = read
        if titles is None or title is None or fn is None or not set(mods) <= {"only"}:
            return
        name = jsasserts.SEP.join(titles + [title])
        self.found.setdefault(name, []).append(refused or self.body_refused(fn, scope))

    def body_refused(self, fn, scope: Scope) -> str:
        """Why the statements of a test function do not let it count ("" when they do):
        see the module docstring."""
        body = fn.child_by_field_name("body")
        line = fn.start_point[0] + 1
        if body is None or body.type != "statement_block":
            return f"line {line}: the test's body is an expression"
        if not self.unused_params(fn):
            return f"line {line}: the test uses its parameter (done, t)"
        inner = Scope(scope, fn)
        statements = [c for c in body.named_children if c.type != "comment"]
        if not all(self.bind_pattern(p, inner, False, inner) for p in parameters(fn)) \
                or not statements or not self.declare_block(statements, inner):
            return f"line {line}: the test's parameters or declarations"
        for s in statements:
            at = f"line {s.start_point[0] + 1}: "
            if s.type in DECLARATIONS:
                for d in s.named_children:
                    if d.type != "variable_declarator":
                        continue
                    v = d.child_by_field_name("value")
                    if v is None or not self.value_ok(v, inner):
                        return at + "a declaration without an inert value"
            elif s.type == "expression_statement":
                check = self.checks.get(s.start_byte)
                if check is not None:
                    _, a, b = check
                    expr = s.descendant_for_byte_range(a, b)
                    while expr is not None and expr.parent is not None and expr.parent.start_byte == a \
                            and expr.parent.end_byte == b:
                        expr = expr.parent
                    if expr is None or expr.start_byte != a or expr.end_byte != b \
                            or not self.expr_ok(expr, inner):
                        return at + "a checked assert whose expression is not inert"
                elif not self.expr_ok(s.named_children[0], inner):
                    return at + "a statement that is not inert (an unchecked assert, a judge)"
            elif s.type != "empty_statement":
                return at + f"a statement the grammar does not allow ({s.type})"
        if statements[-1].start_byte not in self.checks:
            return f"line {statements[-1].start_point[0] + 1}: the last statement is not a checked assert"
        return ""


def _table(node) -> bool:
    """Whether a call is `describe.each(TABLE)(...)` or `it.each(...)(...)` (any framework
    name with `each`)."""
    inner = node.child_by_field_name("function") if node.type == "call_expression" else None
    if inner is None or inner.type != "call_expression":
        return False
    callee = _callee(inner)
    return callee is not None and callee[0] in FRAME_NAMES | TEST_NAMES and "each" in callee[1]


def own_names(workspace: Mapping[str, bytes]) -> frozenset[str]:
    """The package's own name from the root `package.json`, which its tests may require."""
    try:
        data = json.loads(workspace.get("package.json", b"{}").decode("utf-8", "replace"))
    except ValueError:
        return frozenset()
    name = data.get("name") if isinstance(data, dict) else None
    return frozenset({name}) if isinstance(name, str) and re.fullmatch(r"[@\w./-]+", name) else frozenset()


def explain(data: bytes, rel: str, own: frozenset[str] = frozenset(),
            support: frozenset[str] = frozenset()) -> dict[str, str]:
    """{test name: why it does not count, or "" when checked asserts alone decide it} of
    every plainly named test of a test file; the key "" holds why nothing in the file
    counts, if so (see the module docstring). `support`: the package's modules that are
    test support by what they do (`js_modules.support_modules`)."""
    reader = _File(data, rel, own, support)
    root = reader.tree.root_node
    if root.has_error:
        return {"": "the file does not parse"}
    reader.index_sites(root)
    statements = [c for c in root.named_children if c.type not in ("comment", "hash_bang_line")]
    reader.container(statements, Scope(None, root), [], "")
    in_checks = {c["test"] for c, _, _ in reader.checks.values()}
    out = {"": reader.poisoned} if reader.poisoned else {}
    for name, verdicts in reader.found.items():
        if len(verdicts) > 1:
            out[name] = "another test of the file has the same name"
        elif name not in in_checks:
            out[name] = "no checked assert"
        else:
            out[name] = reader.poisoned or verdicts[0]
    return out


def decided_by_checks(data: bytes, rel: str, own: frozenset[str] = frozenset(),
                      support: frozenset[str] = frozenset()) -> set[str]:
    """The names (titles joined) of the tests of a test file whose verdict nothing but
    their checked asserts can decide (see the module docstring)."""
    return {name for name, why in explain(data, rel, own, support).items() if name and not why}
