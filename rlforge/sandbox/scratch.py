"""Capped file systems for everything a sandbox may write, copied in before and out after.

A bind mount of a host directory lets sandboxed code fill the host's disk (2 GB in 8 s,
then 100,000 files in 9 s; `RLIMIT_FSIZE` caps only each file), and bubblewrap's own
`--tmpfs` takes a size but no inode cap (400,000 empty files cost 400 MB of kernel memory
while `df` showed nothing). So, as root, each run gets tmpfs mounts on the host, made here
with `size=` and `nr_inodes=`, `nosuid,nodev`, owned by the run's host uid:

* one for the writable directories (workspace, logs, writable tests), `workspace_mb` and
  `workspace_inodes` for all of them together: the host directories are copied in before
  the run and back out after it (`copy_out`), so the host directory ends as the sandbox
  left it, within the copy-out caps, and hitting a cap inside is ENOSPC, nothing more;
* one each for `/tmp` and `/dev/shm`, `tmp_mb` and `tmp_inodes` each;
* and a read-only bind, below the run's directory, of each read-only host directory
  (`bind`, idmapped where possible), which the run's uid can reach whatever the modes of
  the directories above it.

The run's directory (`RUNTIME/<pid>-<n>`, root:run-uid 0710) sits on a private mount point,
so none of this propagates to other mount namespaces.

Bound into the sandbox from these mounts, the writable directories appear in
`/proc/self/mountinfo` as paths inside a tmpfs, not as the host paths of the scratch
directories. Copying back never follows a link on either side: every path is opened
relative to a directory descriptor with O_NOFOLLOW, symlinks and FIFOs are recreated as
such, sockets and devices are left out, and set-uid, set-gid and sticky bits are dropped.
A file the copy-in wrote and the sandbox did not touch (same inode, same ctime, which no
unprivileged process can set) is not copied back, and only what the copy-in wrote is ever
deleted on the host: two sandboxes sharing a directory each bring back their own changes.
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlforge.errors import SubmissionTooLarge
from rlforge.sandbox.files import MAX_DEPTH
from rlforge.sandbox import idmap
from rlforge.sandbox.cgroups import pid_gone
from rlforge.sandbox.files import CopyLimits

RUNTIME = Path("/run/rlforge/scratch")
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC = 1, 2, 4, 32, 4096, 16384
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PERM_BITS = 0o777  # what is kept of a mode: no set-uid, set-gid or sticky bit
_UMASK = next((int(line.split()[1], 8) for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("Umask:")), 0o777)  # read, not set: os.umask would race threads
_counter = itertools.count()
_libc = ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(target: Path, size: int, inodes: int, mode: int, uid: int) -> None:
    opts = f"size={size},nr_inodes={inodes},mode={mode:o},uid={uid},gid={uid}"
    if _libc.mount(b"rlforge", str(target).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                   opts.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot mount a tmpfs: {os.strerror(err)}", str(target))


def _bind_ro(source: Path, target: Path) -> None:
    for flags in (_MS_BIND | _MS_REC, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV):
        if _libc.mount(str(source).encode(), str(target).encode(), None, flags, None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"cannot bind {source}: {os.strerror(err)}", str(target))


def _is_mount_point(where: Path) -> bool:
    """Whether a mount sits at `where` (os.path.ismount misses a bind mount of a directory
    onto itself: same device as its parent)."""
    escaped = str(where).replace(" ", "\\040")
    return any(line.split()[4] == escaped
               for line in Path("/proc/self/mountinfo").read_text().splitlines())


def _make_private(where: Path) -> None:
    """Make `where` a mount point of its own that passes no mount to other namespaces (the
    host's / is often shared, e.g. under systemd), so runs' mounts stay in ours."""
    if not _is_mount_point(where):
        if _libc.mount(str(where).encode(), str(where).encode(), None, _MS_BIND | _MS_REC,
                       None) != 0:
            raise OSError(ctypes.get_errno(), "cannot bind the scratch directory", str(where))
    if _libc.mount(None, str(where).encode(), None, _MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "cannot make the scratch directory private", str(where))


def _unmount(target: Path) -> None:
    _libc.umount2(str(target).encode(), _MNT_DETACH)


def can_mount() -> bool:
    """Whether this process may mount a tmpfs on the host (root with CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        return False
    try:
        RUNTIME.mkdir(mode=0o711, parents=True, exist_ok=True)
        for where in (RUNTIME.parent, RUNTIME):  # the runs' uids pass through, nobody lists
            st = os.lstat(where)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
                return False
            os.chmod(where, 0o711)
        _make_private(RUNTIME)
        probe = Path(RUNTIME, f"probe-{os.getpid()}-{next(_counter)}")
        probe.mkdir()
    except OSError:
        return False
    try:
        _mount_tmpfs(probe, 1 << 20, 16, 0o700, 0)
        _unmount(probe)
        return True
    except OSError:
        return False
    finally:
        probe.rmdir()


def sweep() -> None:
    """Unmount and remove scratch directories of rlforge processes that died mid-run."""
    try:
        entries = list(RUNTIME.iterdir())
    except OSError:
        return
    for entry in entries:
        pid = entry.name.split("-")[0]
        if pid.isdigit() and pid_gone(pid):
            for sub in sorted(entry.iterdir(), reverse=True):
                _unmount(sub)
            shutil.rmtree(entry, ignore_errors=True)


@dataclass
class _Job:
    """One copy: who owns what it writes (copy-in) or what caps it (copy-out)."""

    owner: int | None = None  # chown written entries to this uid/gid (copy-in)
    limits: CopyLimits | None = None  # copy-out caps
    before: dict[str, tuple[int, int]] = field(default_factory=dict)  # copy-out: (ino, ctime)
    after: dict[str, tuple[int, int]] = field(default_factory=dict)  # copy-in records here
    skipped: list[tuple[str, str]] = field(default_factory=list)
    too_large: str | None = None
    total: int = 0
    count: int = 0

    def admit(self, path: str, size: int) -> bool:
        """Whether a changed entry may be copied out (always, on copy-in)."""
        if self.limits is None:
            return True
        if self.too_large is not None:
            self.skipped.append((path, "copy-out cap reached"))
            return False
        self.count += 1
        try:
            self.limits.check(path, size, self.total + size, self.count)
        except SubmissionTooLarge as exc:
            self.too_large = exc.detail
            self.skipped.append((path, "copy-out cap reached"))
            return False
        self.total += size
        return True

    def settle(self, path: str, fd_or_name: int | str, dir_fd: int | None, st: os.stat_result,
               mode_set: bool = False) -> None:
        """Mode (unless `mode_set` at creation), owner and times of a written entry; copy-in
        records its identity."""
        name_kw: dict[str, Any] = {} if isinstance(fd_or_name, int) else {"dir_fd": dir_fd, "follow_symlinks": False}
        if not stat.S_ISLNK(st.st_mode) and not mode_set:
            os.chmod(fd_or_name, stat.S_IMODE(st.st_mode) & _PERM_BITS, **name_kw)
        if self.owner is not None:
            os.chown(fd_or_name, self.owner, self.owner, **name_kw)
        os.utime(fd_or_name, ns=(st.st_atime_ns, st.st_mtime_ns), **name_kw)
        if self.limits is None:
            now = os.stat(fd_or_name, **name_kw)
            self.after[path] = (now.st_ino, now.st_ctime_ns)


def _remove(dir_fd: int, entry: os.DirEntry) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.name, dir_fd=dir_fd)
    else:
        os.unlink(entry.name, dir_fd=dir_fd)


def _same_kind(old: os.DirEntry | None, mode: int) -> bool:
    if old is None:
        return False
    if stat.S_ISDIR(mode):
        return old.is_dir(follow_symlinks=False)
    if stat.S_ISREG(mode):
        return old.is_file(follow_symlinks=False)
    if stat.S_ISLNK(mode):
        return old.is_symlink()
    return not (old.is_dir(follow_symlinks=False) or old.is_file(follow_symlinks=False)
                or old.is_symlink())


def _copy_bytes(src: int, dst: int, size: int) -> None:
    offset = 0
    while offset < size:
        sent = os.sendfile(dst, src, offset, min(size - offset, 1 << 24))
        if sent == 0:
            break
        offset += sent


def _mirror(src_fd: int, dst_fd: int, rel: str, job: _Job) -> None:
    """Make the directory open at `dst_fd` hold what the one at `src_fd` holds."""
    existing = {e.name: e for e in os.scandir(dst_fd)}
    for entry in sorted(os.scandir(src_fd), key=lambda e: e.name):
        name = entry.name
        path = f"{rel}/{name}" if rel else name
        old = existing.pop(name, None)
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # gone since listed: another run's copy-out renaming its temp file
        mode = st.st_mode
        if not stat.S_ISDIR(mode) and _same_kind(old, mode) \
                and job.before.get(path) == (st.st_ino, st.st_ctime_ns):
            continue  # copied in and untouched since
        if old is not None and not (stat.S_ISDIR(mode) and _same_kind(old, mode)):
            _remove(dst_fd, old)
        if stat.S_ISDIR(mode):
            if path.count("/") + 1 >= MAX_DEPTH:  # deeper trees are not copied back
                job.skipped.append((path, f"deeper than {MAX_DEPTH} directories"))
                if job.limits is not None and job.too_large is None:
                    job.too_large = f"{path[:80]}... is deeper than {MAX_DEPTH} directories"
                continue
            if old is None or not _same_kind(old, mode):
                os.mkdir(name, 0o700, dir_fd=dst_fd)
            sub_src = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
            try:
                sub_dst = os.open(name, _DIR_FLAGS, dir_fd=dst_fd)
                try:
                    _mirror(sub_src, sub_dst, path, job)
                    job.settle(path, sub_dst, None, st)
                finally:
                    os.close(sub_dst)
            finally:
                os.close(sub_src)
        elif stat.S_ISREG(mode):
            if job.admit(path, st.st_size):
                _copy_file(src_fd, dst_fd, name, path, st, job)
        elif stat.S_ISLNK(mode):
            target = os.readlink(name, dir_fd=src_fd)
            if job.admit(path, 0):
                os.symlink(target, name, dir_fd=dst_fd)
                job.settle(path, name, dst_fd, st)
        elif stat.S_ISFIFO(mode):
            if job.admit(path, 0):
                os.mkfifo(name, 0o600, dir_fd=dst_fd)
                job.settle(path, name, dst_fd, st)
        else:
            job.skipped.append((path, "not a regular file"))
    for name, old in existing.items():  # gone from the copy: removed by the run, unless
        if (f"{rel}/{name}" if rel else name) in job.before:  # it appeared on the host since
            _remove(dst_fd, old)


def _copy_file(src_fd: int, dst_fd: int, name: str, path: str, st: os.stat_result, job: _Job) -> None:
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                      dir_fd=src_fd)
    except FileNotFoundError:  # gone since listed (a run sharing the host directory)
        job.skipped.append((path, "gone while copied"))
        return
    try:
        now = st
        if job.limits is not None:  # copy-out: still the regular file that was listed
            now = os.fstat(src)
            if not stat.S_ISREG(now.st_mode) or now.st_ino != st.st_ino:
                job.skipped.append((path, "changed while copied"))
                return
        # copy-in fills a new directory; copy-out replaces the host's file in one step
        temp = name if job.limits is None else f".rlforge-{secrets.token_hex(6)}"
        mode = stat.S_IMODE(now.st_mode) & _PERM_BITS  # (the new fd is writable whatever it is)
        dst = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      mode, dir_fd=dst_fd)
        try:
            _copy_bytes(src, dst, now.st_size)
            if temp != name:
                os.rename(temp, name, src_dir_fd=dst_fd, dst_dir_fd=dst_fd)
            job.settle(path, dst, None, now, mode_set=not mode & _UMASK)
        except BaseException:
            os.close(dst)
            dst = -1
            try:
                os.unlink(temp, dir_fd=dst_fd)
            except FileNotFoundError:
                pass
            raise
        finally:
            if dst >= 0:
                os.close(dst)
    finally:
        os.close(src)


def _open_dir(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


@dataclass
class _Area:
    host: Path  # the caller's directory
    dest: str  # where it appears in the sandbox
    inside: Path  # its copy on the capped tmpfs
    before: dict[str, tuple[int, int]]


@dataclass
class CopyOut:
    """What came back from a run's capped file systems."""

    skipped: list[tuple[str, str]] = field(default_factory=list)  # (sandbox path, why)
    too_large: str | None = None  # the first copy-out cap passed, if any


class Scratch:
    """One run's capped file systems on the host, under `RUNTIME`.

    Args:
        uid: The run's host uid; it owns the mounts and everything copied in.
        tmp_bytes, tmp_inodes: Caps of `/tmp` and of `/dev/shm`, each.
        work_bytes, work_inodes: Caps of the writable directories together.
    """

    def __init__(self, uid: int, tmp_bytes: int, tmp_inodes: int, work_bytes: int,
                 work_inodes: int):
        self.uid = uid
        self.work_caps = (work_bytes, work_inodes)
        self.root = RUNTIME / f"{os.getpid()}-{next(_counter)}"
        self.root.mkdir(mode=0o700)
        os.chown(self.root, 0, uid)
        os.chmod(self.root, 0o710)  # root, and the run's uid to reach its binds; no one else
        self.mounted: list[Path] = []
        self.areas: list[_Area] = []
        self.tmp = self._mount("tmp", tmp_bytes, tmp_inodes, 0o1777)
        self.shm = self._mount("shm", tmp_bytes, tmp_inodes, 0o1777)
        self.work: Path | None = None

    def _mount(self, name: str, size: int, inodes: int, mode: int) -> Path:
        target = self.root / name
        target.mkdir(mode=0o700)
        _mount_tmpfs(target, size, inodes, mode, self.uid)
        self.mounted.append(target)
        return target

    def bind(self, host: Path) -> Path:
        """`host` (a directory or a file) bound read-only below the run's directory, where
        the run's uid can reach it whatever the modes of the directories above `host`, and
        read what root owns there (an idmapped mount, see `idmap`)."""
        target = self.root / f"ro{len(self.mounted)}"
        if host.is_dir():
            target.mkdir(mode=0o700)
        else:
            target.touch(mode=0o600)
        if not idmap.bind(host, target, self.uid):
            _bind_ro(host, target)
            self._own_fifos(host)
        self.mounted.append(target)
        return target

    def _own_fifos(self, host: Path) -> None:
        """Without an idmapped mount: FIFOs the host made at the top of a read-only bind
        are handed to the run's uid, so sandboxed code can write to them."""
        try:
            entries = [Path(e.path) for e in os.scandir(host)] if host.is_dir() else [host]
        except OSError:
            return
        for path in entries:
            try:
                if stat.S_ISFIFO(os.lstat(path).st_mode):
                    os.chown(path, self.uid, self.uid, follow_symlinks=False)
            except OSError:
                pass

    def add(self, host: Path, dest: str) -> Path:
        """Copy the host directory `host` onto the capped file system; returns the copy,
        to be bound at `dest` in the sandbox.

        Raises:
            OSError: it does not fit (ENOSPC) or cannot be read.
        """
        if self.work is None:
            self.work = self._mount("work", *self.work_caps, 0o700)
        inside = self.work / str(len(self.areas))
        os.mkdir(inside, 0o700)
        job = _Job(owner=self.uid)
        src, dst = _open_dir(host), _open_dir(inside)
        try:
            _mirror(src, dst, "", job)
            job.settle("", dst, None, os.fstat(src))
        finally:
            os.close(src)
            os.close(dst)
        self.areas.append(_Area(host, dest, inside, job.after))
        return inside

    def copy_out(self, limits: CopyLimits) -> CopyOut:
        """Bring every writable directory back to its host directory, within `limits`
        (counted over all of them); what passes a cap is not copied, and the host's
        earlier version of it is removed."""
        job = _Job(limits=limits)
        skipped: list[tuple[str, str]] = []
        for area in self.areas:
            job.before, job.skipped = area.before, []
            src, dst = _open_dir(area.inside), _open_dir(area.host)
            try:
                _mirror(src, dst, "", job)
            finally:
                os.close(src)
                os.close(dst)
            skipped += [(f"{area.dest}/{p}", why) for p, why in job.skipped]
        return CopyOut(skipped, job.too_large)

    def close(self) -> None:
        """Unmount everything and remove the run's directory."""
        for target in reversed(self.mounted):
            _unmount(target)
        self.mounted.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def no_space(exc: OSError) -> bool:
    """Whether `exc` says a capped file system is full (bytes or inodes)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)
