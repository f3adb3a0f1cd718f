"""Read files back from a directory untrusted code could write, without following its links.

After a run, rlforge reads `reward.json` from the verifier's log directory and may copy a
workspace out. Sandboxed code could have replaced any of those paths with a symlink to a
host file (`reward.json -> /root/.ssh/id_rsa`) or with a FIFO that blocks the reader. These
helpers open every path component relative to a trusted root with O_NOFOLLOW and only
accept regular files and directories; anything else is refused (read) or skipped (copy).
Hard links cannot point outside: link(2) does not cross the sandbox's bind mounts.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _parts(relpath: str | os.PathLike) -> tuple[str, ...]:
    path = PurePosixPath(relpath)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise OSError(errno.EINVAL, "path must be relative, without '..'", str(relpath))
    return path.parts


@contextmanager
def _open_dir(root: str | os.PathLike, parts: tuple[str, ...]) -> Iterator[int]:
    """An fd for root/parts..., refusing a symlink at any component below root."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(errno.ELOOP, "not a plain directory (symlink?)", part) from None
                raise
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def _open_regular(dir_fd: int, name: str) -> int:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "refusing to follow a symlink", name) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", name)
    return fd


def read_file(root: str | os.PathLike, relpath: str | os.PathLike, max_bytes: int = 1_000_000) -> bytes:
    """Read `root/relpath`, where everything below `root` may have been written by untrusted code.

    Args:
        root: A directory rlforge created (e.g. the verifier log dir bound at /logs/verifier).
        relpath: Path below `root`, e.g. "reward.json".
        max_bytes: Refuse files larger than this.

    Returns:
        The file's bytes.

    Raises:
        OSError: the file is missing (FileNotFoundError), a symlink or below one (ELOOP),
            not a regular file (EINVAL), or larger than `max_bytes` (EFBIG).
    """
    *dirs, name = _parts(relpath)
    with _open_dir(root, tuple(dirs)) as dir_fd:
        fd = _open_regular(dir_fd, name)
        try:
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(max_bytes + 1)
        finally:
            os.close(fd)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(relpath))
    return data


@dataclass
class CopyReport:
    """What `copy_tree` copied and what it refused."""

    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    bytes_copied: int = 0


def copy_tree(root: str | os.PathLike, dest: str | os.PathLike,
              max_bytes: int = 1_000_000_000) -> CopyReport:
    """Copy the regular files and directories under `root` to `dest`, never following links.

    Symlinks, FIFOs, sockets and devices are skipped and listed in the report; setuid and
    other special mode bits are dropped. `dest` must not exist yet.

    Args:
        root: Directory written by untrusted code (e.g. a workspace after a run).
        dest: New directory to create.
        max_bytes: Stop copying file contents once this many bytes were copied (the
            remaining files are listed as skipped).

    Returns:
        The copied and skipped relative paths.
    """
    report = CopyReport()
    Path(dest).mkdir(parents=True)
    with _open_dir(root, ()) as fd:
        _copy_dir(fd, Path(dest), PurePosixPath(), report, max_bytes)
    return report


def _copy_dir(dir_fd: int, dest: Path, rel: PurePosixPath, report: CopyReport, max_bytes: int) -> None:
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        path = str(rel / entry.name)
        if entry.is_symlink():
            report.skipped.append((path, "symlink"))
        elif entry.is_dir(follow_symlinks=False):
            try:
                sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                report.skipped.append((path, exc.strerror or "unreadable"))
                continue
            try:
                (dest / entry.name).mkdir(mode=0o755)
                _copy_dir(sub, dest / entry.name, rel / entry.name, report, max_bytes)
            finally:
                os.close(sub)
        elif entry.is_file(follow_symlinks=False):
            _copy_file(dir_fd, entry.name, dest / entry.name, path, report, max_bytes)
        else:
            report.skipped.append((path, "not a regular file"))


def _copy_file(dir_fd: int, name: str, target: Path, path: str, report: CopyReport,
               max_bytes: int) -> None:
    try:
        fd = _open_regular(dir_fd, name)
    except OSError as exc:
        report.skipped.append((path, exc.strerror or "unreadable"))
        return
    try:
        st = os.fstat(fd)
        if report.bytes_copied + st.st_size > max_bytes:
            report.skipped.append((path, "copy size limit reached"))
            return
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                      stat.S_IMODE(st.st_mode) & 0o755 | 0o600)
        with os.fdopen(out, "wb") as fh:
            while chunk := os.read(fd, 1 << 20):
                fh.write(chunk)
                report.bytes_copied += len(chunk)
        report.files.append(path)
    finally:
        os.close(fd)
