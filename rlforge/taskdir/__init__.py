"""The task directory: its parts and paths, loading, discovery and the structural checks.

A task is a Harbor task directory, the thing every stage hands on:

    <task_id>/
      task.toml          [task] [metadata] [metadata.rlforge] [verifier] [agent] [environment]
      instruction.md     what the policy sees
      environment/       Dockerfile + app/ (the starting workspace, copied to /app)
      tests/             test.sh, rlforge_verify.py, reference.json, verifier data
      solution/          solve.sh (the gold solution)

Generators write it (`rlforge.tasks.render`, `rlforge.tasks.staging`) and everyone else
reads it (run, validation, the exports, the report, the Harbor and verifiers adapters)
through this package:

- `layout`: where each part lives (`TASK_TOML`, `WORKSPACE`, `REFERENCE`, ...);
- `task`: `Task`, the one record of a task directory; `load_task`, `task_dirs` and
  `discover_tasks`;
- `check`: whether a directory is a whole task (`check_task`, `check_whole`);
- `fasttoml`: task.toml parsed fast.

It sits low: it imports nothing of rlforge but `rlforge.errors`, so every layer can ask it.
"""

from rlforge.taskdir.check import IncompleteTask, check_task, check_whole, find_incomplete_tasks
from rlforge.taskdir.fasttoml import read_toml
from rlforge.taskdir.layout import (DOCKERFILE, ENVIRONMENT, EXECUTABLE, INSTRUCTION, MANIFEST,
                                    PARTS, REFERENCE, SOLUTION, SOLVE_SCRIPT, TASK_TOML,
                                    TEST_SCRIPT, TESTS, WORK_SUFFIX, WORKSPACE)
from rlforge.taskdir.task import Task, discover_tasks, load_task, read_task_toml, task_dirs

__all__ = ["DOCKERFILE", "ENVIRONMENT", "EXECUTABLE", "INSTRUCTION", "IncompleteTask", "MANIFEST",
           "PARTS", "REFERENCE", "SOLUTION", "SOLVE_SCRIPT", "TASK_TOML", "TESTS", "TEST_SCRIPT",
           "Task", "WORKSPACE", "WORK_SUFFIX", "check_task", "check_whole", "discover_tasks",
           "find_incomplete_tasks", "load_task", "read_task_toml", "read_toml", "task_dirs"]
