"""Which rollout starts next: per-generator quotas and longest-first ordering.

Rollouts of different generators cost very different amounts of time (a test suite
against one short answer). Started in file order, a few slow ones left for the end keep
the run going long after the pool went idle. So the scheduler

- keeps one queue per generator and starts, whenever a slot frees, the head of the queue
  whose rollouts are expected to take longest — the generator's mean duration so far
  once 3 of its rollouts finished, before that the task's `[agent] timeout_sec`, scaled
  by 0.1 for single-turn tasks, whose timeout is a loose bound;
- never runs more than `quota[generator]` rollouts of one generator at once (e.g. to
  keep test suites from taking every sandbox), and at most `concurrency` in all.

A task's samples are queued together, so a GRPO group finishes close together.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

SINGLE_TURN_WEIGHT = 0.1
MIN_OBSERVED = 3


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One rollout to run: a task (by index in the run's task list) and a sample index."""

    task: int
    sample: int
    generator: str
    prior: float  # expected seconds before anything is observed


class Scheduler:
    """Hands out work items to `concurrency` workers; see the module docstring."""

    def __init__(self, items: list[WorkItem], quotas: dict[str, int] | None = None):
        quotas = quotas or {}
        grouped: dict[str, list[WorkItem]] = {}
        for item in items:
            grouped.setdefault(item.generator, []).append(item)
        # Longest (by prior) first within a generator; a task's samples stay together.
        self.queues = {g: deque(sorted(q, key=lambda i: -i.prior)) for g, q in grouped.items()}
        self.quota = {g: max(1, int(quotas[g])) for g in grouped if quotas.get(g)}
        self.running = {g: 0 for g in grouped}
        self.observed = {g: [0, 0.0] for g in grouped}  # finished, seconds
        self._freed = asyncio.Event()
        self.remaining = len(items)

    def estimate(self, generator: str) -> float:
        """Expected seconds for the next rollout of `generator`."""
        done, seconds = self.observed[generator]
        if done >= MIN_OBSERVED:
            return seconds / done
        return self.queues[generator][0].prior

    def _pick(self) -> WorkItem | None:
        best, best_cost = None, -1.0
        for g, queue in self.queues.items():
            if not queue or self.running[g] >= self.quota.get(g, 1 << 30):
                continue
            cost = self.estimate(g)
            if cost > best_cost:
                best, best_cost = g, cost
        if best is None:
            return None
        self.running[best] += 1
        self.remaining -= 1
        return self.queues[best].popleft()

    async def take(self) -> WorkItem | None:
        """The next item to run, waiting while every generator with work is at its quota;
        None when nothing is left to start."""
        while True:
            item = self._pick()
            if item is not None or self.remaining == 0:
                return item
            self._freed.clear()
            await self._freed.wait()

    def finished(self, item: WorkItem, seconds: float) -> None:
        """Record that `item` ended after `seconds`, freeing its generator's slot."""
        self.running[item.generator] -= 1
        observed = self.observed[item.generator]
        observed[0] += 1
        observed[1] += seconds
        self._freed.set()


def prior_seconds(agent_timeout: float, multi_turn: bool) -> float:
    """The expected duration of a task's rollout before any has been observed."""
    return agent_timeout if multi_turn else agent_timeout * SINGLE_TURN_WEIGHT
