"""Where each part of a task directory lives: the one place that spells the layout.

A task is a Harbor task directory (see `rlforge.taskdir`). Every name here is relative to
the task directory and written with "/" (a `Path` joins it as it is), so a generator
writes the same path a reader opens.
"""

from __future__ import annotations

TASK_TOML = "task.toml"
INSTRUCTION = "instruction.md"
ENVIRONMENT = "environment"
DOCKERFILE = f"{ENVIRONMENT}/Dockerfile"
#: The starting workspace: what the Dockerfile copies to /app, and every sandbox starts from.
WORKSPACE = f"{ENVIRONMENT}/app"
TESTS = "tests"
TEST_SCRIPT = f"{TESTS}/test.sh"
#: The verifier's reference data: read by the scorer, never shown to policy code.
REFERENCE = f"{TESTS}/reference.json"
SOLUTION = "solution"
SOLVE_SCRIPT = f"{SOLUTION}/solve.sh"
#: Scripts written executable.
EXECUTABLE = (TEST_SCRIPT, SOLVE_SCRIPT)

#: What every task holds, whatever its generator (a directory is written with a trailing
#: "/"): a folder with some of these, but not all, is a task cut short, by a crash of an
#: rlforge older than the build's staging protocol or by an interrupted copy.
PARTS = (TASK_TOML, INSTRUCTION, f"{ENVIRONMENT}/", TEST_SCRIPT, SOLVE_SCRIPT)

#: Beside the task directories a build writes: the list of its tasks.
MANIFEST = "manifest.parquet"
#: A build into `out` stages its work in `.<out>.rlforge-build` beside it: nothing in there
#: is a task to use.
WORK_SUFFIX = ".rlforge-build"
