"""Inert JavaScript/TypeScript: code that computes but cannot decide a test's verdict.

The expression and function-body half of the grammar that `js_statements` (whose
docstring states all of it) reads hidden test files with: which expressions, statements
and names are inert, which modules and globals are trusted. Parsed by tree-sitter's
JavaScript, TypeScript and TSX grammars.
"""

from __future__ import annotations

from functools import cache

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript

from rlforge.verify.standalone import jsasserts

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


class Scope:
    """Names declared in one block: each trusted or not, decided on first use."""

    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.pending: dict[str, object] = {}
        self.known: dict[str, bool] = {}

    def declare(self, name: str, how: object) -> None:
        self.pending[name] = how
        self.known.pop(name, None)


class Reader:
    """One test file read against the grammar of the module docstring."""

    def __init__(self, data: bytes, own_names: frozenset[str]):
        self.data = data
        self.own = own_names
        self.busy: set[int] = set()
        self.trail: list[tuple[Scope, str]] = []  # names decided, in order

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
                ok = self._decide(how, scope)
                if not ok:
                    for where, other in self.trail[mark:]:
                        where.known.pop(other, None)
                    del self.trail[mark:]
                scope.known[name] = ok
                self.trail.append((scope, name))
                return ok
            scope = scope.parent
        return name in SAFE_GLOBALS

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
            return trusted_module(source, self.own)
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

    def function_ok(self, node, scope: Scope) -> bool:
        """A function (expression, arrow, declaration, method) with an inert body."""
        if node.id in self.busy:
            return True  # recursion: decided by the outer call
        self.busy.add(node.id)
        try:
            inner = Scope(scope)
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
            return self.block_ok(s, Scope(scope))
        if t in ("if_statement", "else_clause", "while_statement", "do_statement",
                 "for_statement", "for_in_statement"):
            inner = Scope(scope)
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
