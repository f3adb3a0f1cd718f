"""Tearing finished sandbox runs down off the caller's path.

Unmounting a run's tmpfs mounts and removing its cgroups mostly wait for the kernel (RCU
grace periods: 14 ms of rmdir and 4 ms of umount per run, profiled on a loaded machine),
so one thread does it after the run's result is returned, and waits for what is queued
when the process exits.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading

from rlforge.sandbox.cgroups import RunCgroups, SandboxCgroups
from rlforge.sandbox.hostuid import HostUid
from rlforge.sandbox.scratch import Scratch

log = logging.getLogger("rlforge.sandbox")


def _tear_down(scratch: Scratch | None, cgroups: SandboxCgroups | None, cgroup: RunCgroups | None,
               host_uid: HostUid | None) -> None:
    """Unmount, remove the cgroups, hand the uid back (the uid last: until then the run's
    files are still on its mounts)."""
    try:
        if scratch is not None:
            scratch.close()
        if cgroup is not None and cgroups is not None and not cgroups.remove(cgroup):
            log.warning("could not remove cgroup %s", cgroup.dirs())
    finally:
        if host_uid is not None:
            host_uid.release()


class Cleaner:
    """One thread that tears finished runs down, so a run returns as soon as its result is
    known. Waits for what is queued when the process exits (`flush`)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    def put(self, job: tuple) -> None:
        """Queue (scratch, cgroups, run cgroups, host uid) of a finished run."""
        if not any(job):
            return
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="rlforge-sandbox-cleanup",
                                                daemon=True)
                self._thread.start()
                atexit.register(self.flush)
        self._queue.put(job)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            try:
                _tear_down(*job)
            except Exception:  # never lose the thread; sweeps at start-up catch the rest
                log.exception("sandbox clean-up failed")
            with self._lock:
                self._pending -= 1
                self._idle.notify_all()

    def flush(self, timeout_sec: float = 30.0) -> None:
        """Wait until every queued run is torn down."""
        with self._lock:
            self._idle.wait_for(lambda: self._pending == 0, timeout_sec)


cleaner = Cleaner()
