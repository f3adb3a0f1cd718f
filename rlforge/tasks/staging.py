"""Crash-safe writing of a build: a task directory is whole or absent, a build replaces the
previous one in one step, and a rerun after a crash goes on from where it stopped.

A build of thousands of validated tasks runs for hours (validation runs every task's
submissions in the sandbox), so a kill, an OOM or a Ctrl-C must cost at most the tasks in
flight. Nothing is written into `--out` while a build runs. Beside it, in
`.<out>.rlforge-build/`:

    build.json      the marker, written first: the directory this build replaces, whether
                    it may replace foreign contents (--force), and the staged tree's inode
    journal.jsonl   one line per task settled: its id, a digest of all its bytes, under
                    which validation settings it was proven (none: not validated), and
                    whether it passed and why not
    tmp/<task_id>/  a task being written or validated: a temporary, removed on any restart
    tree/           the new build: each task renamed here from tmp/ once whole (and proven,
                    when validating), then its manifest

The last step exchanges `tree/` and `--out` with one rename (Linux `renameat2` with
RENAME_EXCHANGE; elsewhere two renames a rerun can undo), so a reader sees the whole
previous build or the whole new one, never a mix. A rerun finds the marker, takes the lock
the dead build held, removes tmp/, and keeps every journalled task whose bytes are exactly
what it is about to write: passed ones are neither written nor validated again, failed ones
keep their reason.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import json
import os
import shutil
import threading
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, TextIO

from rlforge import __version__
from rlforge.errors import UserError
from rlforge.taskdir import MANIFEST, TASK_TOML, WORK_SUFFIX
from rlforge.tasks.render import RenderedTask, write_task

MARKER = "build.json"
JOURNAL = "journal.jsonl"


def work_area(out: Path) -> Path:
    """Where a build into `out` stages its work: `.<name>.rlforge-build` beside it."""
    real = Path(os.path.realpath(out))
    return real.parent / f".{real.name}{WORK_SUFFIX}"


def task_digest(files: dict[str, bytes]) -> str:
    """A digest of every file of a rendered task (task.toml included), path and bytes."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


@dataclass
class Settled:
    """One journal line: a task written (and maybe proven) by a build."""

    task_id: str
    digest: str
    validation: str | None  # the settings it was validated under; None: not validated
    ok: bool
    reason: str = ""


class BuildArea:
    """The work area of one build into `out`; see the module docstring.

    Use: `open()` first (lock, recovery, marker); for each task `settled()` to reuse what a
    crashed build finished, else `stage()` then `promote()` or `reject()`; `publish()`
    swaps the new tree in; `finish()` after the database is written; `abandon()` on any
    error or interrupt (temporaries go, finished tasks stay for the rerun).
    """

    def __init__(self, out: Path, *, validation: str | None):
        self.out = Path(os.path.realpath(out))
        self.work = work_area(out)
        self.tmp = self.work / "tmp"
        self.tree = self.work / "tree"
        self.validation = validation
        self.journal: dict[str, Settled] = {}
        self.reused = 0  # tasks kept from a crashed build's work
        self._published = False  # a crashed build published its tree: its tasks are in out
        self._marker: dict | None = None
        self._lock_fd: int | None = None
        self._journal_fh: TextIO | None = None
        self._write_lock = threading.Lock()

    # -- start ----------------------------------------------------------------------------

    def open(self, force: bool) -> None:
        """Take the lock, recover a crashed build's work, check `out`, write the marker."""
        self._lock()
        try:
            previous = self._read_marker()
            if previous is not None:
                self._recover(previous)
            else:
                self._clear(keep=())  # leftovers of a build that died before its marker
            replace = force or bool(previous and previous.get("replace"))
            self._check_out(replace)
            self.tmp.mkdir(exist_ok=True)
            self.tree.mkdir(exist_ok=True)
            self._marker = {"format": 1, "out": str(self.out), "replace": replace,
                            "tree_inode": os.stat(self.tree).st_ino,
                            "journal_in_out": self._published, "pid": os.getpid(),
                            "rlforge_version": __version__}
            self._write_marker()
            self._journal_fh = open(self.work / JOURNAL, "a", encoding="utf-8")
        except BaseException:
            self.abandon()
            raise

    def _lock(self) -> None:
        for _ in range(3):
            try:
                self.work.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.work, os.O_RDONLY | os.O_DIRECTORY)
            except OSError as exc:
                raise UserError(f"--out {self.out}: cannot create the work area {self.work} "
                                f"beside it ({exc.strerror}); choose a directory whose parent "
                                "you can write") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UserError(f"another build-tasks is writing {self.out} (it holds "
                                f"{self.work}); wait for it to end") from None
            try:
                current = os.stat(self.work).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                self._lock_fd = fd
                return
            os.close(fd)  # the build that held it finished and removed it: take the new one
        raise UserError(f"{self.work} keeps changing; is another build-tasks writing {self.out}?")

    def _read_marker(self) -> dict | None:
        try:
            marker = json.loads((self.work / MARKER).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return marker if marker.get("out") == str(self.out) else None

    def _write_marker(self) -> None:
        tmp = self.work / f"{MARKER}.tmp"
        tmp.write_text(json.dumps(self._marker, indent=1) + "\n")
        os.replace(tmp, self.work / MARKER)

    def _recover(self, marker: dict) -> None:
        """Undo what a crashed build left half done; keep what it finished."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        old = self.work / "old"
        if old.exists():  # the two-rename swap died between its renames: put the old back
            if not os.path.lexists(self.out):
                os.rename(old, self.out)
            else:
                shutil.rmtree(old)
        swapped = os.path.isdir(self.out) and os.stat(self.out).st_ino == marker.get("tree_inode")
        if swapped:  # its tree is published; what is staged now is the build before it
            shutil.rmtree(self.tree, ignore_errors=True)
        if swapped or marker.get("journal_in_out"):
            self._published = True
        self._clear(keep=("tree", JOURNAL, MARKER))
        self.journal = _read_journal(self.work / JOURNAL)

    def _clear(self, keep: tuple[str, ...]) -> None:
        for entry in os.scandir(self.work):
            if entry.name not in keep:
                _remove(Path(entry.path))

    def _check_out(self, replace: bool) -> None:
        if not os.path.lexists(self.out):
            return
        if not self.out.is_dir():
            raise UserError(f"--out {self.out} is a file; choose a directory")
        if replace or (self.out / MANIFEST).is_file() or not any(self.out.iterdir()):
            return
        raise UserError(f"--out {self.out} is not empty and holds no rlforge build; choose a "
                        "new directory or pass --force to replace its contents")

    # -- tasks ----------------------------------------------------------------------------

    def settled(self, task: RenderedTask, digest: str) -> Settled | None:
        """What a crashed build already settled for exactly these bytes, if still good.

        A passed task is kept (in place, or linked back from a published tree); a task that
        failed validation under the same settings keeps its reason. A task only written
        (not validated) counts when this build does not validate either.
        """
        e = self.journal.get(task.task_id)
        if e is None or e.digest != digest:
            return None
        if self.validation is not None and e.validation != self.validation:
            return None
        if not e.ok:
            return e if self.validation is not None else None
        if not (self.tree / task.task_id).is_dir():
            if not (self._published and (self.out / task.task_id).is_dir()):
                return None
            self._link_back(task.task_id)
        self.reused += 1
        return e

    def _link_back(self, task_id: str) -> None:
        """Stage a task the crashed build published, as hard links (the files stay shared)."""
        staged = self.tmp / task_id
        _remove(staged)
        shutil.copytree(self.out / task_id, staged, copy_function=_link_or_copy)
        self._place(task_id)

    def adopt(self, task_id: str, task_toml: bytes) -> None:
        """Stage a task of the build now in `out` (hard links): an incremental build keeps a
        task whose files are unchanged (its id says so) without writing them again; its
        task.toml is replaced when `task_toml` differs (new metadata, another split)."""
        staged = self.tmp / task_id
        _remove(staged)
        shutil.copytree(self.out / task_id, staged, copy_function=_link_or_copy)
        toml = staged / TASK_TOML
        if toml.read_bytes() != task_toml:
            toml.unlink()  # a link to the published build's file: never written through
            toml.write_bytes(task_toml)
            os.chmod(toml, 0o644)
        self._place(task_id)

    def stage(self, task: RenderedTask) -> Path:
        """Write a task into tmp/ (not yet part of the build); its path there."""
        return write_task(task, self.tmp)

    def promote(self, task_id: str, digest: str, validated: bool) -> None:
        """Rename a whole (and, when validating, proven) task into the tree; journal it."""
        self._place(task_id)
        self._log(Settled(task_id, digest, self.validation if validated else None, True))

    def reject(self, task_id: str, digest: str, reason: str, *, definitive: bool = True) -> None:
        """Remove a task that failed validation from tmp/; journal why, if the verdict is
        the task's own (not a verifier that could not run: a rerun tries that again)."""
        _remove(self.tmp / task_id)
        if definitive:
            self._log(Settled(task_id, digest, self.validation, False, reason))

    def _place(self, task_id: str) -> None:
        target = self.tree / task_id
        if os.path.lexists(target):  # other bytes under the same id: moved out whole, and
            self._discard(target)    # its journal line voided, before the new copy goes in
            self._log(Settled(task_id, "", None, False, "replaced"))
        os.rename(self.tmp / task_id, target)

    def _discard(self, path: Path) -> None:
        gone = self.tmp / f".discard-{uuid.uuid4().hex}"
        os.rename(path, gone)
        _remove(gone)

    def _log(self, entry: Settled) -> None:
        assert self._journal_fh is not None, "open() starts the journal before tasks settle"
        with self._write_lock:
            self.journal[entry.task_id] = entry
            self._journal_fh.write(json.dumps(asdict(entry), sort_keys=True) + "\n")
            self._journal_fh.flush()  # out of the process: a kill must not lose it

    # -- end ------------------------------------------------------------------------------

    def publish(self, keep: set[str], write_manifest: Callable[[Path], None]) -> None:
        """Make the tree exactly `keep` plus its manifest, then swap it with `out`."""
        for entry in os.scandir(self.tree):
            if entry.name not in keep:
                self._discard(Path(entry.path))
        missing = sorted(keep - {e.name for e in os.scandir(self.tree)})
        if missing:
            raise RuntimeError(f"tasks {missing[:3]} were not staged before publishing")
        write_manifest(self.tree / MANIFEST)
        if not os.path.lexists(self.out):
            os.rename(self.tree, self.out)
            return
        shutil.copymode(self.out, self.tree)  # the directory keeps the mode it was given
        try:
            _exchange(self.tree, self.out)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            self._set_aside()
            os.rename(self.tree, self.out)

    def _set_aside(self) -> None:
        """Without an exchange: move the previous build into the work area first (the one
        moment `out` is missing; a rerun puts the previous build back)."""
        os.rename(self.out, self.work / "old")

    def finish(self) -> None:
        """The build is published and recorded: remove the marker, then the work area."""
        self._close_journal()
        (self.work / MARKER).unlink(missing_ok=True)
        _remove(self.work)
        self._unlock()

    def abandon(self) -> None:
        """After an error or interrupt: remove the temporaries, keep what a rerun can use."""
        self._close_journal()
        if self._lock_fd is None:
            return  # not ours: another build holds the area
        _remove(self.tmp)
        staged = self.tree.is_dir() and any(self.tree.iterdir())
        if not staged and not self.journal:
            _remove(self.work)  # nothing worth resuming
        self._unlock()

    def _close_journal(self) -> None:
        if self._journal_fh is not None:
            self._journal_fh.close()
            self._journal_fh = None

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None


def _read_journal(path: Path) -> dict[str, Settled]:
    out: dict[str, Settled] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        try:
            entry = Settled(**json.loads(line))
        except (ValueError, TypeError):
            continue  # the last line, cut short by the crash
        out[entry.task_id] = entry
    return out


def _remove(path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE)."""
    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a), None, str(b))
