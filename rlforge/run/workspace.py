"""A terminal episode's workspace as content: hashed, stored as its difference from the
task's starting workspace, and rebuilt byte for byte.

An episode snapshot (`rlforge.run.snapshot`) must hold the workspace after every turn
without copying it every turn. So a workspace is described as a *tree*: every entry below
it (directory, regular file, symlink, FIFO: what the sandbox's copy-out brings back) with
its permission bits and, for a file, the SHA-256 of its bytes (for a link, its target).
The tree hashes to one digest. `WorkspaceTracker` holds the tree of the starting workspace
(taken at reset) and, turn after turn, the difference from it: the entries added or
changed, the paths gone. Only files whose bytes differ from the starting file at the same
path are stored, once per content (`blobs/<sha256>`); a file is read again only when its
inode, size, mtime or ctime changed since it was last hashed (copy-out replaces a changed
file and leaves an untouched one as it was), so a turn that changed one file reads one.

`rebuild` makes a fresh starting workspace, applies a difference to it, and hashes the
result: anything short of the digest snapshotted raises `SnapshotMismatch`, never a
partial workspace. Modification times are kept beside the difference (of what changed, and
of every directory) and set again, so `ls -l`, make or pytest's caches see the workspace
as it was; they are restored, not part of the hash. Nothing here follows a link the policy made: every file is opened
relative to its directory with O_NOFOLLOW.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlforge.errors import SnapshotMismatch, SubmissionTooLarge
from rlforge.sandbox.files import MAX_DEPTH, CopyLimits
from rlforge.verify.runner import fresh_workspace

#: (kind, permission bits, SHA-256 of a file's bytes | a link's target | "")
Entry = tuple[str, int, str]
Tree = dict[str, Entry]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


def tree_digest(tree: Tree) -> str:
    """One SHA-256 over every entry of a tree, in path order."""
    canonical = json.dumps(sorted([path, *entry] for path, entry in tree.items()),
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class _Scan:
    caps: CopyLimits
    known: dict[str, tuple[tuple[int, int, int, int], str]]  # path -> (stat key, digest)
    tree: Tree = field(default_factory=dict)
    times: dict[str, int] | None = None  # path -> mtime (ns), when asked for
    total: int = 0
    read: int = 0  # bytes hashed (files not known unchanged)


def scan(root: Path, caps: CopyLimits = CopyLimits(),
         known: dict[str, tuple[tuple[int, int, int, int], str]] | None = None,
         times: dict[str, int] | None = None) -> tuple[Tree, int]:
    """The tree below `root` and the bytes read to hash it.

    Args:
        root: a workspace (written by the policy's commands).
        caps: the copy-out caps: a tree past one cannot be snapshotted.
        known: per path, the (inode, size, mtime, ctime) a digest was computed at;
            updated in place. A file whose stat still matches is not read again.
        times: filled with every entry's modification time (ns). Times are not part of
            the tree (nor of its digest): they are restored, not checked.

    Raises:
        SubmissionTooLarge: a cap was passed.
        SnapshotMismatch: the tree holds an entry no snapshot can rebuild (a socket, a
            device) or is deeper than `MAX_DEPTH`.
    """
    state = _Scan(caps, known if known is not None else {}, times=times)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _scan_dir(fd, "", state)
    finally:
        os.close(fd)
    for gone in set(state.known) - state.tree.keys():
        del state.known[gone]
    return state.tree, state.read


def _scan_dir(dir_fd: int, rel: str, state: _Scan) -> None:
    if rel.count("/") + 1 >= MAX_DEPTH:
        raise SnapshotMismatch(f"{rel[:80]}... is deeper than {MAX_DEPTH} directories")
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        path = f"{rel}/{entry.name}" if rel else entry.name
        st = entry.stat(follow_symlinks=False)
        mode = stat.S_IMODE(st.st_mode)
        if state.times is not None:
            state.times[path] = st.st_mtime_ns
        if stat.S_ISDIR(st.st_mode):
            state.tree[path] = ("dir", mode, "")
            sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
            try:
                _scan_dir(sub, path, state)
            finally:
                os.close(sub)
            continue
        state.caps.check(path, st.st_size if stat.S_ISREG(st.st_mode) else 0,
                         state.total + (st.st_size if stat.S_ISREG(st.st_mode) else 0),
                         len(state.tree) + 1)
        if stat.S_ISLNK(st.st_mode):
            state.tree[path] = ("link", 0, os.readlink(entry.name, dir_fd=dir_fd))
        elif stat.S_ISFIFO(st.st_mode):
            state.tree[path] = ("fifo", mode, "")
        elif stat.S_ISREG(st.st_mode):
            state.total += st.st_size
            key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            seen = state.known.get(path)
            if seen is not None and seen[0] == key:
                digest = seen[1]
            else:
                digest = _hash_file(dir_fd, entry.name, st)
                state.read += st.st_size
                state.known[path] = (key, digest)
            state.tree[path] = ("file", mode, digest)
        else:
            raise SnapshotMismatch(f"{path} is neither a file, a directory, a link nor a FIFO")


def _hash_file(dir_fd: int, name: str, st: os.stat_result) -> str:
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != st.st_ino:
            raise SnapshotMismatch(f"{name} changed while it was read")
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _read_bytes(root: Path, rel: str) -> bytes:
    """The bytes of root/rel, refusing a link at any component."""
    *dirs, name = PurePosixPath(rel).parts
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in dirs:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        file_fd = os.open(name, _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as fh:
        return fh.read()


@dataclass
class Capture:
    """One workspace snapshot: the difference from the start and what storing it cost."""

    workspace: dict[str, Any]  # {"tree": digest, "changed": {path: entry}, "removed": [...]}
    blobs: set[str]  # the contents it needs from the blob store
    bytes_read: int = 0  # hashed this time
    bytes_stored: int = 0  # new blobs written


class WorkspaceTracker:
    """The starting tree of one episode's workspace and the stat cache of its files."""

    def __init__(self, ws: Path, caps: CopyLimits = CopyLimits(),
                 start: tuple[Tree, dict[str, int]] | None = None):
        """Hash `ws` as it starts (or take `start`, its starting tree and times, when the
        workspace was rebuilt from a snapshot: the difference is always from the start)."""
        self.ws = ws
        self.caps = caps
        self.known: dict[str, tuple[tuple[int, int, int, int], str]] = {}
        times: dict[str, int] = {}
        tree, _ = scan(ws, caps, self.known, times)
        self.base, self.base_times = start if start is not None else (tree, times)

    def capture(self, blobs: Path) -> Capture:
        """The workspace now, as a difference from the start; each file's bytes it needs
        and `blobs` lacks are written there first (atomically, named by their SHA-256).

        Raises:
            SubmissionTooLarge, SnapshotMismatch: the workspace cannot be snapshotted.
        """
        times: dict[str, int] = {}
        tree, read = scan(self.ws, self.caps, self.known, times)
        changed = {p: e for p, e in tree.items() if self.base.get(p) != e}
        removed = sorted(p for p, e in self.base.items()
                         if p not in tree or tree[p][0] != e[0])
        needed: dict[str, str] = {}
        for path, (kind, _, digest) in changed.items():
            old = self.base.get(path)
            if kind == "file" and (old is None or old[0] != "file" or old[2] != digest):
                needed.setdefault(digest, path)
        stored = 0
        blobs.mkdir(parents=True, exist_ok=True)
        for digest, path in needed.items():
            target = blobs / digest
            if target.exists():
                continue
            data = _read_bytes(self.ws, path)
            if hashlib.sha256(data).hexdigest() != digest:
                raise SnapshotMismatch(f"{path} changed while it was snapshotted")
            write_atomic(target, data)
            stored += len(data)
        # the times of what changed or was touched, and of every directory (the rebuild
        # writes in them)
        mtimes = {p: t for p, t in times.items()
                  if p in changed or tree[p][0] == "dir" or self.base_times.get(p) != t}
        workspace = {"tree": tree_digest(tree), "changed": changed, "removed": removed,
                     "mtimes": mtimes}
        return Capture(workspace, set(needed), read, stored)


def write_atomic(path: Path, data: bytes, durable: bool = False) -> None:
    """Write `path` so that a reader sees the old file or the new one, never a part;
    `durable`: fsync it before it replaces the old one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def _relative(path: str) -> PurePosixPath:
    rel = PurePosixPath(path)
    if not rel.parts or rel.is_absolute() or ".." in rel.parts or path != str(rel):
        raise SnapshotMismatch(f"the snapshot names {path!r}, not a path in the workspace")
    return rel


def _inside(ws: Path, path: str) -> Path:
    """ws/path, refusing a path that is not in the workspace or passes through a link
    (a snapshot never lists an entry below a link: `scan` does not follow them)."""
    rel = _relative(path)
    cur = ws
    for part in rel.parts[:-1]:
        cur = cur / part
        if cur.is_symlink():
            raise SnapshotMismatch(f"the snapshot names {path!r}, below the link {cur.name!r}")
    return ws / rel


def _clear(target: Path) -> None:
    """Remove whatever stands at `target` (never following it)."""
    if target.is_symlink() or not target.exists():
        if target.is_symlink():
            target.unlink()
        return
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()


def rebuild(task_path: Path, workspace: dict[str, Any], blobs: Path, root: Path,
            caps: CopyLimits = CopyLimits()) -> tuple[Path, tuple[Tree, dict[str, int]]]:
    """A fresh starting workspace of the task (in a new directory under `root`) with a
    snapshot's difference applied, hashed: (its path, the starting tree and times, for
    `WorkspaceTracker`).

    Raises:
        SnapshotMismatch: a blob is missing or damaged, the difference names a path
            outside the workspace, or the result does not hash to the snapshot's tree.
    """
    ws = fresh_workspace(task_path, root)
    base_times: dict[str, int] = {}
    base, _ = scan(ws, caps, times=base_times)
    try:
        changed = {p: tuple(e) for p, e in workspace["changed"].items()}
        removed = list(workspace["removed"])
        expected = str(workspace["tree"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise SnapshotMismatch(f"the snapshot's workspace is not readable ({exc})") from None
    for path in sorted(removed, reverse=True):
        _clear(_inside(ws, path))
    modes: list[tuple[Path, int]] = []
    for path, (kind, mode, digest) in sorted(changed.items()):
        target = _inside(ws, path)
        old = base.get(path)
        if kind == "dir":
            if not (target.is_dir() and not target.is_symlink()):
                _clear(target)
                target.mkdir(mode=0o700)
            modes.append((target, int(mode)))
        elif kind == "file":
            if old is not None and old[0] == "file" and old[2] == digest and path not in removed:
                target.chmod(int(mode))
                continue
            if not _SHA256.fullmatch(str(digest)):
                raise SnapshotMismatch(f"the snapshot names no content for {path}")
            try:
                data = (blobs / str(digest)).read_bytes()
            except OSError as exc:
                raise SnapshotMismatch(f"the content of {path} is missing ({exc.strerror})") from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise SnapshotMismatch(f"the stored content of {path} is damaged")
            _clear(target)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            target.chmod(int(mode))
        elif kind == "link":
            _clear(target)
            os.symlink(str(digest), target)
        elif kind == "fifo":
            _clear(target)
            os.mkfifo(target, 0o600)
            target.chmod(int(mode))
        else:
            raise SnapshotMismatch(f"the snapshot holds {path} of unknown kind {kind!r}")
    for target, mode in reversed(modes):  # deepest first, after their contents
        target.chmod(mode)
    try:
        mtimes = {p: int(t) for p, t in (workspace.get("mtimes") or {}).items()}
    except (TypeError, ValueError, AttributeError):
        raise SnapshotMismatch("the snapshot's modification times are not readable") from None
    for path, ns in mtimes.items():  # after every write: nothing moves them again
        target = _inside(ws, path)
        if target.is_symlink() or target.exists():
            os.utime(target, ns=(ns, ns), follow_symlinks=False)
    try:
        tree, _ = scan(ws, caps)
    except SubmissionTooLarge as exc:
        raise SnapshotMismatch(f"the rebuilt workspace is over a cap ({exc.detail})") from None
    if tree_digest(tree) != expected:
        raise SnapshotMismatch("the rebuilt workspace does not hash to the one snapshotted "
                               f"({tree_digest(tree)[:12]} != {expected[:12]})")
    return ws, (base, base_times)
