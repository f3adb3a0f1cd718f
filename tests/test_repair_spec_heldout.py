"""What a held-out audit of repair instructions found (`repair.spec`, the Python runner's
description): each test is one defect class, read from real test sources.

- a hidden test that checks a message word for word ("Command not found: x" in stderr)
  fails a correct solution that words it differently: unless the request or the workspace
  holds the wording, the commit is dropped (no description may show the literal);
- a name of the project reached through another library (`mock.patch.dict`,
  `threading.Thread(...).start()`, `open(p).read()`) or a builtin (`list`) is not the
  project's: no "uses `dict`", no "takes a new keyword argument `clear`";
- a NamedTuple's fields are its keyword arguments, not new ones;
- digits inside a word (`S3cr3t`) are no number: the "form" of such a literal is the
  literal itself and must not be described;
- a short literal (`"a"`) is not shown by the words of a description's own sentences
  ("a test named ..."), so it drops nothing;
- an option a function taking **kwargs reads by key (`options.get("strip_comments")`) is
  no new keyword argument;
- `import parse` then `parse.parse(...)`: the attribute is the project's function, not the
  package, so the call and the forms it is given are named or described.
"""

from __future__ import annotations

from rlforge.tasks.generators.repair import spec
from rlforge.tasks.generators.repair.runners import get

CLI_TEST = '''import subprocess
import sys


def run_tool(*args):
    return subprocess.run([sys.executable, "-m", "tool", *args], capture_output=True, text=True)


def test_run_with_unknown_command():
    result = run_tool("run", "no_such_program")
    assert result.returncode == 1
    assert "Command not found: no_such_program" in result.stderr
'''
CLI_F2P = ["tests/test_cli.py::test_run_with_unknown_command"]
TOOL = {"tool/__init__.py": b"", "tool/__main__.py": b"import sys\nsys.exit(2)\n"}


def _describe(hidden: dict[str, bytes], f2p: list[str], workspace: dict[str, bytes],
              fixed: dict[str, bytes | None] | None = None) -> spec.Derivation:
    derivation = get("python").behaviours(hidden, f2p, workspace, fixed or {})
    assert derivation is not None
    return derivation


def test_a_checked_wording_the_request_does_not_state_drops_the_commit():
    derivation = _describe({"tests/test_cli.py": CLI_TEST.encode()}, CLI_F2P, TOOL)
    [b] = derivation.behaviours
    # The test's own input (the program name) is no wording; the rest is, as written.
    assert b.messages == ("Command not found:",)
    vague = spec.specify(derivation, "run: exit with status 1 and a friendly error when the "
                                     "command can't be found, instead of a traceback\n")
    assert vague.reason == spec.UNSTATED_MESSAGE and vague.lines == []
    assert "test_run_with_unknown_command" in vague.detail and "Command not found" not in vague.detail
    # Case counts, as it does for the check: "command not found" is another wording.
    assert spec.specify(derivation, "print a 'command not found' error").reason == spec.UNSTATED_MESSAGE
    stated = spec.specify(derivation, "run: print `Command not found: <name>` to stderr, exit 1\n")
    assert stated.reason is None
    figures = spec.SpecFigures()
    figures.add(vague)
    assert figures.dropped == 1


def test_a_wording_the_workspace_holds_or_a_single_word_is_fair():
    # The policy can read the message where the project already uses it.
    shown = {**TOOL, "tool/errors.py": b'NOT_FOUND = "Command not found: {}"\n'}
    derivation = _describe({"tests/test_cli.py": CLI_TEST.encode()}, CLI_F2P, shown)
    assert derivation.behaviours[0].messages == ()
    assert spec.specify(derivation, "run: a friendly error for a missing command").reason is None
    # One word is a keyword a solution says anyway, not a wording.
    one_word = CLI_TEST.replace('"Command not found: no_such_program"', '"no_such_program"')
    derivation = _describe({"tests/test_cli.py": one_word.encode()}, CLI_F2P, TOOL)
    assert derivation.behaviours[0].messages == ()
    # A match= pattern is a wording too, read without its regular-expression syntax.
    raises = ('import pytest\nfrom tool.keys import get_key\n\n\ndef test_missing_key():\n'
              '    with pytest.raises(KeyError, match=r"^no key named \\w+ here$"):\n'
              '        get_key("absent")\n')
    derivation = _describe({"tests/test_keys.py": raises.encode()}, ["tests/test_keys.py::test_missing_key"],
                           {**TOOL, "tool/keys.py": b"def get_key(name):\n    return None\n"})
    assert derivation.behaviours[0].messages == ("no key named",)
    assert spec.specify(derivation, "get_key raises KeyError for a missing key").reason == spec.UNSTATED_MESSAGE


LIBRARY_TEST = '''import os
import threading
from unittest import mock

from envy.main import load


def test_load_disabled(tmp_path):
    p = tmp_path / ".env"
    p.write_text("A=1")
    writer = threading.Thread(target=lambda: None)
    writer.start()
    with mock.patch.dict(os.environ, {"ENVY_OFF": "1"}, clear=True):
        assert load(p) is False
    assert list(os.environ) is not None
    assert open(p).read() == "A=1"
'''
ENVY = b'''class Env:
    def dict(self):
        return {}

    def read(self):
        return ""

    def start(self):
        pass


def list():
    return []


def load(path, override=False):
    return True
'''


def test_names_reached_through_other_libraries_or_builtins_are_not_the_projects():
    derivation = _describe({"tests/test_main.py": LIBRARY_TEST.encode()}, ["tests/test_main.py::test_load_disabled"],
                           {"envy/__init__.py": b"", "envy/main.py": ENVY})
    [line] = spec.specify(derivation, "Turn loading off").lines
    assert "uses `load`" in line
    for wrong in ("`dict`", "`clear`", "`start`", "`read`", "`list`"):
        assert wrong not in line, (wrong, line)


def test_the_fields_of_a_namedtuple_are_its_keywords_and_digits_in_a_word_are_no_number():
    parser = (b"from typing import NamedTuple, Optional\n\n\nclass Binding(NamedTuple):\n"
              b"    key: Optional[str]\n    value: Optional[str]\n    error: bool\n\n\n"
              b"def parse(text):\n    return []\n")
    test = ('from envy.parser import Binding, parse\n\n\ndef test_parse_with_bom():\n'
            '    got = parse("\\ufeffPASSWORD=S3cr3t_P4ss")\n'
            '    assert got == [Binding(key="PASSWORD", value="S3cr3t_P4ss", error=False)]\n')
    derivation = _describe({"tests/test_parser.py": test.encode()}, ["tests/test_parser.py::test_parse_with_bom"],
                           {"envy/__init__.py": b"", "envy/parser.py": parser})
    [line] = spec.specify(derivation, "Strip a byte order mark").lines
    assert "uses `Binding`" in line and "new keyword" not in line
    assert "S3cr3t" not in line and "P4ss" not in line and "form" not in line
    assert spec.form_of("S3cr3t_P4ss") == "S3cr3t_P4ss"
    assert spec.form_of("3 wks, 2w, v2, 1h30m, sha256") == "<n> wks, <n>w, v<n>, <n>h<n>m, sha<n>"


def test_a_short_literal_is_not_shown_by_the_words_of_a_description():
    test = ('from envy.main import values\n\n\ndef test_values_of_a_stream():\n'
            '    assert values(stream="a=b") == {"a": "b"}\n')
    derivation = _describe({"tests/test_main.py": test.encode()}, ["tests/test_main.py::test_values_of_a_stream"],
                           {"envy/__init__.py": b"", "envy/main.py": b"def values(path=None, stream=None):\n"
                                                                    b"    return {}\n"})
    assert "a" in derivation.literals
    verdict = spec.specify(derivation, "Read from text")
    assert verdict.reason is None and verdict.lines and verdict.lines[0].startswith("a test named")
    # Shown where a description quotes what it takes from the test, it still drops.
    b = spec.Behaviour("t.py::test_x", "a test named “gives a”", ("gives",), ())
    assert spec.specify(spec.Derivation((b,), frozenset({"a"})), "Paint").reason == spec.SHOWS_LITERAL


def test_a_thread_that_only_feeds_the_test_asks_for_no_concurrency():
    fifo = ('import os\nimport threading\n\nfrom envy.main import load\n\n\n'
            'def test_load_from_fifo(tmp_path):\n    path = tmp_path / ".env"\n    os.mkfifo(path)\n\n'
            '    def writer():\n        with open(path, "w") as f:\n            f.write("A=1")\n\n'
            '    t = threading.Thread(target=writer)\n    t.start()\n'
            '    assert load(path) is True\n    t.join()\n')
    derivation = _describe({"tests/test_fifo.py": fifo.encode()}, ["tests/test_fifo.py::test_load_from_fifo"],
                           {"envy/__init__.py": b"", "envy/main.py": ENVY})
    [line] = spec.specify(derivation, "Read named pipes").lines
    assert "threads" not in line and "uses `load`" in line
    # Project code in the thread's target (through a local function) still asks for it.
    racing = fifo.replace('with open(path, "w") as f:\n            f.write("A=1")', "load(path)")
    derivation = _describe({"tests/test_fifo.py": racing.encode()}, ["tests/test_fifo.py::test_load_from_fifo"],
                           {"envy/__init__.py": b"", "envy/main.py": ENVY})
    [line] = spec.specify(derivation, "Read named pipes").lines
    assert "several threads at the same time" in line


def test_a_logged_wording_and_an_environment_variable_the_test_sets():
    test = ('import logging\nimport os\nfrom unittest import mock\n\nfrom envy.main import load\n\n\n'
            'def test_load_turned_off(tmp_path):\n'
            '    with mock.patch.dict(os.environ, {"ENVY_OFF": "1"}, clear=True):\n'
            '        logger = logging.getLogger("envy.main")\n'
            '        with mock.patch.object(logger, "debug") as debug:\n'
            '            assert load(tmp_path / ".env") is False\n'
            '        debug.assert_called_once_with("envy: loading turned off by ENVY_OFF")\n')
    workspace = {"envy/__init__.py": b"", "envy/main.py": ENVY}
    derivation = _describe({"tests/test_main.py": test.encode()}, ["tests/test_main.py::test_load_turned_off"],
                           workspace)
    assert derivation.behaviours[0].messages == ("envy: loading turned off by",)
    said = "Set ENVY_OFF to skip loading; log `envy: loading turned off by ENVY_OFF` at debug level"
    assert spec.specify(derivation, said).reason is None
    assert spec.specify(derivation, "Add the ENVY_OFF flag").reason == spec.UNSTATED_MESSAGE
    # Without the log check, the variable is what must be named: by the request, or described.
    quiet = test.replace('        debug.assert_called_once_with("envy: loading turned off by ENVY_OFF")\n', "")
    derivation = _describe({"tests/test_main.py": quiet.encode()}, ["tests/test_main.py::test_load_turned_off"],
                           workspace)
    [line] = spec.specify(derivation, "Turn loading off").lines
    assert "reads the environment variable `ENVY_OFF`" in line
    assert spec.specify(derivation, "Turn loading off with ENVY_OFF").stated == [False]  # load() unnamed
    assert spec.specify(derivation, "Turn load() off with ENVY_OFF").stated == [True]


def test_the_function_a_test_calls_is_named_or_described():
    """The request speaks of the `set` command; the hidden test calls the library's
    `set_key`: a fix made in the command alone fails it, so the call is described."""
    test = ('from envy.main import set_key\n\n\ndef test_set_key_no_file(tmp_path):\n'
            '    path = tmp_path / "nx"\n    assert set_key(str(path), "foo", "bar") == (True, "foo", "bar")\n'
            '    assert path.exists()\n')
    workspace = {"envy/__init__.py": b"", "envy/main.py": b"def set_key(path, key, value):\n    return None\n"}
    derivation = _describe({"tests/test_main.py": test.encode()}, ["tests/test_main.py::test_set_key_no_file"],
                           workspace)
    verdict = spec.specify(derivation, "Make the `set` command create the .env file if no file was found")
    assert verdict.stated == [False]
    [line] = verdict.lines
    assert "uses `set_key`, called as `set_key(..., str, str)`" in line
    assert spec.specify(derivation, "set_key creates the file when there is no file").stated == [True]


def test_an_attribute_the_test_assigns_must_be_settable_and_is_named_or_described():
    """"add config and docs for limits": the hidden test also sets a request's
    `max_parts` and reads it back, which a read-only view of the config would fail."""
    test = ('from web.wrappers import Request\n\n\ndef test_limit_config():\n'
            '    r = Request({})\n    assert r.max_parts == 1000\n    r.max_parts = 4\n'
            '    assert r.max_parts == 4\n')
    source = (b"class Request:\n    def __init__(self, environ):\n        self.environ = environ\n\n"
              b"    @property\n    def max_parts(self):\n        return 1000\n")
    derivation = _describe({"tests/test_request.py": test.encode()}, ["tests/test_request.py::test_limit_config"],
                           {"web/__init__.py": b"", "web/wrappers.py": source})
    verdict = spec.specify(derivation, "add config and docs for limits")
    assert verdict.stated == [False]
    [line] = verdict.lines
    assert "sets `max_parts` on an object and reads it back (it must be assignable)" in line
    assert spec.specify(derivation, "Request(empty environ): max_parts can be set per request; config for limits"
                        ).stated == [True]


def test_a_function_named_like_its_module_is_the_function_a_test_calls():
    """`import fmt` then `fmt.fmt("{:02d}{:02d}", "0440")`: the attribute is the project's
    function, not the package, so its call and the forms it is given are required."""
    test = ('import fmt\n\n\ndef test_width_multi_int():\n'
            '    assert fmt.fmt("{:02d}{:02d}", "0440") == (4, 40)\n')
    workspace = {"fmt.py": b"def fmt(pattern, text):\n    return None\n"}
    derivation = _describe({"tests/test_fmt.py": test.encode()}, ["tests/test_fmt.py::test_width_multi_int"],
                           workspace)
    verdict = spec.specify(derivation, "Adding width to multi ints")
    assert verdict.stated == [False]
    [line] = verdict.lines
    assert "uses `fmt`, called as `fmt(str, str)`" in line
    assert "`{:<n>d}{:<n>d}`" in line and "0440" not in line and "02" not in line
    assert spec.specify(derivation, "fmt: a width in `{:2d}{:2d}` bounds each int; '1234' parses").stated == [True]


def test_an_option_a_kwargs_function_reads_by_key_is_no_new_keyword():
    """`format(sql, **options)` reads `options.get("strip_comments")`: a hidden test
    passing `strip_comments=True` uses an existing option, while `wrap_after=` is new."""
    test = ('import sqlfmt\n\n\ndef test_strip_comments_keeps_hints():\n'
            '    assert sqlfmt.format("select --+hint", strip_comments=True, wrap_after=3) == "select --+hint"\n')
    source = (b"def format(sql, **options):\n    if options.get('strip_comments'):\n"
              b"        sql = sql.split('--')[0]\n    return sql\n")
    derivation = _describe({"tests/test_format.py": test.encode()},
                           ["tests/test_format.py::test_strip_comments_keeps_hints"],
                           {"sqlfmt/__init__.py": source})
    [line] = spec.specify(derivation, "keep SQL hints when stripping comments").lines
    assert "new keyword argument `wrap_after`" in line
    assert "new keyword argument `strip_comments`" not in line
