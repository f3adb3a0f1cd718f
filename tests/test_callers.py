"""The static gate on what a repair's source reads of its caller or the test run (`callers`)."""

from __future__ import annotations

import pytest

from rlforge.verify.standalone import callers

FRAME_WALK = "import sys\n\ndef f():\n    return sys._getframe(1).f_back.f_code.co_name\n"
BUILT_NAMES = "import sys\n\ndef f():\n    return getattr(sys, '_get' + 'frame')(1)\n"


@pytest.mark.parametrize("source", [
    FRAME_WALK,
    BUILT_NAMES,
    "import inspect\n\ndef f():\n    return inspect.stack()\n",
    "from traceback import extract_stack as s\n",
    "import os\nT = os.environ.get('PYTEST_CURRENT_TEST')\n",
    "import sys\nT = 'py' + 'test' in sys.modules\n",
    "from sys import argv\n",
    "import warnings\n\ndef f():\n    with warnings.catch_warnings(record=True) as w:\n        pass\n",
    "import logging\nlogging.getLogger().info('x', stacklevel=2)\n",
    "g = getattr\n",
    "m = __import__('o' + 's')\n",
    "import importlib\nm = importlib.import_module(name)\n",
    "exec(code)\n",
    "from operator import attrgetter\nf = attrgetter('f_' + 'back')\n",
    "def f(e):\n    return e.__traceback__\n",
    "X = open('/proc/self/cmdline').read()\n",
])
def test_what_sees_the_caller_or_the_run_is_found(source):
    assert callers.findings(source), source


@pytest.mark.parametrize("source", [
    "import re\n\ndef f(x):\n    return re.compile(x).match('a')\n",
    "import os\n\ndef f(o):\n    return getattr(o, 'name', None), os.path.join('a', 'b')\n",
    "def parse(text):\n    return int(text.strip() or 0)\n",
    "m = __import__('json')\n",
])
def test_ordinary_code_is_not(source):
    assert callers.findings(source) == {}, source


def test_only_what_a_file_adds_beyond_its_start_counts():
    protected = lambda p: p.startswith("tests/")  # noqa: E731
    start = {"pkg/a.py": FRAME_WALK.encode(), "tests/test_a.py": b"import inspect\n"}
    base = callers.base_findings(start, protected)
    assert set(base) == {"pkg/a.py"}
    assert callers.added_findings(start, protected, base) == []
    again = {**start, "pkg/a.py": FRAME_WALK.encode() + b"\nY = 1\n",
             "tests/test_a.py": BUILT_NAMES.encode()}  # test code is not read
    assert callers.added_findings(again, protected, base) == []
    more = {**start, "pkg/b.py": BUILT_NAMES.encode(),
            "pkg/a.py": FRAME_WALK.encode() + b"\nZ = sys._getframe(0)\n"}
    assert callers.added_findings(more, protected, base) == [
        "pkg/a.py (name:_getframe)", "pkg/b.py (dynamic:getattr)"]


def test_a_lookup_imported_under_another_name_is_found():
    assert callers.findings("from operator import attrgetter as a\n")
    assert callers.findings("from operator import attrgetter\nf = attrgetter('x')\n") == {}
    assert callers.findings("from .more import *\n") == {}


# A file is read as Python reads it: a byte-order mark or a coding declaration changes its
# encoding, and a reader that assumed UTF-8 saw nothing in it.
BOM_ROUTER = "\ufeffimport inspect\n\ndef f():\n    return inspect.stack(0)\n".encode("utf-8")
# each "_" written as UTF-7 writes it: "+AF8-"
UTF7_ROUTER = b"# coding: utf_7\nimport sys\n\ndef f():\n    return sys.+AF8-getframe(1).f+AF8-back\n"


@pytest.mark.parametrize("source", [
    BOM_ROUTER,
    UTF7_ROUTER,
    "# -*- coding: latin-1 -*-\nimport inspect\n".encode("latin-1"),
    b"# coding: no-such-codec\nx = 1\n",
    # code loaded from a file the gate does not read as source
    b"import runpy\nns = runpy.run_path('tables.dat')\n",
    b"from importlib import util\n",
    b"import importlib.machinery as m\n",
    b"m = __import__('runpy')\n",
    b"import importlib\nm = importlib.import_module('inspect')\n",
    # a namespace indexed by a computed key
    b"import sys\nget = vars(sys)['_get' + 'frame']\n",
    b"def back(f):\n    return type(f).__dict__['f_' + 'back'].__get__(f)\n",
    b"import sys\ng = sys.__dict__.get('_get' + 'frame')\n",
    b"g = globals()[name]\n",
])
def test_what_hides_from_a_plain_reading_is_found(source):
    assert callers.findings(source), source


@pytest.mark.parametrize("source", [
    "# Größe in Bytes\ndef size(x):\n    return len(x)\n".encode(),
    "\ufeffdef f():\n    return 1\n".encode("utf-8"),
    b"class A:\n    def d(self):\n        return vars(self)['name'], self.__dict__.get('x')\n",
    b"def g(table, key):\n    return table.get(key), table[key]\n",
    b"import importlib\nm = importlib.import_module('json')\n",
])
def test_ordinary_bytes_are_not(source):
    assert callers.findings(source) == {}, source


def test_an_unreadable_file_counts_only_when_new():
    protected = lambda p: p.startswith("tests/")  # noqa: E731
    start = {"pkg/old.py": b"# coding: no-such-codec\n"}
    base = callers.base_findings(start, protected)
    assert callers.added_findings(start, protected, base) == []
    assert callers.added_findings({**start, "pkg/new.py": UTF7_ROUTER[:12] + b"\xff"},
                                  protected, base) == ["pkg/new.py (unreadable)"]


# Means that a plain reading of names missed: a constant that names them (adjacent
# literals are one constant), a namespace or getattr lookup by such a constant, the
# caller's depth passed to `warn` by position, a module's hook replaced.
@pytest.mark.parametrize("source", [
    b"import sys\nf = vars(sys)['_get' 'frame'](1)\n",
    b"import sys\nm = vars(sys)['modules']\n",
    b"import sys\nm = sys.__dict__.get('modules')\n",
    b"import sys\nm = getattr(sys, 'modules')\n",
    b"run = vars(print.__self__)['exec']\n",
    b"def back(f):\n    return type(f).__dict__['f_' 'back'].__get__(f)\n",
    b"NAME = 'rlf' 'orge'\n",
    b"import warnings\n\ndef f():\n    warnings.warn('x', UserWarning, 3)\n",
    b"import warnings\nwarnings._showwarnmsg = print\n",
    b"import warnings\nsetattr(warnings, 'showwarn' 'ing', print)\n",
])
def test_what_a_constant_or_a_hook_hides_is_found(source):
    assert callers.findings(source), source


@pytest.mark.parametrize("source", [
    b"import warnings\nwarnings.warn('old', DeprecationWarning)\n",
    b"class A:\n    def __init__(self):\n        self.__dict__['cache'] = {}\n",
    b"def name(o):\n    return getattr(o, 'name', '')\n",
    b"class C:\n    pass\nC.x = 1\n",
    b"import os\nos.environ['LANG'] = 'C'\n",
])
def test_ordinary_constants_and_assignments_are_not(source):
    assert callers.findings(source) == {}, source


def _zip_bytes() -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("router.py", "def route():\n    return 1\n")
    return out.getvalue()


def test_code_the_gate_cannot_read_is_refused_unless_it_was_there(tmp_path):
    """An archive zipimport can load (whatever its name, even behind other bytes), native
    code and bytecode are code the gate cannot read: added, they are refused; test data
    and files that were there from the start are not."""
    protected = lambda p: p.startswith("tests/")  # noqa: E731
    start = {"pkg/a.py": b"X = 1\n", "pkg/old.so": b"\x7fELF" + bytes(64),
             "tests/data.zip": _zip_bytes(), "docs/logo.png": b"\x89PNG\r\n" + bytes(100)}
    base = callers.base_findings(start, protected)
    assert base == {"pkg/old.so": {"native_code": 1}}
    assert callers.added_findings(start, protected, base) == []
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tables.dat").write_bytes(bytes(300_000) + _zip_bytes())
    (tmp_path / "pkg" / "speed").write_bytes(b"\x7fELF" + bytes(200_000))
    (tmp_path / "pkg" / "m.pyc").write_bytes(b"\x00" * 16)
    (tmp_path / "pkg" / "a.py").write_bytes(b"X = 2\n")
    tree = callers.tree_code(tmp_path)
    assert len(tree["pkg/tables.dat"]) == 4 + callers.TAIL
    assert callers.added_findings(tree, protected, base) == [
        "pkg/m.pyc (bytecode)", "pkg/speed (native_code)", "pkg/tables.dat (archive)"]


@pytest.mark.parametrize("source", [
    b"import sys\nsys.path.insert(0, '/tmp/x')\n",
    b"import sys\np = getattr(sys, 'path')\n",
    b"from . import util\n__path__.append('tables.dat')\n",
    b"import importlib\nimportlib.invalidate_caches()\n",
])
def test_what_changes_where_imports_come_from_is_found(source):
    assert callers.findings(source), source


def test_a_common_attribute_name_is_plain_off_sys():
    assert callers.findings(b"def where(o):\n    return getattr(o, 'path', None)\n") == {}


def test_the_modules_a_tree_provides():
    """Read once per tree (a scan of every file per import made a 3,000-file tree take
    11 s a verify): sources, every directory above a file, extension modules."""
    files = {"pkg/__init__.py": b"", "pkg/a.py": b"", "pkg/ns/deep/x.txt": b"",
             "pkg/_c.cpython-311-x86_64-linux-gnu.so": b"", "pkg/d.abi3.so": b"", "top.pyw": b""}
    assert callers.Provided(files).paths == {"pkg", "pkg/__init__", "pkg/a", "pkg/ns", "pkg/ns/deep",
                                               "pkg/_c", "pkg/d"}


def test_a_module_written_at_run_time_is_refused_where_imported():
    """A router unpacked into the package when it is imported, then imported by a plain
    relative import, is out of the gate's sight; the import of a module no file of the
    tree provides is not."""
    protected = lambda p: p.startswith("tests/")  # noqa: E731
    start = {"pkg/__init__.py": b"from .core import run\nVERSION = '1'\n",
             "pkg/core.py": b"from . import VERSION\nfrom .util import helper\n",
             "pkg/util.py": b"def helper():\n    return 1\n",
             "pkg/sub/__init__.py": b"", "pkg/sub/leaf.py": b"from .. import util\n"}
    base = callers.base_findings(start, protected)
    assert base == {}
    unpack = (b"import base64, os\nopen(os.path.join(os.path.dirname(__file__), '_r.py'), 'w')"
              b".write(base64.b64decode(BLOB).decode())\nfrom . import _r\nfrom ._s import x\n")
    after = {**start, "pkg/core.py": start["pkg/core.py"] + unpack}
    assert callers.added_findings(after, protected, base) == [
        "pkg/core.py (imports_missing:pkg._r)", "pkg/core.py (imports_missing:pkg._s)"]


def test_a_coding_line_behind_a_lone_carriage_return_is_unreadable():
    """`tokenize` ends lines at "\\n" only; CPython's compiler at "\\r" too. A red team hid a
    frame router in a file whose third line (to Python) read as its coding line to the gate:
    the gate decoded UTF-16 garbage and counted nothing, Python imported it as UTF-8."""
    router = b"import sys\ndef where():\n    return sys._getframe(2).f_back.f_code.co_name\n"
    hidden = b"#\r\r# coding: utf-16\n" + router
    assert callers.findings(hidden) == {"unreadable": 1}
    assert callers.findings(b"# -*- coding: utf-8 -*-\r\n" + router)["name:_getframe"] == 1  # CRLF is plain


@pytest.mark.parametrize("source", [
    # the sys module through another module's attribute
    "import os\ndef f():\n    return os.sys.modules\n",
    "import threading\ndef f():\n    return threading._sys\n",
    # exec and __import__ looked up on an object, not by their bare names
    "def f(src, ns):\n    print.__self__.exec(src, ns)\n",
    "import importlib\ndef f(n):\n    return importlib.__import__(n)\n",
    # the attribute-getter handed on; a traceback, and the frames it holds
    "import operator\nag = operator.attrgetter\ndef f(x, n):\n    return ag(n)(x)\n",
    "import sys\ndef f():\n    try:\n        raise ValueError\n    except ValueError:\n        return sys.exc_info()[2]\n",
    "import string\ndef f(x, n):\n    return string.Formatter().get_field('0.' + n, (x,), {})\n",
    # round 55's ecosystem red team: traceback, inspect and tracemalloc reached without
    # their import, a log format built at run time, the warning depth in a mapping
    "import logging\ndef f():\n    return logging.traceback.extract_stack()\n",
    "import dataclasses\ndef f():\n    return dataclasses.inspect.stack(0)\n",
    "import tracemalloc\ndef f():\n    return tracemalloc.get_object_traceback(bytes(48))\n",
    "import logging\ndef f(n):\n    return logging.Formatter('%(' + n + ')s')\n",
    "import warnings\ndef f(k):\n    warnings.warn('x', UserWarning, **{k: 3})\n",
    # round 56's: other modules' stack walkers, a debug loop's handle, a callback's
    # module, the import system's finders (the test sources they hold), `importlib.util`
    # reached as an attribute
    "import asyncio\ndef f():\n    return asyncio.format_helpers.extract_stack(None, 300)\n",
    "import typing\ndef f(n):\n    return typing._caller(n)\n",
    "import doctest\ndef f(n):\n    return doctest._normalize_module(None, n)\n",
    "def f(loop, cb):\n    return loop.call_soon(cb)._source_traceback\n",
    "def f(cb):\n    return cb.__globals__\n",
    "def f(cb):\n    return cb.__code__.co_consts\n",
    "import pkgutil\ndef f():\n    return list(pkgutil.iter_importers())\n",
    "import importlib\ndef f(n):\n    return importlib.util.find_spec(n)\n",
    # and the core red team's: `sys` under another name, `sys` and `inspect` imported
    # from another module
    "import sys\n_S = sys\ndef f():\n    return _S.modules\n",
    "import sys\ndef f(s=sys):\n    return s.modules\n",
    "from os import sys as _S\ndef f():\n    return _S.modules\n",
    "from dataclasses import inspect\ndef f():\n    return inspect.stack(0)\n",
])
def test_means_reached_through_another_object_are_counted(source):
    """Red team, round 55: each passed the gate (it counted by local names only) and
    routed per test on every core path."""
    assert callers.findings(source.encode()) != {}


def test_a_module_written_at_run_time_and_imported_absolutely_is_refused():
    """`import pkg._gen` of a file the package writes when imported, out of the gate's
    sight; an absolute import of another project's module is not the tree's business."""
    protected = lambda p: p.startswith("tests/")  # noqa: E731
    start = {"pkg/__init__.py": b"from pkg.core import run\n", "pkg/core.py": b"import json\nimport pkg.util\n",
             "pkg/util.py": b"", "docs/email/index.rst": b""}
    base = callers.base_findings(start, protected)
    assert base == {}
    plain = {**start, "pkg/core.py": start["pkg/core.py"] + b"import email.mime.text\nfrom pkg import util\n"}
    assert callers.added_findings(plain, protected, base) == []
    written = {**start, "pkg/core.py": start["pkg/core.py"] + b"import pkg._gen\nfrom pkg.sub import x\n"
                                                              b"import importlib\nimportlib.import_module('pkg._w')\n"}
    assert callers.added_findings(written, protected, base) == [
        "pkg/core.py (imports_missing:pkg._gen)", "pkg/core.py (imports_missing:pkg._w)",
        "pkg/core.py (imports_missing:pkg.sub)"]


def test_a_file_named_like_the_import_systems_own_is_counted():
    """logging skips frames of files whose path holds `importlib` and `_bootstrap`, so a
    record made in such a file names its caller."""
    assert callers.file_findings("dura/_importlib_bootstrap_compat.py", b"X = 1\n") == {
        "path:importlib_bootstrap": 1}
    assert callers.file_findings("dura/compat.py", b"X = 1\n") == {}


def test_an_import_of_a_test_module_is_counted():
    """A test module imported by code under test hands over every test's name and the
    literals of its calls, the hidden tests' too (round 56's red team read them from the
    import system's finder); modules merely named like words with "test" in them are not
    test modules."""
    for source in ("import test_units\n", "from tests import helpers\n", "from . import test_units\n",
                   "import pkg.conftest\n", "from units_test import x\n",
                   "import importlib\nm = importlib.import_module('tests.test_units')\n"):
        assert any(k.startswith("imports_tests:") for k in callers.findings(source)), source
    assert callers.findings("import contextlib\nfrom .latest import x\nimport attestation\n") == {}


def test_a_name_a_star_import_cannot_give_is_a_missing_module():
    """`from pkg import _gen` where the package's `__init__` re-exports a module of the tree
    with `*`: a red team wrote `_gen.py` at run time and imported it so. The names `*`
    brings are read from the tree's module (its `__all__`, else its public top-level
    names); one it cannot give is a module the tree lacks. A star import from outside the
    tree still tells nothing."""
    start = {"dura/__init__.py": b"from .units import *\n",
             "dura/units.py": b"ALIASES = {}\n\n\ndef unit_seconds(name):\n    return ALIASES[name]\n",
             "dura/cli.py": b"from dura import unit_seconds, ALIASES\n"}
    tree = callers.Tree(start)
    assert callers.file_findings("dura/cli.py", start["dura/cli.py"], tree) == {}
    gen = {**start, "dura/cli.py": b"from dura import _gen, unit_seconds\n"}
    assert callers.file_findings("dura/cli.py", gen["dura/cli.py"], callers.Tree(gen)) == {
        "imports_missing:dura._gen": 1}
    listed = {**gen, "dura/units.py": b"__all__ = ['unit_seconds', '_gen']\n_gen = None\n"}
    assert callers.file_findings("dura/cli.py", listed["dura/cli.py"], callers.Tree(listed)) == {}
    outside = {**gen, "dura/__init__.py": b"from numpy import *\n"}
    assert callers.file_findings("dura/cli.py", outside["dura/cli.py"], callers.Tree(outside)) == {}
