"""The names and defaults a hidden pytest test relies on that the policy cannot see.

A test can hold an interface no word of the request names: a key of the dict it expects
or passes (`{"source_line_anchor": ...}`), a key or an attribute it reads from a result,
a keyword it passes, or a default its call leaves out (`shorten(text)` relying on the new
function's `width` and `suffix`). When neither the workspace at the parent nor the request
shows it, a correct solution that picks another name or default fails the test. The
functions here return each as an `Aspect` the request must state (a name as the whole
identifier, a default as its parameter's name and its value), which `spec.specify`
describes otherwise. A name is interface, not an expected value: a description may show
it (`Derivation.names`) unless the test also compares with it as a whole value. A default
is the fix's own source, never a test literal; a description that would still show one is
dropped like any other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from rlforge.tasks.generators.repair.spec import Aspect

MAX_DEFAULTS = 4  # per function a test calls: more is a signature to read, not a rule
# Attributes of the builtin types a test's values have: never the project's interface.
BUILTIN_ATTRS = frozenset(a for t in (str, bytes, list, dict, set, tuple, int, float, object, type)
                          for a in dir(t))


def shown(name: str, text: str) -> bool:
    """Whether a text holds the name as a whole word (not inside a longer identifier)."""
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text) is not None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _key(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier() \
            and not node.value.startswith("__") and len(node.value) >= 2:
        return node.value
    return None


def _name_aspect(kind: str, name: str) -> Aspect:
    texts = {"key": f"a dict it expects or passes holds the key `{name}`",
             "read": f"reads the key `{name}` of a result",
             "attribute": f"reads the attribute `{name}` of a project object",
             "keyword": f"passes the keyword argument `{name}`"}
    return Aspect("name", texts[kind], (name.lower(),), exact=True)


def expected_constants(tree: ast.Module, func: ast.AST) -> list[ast.expr]:
    """The constants a test compares with (in a comparison or a unittest `assert...` call,
    but not an argument of a call there) and every dict key of its module: what is no
    input of the test (`unshown_names`)."""
    out: list[ast.expr] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Compare) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                                             and node.func.attr.startswith("assert")):
            given = {id(c) for call in ast.walk(node) if isinstance(call, ast.Call) and call is not node
                     for c in ast.walk(call)}
            out += [c for c in ast.walk(node) if isinstance(c, ast.Constant) and id(c) not in given]
    out += [k for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys if isinstance(k, ast.Constant)]
    return out


def project_values(func: ast.AST, project: set[str]) -> set[str]:
    """The names in a test that hold project values: `project` (the project items it
    imports or the fix defines) and the local names bound from them (`r = parse(...)`,
    `for frame in r.frames`, `with open_db() as db`)."""
    bindings: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            bindings += [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            bindings.append((node.target, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bindings.append((node.target, node.iter))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            bindings += [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars]
    out = set(project)
    for _ in range(len(bindings)):
        grew = False
        for target, value in bindings:
            if any(isinstance(x, ast.Name) and x.id in out for x in ast.walk(value)):
                for t in ast.walk(target):
                    if isinstance(t, ast.Name) and t.id not in out:
                        out.add(t.id)
                        grew = True
        if not grew:
            break
    return out


def given_by_fix(trees: Iterable[ast.Module]) -> tuple[set[str], set[str]]:
    """(the attributes the sources give objects: assigned on one, `self.x = ...`, or
    defined in a class body; the string constants they hold): an attribute or a key a test
    reads is the project's only when its source gives it, not a value's of another library
    (a `datetime`'s `microsecond`)."""
    attrs: set[str] = set()
    strings: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                attrs.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        attrs.add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        attrs.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
    return attrs, strings


def unshown_names(func: ast.AST, project: set[str], known: set[str], visible: str,
                  inputs: Iterable[str], given: tuple[set[str], set[str]]) -> list[tuple[str, Aspect]]:
    """The names a test's values and calls hold that nothing the policy sees shows: keys of
    the dict literals it expects or passes, constant keys and attributes it reads from
    project values (`project_values`) that the fix's source gives (`given`, of
    `given_by_fix`), keywords of its calls of project code.
    A name in the workspace's text (`visible`), in one of the test's own input strings
    (`inputs`: echoed data), among `known` (names other aspects already require), or an
    attribute of a builtin type, is left out. Returns (name, aspect) pairs."""
    echoed = " ".join(inputs)
    found: list[tuple[str, str]] = []

    def add(kind: str, name: str | None) -> None:
        if name is None or name.lower() in known or any(n == name for _, n in found):
            return
        if shown(name, visible) or shown(name, echoed):
            return
        found.append((kind, name))

    for node in ast.walk(func):
        if isinstance(node, ast.Dict):
            for k in node.keys:
                add("key", _key(k))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and _root_name(node.value) in project:
            key = _key(node.slice)
            add("read", key if key in given[1] else None)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                and _root_name(node.value) in project and node.attr in given[0] - BUILTIN_ATTRS:
            add("attribute", node.attr)
        elif isinstance(node, ast.Call):
            callee = _root_name(node.func)
            if callee in ("getattr", "hasattr") and len(node.args) >= 2 and _root_name(node.args[0]) in project:
                name = _key(node.args[1])
                add("attribute", name if name in given[0] else None)
            elif callee in project:
                for kw in node.keywords:
                    add("keyword", kw.arg if kw.arg and not kw.arg.startswith("_") else None)
    return [(name, _name_aspect(kind, name)) for kind, name in found]


Signature = tuple[list[str], dict[str, ast.expr]]  # parameters in order, defaults by name


def signatures(trees: Iterable[ast.Module]) -> dict[str, list[Signature]]:
    """{function or class name: the signatures of its definitions} (a class's is its
    `__init__`'s); a method's first parameter (`self`, `cls`) is left out."""
    out: dict[str, list[Signature]] = {}

    def sig(func: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> Signature:
        a = func.args
        positional = [x.arg for x in a.posonlyargs + a.args]
        defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults))
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        names = positional[1:] if method and positional else positional
        return names + [x.arg for x in a.kwonlyargs], defaults

    for tree in trees:
        methods: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods.add(id(item))
                        key = node.name if item.name == "__init__" else item.name
                        out.setdefault(key, []).append(sig(item, True))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods:
                out.setdefault(node.name, []).append(sig(node, False))
    return out


def _value_text(node: ast.expr) -> tuple[str, str] | None:
    """(how a request states a literal default, how a description shows it); None for a
    default that is no literal or is `None` (the parameter is optional, not a value)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if value is None:
        return None
    return (value if isinstance(value, str) else repr(value)), repr(value)


def compared_calls(func: ast.AST) -> set[int]:
    """The ids of the calls whose results a test checks: inside a comparison, an `assert`
    or a unittest `assert...` call, or bound to a name one of those reads."""
    checks = [n for n in ast.walk(func) if isinstance(n, (ast.Compare, ast.Assert)) or (
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr.startswith("assert"))]
    read = {x.id for c in checks for x in ast.walk(c) if isinstance(x, ast.Name)}
    out = {id(x) for c in checks for x in ast.walk(c) if isinstance(x, ast.Call)}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in read for t in node.targets):
            out |= {id(x) for x in ast.walk(node.value) if isinstance(x, ast.Call)}
    return out


def unshown_defaults(name: str, calls: list[ast.Call], fixed: dict[str, list[Signature]],
                     parent: dict[str, list[Signature]], checked: set[int]) -> list[Aspect]:
    """The literal defaults of `name` (as the fix defines it, one definition) that the
    test's checked calls (`compared_calls`) leave out and the parent does not already have
    (same parameter, same default): each must be stated by the request, its parameter and
    its value."""
    defs = fixed.get(name, [])
    calls = [c for c in calls if id(c) in checked]
    if len(defs) != 1 or not calls:
        return []
    params, defaults = defs[0]
    before = {(p, ast.dump(d)) for _, ds in parent.get(name, []) for p, d in ds.items()}
    omitted: list[str] = []
    for call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            continue  # *args or **kwargs: what it leaves out is not known
        given = set(params[:len(call.args)]) | {k.arg for k in call.keywords if k.arg}
        omitted += [p for p in params if p in defaults and p not in given and p not in omitted]
    out = []
    for p in omitted:
        text = _value_text(defaults[p])
        if text is None or (p, ast.dump(defaults[p])) in before:
            continue
        stated, shown_as = text
        out.append(Aspect("default", f"`{name}` called without `{p}` uses its default, `{shown_as}`",
                          stated=(p, stated)))
    return out[:MAX_DEFAULTS]
