"""What a Python submission's source code reads of its caller or of the test run (a static gate).

Code under test runs in the test process, so it can look at who called it (the stack) or
whether a test run is going on at all, and be right only there: held-back copies of the
pass-to-pass tests are tests too (a function that walks up to the nearest `test*` frame
and compares that test's shape with the visible ones passed every check while broken
everywhere else). The verifier cannot watch the code outside tests, so
it refuses changes that contain the means instead.

`findings(text)` reads one non-test source file and counts what it holds of those means:
names of frame, traceback, tracing and warning-location machinery and of the test run
(read as substrings of the whole text, strings and comments included), imports of the
modules that give them (or load code from other files), and dynamic access that static
reading cannot follow (`getattr` with a computed name, `__import__` or
`importlib.import_module` of a computed name, `eval`, `exec`, `compile`, a namespace
such as `vars(sys)` or `type(x).__dict__` indexed by a computed key, or by a constant
naming one of those means), names that change where imports come from (`sys.path`, a package's `__path__`: code
written or unpacked at run time is out of the gate's sight), string constants that spell
one of those names (adjacent
literals are one constant), the location arguments of `warn`, and assignments to a
module's attributes (a hook replaced). The file is read as Python reads it (a byte-order
mark or a coding declaration decides its encoding), and a file that does not decode
counts as unreadable. A file that is code but not source (an extension module or other
native code, bytecode, a zip archive the import system can load) cannot be read at all:
it counts as `native_code`, `bytecode` or `archive` (`binary_findings`). A task records its starting files' counts
(`base_findings`); a submission is refused when a file holds more of one kind than it
started with (`added_findings`). This narrows what in-process code can forge; it cannot
close it (the README's trust boundary says what stays open).
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.callers
    from .plugin import parse_source
    from .policy_code import read_regular_files
else:  # tests/rlforge_callers.py: its siblings by their copied names
    from rlforge_plugin import parse_source
    from rlforge_policy_code import read_regular_files

#: names that reach a frame, the stack or the caller's location, as substrings of the text
FRAME_NEEDLES = ("_getframe", "f_back", "f_code", "f_locals", "f_globals", "f_lineno",
                 "f_lasti", "tb_frame", "tb_next", "tb_lineno", "gi_frame", "cr_frame",
                 "ag_frame", "settrace", "setprofile", "gettrace", "getprofile",
                 "_current_frames", "findCaller", "stacklevel", "stack_info", "funcName",
                 "__traceback__", "last_traceback", "catch_warnings", "showwarning",
                 "captureWarnings", "get_referrers", "addaudithook", "currentframe",
                 # helpers of other modules that walk the stack for their caller
                 # (`asyncio.format_helpers.extract_stack`, a debug loop's handles'
                 # `_source_traceback`, `doctest._normalize_module(None, depth)`)
                 "extract_stack", "walk_stack", "format_helpers", "_source_traceback",
                 "_normalize_module", "_getframemodulename",
                 # a function's code and globals (a test's callback hands over its
                 # module: every test's name and literals), and the import system's
                 # finders and loaders (the test sources they serve)
                 "__globals__", "__code__", "co_consts", "gi_code", "cr_code", "ag_code",
                 "cell_contents", "iter_importers", "get_importer", "get_loader", "find_loader")
#: names that change where imports come from (code written or unpacked at run time, out of
#: the gate's sight, imported from a directory or archive added to a search path)
LOADER_NEEDLES = ("__path__", "__loader__", "__spec__", "path_importer_cache",
                  "invalidate_caches")
#: names that tell a test run from another (matched case-insensitively)
RUN_NEEDLES = ("pytest", "unittest", "rlforge", "/proc/", "cmdline", "__builtins__")
#: modules whose import gives the stack, the test run or a way around static reading
MODULES = frozenset({"inspect", "traceback", "unittest", "pytest", "_pytest", "faulthandler",
                     "ctypes", "gc", "__main__", "pdb", "bdb", "trace", "cProfile", "profile",
                     "_testcapi", "_testinternalcapi", "builtins", "marshal", "pickle",
                     "_pickle", "_warnings", "sys.monitoring", "runpy", "zipimport",
                     "importlib.util", "importlib.machinery", "importlib.abc",
                     "importlib._bootstrap", "importlib._bootstrap_external", "tracemalloc",
                     "pkgutil", "asyncio.format_helpers"})
#: attributes of `sys` that say how the process was started or what it has loaded
SYS_ATTRS = frozenset({"argv", "orig_argv", "modules", "monitoring", "meta_path",
                       "path_hooks", "audit", "call_tracing", "path", "exc_info", "exception"})
#: built-ins that run or look up code by a computed name
DYNAMIC_CALLS = frozenset({"eval", "exec", "compile", "__import__", "breakpoint"})
NAMED_LOOKUPS = frozenset({"getattr", "hasattr", "setattr", "delattr", "__getattribute__",
                           "attrgetter", "methodcaller", "import_module"})
#: calls whose result is a namespace mapping names to objects
NAMESPACES = frozenset({"vars", "globals", "locals"})
#: mapping methods that look up a key
KEY_LOOKUPS = frozenset({"get", "pop", "setdefault", "__getitem__"})
#: names that, looked up by a constant in a namespace or with `getattr`, reach those means
SENSITIVE_KEYS = (SYS_ATTRS | DYNAMIC_CALLS | NAMED_LOOKUPS | NAMESPACES
                  | {m.split(".")[0] for m in MODULES} | set(FRAME_NEEDLES)
                  | {"__builtins__", "__dict__", "__globals__", "__self__", "__closure__"})
#: of those, the ones `getattr(x, name)` reaches only on `sys` (common attribute names)
COMMON_NAMES = frozenset({"path"})
#: attribute names that reach those means through any object (`os.sys`, `print.__self__`,
#: `threading._sys`): the module and built-in namespaces, and the import system's hooks
REACHING_ATTRS = frozenset({"sys", "_sys", "builtins", "_builtins", "__self__", "inspect", "_inspect",
                            "traceback", "_traceback", "tracemalloc", "gc", "faulthandler", "ctypes",
                            "marshal", "runpy", "zipimport", "meta_path", "path_hooks", "orig_argv",
                            "_caller"})  # typing._caller(depth): the module that many frames up
#: logging calls that take a format string: built at run time, it names any record field
#: (`funcName`, `lineno`: the caller's) with no counted name in the text
LOG_FORMATS = frozenset({"Formatter", "basicConfig"})
#: calls that run code or import by name wherever they are looked up (`importlib.__import__`);
#: `compile` is left out (`re.compile`), `exec`/`eval` are rarely a method of anything else
DYNAMIC_ATTR_CALLS = frozenset({"exec", "eval", "__import__", "breakpoint"})
#: format machinery that hands back the object a string names (`get_field("0.attr", ...)`);
#: `str.format` gives only text, and the frames it could describe are out of reach (the
#: ways to a traceback, `exc_info` and `__traceback__`, are counted)
FORMAT_LOOKUPS = frozenset({"get_field", "vformat"})
#: warning calls whose third positional argument is the caller's depth (`stacklevel`)
WARN_CALLS = frozenset({"warn", "warn_explicit"})

REASON = "inspects_caller"
WHAT = "the change inspects its caller or the test run"


def _constant(node):
    return isinstance(node, ast.Constant)


def _plain_constant(node, sensitive=SENSITIVE_KEYS):
    """Whether `node` is a constant that is not the name of a means to see the caller (so
    looking it up is as plain as writing it)."""
    return _constant(node) and not (isinstance(node.value, str) and node.value in sensitive)


def _name_of(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_namespace(node):
    """Whether `node` is `vars(...)`, `globals()`, `locals()` or `<anything>.__dict__`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id in NAMESPACES


def _module_names(tree):
    """{local name: module} of the `import` statements (and `from sys import x as y`)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".", 1)[0]] = (
                    alias.name if alias.asname else alias.name.split(".", 1)[0])
    return out


def _names_tests(module):
    """Whether a dotted module name is a test module or in a test package, by the names
    test runners collect (`test_x`, `x_test`, `tests`, `conftest`): code under test that
    imports one holds every test's name and literals, the hidden ones too."""
    return any(part in ("test", "tests", "testing", "conftest") or part.startswith("test_")
               or part.endswith("_test") for part in module.split("."))


def _ast_findings(tree, counts):
    modules = _module_names(tree)
    sys_names = {local for local, module in modules.items() if module == "sys"}

    def add(kind):
        counts[kind] = counts.get(kind, 0) + 1

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES or alias.name.split(".", 1)[0] in MODULES:
                    add(f"import:{alias.name}")
                if _names_tests(alias.name):
                    add(f"imports_tests:{alias.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            for name in [mod] if mod and _names_tests(mod) else [
                    f"{mod}.{a.name}".lstrip(".") for a in node.names if _names_tests(a.name)]:
                add(f"imports_tests:{name}")
            if node.level == 0 and (mod in MODULES or mod.split(".", 1)[0] in MODULES):
                add(f"import:{mod}")
            for alias in node.names:
                if node.level == 0 and f"{mod}.{alias.name}" in MODULES:
                    add(f"import:{mod}.{alias.name}")
                if node.level == 0 and mod == "sys" and alias.name in SYS_ATTRS:
                    add(f"sys.{alias.name}")
                if node.level == 0 and alias.name in REACHING_ATTRS:
                    add(f"attribute:{alias.name}")  # `from os import sys`, `from dataclasses import inspect`
                if alias.name in DYNAMIC_CALLS | NAMED_LOOKUPS and alias.asname not in (
                        None, alias.name):  # renamed, its calls would not be recognised
                    add(f"import:{mod}.{alias.name}")
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in sys_names \
                    and node.attr in SYS_ATTRS:
                add(f"sys.{node.attr}")
            if node.attr in REACHING_ATTRS:
                add(f"attribute:{node.attr}")
            if isinstance(node.value, ast.Name) and node.value.id in modules \
                    and f"{modules[node.value.id]}.{node.attr}" in MODULES:
                add(f"import:{modules[node.value.id]}.{node.attr}")  # `importlib.util`, unimported
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            lowered = node.value.lower()
            for needle in FRAME_NEEDLES + LOADER_NEEDLES:
                if needle in node.value:
                    add(f"constant:{needle}")
            for needle in RUN_NEEDLES:
                if needle in lowered:
                    add(f"constant:{needle}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id in modules:
                    add(f"assigns:{modules[target.value.id]}.{target.attr}")
        elif isinstance(node, ast.Subscript):
            if _is_namespace(node.value) and not _plain_constant(node.slice):
                add("dynamic:namespace[key]")
        elif isinstance(node, ast.Call):
            name = _name_of(node.func)
            if name in DYNAMIC_CALLS and (isinstance(node.func, ast.Name) or name in DYNAMIC_ATTR_CALLS):
                if not (name == "__import__" and node.args and _constant(node.args[0])):
                    add(f"dynamic:{name}")
            elif name in FORMAT_LOOKUPS and isinstance(node.func, ast.Attribute) \
                    and not _constant(node.func.value):
                add(f"dynamic:{name}")  # an object looked up by a name built at run time
            elif name in NAMED_LOOKUPS and not all(
                    _plain_constant(arg, SENSITIVE_KEYS - COMMON_NAMES)
                    for arg in _looked_up(name, node)):
                add(f"dynamic:{name}")
            elif name in NAMED_LOOKUPS and len(node.args) > 1 and _constant(node.args[1]) \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in sys_names \
                    and node.args[1].value in SYS_ATTRS:
                add(f"sys.{node.args[1].value}")
            elif name in NAMED_LOOKUPS and name in ("setattr", "delattr") and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in modules:
                add(f"assigns:{modules[node.args[0].id]}")
            elif name in KEY_LOOKUPS and isinstance(node.func, ast.Attribute) \
                    and _is_namespace(node.func.value) \
                    and not all(map(_plain_constant, node.args[:1])):
                add("dynamic:namespace[key]")
            elif name in WARN_CALLS and (len(node.args) >= 3 or any(k.arg is None for k in node.keywords)):
                add(f"location:{name}")  # the depth by position, or in a mapping built at run time
            elif name in LOG_FORMATS and not all(
                    _constant(a) for a in node.args[:1] + [k.value for k in node.keywords
                                                            if k.arg in (None, "fmt", "format")]):
                add(f"dynamic:{name}")
            if name in ("__import__", "import_module") and node.args and _constant(node.args[0]):
                module = node.args[0].value
                if isinstance(module, str) and (module in MODULES
                                                or module.split(".", 1)[0] in MODULES):
                    add(f"import:{module}")
                if isinstance(module, str) and _names_tests(module):
                    add(f"imports_tests:{module}")
    # a lookup function handed on as a value (`g = getattr; g(sys, name)`,
    # `ag = operator.attrgetter`), and the `sys` module under another name (`S = sys`,
    # `def f(s=sys)`), whose attributes would not be told from any other object's
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and child.id in sys_names and not (
                    isinstance(node, ast.Attribute) and node.value is child) and not (
                    isinstance(node, ast.Call) and node.args and node.args[0] is child
                    and _name_of(node.func) in NAMED_LOOKUPS):  # `getattr(sys, "frozen")`: read above
                add("dynamic:sys as a value")
            if isinstance(node, ast.Call) and node.func is child:
                continue
            if isinstance(child, ast.Name) and child.id in DYNAMIC_CALLS | NAMED_LOOKUPS:
                add(f"dynamic:{child.id} as a value")
            elif isinstance(child, ast.Attribute) and child.attr in DYNAMIC_ATTR_CALLS | NAMED_LOOKUPS:
                add(f"dynamic:{child.attr} as a value")


def _looked_up(name, call):
    """The arguments of a lookup call that name what is looked up."""
    if name in ("attrgetter", "import_module"):
        return call.args or [call]
    if name == "methodcaller" or (name == "__getattribute__" and len(call.args) == 1):
        return call.args[:1] or [call]
    return call.args[1:2] or [call]


def source_text(data):
    """The text Python reads from source bytes `data` (its encoding from a byte-order mark
    or a coding declaration, UTF-8 by default), or None when it does not decode."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        # `tokenize` ends a line at "\n" only, CPython's compiler at "\r" too: a coding
        # line behind a lone "\r" is one encoding to the gate and another to Python
        lines = iter(data.splitlines(keepends=True)[:2])
        if tokenize.detect_encoding(lambda: next(lines, b""))[0] != encoding:
            return None
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeError, ValueError):
        return None


def findings(text, path=None, files=None):
    """{kind: how many} of the means to see the caller or the test run in one source file
    (`text`, bytes or str); see the module docstring. With its `path` and `files` (the
    tree's {path: bytes}), the imports no file of the tree provides count too
    (`missing_imports`)."""
    if isinstance(text, bytes):
        decoded = source_text(text)
        if decoded is None:
            return {"unreadable": 1}
        text = decoded
    counts = {}
    for needle in FRAME_NEEDLES + LOADER_NEEDLES:
        n = text.count(needle)
        if n:
            counts[f"name:{needle}"] = n
    lowered = text.lower()
    for needle in RUN_NEEDLES:
        n = lowered.count(needle)
        if n:
            counts[f"name:{needle}"] = n
    try:
        tree = parse_source(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return counts  # decoded as Python decodes it but not valid: its import fails too
    _ast_findings(tree, counts)
    if files is not None:
        for name in missing_imports(path, tree, files):
            counts[f"imports_missing:{name}"] = counts.get(f"imports_missing:{name}", 0) + 1
    return counts


def is_source(path):
    """Whether `path` is Python source that the tests' interpreter may import."""
    return path.endswith((".py", ".pyw"))


ELF_MAGIC = b"\x7fELF"
ZIP_END = b"PK\x05\x06"  # an archive's end record: what zipimport reads first
#: bytes of a file's end that hold its archive end record if it has one (22 + a comment)
TAIL = 22 + 65_535
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
BYTECODE_SUFFIXES = (".pyc", ".pyo")


def binary_findings(path, data):
    """{kind: 1} when the file at `path` is code Python can load that the gate cannot read:
    native code (an extension module, anything `ctypes` could load), bytecode, or a zip
    archive (zipimport loads one from any name on `sys.path` or a package's `__path__`).
    `data` is the file, or its first bytes followed by its last `TAIL` (`tree_code`)."""
    if path.endswith(NATIVE_SUFFIXES) or data.startswith(ELF_MAGIC):
        return {"native_code": 1}
    if path.endswith(BYTECODE_SUFFIXES):
        return {"bytecode": 1}
    if ZIP_END in data[-TAIL:]:
        return {"archive": 1}
    return {}


def file_findings(path, data, files=None):
    """The gate's findings for one file: its source read (`findings`, with the tree's
    `files` for its imports), or its bytes (`binary_findings`). A source file whose path
    reads as the import system's own (`importlib` and `_bootstrap`) counts too: logging
    skips such frames, so a record made there names the caller."""
    if not is_source(path):
        return binary_findings(path, data)
    counts = findings(data, path, files)
    if "importlib" in path and "_bootstrap" in path:
        counts["path:importlib_bootstrap"] = 1
    return counts


class Tree(dict):
    """A tree's {relative path: bytes} that knows, once, which module paths its files
    provide (a look-up per import, not a scan of every file)."""

    _provided = None

    def provided(self):
        if self._provided is None:
            self._provided = Provided(self)
        return self._provided


class Provided:
    """Every module or package a file of the tree is, as a path without a suffix (`paths`:
    a source file, `a/b.py` is `a/b`; every directory above a file, a package or a
    namespace package; an extension module, `a/c.cpython-311-x86_64-linux-gnu.so` is
    `a/c`), and the source modules and the directories holding one by their last name
    (`by_name`: where an absolute import of the tree's code may start)."""

    def __init__(self, files):
        self.paths = set()
        python = set()  # modules, and directories holding one: where an import can start
        for path in files:
            parts = path.split("/")
            self.paths.update("/".join(parts[:i]) for i in range(1, len(parts)))
            if path.endswith(".py"):
                self.paths.add(path[:-3])
                python.update((path[:-3], "/".join(parts[:-1])))
            elif path.endswith(NATIVE_SUFFIXES):
                self.paths.add("/".join(parts[:-1] + [parts[-1].split(".", 1)[0]]))
        self.by_name = {}
        for path in python:
            self.by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def __contains__(self, path):
        return path in self.paths


def _absolute(module, provided):
    """[(root, whole)]: the tree's paths an absolute import of `module` may start at, each
    with whether the tree provides the whole module there; [] when it is none of the
    tree's (no module or directory of Python there has the name it starts with)."""
    top, _, rest = module.partition(".")
    roots = provided.by_name.get(top, [])
    return [(root, not rest or root + "/" + rest.replace(".", "/") in provided) for root in roots]


def _exported(body):
    """The names `from m import *` takes from a module (its parsed `body`): its `__all__`
    when a literal gives it, else its top-level names not starting with `_`; None when it
    re-exports with `*` itself or sets `__all__` another way."""
    names = set()
    for node in body:
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        targets = node.targets if isinstance(node, ast.Assign) else [
            node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            try:
                return set(ast.literal_eval(node.value))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return {n for n in names if not n.startswith("_")}


def missing_imports(path, tree, files):
    """Modules the source file at `path` (parsed: `tree`) imports that no file of the tree
    provides: a module written at run time, out of the gate's sight, then imported by a
    plain statement. Relative imports (`from . import x`, `from .m import y`), and absolute
    ones (`import pkg.m`, `from pkg.m import y`, `import_module("pkg.m")`) of a name the
    tree has a file or directory of. A name `from . import x` takes from the package's
    `__init__.py` (holding the word) is not missing."""
    package = path.split("/")[:-1]
    provided = files.provided() if isinstance(files, Tree) else Provided(files)
    out = []

    def source_of(module_path):
        for rel in (module_path + ".py", module_path + "/__init__.py"):
            data = files.get(rel)
            if data is not None:
                return source_text(data) if isinstance(data, bytes) else data
        return None

    def star_exports(base, init_text):
        """The names the package's `from m import *` lines bring in, read from the tree's
        files of those modules (their `__all__`, else their public top-level names); None
        when one is not the tree's, or re-exports with `*` itself."""
        try:
            init_tree = parse_source(init_text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        names = set()
        for node in init_tree.body:
            if not (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)):
                continue
            if node.level:
                if node.level - 1 > len(base):
                    return None
                where = base[:len(base) - (node.level - 1)] + (node.module or "").split(".")
                paths = ["/".join(p for p in where if p)]
            else:
                paths = [root + ("/" + node.module.partition(".")[2].replace(".", "/")
                                 if "." in node.module else "")
                         for root, whole in _absolute(node.module or "", provided) if whole]
            texts = [source_of(p) for p in paths]
            if not texts or None in texts:
                return None
            for text in texts:
                try:
                    body = parse_source(text).body
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return None
                exported = _exported(body)
                if exported is None:
                    return None
                names |= exported
        return names

    def names_from(base, names):
        init = files.get("/".join(base + ["__init__.py"]), b"")
        init_text = source_text(init) if isinstance(init, bytes) else init
        starred = set()
        if init_text is not None and re.search(r"\bimport\s+\*", init_text):
            starred = star_exports(base, init_text)
            if starred is None:
                return  # names re-exported by `*` from code the gate cannot read
        for name in names:
            if name == "*" or "/".join(base + [name]) in provided or name in starred:
                continue
            if init_text is None or not re.search(rf"\b{re.escape(name)}\b", init_text):
                out.append(".".join(base + [name]))

    def absolute(module, names=()):
        found = _absolute(module, provided)
        if found and not any(whole for _, whole in found):
            out.append(module)
        elif names:
            for root, whole in found:
                base = root.split("/") + module.split(".")[1:]
                if whole and "/".join(base) + ".py" not in files:  # a package: names may be modules
                    names_from(base, names)
                    return

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                absolute(alias.name)
        elif isinstance(node, ast.Call) and _name_of(node.func) in ("import_module", "__import__") \
                and node.args and _constant(node.args[0]) and isinstance(node.args[0].value, str) \
                and not node.args[0].value.startswith("."):
            absolute(node.args[0].value)
        if not isinstance(node, ast.ImportFrom):
            continue
        if not node.level:
            if node.module:
                absolute(node.module, [a.name for a in node.names])
            continue
        if node.level - 1 > len(package):
            continue
        base = package[:len(package) - (node.level - 1)]
        if node.module:
            parts = base + node.module.split(".")
            if "/".join(parts) not in provided:
                out.append(".".join(parts))
            continue
        names_from(base, [alias.name for alias in node.names])
    return out


def tree_code(root):
    """{relative posix path: bytes} of every regular file under `root` (links skipped): a
    source file whole, any other its first 4 bytes and its last `TAIL` (what
    `binary_findings` reads)."""
    out = {}
    for rel, head in read_regular_files(root, lambda _: True, limit=0).items():
        path = os.path.join(root, *rel.split("/"))
        with open(path, "rb") as fh:
            if is_source(rel):
                out[rel] = fh.read()
                continue
            size = os.fstat(fh.fileno()).st_size
            start = fh.read(4)
            if size > 4 + TAIL:
                fh.seek(size - TAIL)
            out[rel] = start + fh.read(TAIL)
    return out


def base_findings(files, protected):
    """{path: findings} of the starting workspace's non-test files that hold any; `files`
    is {path: bytes} (a file whole, or as `tree_code` reads it), `protected(path)` whether
    a path is test code."""
    out = {}
    files = Tree(files)
    for path, data in sorted(files.items()):
        if not protected(path):
            found = file_findings(path, data, files)
            if found:
                out[path] = found
    return out


def added_findings(files, protected, base):
    """What the files (a tree's {path: bytes}) hold of those means beyond `base` (their
    starting counts), as sorted `path (kind)` strings: the gate refuses when any."""
    out = []
    files = Tree(files)
    for path, data in sorted(files.items()):
        if protected(path):
            continue
        before = base.get(path, {})
        for kind, n in sorted(file_findings(path, data, files).items()):
            if n > before.get(kind, 0):
                out.append(f"{path} ({kind})")
    return out
