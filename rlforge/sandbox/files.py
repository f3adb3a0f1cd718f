"""Read files back from a directory untrusted code could write, without following its links.

After a run, rlforge reads `reward.json` from the verifier's log directory and may copy a
workspace out. Sandboxed code could have replaced any of those paths with a symlink to a
host file (`reward.json -> /root/.ssh/id_rsa`) or with a FIFO that blocks the reader. These
helpers open every path component relative to a trusted root with O_NOFOLLOW and only
accept regular files and directories; anything else is refused (read) or skipped (copy).
Hard links cannot point outside: link(2) does not cross the sandbox's bind mounts.

What is read is bounded too (`CopyLimits`, `iter_files`): bytes per file, bytes in all,
and files; past a cap the reader stops with `SubmissionTooLarge` instead of reading a
40-file tree of 255 MB sparse files into rlforge's own memory.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterator

from rlforge.errors import SubmissionTooLarge

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


@dataclass(frozen=True)
class CopyLimits:
    """Caps on what rlforge reads or copies back from a tree sandboxed code wrote.

    Args:
        file_bytes: Largest single file.
        total_bytes: All files together.
        files: Entries (files, links, FIFOs) in all.
    """

    file_bytes: int = 16 << 20
    total_bytes: int = 256 << 20
    files: int = 20_000

    def check(self, rel: str, size: int, total: int, count: int) -> None:
        """Raise `SubmissionTooLarge` if one more entry `rel` of `size` bytes, making
        `total` bytes and `count` entries so far, is over a cap."""
        mb = 1 << 20
        if size > self.file_bytes:
            raise SubmissionTooLarge(f"{rel} is {size / mb:.1f} MB (at most "
                                     f"{self.file_bytes / mb:g} MB per file)")
        if total > self.total_bytes:
            raise SubmissionTooLarge(f"more than {self.total_bytes / mb:g} MB in all")
        if count > self.files:
            raise SubmissionTooLarge(f"more than {self.files:,} files")


def iter_files(root: str | os.PathLike, limits: CopyLimits = CopyLimits(),
               skip_dirs: tuple[str, ...] = ()) -> Iterator[tuple[str, bytes | None]]:
    """The regular files below `root` with their bytes, in sorted order, never following
    links and holding one file in memory at a time.

    Args:
        root: Directory written by untrusted code.
        limits: Caps; the file over one is not read.
        skip_dirs: Directory names not entered (e.g. `__pycache__`).

    Yields:
        (relative path, bytes) per regular file; (relative path, None) per entry that is
        not read (a symlink, a special file, an unreadable directory).

    Raises:
        SubmissionTooLarge: a cap was passed.
    """
    state = {"total": 0, "count": 0}
    with _open_dir(root, ()) as fd:
        yield from _iter_dir(fd, PurePosixPath(), limits, skip_dirs, state)


MAX_DEPTH = 64  # directory levels read back from a tree sandboxed code wrote


def _iter_dir(dir_fd: int, rel: PurePosixPath, limits: CopyLimits, skip_dirs: tuple[str, ...],
              state: dict[str, int]) -> Iterator[tuple[str, bytes | None]]:
    if len(rel.parts) >= MAX_DEPTH:
        raise SubmissionTooLarge(f"{rel} is deeper than {MAX_DEPTH} directories")
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        path = str(rel / entry.name)
        if entry.is_dir(follow_symlinks=False):
            if entry.name in skip_dirs:
                continue
            try:
                sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                yield path, None
                continue
            try:
                yield from _iter_dir(sub, rel / entry.name, limits, skip_dirs, state)
            finally:
                os.close(sub)
            continue
        state["count"] += 1
        if not entry.is_file(follow_symlinks=False):
            limits.check(path, 0, state["total"], state["count"])
            yield path, None
            continue
        try:
            fd = _open_regular(dir_fd, entry.name)
        except OSError:
            yield path, None
            continue
        try:
            size = os.fstat(fd).st_size
            limits.check(path, size, state["total"] + size, state["count"])
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(limits.file_bytes + 1)
            state["total"] += len(data)
            limits.check(path, len(data), state["total"], state["count"])
        finally:
            os.close(fd)
        yield path, data


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
