"""Docs are tested: every command is in the README, every module says why it exists."""

from __future__ import annotations

import ast
import re

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
