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
  reports every test as passed (no test file touched; the canary test catches it).
"""

from __future__ import annotations

import ast

from rlforge.tasks.spec import Submission
from rlforge.verify.repair_standalone import SUBMISSION_PATCH

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


def repair_adversarials(*, workspace: dict[str, bytes], hidden: dict[str, bytes],
                        fail_to_pass: list[str], gold_paths: list[str]) -> list[Submission]:
    """Every adversarial submission that applies to this task (see the module docstring)."""
    subs = [Submission("empty_patch", {SUBMISSION_PATCH: b""}, "an empty diff")]
    f2p_files = sorted({i.split("::", 1)[0] for i in fail_to_pass})
    existing = [p for p in f2p_files if p in workspace]
    if existing:
        diff = "".join(deletion_diff(p, workspace[p]) for p in existing)
        subs.append(Submission("delete_failing_tests", {SUBMISSION_PATCH: diff.encode("utf-8", "surrogateescape")},
                               "a diff deleting the test files with the failing tests"))
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
        ]
    return subs
