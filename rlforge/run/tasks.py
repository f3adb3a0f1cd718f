"""Task directories as a run sees them: the metadata it schedules by, files read lazily.

A task is a Harbor directory (`task.toml`, `instruction.md`, `tests/`, `environment/app/`);
`[metadata.rlforge]` in task.toml says which generator made it, how it is verified
(`verifier`), whether it is single-turn (`kind = "answer"`) or multi-turn
(`kind = "terminal"`), and its split. Directories made by other tools work too: missing
fields fall back to a script verifier, single turn, no split.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlforge.errors import UserError

#: Verifiers that only compare strings: scored in-process from tests/reference.json.
IN_PROCESS_VERIFIERS = ("answer", "reply")


@dataclass
class Task:
    """A Harbor task directory as a rollout needs it; files are read on first use."""

    path: Path
    task_id: str
    generator: str
    generator_version: int | None
    verifier: str
    kind: str
    split: str
    agent_timeout: float
    meta: dict[str, Any] = field(repr=False)
    _instruction: str | None = field(default=None, repr=False)
    _reference: dict | None = field(default=None, repr=False)

    @property
    def instruction(self) -> str:
        """instruction.md: what the policy sees."""
        if self._instruction is None:
            self._instruction = (self.path / "instruction.md").read_text(encoding="utf-8")
        return self._instruction

    @property
    def reference(self) -> dict:
        """tests/reference.json (empty when the task has none)."""
        if self._reference is None:
            ref = self.path / "tests" / "reference.json"
            self._reference = json.loads(ref.read_text(encoding="utf-8")) if ref.is_file() else {}
        return self._reference

    @property
    def in_process(self) -> bool:
        """Scored from reference data by string comparison (no sandbox needed)."""
        return self.verifier in IN_PROCESS_VERIFIERS and bool(self.reference)

    @property
    def answer_file(self) -> str:
        """The answer file, relative to /app (from the reference, default answer.txt)."""
        target = PurePosixPath(self.reference.get("submission", "/app/answer.txt"))
        try:
            return str(target.relative_to("/app"))
        except ValueError:
            return "answer.txt"

    def drop_files(self) -> None:
        """Forget the cached instruction and reference (memory, on long runs)."""
        self._instruction = self._reference = None


def load_task(task_dir: str | Path) -> Task:
    """Read a task directory's task.toml; a UserError if it is not a task."""
    path = Path(task_dir)
    toml_path = path / "task.toml"
    try:
        meta = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not a task directory (no task.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{toml_path}: not valid TOML ({exc})") from None
    rl = meta.get("metadata", {}).get("rlforge", {})
    name, _, version = str(rl.get("generator", "unknown")).partition("@")
    if not (path / "instruction.md").is_file():
        raise UserError(f"{path}: task has no instruction.md")
    return Task(
        path=path, task_id=str(rl.get("task_id") or path.name), generator=name,
        generator_version=int(version) if version.isdigit() else None,
        verifier=str(rl.get("verifier", "script")), kind=str(rl.get("kind", "answer")),
        split=str(rl.get("split", "")),
        agent_timeout=float(meta.get("agent", {}).get("timeout_sec", 120.0)), meta=meta)


def discover_tasks(tasks_dir: str | Path) -> list[Task]:
    """The task at `tasks_dir`, or every task directory directly inside it, by task id."""
    root = Path(tasks_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory; give a directory of tasks "
                        "(`rlforge build-tasks --out DIR`)")
    if (root / "task.toml").is_file():
        return [load_task(root)]
    dirs = sorted(e.path for e in os.scandir(root)
                  if e.is_dir() and os.path.isfile(os.path.join(e.path, "task.toml")))
    if not dirs:
        raise UserError(f"{root}: no task directories (folders with a task.toml) found")
    tasks = [load_task(d) for d in dirs]
    seen: dict[str, Path] = {}
    for t in tasks:
        if t.task_id in seen:
            raise UserError(f"task id {t.task_id} appears twice: {seen[t.task_id]} and {t.path}")
        seen[t.task_id] = t.path
    return tasks

