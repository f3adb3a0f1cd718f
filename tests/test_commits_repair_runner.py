"""The repair verifier's test runner: pytest under a watchdog, results over a FIFO.

Real pytest from a prepared environment runs real test files. A hanging test costs only
itself (per-test timeout, the session runs again without it); a hang while collecting
stops the run; code that exits at import leaves no results, so every wanted test is
missing; ids come back exactly as pytest names them (classes, parameters, unittest); and
inside the sandbox nothing the tests started outlives the run.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from rlforge.sandbox import SandboxSpec, prepare_env, run
from rlforge.tasks.generators.repair.adversarial import CHANNEL_FINDER
from rlforge.tasks.generators.repair.checks import write_tree
from rlforge.verify.standalone import asserts, plugin, task_files, testrun
from rlforge.verify.standalone.canaries import CANARIES, add_canaries
from rlforge.verify.standalone.policy_code import LocalPolicy
from rlforge.verify.standalone.protect import copy_workspace
from rlforge.verify.standalone.testrun import bind_python

# The runner's own logic, on this host: policy code as this process's uid (as root it would
# drop to uid 65534, which cannot reach pytest's temporary directories).
HOST = LocalPolicy(drop=False)


def run_tests(tree, command, ids=None, **kw):
    kw.setdefault("policy", HOST)
    return testrun.run_tests(tree, command, ids, **kw)

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def venv(shared_cache) -> Path:
    return prepare_env(["pytest"], shared_cache)


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def pytest_cmd(venv: Path) -> list[str]:
    return bind_python(["python", "-m", "pytest"], python=str(venv / "bin" / "python"))


OUTCOMES = {
    "tests/test_kinds.py": """
        import unittest
        import pytest

        def test_pass():
            assert True

        def test_fail():
            assert 1 == 2

        @pytest.mark.skip(reason="no")
        def test_skip():
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False

        @pytest.mark.parametrize("value", ["a-b", "x y", "1.5", "é"])
        def test_param(value):
            assert value != "x y"

        class TestGroup:
            def test_method(self):
                assert True

            class TestInner:
                def test_deep(self):
                    assert True

        class Legacy(unittest.TestCase):
            def test_unittest(self):
                self.assertEqual(1, 1)

        @pytest.fixture
        def broken():
            yield
            raise RuntimeError("teardown fails")

        def test_teardown_error(broken):
            assert True
        """,
}


def test_outcomes_by_pytest_id(tmp_path, venv):
    root = tree(tmp_path / "t", OUTCOMES)
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=20, collect_timeout=60,
                    budget_sec=120)
    out = res["outcomes"]
    f = "tests/test_kinds.py::"
    assert out[f + "test_pass"] == "passed"
    assert out[f + "test_fail"] == "failed"
    assert out[f + "test_skip"] == "skipped"
    assert out[f + "test_xfail"] == "skipped"  # an expected failure is not a pass
    assert out[f + "test_param[a-b]"] == out[f + "test_param[1.5]"] == "passed"
    assert out[f + "test_param[x y]"] == "failed"
    assert out[f + "TestGroup::test_method"] == out[f + "TestGroup::TestInner::test_deep"] == "passed"
    assert out[f + "Legacy::test_unittest"] == "passed"
    assert out[f + "test_teardown_error"] == "failed"
    assert res["sessions"] == 1 and not res["hung"]
    assert len(res["started"]) == len(out) == 12
    unicode_id = next(i for i in out if i.startswith(f + "test_param[") and i not in (
        f + "test_param[a-b]", f + "test_param[1.5]", f + "test_param[x y]"))
    assert out[unicode_id] == "passed"  # pytest escapes non-ASCII ids; they still map back


class _FailsToStart(LocalPolicy):
    def start(self, *args, **kwargs):
        raise OSError("no process")


def test_a_run_that_raises_puts_the_test_files_back(tmp_path, venv):
    """The test files are left empty on disk while tests run (their sources go to the test
    process in memory); a run that raises half-way must still put them back."""
    root = tree(tmp_path / "t", OUTCOMES)
    before = (root / "tests" / "test_kinds.py").read_bytes()
    with pytest.raises(OSError):
        run_tests(str(root), pytest_cmd(venv), None, paths=["tests/test_kinds.py"],
                  policy=_FailsToStart(drop=False),
                  per_test_timeout=20, collect_timeout=60, budget_sec=60)
    assert (root / "tests" / "test_kinds.py").read_bytes() == before


def test_selected_ids_only_and_missing_ones(tmp_path, venv):
    root = tree(tmp_path / "t", OUTCOMES)
    f = "tests/test_kinds.py::"
    wanted = [f + "test_pass", f + "test_param[x y]", f + "test_gone", "tests/test_nofile.py::test_x"]
    res = run_tests(str(root), pytest_cmd(venv), wanted, per_test_timeout=20, collect_timeout=60,
                    budget_sec=120)
    assert res["outcomes"] == {f + "test_pass": "passed", f + "test_param[x y]": "failed",
                               f + "test_gone": "missing", "tests/test_nofile.py::test_x": "missing"}
    assert res["started"] == [f + "test_pass", f + "test_param[x y]"]


def test_code_under_test_does_not_see_the_run_in_its_environment(tmp_path, venv):
    """No `PYTEST_CURRENT_TEST` naming the running test, none of the verifier's variables
    (code could answer right only when a test is running)."""
    root = tree(tmp_path / "t", {"tests/test_env.py": """
        import os

        def test_nothing_names_the_run():
            seen = sorted(k for k in os.environ if "PYTEST" in k or "RLFORGE" in k)
            assert seen == []
        """})
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=20, collect_timeout=60,
                    budget_sec=120)
    assert res["outcomes"] == {"tests/test_env.py::test_nothing_names_the_run": "passed"}


def test_the_reporting_plugin_keeps_no_running_test_id(tmp_path, venv):
    """The plug-in's module once kept the running test's id (a red team found it through
    `vars(sys)["modules"]` and routed the code per test). No module-level value of any
    module the run loaded names the running test; its checked values still reach the
    verifier, attributed by the order of the reports."""
    root = tree(tmp_path / "t", {"tests/test_where.py": """
        import sys

        def _names(value, depth=0):
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict) and depth < 3:
                for v in list(value.values()):
                    yield from _names(v, depth + 1)

        def test_where_am_i():
            found = [name for module in list(sys.modules.values())
                     if not getattr(module, "__name__", "").startswith(("_pytest", "pytest", "pluggy"))
                     for value in list(getattr(module, "__dict__", {}).values()) for name in _names(value)
                     if "test_where_am_i" in name]
            assert found == []
        """})
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=20, collect_timeout=60,
                    budget_sec=120)
    assert res["outcomes"] == {"tests/test_where.py::test_where_am_i": "passed"}


def test_code_under_test_finds_no_test_source_on_disk(tmp_path, venv):
    """A red team's code read the hidden tests from the tree while they ran and answered
    their inputs one way, the visible tests' another. The run's test files now reach
    pytest from memory: on disk they are empty while the tests run, and whole again after."""
    source = """
        import glob
        import lib

        def test_reads_the_tests():
            assert lib.VALUE == 2
            assert [open(p).read() for p in sorted(glob.glob("tests/test_*.py"))] == ["", ""]

        def test_fails_with_a_report():
            assert lib.VALUE == 3
        """
    root = tree(tmp_path / "t", {"lib.py": "VALUE = 2\n", "tests/test_a.py": source,
                                 "tests/test_b.py": "def test_b():\n    assert True\n"})
    before = {p.name: p.read_bytes() for p in (root / "tests").iterdir()}
    f = "tests/test_a.py::"
    res = run_tests(str(root), pytest_cmd(venv), [f + "test_reads_the_tests", f + "test_fails_with_a_report",
                                                  "tests/test_b.py::test_b"],
                    per_test_timeout=20, collect_timeout=60, budget_sec=120)
    assert res["outcomes"] == {f + "test_reads_the_tests": "passed", f + "test_fails_with_a_report": "failed",
                               "tests/test_b.py::test_b": "passed"}, res["log_tail"]
    assert {p.name: p.read_bytes() for p in (root / "tests").iterdir()} == before


def test_a_hanging_test_times_out_alone(tmp_path, venv):
    root = tree(tmp_path / "t", {"tests/test_h.py": """
        def test_before():
            assert True

        def test_hangs():
            while True:
                pass

        def test_sleeps():
            import time
            time.sleep(3600)

        def test_after():
            assert True
        """})
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=1.5, collect_timeout=60,
                    budget_sec=120)
    f = "tests/test_h.py::"
    assert res["outcomes"] == {f + "test_before": "passed", f + "test_hangs": "timeout",
                               f + "test_sleeps": "timeout", f + "test_after": "passed"}
    assert res["hung"] == [f + "test_hangs", f + "test_sleeps"] and res["sessions"] == 3
    assert not res["collection_hang"] and not res["budget_exhausted"]


def test_a_hang_while_collecting_stops_the_run(tmp_path, venv):
    root = tree(tmp_path / "t", {"slow.py": "while True:\n    pass\n",
                                 "tests/test_s.py": "import slow\n\ndef test_x():\n    assert True\n"})
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_s.py::test_x"], per_test_timeout=1,
                    collect_timeout=2, budget_sec=60)
    assert res["collection_hang"] and res["outcomes"] == {"tests/test_s.py::test_x": "timeout"}


def test_the_budget_ends_the_run(tmp_path, venv):
    root = tree(tmp_path / "t", {"tests/test_b.py": "".join(
        f"def test_{i}():\n    import time\n    time.sleep(0.6)\n\n" for i in range(10))})
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=5, collect_timeout=30,
                    budget_sec=2)
    assert res["budget_exhausted"]
    assert "timeout" in res["outcomes"].values()


@pytest.mark.parametrize("exit_code", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"])
def test_exit_at_import_leaves_every_wanted_test_missing(tmp_path, venv, exit_code):
    root = tree(tmp_path / "t", {"lib.py": exit_code + "def f():\n    return 1\n",
                                 "tests/test_l.py": "from lib import f\n\ndef test_f():\n    assert f() == 1\n"})
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_l.py::test_f"], per_test_timeout=5,
                    collect_timeout=30, budget_sec=60)
    assert res["outcomes"]["tests/test_l.py::test_f"] != "passed"


def test_canaries_are_collected_and_fail(tmp_path, venv):
    root = tree(tmp_path / "t", {"tests/test_c.py": "class TestA:\n    def test_x(self):\n        assert True\n"})
    canaries = add_canaries(str(root), ["tests/test_c.py::TestA::test_x"])
    assert len(canaries) == CANARIES
    assert all(c.startswith("tests/test_c.py::test_") and c != "tests/test_c.py::test_" for c in canaries)
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_c.py::TestA::test_x", *canaries],
                    per_test_timeout=5, collect_timeout=30, budget_sec=60)
    assert res["outcomes"] == {"tests/test_c.py::TestA::test_x": "passed", **{c: "failed" for c in canaries}}
    assert add_canaries(str(root), ["tests/missing.py::test_x"]) == []


def test_a_canary_never_copies_an_earlier_canary(tmp_path):
    """A canary copied from a canary planted before it can be mutated back to its
    original's literal (12 -> 10, then 10 -> 12) and pass: one gold in ~25 failed so."""
    import random

    source = ("import pytest\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
              "def test_add():\n    assert 2 + 3 == 5\n\n\n"
              "def test_mul():\n    assert mul(3, 4) == 12\n\n\n"
              # literals whose change would not change the outcome: never mutated
              "def test_big():\n    assert pytest.approx(1e9) == 1000000000.0\n\n\n"
              "def test_max():\n    assert mul(2, 5) == max(3, 10)\n")
    for seed in range(200):
        root = tree(tmp_path / f"t{seed}", {"tests/test_m.py": source})
        ids = add_canaries(str(root), ["tests/test_m.py::test_mul"], rng=random.Random(seed))
        text = (root / "tests" / "test_m.py").read_text()
        assert text.count("mul(3, 4)") == 1  # the fail-to-pass test is never copied: a copy
        # would show the literals its checked asserts hold back
        namespace: dict = {}
        exec(compile(text, "test_m.py", "exec"), namespace)
        for canary in ids:
            with pytest.raises(AssertionError):
                namespace[canary.split("::")[1]]()


# The run's variables are out of the environment: a forger finds the results channel as
# the FIFO open in its own process (while the plugin holds it), as any code under test can.
FIND_CHANNEL = textwrap.indent(CHANNEL_FINDER + """
def channel():
    return os.path.join(_rlforge_channel(), "results")
""", "    ")


def test_first_report_of_a_test_wins(tmp_path, venv):
    """Reports written after a test ended (at exit, say) cannot change its outcome, and
    reports for tests that never started are ignored."""
    forge = "import atexit, json, os\n" + textwrap.dedent(FIND_CHANNEL) + textwrap.dedent("""
        FIFO = channel()

        def _lie():
            fd = os.open(FIFO, os.O_WRONLY)
            for nodeid in ("tests/test_f.py::test_fails", "tests/test_f.py::test_never"):
                os.write(fd, (json.dumps({"start": nodeid}) + "\\n").encode())
                for when in ("setup", "call", "teardown"):
                    os.write(fd, (json.dumps({"report": nodeid, "when": when, "outcome": "passed"}) + "\\n").encode())

        atexit.register(_lie)
        """)
    root = tree(tmp_path / "t", {"lib.py": forge, "tests/test_f.py":
                                 "import lib\n\ndef test_fails():\n    assert False\n"})
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_f.py::test_fails"],
                    per_test_timeout=5, collect_timeout=30, budget_sec=60, pythonpath=["."])
    assert res["outcomes"] == {"tests/test_f.py::test_fails": "failed"}


FLOOD_AT_IMPORT = """
    import os, time
    """ + FIND_CHANNEL + """
    fd = os.open(channel(), os.O_WRONLY)
    end, i = time.monotonic() + 60, 0
    while time.monotonic() < end:
        i += 1
        os.write(fd, "".join('{"collect_error": "e%d"}\\n' % (i * 1000 + k) for k in range(1000)).encode())
    """

FLOOD_OF_CHECKS = """
    import json, os
    """ + FIND_CHANNEL + """
    def test_floods():
        fd = os.open(channel(), os.O_WRONLY)
        for i in range(10 ** 7):
            os.write(fd, (json.dumps({"check": i, "test": "tests/test_c.py::test_floods",
                                      "value": ["s", "x" * 100]}) + "\\n").encode())

    def test_quiet():
        assert True
    """


@pytest.mark.parametrize("cap", ["KEEP_TOTAL", "KEEP_PER_TEST"])
def test_a_flood_of_reports_is_cut_at_the_cap(tmp_path, venv, monkeypatch, cap):
    """Distinct reports without end (collect errors at import; checked values of one test)
    were all kept by the scorer. Past the cap (in total, or of one test) the run is killed
    at once and `flooded`, with what was kept bounded."""
    monkeypatch.setattr(testrun, cap, 1024 * 1024)
    files = ({"lib.py": FLOOD_AT_IMPORT, "tests/test_c.py": "import lib\n\ndef test_floods():\n    pass\n"}
             if cap == "KEEP_TOTAL" else {"tests/test_c.py": FLOOD_OF_CHECKS})
    root = tree(tmp_path / "t", files)
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_c.py::test_floods"],
                    per_test_timeout=50, collect_timeout=50, budget_sec=100, pythonpath=["."],
                    check_name="check")
    assert res["flooded"] and res["refused_events"] > 0, {k: res[k] for k in ("seconds", "kept_events")}
    assert res["seconds"] < 40, res["seconds"]  # not the flood's 60 s, nor the budget
    assert res["kept_events"] * (testrun.ITEM_COST + 20) <= 1024 * 1024
    assert res["outcomes"] == {"tests/test_c.py::test_floods": "missing"}
    assert len(res["collect_errors"]) + sum(map(len, res["checks"].values())) < res["kept_events"] + 1


def test_report_lines_are_read_across_writes_and_long_ones_skipped(tmp_path):
    """The channel's reader joins a line split between reads and drops a line longer than
    MAX_EVENT as it arrives, without holding it."""
    channel = testrun._Channel(str(tmp_path / "results"))
    fd = os.open(str(tmp_path / "results"), os.O_WRONLY)
    try:
        first = json.dumps({"start": "t::a"}).encode()
        os.write(fd, first[:5])
        assert list(channel.events()) == []
        long = b'{"start": "' + b"x" * (plugin.MAX_EVENT + 10) + b'"}\n'
        os.write(fd, first[5:] + b"\n" + long[:60000])  # under a pipe's 64 KiB
        got = list(channel.events())
        assert got == [({"start": "t::a"}, len(first))]
        os.write(fd, long[60000:])
        assert list(channel.events()) == [] and len(channel.buf) <= plugin.MAX_EVENT
        os.write(fd, b'{"start": "t::b"}\n')
        assert [ev for ev, _ in channel.events()] == [{"start": "t::b"}]
    finally:
        os.close(fd)
        channel.close()


def test_collection_errors_are_reported(tmp_path, venv):
    root = tree(tmp_path / "t", {"tests/test_ok.py": "def test_a():\n    assert True\n",
                                 "tests/test_bad.py": "import no_such_module\n\ndef test_b():\n    pass\n"})
    res = run_tests(str(root), pytest_cmd(venv), None, per_test_timeout=5, collect_timeout=30,
                    budget_sec=60)
    assert res["collect_errors"] == ["tests/test_bad.py"]
    assert res["outcomes"]["tests/test_ok.py::test_a"] == "passed"


def test_maintainers_settings_reach_pytest_through_c(tmp_path, venv):
    """The -c file carries the maintainers' options (pythonpath made absolute); a
    pytest.toml planted in the tree is never read."""
    root = tree(tmp_path / "t", {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\nmarkers = ["slow: slow"]\n',
        "src/mod.py": "def f():\n    return 3\n",
        "pytest.toml": '[pytest]\naddopts = ["-p", "nothing_of_that_name"]\n',
        "tests/test_m.py": "import pytest\nfrom mod import f\n\n@pytest.mark.slow\ndef test_f():\n    assert f() == 3\n"})
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_m.py::test_f"], per_test_timeout=5,
                    collect_timeout=30, budget_sec=60)
    assert res["outcomes"] == {"tests/test_m.py::test_f": "passed"}, res["log_tail"]


def test_nothing_the_tests_start_outlives_the_run_in_the_sandbox(tmp_path, venv):
    """A daemon started by a test (setsid, double fork) is gone before results are read."""
    ws = tree(tmp_path / "ws", {"tests/test_d.py": """
        import os, subprocess, sys

        def test_spawns_daemon():
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session=True)
            assert True
        """})
    runner = tmp_path / "runner"
    runner.mkdir()
    probe = textwrap.dedent("""
        import json, os, sys
        sys.path.insert(0, "/tests")
        import rlforge_testrun as r
        res = r.run_tests("/app", ["python", "-m", "pytest"], None,
                          per_test_timeout=20, collect_timeout=60, budget_sec=120)
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        print(json.dumps({"outcomes": res["outcomes"], "others": others}))
        """)
    write_tree(runner, {**task_files("repair"), "probe.py": probe.encode()})
    result = run(["/opt/venv/bin/python", "/tests/probe.py"],
                 SandboxSpec(workspace=ws, tests=runner, venv=venv, timeout_sec=120,
                             env={"RLFORGE_SANDBOXED": "1"}))
    assert result.failure is None, result.failure
    data = json.loads(result.stdout_text.strip().splitlines()[-1])
    assert data["outcomes"] == {"tests/test_d.py::test_spawns_daemon": "passed"}
    assert data["others"] == []


def test_workspace_copy_keeps_regular_files_only_and_caps_their_number(tmp_path):
    src = tree(tmp_path / "src", {"a.py": "a", "pkg/b.py": "b", "pkg/__pycache__/b.pyc": "x",
                                  ".rlforge/submission.diff": "d"})
    (src / "link.py").symlink_to(src / "a.py")
    (src / "linkdir").symlink_to(src / "pkg", target_is_directory=True)
    os.mkfifo(src / "fifo.py")
    dst = tmp_path / "dst"
    dst.mkdir()
    assert copy_workspace(str(src), str(dst)) == ["a.py", "pkg/b.py"]
    again = tmp_path / "again"
    again.mkdir()
    with pytest.raises(OSError, match="more than 1 files and directories"):
        copy_workspace(str(src), str(again), max_files=1)


# --- checked asserts: the fail-to-pass verdict on values the test process cannot forge ---

CHECKED = """\
from lib import area


def test_area():
    assert area(2, 3) == 6
    assert 12 == area(3, 4)  # the literal on the left
    assert area(1, 1) in (1, 2)


def test_early():
    if area(1, 1):
        return
    assert area(2, 2) == 4


class TestArea:
    def test_method(self):
        assert area(
            5, 5) == 25
        x = area(1, 2); assert x == 2
"""


def test_checked_asserts_are_rewritten_in_place_and_keep_lines():
    text, plan = asserts.externalize_checks(
        CHECKED.encode(), {"test_area", "test_early", "TestArea::test_method"}, "_chk")
    out = text.decode()
    assert out.count("\n") == CHECKED.count("\n")
    assert "6" not in out.split("def test_area")[1].split("def test_early")[0]  # literals gone
    assert "assert area(2, 2) == 4" in out  # a test that may return early is left alone
    assert "x = area(1, 2); assert x == 2" in out  # an assert sharing its line too
    assert [(p["test"], p["op"], p["literal"], p["literal_left"]) for p in plan.values()] == [
        ("test_area", "Eq", "6", False), ("test_area", "Eq", "12", True),
        ("test_area", "In", "(1, 2)", False), ("TestArea::test_method", "Eq", "25", False)]
    compile(text, "t.py", "exec")


def test_only_equality_and_membership_with_a_real_literal_count_as_checked():
    source = ("def test_eq():\n    assert f() == 'x'\n\n\ndef test_in():\n    assert f() in ('ab', 'cd')\n\n\n"
              "def test_ne():\n    assert f() != 'x'\n\n\ndef test_lt():\n    assert f() < 7\n\n\n"
              "def test_zero():\n    assert f() == 0\n\n\ndef test_contains():\n    assert 'ab' in f()\n")
    ids = [f"t.py::test_{k}" for k in ("eq", "in", "ne", "lt", "zero", "contains")]
    # NaN passes !=, infinity passes <, 0 is a guess, and a value listing every candidate
    # holds any literal: none of them hides the answer
    assert asserts.checked_fail_to_pass({"t.py": source.encode()}, ids) == ids[:2]


def test_a_literal_the_policy_has_seen_does_not_make_a_test_checked():
    hidden = ("def test_old():\n    assert f(1) == 'seen'\n\n\n"
              "def test_new():\n    assert f(1) == 'seen'\n    assert f(2) == 'fresh'\n")
    ids = ["t.py::test_old", "t.py::test_new"]
    workspace = {"t.py": b"def test_old():\n    assert f(1) == 'seen'\n"}
    # test_old's answer is in the policy's own copy of the file: a forger could send it
    assert asserts.checked_fail_to_pass({"t.py": hidden.encode()}, ids, workspace) == ids[1:]
    assert asserts.checked_fail_to_pass({"t.py": hidden.encode()}, ids, {}) == ids
    broken = {"t.py": b"def test_old(:\n    'seen'\n"}  # does not parse: its text counts
    assert asserts.checked_fail_to_pass({"t.py": hidden.encode()}, ids, broken) == ids[1:]


@pytest.mark.parametrize("value", [None, True, 3, -2**70, 2.5, float("inf"), 1 + 2j, "é\u2028", b"\0x",
                                   [1, (2, "a")], {1, 2}, frozenset({3}), {"k": [None]}])
def test_checked_values_round_trip(value):
    sent = json.loads(json.dumps(plugin.encode_value(value)))
    back = plugin.decode_value(sent)
    assert back == value and type(back) is type(value)


def test_a_reported_pass_needs_every_checked_assert_to_hold():
    plan = {0: {"file": "t.py", "test": "test_a", "op": "Eq", "literal": "6", "literal_left": False},
            1: {"file": "t.py", "test": "test_a", "op": "Lt", "literal": "10", "literal_left": True}}
    enc = plugin.encode_value
    cases = {"t.py::test_a[x]": {0: enc(6), 1: enc(11)},  # holds: 6 == 6, 10 < 11
             "t.py::test_a[y]": {0: enc(7), 1: enc(11)},  # 7 != 6
             "t.py::test_a[z]": {0: enc(6)},  # the second assert never ran
             "t.py::test_a[w]": {0: ["f", "six"], 1: enc(11)},  # not a value
             "t.py::test_a[v]": {0: enc("6"), 1: enc(11)}}  # "6" != 6
    outcomes = {k: "passed" for k in cases} | {"t.py::test_b": "passed"}
    out, why = asserts.apply_checks(outcomes, cases, plan)
    assert out == {"t.py::test_a[x]": "passed", "t.py::test_a[y]": "failed", "t.py::test_a[z]": "failed",
                   "t.py::test_a[w]": "failed", "t.py::test_a[v]": "failed", "t.py::test_b": "passed"}
    assert why["t.py::test_a[z]"] == "a checked assert did not run"


@pytest.mark.parametrize("impl, expected", [("a * b", "passed"), ("a + b + 1", "failed")])
def test_a_forged_pass_of_a_checked_test_is_caught(tmp_path, venv, impl, expected):
    """lib.py reports every test passed when imported: the checked values still decide."""
    from rlforge.tasks.generators.repair.adversarial import FORGE_FROM_SOURCE

    root = tree(tmp_path / "t", {"lib.py": f"def area(a, b):\n    return {impl}\n",
                                 "tests/test_a.py": CHECKED})
    (root / "lib.py").write_text((root / "lib.py").read_text() + FORGE_FROM_SOURCE)
    path = root / "tests" / "test_a.py"
    text, plan = asserts.externalize_checks(path.read_bytes(), {"test_area"}, "_rlforge_chk")
    path.write_bytes(text)
    plan = {i: {**p, "file": "tests/test_a.py"} for i, p in plan.items()}
    res = run_tests(str(root), pytest_cmd(venv), ["tests/test_a.py::test_area"], per_test_timeout=10,
                    collect_timeout=30, budget_sec=60, check_name="_rlforge_chk")
    assert res["outcomes"]["tests/test_a.py::test_area"] == "passed"  # the forgery worked in pytest
    out, _ = asserts.apply_checks(res["outcomes"], res["checks"], plan)
    assert out["tests/test_a.py::test_area"] == expected


def test_the_test_files_are_put_back_without_following_what_the_run_left(tmp_path):
    """The tested code can write the tree while it runs, and the verifier putting the test
    files back may be root: a red team left links there (to any host path, into the shared
    environment, to the verifier's own open files) and a FIFO, which blocked the write for
    ever. Each test file comes back as a new regular file; nothing the links reach changes."""
    import threading

    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "sub").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / "tests" / "test_link.py").symlink_to(outside)
    os.mkfifo(tree / "tests" / "test_fifo.py")
    os.link(outside, tree / "tests" / "test_hard.py")
    (tree / "sub" / "tests").symlink_to(elsewhere, target_is_directory=True)
    held = {"tests/test_link.py": b"L\n", "tests/test_fifo.py": b"F\n", "tests/test_hard.py": b"H\n",
            "sub/tests/test_dir.py": b"D\n"}
    done = threading.Thread(target=testrun._restore, args=(str(tree), held), daemon=True)
    done.start()
    done.join(10)
    assert not done.is_alive(), "putting a test file back blocked"
    assert outside.read_bytes() == b"keep" and list(elsewhere.iterdir()) == []
    for rel in ("tests/test_link.py", "tests/test_fifo.py", "tests/test_hard.py"):
        path = tree / rel
        assert path.is_file() and not path.is_symlink() and path.read_bytes() == held[rel]
