"""Whether a task directory is whole: every part of `PARTS` there, and none of it inside
a build's work area. `rlforge validate`, `rlforge run` and `rlforge.envs` refuse anything
else, naming what is missing, so a task a crash cut short is never scored."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rlforge.errors import UserError
from rlforge.taskdir.layout import PARTS, TASK_TOML, WORK_SUFFIX


@dataclass
class IncompleteTask:
    """An entry that `validate` and `run` refuse: not a whole task."""

    name: str
    reason: str
    missing: tuple[str, ...] = ()  # the parts it lacks (none: it is refused for `reason`)


def missing_parts(task_dir: str | Path) -> list[str]:
    """The parts of `PARTS` that `task_dir` lacks (all of them: it is no task)."""
    return [part for part in PARTS
            if not (os.path.isdir if part.endswith("/") else os.path.isfile)(
                os.path.join(task_dir, part))]


def _not_whole(task_dir: str | Path, missing: list[str] | tuple[str, ...]) -> UserError:
    return UserError(f"{task_dir} is not a whole task: missing {', '.join(missing)}; rebuild "
                     "it with `rlforge build-tasks` or remove it")


def check_task(task_dir: str | Path) -> None:
    """Raise a `UserError` naming what a task directory lacks, if it is not whole."""
    missing = missing_parts(task_dir)
    if missing:
        raise _not_whole(task_dir, missing)


def find_incomplete_tasks(path: str | Path) -> list[IncompleteTask]:
    """The entries of a task directory, or a directory of tasks, that are not whole tasks.

    A build publishes a task only by renaming it into place once it is whole, so anything
    inside a build's work area (its temporaries and its not yet published tree) is not a
    task to use. A task directory, or a folder in a directory of tasks that holds any of
    `PARTS`, must hold them all; a folder with none of them is not a task and is left
    alone.

    Args:
        path: what `rlforge validate` or `rlforge run` was given.

    Returns:
        One entry per problem, named as the user would look for it; empty when all is whole.
    """
    path = Path(path)
    real = Path(os.path.realpath(path))
    for p in (real, *real.parents):
        if p.name.startswith(".") and p.name.endswith(WORK_SUFFIX):
            return [IncompleteTask(str(path), f"it lies in {p}, the work area of an unfinished "
                                   "build-tasks; rerun that build-tasks to finish it")]
    if not path.is_dir():
        return []
    if (path / TASK_TOML).is_file():
        missing = missing_parts(path)
        return [IncompleteTask(str(path), f"missing {', '.join(missing)}", tuple(missing))] \
            if missing else []
    problems = []
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if not entry.is_dir() or not _holds_a_part(entry.path):
            continue
        missing = missing_parts(entry.path)
        if missing:
            problems.append(IncompleteTask(entry.name, f"missing {', '.join(missing)}",
                                           tuple(missing)))
    return problems


def _holds_a_part(folder: str) -> bool:
    """Whether a folder holds anything of a task (a part, or the folder a part goes in)."""
    return any(os.path.lexists(os.path.join(folder, part.split("/")[0])) for part in PARTS)


def check_whole(path: str | Path) -> None:
    """Raise a `UserError` naming the entries of `path` that are not whole tasks, and what
    each lacks (one line, as every `UserError`)."""
    problems = find_incomplete_tasks(path)
    if not problems:
        return
    if problems[0].name == str(path):  # `path` itself: a task, or inside a work area
        if problems[0].missing:
            raise _not_whole(path, problems[0].missing)
        raise UserError(f"{path}: {problems[0].reason}")
    shown = "; ".join(f"{p.name} ({p.reason})" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    raise UserError(f"{path} holds {len(problems)} task(s) that are not whole: {shown}{more}; "
                    "rebuild them with `rlforge build-tasks` or remove them")
