"""What a hidden pytest test checks, described without its literals (`Pytest.behaviours`).

Read from each checked fail-to-pass test's source (`ast`), never run: the project names it
uses (imported from the project, or defined in its source at the parent or by the fix),
where a name the parent does not have is imported from, the exceptions it expects
(`pytest.raises`, `assertRaises`), warnings (`pytest.warns`, `deprecated_call`), threads
or processes running project code (`threading`, `concurrent.futures`, `multiprocessing`),
coroutines (an async test, `asyncio`), what it reads of printed output (`capsys`, `capfd`)
or logs (`caplog`), the environment variables it sets (`monkeypatch.setenv`,
`mock.patch.dict(os.environ, ...)`), the project attributes it assigns, the kinds of value its asserts
compare with, and its docstring's first line or its name's words. The literals its
comparisons expect (and `match=` patterns) are collected as `Derivation.literals`: they
never appear in a description, and a word of a name or docstring that is one is left out.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping

from rlforge.tasks.generators.repair.runners.python_messages import own_inputs, unstated_wordings
from rlforge.tasks.generators.repair.runners.python_names import (Signature, compared_calls, expected_constants, given_by_fix,
                                                                  project_values, signatures,
                                                                  unshown_defaults, unshown_names)
from rlforge.tasks.generators.repair.spec import (MAX_FORM, PLACEHOLDER, Aspect, Behaviour, Derivation,
                                                  content_words, form_of, shows_literal,
                                                  words_of)

THREADS = {"Thread", "ThreadPoolExecutor", "ProcessPoolExecutor", "threading", "Barrier",
           "multiprocessing", "concurrent"}
THREAD_TERMS = ("thread", "concurren", "parallel", "simultaneous", "race", "lock", "same time")
ASYNC_TERMS = ("async", "await", "coroutine", "asyncio")
OUTPUT_TERMS = ("print", "output", "stdout", "stderr", "write", "show", "display", "echo")
LOG_TERMS = ("log", "logging", "logger")
KINDS = {str: "text (`str`)", bytes: "`bytes`", bool: "a `bool`", int: "an `int`",
         float: "a `float`", list: "a `list`", tuple: "a `tuple`", dict: "a `dict`",
         set: "a `set`", frozenset: "a `frozenset`", type(None): "`None`"}
MAX_NAMES = 4
# Edge-case values a checked call takes or returns, as the request must name them.
EDGES = {"zero": ("zero",), "a negative number": ("negative", "minus"),
         "an empty value": ("empty", "blank", "nothing"), "`None`": ("none", "null", "missing", "absent")}


def _name(node: ast.AST) -> str | None:
    """`a.b.c` of a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _constants(value: object, keys: bool = True) -> list[str]:
    """The texts a literal value could be shown as: strings and numbers, each element of
    a container (and each key of a dict, but with `keys` False); trivial values (booleans,
    None, 0, 1, empty) are no secret."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return [t for v in value for t in _constants(v, keys)]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (_constants(k) if keys else []) + _constants(v, keys)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (int, float)):
        return [] if value in (0, 1, -1) else [repr(value), str(value)]
    return []


def _literal(node: ast.AST) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _project_modules(paths: list[str]) -> set[str]:
    """Top-level module names of the project's own source (not its tests)."""
    out = set()
    for path in paths:
        if not path.endswith(".py"):
            continue
        parts = path.split("/")
        if parts[0] in ("src", "lib") and len(parts) > 1:
            parts = parts[1:]
        head = parts[0][:-3] if len(parts) == 1 else parts[0]
        if head not in ("tests", "test", "testing", "docs", "setup", "conftest") and head.isidentifier():
            out.add(head)
    return out


def _trees(sources: Mapping[str, bytes | None]) -> list[ast.Module]:
    out = []
    for data in sources.values():
        if data:
            try:
                out.append(ast.parse(data))
            except (SyntaxError, ValueError, RecursionError):
                continue
    return out


def _defined(trees: list[ast.Module]) -> set[str]:
    """Names of the functions and classes (and their methods) defined in the sources."""
    return {n.name for tree in trees for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not n.name.startswith("__")}


def _bound(trees: list[ast.Module]) -> set[str]:
    """Names a module of the sources binds at its top level (imports, assignments)."""
    out: set[str] = set()
    for tree in trees:
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def _parameters(trees: list[ast.Module]) -> dict[str, set[str] | None]:
    """{function or class name: the keyword parameters its definitions accept (None: any,
    it takes **kwargs)}; a class's are its `__init__`'s, or without one its annotated
    fields (a NamedTuple's, a dataclass's); under "" those of every function."""
    out: dict[str, set[str] | None] = {}

    def accept(name: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if name in out and out[name] is None:
            return
        a = func.args
        if a.kwarg is not None:
            out[name] = None
            return
        names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        out[name] = (out.get(name) or set()) | names

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                accept(node.name, node)
                a = node.args
                every = out.setdefault("", set())
                assert every is not None
                every.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            elif isinstance(node, ast.ClassDef):
                inits = [i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"]
                for item in inits:
                    accept(node.name, item)
                fields = {i.target.id for i in node.body
                          if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)}
                if not inits and fields and out.get(node.name, set()) is not None:
                    # A NamedTuple's or dataclass's fields are its keyword parameters.
                    out[node.name] = (out.get(node.name) or set()) | fields
    return out


def _option_keys(trees: list[ast.Module]) -> set[str]:
    """The option names the sources read by key (`options.get("strip_comments")`,
    `options["indent"]`, `"reindent" in options`): keywords a function taking **kwargs
    already accepts, though no signature names them."""
    out: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            key: ast.AST | None = None
            if isinstance(node, ast.Subscript):
                key = node.slice
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("get", "pop", "setdefault") and node.args:
                key = node.args[0]
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                key = node.left
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier():
                out.add(key.value)
    return out


def _find(tree: ast.Module, key: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, str]:
    """The test function of a key (`name` or `Class::name`) and its class's name."""
    owner, _, name = key.rpartition("::")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        body = cls.body if cls else []
    func = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)
    return func, owner


def _imports(tree: ast.Module, project: set[str]) -> dict[str, tuple[str, str]]:
    """{local name: (module it comes from, its name there)} for the test module's imports
    from the project."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in project:
            for a in node.names:
                out[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in project:
                    local = (a.asname or a.name).split(".")[0]
                    out[local] = (a.name, local)
    return out


def _root(node: ast.AST) -> ast.AST:
    """The expression an attribute chain, call or subscript starts from (`a` of
    `a.b(c).d[0]`; the call itself for `open(p).read`, its root being `open`)."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return node


def _outside(tree: ast.Module, func: ast.AST, project: set[str]) -> set[str]:
    """Names in a test that hold no project object: the builtins, what the test module
    imports from elsewhere (`mock`, `threading`), and the local names it binds from
    those (`t = threading.Thread(...)`, `with open(p) as f`). A project name reached
    through one (`mock.patch.dict`, `t.start()`, `f.read()`) is not the project's."""
    out = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or not node.module
                                                 or node.module.split(".")[0] not in project):
            if node.level == 0:
                out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in node.names
                       if a.name.split(".")[0] not in project)
    out -= {n for n in _imports(tree, project)}
    bindings: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            bindings += [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            bindings += [(i.optional_vars, i.context_expr) for i in node.items if i.optional_vars]
    for _ in range(len(bindings)):
        grew = False
        for target, value in bindings:
            base = _root(value)
            if isinstance(target, ast.Name) and target.id not in out \
                    and isinstance(base, ast.Name) and base.id in out:
                out.add(target.id)
                grew = True
        if not grew:
            break
    return out


def _calls(func: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(func) if isinstance(n, ast.Call)
            and (_name(n.func) or "").split(".")[-1] == name]


def _called(calls: list[ast.Call], name: str) -> str:
    """How a test first calls `name`, its arguments as kinds (`called as f(str)`), and the
    keyword arguments its other calls add; "" when it never calls it."""
    if not calls:
        return ""
    first = calls[0]
    args = []
    for arg in first.args:
        ok, value = _literal(arg)
        args.append(type(value).__name__ if ok else "...")
    args += [f"{kw.arg}=..." if kw.arg else "**..." for kw in first.keywords]
    more = sorted({kw.arg for c in calls[1:] for kw in c.keywords if kw.arg}
                  - {kw.arg for kw in first.keywords})
    also = f" (also with {', '.join(f'`{k}=`' for k in more)})" if more else ""
    return f"called as `{name}({', '.join(args)})`{also}"


def _env_set(call: ast.Call) -> list[str]:
    """The environment variables a call sets for a test: `monkeypatch.setenv("X", ...)`,
    `mock.patch.dict(os.environ, {"X": ...})`, `monkeypatch.setitem(os.environ, "X", ...)`."""
    name = _name(call.func) or ""
    if name.endswith("setenv") and call.args:
        ok, var = _literal(call.args[0])
        return [var] if ok and isinstance(var, str) else []
    if not call.args or _name(call.args[0]) not in ("os.environ", "environ"):
        return []
    if name.endswith("patch.dict") and len(call.args) > 1 and isinstance(call.args[1], ast.Dict):
        return [k.value for k in call.args[1].keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if name.endswith("setitem") and len(call.args) > 1:
        ok, var = _literal(call.args[1])
        return [var] if ok and isinstance(var, str) else []
    return []


def _edge(value: object) -> str | None:
    """The edge case a literal is (zero, a negative number, an empty value, None), if any."""
    if value is None:
        return "`None`"
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return "zero" if value == 0 else "a negative number" if value < 0 else None
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and not value:
        return "an empty value"
    return None


def _forms(value: object) -> list[str]:
    """The forms (`spec.form_of`) of a literal's texts that hold a number: its own, or each
    element's; a long or multi-line text is content, not a form."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return [f for v in value for f in _forms(v)]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str) and PLACEHOLDER in form_of(value) and "\n" not in value \
            and len(value.strip()) <= MAX_FORM:
        return [form_of(value.strip())]
    return []


def _literal_forms(values: list[object], forms: list[str], edges: list[str]) -> None:
    for value in values:
        forms.extend(f for f in _forms(value) if f not in forms)
        edge = _edge(value)
        if edge and edge not in edges:
            edges.append(edge)


def _form_aspects(func: ast.AST, name: str, calls: list[ast.Call]) -> list[Aspect]:
    """What the checked calls of `name` take and return in literal form: the forms of the
    texts they are given and the results they are compared with (each must be stated,
    `<n> wks` by `'3 wks'`, not by `weeks`), and the edge cases (zero, negative, empty,
    None) they take or return (each must be named)."""
    ins: list[str] = []
    in_edges: list[str] = []
    for call in calls:
        values = [v for ok, v in map(_literal, [*call.args, *(k.value for k in call.keywords)]) if ok]
        _literal_forms(values, ins, in_edges)
    outs: list[str] = []
    out_edges: list[str] = []
    for node in ast.walk(func):
        sides: list[ast.AST] = []
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            sides = [node.left, node.comparators[0]]
        elif isinstance(node, ast.Call) and (_name(node.func) or "").split(".")[-1] in (
                "assertEqual", "assertEquals", "assertIs") and len(node.args) >= 2:
            sides = list(node.args[:2])
        if not any(isinstance(x, ast.Call) and x in calls for x in sides):
            continue
        _literal_forms([v for ok, v in map(_literal, sides) if ok], outs, out_edges)
    aspects = []
    if ins:
        aspects.append(Aspect("form", f"`{name}` is given text of the form "
                              + ", ".join(f"`{f}`" for f in ins) + " (`<n>`: a number)", forms=tuple(ins)))
    if outs:
        aspects.append(Aspect("form", f"`{name}` returns text of the form "
                              + ", ".join(f"`{f}`" for f in outs) + " (`<n>`: a number)", forms=tuple(outs)))
    aspects += [Aspect("edge", f"`{name}` is called with {e}", EDGES[e]) for e in in_edges]
    aspects += [Aspect("edge", f"`{name}` returns {e}", EDGES[e]) for e in out_edges]
    return aspects


class _TestReader:
    """Reads the behaviours of the tests of one hidden test module."""

    def __init__(self, source: bytes, project: set[str], defined: set[str], at_parent: set[str],
                 parameters: dict[str, set[str] | None], visible_text: str = " ",
                 signatures: tuple[dict[str, list[Signature]], dict[str, list[Signature]]] = ({}, {}),
                 given: tuple[set[str], set[str]] = (set(), set())):
        self.tree = ast.parse(source)
        self.given = given  # the attributes and strings the fix's source gives
        self.signatures = signatures  # (the fix's, the parent's): the defaults a call relies on
        self.visible_text = visible_text  # the workspace's text (`python_messages`)
        self.project = project
        self.imported = _imports(self.tree, project)
        self.defined = defined
        self.at_parent = at_parent
        self.parameters = parameters  # of the parent's functions and classes
        self.helpers = {n.name for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.literals: set[str] = set()
        self.values: set[str] = set()  # the literals compared as values (not a dict's keys)
        self.names: set[str] = set()  # names a description shows (`python_names`)

    def _expected(self, func: ast.AST) -> list[str]:
        """Kinds of value the comparisons of a test expect; their literals are collected."""
        kinds: list[str] = []
        for node in ast.walk(func):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    ok, value = _literal(side)
                    if ok:
                        self.literals.update(_constants(value))
                        self.values.update(_constants(value, keys=False))
                        kind = KINDS.get(type(value))
                        if kind and kind not in kinds:
                            kinds.append(kind)
            elif isinstance(node, ast.Call):
                if (_name(node.func) or "").split(".")[-1].startswith("assert"):  # unittest's
                    for arg in node.args[:2]:  # the expected value may come first
                        ok, value = _literal(arg)
                        if ok:
                            self.literals.update(_constants(value))
                            self.values.update(_constants(value, keys=False))
                            kind = KINDS.get(type(value))
                            if kind and kind not in kinds:
                                kinds.append(kind)
                for kw in node.keywords:
                    if kw.arg in ("match", "msg", "message"):
                        ok, value = _literal(kw.value)
                        if ok:
                            self.literals.update(_constants(value))
                            self.values.update(_constants(value))
                if _name(node.func) == "isinstance" and len(node.args) == 2:
                    kind = f"a `{ast.unparse(node.args[1])}`"
                    if kind not in kinds:
                        kinds.append(kind)
        return kinds

    def _uses(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str, str | None]]:
        """(name in the test, name in the project, module it is imported from when the
        parent lacks it) of the project items a test uses, in the order they appear; its
        parameters (pytest fixtures) are no project items."""
        fixtures = {a.arg for a in func.args.args + func.args.kwonlyargs}
        outside = _outside(self.tree, func, self.project)
        found: list[tuple[str, str, str | None]] = []
        seen: set[str] = set()
        for node in ast.walk(func):
            name = None
            if isinstance(node, ast.Name) and node.id not in self.helpers and node.id not in fixtures \
                    and (node.id in self.imported or (node.id in self.defined and node.id not in outside)):
                name = node.id
                module, original = self.imported.get(name, (None, name))
                if module is not None and "." not in module and module == name:
                    continue  # `import pkg`: the package itself is no behaviour
            elif isinstance(node, ast.Attribute) and node.attr in self.defined:
                base = _root(node.value)
                if not (isinstance(base, ast.Name) and base.id in outside):
                    # An attribute is the project's own name, whatever the test imports
                    # under it (`parse.parse`: the function, not the package `parse`).
                    name, module, original = node.attr, None, node.attr
            if name is None or name in seen:
                continue
            seen.add(name)
            new = original not in self.at_parent and module is not None
            found.append((name, original, module if new else None))
        return found[:MAX_NAMES]

    def _assigned(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Aspect]:
        """The project attributes a test assigns on an object (`request.max_parts = 4`):
        each must be settable, which the request names (the attribute) or is described."""
        outside = _outside(self.tree, func, self.project)
        out: list[Aspect] = []
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                if not (isinstance(t, ast.Attribute) and t.attr in self.defined):
                    continue
                base = _root(t.value)
                if isinstance(base, ast.Name) and (base.id in outside or base.id == "self"):
                    continue
                aspect = Aspect("sets", f"sets `{t.attr}` on an object and reads it back (it must be "
                                        "assignable)", (t.attr.lower(), " ".join(words_of(t.attr))), exact=True)
                if aspect not in out:
                    out.append(aspect)
        return out[:MAX_NAMES]

    def _unshown_names(self, func: ast.FunctionDef | ast.AsyncFunctionDef, aspects: list[Aspect]) -> list[Aspect]:
        """The names the test's values and calls hold that neither the workspace nor its
        own inputs show (`python_names.unshown_names`), but those other aspects require;
        a name no value of the test compares with whole may be shown (`names`)."""
        outside = _outside(self.tree, func, self.project)
        project = project_values(func, set(self.imported) | (self.defined - outside - self.helpers))
        known = {t for a in aspects for t in a.terms}
        found = unshown_names(func, project, known, self.visible_text,
                              own_inputs(self.tree, func, expected_constants(self.tree, func)), self.given)
        self.names.update(name for name, _ in found)
        return [aspect for _, aspect in found]

    def _runs_in_thread(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether project code runs in a thread or process the test starts: a
        `Thread(target=...)`, `Process(target=...)`, an executor's `submit`/`map` given a
        project name, or a lambda or local function using one (a thread that only feeds
        the test, a FIFO's writer, is no concurrency the change must hold under)."""
        outside = _outside(self.tree, func, self.project)
        project = set(self.imported) | (self.defined - outside)
        local = {n.name: n for n in ast.walk(func) if n is not func
                 and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        touching: set[str] = set()
        for _ in range(len(local) + 1):  # local functions calling each other
            touching |= {name for name, d in local.items()
                         if any(isinstance(x, ast.Name) and x.id in project | touching for x in ast.walk(d))}
        targets: list[ast.AST] = []
        for node in ast.walk(func):
            if not isinstance(node, ast.Call):
                continue
            called = (_name(node.func) or "").split(".")[-1]
            if called in ("Thread", "Process", "Timer"):
                targets += [kw.value for kw in node.keywords if kw.arg in ("target", "function")]
                targets += node.args[1:2] if called == "Timer" else []
            elif called in ("submit", "map", "apply_async", "run_in_executor") and node.args:
                targets.append(node.args[1] if called == "run_in_executor" and len(node.args) > 1
                               else node.args[0])
        return any(isinstance(x, ast.Name) and x.id in project | touching
                   for t in targets for x in ast.walk(t))

    def collect(self, key: str) -> bool:
        """Collect a test's literals (before any test is described); whether it exists."""
        func, _ = _find(self.tree, key)
        if func is not None:
            self._expected(func)
        return func is not None

    def behaviour(self, test_id: str, key: str) -> Behaviour:
        func, owner = _find(self.tree, key)
        assert func is not None, "collect() found it"
        kinds = self._expected(func)
        aspects: list[Aspect] = []
        uses = self._uses(func)
        for name, original, module in uses:
            calls = _calls(func, name)
            shape = _called(calls, name)
            if module:  # a name the parent lacks must be named: the test imports it
                aspects.append(Aspect("uses", f"uses `{name}` (new: the test imports it from "
                                      f"`{module}`{', ' + shape if shape else ''})",
                                      (" ".join(words_of(name)), name.lower()), exact=True))
                aspects += _form_aspects(func, name, calls)
                aspects += unshown_defaults(original, calls, *self.signatures, compared_calls(func))
                continue
            # What the test calls is the interface the change must have: the request names
            # it (`set_key`, not only the `set` command), or it is described.
            called = tuple(dict.fromkeys((name.lower(), original.lower(), " ".join(words_of(original)))))
            aspects.append(Aspect("uses", f"uses `{name}`" + (f", {shape}" if shape else ""),
                                  called if calls else (), exact=True))
            aspects += _form_aspects(func, name, calls)
            aspects += unshown_defaults(original, calls, *self.signatures, compared_calls(func))
            # A keyword its signature lacks; for one taking **kwargs (or unknown), a keyword
            # no function of the parent has and no option it reads by key.
            accepted = self.parameters.get(original) or self.parameters.get("") or set()
            for kw in sorted({k.arg for c in calls for k in c.keywords if k.arg} - accepted):
                aspects.append(Aspect("keyword", f"`{name}` takes a new keyword argument `{kw}`",
                                      (kw.lower(), " ".join(words_of(kw))), exact=True))
        aspects += self._assigned(func)
        aspects += self._unshown_names(func, aspects)
        names = {n for n in (_name(x) for x in ast.walk(func)) if n}
        attrs = {part for n in names for part in n.split(".")}
        params = {a.arg for a in func.args.args}
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and (_name(node.func) or "").split(".")[-1] in (
                    "raises", "assertRaises", "assertRaisesRegex") and node.args:
                for exc in (node.args[0].elts if isinstance(node.args[0], ast.Tuple) else [node.args[0]]):
                    label = _name(exc)
                    if label:
                        short = label.split(".")[-1]
                        terms: tuple[str, ...] = (short.lower(), " ".join(words_of(short)))
                        if short in ("Exception", "BaseException"):
                            terms = ("error", "raise", "exception", "fail", "reject")
                        aspects.append(Aspect("raises", f"raises `{label}`", terms,
                                              exact=short not in ("Exception", "BaseException")))
            elif isinstance(node, ast.Call) and (_name(node.func) or "").split(".")[-1] in (
                    "warns", "deprecated_call", "assertWarns"):
                label = _name(node.args[0]) if node.args else "DeprecationWarning"
                aspects.append(Aspect("warns", f"emits a `{label}` warning",
                                      ("warn", "deprecat")))
            elif isinstance(node, ast.Call):
                for var in _env_set(node):
                    aspects.append(Aspect("env", f"reads the environment variable `{var}`",
                                          (var.lower(), " ".join(words_of(var)), "environment",
                                           "env var", "environ"), exact=True))
        if attrs & THREADS and self._runs_in_thread(func):
            aspects.append(Aspect("threads", "must hold when called from several threads at "
                                  "the same time", THREAD_TERMS))
        if isinstance(func, ast.AsyncFunctionDef) or "asyncio" in attrs:
            aspects.append(Aspect("async", "is awaited as a coroutine (asyncio)", ASYNC_TERMS))
        if params & {"capsys", "capfd"}:
            aspects.append(Aspect("output", "what it prints is checked", OUTPUT_TERMS))
        if "caplog" in params:
            aspects.append(Aspect("log", "what it logs is checked", LOG_TERMS))
        if kinds:
            aspects.append(Aspect("expects", "its checks expect " + ", ".join(kinds)))
        summary, words = self._summary(func, owner, {n for n, _, _ in uses})
        dedup = tuple(dict.fromkeys(aspects))
        messages = tuple(unstated_wordings(self.tree, func, self.visible_text))
        return Behaviour(test_id, summary, words, dedup, messages)

    def _summary(self, func: ast.AST, owner: str, used: set[str]) -> tuple[str, tuple[str, ...]]:
        """The docstring's first line when it shows no literal, else the test's name as
        words (its class's too); the content words to match, without the used names'."""
        skip = {w for n in used for w in words_of(n)}
        doc = ast.get_docstring(func) if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        first = (doc or "").strip().splitlines()[0].strip() if doc and doc.strip() else ""
        if first and shows_literal(first, self.literals) is None:
            return f"a test described as “{first.rstrip('.')}”", content_words(first, skip)
        name = getattr(func, "name", "")
        cls = owner[4:] if owner.startswith("Test") else owner
        words = [w for w in words_of(cls) + words_of(name) if w != "test"]
        lits = {lit.strip().lower() for lit in self.literals}
        words = [w for w in words if w not in lits and not w.isdigit()]
        text = " ".join(words)
        return (f"a test named “{text}”" if text else ""), content_words(text, skip)


def behaviours(hidden: Mapping[str, bytes], fail_to_pass: list[str], workspace: Mapping[str, bytes],
               fixed: Mapping[str, bytes | None], is_test_file) -> Derivation | None:
    """The behaviours of the checked fail-to-pass tests `fail_to_pass` of the hidden test
    files; None when a test cannot be read (then nothing of the commit is described)."""
    source = {p: d for p, d in {**workspace, **fixed}.items()
              if p.endswith(".py") and not is_test_file(p)}
    project = _project_modules(sorted(source))
    parent_source = {p: d for p, d in workspace.items() if p.endswith(".py") and not is_test_file(p)}
    parent_trees = _trees(parent_source)
    fix_trees = _trees(source)
    defined = _defined(fix_trees)
    at_parent = _defined(parent_trees) | _bound(parent_trees)
    at_parent |= {p.rsplit("/", 1)[-1][:-3] for p in parent_source}
    parameters = _parameters(parent_trees)
    sigs = (signatures(fix_trees), signatures(parent_trees))
    given = given_by_fix(fix_trees)
    every = parameters.setdefault("", set())
    assert every is not None
    every.update(_option_keys(parent_trees))
    visible = " ".join(b"\n".join(workspace.values()).decode("utf-8", "replace").split())
    readers: dict[str, _TestReader] = {}
    tests: list[tuple[str, _TestReader, str]] = []
    for test_id in fail_to_pass:
        rel, _, rest = test_id.partition("::")
        key = rest.split("[", 1)[0]
        if rel not in hidden:
            return None
        if rel not in readers:
            try:
                readers[rel] = _TestReader(hidden[rel], project, defined, at_parent, parameters, visible, sigs,
                                           given)
            except (SyntaxError, ValueError, RecursionError):
                return None
        if not readers[rel].collect(key):
            return None
        tests.append((test_id, readers[rel], key))
    out: list[Behaviour] = []
    for test_id, reader, key in tests:
        b = reader.behaviour(test_id, key)
        if all((b.summary, b.aspects) != (o.summary, o.aspects) for o in out):
            out.append(b)  # parameters of one test: one behaviour
    literals = frozenset(lit for r in readers.values() for lit in r.literals)
    values = {lit for r in readers.values() for lit in r.values}
    names = frozenset(n for r in readers.values() for n in r.names if n not in values)
    return Derivation(tuple(out), literals, literals & names)
