"""The test dependencies of a Python repository, found in its dependency files.

Read from the tree at the task's starting commit: `pyproject.toml` (PEP 621 dependencies
and the test extras, PEP 735 dependency groups), `setup.cfg` (install_requires and test
extras), `setup.py` (the literal arguments of its `setup()` call, read by `setup_py`
without running it: install_requires, tests_require and the test extras) and requirements
files (runtime and test ones, following `-r` includes). Test extras are
`test`/`tests`/`testing` (and setup.py's tests_require); `dev` ones are used only when
there are none. What a dependency file declares in a way that is not read (setup.py's
arguments that are not literals) is listed, with why, in `unread`. The
project itself is never installed: its code is the workspace, on the test's path. pytest is
always added. The result is sorted, so the same dependency files give the same prepared
environment (`rlforge.sandbox.prepare_env` keys it by these lines).
"""

from __future__ import annotations

import configparser
import hashlib
import re
import tomllib
from dataclasses import dataclass

from rlforge.tasks.generators.repair import setup_py
from rlforge.tasks.generators.repair.setup_py import SETUP_PY

PYPROJECT, SETUP_CFG = "pyproject.toml", "setup.cfg"
REQUIREMENT_FILES = (
    "requirements.txt", "requirements-test.txt", "requirements_test.txt", "test-requirements.txt",
    "test_requirements.txt", "requirements-tests.txt", "requirements/test.txt",
    "requirements/tests.txt", "tests/requirements.txt", "test/requirements.txt",
)
DEV_REQUIREMENT_FILES = ("requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt",
                         "requirements/dev.txt")
TEST_GROUPS = ("test", "tests", "testing")
DEV_GROUPS = ("dev", "develop", "development")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str | None:
    m = _NAME.match(req)
    return normalize_name(m.group(1)) if m else None


@dataclass(frozen=True)
class Requirements:
    """What the repository needs for its tests, and the files that said so."""

    requirements: tuple[str, ...]
    sources: tuple[str, ...]
    files_sha256: str  # hash of the dependency files read (lineage)
    unread: tuple[str, ...] = ()  # "<file>: <what was not read, and why>"


def _requirements_file(files: dict[str, bytes], path: str, seen: set[str]) -> list[str]:
    if path in seen or path not in files:
        return []
    seen.add(path)
    out = []
    base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    for line in files[path].decode("utf-8", "replace").splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            out += _requirements_file(files, base + line.split(None, 1)[1].strip(), seen)
        elif line.startswith("-") or line in (".",) or line.startswith((".[", "./")):
            continue  # options, constraints, editable or local installs of the project
        else:
            out.append(line)
    return out


def _groups(table: dict, names: tuple[str, ...], all_groups: dict | None = None,
            depth: int = 0) -> list[str]:
    out: list[str] = []
    for name in names:
        for item in table.get(name, []) or []:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and "include-group" in item and all_groups and depth < 5:
                out += _groups(all_groups, (item["include-group"],), all_groups, depth + 1)
    return out


def _setup_cfg_list(value: str) -> list[str]:
    return [v.strip() for v in re.split(r"[\n;]", value) if v.strip() and not v.strip().startswith("#")]


def discover(files: dict[str, bytes]) -> Requirements:
    """The requirements for running the tests of the tree `files` (path -> bytes)."""
    found: list[str] = []
    sources: list[str] = []
    project = None
    if PYPROJECT in files:
        try:
            data = tomllib.loads(files[PYPROJECT].decode("utf-8", "replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        proj = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        project = proj.get("name")
        extras = proj.get("optional-dependencies", {}) or {}
        groups = data.get("dependency-groups", {}) or {}
        got = list(proj.get("dependencies", []) or [])
        test = _groups(extras, TEST_GROUPS) + _groups(groups, TEST_GROUPS, groups)
        got += test or (_groups(extras, DEV_GROUPS) + _groups(groups, DEV_GROUPS, groups))
        if got:
            sources.append(PYPROJECT)
            found += got
    if SETUP_CFG in files:
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(files[SETUP_CFG].decode("utf-8", "replace"))
        except configparser.Error:
            cfg = configparser.ConfigParser()
        project = project or cfg.get("metadata", "name", fallback=None)
        got = _setup_cfg_list(cfg.get("options", "install_requires", fallback=""))
        extras = cfg["options.extras_require"] if cfg.has_section("options.extras_require") else {}
        test = [r for g in TEST_GROUPS if g in extras for r in _setup_cfg_list(extras[g])]
        got += test or [r for g in DEV_GROUPS if g in extras for r in _setup_cfg_list(extras[g])]
        if got:
            sources.append(SETUP_CFG)
            found += got
    unread: list[str] = []
    if SETUP_PY in files:
        declared = setup_py.read(files[SETUP_PY])
        project = project or declared.name
        unread += [f"{SETUP_PY}: {why}" for why in declared.unread]
        test = declared.tests_require + [r for g in TEST_GROUPS for r in declared.extras_require.get(g, [])]
        got = declared.install_requires + (
            test or [r for g in DEV_GROUPS for r in declared.extras_require.get(g, [])])
        if got:
            sources.append(SETUP_PY)
            found += got
    seen: set[str] = set()
    test_files = [p for p in REQUIREMENT_FILES if p in files]
    for path in test_files or [p for p in DEV_REQUIREMENT_FILES if p in files]:
        got = _requirements_file(files, path, seen)
        if got:
            sources.append(path)
            found += got
    own = normalize_name(project) if isinstance(project, str) else None
    unique: dict[str, str] = {}
    for req in found:
        req = req.strip()
        name = requirement_name(req)
        if not req or name is None or name == own:
            continue
        unique.setdefault(req, req)
    if not any(requirement_name(r) == "pytest" for r in unique):
        unique["pytest"] = "pytest"
    h = hashlib.sha256()
    for path in sorted(set(sources) | set(seen)):
        h.update(path.encode() + b"\0" + files[path] + b"\0")
    return Requirements(tuple(sorted(unique, key=lambda r: (requirement_name(r) or "", r))),
                        tuple(sources), h.hexdigest()[:16], tuple(unread))


def default_pythonpath(files: dict[str, bytes]) -> tuple[str, ...]:
    """`src` when the code lives in a src/ layout, else nothing (the tree's root is on the
    path already, as `python -m pytest` runs from it)."""
    if any(p.startswith("src/") and (p.endswith("/__init__.py") or p.count("/") == 1 and p.endswith(".py"))
           for p in files):
        return ("src",)
    return ()
