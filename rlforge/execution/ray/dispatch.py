"""Hand items to node workers in batches and wait for each one's result.

`Dispatcher.call(payload)` looks like a local coroutine call: it returns the item's result
when a worker has finished it. Underneath, the items that callers hand in during one turn
of the event loop go out as one `submit` call per worker, and each worker is long-polled
(`results`) for everything it finished since the last poll — so at a high rate one Ray
call carries many items either way, and at a low rate an item still starts at once.

Each item goes to the alive worker with the most free room: its capacity (the caller's
share for it, see `capacities`) minus what it has in flight. When a worker dies (its node
went away) the caller may share the capacity again among the others (`rebalance`), and
the items it held go to them and run again — a rollout's seed is fixed, so it plays the
same; no result of it was written. When none is left, every waiting call raises
`WorkersLost` (a UserError: the run can be resumed).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from rlforge.errors import UserError
from rlforge.execution.ray.cluster import Worker, first_line
from rlforge.execution.ray.worker import WorkerFailure

logger = logging.getLogger("rlforge.execution.ray")


class WorkersLost(UserError):
    """Every Ray worker died; what finished before is kept."""


def capacities(workers: list[Worker], total: int) -> dict[Worker, int]:
    """`total` shared by the workers in proportion to their sandboxes, exactly (largest
    remainders first; a worker gets 0 when there is less to share than workers)."""
    weight = sum(w.sandboxes for w in workers) or 1
    exact = [total * w.sandboxes / weight for w in workers]
    share = [int(x) for x in exact]
    order = sorted(range(len(workers)), key=lambda i: (share[i] - exact[i], i))
    for i in order[:total - sum(share)]:
        share[i] += 1
    return dict(zip(workers, share))


class Dispatcher:
    """Items of one `kind` (rollout, validate, repair) to `workers`; see the module docstring."""

    def __init__(self, workers: list[Worker], kind: str, capacity: dict[Worker, int],
                 rebalance: Callable[[list[Worker]], dict[Worker, int]] | None = None):
        self.workers = workers
        self.kind = kind
        self.capacity = capacity
        self.rebalance = rebalance
        self.in_flight: dict[Worker, int] = {w: 0 for w in workers}
        self.batches = 0  # submit calls made (logged by the callers at the end)
        self.polls = 0  # results calls answered
        self._keys = itertools.count()
        self._pending: list[tuple[int, Any, asyncio.Future]] = []
        self._assigned: dict[int, tuple[Worker, Any, asyncio.Future]] = {}
        self._flush_scheduled = False
        self._gone = WorkersLost("every Ray worker is gone")
        self._pollers = [asyncio.create_task(self._poll(w)) for w in workers]

    async def call(self, payload: Any) -> Any:
        """Run one item on some worker; its result."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((next(self._keys), payload, future))
        self._schedule()
        return await future

    def _schedule(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, []
        try:
            self._send(pending)
        except Exception as exc:  # a bug here must reach the callers, not hang them
            for _, _, future in pending:
                if not future.done():
                    future.set_exception(exc)

    def _send(self, pending: list[tuple[int, Any, asyncio.Future]]) -> None:
        alive = [w for w in self.workers if w.alive]
        if not alive:
            for _, _, future in pending:
                if not future.done():
                    future.set_exception(self._gone)
            return
        alive = [w for w in alive if self.capacity[w] > 0] or alive
        batches: dict[Worker, list] = {}
        for key, payload, future in pending:
            if future.done():  # the caller gave up (cancelled)
                continue
            worker = max(alive, key=lambda w: self.capacity[w] - self.in_flight[w])
            self.in_flight[worker] += 1
            self._assigned[key] = (worker, payload, future)
            batches.setdefault(worker, []).append((key, payload))
        for worker, batch in batches.items():
            worker.handle.submit.remote(self.kind, batch)
            self.batches += 1

    async def _poll(self, worker: Worker) -> None:
        while True:
            try:
                finished = await worker.handle.results.remote(self.kind)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the actor or its node died
                self._lost(worker, exc)
                return
            self.polls += 1
            for key, result in finished:
                entry = self._assigned.pop(key, None)
                if entry is None:
                    continue
                self.in_flight[worker] -= 1
                worker.done += 1
                future = entry[2]
                if future.done():
                    continue
                if isinstance(result, WorkerFailure):
                    future.set_exception(RuntimeError(
                        f"the rlforge worker on {worker.name} failed:\n{result.traceback}"))
                else:
                    future.set_result(result)

    def _lost(self, worker: Worker, exc: BaseException) -> None:
        worker.alive = False
        orphans = [(key, payload, future) for key, (w, payload, future) in self._assigned.items()
                   if w is worker]
        for key, _, _ in orphans:
            del self._assigned[key]
        self.in_flight[worker] = 0
        reason = first_line(exc)
        if any(w.alive for w in self.workers):
            logger.warning("the Ray worker on %s is gone (%s); its %d items move to the others",
                           worker.name, reason, len(orphans))
            if self.rebalance is not None:
                self.capacity = {**self.capacity, worker: 0,
                                 **self.rebalance([w for w in self.workers if w.alive])}
            self._pending.extend(orphans)
            self._schedule()
            return
        self._gone = WorkersLost(f"every Ray worker is gone (the last, on {worker.name}: "
                                 f"{reason})")
        self._pending.extend(orphans)
        self._schedule()

    def stop(self) -> None:
        """Stop polling, without waiting (the workers are closed by their owner)."""
        for poller in self._pollers:
            poller.cancel()

    async def close(self) -> None:
        """Stop polling and wait until the pollers are done."""
        self.stop()
        await asyncio.gather(*self._pollers, return_exceptions=True)
