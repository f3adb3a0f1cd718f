"""CLI conventions: help everywhere, version, exit codes, one-line user errors."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
import typer

from rlforge import __version__
from rlforge.cli import app


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        yield prefix + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))


ALL_COMMANDS = list(_commands(typer.main.get_command(app)))


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


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
