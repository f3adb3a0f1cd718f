"""The requirements a `setup.py` declares, read from its syntax tree, never by running it.

Older Python projects declare their dependencies only as arguments of `setup()`. The
repository is untrusted, so its setup.py is parsed (`ast`), not executed: what is read are
the `install_requires`, `tests_require` and `extras_require` arguments (and `name`) of a
`setup(...)` call when they are literals — a list or tuple of strings, a string of lines,
a dict of those for the extras — or names bound once, at the top of the file, to such
literals, or a `+` of any of these. Anything else (a call, a comprehension, a condition, a
name bound twice, a `**kwargs`) is left out, and the reason is kept, so the task records
what its environment did not get.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

SETUP_PY = "setup.py"
READ_KEYWORDS = ("name", "install_requires", "tests_require", "extras_require")
_MAX_DEPTH = 8  # names bound to names bound to ...
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "sort"}


@dataclass
class SetupPy:
    """The literal parts of a setup.py's `setup()` call, and why any other part was not read."""

    name: str | None = None
    install_requires: list[str] = field(default_factory=list)
    tests_require: list[str] = field(default_factory=list)
    extras_require: dict[str, list[str]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)


class _NotLiteral(Exception):
    """A value that is not a literal; its message says what it is and where."""


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def _bindings(tree: ast.Module) -> dict[str, ast.expr | None]:
    """Names bound in the file: the value of those bound exactly once, by a plain assignment
    at the top level, and never changed in place (`REQS.append(...)`, `REQS[0] = ...`);
    None for every other name bound anywhere (twice, in a block, by an import, a loop...)."""
    values: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            values[stmt.target.id] = stmt.value
    times: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            times[node.id] += 1
        elif isinstance(node, ast.alias):
            times[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            times[node.name] += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.attr in _MUTATORS:
            times[node.func.value.id] += 2
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and isinstance(node.value, ast.Name):
            times[node.value.id] += 2
    return {name: values.get(name) if count == 1 else None for name, count in times.items()}


def _bound(node: ast.Name, names: dict[str, ast.expr | None]) -> ast.expr:
    """The value the name `node` is bound to; raises _NotLiteral when it has none to read."""
    value = names.get(node.id)
    if value is None:
        why = "is bound more than once, in a block, or changed in place" if node.id in names \
            else "is not bound in setup.py"
        raise _NotLiteral(f"the name {node.id} {why} ({_where(node)})")
    return value


def _strings(node: ast.expr, names: dict[str, ast.expr | None], depth: int = 0) -> list[str]:
    """The requirement lines `node` stands for; raises _NotLiteral when it is not a literal."""
    if depth > _MAX_DEPTH:
        raise _NotLiteral(f"names bound to names too deep at {_where(node)}")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [line.strip() for line in node.value.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    if isinstance(node, (ast.List, ast.Tuple)):
        out = []
        for item in node.elts:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                raise _NotLiteral(f"an item that is not a string ({type(item).__name__}) at {_where(item)}")
            out.append(item.value.strip())
        return [line for line in out if line]
    if isinstance(node, ast.Name):
        value = _bound(node, names)
        if depth == 0:
            try:
                return _strings(value, names, depth + 1)
            except _NotLiteral as exc:
                raise _NotLiteral(f"{exc}, in the value of {node.id}") from None
        return _strings(value, names, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _strings(node.left, names, depth + 1) + _strings(node.right, names, depth + 1)
    raise _NotLiteral(f"a {type(node).__name__} at {_where(node)}")


def _extras(node: ast.expr, names: dict[str, ast.expr | None], unread: list[str],
            depth: int = 0) -> dict[str, list[str]]:
    if isinstance(node, ast.Name) and depth < _MAX_DEPTH:
        value = _bound(node, names)
        try:
            return _extras(value, names, unread, depth + 1)
        except _NotLiteral as exc:
            raise _NotLiteral(f"{exc}, in the value of {node.id}") from None
    if not isinstance(node, ast.Dict):
        raise _NotLiteral(f"a {type(node).__name__} at {_where(node)}, not a dict")
    out: dict[str, list[str]] = {}
    for key, value in zip(node.keys, node.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            unread.append(f"extras_require: a key that is not a string at {_where(value)}")
            continue
        try:
            out[key.value] = _strings(value, names)
        except _NotLiteral as exc:
            unread.append(f"extras_require[{key.value!r}]: {exc}")
    return out


def _is_setup_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "setup") or \
        (isinstance(func, ast.Attribute) and func.attr == "setup")


def read(source: bytes) -> SetupPy:
    """What the setup.py `source` declares in its `setup()` call, without running it.

    Args:
        source: the file's bytes.

    Returns:
        The literal requirements found, and in `unread` why anything else was left out
        (a file that does not parse, no `setup()` call, an argument that is not literal).
    """
    found = SetupPy()
    try:
        tree = ast.parse(source, filename=SETUP_PY)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        found.unread.append(f"not parsed as Python 3 ({type(exc).__name__}"
                            + (f" at line {line})" if line else ")"))
        return found
    calls = [node for node in ast.walk(tree) if _is_setup_call(node)]
    if not calls:
        found.unread.append("no setup() call")
        return found
    names = _bindings(tree)
    for call in calls:
        assert isinstance(call, ast.Call)
        if any(kw.arg is None for kw in call.keywords):
            found.unread.append(f"setup(**...) at {_where(call)}: its keywords are not read")
        for kw in call.keywords:
            if kw.arg not in READ_KEYWORDS:
                continue
            try:
                if kw.arg == "name":
                    if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        found.name = found.name or kw.value.value
                elif kw.arg == "extras_require":
                    for group, reqs in _extras(kw.value, names, found.unread).items():
                        found.extras_require.setdefault(group, []).extend(reqs)
                else:
                    getattr(found, kw.arg).extend(_strings(kw.value, names))
            except _NotLiteral as exc:
                found.unread.append(f"{kw.arg}: {exc}")
    return found
