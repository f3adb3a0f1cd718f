"""CLI conventions: help everywhere, version, exit codes, one-line user errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cli_commands import ALL, LEAVES, registered_count
from rlforge import __version__
from rlforge.cli import app

ALL_COMMANDS = [(path, cmd) for path, cmd, _ in ALL]


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


def test_the_walk_reaches_every_registered_command():
    """The help test below covers every command and group typer has registered, nested
    ones included (a walk that stops at the top level covers far fewer)."""
    assert len(ALL_COMMANDS) == registered_count(app)
    assert len({path for path, _ in ALL_COMMANDS}) == len(ALL_COMMANDS)
    assert any(len(path) > 1 for path in LEAVES)


@pytest.mark.parametrize("path", [p for p, _ in ALL_COMMANDS], ids=" ".join)
def test_every_command_has_help(cli, path):
    result = cli(*path, "--help")
    assert result.exit_code == 0
    cmd = dict(ALL_COMMANDS)[path]
    assert (cmd.help or "").strip(), f"rlforge {' '.join(path)} has no help text"


def test_bad_flag_exits_2(cli):
    result = cli("status", "--no-such-flag")
    assert result.exit_code == 2


def test_user_error_is_one_line_exit_1_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rlforge", "--db", str(tmp_path / "absent.duckdb"),
                           "status"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:") and "does not exist" in proc.stderr


def test_status_reports_counts(cli, db_path):
    from rlforge import db

    db.connect(db_path).close()
    result = cli("status", "--json")
    assert result.exit_code == 0
    assert '"tickets": 0' in result.output
