"""Specified repair instructions (`repair.spec`): every checked behaviour of a hidden test
is named by the request or described in the instruction, never with a hidden literal.

The first tests read real test sources with the Python runner's description
(`Pytest.behaviours`); the last builds `commits.repair` tasks from a real git repository
with real pytest in the sandbox: a commit "Add once decorator" whose hidden test calls
`once` from several threads gets an instruction that says so, and a commit whose test
says nothing describable is dropped with the reason.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from rlforge import db
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.repair import spec
from rlforge.tasks.generators.repair.runners import get
from rlforge.tasks.generators.repair.runners.base import TestRunner
from builds import build_options
from test_commits_repair import Repo

ONCE_LOCKED = '''import functools
import threading


def once(func):
    """Call `func` at most once; later calls return the first result."""
    done = []
    lock = threading.Lock()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with lock:
            if not done:
                done.append(func(*args, **kwargs))
        return done[0]
    return wrapper
'''
THREAD_TEST = '''import threading
import time

from tools.memo import once


def test_once_from_many_threads():
    calls = []

    @once
    def load():
        calls.append(1)
        time.sleep(0.05)
        return "config-v7"

    got = []
    threads = [threading.Thread(target=lambda: got.append(load())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(calls), len(got)) == (1, 6)
    assert sorted(set(got)) == ["config-v7"]
'''
HIDDEN_LITERAL = "config-v7"


def _describe(hidden: dict[str, bytes], f2p: list[str], workspace: dict[str, bytes],
              fixed: dict[str, bytes | None]) -> spec.Derivation:
    derivation = get("python").behaviours(hidden, f2p, workspace, fixed)
    assert derivation is not None
    return derivation


def test_a_thread_test_is_described_when_the_subject_does_not_say_it():
    hidden = {"tests/test_memo.py": THREAD_TEST.encode()}
    workspace = {"tools/__init__.py": b"", "tools/memo.py": b"def noop():\n    pass\n"}
    derivation = _describe(hidden, ["tests/test_memo.py::test_once_from_many_threads"],
                           workspace, {"tools/memo.py": ONCE_LOCKED.encode()})
    verdict = spec.specify(derivation, "add once decorator\n")
    assert verdict.measured and verdict.reason is None and verdict.stated == [False]
    [line] = verdict.lines
    assert "several threads" in line and "`once`" in line and "tools.memo" in line
    assert HIDDEN_LITERAL in derivation.literals
    assert HIDDEN_LITERAL not in line and "(1, 6)" not in line
    # A request that says it needs no description.
    stated = spec.specify(derivation, "Add a thread-safe once decorator for many threads loading once\n")
    assert stated.stated == [True] and stated.lines == []


def test_a_name_or_docstring_holding_a_hidden_literal_is_not_shown():
    test = ('from conv import spell\n\n\ndef test_spells_forty():\n'
            '    """spell(40) gives forty"""\n    assert spell(40) == "forty"\n')
    derivation = _describe({"tests/test_conv.py": test.encode()}, ["tests/test_conv.py::test_spells_forty"],
                           {"conv.py": b"def spell(n):\n    return str(n)\n"}, {})
    verdict = spec.specify(derivation, "Numbers as words\n")
    [line] = verdict.lines
    assert "forty" not in line.lower() and "`spell`" in line and "text (`str`)" in line
    assert spec.shows_literal(line, derivation.literals) is None


def test_expected_exceptions_and_new_names_are_required_by_name():
    test = ('import pytest\nfrom shapes.area import circle_area\n\n\n'
            'def test_negative_radius():\n    with pytest.raises(ValueError, match="radius must be"):\n'
            '        circle_area(-1)\n    assert circle_area(2, precise=True) > 12.5\n')
    hidden = {"tests/test_area.py": test.encode()}
    f2p = ["tests/test_area.py::test_negative_radius"]
    fixed: dict[str, bytes | None] = {"shapes/area.py": b"def circle_area(r, precise=False):\n    pass\n"}
    derivation = _describe(hidden, f2p, {"shapes/__init__.py": b""}, fixed)
    assert "radius must be" in derivation.literals and "12.5" in derivation.literals
    # The message's wording is checked word for word: every request here states it.
    said = spec.specify(derivation, "circle_area: a negative radius raises ValueError: radius must be >= 0; "
                                    "precise=True gives more digits")
    assert said.stated == [True]
    vague = spec.specify(derivation, "Reject a negative radius (the error says: radius must be positive)")
    [line] = vague.lines
    assert "raises `ValueError`" in line and "`circle_area(int)` (also with `precise=`)" in line
    assert "radius must be" not in line and "12.5" not in line


FORMAT_TESTS = '''from dura.format import format_duration
from dura.parse import parse_duration


def test_zero():
    assert format_duration(0) == "0s"


def test_weeks():
    assert parse_duration("2w") == 1209600
    assert parse_duration("3 wks") == 1814400
'''


def test_unstated_literal_forms_and_edge_cases_are_described_not_shown():
    """A request can name every word of a test ("zero", "weeks") and still leave out the
    form its checked calls take or return (`0s`, `3 wks`): the forms are required, and
    described by their shape (numbers as `<n>`), never by the expected literal."""
    workspace = {"dura/__init__.py": b"", "dura/parse.py": b"def parse_duration(text):\n    return 0\n"}
    fixed: dict[str, bytes | None] = {"dura/format.py": b"def format_duration(s):\n    return ''\n"}
    derivation = _describe({"tests/test_format.py": FORMAT_TESTS.encode()},
                           ["tests/test_format.py::test_zero", "tests/test_format.py::test_weeks"],
                           workspace, fixed)
    request = ("Add format_duration() to render seconds as '1h 30m', leaving out parts that are zero.\n"
               "parse_duration: accept '2w', w, wk, week and weeks.\n")
    verdict = spec.specify(derivation, request)
    assert verdict.reason is None and verdict.stated == [False, False]
    zero, weeks = verdict.lines
    assert "`format_duration` returns text of the form `<n>s`" in zero
    assert "`format_duration` is called with zero" in zero
    assert "`<n> wks`" in weeks and "`<n>w`" in weeks
    for line in verdict.lines:
        assert spec.shows_literal(line, derivation.literals) is None
        assert "0s" not in line and "3 wks" not in line and "1814400" not in line
    # The described instruction states them; a request showing the forms needs nothing.
    assert spec.specify(derivation, request + "\n".join(verdict.lines)).stated == [True, True]
    shown = spec.specify(derivation, request + "Zero renders as '0s'; '3 wks' parses too.\n")
    assert shown.stated == [True, True] and shown.lines == []
    # The forms alone do not name an edge case: zero must be said.
    assert spec.specify(derivation, "format_duration renders zero as '5s'; parse_duration weeks: '3 wks', '2w'."
                        ).stated == [True, True]
    assert spec.specify(derivation, "format_duration renders as '5s'; parse_duration weeks: '3 wks', '2w'."
                        ).stated == [False, True]
    # The function a test calls is named too: weeks parsed by what?
    assert spec.specify(derivation, "format_duration renders zero as '5s'; weeks: '3 wks', '2w'.").stated == [True, False]


def test_a_new_keyword_of_an_old_function_and_an_aliased_import_are_described():
    test = ('from io import StringIO\nfrom envfile.main import values as env_values\n\n\n'
            'def test_values_raw(tmp_path):\n    got = env_values(stream=StringIO("A=$B"), expand=False)\n'
            '    assert got["A"] == "$B"\n')
    workspace = {"envfile/__init__.py": b"from io import StringIO\n",
                 "envfile/main.py": b"def values(path=None, stream=None):\n    return {}\n"}
    derivation = _describe({"tests/test_main.py": test.encode()}, ["tests/test_main.py::test_values_raw"],
                           workspace, {})
    verdict = spec.specify(derivation, "Values without variables in them")
    [line] = verdict.lines
    assert "`env_values` takes a new keyword argument `expand`" in line
    assert "new: the test imports" not in line and "tmp_path" not in line
    assert spec.specify(derivation, "values(): expand=False keeps $VARS raw").stated == [True]


def test_a_behaviour_nothing_can_describe_drops_the_commit():
    test = ('import subprocess\nimport sys\n\n\ndef test_it():\n'
            '    out = subprocess.run([sys.executable, "-m", "tool"], capture_output=True, text=True).stdout\n'
            '    assert out == "done\\n"\n')
    derivation = _describe({"tests/test_tool.py": test.encode()}, ["tests/test_tool.py::test_it"],
                           {"tool.py": b"print('x')\n"}, {})
    verdict = spec.specify(derivation, "Make the tool say it finished")
    assert verdict.reason == spec.NOT_SPECIFIED and "test_it" in verdict.detail
    figures = spec.SpecFigures()
    figures.add(verdict)
    assert figures.to_dict()["dropped"] == 1


def test_a_description_showing_a_literal_drops_the_commit():
    b = spec.Behaviour("t.py::test_x", "a test named “gives blue”", ("blue",),
                       (spec.Aspect("uses", "uses `paint`"),))
    verdict = spec.specify(spec.Derivation((b,), frozenset({"blue"})), "Paint things")
    assert verdict.reason == spec.SHOWS_LITERAL and verdict.lines == []
    assert spec.shows_literal("uses `format_duration`", {"format"}) is None
    assert spec.shows_literal("returns 2 or 2.5", {"2.5"}) == "2.5"
    assert spec.shows_literal("version 12.5.1", {"2.5"}) is None


def test_a_runner_that_cannot_describe_keeps_the_request_unmeasured():
    class Opaque(TestRunner):
        name, language, result_format = "opaque", "opaque", "none"

    derivation = Opaque().behaviours({}, ["a::b"], {}, {})
    verdict = spec.specify(derivation, "anything")
    assert derivation is None and not verdict.measured and verdict.reason is None
    figures = spec.SpecFigures()
    figures.add(verdict)
    assert "1 unmeasured" in spec.summary_line(figures.to_dict())


# --- end to end: a real repository, real pytest, the sandbox ------------------------------

@pytest.mark.slow
@pytest.mark.sandbox
def test_build_states_the_thread_test_and_drops_the_undescribable(tmp_path):
    r = Repo(tmp_path / "memo")
    r.commit("Initial tools package with its tests",
             {"pyproject.toml": '[project]\nname = "tools"\nversion = "0.1"\n\n'
                                '[project.optional-dependencies]\ntest = ["pytest"]\n',
              "tools/__init__.py": "", "tools/memo.py": "def noop():\n    return None\n",
              "tests/test_noop.py": "from tools.memo import noop\n\n\ndef test_noop():\n"
                                    "    assert noop() is None\n"})
    once_sha = r.commit("add once decorator", {"tools/memo.py": ONCE_LOCKED.replace(
        "def once", "def noop():\n    return None\n\n\ndef once"), "tests/test_memo.py": THREAD_TEST})
    status_sha = r.commit("Report when the job is over",
                          {"tools/job.py": 'print("finished")\n',
                           "tests/test_job.py": 'import subprocess\nimport sys\n\n\ndef test_it():\n'
                           '    out = subprocess.run([sys.executable, "-m", "tools.job"], '
                           'capture_output=True, text=True).stdout\n    assert out == "finished\\n"\n'})
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, r.path)
    out = tmp_path / "tasks"
    report = build_tasks(con, build_options(out=out, generators=["commits.repair"], seed=1, validate=False,
                                            generator_options={"commits.repair": {"per_test_timeout": 10}}))
    con.close()
    tasks = {tomllib.loads((t / "task.toml").read_text())["metadata"]["rlforge"]["commit"]: t
             for t in out.iterdir() if (t / "task.toml").is_file()}
    assert set(tasks) == {once_sha}
    text = (tasks[once_sha] / "instruction.md").read_text()
    assert "add once decorator" in text and "several threads at the same time" in text
    assert HIDDEN_LITERAL not in text and not re.search(r"\(1, 6\)", text)
    meta = tomllib.loads((tasks[once_sha] / "task.toml").read_text())["metadata"]["rlforge"]
    assert meta["spec"] == "derived"
    dropped = [d for d in report.drops if d["source"].endswith(status_sha)]
    assert [d["reason"].split(" (")[0] for d in dropped] == [spec.NOT_SPECIFIED]
    assert report.specification["commits.repair"] == {
        "checked": 2, "by_request": 0, "described": 1, "dropped": 1, "unmeasured": 0}
