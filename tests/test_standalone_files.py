"""The verifier's files (`rlforge/verify/standalone/`): what a task carries runs on its own.

Each module imports its siblings twice, relatively (inside rlforge) and by their copied
names (in a task's tests/): both must name the same modules, with nothing but the standard
library besides, and `plugin`, copied alone into the test process, no sibling at all. The
files a task carries import with nothing else on the path, and never rlforge.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from rlforge.verify import standalone

MODULES = sorted(p.stem for p in standalone.HERE.glob("*.py") if p.stem != "__init__")


def _imports(module: str) -> tuple[set[str], set[str], set[str]]:
    """(siblings imported relatively, `rlforge_*` names imported, other top-level modules)."""
    relative, plain, other = set(), set(), set()
    for node in ast.walk(ast.parse((standalone.HERE / f"{module}.py").read_bytes())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            relative.update([node.module] if node.module else [a.name for a in node.names])
            continue
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in (n.split(".")[0] for n in names):
            (plain if name.startswith(standalone.PREFIX) else other).add(name)
    return relative, plain, other


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_the_same_siblings_in_rlforge_and_in_a_task(module):
    relative, plain, other = _imports(module)
    assert plain == {standalone.copied_name(m).removesuffix(".py") for m in relative}
    assert other <= set(sys.stdlib_module_names) | {"__future__"}, other


def test_the_plugin_imports_no_sibling():
    assert _imports("plugin")[:2] == (set(), set())


@pytest.mark.parametrize("kind,entry", [("answer", "verify"), ("repair", "repair")])
def test_a_tasks_files_import_on_their_own(tmp_path, kind, entry):
    """The entry, loaded as test.sh loads it (python -I, from another directory), finds
    every sibling it needs beside it, and imports no rlforge."""
    tests = tmp_path / "tests"
    tests.mkdir()
    files = standalone.task_files(kind)
    assert standalone.copied_name(entry) in files
    for name, data in files.items():
        (tests / name).write_bytes(data)
    probe = ("import json, runpy, sys; runpy.run_path(sys.argv[1], run_name='probe'); "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rlforge'))))")
    out = subprocess.run([sys.executable, "-I", "-c", probe, str(tests / standalone.copied_name(entry))],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out)
    run_by_path = (standalone.copied_name(entry), standalone.copied_name(standalone.LOADER))
    assert loaded == sorted(n.removesuffix(".py") for n in files if n not in run_by_path)


@pytest.mark.parametrize("kind, entry", [("answer", "verify"), ("repair", "repair")])
def test_nothing_planted_beside_the_entry_stands_in_for_a_module(tmp_path, kind, entry):
    """A policy that wrote into tests/ before the tests were copied in (one container for
    agent and verifier) could leave a `json.py` there, or bytecode for a sibling in
    `__pycache__`, which Python takes without checking it against the source. The entry
    loads neither: its siblings come from their source, and its directory is off the path."""
    tests = tmp_path / "tests"
    (tests / "__pycache__").mkdir(parents=True)
    files = standalone.task_files(kind)
    for name, data in files.items():
        (tests / name).write_bytes(data)
    marker = tmp_path / "planted-ran"
    forged = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for stdlib in ("json", "typing", "tempfile", "shutil", "signal", "subprocess", "re"):
        (tests / f"{stdlib}.py").write_text(forged)
    source = tmp_path / "forged.py"
    source.write_text(forged)
    for name in files:  # bytecode of the forgery under every sibling's name
        module = name.removesuffix(".py")
        py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(tests / name)),
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        assert Path(importlib.util.cache_from_source(str(tests / name))).is_file(), module
    probe = ("import json, runpy, sys; runpy.run_path(sys.argv[1], run_name='probe'); "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rlforge'))))")
    ran = subprocess.run([sys.executable, "-I", "-c", probe,
                          str(tests / standalone.copied_name(entry))],
                         cwd=tmp_path, capture_output=True, text=True)
    assert not marker.exists(), f"planted modules ran: {marker.read_text().split()}"
    assert ran.returncode == 0, ran.stderr
    # the control: with tests/ first on the path, as before, the forgeries are what loads
    control = ("import sys; sys.path.insert(0, sys.argv[1]); import rlforge_rewards, json")
    subprocess.run([sys.executable, "-I", "-c", control, str(tests)], cwd=tmp_path, check=True)
    assert set(marker.read_text().split()) == {"rlforge_rewards", "json"}


def test_every_kind_carries_only_what_its_entry_imports():
    assert set(standalone.task_files("repair")) == {
        standalone.copied_name(m) for m in ("repair", "entry", "rewards", "policy_code", "patch",
                                            "protect", "testrun", "plugin", "asserts", "canaries",
                                            "variants", "repairscore", "siblings", "callers")}
    assert set(standalone.task_files("repair-go")) == {
        standalone.copied_name(m) for m in ("gorepair", "gocanaries", "gosource", "entry", "rewards", "policy_code", "patch",
                                            "protect", "gotest", "golaunch", "goreach", "repairscore",
                                            "siblings")}
    for kind in ("answer", "reply", "script", "some.plugin.kind"):
        assert set(standalone.task_files(kind)) == {
            standalone.copied_name(m) for m in ("verify", "entry", "rewards", "policy_code",
                                                "answers", "replies", "script", "siblings")}
