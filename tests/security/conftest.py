"""Fixtures for the escape corpus: a task laid out as Harbor expects, and host-side witnesses.

Each witness sits on the host, outside the sandbox, where an escape would show: a TCP
server on 127.0.0.1 that records connections, a secret file standing in for /root, an API
key in rlforge's own environment, a process-table search for anything left running.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from host_processes import host_pids_with
from rlforge.sandbox import SandboxSpec, ensure_available

PY = "/usr/bin/python3"


@pytest.fixture(scope="session", autouse=True)
def bubblewrap_works():
    """The corpus needs real bubblewrap; without it every case would be meaningless."""
    ensure_available()


@dataclass
class Task:
    root: Path
    workspace: Path
    tests: Path
    logs: Path
    secret: Path  # a host file outside every bind: stands in for /root/.ssh, the company's data

    def spec(self, **kw) -> SandboxSpec:
        kw.setdefault("timeout_sec", 10)
        return SandboxSpec(workspace=self.workspace, tests=self.tests, logs=self.logs, **kw)


@pytest.fixture
def task(tmp_path) -> Task:
    root = tmp_path / "task"
    workspace, tests, logs = root / "app", root / "tests", root / "logs"
    for d in (workspace, tests, logs):
        d.mkdir(parents=True)
    (tests / "test.sh").write_text("#!/bin/sh\ngrep -q fixed /app/answer.txt\n")
    (workspace / "answer.txt").write_text("broken\n")
    secrets = tmp_path / "host-home"
    secrets.mkdir()
    secret = secrets / "id_rsa"
    secret.write_text("-----BEGIN HOST SECRET-----\n")
    return Task(root, workspace, tests, logs, secret)


class Listener:
    """A TCP server on the host's loopback that counts every connection it accepts."""

    def __init__(self, family: int = socket.AF_INET, host: str = "127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.host, self.port = host, self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    """A TCP server on the host's 127.0.0.1."""
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def make_listener():
    """Make more listeners, e.g. make_listener(socket.AF_INET6, "::1"); all closed after."""
    made = []

    def make(family: int, host: str) -> Listener:
        made.append(Listener(family, host))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def leftovers():
    """host_pids_with(marker) as a fixture; kills what it finds after the test."""
    markers = []

    def find(marker: str) -> list[int]:
        markers.append(marker)
        return host_pids_with(marker)

    yield find
    for marker in markers:
        for pid in host_pids_with(marker):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


@pytest.fixture
def sh(task):
    """Run a shell script in the task's sandbox: sh("echo hi", timeout_sec=1)."""
    from rlforge.sandbox import run

    return lambda script, **kw: run(["/bin/sh", "-c", script], task.spec(**kw))


@pytest.fixture
def py(task):
    """Run Python code in the task's sandbox on the system interpreter."""
    from rlforge.sandbox import run

    return lambda code, **kw: run([PY, "-c", code], task.spec(**kw))
