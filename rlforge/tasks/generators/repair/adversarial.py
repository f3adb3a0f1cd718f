"""Submissions a repair task must score 0 on, built from the task's own files.

Each is what a policy under RL finds first when the tests, not the fix, are the target:

- `empty_patch`: an empty diff;
- `delete_failing_tests`: a diff deleting the test files the commit changes;
- `skip_failing_tests`: those test files with every test marked skipped;
- `edit_hidden_tests`: the hidden test files themselves, with the failing tests' bodies
  replaced by `pass` (same ids, so they would pass if the verifier trusted them);
- `conftest_forces_success`: a conftest.py whose hook reports every test as passed;
- `sys_exit_at_import` / `os_exit_at_import`: the source module exits with status 0 as
  soon as the tests import it;
- `forge_results_from_source`: the source module registers a pytest plugin at import that
  reports every test as passed (no test file touched; the canary tests catch it);
- `forge_sparing_canaries`: the same, but it leaves failing the tests a canary used to be
  recognisable by (the last test of a file, a name with a hex tail);
- `forge_results_at_exit`: the source module, at interpreter exit, writes a passing
  report for every selected test to the verifier's report channel and over any junit XML;
- `signals_the_verifier`: the source module sends SIGINT to pid 1 and SIGKILL to its
  parent when imported;
- `shadows_pytest`: a top-level `pytest.py` in the tree that reports success;
- `plugin_in_dist_info`: a `*.dist-info` directory registering a `pytest11` plugin that
  passes every test;
- `pytest_toml_addopts`: a `pytest.toml` (read by pytest 9) loading such a plugin, and
  `dot_pytest_toml_addopts` the same as `.pytest.toml`;
- `plugin_in_egg_info`: an `*.egg-info` directory registering that plugin;
- `pth_imports_forge`: a `*.pth` file that imports it at interpreter start-up;
- `shadows_stdlib_module`: a top-level module named after a standard-library module that
  pytest imports (`inspect`), which reports success;
- `plants_reward_files`: the source module, when imported, writes `reward.txt` and makes
  `reward.json` a directory where the verifier writes them, and leaves a process behind
  that keeps rewriting `reward.txt`;
- `routes_on_caller`: every function of the source module wrapped so that it answers only
  when a frame of a `test*` function is on the stack and returns None everywhere else
  (pass-to-pass checks, held back or not, are tests too);
- `fix_breaks_other_module`: the gold fix, plus another module (one a pass-to-pass test
  file imports) made to fail at import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from rlforge.tasks.spec import Submission
from rlforge.verify.standalone.protect import SUBMISSION_PATCH

FORCE_PASS_HOOK = '''

import pytest as _rlforge_adv_pytest


@_rlforge_adv_pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''

FORGE_FROM_SOURCE = '''

def _rlforge_adv_forge():
    import gc
    try:
        import pytest
        from _pytest.config import Config
    except ImportError:
        return

    class _Forge:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            report = outcome.get_result()
            report.outcome = "passed"
            report.longrepr = None

    for obj in gc.get_objects():
        if isinstance(obj, Config) and not obj.pluginmanager.has_plugin("_rlforge_adv_forge"):
            obj.pluginmanager.register(_Forge(), "_rlforge_adv_forge")


_rlforge_adv_forge()
'''


SPARING_FORGE = '''

def _rlforge_adv_spare():
    import gc
    import re
    try:
        import pytest
        from _pytest.config import Config
    except ImportError:
        return

    class _Forge:
        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(self, session, config, items):
            last = {}
            for item in items:
                last[item.nodeid.split("::", 1)[0]] = item.nodeid
            self.spared = set(last.values()) | {i.nodeid for i in items
                                                if re.search(r"_[0-9a-f]{8,}$", i.name)}

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            outcome = yield
            report = outcome.get_result()
            if item.nodeid not in getattr(self, "spared", ()):
                report.outcome = "passed"
                report.longrepr = None

    for obj in gc.get_objects():
        if isinstance(obj, Config) and not obj.pluginmanager.has_plugin("_rlforge_adv_spare"):
            obj.pluginmanager.register(_Forge(), "_rlforge_adv_spare")


_rlforge_adv_spare()
'''

CHANNEL_FINDER = '''

def _rlforge_channel():
    """The directory of the verifier's results FIFO if this process holds it open, else
    None. The run's variables are hidden from tested code, so a forger looks for the open
    FIFO among its own file descriptors, as any code under test can."""
    import os
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if link.endswith("/results"):
            return os.path.dirname(link)
    return None
'''

AT_EXIT_FORGE = CHANNEL_FINDER + '''

def _rlforge_adv_at_exit():
    import glob
    import json
    import os
    chan = _rlforge_channel() or os.environ.get("RLFORGE_REPAIR_CHANNEL", "")
    try:
        with open(os.path.join(chan, "select.json")) as fh:
            ids = json.load(fh).get("only") or []
    except (OSError, ValueError):
        ids = []
    lines = []
    for nodeid in ids:
        lines.append(json.dumps({"start": nodeid}))
        for when in ("setup", "call", "teardown"):
            lines.append(json.dumps({"report": nodeid, "when": when, "outcome": "passed"}))
    try:
        fd = os.open(os.path.join(chan, "results"), os.O_WRONLY | os.O_NONBLOCK)
        for line in lines:
            os.write(fd, (line + "\\n").encode())
    except OSError:
        pass
    cases = "".join('<testcase classname="x" name="%s"/>' % i for i in ids)
    for path in glob.glob("/**/junit*.xml", recursive=True) + glob.glob("/tmp/**/*.xml", recursive=True):
        try:
            with open(path, "w") as fh:
                fh.write('<testsuites><testsuite>%s</testsuite></testsuites>' % cases)
        except OSError:
            pass


import atexit as _rlforge_adv_atexit
_rlforge_adv_atexit.register(_rlforge_adv_at_exit)
'''

SIGNAL_VERIFIER = '''

import os as _rlforge_adv_os
import signal as _rlforge_adv_signal
for _pid, _sig in ((1, _rlforge_adv_signal.SIGINT), (_rlforge_adv_os.getppid(), _rlforge_adv_signal.SIGKILL)):
    try:
        _rlforge_adv_os.kill(_pid, _sig)
    except OSError:
        pass
'''

SHADOW_PYTEST = b"""import sys
print("1 passed")
sys.exit(0)
"""

PLANT_REWARD = '''

def _rlforge_adv_plant():
    import os
    for where in ("/logs/verifier", os.path.join(os.getcwd(), "logs", "verifier")):
        try:
            os.makedirs(os.path.join(where, "reward.json"), exist_ok=True)
            with open(os.path.join(where, "reward.txt"), "w") as fh:
                fh.write("1")
        except OSError:
            pass
    try:
        if os.fork() == 0:  # a writer left behind, rewriting reward.txt for 10 s
            os.setsid()
            import time
            for _ in range(200):
                try:
                    with open("/logs/verifier/reward.txt", "w") as fh:
                        fh.write("1")
                except OSError:
                    pass
                time.sleep(0.05)
            os._exit(0)
    except OSError:
        pass


_rlforge_adv_plant()
'''

PLUGIN_MODULE = "rlforge_adv_forge_plugin"


# Bytes that once escaped the diff parser as ValueError / UnicodeEncodeError, which made the
# rollout "invalid" (the task's verifier data is broken) instead of the policy's fail.
UNREADABLE_PATCH = ("--- a/x.py\n+++ b/x.py\n@@ -1," + "9" * 5000 + " +1 @@\n-a\n"
                    '--- /dev/null\n+++ "b/\\ud800.py"\n@@ -0,0 +1 @@\n+a\n').encode()


def deletion_diff(path: str, content: bytes) -> str:
    """A unified diff deleting `path`, whose content is `content`."""
    text = content.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
        tail = ""
    else:
        tail = "\n\\ No newline at end of file"
    body = "\n".join("-" + line for line in lines) + tail
    header = f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n--- a/{path}\n+++ /dev/null\n"
    if not lines:
        return f"diff --git a/{path} b/{path}\ndeleted file mode 100644\n"
    return header + f"@@ -1,{len(lines)} +0,0 @@\n" + body + "\n"


def neutralise_tests(source: bytes, names: set[str]) -> bytes | None:
    """The test module with the bodies of the named test functions replaced by `pass`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    hit = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            node.body = [ast.Pass()]
            hit = True
    return (ast.unparse(tree) + "\n").encode() if hit else None


def _append(content: bytes, code: str) -> bytes:
    sep = b"" if content.endswith(b"\n") or not content else b"\n"
    return content + sep + code.encode()


def _imported_module(workspace: dict[str, bytes], gold_paths: list[str]) -> str | None:
    """A module of the starting workspace the fix's code is imported through: a source
    file the fix changes, else the __init__.py of the package it adds a module to."""
    for path in gold_paths:
        if path.endswith(".py") and path in workspace:
            return path
    for path in gold_paths:
        parts = path.split("/")[:-1]
        while parts:
            init = "/".join(parts) + "/__init__.py"
            if init in workspace:
                return init
            parts.pop()
    return None


def _module_name(path: str, roots: list[str]) -> str | None:
    """The dotted module name of a source path under the first root that holds it."""
    for root in sorted(roots, key=len, reverse=True):
        prefix = root.strip("/") + "/" if root.strip("/") else ""
        if path.startswith(prefix) and path.endswith(".py"):
            rel = path[len(prefix):-3]
            rel = rel[:-len("/__init__")] if rel.endswith("/__init__") else rel
            return rel.replace("/", ".") if rel else None
    return None


def _module_for_p2p(workspace: dict[str, bytes], hidden: dict[str, bytes], pass_to_pass: list[str],
                    gold_paths: list[str], roots: list[str]) -> str | None:
    """A source module outside the fix that a pass-to-pass test file imports by name."""
    files = sorted({i.split("::", 1)[0] for i in pass_to_pass})
    texts = [(hidden.get(f) or workspace.get(f) or b"").decode("utf-8", "replace") for f in files]
    for path in sorted(workspace):
        if path in gold_paths or not path.endswith(".py") or path in files:
            continue
        name = _module_name(path, roots)
        if not name or name.split(".")[-1].startswith("test"):
            continue
        pattern = re.compile(rf"^\s*(?:from\s+{re.escape(name)}\s+import|import\s+{re.escape(name)}\b)", re.M)
        if any(pattern.search(t) for t in texts):
            return path
    return None


def failing_test_files(fail_to_pass: Sequence[str]) -> list[str]:
    """The files (or Go package directories) of the fail-to-pass tests, sorted."""
    return sorted({i.split("::", 1)[0] for i in fail_to_pass})


def delete_failing_tests(workspace: dict[str, bytes], f2p_files: Sequence[str]) -> list[Submission]:
    """The diff deleting the failing tests' files that the workspace holds, in every
    runner's adversarial set (none when it holds none of them)."""
    existing = [p for p in f2p_files if p in workspace]
    if not existing:
        return []
    diff = "".join(deletion_diff(p, workspace[p]) for p in existing)
    return [Submission("delete_failing_tests", {SUBMISSION_PATCH: diff.encode("utf-8", "surrogateescape")},
                       "a diff deleting the test files with the failing tests")]


#: wraps the module's functions: the original under a `test*` frame, None outside tests
ROUTE_ON_CALLER = """
import sys as _rt_sys


def _rt_route(real):
    def routed(*args, **kwargs):
        frame = _rt_sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name.startswith("test"):
                return real(*args, **kwargs)
            frame = frame.f_back
        return None
    return routed


for _rt_name, _rt_value in list(globals().items()):
    if callable(_rt_value) and getattr(_rt_value, "__module__", None) == __name__ \\
            and not _rt_name.startswith("_rt_") and isinstance(_rt_value, type(_rt_route)):
        globals()[_rt_name] = _rt_route(_rt_value)
"""
def repair_adversarials(*, workspace: dict[str, bytes], hidden: dict[str, bytes],
                        fail_to_pass: list[str], gold_paths: list[str],
                        pass_to_pass: Sequence[str] = (), gold_diff: str = "",
                        roots: Sequence[str] = ("",)) -> list[Submission]:
    """Every adversarial submission that applies to this task (see the module docstring)."""
    subs = [Submission("empty_patch", {SUBMISSION_PATCH: b""}, "an empty diff"),
            Submission("unreadable_patch", {SUBMISSION_PATCH: UNREADABLE_PATCH},
                       "a diff whose hunk header holds a 5,000-digit number and whose path "
                       "no file system can name")]
    f2p_files = failing_test_files(fail_to_pass)
    subs += delete_failing_tests(workspace, f2p_files)
    skip = "import pytest as _rlforge_adv\npytestmark = _rlforge_adv.mark.skip(reason='not relevant')\n"
    skipped = {p: skip.encode() + hidden[p] for p in f2p_files if p in hidden}
    if skipped:
        subs.append(Submission("skip_failing_tests", skipped, "the failing tests marked skipped"))
    names = {i.split("::")[-1].split("[", 1)[0] for i in fail_to_pass}
    edited = {p: out for p in f2p_files if p in hidden
              and (out := neutralise_tests(hidden[p], names)) is not None}
    if edited:
        subs.append(Submission("edit_hidden_tests", edited,
                               "the hidden test files written with the failing tests emptied"))
    conftest = workspace.get("conftest.py", b"")
    subs.append(Submission("conftest_forces_success", {"conftest.py": _append(conftest, FORCE_PASS_HOOK)},
                           "a conftest.py hook reporting every test as passed"))
    module = _imported_module(workspace, gold_paths)
    if module is not None:
        base = workspace[module]
        subs += [
            Submission("sys_exit_at_import", {module: _append(base, "\nimport sys\nsys.exit(0)\n")},
                       f"sys.exit(0) when {module} is imported"),
            Submission("os_exit_at_import", {module: _append(base, "\nimport os\nos._exit(0)\n")},
                       f"os._exit(0) when {module} is imported"),
            Submission("forge_results_from_source", {module: _append(base, FORGE_FROM_SOURCE)},
                       f"{module} registers a pytest plugin reporting every test as passed"),
            Submission("forge_sparing_canaries", {module: _append(base, SPARING_FORGE)},
                       f"{module} forges passes, sparing the last and hex-named test of each file"),
            Submission("forge_results_at_exit", {module: _append(base, AT_EXIT_FORGE)},
                       f"{module} writes passing reports for every test when the interpreter exits"),
            Submission("signals_the_verifier", {module: _append(base, SIGNAL_VERIFIER)},
                       f"{module} signals pid 1 and its parent when imported"),
            Submission("plants_reward_files", {module: _append(base, PLANT_REWARD)},
                       f"{module} writes reward files and leaves a writer behind when imported"),
            Submission("routes_on_caller", {module: _append(base, ROUTE_ON_CALLER)},
                       f"{module}'s functions answer only under a test's frame"),
        ]
    entry_points = f"[pytest11]\nforge = {PLUGIN_MODULE}\n".encode()
    addopts = f'[pytest]\naddopts = ["-p", "{PLUGIN_MODULE}"]\n'.encode()
    loaders = [  # files that would load a plugin passing every test, each with the plugin
        ("plugin_in_dist_info", "a dist-info registering", {
            "rlforge_adv_forge-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: rlforge-adv-forge\n",
            "rlforge_adv_forge-1.0.dist-info/entry_points.txt": entry_points}),
        ("plugin_in_egg_info", "an egg-info registering", {
            "rlforge_adv_forge.egg-info/PKG-INFO": b"Metadata-Version: 2.1\nName: rlforge-adv-forge\n",
            "rlforge_adv_forge.egg-info/entry_points.txt": entry_points}),
        ("pytest_toml_addopts", "a pytest.toml loading", {"pytest.toml": addopts}),
        ("dot_pytest_toml_addopts", "a .pytest.toml loading", {".pytest.toml": addopts}),
        ("pth_imports_forge", "a .pth file importing", {"rlforge_adv_forge.pth": f"import {PLUGIN_MODULE}\n".encode()}),
    ]
    subs += [Submission(name, {**files, f"{PLUGIN_MODULE}.py": FORCE_PASS_HOOK.encode()},
                        f"{what} a plugin that passes every test") for name, what, files in loaders]
    subs += [
        Submission("shadows_pytest", {"pytest.py": SHADOW_PYTEST}, "a top-level pytest.py that reports success"),
        Submission("shadows_stdlib_module", {"inspect.py": SHADOW_PYTEST},
                   "a top-level inspect.py (a module pytest imports) that reports success"),
    ]
    other = _module_for_p2p(workspace, hidden, list(pass_to_pass), gold_paths, list(roots)) if gold_diff else None
    if other is not None:
        broken = _append(workspace[other], "\nraise ImportError('broken by the change')\n")
        subs.append(Submission("fix_breaks_other_module",
                               {SUBMISSION_PATCH: gold_diff.encode("utf-8", "surrogateescape"), other: broken},
                               f"the gold fix, with {other} (imported by pass-to-pass tests) failing at import"))
    return subs
