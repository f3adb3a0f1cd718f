"""Every third-party module rlforge, its tests and its benchmarks import is declared in
pyproject.toml, so a clean install of `.[dev,bench]` has it (not only through a
package that happens to depend on it today); and constraints.txt pins versions inside the
declared ranges."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CHECKED = ("rlforge", "tests", "benchmarks", "sample_data", "examples")


def _requirements() -> list[Requirement]:
    project = PYPROJECT["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if canonicalize_name(r.name) != "rlforge"]


def _local_modules() -> set[str]:
    """Modules that are files of this repository (test helpers, scripts run as __main__).
    rlforge's standalone verifier files import each other under the `rlforge_*` names they
    are copied into a task's tests/ with."""
    names = {"rlforge"}
    for folder in CHECKED:
        for path in (ROOT / folder).rglob("*.py"):
            names.add(path.stem)
            names.update(p.name for p in path.relative_to(ROOT).parents if p.name)
    return names


def _imported_modules() -> dict[str, set[str]]:
    """Top-level module name -> the files that import it (absolute imports only)."""
    found: dict[str, set[str]] = {}
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


#: Modules imported only by files that run in .venv-harbor (Python >= 3.12), not installed
#: in rlforge's own venv: the distribution that must be declared for each.
OTHER_VENV = {"harbor": "harbor", "inspect_ai": "inspect-ai", "verifiers": "verifiers"}


def test_every_imported_module_is_declared():
    declared = {canonicalize_name(r.name) for r in _requirements()}
    providers = importlib.metadata.packages_distributions()
    local = _local_modules()
    undeclared = {}
    for module, files in sorted(_imported_modules().items()):
        if (module in sys.stdlib_module_names or module in local or module == "__future__"
                or module.startswith("rlforge_")):
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists and module in OTHER_VENV:  # imported only where that venv runs it
            dists = {OTHER_VENV[module]}
        if not dists & declared:
            undeclared[module] = (sorted(dists) or ["not installed"], sorted(files)[:3])
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_constraints_pin_versions_inside_the_declared_ranges():
    pins = {}
    # .venv-harbor's and .venv-verifiers' clients are pinned in constraints-harbor.txt and
    # constraints-verifiers.txt
    for pinned in ("constraints.txt", "constraints-harbor.txt", "constraints-verifiers.txt"):
        for line in (ROOT / pinned).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                name, _, version = re.split(r"(==)", line, maxsplit=1)
                pins.setdefault(canonicalize_name(name.split("[")[0]), version.strip())
    reqs = _requirements()
    unpinned = sorted({r.name for r in reqs if canonicalize_name(r.name) not in pins})
    assert not unpinned, f"declared but not pinned in constraints.txt: {unpinned}"
    outside = [f"{r.name}{r.specifier} vs {pins[canonicalize_name(r.name)]}" for r in reqs
               if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert not outside, f"constraints.txt pins outside the declared ranges: {outside}"
