"""A CI pipeline can trust the exit code: work that did nothing, or reached nothing, fails.

Each case here exited 0 before: a run against an endpoint that never answered, a run with
an endpoint and no model name, a ticket export read in the wrong format, a log file whose
every line was quarantined.
"""

from __future__ import annotations

import socket
import subprocess

from paths import SAMPLE_DATA
from test_run_support import label_task


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on return: connections are refused


def test_a_run_that_never_reaches_its_endpoint_fails_and_names_it(cli, tmp_path, monkeypatch):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    label_task(tasks, "b", "login")
    monkeypatch.setenv("RLFORGE_RUN_MAX_RETRIES", "0")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = cli("run", tasks, "--base-url", url, "--model", "m", "--request-timeout", "2")
    assert result.exit_code == 4, result.output
    line = next(x for x in result.stderr.splitlines() if "infrastructure error rate 100.0%" in x)
    assert url in line and "'m'" in line and "first error" in line and "connection" in line


def test_the_default_gate_fails_a_run_mostly_lost_to_the_endpoint(cli, tmp_path, monkeypatch):
    from fault_server import FaultServer

    tasks = tmp_path / "tasks"
    for name in "abcde":
        label_task(tasks, name, "billing")
    monkeypatch.setenv("RLFORGE_RUN_MAX_RETRIES", "0")
    server = FaultServer().start()
    try:  # one rollout in five answered, four lost: 80% infrastructure errors
        result = cli("run", tasks, "--base-url", server.url, "--model", "ok,500,500,500,500",
                     "--concurrency", "1")
    finally:
        server.stop()
    assert result.exit_code == 4, result.output
    assert "infrastructure error rate 80.0% is above --max-infra-error-rate 20.0%" in result.stderr


def test_an_endpoint_without_a_model_name_is_refused(cli, tmp_path):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = cli("run", tasks, "--base-url", url)
    assert result.exit_code == 1
    assert f"--base-url {url} needs --model NAME" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_ticket_export_read_in_the_wrong_format_is_an_error(cli, query):
    result = cli("ingest", "tickets", "--format", "csv",
                 SAMPLE_DATA / "tickets" / "zendesk_export.json")
    assert result.exit_code == 1
    assert "no column holds a ticket's text" in result.stderr and "--format" in result.stderr
    assert query("SELECT count(*) FROM tickets") == [(0,)]


def test_a_log_file_whose_every_line_is_quarantined_is_an_error(cli):
    log = SAMPLE_DATA / "logs" / "pg-main.syslog"
    result = cli("ingest", "logs", "--format", "jsonl", log)
    assert result.exit_code == 1
    assert "nothing loaded" in result.stderr and "quarantined" in result.stderr
    assert "--allow-empty" in result.stderr
    assert cli("ingest", "logs", "--format", "jsonl", "--allow-empty", log).exit_code == 0


def test_reingesting_what_is_already_stored_is_not_empty(cli, tmp_path):
    tickets = SAMPLE_DATA / "tickets" / "tickets.csv"
    assert cli("ingest", "tickets", tickets).exit_code == 0
    assert cli("ingest", "tickets", tickets).exit_code == 0  # every row a duplicate
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    assert cli("ingest", "commits", repo).exit_code == 0
    assert cli("ingest", "commits", repo).exit_code == 0  # every commit already stored


def test_long_work_in_a_pipe_prints_status_lines(cli, tmp_path, monkeypatch):
    """In a pipe (a CI log) build-tasks and validate say what they are doing when a stage
    starts and at a steady interval; before, build-tasks printed nothing until it ended."""
    import rlforge.cli.common as common

    monkeypatch.setattr(common, "STATUS_EVERY", 0.2)
    assert cli("ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv").exit_code == 0
    result = cli("build-tasks", "--out", tmp_path / "tasks", "--limit", "6",
                 "--generators", "tickets.triage,tickets.reply")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert any(x.startswith("build-tasks: generating tickets.reply ") for x in lines)
    assert any(x.startswith("build-tasks: validating ") and "/6" in x for x in lines)
    assert "None" not in result.stderr
    result = cli("validate", tmp_path / "tasks")
    assert result.exit_code == 0
    status = [x for x in result.stderr.splitlines() if x.startswith("validate: validating ")]
    assert len(status) >= 2, result.stderr  # the start, then at least one 0.2 s tick


def test_status_can_look_while_a_build_validates(tmp_path):
    """build-tasks held the database for its whole run: `rlforge status` could not look.
    Now it lets go while tasks are written and validated, and takes it back to record."""
    import json
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("RLFORGE_")}
    env.update(RLFORGE_DB=str(tmp_path / "rl.duckdb"), HOME=str(tmp_path))
    rl = [sys.executable, "-m", "rlforge"]

    def status() -> subprocess.CompletedProcess:
        return subprocess.run([*rl, "status", "--json"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    subprocess.run([*rl, "ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv"],
                   env=env, cwd=tmp_path, check=True, capture_output=True)
    build = subprocess.Popen([*rl, "build-tasks", "--out", tmp_path / "tasks", "--limit", "100",
                              "--generators", "tickets.triage,tickets.reply"], env=env,
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    looked = []
    try:
        for line in build.stderr:
            if line.startswith("build-tasks: validating"):
                break
        while build.poll() is None:
            result = status()
            looked.append((result.returncode, build.poll() is None))
    finally:
        out, _ = build.communicate(timeout=600)
    assert build.returncode == 0, out
    assert (0, True) in looked, looked  # status answered while the build was still on
    assert json.loads(status().stdout)["tables"]["tasks"] == 100
