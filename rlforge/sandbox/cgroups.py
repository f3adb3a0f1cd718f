"""A process limit that holds when rlforge runs as root: one pids cgroup per sandboxed run.

RLIMIT_NPROC is enough for a normal user: bubblewrap's fresh user namespace counts only
the sandbox's own processes against it. The kernel ignores RLIMIT_NPROC for host uid 0,
though, and as root the sandbox's uid 65534 maps to host uid 0. So as root, each run gets
a child cgroup of the pids controller with `pids.max` set.

Getting the sandbox into it: moving a running process into a cgroup waits for an RCU grace
period (about 10 ms, more under load). cgroup v1 can hold a single thread, and a thread
moving itself skips that wait, so on v1 the spawning thread steps into the run's cgroup,
starts bubblewrap (born inside), and steps back (`spawning_in`). cgroup v2 has no such
per-thread placement; there the sandbox's first process is moved in (`attach`) while
bubblewrap holds it before the command starts.
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_BASE_NAME = "rlforge"
_counter = itertools.count()
_found: tuple[bool, "PidsCgroups | None"] = (False, None)
_lock = threading.Lock()


def _mounts() -> list[tuple[str, str, str]]:
    """(fstype, mount point, super options) of every cgroup mount in this mount namespace."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            out.append((tail[0], fields[4].replace("\\040", " "), tail[2]))
    return out


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class PidsCgroups:
    """A writable directory of the pids controller; each run gets a child with pids.max."""

    def __init__(self, base: Path, version: int):
        self.base = base
        self.version = version

    @property
    def per_thread(self) -> bool:
        """Whether a thread can step into a cgroup by itself (v1) so its children start there."""
        return self.version == 1

    @classmethod
    def find(cls) -> "PidsCgroups | None":
        """The usable pids hierarchy on this machine, or None (probed once per process)."""
        global _found
        with _lock:
            if not _found[0]:
                _found = (True, cls._probe())
            return _found[1]

    @classmethod
    def _probe(cls) -> "PidsCgroups | None":
        mounts = _mounts()
        candidates: list[tuple[Path, int]] = []
        for fstype, point, opts in mounts:
            if fstype == "cgroup2":
                candidates.insert(0, (Path(point), 2))
            elif "pids" in opts.split(","):
                candidates.append((Path(point), 1))
        for mount, version in candidates:
            try:
                found = cls._prepare(mount, version)
                probe = found.create(8)
                found.remove(probe)
                found._sweep()
                return found
            except OSError:
                continue
        return None

    @classmethod
    def _prepare(cls, mount: Path, version: int) -> "PidsCgroups":
        base = mount / _BASE_NAME
        if version == 2:
            if "pids" not in (mount / "cgroup.controllers").read_text().split():
                raise OSError(errno.ENOTSUP, "pids controller not available", str(mount))
            if "pids" not in (mount / "cgroup.subtree_control").read_text().split():
                _write(mount / "cgroup.subtree_control", "+pids")
        base.mkdir(exist_ok=True)
        if version == 2 and "pids" not in (base / "cgroup.subtree_control").read_text().split():
            _write(base / "cgroup.subtree_control", "+pids")
        return cls(base, version)

    def _sweep(self) -> None:
        """Remove cgroups left by rlforge processes that died before cleaning up."""
        for child in self.base.iterdir():
            pid = child.name.split("-")[0]
            if child.is_dir() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                try:
                    child.rmdir()
                except OSError:
                    pass

    def create(self, limit: int) -> Path:
        """A fresh child cgroup allowing at most `limit` tasks (processes and threads)."""
        path = self.base / f"{os.getpid()}-{next(_counter)}"
        path.mkdir()
        try:
            _write(path / "pids.max", str(limit))
        except OSError:
            path.rmdir()
            raise
        return path

    @contextmanager
    def spawning_in(self, cgroup: Path) -> Iterator[None]:
        """Run the block with the calling thread in `cgroup` (v1 only): processes it starts
        are born there. Writing "0" moves the writer itself, without a grace period."""
        home = self._thread_cgroup()
        _write(cgroup / "tasks", "0")
        try:
            yield
        finally:
            try:
                _write(home / "tasks", "0")
            except OSError:  # our old cgroup vanished: the hierarchy's root always exists
                _write(self.base.parent / "tasks", "0")

    def _thread_cgroup(self) -> Path:
        for line in Path("/proc/thread-self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(","):
                return self.base.parent / path.lstrip("/")
        raise OSError(errno.ENOENT, "this thread is in no pids cgroup")

    @staticmethod
    def attach(cgroup: Path, pid: int) -> None:
        """Move process `pid` into `cgroup`; its future children stay there."""
        _write(cgroup / "cgroup.procs", str(pid))

    @staticmethod
    def kill(cgroup: Path) -> None:
        """SIGKILL every process in `cgroup`."""
        if (cgroup / "cgroup.kill").exists():
            _write(cgroup / "cgroup.kill", "1")
            return
        for pid in (cgroup / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def remove(self, cgroup: Path, wait_sec: float = 2.0) -> bool:
        """Kill what is left in `cgroup` and delete it; False if it would not go away."""
        deadline = time.monotonic() + wait_sec
        while True:
            try:
                cgroup.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return False
                self.kill(cgroup)
                time.sleep(0.005)
