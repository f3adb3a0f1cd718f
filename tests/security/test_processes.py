"""Escape corpus: processes that try to outlive the run, on exit, on timeout, or when rlforge dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]


def stragglers(marker: str) -> str:
    """A script starting sleepers (named by `marker`) every way a process can detach."""
    return (f"sleep {marker} & "                                  # background job
            f"setsid sleep {marker} & "                           # new session
            f"sh -c 'sh -c \"exec sleep {marker}\" &' & "        # double fork: orphan of pid 1
            f"nohup sleep {marker} >/dev/null 2>&1 </dev/null & "  # detached from our pipes
            f"/usr/bin/python3 -c 'import os,sys; os.fork() and os._exit(0); os.setsid(); "
            f"os.fork() and os._exit(0); [os.close(f) for f in (0,1,2)]; "
            f"os.execvp(\"sleep\", [\"sleep\", \"{marker}\"])' ; "       # a classic daemon
            "sleep 0.2")


def new_marker() -> str:
    return f"7{uuid.uuid4().int % 10**8}"  # a number: it is sleep's argument


def test_processes_left_running_after_a_normal_exit_are_killed(sh, leftovers):
    marker = new_marker()
    # witness: without the sandbox, killing the process group misses the setsid'd sleepers
    sh("exec >/dev/null 2>&1; " + stragglers(marker) + "; exit 0", mode="none")
    assert len(leftovers(marker)) >= 2
    for pid in leftovers(marker):
        os.kill(pid, signal.SIGKILL)
    marker = new_marker()
    r = sh(stragglers(marker) + "; exit 0")
    assert r.exit_code == 0 and r.duration_sec < 3, r
    assert leftovers(marker) == []


def test_the_whole_tree_is_killed_on_timeout(sh, leftovers):
    marker = new_marker()
    r = sh(stragglers(marker) + f"; sleep {marker}", timeout_sec=1)
    assert r.timed_out and r.duration_sec < 3
    assert leftovers(marker) == []


def test_the_sandbox_dies_with_rlforge(task, leftovers):
    marker = new_marker()
    runner = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
              "from rlforge.sandbox import SandboxSpec, run\n"
              f"run(['sh', '-c', {stragglers(marker) + f'; sleep {marker}'!r}],"
              f" SandboxSpec(workspace={str(task.workspace)!r}, timeout_sec=60))\n")
    parent = subprocess.Popen([sys.executable, "-c", runner])
    try:
        deadline = time.monotonic() + 10
        while len(leftovers(marker)) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(leftovers(marker)) >= 5  # the sandbox is up and running its sleepers
        parent.kill()  # SIGKILL: rlforge gets no chance to clean up
        parent.wait()
        deadline = time.monotonic() + 3
        while leftovers(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert leftovers(marker) == []
    finally:
        parent.kill()
        parent.wait()


def test_the_sandbox_cannot_unhook_itself_from_rlforge(task, leftovers):
    # pid 1 dies with bubblewrap through its parent-death signal; resetting that signal
    # (to nothing, or to one it ignores) would let it outlive a killed rlforge.
    marker = new_marker()
    unhook = ("import ctypes, os, signal\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
              "print(libc.prctl(1, 0, 0, 0, 0), libc.prctl(1, signal.SIGUSR1, 0, 0, 0), flush=True)\n"
              f"os.execvp('sleep', ['sleep', '{marker}'])\n")
    runner = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
              "from rlforge.sandbox import SandboxSpec, run\n"
              f"run(['python3', '-c', {unhook!r}], SandboxSpec(workspace={str(task.workspace)!r},"
              " timeout_sec=60))\n")
    parent = subprocess.Popen([sys.executable, "-c", runner])
    try:
        deadline = time.monotonic() + 10
        while not leftovers(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert leftovers(f"sleep\0{marker}")
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 3
        while leftovers(f"sleep\0{marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert leftovers(f"sleep\0{marker}") == []
    finally:
        parent.kill()
        parent.wait()


def test_a_detached_process_holding_no_pipes_does_not_delay_the_result(sh, leftovers):
    marker = new_marker()
    r = sh(f"nohup sleep {marker} >/dev/null 2>&1 & sleep {marker} & echo started")
    assert r.stdout_text.strip() == "started" and r.duration_sec < 3
    assert leftovers(marker) == []
