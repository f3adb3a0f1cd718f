"""Submissions: what a policy leaves behind, scored the way the task's verifier scores it.

A single-turn reply is scored as if written to the task's answer file: `as_file` gives the
bytes, `as_read` decodes them exactly as the standalone verifier reads a file (text mode,
UTF-8 with replacement, universal newlines, at most 1,000,000 characters), so in-process
scoring and `tests/test.sh` in the sandbox agree. A multi-turn rollout's submission is its
final workspace, stored as the files it changed (`workspace_changes`) so that
`rlforge rescore` can rebuild it (`rebuild_workspace`) without calling the model.
"""

from __future__ import annotations

import base64
import io
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from rlforge.errors import SubmissionTooLarge
from rlforge.sandbox.files import CopyLimits, iter_files
from rlforge.taskdir import Task
from rlforge.verify import kinds
from rlforge.verify.runner import fresh_workspace, remove_submitted

SUBMISSION_CHARS = 1_000_000  # what the standalone verifier reads of an answer file
WORKSPACE_LIMIT = 4_000_000  # bytes of changed workspace files stored with a rollout
SKIP_DIRS = ("__pycache__", ".pytest_cache")


def as_read(data: bytes) -> str:
    """File bytes as the standalone verifier reads them: text mode (UTF-8, undecodable
    bytes replaced, universal newlines), at most 1,000,000 characters."""
    reader = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace")
    return reader.read(SUBMISSION_CHARS)


def as_file(text: str | None) -> bytes:
    """A chat reply as the answer file's bytes (lone surrogates kept, as invalid UTF-8)."""
    return (text or "").encode("utf-8", "surrogatepass")


def score_text(task: Task, text: str | None) -> dict[str, Any]:
    """Score a reply in-process exactly as `tests/test.sh` scores it written to the answer
    file: the text goes through the same bytes and the same decoding."""
    return score_read(task, as_read(as_file(text)))


def score_read(task: Task, seen: str) -> dict[str, Any]:
    """Score the text the verifier would have read, with the task's own functions."""
    kind = kinds.get(task.verifier)
    if kind.score_text is None:
        raise ValueError(f"verifier {task.verifier!r} is not scored in-process")
    return kind.score_text(task.reference, seen)


def read_prefix(root: Path, rel: str, max_bytes: int) -> bytes:
    """The first `max_bytes` of root/rel, refusing symlinks at every component (the
    workspace was written by the policy) and anything but a regular file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    parts = PurePosixPath(rel).parts
    if not parts or ".." in parts or PurePosixPath(rel).is_absolute():
        raise OSError(f"bad path {rel!r}")
    fd = os.open(root, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            raise OSError(f"{rel} is not a regular file")
        chunks, left = [], max_bytes
        while left > 0 and (chunk := os.read(file_fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(file_fd)


def workspace_changes(start: Path, ws: Path, limit: int = WORKSPACE_LIMIT,
                      caps: CopyLimits = CopyLimits()) -> dict[str, Any]:
    """What the policy changed in its workspace: files written (new or different) and deleted.

    What is stored is exactly what every verifier kind scores: regular files. Symlinks,
    special files and entries the host cannot read are never read by a verifier's copy-in
    (`copy_tree_bounded`, `read_prefix`), so they are listed under `ignored` and count as
    absent: one standing where the starting workspace had a file is a deletion. Contents
    are text when they decode as UTF-8, else base64. Only content past `limit` bytes makes
    a submission incomplete: it is listed under `skipped` and `complete` is False (rescore
    judges it without those files and never lets it gain a pass). A workspace over a
    copy-out cap (`caps`: bytes per file, in all, files) is not read further: the result
    has no files, `error` is "submission too large" (a fail for the policy) and `detail`
    says which cap.
    """
    files: dict[str, dict[str, str]] = {}
    skipped: list[str] = []
    ignored: list[str] = []
    seen: set[str] = set()
    total = 0
    try:
        for key, data in iter_files(ws, caps, SKIP_DIRS):
            if data is None:  # no verifier reads it: absent, a deletion if it replaced a file
                ignored.append(key)
                continue
            seen.add(key)
            original = start / key
            if original.is_file() and not original.is_symlink() and original.read_bytes() == data:
                continue
            if total + len(data) > limit:
                skipped.append(key)
                continue
            total += len(data)
            try:
                files[key] = {"text": data.decode("utf-8")}
            except UnicodeDecodeError:
                files[key] = {"base64": base64.b64encode(data).decode()}
    except SubmissionTooLarge as exc:
        return {"type": "workspace", "files": {}, "deleted": [], "skipped": [], "ignored": [],
                "complete": False, "error": exc.reason, "detail": exc.detail}
    deleted = []
    if start.is_dir():
        for dirpath, dirnames, names in os.walk(start):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for name in names:
                key = str(PurePosixPath(os.path.relpath(os.path.join(dirpath, name), start)))
                if key not in seen and key not in skipped:
                    deleted.append(key)
    return {"type": "workspace", "files": files, "deleted": sorted(deleted),
            "skipped": skipped, "ignored": ignored, "complete": not skipped}


def files_of(submission: dict[str, Any]) -> dict[str, bytes]:
    """The written files of a workspace submission, as bytes."""
    out = {}
    for rel, content in submission.get("files", {}).items():
        out[rel] = (base64.b64decode(content["base64"]) if "base64" in content
                    else content["text"].encode("utf-8", "surrogatepass"))
    return out


def rebuild_workspace(task: Task, submission: dict[str, Any], root: Path) -> Path:
    """A fresh copy of the task's starting workspace with a stored submission applied.

    Files the submission does not hold (`skipped`: over the byte limit; in runs before
    `ignored` existed, also the links and special files) are absent, as a verifier would
    have found a link: never the starting workspace's version of them."""
    ws = fresh_workspace(task.path, root, files_of(submission))
    for rel in [*submission.get("deleted", []), *submission.get("skipped", [])]:
        remove_submitted(ws, rel)
    return ws

