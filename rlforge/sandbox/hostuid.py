"""A host uid of its own for each running sandbox: never root, never two sandboxes at once.

As root, bubblewrap's user namespace maps the sandbox's uid onto host uid 0: its files are
root's on the host and the kernel's per-user counts (inotify instances, message queues,
keyrings) are root's, so 128 inotify instances held inside break `inotify_init1` for every
root process. rlforge instead starts bubblewrap itself as an unprivileged host uid taken
from a range (`sandbox.host_uid`, `sandbox.host_uids`), so the sandbox maps onto that uid.

A uid is held with an exclusive `flock` on a file named after it, so several rlforge
processes on the machine never hand out the same uid at once; when all are busy, a run
shares one (still unprivileged). Nothing on the host needs to exist for these uids: no
account, no set-uid helper.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import stat
from pathlib import Path

_counter = itertools.count(os.getpid())


def _lock_dir() -> Path:
    """A root-owned directory only root can write, for the uid lock files."""
    for where in (Path("/run/rlforge/uids"), Path(f"/tmp/rlforge-uids-{os.geteuid()}")):
        try:
            where.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.lstat(where)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
                return where
        except OSError:
            continue
    raise OSError("no private directory for the sandbox uid locks (tried /run and /tmp)")


class HostUid:
    """One host uid held for a run; `release()` hands it back.

    Args:
        base: The first uid of the range.
        count: How many uids the range has.
    """

    def __init__(self, base: int, count: int):
        self.uid = base
        self._fd: int | None = None
        start = next(_counter)
        folder = _lock_dir()
        for i in range(count):
            uid = base + (start + i) % count
            fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        self.uid = base + start % count  # all busy: share one

    def release(self) -> None:
        """Let another run take this uid."""
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the lock
            self._fd = None
