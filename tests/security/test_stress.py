"""Eight sandboxes of bombs at once for 20 s: the host and rlforge itself stay usable.

Each sandbox runs a memory bomb (memfds and forked children writing memory until the
kernel kills them, again and again), a disk and inode bomb (files in /app, /tmp and
/dev/shm until ENOSPC, then empty files until ENOSPC) and 32 busy processes. Meanwhile the
test samples the host every 100 ms: available memory, a write and an inotify instance and
a few descriptors of its own (any ENOSPC, EMFILE or ENFILE is a failure), and its own RSS.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import threading
from pathlib import Path

import pytest

from rlforge.sandbox import SandboxPool, SandboxSpec

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]  # 20 s of bombs: not in the fast subset

MEMORY_BOMB = """
import os, time
kids = set()
while True:  # four children of 200 MB of memfd each, started again as the kernel kills them
    while len(kids) < 4:
        pid = os.fork()
        if pid == 0:
            try:
                fd = os.memfd_create("bomb")
                for _ in range(200):
                    os.write(fd, b"m" * (1 << 20))
                time.sleep(30)
            finally:
                os._exit(0)
        kids.add(pid)
    kids.discard(os.wait()[0])
"""
DISK_BOMB = """
import itertools, os
for d in itertools.cycle(("/app", "/tmp", "/dev/shm")):
    try:
        with open(f"{d}/big{os.getpid()}", "ab") as f:
            while True:
                f.write(b"d" * (1 << 20))
    except OSError:
        pass
    try:
        for n in itertools.count():
            open(f"{d}/i{n}", "w").close()
    except OSError:
        pass
"""
# 32 busy processes, niced so that the bombs get the sandbox's CPU quota first
BOMB = ("for i in $(seq 32); do nice -n 19 sh -c 'while :; do :; done' & done; "
        f"python3 -c '{MEMORY_BOMB}' & python3 -c '{DISK_BOMB}' & wait")


def _mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise KeyError("MemAvailable")


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


class _HostWatch:
    """What the host sees while the bombs go off."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.start_available = self.min_available = _mem_available()
        # In a whole test session this process already holds what earlier tests left (the
        # security corpus' task builds, say): what the bombs may cost is measured from here.
        self.start_rss = self.max_rss = _rss()
        self.errors: list[str] = []
        self.samples = 0
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _probe(self) -> None:
        try:
            probe = self.scratch / "probe"
            probe.write_bytes(b"p" * (1 << 20))
            probe.unlink()
            fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(32)]
            for fd in fds:
                os.close(fd)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EMFILE, errno.ENFILE):
                self.errors.append(f"{errno.errorcode[exc.errno]}: {exc}")
        fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if fd < 0:
            self.errors.append(f"inotify_init1: {errno.errorcode.get(ctypes.get_errno())}")
        else:
            os.close(fd)

    def _watch(self) -> None:
        while not self._stop.wait(0.1):
            self.min_available = min(self.min_available, _mem_available())
            self.max_rss = max(self.max_rss, _rss())
            self._probe()
            self.samples += 1

    def stop(self) -> "_HostWatch":
        self._stop.set()
        self._thread.join()
        return self


@pytest.mark.skipif(os.geteuid() != 0, reason="the cgroups and capped file systems are root's")
def test_eight_sandboxes_of_bombs_for_20_seconds(tmp_path):
    workspaces = [tmp_path / f"ws{i}" for i in range(8)]
    for ws in workspaces:
        ws.mkdir()
        (ws / "answer.txt").write_text("broken\n")
    specs = [SandboxSpec(workspace=ws, timeout_sec=20, memory_mb=512, cpus=0.25, workspace_mb=128,
                         workspace_inodes=20_000, copy_files=1_000) for ws in workspaces]
    host = tmp_path / "host"
    host.mkdir()

    async def bombs():
        async with SandboxPool(workers=8) as pool:
            return await asyncio.gather(*(pool.run(["sh", "-c", BOMB], spec) for spec in specs))

    watch = _HostWatch(host)
    try:
        results = asyncio.run(bombs())
    finally:
        watch.stop()
    print(f"available memory {watch.start_available >> 20} MB at start, lowest "
          f"{watch.min_available >> 20} MB; rlforge RSS {watch.start_rss >> 20} MB at start, at most "
          f"{watch.max_rss >> 20} MB; "
          f"{watch.samples} host probes, errors {watch.errors}; OOM kills in "
          f"{sum(r.oom_killed for r in results)} of 8; peaks {[r.memory_peak_mb for r in results]}")
    assert all(r.timed_out and r.failure is None for r in results), results
    # the bombs went off: each sandbox hit its memory limit and filled /app
    assert all(r.oom_killed and r.memory_peak_mb <= 512 for r in results), results
    assert all(r.submission_too_large for r in results), [r.notes for r in results]
    assert watch.samples >= 100
    assert watch.min_available > watch.start_available / 2, (watch.min_available, watch.start_available)
    assert watch.errors == []
    grew = watch.max_rss - watch.start_rss
    assert grew < 300 << 20, (f"rlforge's own RSS grew by {grew >> 20} MB "
                              f"({watch.start_rss >> 20} -> {watch.max_rss >> 20} MB)")
    for ws in workspaces:  # what came back is within the copy-out caps
        assert sum(1 for _ in ws.rglob("*")) <= 1_001
        assert all(p.stat().st_size <= 16 << 20 for p in ws.rglob("*") if p.is_file())
