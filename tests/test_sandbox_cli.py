"""`rlforge sandbox check|run|prepare-env` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox


def test_check_passes_here_and_says_so_as_json(cli):
    result = cli("sandbox", "check", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert len(report["checks"]) >= 15 and all(c["ok"] for c in report["checks"])


def test_check_prints_a_table(cli):
    result = cli("sandbox", "check")
    assert result.exit_code == 0
    assert "no network" in result.stdout and "all properties hold" in result.stdout


def test_run_passes_output_and_exit_code_through(cli, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "answer.txt").write_text("42\n")
    result = cli("sandbox", "run", "--workspace", ws, "--env", "GREETING=hi", "--",
                 "sh", "-c", "cat answer.txt; echo $GREETING; echo oops >&2; exit 5")
    assert result.exit_code == 5
    assert result.stdout == "42\nhi\n"
    assert "oops" in result.stderr


def test_run_reports_a_timeout_with_exit_124(cli):
    result = cli("sandbox", "run", "--timeout", "0.3", "--", "sleep", "10")
    assert result.exit_code == 124
    assert "timed out after 0.3s" in result.stderr


def test_run_applies_the_memory_flag(cli):
    code = "bytearray(300 * 1024 * 1024); print('fits')"
    assert cli("sandbox", "run", "--memory", "1024", "--", "python3", "-c", code).stdout == "fits\n"
    result = cli("sandbox", "run", "--memory", "100", "--", "python3", "-c", code)
    assert result.exit_code == 1 and "MemoryError" in result.stderr


def test_run_without_a_sandbox_only_when_asked_and_with_a_warning(cli, monkeypatch):
    result = cli("sandbox", "run", "--sandbox", "none", "--", "sh", "-c", "test -d /root && echo host")
    assert result.stdout == "host\n" and "WITHOUT isolation" in result.stderr
    monkeypatch.setenv("RLFORGE_SANDBOX_MODE", "none")
    assert "WITHOUT isolation" in cli("sandbox", "run", "--", "true").stderr
    assert cli("sandbox", "run", "--sandbox", "docker", "--", "true").exit_code == 1


def test_run_refuses_bad_input(cli, tmp_path):
    result = cli("sandbox", "run", "--workspace", tmp_path / "missing", "--", "true")
    assert result.exit_code == 1 and "not a directory" in result.stderr
    assert cli("sandbox", "run", "--env", "NOEQUALS", "--", "true").exit_code == 2


def test_prepare_env_prints_a_venv_the_sandbox_can_use(cli, shared_cache):
    result = cli("sandbox", "prepare-env")
    assert result.exit_code == 0, result.output
    venv = Path(result.stdout.strip())
    assert venv.parent == shared_cache / "envs"
    run = cli("sandbox", "run", "--venv", venv, "--", "python", "-c", "import sys; print(sys.prefix)")
    assert run.stdout == "/opt/venv\n"


def test_run_reports_the_memory_cgroup_and_the_cpu_flag(cli):
    code = ("import os\nfd = os.memfd_create('x')\n"
            "for _ in range(400):\n    os.write(fd, b'x' * (1 << 20))\nprint('held')")
    result = cli("sandbox", "run", "--memory", "128", "--cpus", "0.5", "--", "python3", "-c", code)
    assert result.exit_code == 137 and "held" not in result.stdout
    assert "out of memory" in result.stderr and "(128 MB)" in result.stderr
