"""Run many sandboxes at once, from asyncio, never more than a fixed number at a time.

Each run blocks a worker thread while it supervises its bubblewrap process, so the pool's
thread count is its concurrency bound. Cancelling an awaiting task kills that sandbox's
process tree before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from rlforge.sandbox.runner import run
from rlforge.sandbox.spec import SandboxResult, SandboxSpec


def default_workers() -> int:
    """Two sandboxes per CPU this process may use (most verifier time is spent waiting)."""
    return 2 * len(os.sched_getaffinity(0))


async def run_in_thread(cmd: Sequence[str], spec: SandboxSpec | None = None,
                        executor: Executor | None = None) -> SandboxResult:
    """Run `cmd` in a sandbox on a thread of `executor` (None: the event loop's default);
    see `rlforge.sandbox.run`. Cancelling the awaiting task kills the sandbox's process
    tree and waits for the run's thread to end before the cancellation goes on, so no
    sandbox (or thread) outlives a timeout that cancelled it.

    Raises:
        SandboxUnavailable: sandboxes cannot be built on this machine.
        asyncio.CancelledError: the awaiting task was cancelled; the sandbox was killed
            first.
    """
    cancel = threading.Event()
    future = asyncio.get_running_loop().run_in_executor(
        executor, functools.partial(run, cmd, spec, cancel=cancel))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        cancel.set()
        try:
            await future
        except Exception:  # the caller asked to stop; the run's own outcome is moot
            pass
        raise


class SandboxPool:
    """A bounded pool of sandbox runs, usable from asyncio.

    Example:
        async with SandboxPool() as pool:
            results = await asyncio.gather(*(pool.run(["bash", "/tests/test.sh"], spec)
                                             for spec in specs))

    Args:
        workers: Most sandboxes running at once; 0 means `default_workers()` (the
            `sandbox.workers` setting uses the same convention).
    """

    def __init__(self, workers: int = 0):
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.workers = workers or default_workers()
        self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="rlforge-sandbox")

    async def run(self, cmd: Sequence[str], spec: SandboxSpec | None = None) -> SandboxResult:
        """Run `cmd` in a sandbox once a worker is free; see `run_in_thread`."""
        return await run_in_thread(cmd, spec, self._executor)

    def close(self) -> None:
        """Wait for running sandboxes to finish and stop the worker threads."""
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> "SandboxPool":
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)
