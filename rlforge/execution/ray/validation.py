"""Validation and the commits.repair build-time check on Ray.

- `validate_on_ray` is `rlforge.verify.validate.validate_many` with each task validated
  by `validate_task` in a node worker (oracle, null and adversarial submissions, leak
  check — the same code), on that node's sandbox pool and prepared environments; results
  come back in input order with the caller's paths. `rlforge validate --executor ray` and
  build-tasks' validation (`tasks.executor = "ray"`) call it as `RayBackend.validate`.
- `start_ray_checker` makes the commits.repair `Checker` with its sandboxed part on Ray: the
  verdict cache (`repair_checks` in the driver's DuckDB) stays with the driver, while
  `run_check` — write the parent and fixed trees, build the repository's environment, run
  its test suite twice on each — runs in a node worker on the commit's snapshot, which
  goes there through Ray's object store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Callable

from rlforge.execution.ray.cluster import (RayOptions, TaskFiles, close_workers, connected,
                                       kill_workers, probe_files, start_workers)
from rlforge.execution.ray.dispatch import Dispatcher, capacities
from rlforge.tasks.generators.repair.checks import Checker

logger = logging.getLogger("rlforge.execution.ray")


async def validate_on_ray(task_dirs: list[Path], options: RayOptions, *, workers: int = 0,
                          sandbox_mode: str = "bwrap",
                          progress: Callable | None = None,
                          concurrency: int | None = None,
                          settings: dict[str, Any] | None = None) -> list:
    """`validate_many` on Ray workers; see the module docstring."""
    paths = [Path(os.path.abspath(d)) for d in task_dirs]
    with connected(options.address) as ray:
        nodes = await start_workers(ray, sandbox_workers=workers, sandbox_mode=sandbox_mode,
                                    needs_sandbox=True, cache_dir=options.cache_dir,
                                    probe=probe_files(paths), task_files=options.task_files,
                                    sandbox=settings)
        dispatcher = None
        try:
            total = concurrency or 2 * sum(w.sandboxes for w in nodes)
            dispatcher = Dispatcher(nodes, "validate", capacities(nodes, total))
            files = TaskFiles.for_workers(ray, nodes, options.task_files)
            limit = asyncio.Semaphore(total)

            async def one(given: Path, path: Path):
                async with limit:
                    result = await dispatcher.call((str(path), str(given), await files.ref(path)))
                result.path = str(given)
                if progress:
                    progress(result)
                return result

            return list(await asyncio.gather(*(one(Path(g), p) for g, p in zip(task_dirs, paths))))
        finally:
            if dispatcher is not None:
                await dispatcher.close()
                logger.info("tasks validated per Ray node: %s",
                            ", ".join(f"{w.name} {w.done}" for w in nodes))
            await close_workers(ray, nodes)


class ClusterSandboxes:
    """What `CommitsRepair._check_all` needs of a sandbox pool when the pools are the
    workers' own: how many sandboxes there are (it checks half as many commits at once)."""

    def __init__(self, workers: int):
        self.workers = workers

    def close(self) -> None:
        """Nothing to close here: the checker's `close` ends the workers."""


async def start_ray_checker(con, opts, options: RayOptions, sandbox_workers: int,
                            sandbox_mode: str, cache_dir: Path,
                            settings: dict[str, Any] | None = None) -> Checker:
    """A commits.repair `Checker` whose sandboxed runs happen on Ray: connect, start a
    worker per node, give each a `Checker` of its own with `settings` (the driver's
    sandbox settings); the verdict cache stays here. Its `close` ends the workers."""
    stack = contextlib.ExitStack()
    state: dict[str, Any] = {"workers": [], "dispatcher": None, "ray": None}

    def close() -> None:
        """End the workers (each removes its scratch) and the Ray connection."""
        dispatcher, workers, ray = state["dispatcher"], state["workers"], state["ray"]
        if dispatcher is not None:
            dispatcher.stop()
        if workers:
            logger.info("commits checked per Ray node: %s",
                        ", ".join(f"{w.name} {w.done}" for w in workers))
            alive = [w.handle for w in workers if w.alive]
            with contextlib.suppress(Exception):
                ray.get([h.close.remote() for h in alive], timeout=30)
            kill_workers(ray, [w.handle for w in workers])
            state["workers"] = []
        stack.close()

    async def sandboxed(snap, repo_settings, requirements: list[str], rules: dict):
        return await state["dispatcher"].call((snap, repo_settings, requirements, rules))

    checker = Checker(con, opts, ClusterSandboxes(0), cache_dir, sandbox_mode, settings,
                      sandboxed=sandboxed, on_close=close)
    try:
        state["ray"] = ray = stack.enter_context(connected(options.address))
        state["workers"] = workers = await start_workers(
            ray, sandbox_workers=sandbox_workers, sandbox_mode=sandbox_mode,
            needs_sandbox=True, cache_dir=options.cache_dir, probe=[],
            task_files=options.task_files, sandbox=checker.settings)
        await asyncio.gather(*(w.handle.open_repair.remote(opts) for w in workers))
        sandboxes = sum(w.sandboxes for w in workers)
        state["dispatcher"] = Dispatcher(workers, "repair",
                                         capacities(workers, max(1, sandboxes // 2)))
        checker.pool = ClusterSandboxes(sandboxes)
    except BaseException:
        checker.close()
        raise
    return checker
