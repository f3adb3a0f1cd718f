"""The verifier a task carries in its tests/ directory: standard library only, one job a file.

Harbor (or any runner) scores a task with any Python 3.8+ and nothing else installed by
running `tests/test.sh`, which runs an entry module; rlforge imports the same modules and
scores in its own process, with its sandbox as the launcher of policy code, so both paths
give the same reward.

    verify       entry of answer, reply and script tasks (tests/rlforge_verify.py)
    repair       entry of code-repair tasks (tests/rlforge_repair.py)
    gorepair     entry of Go code-repair tasks (tests/rlforge_gorepair.py)
    noderepair   entry of JavaScript/TypeScript code-repair tasks (tests/rlforge_noderepair.py)
    entry        what both entries run: keep the verifier to itself, get the reward, write it
    rewards      a reward's components, total and outcome; the files Harbor reads
    answers      one short answer against the reference
    replies      a customer reply: facts, forbidden content, gates against stuffing
    script       a program the policy wrote, run on the visible and held-back data
    policy_code  the trust boundary: how policy code is launched, kept apart and swept
    patch        unified diffs applied to a tree
    protect      which paths of a repair are tests, runner config or shadowing modules
    callers      what a repair's changed source reads of its caller or the test run (a gate)
    testrun      pytest run as policy code under a watchdog, reports over a FIFO
    plugin       the pytest plugin inside the test process, and what it sends
    asserts      checked asserts: the literals stay here, the values come out
    canaries     planted tests that must fail
    variants     held-back pass-to-pass checks: copies of visible tests, an input changed
    gocanaries   Go canaries: copies of a file's passing tests with one checked literal changed
    gosource     Go source read without a parser: literals, braces, test functions
    repairscore  what every repair entry does around its test run: the private tree, the
                 protected-files gate, the hidden tests written, the components scored
    gotest       Go tests compiled, then run one top-level test a process, as policy code
    goreach      what a Go submission's code reaches of the test harness (a static gate)
    golaunch     starts a Go test binary that can then run no program and reach no /proc
    noderun      JavaScript/TypeScript test files run one process each, as policy code
    jsasserts    checked asserts of JavaScript tests: the literals stay here, values come out
    jsvalues     JavaScript values as tagged JSON: literals read, compared as JavaScript does
    jstitles     hidden JavaScript test files as the sandbox gets them: neutral titles, no comments
    jscanaries   JavaScript canaries: a file's own tests copied, one literal changed, placed beside them
    siblings     how an entry in tests/ loads the others: from their source, only

One file, two names. A module is copied into tests/ as `rlforge_<module>.py` and there
imports its siblings by those names; inside rlforge it imports them relatively. Each
module chooses by `__package__`, which is set only when it was imported as part of this
package (mypy reads the first branch):

    if TYPE_CHECKING or __package__:
        from .rewards import component
    else:
        from rlforge_rewards import component

So rlforge never imports a `rlforge_*` name (nothing on its path or in its working
directory can stand in for a module), and a task never imports rlforge. test.sh runs an
entry as `python3 -I /tests/rlforge_<entry>.py`: -I keeps PYTHONPATH, the user's
site-packages and the current directory (the policy's /app) off the path. The entry's own
directory stays off it too: the entry first runs `siblings` by path, which loads exactly
the `rlforge_*` names from their source beside it (never from bytecode), so nothing else
in tests/ (a planted `json.py`, a `__pycache__`) can stand in for a module. `plugin` imports no sibling: it is copied alone, under a random name,
into the test process, where the policy's tree is on the path.

A task carries exactly its entry and the modules that entry imports (`task_files`), all
in tests/, which policy code can neither read nor write (see `policy_code`).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREFIX = "rlforge_"
#: The entry a task of each verifier kind runs; every other kind (plug-ins too) runs `verify`.
ENTRIES = {"repair": "repair", "repair-go": "gorepair", "repair-js": "noderepair"}
DEFAULT_ENTRY = "verify"
#: What an entry runs by path before importing any sibling (see `siblings`).
LOADER = "siblings"


def copied_name(module: str) -> str:
    """The file name `module` has in a task's tests/ (`rewards` -> `rlforge_rewards.py`)."""
    return f"{PREFIX}{module}.py"


def siblings(module: str) -> list[str]:
    """The modules of this package that `module` imports (its relative imports)."""
    tree = ast.parse((HERE / f"{module}.py").read_bytes())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update([node.module] if node.module else [a.name for a in node.names])
    return sorted(found)


@functools.cache
def closure(*modules: str) -> tuple[str, ...]:
    """`modules` and every sibling they import, transitively, sorted."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += siblings(module)
    return tuple(sorted(seen))


def files_of(*modules: str) -> dict[str, bytes]:
    """The files of `closure(*modules)`: {copied name: source bytes}."""
    return {copied_name(m): (HERE / f"{m}.py").read_bytes() for m in closure(*modules)}


def task_files(verifier: str) -> dict[str, bytes]:
    """What a task of verifier kind `verifier` carries in tests/: its entry, the modules
    the entry imports and the loader it runs first (`siblings`), {file name: bytes}."""
    return files_of(ENTRIES.get(verifier, DEFAULT_ENTRY), LOADER)


def all_files() -> dict[str, bytes]:
    """Every module a task may carry (what a task's template hash covers)."""
    return files_of(DEFAULT_ENTRY, *sorted(set(ENTRIES.values())), LOADER)
