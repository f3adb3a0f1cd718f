"""`rlforge run --resume`: a run killed with SIGKILL loses no rollout and runs none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from fault_server import FaultServer
from test_run_support import label_task

RLFORGE = [sys.executable, "-m", "rlforge"]


@pytest.fixture
def fault():
    server = FaultServer().start()
    yield server
    server.stop()


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True) if path.exists() else []


@pytest.mark.slow
def test_sigkill_midway_then_resume_completes_exactly_once(tmp_path, fault, db_path):
    tasks = tmp_path / "tasks"
    for i in range(30):
        label_task(tasks, f"t{i:02d}", "billing")
    planned = {(p.name, s) for p in tasks.iterdir() for s in (0, 1)}
    log = tmp_path / "runs" / "killed" / "rollouts.jsonl"
    proc = subprocess.Popen(
        [*RLFORGE, "run", str(tasks), "--base-url", fault.url, "--model", "ok:0.15",
         "--samples", "2", "--concurrency", "4", "--run-id", "killed", "--quiet"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(lines_of(log)) < 12:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the run wrote too few rollouts"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = lines_of(log)
    complete_before = [line for line in before if line.endswith(b"\n")]
    assert 12 <= len(complete_before) < len(planned), "kill the run midway, not at its end"
    requests_at_kill = fault.requests

    resumed = subprocess.run([*RLFORGE, "run", "--resume", "killed", "--json"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    after = lines_of(log)
    # Nothing stored before the kill was rewritten; what was missing ran once.
    assert after[:len(complete_before)] == complete_before
    records = [json.loads(line) for line in after]
    keys = [(r["task_id"], r["sample"]) for r in records]
    assert len(keys) == len(set(keys)) == len(planned) and set(keys) == planned
    assert report["session"]["rollouts"] == len(planned) - len(complete_before)
    assert (report["rollouts"], report["complete"]) == (len(planned), True)
    assert fault.requests - requests_at_kill == report["session"]["rollouts"]
    # The same seeds as planned: a rollout's seed does not depend on the session.
    from rlforge.run import sample_seed
    assert all(r["seed"] == sample_seed(0, r["task_id"], r["sample"]) for r in records)
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT rollout_id) FROM rollouts "
                           "WHERE run_id = 'killed'").fetchall() == [(60, 60)]
        assert con.execute("SELECT status, rollouts FROM runs").fetchall() == [("finished", 60)]
    finally:
        con.close()


def test_a_line_cut_short_by_a_kill_is_dropped_and_rerun(cli, tmp_path, fault, query):
    tasks = tmp_path / "tasks"
    for name in ("a", "b", "c"):
        label_task(tasks, name, "billing")
    assert cli("run", tasks, "--base-url", fault.url, "--model", "ok", "--run-id", "r",
               "--quiet").exit_code == 0
    log = tmp_path / "runs" / "r" / "rollouts.jsonl"
    lines = lines_of(log)
    # As if the process died while writing the third line, and before loading the table.
    log.write_bytes(b"".join(lines[:2]) + lines[2][:40])
    gone = json.loads(lines[2])["rollout_id"]
    result = cli("run", "--resume", "r", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["session"]["rollouts"] == 1
    new = lines_of(log)
    assert new[:2] == lines[:2] and json.loads(new[2])["rollout_id"] == gone
    assert all(line.endswith(b"\n") for line in new) and len(new) == 3
    assert query("SELECT count(*) FROM rollouts") == [(3,)]


def test_resume_of_a_finished_run_runs_nothing_and_a_busy_run_is_refused(cli, tmp_path, fault):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    assert cli("run", tasks, "--base-url", fault.url, "--model", "ok", "--run-id", "done",
               "--quiet").exit_code == 0
    served = fault.requests
    result = cli("run", "--resume", "done", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["session"]["rollouts"] == 0
    assert fault.requests == served
    # Another process holds the run's lock: refused, nothing touched.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n"), str(tmp_path / "runs" / "done" / "lock")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"locked\n"
        result = cli("run", "--resume", "done")
        assert result.exit_code == 1 and "in use by another rlforge process" in result.stderr
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()


def test_rollouts_reach_the_table_in_batches_while_the_run_goes(tmp_path, fault, db_path):
    """What a kill leaves: the table holds the batches loaded so far, the log holds all."""
    import asyncio

    from rlforge import db
    from rlforge.policy import PolicyClient, PolicyConfig
    from rlforge.run import EnvOptions, Progress, RolloutRunner
    from rlforge.taskdir import discover_tasks
    from rlforge.run.driver import TableSink, drive
    from rlforge.run.schedule import WorkItem
    from rlforge.run.store import RunStore

    tasks_dir = tmp_path / "tasks"
    for i in range(12):
        label_task(tasks_dir, f"t{i:02d}", "billing")
    tasks = discover_tasks(tasks_dir)
    store = RunStore.create(tmp_path / "runs", "batches")
    seen_in_table: list[int] = []

    def on_record(record, fact):
        con = db.connect(db_path)
        try:
            seen_in_table.append(con.execute("SELECT count(*) FROM rollouts").fetchall()[0][0])
        finally:
            con.close()

    async def main():
        sink = TableSink(db_path, interval=0.1)
        config = PolicyConfig(base_url=fault.url, model="ok:0.1", concurrency=2)
        async with PolicyClient(config, api_key="") as client:
            runner = RolloutRunner(client, EnvOptions(), None, tmp_path, run_id="batches",
                                   run_seed=0)
            items = [WorkItem(i, 0, "test.answer", 1.0) for i in range(len(tasks))]
            await drive(tasks, items, runner, store, sink, Progress(), concurrency=2,
                        on_record=on_record)
        return sink

    sink = asyncio.run(main())
    store.close()
    # Loaded while rollouts were still finishing, and the last batch is left to the caller.
    assert 0 < max(seen_in_table[:-1]) < 12 and sink.written >= max(seen_in_table)
    assert sink.written + len(sink.lines) == 12
