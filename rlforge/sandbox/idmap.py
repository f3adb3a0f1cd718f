"""Read-only binds the run's uid can read as if it owned them: idmapped mounts.

As root, sandboxes run as an unprivileged host uid, but the directories callers bind
read-only (a task's tests, a prepared venv, a FIFO for results) are root's, often 0700
(`tempfile.mkdtemp`) or 0600. Rather than change their owners or modes on the host, each is
bound through an idmapped mount (`mount_setattr(MOUNT_ATTR_IDMAP)`, Linux 5.12+) that shows
host uid and gid 0 as the run's uid: owner permissions then apply to the sandbox, and the
mount is read-only, so it can read what root could and write nothing (a FIFO there is still
writable: FIFO writes are not file-system writes). Files of other host users keep their
own owners and are reached through their "other" bits.

The mapping is a user namespace with `0 <uid> 1` as its uid and gid maps, made once per
host uid by a short-lived `unshare --user` and kept open as a descriptor. Where the file
system or kernel cannot idmap, `bind` returns False and the caller binds plainly.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

_OPEN_TREE, _MOVE_MOUNT, _MOUNT_SETATTR = 428, 429, 442  # the same on x86_64 and aarch64
_AT_FDCWD = -100
_AT_EMPTY_PATH, _AT_RECURSIVE = 0x1000, 0x8000
_OPEN_TREE_CLONE = 1
_MOVE_MOUNT_F_EMPTY_PATH = 4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
_MOUNT_ATTR_IDMAP = 0x00100000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_lock = threading.Lock()
_userns: dict[int, int] = {}  # host uid -> descriptor of a user namespace mapping 0 onto it
_broken = False  # idmapped mounts failed here once; do not try again


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(rc: int, what: str, path: Path) -> int:
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}", str(path))
    return rc


def _make_userns(uid: int) -> int:
    unshare = shutil.which("unshare")
    if unshare is None:
        raise OSError("unshare (util-linux) not found")
    own = os.readlink("/proc/self/ns/user")
    child = subprocess.Popen([unshare, "--user", "sleep", "30"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={})
    try:
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{child.pid}/ns/user") == own:  # until it has unshared
            if time.monotonic() > deadline or child.poll() is not None:
                raise OSError("unshare --user did not make a user namespace")
            time.sleep(0.001)
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{child.pid}/{name}").write_text(f"0 {uid} 1\n")
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        child.kill()
        child.wait()


def _userns_for(uid: int) -> int:
    with _lock:
        if uid not in _userns:
            _userns[uid] = _make_userns(uid)
        return _userns[uid]


def bind(source: Path, target: Path, uid: int) -> bool:
    """Mount `source` read-only, nosuid, nodev at `target` (an existing empty directory or
    file), with host uid/gid 0 shown as `uid`. False if this host cannot idmap `source`
    (nothing is mounted then)."""
    global _broken
    if _broken:
        return False
    try:
        userns = _userns_for(uid)
    except OSError:
        _broken = True
        return False
    fd = _libc.syscall(_OPEN_TREE, _AT_FDCWD, str(source).encode(),
                       _OPEN_TREE_CLONE | os.O_CLOEXEC | _AT_RECURSIVE)
    _check(fd, "open_tree", source)
    try:
        attr = _MountAttr(_MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID
                          | _MOUNT_ATTR_NODEV, 0, 0, userns)
        if _libc.syscall(_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE,
                         ctypes.byref(attr), ctypes.sizeof(attr)) < 0:
            return False  # e.g. a file system without idmap support below `source`
        _check(_libc.syscall(_MOVE_MOUNT, fd, b"", _AT_FDCWD, str(target).encode(),
                             _MOVE_MOUNT_F_EMPTY_PATH), "move_mount", target)
        return True
    finally:
        os.close(fd)
