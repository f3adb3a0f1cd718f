"""Inert JavaScript/TypeScript: code that computes but cannot decide a test's verdict.

The expression and function-body half of the grammar that `js_statements` (whose
docstring states all of it) reads hidden test files with: which expressions, statements
and names are inert (a name only while every write to it is), which globals are trusted
(modules: `js_modules`). Parsed by tree-sitter's
JavaScript, TypeScript and TSX grammars.
"""

from __future__ import annotations

from functools import cache

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript

from rlforge.tasks.generators.repair.runners.js_modules import (
    import_names,
    project_path,
    trusted_module,
)
from rlforge.verify.standalone import jsasserts

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


class Scope:
    """Names declared in one block: each trusted or not, decided on first use."""

    def __init__(self, parent: Scope | None = None, owner=None):
        self.parent = parent
        #: the node whose names these are (a function for its parameters and body, a
        #: block, a loop, the program): names are told apart from their namesakes by it
        self.owner = owner.id if owner is not None else None
        self.pending: dict[str, object] = {}
        self.known: dict[str, bool] = {}

    def declare(self, name: str, how: object) -> None:
        self.pending[name] = how
        self.known.pop(name, None)


class Reader:
    """One test file read against the grammar of the module docstring."""

    def __init__(self, data: bytes, own_names: frozenset[str], rel: str = "",
                 support: frozenset[str] = frozenset()):
        self.data = data
        self.own = own_names
        self.rel = rel
        self.support = support  # the package's test support by what it does (`js_modules`)
        self.busy: set[int] = set()
        self.trail: list[tuple[Scope, str]] = []  # names decided, in order
        self.sites: dict[str, list] = {}  # name -> every place the file may change what it holds
        self.site_scopes: dict[int, Scope] = {}
        self.checking: set[tuple[str, int | None]] = set()

    #: calls that never put a judge into their arguments (assertions, the framework's own)
    QUIET_CALLS = frozenset({"assert", "expect", "require"})

    def index_sites(self, root) -> None:
        """Record, by name, every place of the file that may change what a binding holds:
        an assignment to it or to a property of it (`h.check = ...`), a `for-in/of` onto
        it, a method call on it or a call it is passed to (`Object.assign(h, ...)`). A
        binding is trusted only when each of them is inert (`sites_ok`); a name written in
        a scope of its own is held to its namesakes' writes too (stricter, never looser)."""
        project = self.project_modules(root)
        stack = [root]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            names: set[str] = set()
            if n.type in ("assignment_expression", "augmented_assignment_expression"):
                left = n.child_by_field_name("left")
                names = _roots(left, self) if left is not None else set()
            elif n.type == "for_in_statement" and n.child_by_field_name("kind") is None:
                left = n.child_by_field_name("left")
                names = _roots(left, self) if left is not None else set()
            elif n.type == "call_expression":
                fn = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                if fn is None or self.quiet(fn) or fn.type == "import":
                    continue
                if fn.type in ("member_expression", "subscript_expression"):
                    # a method of the project's own module: what it keeps is the tested
                    # code's, which the submission decides whatever the test hands it
                    names |= _roots(fn, self) - project
                for a in args.named_children if args is not None else []:
                    names |= _roots(a, self)
            for name in names:
                self.sites.setdefault(name, []).append(n)

    def project_modules(self, root) -> set[str]:
        """Names the file binds to a whole module of the project's own code (`const lib =
        require('../lib')`, `import * as lib from '../lib'`), never declared otherwise."""
        bound: dict[str, bool] = {}
        stack = [root]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type == "variable_declarator":
                name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
                if name is not None and name.type == "identifier":
                    source = self.module_source(value) if value is not None else None
                    ok = source is not None and project_path(source, self.rel, self.own) is not None \
                        and trusted_module(source, self.own, self.rel, self.support)
                    bound[self.text(name)] = bound.get(self.text(name), True) and ok
            elif n.type in ("function_declaration", "formal_parameters", "catch_clause",
                            "for_in_statement", "import_statement"):
                for c in n.named_children if n.type != "function_declaration" else [
                        n.child_by_field_name("name")]:
                    if c is not None and c.type == "identifier":
                        bound[self.text(c)] = False
        return {name for name, ok in bound.items() if ok}

    def sites_ok(self, name: str, owner: int | None) -> bool:
        """Whether every place that may change what `name` declared in `owner` (a node id,
        None for a global) holds is inert (`index_sites`), each read in the scopes around it."""
        key = (name, owner)
        if key in self.checking:
            return True  # decided by the outer check
        self.checking.add(key)
        try:
            for n in self.sites.get(name, ()):
                scope: Scope | None = self.site_scope(n)
                while scope is not None and name not in scope.pending:
                    scope = scope.parent
                if (scope.owner if scope is not None else None) != owner:
                    continue  # a namesake's
                if n.type == "for_in_statement" or not self.expr_ok(n, self.site_scope(n)):
                    return False
            return True
        finally:
            self.checking.discard(key)

    def site_scope(self, node) -> Scope:
        """The names in scope at a node, read afresh: each enclosing block's declarations;
        parameters trusted only for a function that is not a call's argument (a test,
        hook or callback gets its parameters from code that may judge)."""
        chain = []
        a = node.parent
        while a is not None:
            if a.type in ("program", "for_statement", "for_in_statement", "catch_clause") \
                    or a.type in FUNCTIONS or a.type in _FUNCTION_DECLARATIONS \
                    or (a.type == "statement_block" and not _function_body(a)):
                chain.append(a)
            a = a.parent
        scope: Scope | None = None
        for a in reversed(chain):
            if a.id not in self.site_scopes:
                inner = Scope(scope, a)
                kids = [c for c in a.named_children if c.type != "comment"]
                if a.type in ("program", "statement_block"):
                    self.declare_imports(kids, inner)
                    self.declare_block(kids, inner)
                elif a.type == "for_statement":
                    self.declare_block(kids, inner)
                elif a.type in ("for_in_statement", "catch_clause"):
                    # a loop's variable holds what an inert iterable holds; a caught error, anything
                    right = a.child_by_field_name("right")
                    trusted = right is not None and self.expr_ok(right, scope or inner)
                    for c in kids:
                        if c.type in ("identifier", "object_pattern", "array_pattern") and c != right:
                            self.bind_pattern(c, inner, trusted, inner)
                else:
                    trusted = self.callback_trusted(a, scope or inner)
                    for p in parameters(a):
                        self.bind_pattern(p, inner, trusted, inner)
                    body = a.child_by_field_name("body")
                    if body is not None and body.type == "statement_block":
                        block = [c for c in body.named_children if c.type != "comment"]
                        self.declare_imports(block, inner)
                        self.declare_block(block, inner)
                self.site_scopes[a.id] = inner
            scope = self.site_scopes[a.id]
        return scope if scope is not None else Scope()

    def callback_trusted(self, fn, scope: Scope) -> bool:
        """Whether a function's parameters hold only inert values: it is not a call's
        argument, or the call is an inert one's (`xs.map((x) => ...)`), not a test's, a
        hook's or a judge's (which may hand it `t`, `done` or an assert)."""
        args = fn.parent
        if args is None or args.type != "arguments":
            return True
        callee = args.parent.child_by_field_name("function") if args.parent is not None else None
        if callee is None:
            return False
        if callee.type == "call_expression" and self.quiet(callee):  # describe.each(TABLE)(...): a row
            table = callee.child_by_field_name("arguments")
            return table is not None and all(self.expr_ok(c, scope) for c in table.named_children)
        return not self.quiet(callee) and self.expr_ok(callee, scope)

    def quiet(self, callee) -> bool:
        """Whether a call's function is an assertion's or the framework's (`QUIET_CALLS`):
        `assert.equal`, `expect(x).toBe`, `describe.each(t)`."""
        while callee.type in ("member_expression", "call_expression", "parenthesized_expression"):
            inner = callee.child_by_field_name("object") if callee.type == "member_expression" else (
                callee.child_by_field_name("function") if callee.type == "call_expression"
                else (callee.named_children[0] if callee.named_children else None))
            if inner is None:
                return False
            callee = inner
        return callee.type == "identifier" and self.text(callee) in self.QUIET_CALLS

    def declare_imports(self, statements, scope: Scope) -> None:
        """Declare the names `import` statements bind: trusted when their module is."""
        for s in statements:
            if s.type == "import_statement":
                src = s.child_by_field_name("source")
                value = jsasserts.parse_literal(self.text(src)) if src is not None else None
                trusted = bool(value and value[0] == "s" and trusted_module(value[1], self.own, self.rel, self.support))
                for n in import_names(s):
                    scope.declare(self.text(n), trusted)

    # --- names --------------------------------------------------------------------------

    def text(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")

    def trusted(self, name: str, scope: Scope | None) -> bool:
        while scope is not None:
            if name in scope.known:
                return scope.known[name]
            if name in scope.pending:
                how = scope.pending[name]
                # a recursive use while deciding assumes trust; if the answer is no, every
                # name decided meanwhile (on that assumption) is decided again when next used
                mark = len(self.trail)
                scope.known[name] = True
                ok = self._decide(how, scope) and self.sites_ok(name, scope.owner)
                if not ok:
                    for where, other in self.trail[mark:]:
                        where.known.pop(other, None)
                    del self.trail[mark:]
                scope.known[name] = ok
                self.trail.append((scope, name))
                return ok
            scope = scope.parent
        return name in SAFE_GLOBALS and self.sites_ok(name, None)

    def _decide(self, how, scope: Scope) -> bool:
        if isinstance(how, bool):
            return how
        kind, node = how  # type: ignore[misc]
        if kind == "value":
            return node is None or self.value_ok(node, scope)
        if kind == "function":
            return self.function_ok(node, scope)
        return False

    def bind_pattern(self, node, scope: Scope, how: object, check: Scope) -> bool:
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

    def value_ok(self, node, scope: Scope) -> bool:
        """An initialiser: inert, or the require/import of a trusted module (or a member of it)."""
        source = self.module_source(module_root(node))
        if source is not None:
            return trusted_module(source, self.own, self.rel, self.support)
        return self.expr_ok(node, scope)

    def expr_ok(self, node, scope: Scope) -> bool:
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
                return trusted_module(source, self.own, self.rel, self.support)
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

    def function_ok(self, node, scope: Scope) -> bool:
        """A function (expression, arrow, declaration, method) with an inert body."""
        if node.id in self.busy:
            return True  # recursion: decided by the outer call
        self.busy.add(node.id)
        try:
            inner = Scope(scope, node)
            if not all(self.bind_pattern(p, inner, True, inner) for p in parameters(node)):
                return False
            body = node.child_by_field_name("body")
            if body is None:
                return False
            if body.type != "statement_block":
                return self.expr_ok(body, inner)
            return self.block_ok(body, inner)
        finally:
            self.busy.discard(node.id)

    def declare_block(self, statements, scope: Scope) -> bool:
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

    def block_ok(self, block, scope: Scope) -> bool:
        statements = [c for c in block.named_children if c.type != "comment"]
        if not self.declare_block(statements, scope):
            return False
        return all(self.statement_ok(s, scope) for s in statements)

    def statement_ok(self, s, scope: Scope) -> bool:
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
            return self.block_ok(s, Scope(scope, s))
        if t in ("if_statement", "else_clause", "while_statement", "do_statement",
                 "for_statement", "for_in_statement"):
            inner = Scope(scope, s)
            for c in s.named_children:
                if c.type in DECLARATIONS:  # for (let i = 0; ...), for (const k of ...)
                    if not (self.declare_block([c], inner) and self.statement_ok(c, inner)):
                        return False
                elif c.type in ("identifier", "object_pattern", "array_pattern") and t == "for_in_statement" \
                        and c == s.child_by_field_name("left"):
                    if not self.bind_pattern(c, inner, True, inner):
                        return False
                elif c.type == "parenthesized_expression" or c.type.endswith("_expression") \
                        or c.type in LITERALS or c.type in ("identifier", "member_expression", "array",
                                                            "object", "subscript_expression"):
                    if not self.expr_ok(c, inner):
                        return False
                elif c.type == "comment":
                    continue
                elif not self.statement_ok(c, inner):
                    return False
            return True
        return False


def module_root(node):
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


def alias(node) -> bool:
    """Whether an initialiser only names something (`assert.ok`, `chai.expect`): no call."""
    while node.type == "member_expression":
        node = node.child_by_field_name("object")
    return node.type == "identifier"


def parameters(fn) -> list:
    """The parameter nodes of a function."""
    params = fn.child_by_field_name("parameters") or fn.child_by_field_name("parameter")
    if params is None:
        return []
    if params.type == "identifier":
        return [params]
    return [c for c in params.named_children if c.type != "comment"]


_FUNCTION_DECLARATIONS = ("function_declaration", "generator_function_declaration", "method_definition")


def _function_body(block) -> bool:
    """Whether a block is a function's body (its names share the function's scope)."""
    parent = block.parent
    return parent is not None and (parent.type in FUNCTIONS or parent.type in _FUNCTION_DECLARATIONS) \
        and parent.child_by_field_name("body") == block


def _roots(node, reader: Reader) -> set[str]:
    """The names whose value an assignment target or an argument reaches into: `h` of
    `h`, `h.check`, `h[k].x`, `(h as T)`, `...h`, and every name in a pattern."""
    while node.type in ("member_expression", "subscript_expression", "parenthesized_expression",
                        "non_null_expression", "as_expression", "satisfies_expression",
                        "spread_element"):
        inner = node.child_by_field_name("object") if node.type in (
            "member_expression", "subscript_expression") else (
                node.named_children[0] if node.named_children else None)
        if inner is None:
            return set()
        node = inner
    if node.type in ("identifier", "shorthand_property_identifier_pattern",
                     "shorthand_property_identifier"):
        return {reader.text(node)}
    if node.type in ("object_pattern", "array_pattern", "pair_pattern", "assignment_pattern",
                     "object_assignment_pattern", "rest_pattern"):
        out: set[str] = set()
        for c in node.named_children:
            out |= _roots(c, reader)
        return out
    return set()
