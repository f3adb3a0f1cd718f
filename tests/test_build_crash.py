"""`build-tasks` survives a crash: real builds in a subprocess, killed with SIGKILL or SIGINT.

After every kill: no task directory in `--out` is half-written, a previous build is still
there byte for byte (and validates), and the rerun of the same command, without --force,
ends with exactly the tree an uninterrupted build writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paths import ROOT
from rlforge.tasks.staging import BuildArea, find_incomplete_tasks, work_area
from test_build_tasks import ticket_db, tree_digest  # noqa: F401  (a fixture, a helper)

GENERATORS = ("--generators", "tickets.triage,tickets.reply")

# Runs `rlforge` with SIGKILL sent to itself at one exact point: before or after the N-th
# call of a function of rlforge.tasks (e.g. after:staging.BuildArea.promote:5).
KILLER = """
import os, signal, sys
import rlforge.tasks.build, rlforge.tasks.staging
when, target, count = os.environ["KILL_AT"].split(":")
*owner_path, name = target.split(".")
owner = rlforge.tasks
for part in owner_path:
    owner = getattr(owner, part)
original = getattr(owner, name)
calls = [0]
def wrapper(*args, **kwargs):
    calls[0] += 1
    if when == "before" and calls[0] == int(count):
        os.kill(os.getpid(), signal.SIGKILL)
    result = original(*args, **kwargs)
    if when == "after" and calls[0] == int(count):
        os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(owner, name, wrapper)
from rlforge.cli import main
sys.argv[0] = "rlforge"
main()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def rlforge(*args, kill_at: str | None = None, **popen) -> subprocess.Popen:
    """A real `rlforge` process (optionally one that kills itself at `kill_at`)."""
    env = _env()
    if kill_at:
        env["KILL_AT"] = kill_at
        cmd = [sys.executable, "-c", KILLER]
    else:
        cmd = [sys.executable, "-m", "rlforge"]
    return subprocess.Popen([*cmd, *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def build(out: Path, *args, kill_at: str | None = None) -> subprocess.CompletedProcess:
    proc = rlforge("build-tasks", "--out", out, "--json", *GENERATORS, *args, kill_at=kill_at)
    stdout, stderr = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def assert_no_half_task(out: Path) -> None:
    """Every folder in out is a whole task: the one protocol check, and nothing staged."""
    if not out.exists():
        return
    assert find_incomplete_tasks(out) == []
    for d in (p for p in out.iterdir() if p.is_dir()):
        assert (d / "task.toml").is_file() and (d / "tests" / "test.sh").is_file(), d
        assert not d.name.startswith("."), d


def staged_count(out: Path) -> int:
    """Tasks a running build has finished (renamed into its staged tree)."""
    try:
        return len(os.listdir(work_area(out) / "tree"))
    except FileNotFoundError:
        return 0


def manifest_names(out: Path) -> list[str]:
    import polars as pl

    return sorted(pl.read_parquet(out / "manifest.parquet")["path"].to_list())


@pytest.fixture
def reference(ticket_db, tmp_path):  # noqa: F811
    """The tree an uninterrupted --no-validate build writes (seed 1, 24 tasks)."""
    ref = tmp_path / "reference"
    done = build(ref, "--limit", "24", "--seed", "1", "--no-validate")
    assert done.returncode == 0, done.stderr
    digest = tree_digest(ref)
    assert sum(1 for p in ref.iterdir() if p.is_dir()) == 24
    return digest


# (where the build dies, how many tasks the rerun then keeps)
KILL_POINTS = [
    ("after:staging.BuildArea.open:1", 0),       # the marker is written, no task yet
    ("after:staging.BuildArea.promote:1", 1),    # the first task is whole
    ("after:staging.BuildArea.stage:12", 11),    # mid-way: a task written, not yet renamed in
    ("after:staging.BuildArea.promote:12", 12),  # mid-way
    ("after:build._write_manifest:1", 24),       # final step: manifest staged, not published
    ("after:staging.BuildArea.publish:1", 24),   # final step: published, tasks table not written
    ("after:build._record:1", 24),               # final step: recorded, work area still there
]


@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
@pytest.mark.parametrize("kill_at,keeps", KILL_POINTS, ids=[k for k, _ in KILL_POINTS])
def test_a_killed_build_leaves_no_half_task_and_the_rerun_finishes_it(
        ticket_db, tmp_path, reference, kill_at, keeps, existing, query):  # noqa: F811
    out = tmp_path / "tasks"
    before = None
    if existing:  # a good previous build, of other tasks (another seed, fewer)
        assert build(out, "--limit", "10", "--seed", "2", "--no-validate").returncode == 0
        before = tree_digest(out)
    killed = build(out, "--limit", "24", "--seed", "1", "--no-validate", kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert_no_half_task(out)
    if kill_at.endswith(("publish:1", "_record:1")):
        assert tree_digest(out) == reference  # the new build replaced the old in one step
    elif existing:
        assert tree_digest(out) == before  # the previous build, byte for byte, manifest too
        assert manifest_names(out) == sorted(p.name for p in out.iterdir() if p.is_dir())
    else:
        assert not out.exists()
    assert work_area(out).is_dir()  # the marker a rerun recognises
    rerun = build(out, "--limit", "24", "--seed", "1", "--no-validate")  # no --force
    assert rerun.returncode == 0, rerun.stderr
    assert tree_digest(out) == reference
    assert not work_area(out).exists()
    report = json.loads(rerun.stdout)
    assert report["emitted"] == 24
    assert report["resumed"] == keeps  # kept, not written again
    rows = query("SELECT count(*), count(DISTINCT build_id) FROM tasks WHERE out_dir = ?",
                 [str(out.resolve())])
    assert rows == [(24, 1)]


def test_a_validated_build_killed_mid_way_resumes_faster_and_the_old_build_validates(
        ticket_db, tmp_path, capsys):  # noqa: F811
    args = ("--limit", "8", "--seed", "1")
    ref = tmp_path / "reference"
    started = time.perf_counter()
    full = build(ref, *args)
    full_seconds = time.perf_counter() - started
    assert full.returncode == 0, full.stderr
    assert json.loads(full.stdout)["emitted"] >= 6
    out = tmp_path / "tasks"
    assert build(out, "--limit", "3", "--seed", "2").returncode == 0
    before = tree_digest(out)
    # SIGKILL by the clock once half the tasks are proven: whatever is in flight then.
    proc = rlforge("build-tasks", "--out", out, "--json", *GENERATORS, *args)
    while proc.poll() is None:
        if staged_count(out) >= 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert_no_half_task(out)
    assert tree_digest(out) == before
    checked = rlforge("validate", out, "--json")
    stdout, stderr = checked.communicate(timeout=600)
    assert checked.returncode == 0, stderr
    assert json.loads(stdout)["passed"] == 3
    started = time.perf_counter()
    rerun = build(out, *args)
    rerun_seconds = time.perf_counter() - started
    assert rerun.returncode == 0, rerun.stderr
    assert tree_digest(out) == tree_digest(ref)
    resumed = json.loads(rerun.stdout)["resumed"]
    assert resumed >= 4
    with capsys.disabled():
        print(f"\nvalidated build of 8: full {full_seconds:.2f}s, rerun after a kill with "
              f"{resumed} kept {rerun_seconds:.2f}s")
    assert rerun_seconds < full_seconds


def test_ctrl_c_exits_130_leaves_no_temporaries_and_the_rerun_finishes(
        ticket_db, tmp_path):  # noqa: F811
    args = ("--limit", "6", "--seed", "1")
    out = tmp_path / "tasks"
    proc = rlforge("build-tasks", "--out", out, *GENERATORS, *args, start_new_session=True)
    while proc.poll() is None:
        if staged_count(out) >= 2:
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
            break
        time.sleep(0.02)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "run the same command again" in stderr
    assert not out.exists()
    area = work_area(out)
    assert not (area / "tmp").exists()  # no temporaries
    kept = [p for p in (area / "tree").iterdir()]
    assert len(kept) >= 2 and all((p / "task.toml").is_file() for p in kept)
    rerun = build(out, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["resumed"] >= 2
    assert not area.exists()


def test_validate_and_run_refuse_a_task_that_is_not_whole(cli, ticket_db, tmp_path):  # noqa: F811
    out = tmp_path / "tasks"
    assert cli("build-tasks", "--out", out, "--generators", "tickets.triage", "--limit", "2",
               "--no-validate").exit_code == 0
    task = next(p for p in out.iterdir() if p.is_dir())
    cut = out / "tickets-triage-000000000000"  # what an older rlforge's crash left
    (cut / "tests").mkdir(parents=True)
    (cut / "tests" / "reference.json").write_text("{}")
    for command in (("validate", out), ("run", out, "--base-url", "http://127.0.0.1:9/v1",
                                        "--model", "m", "--runs-dir", tmp_path / "runs")):
        result = cli(*command)
        assert result.exit_code == 1, result.output
        assert "tickets-triage-000000000000: has tests but no task.toml" in result.output
    assert not (tmp_path / "runs").exists()
    # A task inside a build's work area is not published yet, whole or not.
    staged = work_area(out) / "tree" / task.name
    staged.parent.mkdir(parents=True)
    os.rename(task, staged)
    result = cli("validate", staged)
    assert result.exit_code == 1 and "work area of an unfinished build-tasks" in result.output


def test_another_build_running_into_the_same_directory_is_refused(
        ticket_db, tmp_path):  # noqa: F811
    out = tmp_path / "tasks"
    running = BuildArea(out, validation=None)  # this process is a build writing there
    running.open(force=False)
    try:
        second = build(out, "--limit", "4", "--seed", "1", "--no-validate")
        assert second.returncode == 1
        assert "another build-tasks is writing" in second.stderr
        assert (work_area(out) / "build.json").is_file()  # the running build's, untouched
    finally:
        running.abandon()  # it stops: nothing staged, so its work area goes
    assert not work_area(out).exists()
    assert build(out, "--limit", "4", "--seed", "1", "--no-validate").returncode == 0
    assert len(manifest_names(out)) == 4
