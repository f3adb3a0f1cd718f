"""The import structure the README's architecture section describes, checked.

Every import in rlforge counts — at module level or inside a function. A function-level
import still makes one module need the other; hiding a cycle inside a function does not
remove it. Imports under `if TYPE_CHECKING:` (types only, never run) are left out of the
run-time graph and counted in the type-only one: a module that names another's types
still depends on it, so those must not close a circle either.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import ROOT

PACKAGE = ROOT / "rlforge"

#: Layers that must not reach a backend implementation: they are handed a backend (one
#: of `rlforge.execution.BACKENDS`) and never pick one themselves.
NO_BACKEND_IMPORTS = ("rlforge.run", "rlforge.verify", "rlforge.tasks", "rlforge.sandbox",
                      "rlforge.ingest", "rlforge.config")
BACKEND_IMPLEMENTATIONS = ("rlforge.execution",)

#: What `rlforge.taskdir` may import of rlforge: it sits below every layer that reads tasks.
TASKDIR_MAY_IMPORT = ("rlforge.taskdir", "rlforge.errors", "rlforge.records")
#: The build machinery: what writes task directories. Everyone else reads them through
#: `rlforge.taskdir`.
BUILD_MACHINERY = ("rlforge.tasks.build", "rlforge.tasks.render", "rlforge.tasks.staging")
TASK_READERS = ("rlforge.run", "rlforge.verify", "rlforge.sandbox", "rlforge.execution",
                "rlforge.export", "rlforge.report", "rlforge.harbor", "rlforge.verifiers_env",
                "rlforge.envs")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(tree: ast.AST, name: str, is_package: bool,
                   type_only: bool = False) -> list[str]:
    """Every name the module imports at run time, absolute; with `type_only`, those
    under `if TYPE_CHECKING:` too."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.extend(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """rlforge module -> the rlforge modules it imports (a package's name stands for its
    `__init__`); with `type_only`, counting the imports under `if TYPE_CHECKING:` too.
    `from pkg import name` needs the module `pkg.name` when there is one, else `pkg`
    itself; that Python runs a package's `__init__` before any module in it is not
    counted (every module would then need its own package)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for target in imported_names(ast.parse(path.read_text(encoding="utf-8")), name,
                                     path.name == "__init__.py", type_only):
            while target and target not in files:  # `from pkg import func` -> pkg
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_no_module_of_run_verify_tasks_config_reaches_the_execution_package():
    graph = import_graph(type_only=True)
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() if _under(a, NO_BACKEND_IMPORTS)
                   for b in targets if _under(b, BACKEND_IMPLEMENTATIONS))
    assert not wrong, ("the CLI or rlforge.envs chooses a backend (rlforge.execution.choose) "
                       "and hands it down as a `Backend` argument, typed with the protocol "
                       "under `if TYPE_CHECKING:` at most:\n" + "\n".join(wrong))


def test_rlforge_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_rlforge_has_no_import_cycle_counting_type_only_imports():
    found = cycles(import_graph(type_only=True))
    assert not found, "import cycles through type-only imports:\n" + \
        "\n".join(" <-> ".join(c) for c in found)
def test_taskdir_sits_below_every_reader():
    graph = import_graph()
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() if _under(a, ("rlforge.taskdir",))
                   for b in targets if b.startswith("rlforge") and not _under(b, TASKDIR_MAY_IMPORT))
    assert not wrong, "rlforge.taskdir imports only errors and records of rlforge:\n" + \
        "\n".join(wrong)


def test_verify_imports_nothing_from_tasks():
    graph = import_graph()
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() if _under(a, ("rlforge.verify",))
                   for b in targets if _under(b, ("rlforge.tasks",)))
    assert not wrong, "verify sits below the generators:\n" + "\n".join(wrong)


def test_task_readers_do_not_import_the_build_machinery():
    graph = import_graph()
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() if _under(a, TASK_READERS)
                   for b in targets if _under(b, BUILD_MACHINERY))
    assert not wrong, "read task directories through rlforge.taskdir:\n" + "\n".join(wrong)


#: The layers of rlforge, top first. A module imports only from its own layer or one below
#: (type-only imports included); the longest matching prefix places a module.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry points", ("rlforge.__main__", "rlforge.cli")),
    ("APIs and readers", ("rlforge.envs", "rlforge.harbor", "rlforge.verifiers_env",
                          "rlforge.export", "rlforge.report", "rlforge.forget")),
    ("backends", ("rlforge.execution",)),
    ("runs", ("rlforge.run",)),
    ("the build", ("rlforge.tasks",)),
    ("links and ingest's workflow", ("rlforge.links", "rlforge.ingest.load")),
    ("verifiers", ("rlforge.verify",)),
    ("sources and services", ("rlforge.ingest", "rlforge.sandbox", "rlforge.policy",
                              "rlforge.local_model", "rlforge.hf_server", "rlforge.difficulty",
                              "rlforge.stats")),
    ("records", ("rlforge.taskdir", "rlforge.records", "rlforge.db", "rlforge.config",
                 "rlforge.plugins")),
    # golaunch is standard library only (it is copied alone beside Go test binaries), so
    # the sandbox's seccomp filter can use its BPF assembler from below the verifiers
    ("the base", ("rlforge.errors", "rlforge", "rlforge.verify.standalone.golaunch")),
]


def layer_of(name: str) -> int:
    """The index in LAYERS of the longest prefix that places `name` (`rlforge` itself
    places only the package's `__init__`); -1 for a module no layer names."""
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            placed = name == prefix or (prefix != "rlforge" and name.startswith(prefix + "."))
            if placed and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def test_every_module_has_a_layer():
    assert [m for m in import_graph() if layer_of(m) < 0] == []


def test_no_module_imports_from_a_layer_above_its_own():
    graph = import_graph(type_only=True)
    wrong = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
                   for a, targets in graph.items() for b in targets
                   if layer_of(b) < layer_of(a))
    assert not wrong, "imports up the layers:\n" + "\n".join(wrong)


def test_the_layer_rule_sees_an_upward_import():
    assert layer_of("rlforge.verify.runner") > layer_of("rlforge.tasks.staging")
    assert layer_of("rlforge.ingest.load") < layer_of("rlforge.ingest.tickets")
    assert layer_of("rlforge") == len(LAYERS) - 1
    assert layer_of("rlforge.somewhere_new") == -1
    assert layer_of("rlforge.verify.standalone.golaunch") > layer_of("rlforge.sandbox.seccomp")


def test_golaunch_imports_nothing_of_rlforge():
    """The launcher is copied alone beside the test binaries: the standard library only."""
    assert import_graph()["rlforge.verify.standalone.golaunch"] == set()


def test_the_sandbox_loads_no_verifier_but_the_launcher():
    """Importing the sandbox runs the verify packages' `__init__`s on the way to golaunch:
    they must stay import-free of rlforge, or the sandbox would load the layer above it."""
    code = ("import sys, rlforge.sandbox.seccomp; print(' '.join(sorted(m for m in sys.modules "
            "if m.startswith('rlforge.verify'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert out == ["rlforge.verify", "rlforge.verify.standalone", "rlforge.verify.standalone.golaunch"]


def test_records_module_stands_alone():
    """Export, report and trainers read run records from a module that imports nothing of
    rlforge but the settings' table (for the plan's defaults), and runs through the run
    store, so reading them never drags in the run loop."""
    graph = import_graph()
    assert graph["rlforge.records"] == {"rlforge.config"}
    for reader in ("rlforge.export.rollouts", "rlforge.report.data"):
        assert "rlforge.records" in graph[reader]
        assert "rlforge.run.store" in graph[reader]
        assert "rlforge.run.driver" not in graph[reader]


def test_the_report_reads_runs_from_the_store_not_export():
    """export/ writes trainer datasets and reward files; the report reads runs through
    `rlforge.run.store`, not through an exporter."""
    graph = import_graph()
    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() if _under(a, ("rlforge.report",))
                   for b in targets if _under(b, ("rlforge.export",)))
    assert not wrong, "read runs with rlforge.run.store:\n" + "\n".join(wrong)


@pytest.mark.parametrize("source, expected", [
    ("import a.b\nfrom a import c\n", ["a.b", "a.c"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\nelse:\n    import y\n",
     ["typing.TYPE_CHECKING", "y"]),
    ("def f():\n    from . import sib\n    from .sub import g\n", ["p.sib", "p.sub.g"]),
])
def test_the_import_reader_sees_every_kind_of_import(source, expected):
    assert imported_names(ast.parse(source), "p.m", False) == expected


def test_the_type_only_reader_also_sees_type_checking_imports():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\nelse:\n    import y\n"
    assert imported_names(ast.parse(source), "p.m", False, type_only=True) == \
        ["typing.TYPE_CHECKING", "x", "y"]


def test_cycle_finder_finds_a_cycle_through_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


#: Entry points, which resolve the configuration once and hand typed settings down: the
#: CLI, the Python API (`rlforge.envs`), the Harbor and verifiers adapters (loaded by
#: those tools, with no CLI in front), the resolver itself, and the Ray worker, an actor
#: on another node whose cache directory (unless the driver set one) is that node's own.
LOADS_CONFIG = ("rlforge.cli", "rlforge.envs", "rlforge.harbor", "rlforge.verifiers_env",
                "rlforge.config", "rlforge.execution.ray.worker")


def test_only_entry_points_load_the_configuration():
    """Below the entry points, code takes the settings it is handed (`Config.settings`):
    a module calling `Config.load` would ignore `--config` and the CLI's flags."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if _under(name, LOADS_CONFIG):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "Config"):
                wrong.append(f"{name}:{node.lineno}")
    assert not wrong, "pass typed settings down instead of Config.load():\n" + "\n".join(wrong)
