"""The test runners of repair tasks by name: the built-ins and third parties'.

A runner (a `TestRunner` subclass, see `base`) says how one language's projects are
detected, which files are tests, how their environment is prepared and how their tests
run with per-test results. `commits.repair` asks `detect` which runner serves a
repository and calls it for everything language-specific. Python/pytest (`python`), Go
(`go`) and JavaScript/TypeScript npm packages (`javascript`, `typescript`: node --test,
Jest, Vitest, Mocha) are built in and register the way a plug-in does; a package adds a
runner by calling `register_runner(MyRunner())` in a module named in the
`rlforge.test_runners` entry-point group (see `rlforge.plugins`). `get("python")` or
`get("python@1")` returns one; an unknown name raises `UnknownName` listing the valid ones.
"""

from __future__ import annotations

from collections.abc import Collection

from rlforge import plugins
from rlforge.tasks.generators.repair.runners.base import Dependencies, TestRun, TestRunner
from rlforge.tasks.generators.repair.runners.golang import GoTest
from rlforge.tasks.generators.repair.runners.javascript import NodeTests, TypeScriptTests
from rlforge.tasks.generators.repair.runners.python import Pytest

__all__ = ["Dependencies", "TestRun", "TestRunner", "detect", "get", "languages",
           "register_runner", "runners", "why_none"]
ENTRY_POINT_GROUP = "rlforge.test_runners"

_REGISTRY: dict[str, TestRunner] = {}


def register_runner(runner: TestRunner) -> TestRunner:
    """Add a runner (a higher version of a name replaces a lower one); the one now
    registered under its name."""
    return plugins.add_versioned(_REGISTRY, runner, "test runner")


register_runner(Pytest())
register_runner(GoTest())
register_runner(NodeTests())
register_runner(TypeScriptTests())


def runners() -> dict[str, TestRunner]:
    """Every test runner by name (built-ins and plug-ins), in registration order."""
    plugins.load(ENTRY_POINT_GROUP)
    return dict(_REGISTRY)


def languages() -> list[str]:
    """The languages some runner serves (valid values of `tasks.repair.language`)."""
    return sorted({r.language for r in runners().values()})


def get(name: str) -> TestRunner:
    """The runner called `name` or `name@version`; UnknownName lists the valid ones."""
    return plugins.get_versioned(runners(), name, "test runner")


def detect(paths: Collection[str], language: str | None = None) -> TestRunner | None:
    """The first runner (of `language`, if given) that detects the tree with these paths."""
    paths = set(paths)
    for runner in runners().values():
        if (language is None or runner.language == language) and runner.detect(paths):
            return runner
    return None


def why_none(language: str | None = None) -> str:
    """What the runners (of `language`) looked for, when `detect` found none."""
    tried = [r for r in runners().values() if language is None or r.language == language]
    return "; ".join(r.why_not() for r in tried) or f"no runner serves {language}"
