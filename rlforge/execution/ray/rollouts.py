"""`rlforge run --executor ray`: rollouts play in node workers; the run driver is unchanged.

`ray_session` plays a run's `Session` (`rlforge.run.session`) with Ray underneath: it
connects (see `cluster`), starts one worker per node, opens the policy client on each, and
hands the
run driver (`rlforge.run.driver.drive`) a `RayRolloutRunner` in place of the local
`RolloutRunner`. The driver keeps scheduling (quotas, longest first), rollouts.jsonl
(appended and flushed as each record arrives), the DuckDB loads, the live counters, and
so resume and rescore; a worker only plays the rollout, with the same `RolloutRunner`,
seed and environment code as a local run, and sends back the record. Workers snapshot
terminal episodes into the run's directory (`rlforge.run.snapshot`): with the runs
directory on a file system every node mounts at the same path, an episode whose node was
lost, or whose run was killed, continues from its last turn on whichever node takes it.

`run.concurrency` stays the number of rollouts in flight in the whole run (what the
endpoint sees); each worker gets a share by its sandboxes, and its policy client a share
of `run.request_concurrency` the same way. The API key goes to each worker in the call
that opens its client — over Ray's connection, not stored by Ray, held in the worker's
memory only. An endpoint on 127.0.0.1 (and the embedded model) is only reachable from
this machine, so with workers on other nodes the run refuses to start.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlsplit

from rlforge.errors import UserError
from rlforge.execution.ray.cluster import (RayOptions, TaskFiles, Worker, close_workers, connected,
                                       probe_files, start_workers)
from rlforge.execution.ray.dispatch import Dispatcher, capacities
from rlforge.records import RolloutRecord, RolloutSummary
from rlforge.run.driver import drive
from rlforge.run.session import Session, sandbox_needed
from rlforge.taskdir import Task

logger = logging.getLogger("rlforge.execution.ray")

#: Rollouts handed to the workers beyond those playing, as a share of run.concurrency: they
#: wait in the worker, so a finished rollout's slot is refilled without a driver round trip.
PREFETCH = 1.0


def room(slots: dict[Worker, int]) -> dict[Worker, int]:
    """What each worker is handed: its slots, and `PREFETCH` as many again waiting."""
    return {w: n + math.ceil(n * PREFETCH) for w, n in slots.items()}


class RayRolloutRunner:
    """The run driver's runner on Ray: `rollout(task, sample)` returns the record a
    worker played, with the local runner's guarantees (it never raises for the rollout's
    own failures)."""

    def __init__(self, dispatcher: Dispatcher, files: TaskFiles):
        self.dispatcher = dispatcher
        self.files = files

    async def rollout(self, task: Task, sample: int) -> RolloutRecord:
        path = os.path.abspath(task.path)
        fields = (task.task_id, path, task.generator, task.generator_version, task.verifier,
                  task.kind, task.split)
        return await self.dispatcher.call((fields, await self.files.ref(Path(path)), sample))


def check_endpoint_reachable(ray, workers: list[Worker], base_url: str, embedded: bool) -> None:
    """Refuse a loopback endpoint (or the embedded model) when workers run elsewhere."""
    me = ray.get_runtime_context().get_node_id()
    here = {n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == me}
    away = [w for w in workers if w.host not in here]  # another machine (nodes here share its IP)
    host = urlsplit(base_url).hostname or ""
    if away and (embedded or host in ("localhost", "::1") or host.startswith("127.")):
        what = "the embedded model" if embedded else f"the endpoint {base_url}"
        raise UserError(f"{what} listens on this machine's loopback interface, which Ray "
                        f"workers on {', '.join(w.name for w in away)} cannot reach; give "
                        "--base-url an address every node reaches")


async def ray_session(options: RayOptions, session: Session) -> list[RolloutSummary]:
    """The session's rollouts played by Ray workers; their summaries."""
    plan, tasks, items, policy = session.plan, session.tasks, session.items, session.policy
    concurrency = session.concurrency
    used = sorted({item.task for item in items})
    with connected(options.address) as ray:
        workers = await start_workers(
            ray, sandbox_workers=plan.sandbox_workers, sandbox_mode=plan.env.sandbox_mode,
            needs_sandbox=sandbox_needed(tasks, items, plan), cache_dir=options.cache_dir,
            probe=probe_files([Path(os.path.abspath(tasks[i].path)) for i in used]),
            task_files=options.task_files, sandbox=plan.sandbox)
        dispatcher = None
        try:
            check_endpoint_reachable(ray, workers, policy.base_url, plan.embedded)
            run = {"run_id": plan.run_id, "seed": plan.seed,
                   "time_budget": plan.time_budget, "env": asdict(plan.env),
                   "snapshots": str(session.store.snapshots_dir.resolve())}
            requests = capacities(workers, policy.concurrency)
            slots = capacities(workers, concurrency)
            await asyncio.gather(*(w.handle.open_run.remote(
                run, {**policy.record(), "concurrency": max(1, requests[w])}, session.api_key,
                slots[w])
                for w in workers))

            def rebalance(alive: list[Worker]) -> dict[Worker, int]:
                """A lost worker's slots go to the others; the run's concurrency holds."""
                again = capacities(alive, concurrency)
                for w in alive:
                    w.handle.set_slots.remote(again[w])
                return room(again)

            dispatcher = Dispatcher(workers, "rollout", room(slots), rebalance)
            runner = RayRolloutRunner(dispatcher, TaskFiles.for_workers(ray, workers,
                                                                        options.task_files))
            return await drive(tasks, items, runner, session.store, session.sink,
                               session.progress, concurrency=sum(room(slots).values()),
                               quotas=plan.generator_concurrency)
        finally:
            if dispatcher is not None:
                await dispatcher.close()
                logger.info("rollouts per Ray node: %s",
                            ", ".join(f"{w.name} {w.done}" for w in workers))
                logger.info("%d rollouts in %d submit calls and %d result polls",
                            sum(w.done for w in workers), dispatcher.batches, dispatcher.polls)
            await close_workers(ray, workers)
