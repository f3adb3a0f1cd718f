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

*Trusted module*: a relative or absolute path (the project's own code), the package's own
name (from `package.json`), or a node built-in that judges nothing (`path`, `fs`, `os`,
`url`, `util`, `buffer`, `events`, `stream`, `crypto`, `querystring`, `zlib`,
`string_decoder`, with or without `node:`). Never `assert`, `node:test`, `chai`, `expect`,
`sinon`, a framework or any other package: their bindings are not trusted.

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
any of them) is not.

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
from functools import cache

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript

from rlforge.verify.standalone import jsasserts

FRAME_NAMES = {"describe", "suite", "context"}
TEST_NAMES = {"test", "it", "specify"}
BEFORE_HOOKS = {"before", "beforeEach", "beforeAll", "setup", "suiteSetup"}
AFTER_HOOKS = {"after", "afterEach", "afterAll", "teardown", "suiteTeardown"}
SAFE_BUILTINS = {"path", "fs", "os", "url", "util", "buffer", "events", "stream", "crypto",
                 "querystring", "zlib", "string_decoder"}
SAFE_GLOBALS = frozenset({
    "undefined", "NaN", "Infinity", "Object", "Array", "String", "Number", "Boolean", "BigInt",
    "Symbol", "Math", "JSON", "Date", "RegExp", "Map", "Set", "WeakMap", "WeakSet", "Promise",
    "Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "URIError", "EvalError",
    "ArrayBuffer", "DataView", "Uint8Array", "Int8Array", "Uint16Array", "Int16Array",
    "Uint32Array", "Int32Array", "Float32Array", "Float64Array", "BigInt64Array",
    "BigUint64Array", "Uint8ClampedArray", "Buffer", "URL", "URLSearchParams", "TextEncoder",
    "TextDecoder", "parseInt", "parseFloat", "isNaN", "isFinite", "encodeURIComponent",
    "decodeURIComponent", "encodeURI", "decodeURI", "console"})
#: expressions whose children are all expressions (or tokens) checked alike
PLAIN = {"parenthesized_expression", "binary_expression", "unary_expression",
         "update_expression", "ternary_expression", "sequence_expression", "array",
         "spread_element", "arguments", "await_expression", "assignment_expression",
         "augmented_assignment_expression", "new_expression", "template_string",
         "template_substitution", "computed_property_name", "object", "call_expression",
         "optional_chain", "jsx_element", "jsx_expression", "jsx_text"}
LITERALS = {"string", "number", "true", "false", "null", "undefined", "regex", "comment",
            "string_fragment", "escape_sequence", "property_identifier",
            "private_property_identifier", "template_chars", "jsx_text", "html_character_reference"}
FUNCTIONS = {"arrow_function", "function_expression", "function", "generator_function"}
TYPE_ONLY = {"type_alias_declaration", "interface_declaration", "ambient_declaration",
             "abstract_class_declaration_type"}
DECLARATIONS = {"lexical_declaration", "variable_declaration"}
_TS = (".ts", ".mts", ".cts")


@cache
def _parser(kind: str) -> tree_sitter.Parser:
    if kind == "tsx":
        lang = tree_sitter_typescript.language_tsx()
    elif kind == "ts":
        lang = tree_sitter_typescript.language_typescript()
    else:
        lang = tree_sitter_javascript.language()
    return tree_sitter.Parser(tree_sitter.Language(lang))


def parse(data: bytes, rel: str) -> tree_sitter.Tree:
    """The syntax tree of a test file, by the grammar its suffix names."""
    kind = "tsx" if rel.endswith(".tsx") else "ts" if rel.endswith(_TS) else "js"
    return _parser(kind).parse(data)


def trusted_module(source: str, own_names: frozenset[str] = frozenset()) -> bool:
    """Whether a module of this name can only be the project's own code or judge nothing."""
    if source.startswith((".", "/")) or source in own_names:
        return True
    if any(source.startswith(n + "/") for n in own_names):
        return True
    return source.removeprefix("node:") in SAFE_BUILTINS


class _Scope:
    """Names declared in one block: each trusted or not, decided on first use."""

    def __init__(self, parent: _Scope | None = None):
        self.parent = parent
        self.pending: dict[str, object] = {}
        self.known: dict[str, bool] = {}

    def declare(self, name: str, how: object) -> None:
        self.pending[name] = how
        self.known.pop(name, None)


class _Reader:
    """One test file read against the grammar of the module docstring."""

    def __init__(self, data: bytes, own_names: frozenset[str]):
        self.data = data
        self.own = own_names
        self.busy: set[int] = set()

    # --- names --------------------------------------------------------------------------

    def text(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")

    def trusted(self, name: str, scope: _Scope | None) -> bool:
        while scope is not None:
            if name in scope.known:
                return scope.known[name]
            if name in scope.pending:
                how = scope.pending[name]
                scope.known[name] = True  # a recursive use while deciding: the outer answer decides
                ok = self._decide(how, scope)
                scope.known[name] = ok
                return ok
            scope = scope.parent
        return name in SAFE_GLOBALS

    def _decide(self, how, scope: _Scope) -> bool:
        if isinstance(how, bool):
            return how
        kind, node = how  # type: ignore[misc]
        if kind == "value":
            return node is None or self.value_ok(node, scope)
        if kind == "function":
            return self.function_ok(node, scope)
        return False

    def bind_pattern(self, node, scope: _Scope, how: object, check: _Scope) -> bool:
        """Declare the names a binding pattern introduces; whether its defaults are inert."""
        t = node.type
        if t in ("identifier", "shorthand_property_identifier_pattern"):
            scope.declare(self.text(node), how)
            return True
        if t in ("object_pattern", "array_pattern"):
            return all(self.bind_pattern(c, scope, how, check) for c in node.named_children
                       if c.type != "comment")
        if t == "pair_pattern":
            key = node.child_by_field_name("key")
            value = node.child_by_field_name("value")
            if key is not None and key.type == "computed_property_name" and not self.expr_ok(key, check):
                return False
            return value is not None and self.bind_pattern(value, scope, how, check)
        if t in ("assignment_pattern", "object_assignment_pattern"):
            left = node.child_by_field_name("left") or node.named_children[0]
            right = node.child_by_field_name("right") or node.named_children[-1]
            return self.bind_pattern(left, scope, how, check) and self.expr_ok(right, check)
        if t == "rest_pattern":
            return all(self.bind_pattern(c, scope, how, check) for c in node.named_children)
        if t in ("required_parameter", "optional_parameter"):
            pattern = node.child_by_field_name("pattern")
            value = node.child_by_field_name("value")
            return (pattern is not None and self.bind_pattern(pattern, scope, how, check)
                    and (value is None or self.expr_ok(value, check)))
        return False

    # --- expressions --------------------------------------------------------------------

    def module_source(self, node) -> str | None:
        """S of `require(S)` / `import(S)` with a plain string S, else None."""
        if node.type != "call_expression":
            return None
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is None or args is None or fn.type not in ("identifier", "import"):
            return None
        if fn.type == "identifier" and self.text(fn) != "require":
            return None
        named = [c for c in args.named_children if c.type != "comment"]
        if len(named) != 1 or named[0].type != "string":
            return None
        value = jsasserts.parse_literal(self.text(named[0]))
        return value[1] if value and value[0] == "s" else None

    def value_ok(self, node, scope: _Scope) -> bool:
        """An initialiser: inert, or the require/import of a trusted module (or a member of it)."""
        source = self.module_source(_module_root(node))
        if source is not None:
            return trusted_module(source, self.own)
        return self.expr_ok(node, scope)

    def expr_ok(self, node, scope: _Scope) -> bool:
        t = node.type
        if t in LITERALS:
            return True
        if t in ("identifier", "shorthand_property_identifier"):
            return self.trusted(self.text(node), scope)
        if t in FUNCTIONS:
            return self.function_ok(node, scope)
        if t == "call_expression":
            source = self.module_source(node)
            if source is not None:
                return trusted_module(source, self.own)
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type in ("import", "super"):
                return False
        if t == "member_expression":
            obj = node.child_by_field_name("object")
            return obj is not None and self.expr_ok(obj, scope)
        if t == "subscript_expression":
            return all(self.expr_ok(c, scope) for c in node.named_children)
        if t == "pair":
            key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
            return (key is not None and value is not None
                    and (key.type != "computed_property_name" or self.expr_ok(key, scope))
                    and self.expr_ok(value, scope))
        if t == "method_definition":
            name = node.child_by_field_name("name")
            return ((name is None or name.type != "computed_property_name" or self.expr_ok(name, scope))
                    and self.function_ok(node, scope))
        if t in ("as_expression", "satisfies_expression", "non_null_expression"):
            return bool(node.named_children) and self.expr_ok(node.named_children[0], scope)
        if t == "type_assertion":
            return bool(node.named_children) and self.expr_ok(node.named_children[-1], scope)
        if t in ("type_arguments", "type_annotation"):
            return True
        if t in ("jsx_opening_element", "jsx_self_closing_element", "jsx_closing_element"):
            name = node.child_by_field_name("name")
            tag = self.text(name) if name is not None else ""
            return ((name is None or (name.type == "identifier" and tag[:1].islower())
                     or self.expr_ok(name, scope))
                    and all(self.expr_ok(c, scope) for c in node.children_by_field_name("attribute")))
        if t == "jsx_attribute":
            return all(c.type in ("property_identifier", "jsx_namespace_name") or self.expr_ok(c, scope)
                       for c in node.named_children)
        if t in PLAIN:
            return all(self.expr_ok(c, scope) for c in node.named_children)
        return False

    # --- functions ----------------------------------------------------------------------

    def function_ok(self, node, scope: _Scope) -> bool:
        """A function (expression, arrow, declaration, method) with an inert body."""
        if node.id in self.busy:
            return True  # recursion: decided by the outer call
        self.busy.add(node.id)
        try:
            inner = _Scope(scope)
            if not all(self.bind_pattern(p, inner, True, inner) for p in _parameters(node)):
                return False
            body = node.child_by_field_name("body")
            if body is None:
                return False
            if body.type != "statement_block":
                return self.expr_ok(body, inner)
            return self.block_ok(body, inner)
        finally:
            self.busy.discard(node.id)

    def declare_block(self, statements, scope: _Scope) -> bool:
        """Declare (hoisted) the names of a block's declarations; whether their patterns are
        well formed."""
        ok = True
        for s in statements:
            if s.type in DECLARATIONS:
                for d in s.named_children:
                    if d.type != "variable_declarator":
                        continue
                    name = d.child_by_field_name("name")
                    value = d.child_by_field_name("value")
                    if name is None or not self.bind_pattern(name, scope, ("value", value), scope):
                        ok = False
            elif s.type in ("function_declaration", "generator_function_declaration"):
                name = s.child_by_field_name("name")
                if name is not None:
                    scope.declare(self.text(name), ("function", s))
        return ok

    def block_ok(self, block, scope: _Scope) -> bool:
        statements = [c for c in block.named_children if c.type != "comment"]
        if not self.declare_block(statements, scope):
            return False
        return all(self.statement_ok(s, scope) for s in statements)

    def statement_ok(self, s, scope: _Scope) -> bool:
        """A statement of an inert function body."""
        t = s.type
        if t in DECLARATIONS:
            return all(self.value_ok(v, scope) for d in s.named_children
                       if d.type == "variable_declarator"
                       and (v := d.child_by_field_name("value")) is not None)
        if t in ("function_declaration", "generator_function_declaration"):
            return self.function_ok(s, scope)
        if t == "expression_statement":
            return all(self.expr_ok(c, scope) for c in s.named_children)
        if t == "return_statement":
            return all(self.expr_ok(c, scope) for c in s.named_children)
        if t in ("empty_statement", "break_statement", "continue_statement") or t in TYPE_ONLY:
            return True
        if t == "statement_block":
            return self.block_ok(s, _Scope(scope))
        if t in ("if_statement", "else_clause", "while_statement", "do_statement",
                 "for_statement", "for_in_statement"):
            inner = _Scope(scope)
            for c in s.named_children:
                if c.type in DECLARATIONS:  # for (let i = 0; ...), for (const k of ...)
                    if not (self.declare_block([c], inner) and self.statement_ok(c, inner)):
                        return False
                elif c.type in ("identifier", "object_pattern", "array_pattern") and t == "for_in_statement" \
                        and c == s.child_by_field_name("left"):
                    if not self.bind_pattern(c, inner, True, inner):
                        return False
                elif c.type == "parenthesized_expression" or c.type.endswith("_expression") \
                        or c.type in LITERALS or c.type in ("identifier", "member_expression"):
                    if not self.expr_ok(c, inner):
                        return False
                elif c.type == "comment":
                    continue
                elif not self.statement_ok(c, inner):
                    return False
            return True
        return False


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


class _File(_Reader):
    """The tests of one file that checked asserts alone decide."""

    def __init__(self, data: bytes, rel: str, own_names: frozenset[str]):
        super().__init__(data, own_names)
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
        stack = _parameters(fn)
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

    def container(self, statements, scope: _Scope, titles: list[str] | None, refused: str) -> None:
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
                    if v is not None and self.module_source(_module_root(v)) is None and not _alias(v) \
                            and not self.expr_ok(v, scope):
                        self.poison(s, "a declaration runs code that is not inert")
            elif t == "import_statement" or t in TYPE_ONLY or t in (
                    "function_declaration", "generator_function_declaration", "empty_statement"):
                continue
            elif t == "expression_statement":
                expr = s.named_children[0] if s.named_children else None
                if expr is not None and expr.type == "call_expression" and _callee(expr):
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

    def declare_container(self, statements, scope: _Scope) -> bool:
        ok = True
        for s in statements:
            if s.type == "import_statement":
                src = s.child_by_field_name("source")
                value = jsasserts.parse_literal(self.text(src)) if src is not None else None
                trusted = bool(value and value[0] == "s" and trusted_module(value[1], self.own))
                for n in _import_names(s):
                    scope.declare(self.text(n), trusted)
        return self.declare_block(statements, scope) and ok

    def function_arg(self, call):
        args = call.child_by_field_name("arguments")
        fns = [c for c in (args.named_children if args is not None else []) if c.type in FUNCTIONS]
        return fns[-1] if fns else None

    def arguments(self, call, scope: _Scope):
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
            and not _parameters(fn)
        self.container([c for c in body.named_children if c.type != "comment"], _Scope(scope),
                       titles + [title] if mapped and titles is not None and title is not None
                       else None, refused)

    def table(self, call, scope: _Scope) -> None:
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
            inner_scope = _Scope(scope)
            if body is None or body.type != "statement_block" or not all(
                    self.bind_pattern(p, inner_scope, True, inner_scope) for p in _parameters(fn)):
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

    def body_refused(self, fn, scope: _Scope) -> str:
        """Why the statements of a test function do not let it count ("" when they do):
        see the module docstring."""
        body = fn.child_by_field_name("body")
        line = fn.start_point[0] + 1
        if body is None or body.type != "statement_block":
            return f"line {line}: the test's body is an expression"
        if not self.unused_params(fn):
            return f"line {line}: the test uses its parameter (done, t)"
        inner = _Scope(scope)
        statements = [c for c in body.named_children if c.type != "comment"]
        if not all(self.bind_pattern(p, inner, False, inner) for p in _parameters(fn)) \
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


def _module_root(node):
    """The call under `await` and member accesses: `require('x').Buffer` -> `require('x')`."""
    while True:
        if node.type == "await_expression" and node.named_children:
            node = node.named_children[0]
        elif node.type == "member_expression" and node.child_by_field_name("object") is not None:
            node = node.child_by_field_name("object")
        elif node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        else:
            return node


def _alias(node) -> bool:
    """Whether an initialiser only names something (`assert.ok`, `chai.expect`): no call."""
    while node.type == "member_expression":
        node = node.child_by_field_name("object")
    return node.type == "identifier"


def _parameters(fn) -> list:
    """The parameter nodes of a function."""
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    if params is None:
        return []
    if params.type == "identifier":
        return [params]
    return [c for c in params.named_children if c.type != "comment"]


def _import_names(statement):
    """The identifiers an import statement binds."""
    out = []
    stack = [c for c in statement.named_children if c.type == "import_clause"]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(n)
        elif n.type == "import_specifier":
            alias = n.child_by_field_name("alias") or n.child_by_field_name("name")
            if alias is not None:
                out.append(alias)
        else:
            stack.extend(n.named_children)
    return out


def own_names(workspace: Mapping[str, bytes]) -> frozenset[str]:
    """The package's own name from the root `package.json`, which its tests may require."""
    try:
        data = json.loads(workspace.get("package.json", b"{}").decode("utf-8", "replace"))
    except ValueError:
        return frozenset()
    name = data.get("name") if isinstance(data, dict) else None
    return frozenset({name}) if isinstance(name, str) and re.fullmatch(r"[@\w./-]+", name) else frozenset()


def explain(data: bytes, rel: str, own: frozenset[str] = frozenset()) -> dict[str, str]:
    """{test name: why it does not count, or "" when checked asserts alone decide it} of
    every plainly named test of a test file; the key "" holds why nothing in the file
    counts, if so (see the module docstring)."""
    reader = _File(data, rel, own)
    root = reader.tree.root_node
    if root.has_error:
        return {"": "the file does not parse"}
    statements = [c for c in root.named_children if c.type not in ("comment", "hash_bang_line")]
    reader.container(statements, _Scope(), [], "")
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


def decided_by_checks(data: bytes, rel: str, own: frozenset[str] = frozenset()) -> set[str]:
    """The names (titles joined) of the tests of a test file whose verdict nothing but
    their checked asserts can decide (see the module docstring)."""
    return {name for name, why in explain(data, rel, own).items() if name and not why}
