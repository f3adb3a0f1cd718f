"""Episode snapshots: a multi-turn episode cut off by a kill continues at its last turn.

After every complete turn of a terminal episode, the run driver (and `rlforge.envs`, on
request) writes the episode's state to a directory of its own:

    <dir>/episode.json    the conversation, the step records, the turn and idle counters,
                          the seed, the usage counters and the budget spent so far, and the
                          workspace as its difference from the task's starting workspace
                          (`rlforge.run.workspace`), hashed as a whole
    <dir>/blobs/<sha256>  the bytes of each file the difference needs, once per content
    <dir>/reply.json      the policy's reply that opens the next turn, written as soon as
                          it arrives: a kill while its commands run does not ask it again

episode.json is replaced atomically (written aside, fsynced, renamed), after the blobs it
names: a kill at any moment leaves the previous turn's snapshot or this one, whole. Blobs
no snapshot names any more are removed after the rename. A run keeps one directory per
rollout under way in `runs/<run_id>/snapshots/` (`EpisodeSnapshots`), under the project,
so a resume on this machine or a Ray worker on any node that mounts the runs directory
finds it; the directory goes once the rollout's record is in rollouts.jsonl.

Restoring rebuilds the workspace from a fresh copy of the task's environment and checks
its hash; a snapshot that does not restore byte for byte raises `SnapshotMismatch`, and
the run restarts that episode from its first turn and says so on the record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlforge.errors import SnapshotMismatch, SubmissionTooLarge
from rlforge.run.environment import Environment
from rlforge.run.workspace import write_atomic

logger = logging.getLogger("rlforge.run")

SCHEMA = 1
EPISODE = "episode.json"
BLOBS = "blobs"
REPLY = "reply.json"


@dataclass
class SaveCost:
    """What one snapshot cost: time, bytes written (episode.json and new blobs), bytes of
    workspace files hashed."""

    seconds: float
    bytes_written: int
    bytes_hashed: int


def save(env: Environment, directory: Path, extra: dict[str, Any] | None = None) -> SaveCost:
    """Snapshot `env` (a terminal episode under way, made with `track_workspace`) into
    `directory`; `extra`: JSON-ready fields stored beside the episode (the run driver's
    counters).

    Raises:
        SnapshotMismatch: the workspace holds what no snapshot can rebuild.
        SubmissionTooLarge: the workspace is past a copy-out cap.
        OSError: the directory cannot be written.
    """
    started = time.perf_counter()
    if env.tracker is None:
        raise SnapshotMismatch("this environment does not track its workspace "
                               "(make it with track_workspace=True)")
    state = env.episode_state()
    directory.mkdir(parents=True, exist_ok=True)
    blobs = directory / BLOBS
    capture = env.tracker.capture(blobs)
    doc = {"schema": SCHEMA, "episode": state, "workspace": capture.workspace, **(extra or {})}
    data = json.dumps(doc, separators=(",", ":")).encode()
    write_atomic(directory / EPISODE, data, durable=True)
    with contextlib.suppress(FileNotFoundError):  # the reply that opened this turn is in it
        os.unlink(directory / REPLY)
    for name in os.listdir(blobs):  # contents no snapshot names any more
        if name not in capture.blobs and not name.startswith("."):
            os.unlink(blobs / name)
    return SaveCost(time.perf_counter() - started, len(data) + capture.bytes_stored,
                    capture.bytes_read)


def load(directory: Path) -> dict[str, Any] | None:
    """The snapshot in `directory`, None when there is none.

    Raises:
        SnapshotMismatch: it is there but not readable.
    """
    try:
        data = (directory / EPISODE).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SnapshotMismatch(f"{directory / EPISODE}: {exc.strerror}") from None
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise SnapshotMismatch(f"{directory / EPISODE} is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SnapshotMismatch(f"{directory / EPISODE}: not a snapshot of schema {SCHEMA}")
    return doc


def save_reply(directory: Path, turn: int, message: dict[str, Any], extra: dict[str, Any]) -> int:
    """Keep the policy's `message` that opens turn `turn + 1` of the episode snapshotted
    in `directory` (after `turn` turns), with `extra` (the counters once it arrived); the
    bytes written. The next `save` removes it."""
    directory.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"schema": SCHEMA, "turn": turn, "message": message, **extra},
                      separators=(",", ":")).encode()
    write_atomic(directory / REPLY, data, durable=True)
    return len(data)


def load_reply(directory: Path, turn: int) -> dict[str, Any] | None:
    """The reply kept for the turn after `turn` turns, None when there is none for it. One
    that cannot be read is as none: the policy is asked again."""
    try:
        doc = json.loads((directory / REPLY).read_bytes())
    except (OSError, ValueError):
        return None
    if (not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("turn") != turn
            or not isinstance(doc.get("message"), (dict, str))):
        return None
    return doc


async def restore(env: Environment, doc: dict[str, Any], directory: Path) -> list[dict[str, Any]]:
    """Continue `env` from the snapshot `doc` (read by `load` from `directory`); the
    messages to send to the policy. `SnapshotMismatch` leaves `env` freshly reset."""
    try:
        episode, workspace = doc["episode"], doc["workspace"]
    except (KeyError, TypeError):
        raise SnapshotMismatch(f"{directory / EPISODE} lacks its episode or workspace") from None
    return await env.resume(episode, workspace, directory / BLOBS)


class EpisodeSnapshots:
    """`runs/<run_id>/snapshots/`: one snapshot directory per rollout under way."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._failed = False

    def directory(self, rollout_id: str) -> Path:
        return self.root / rollout_id.replace("/", "%2F")

    def load(self, rollout_id: str) -> dict[str, Any] | None:
        """The rollout's snapshot (None: none); `SnapshotMismatch` when unreadable."""
        return load(self.directory(rollout_id))

    def save(self, env: Environment, rollout_id: str, extra: dict[str, Any]) -> SaveCost | None:
        """Snapshot one rollout's episode; None when it cannot be (the previous snapshot,
        whole, stays: a resume repeats the turns since). Never raises for it: a rollout
        goes on without its snapshot."""
        try:
            return save(env, self.directory(rollout_id), extra)
        except (SnapshotMismatch, SubmissionTooLarge) as exc:
            logger.info("rollout %s: turn %d not snapshotted (%s)", rollout_id, env.turns, exc)
        except OSError as exc:
            if not self._failed:  # once per run: the directory is unwritable, say
                logger.warning("episode snapshots cannot be written to %s (%s); interrupted "
                               "episodes will restart from their first turn", self.root, exc)
            self._failed = True
        return None

    def save_reply(self, rollout_id: str, turn: int, message: dict[str, Any],
                   extra: dict[str, Any]) -> None:
        """Keep a reply that opens a turn (`save_reply`); never raises for it: a resume
        then asks the policy again."""
        try:
            save_reply(self.directory(rollout_id), turn, message, extra)
        except (OSError, TypeError, ValueError) as exc:
            logger.info("rollout %s: the reply of turn %d not kept (%s)", rollout_id, turn + 1, exc)

    def reply(self, rollout_id: str, turn: int) -> dict[str, Any] | None:
        """The reply kept for the turn after `turn` turns (`load_reply`)."""
        return load_reply(self.directory(rollout_id), turn)

    def discard(self, rollout_id: str) -> None:
        """Remove a rollout's snapshot (its record is written)."""
        shutil.rmtree(self.directory(rollout_id), ignore_errors=True)

    def discard_all_but(self, under_way: set[str]) -> None:
        """Remove every snapshot but those of `under_way` rollouts (on resume: the others
        finished, their record written before their snapshot went)."""
        if not self.root.is_dir():
            return
        keep = {self.directory(r).name for r in under_way}
        for entry in self.root.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry, ignore_errors=True)
