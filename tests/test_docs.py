"""Docs are tested: every command is in the README, every module says why it exists, and
the names and paths the contributing guide and the architecture table give exist."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from cli_commands import ALL, LEAVES, registered_count
from paths import ROOT
from rlforge.cli import app

README = (ROOT / "README.md").read_text()


def test_readme_starts_with_the_two_setup_commands():
    block = README.split("```", 2)[1]
    lines = [line for line in block.splitlines()[1:] if line.strip()]
    assert [line.split("#")[0].strip() for line in lines] == ["./scripts/demo.sh", "./scripts/test.sh"]
    assert (ROOT / "scripts" / "demo.sh").stat().st_mode & 0o111
    assert (ROOT / ".ci" / "run").read_text().count("./scripts/test.sh") == 1


def test_every_command_appears_in_the_readme():
    """Every command a user runs (groups aside) is named in the README; the walk reaches
    all that typer registered."""
    assert len(ALL) == registered_count(app)
    missing = [" ".join(path) for path in LEAVES if f"rlforge {' '.join(path)}" not in README]
    assert not missing, f"README does not mention: {missing}"


def test_every_module_opens_with_a_docstring():
    undocumented = []
    for path in sorted((ROOT / "rlforge").rglob("*.py")):
        tree = ast.parse(path.read_text())
        if not ast.get_docstring(tree) and path.stat().st_size > 0:
            undocumented.append(str(path.relative_to(ROOT)))
    assert not undocumented, f"modules without a docstring: {undocumented}"


def test_tests_do_not_import_conftest():
    """Two conftest modules exist (tests/ and tests/security/): importing one by name is a coin
    toss that depends on collection order. Shared paths live in tests/paths.py."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
                 if re.search(r"^\s*(from conftest import|import conftest)", p.read_text(), re.M)]
    assert not offenders


# --- names in the docs exist ---------------------------------------------------------------

CONTRIBUTING = (ROOT / "CONTRIBUTING.md").read_text()
ARCHITECTURE = README.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]

_BACKTICKED = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"rlforge(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
_PATH = re.compile(r"(?:rlforge|tests|scripts|benchmarks)/[\w./-]*(?::[A-Za-z_][\w.]*)?")
_FILE_SUFFIXES = {"toml", "duckdb", "json", "jsonl", "md", "txt", "parquet", "html"}


def _entry_point_groups() -> set[str]:
    """The entry-point groups rlforge loads plug-ins from (dotted, but not modules)."""
    return {g for p in (ROOT / "rlforge").rglob("*.py")
            for g in re.findall(r'ENTRY_POINT_GROUP = "([\w.]+)"', p.read_text())}


def _attribute_exists(module: str, attrs: list[str]) -> bool:
    obj = importlib.import_module(module)
    for attr in attrs:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def _resolves(name: str) -> bool:
    """`rlforge.a.b`, `rlforge.a.b.attr` or `rlforge.a.b:attr.sub`: the module exists and
    has the attributes."""
    module, _, tail = name.partition(":")
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        where = ROOT.joinpath(*parts[:i])
        if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
            return _attribute_exists(".".join(parts[:i]),
                                     parts[i:] + (tail.split(".") if tail else []))
    return False


def _path_exists(token: str) -> bool:
    """`rlforge/a/b.py`, a directory, or `rlforge/a/b.py:attr`."""
    path, _, attr = token.partition(":")
    if not (ROOT / path.rstrip("/")).exists():
        return False
    if attr:
        module = ".".join(Path(path).with_suffix("").parts)
        return _attribute_exists(module.removesuffix(".__init__"), attr.split("."))
    return True


def names_in(text: str) -> tuple[list[str], list[str]]:
    """The dotted rlforge names and the repository paths written in backticks in `text`
    (placeholders such as `rlforge/tasks/<source>_<task>.py` left out)."""
    dotted, paths = [], []
    for token in _BACKTICKED.findall(text):
        token = token.strip()
        if "<" in token:
            continue
        if _DOTTED.fullmatch(token) and token.rsplit(".", 1)[-1] not in _FILE_SUFFIXES:
            dotted.append(token)
        elif _PATH.fullmatch(token):
            paths.append(token)
    return dotted, paths


@pytest.mark.parametrize("doc, text", [("CONTRIBUTING.md", CONTRIBUTING),
                                       ("README.md, Architecture", ARCHITECTURE)],
                         ids=["contributing", "architecture"])
def test_every_name_and_path_the_docs_give_exists(doc, text):
    """Recipes and the architecture table name modules, functions and files: when the code
    moves, this fails until the docs move with it."""
    dotted, paths = names_in(text)
    assert dotted and paths
    groups = _entry_point_groups()
    missing = [n for n in dotted if n not in groups and not _resolves(n)]
    missing += [p for p in paths if not _path_exists(p)]
    assert not missing, f"{doc} names what does not exist: {missing}"


def test_the_architecture_table_lists_every_part_of_the_package():
    """Every top-level module and package of rlforge/ has a row, and every row exists."""
    rows = [line.split("|")[2] for line in ARCHITECTURE.splitlines()  # | layer | package |
            if line.startswith("|") and "`" in line.split("|")[2]]
    listed = {name.rstrip("/") for row in rows for name in re.findall(r"`([^`]+)`", row)}
    parts = {p.stem if p.suffix == ".py" else p.name for p in (ROOT / "rlforge").iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())
             and p.name not in ("__init__.py", "__main__.py")}
    assert parts - {n.removesuffix(".py") for n in listed} == set(), "rows missing"
    gone = [n for n in listed if not (ROOT / "rlforge" / n).exists()]
    assert not gone, f"rows for what is not in rlforge/: {gone}"


@pytest.mark.parametrize("text, dotted, paths", [
    ("`rlforge.a.b` and `rlforge/x.py:f`, `rlforge.toml`, `rlforge/tasks/<name>.py`, "
     "`rlforge ingest logs`", ["rlforge.a.b"], ["rlforge/x.py:f"]),
])
def test_the_docs_reader_finds_names_and_paths(text, dotted, paths):
    assert names_in(text) == (dotted, paths)


def test_a_name_that_moved_does_not_resolve():
    assert _resolves("rlforge.run.store.load_rollouts")
    assert _resolves("rlforge.run.store:RunStore.open")
    assert not _resolves("rlforge.ingest.tickets.detect_format")
    assert not _resolves("rlforge.no_such_module")
    assert _path_exists("rlforge/run/store.py:open_run")
    assert not _path_exists("rlforge/ingest/nothing.py")


def _modules_named(text: str) -> list[str]:
    """The rlforge modules a passage names, by path (`rlforge/a/b.py`) or dotted name."""
    dotted, paths = names_in(text)
    found = []
    for p in paths:
        path = p.partition(":")[0]
        if path.startswith("rlforge/") and path.endswith(".py"):
            found.append(".".join(Path(path).with_suffix("").parts).removesuffix(".__init__"))
    for name in dotted:
        parts = name.partition(":")[0].split(".")
        for i in range(len(parts), 0, -1):
            where = ROOT.joinpath(*parts[:i])
            if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
                found.append(".".join(parts[:i]))
                break
    return found


def test_classes_and_constants_a_recipe_names_are_in_its_modules():
    """In CONTRIBUTING.md, a class or constant in backticks (`LogFormatInfo`,
    `NAMED_FORMATS`) is defined in a module the same paragraph names."""
    missing = []
    for passage in CONTRIBUTING.split("\n\n"):
        modules = _modules_named(passage)
        if not modules:
            continue
        for token in _BACKTICKED.findall(passage):
            if re.fullmatch(r"[A-Z][A-Za-z0-9_]+", token) and not any(
                    _attribute_exists(m, [token]) for m in modules):
                missing.append(f"{token} (in none of {', '.join(modules)})")
    assert not missing, f"CONTRIBUTING.md names what its modules do not hold: {missing}"
