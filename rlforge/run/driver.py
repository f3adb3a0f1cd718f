"""The run driver: every (task, sample) rollout of a run, concurrently, stored as it ends.

`RolloutRunner.rollout` plays one rollout against the policy endpoint through the same
`Environment` that `rlforge.envs` gives trainers, and returns its record — whatever
happens: a policy error, a broken sandbox or a crashed verifier is recorded on the
rollout (outcome `invalid`), a rollout past its time budget ends as `timeout`. `drive`
runs the scheduler's items on `concurrency` workers, appends each record to
rollouts.jsonl, feeds the live counters, and loads the `rollouts` table in batches.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, cast

from rlforge import db
from rlforge.errors import (PolicyBadRequest, PolicyContextLength, PolicyRequestError,
                            SnapshotMismatch, UserError)
from rlforge.records import Outcome, Reward, RolloutError, RolloutRecord, RolloutSummary
from rlforge.run.environment import EnvOptions, Environment, InfraError
from rlforge.run.schedule import Scheduler, WorkItem
from rlforge.run.snapshot import EpisodeSnapshots, restore
from rlforge.run.store import RunStore, insert_lines, utc_now
from rlforge.taskdir import Task
from rlforge.verify import kinds
from rlforge.verify.runner import TaskRunner

logger = logging.getLogger("rlforge.run")

RECORD_SCHEMA = 1
FLUSH_SECONDS = 5.0


def sample_seed(run_seed: int, task_id: str, sample: int) -> int:
    """The sampling seed of one rollout: fixed by the run's seed, distinct per sample."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class Progress:
    """Live counters of a run, read by the live view (from its own thread)."""

    total: int = 0
    done: int = 0
    in_flight: int = 0
    outcomes: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    resumed: int = 0  # rollouts already stored when this session started
    episodes_resumed: int = 0  # continued from a snapshot in this session
    episodes_restarted: int = 0  # whose snapshot did not restore: played from turn 1

    def add(self, fact: RolloutSummary, resumed: list[dict[str, Any]] | None = None) -> None:
        """Count one finished rollout (`resumed`: its record's, to count resumed episodes)."""
        if resumed:  # its last entry is this session's
            if "restarted" in resumed[-1]:
                self.episodes_restarted += 1
            else:
                self.episodes_resumed += 1
        self.done += 1
        self.outcomes[fact.outcome] += 1
        if fact.error_type:
            self.errors[fact.error_type] += 1
        self.prompt_tokens += fact.prompt_tokens
        self.completion_tokens += fact.completion_tokens

    @property
    def pass_rate(self) -> float | None:
        valid = self.done - self.outcomes["invalid"]
        return self.outcomes["pass"] / valid if valid else None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def tokens_per_second(self) -> float:
        return self.completion_tokens / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def rollouts_per_second(self) -> float:
        return (self.done - self.resumed) / self.elapsed if self.elapsed > 0 else 0.0


class RolloutRunner:
    """Plays rollouts of one run against one policy client.

    Args:
        client: an open `PolicyClient`.
        env_options: the environment loop's settings.
        task_runner: sandbox runs (commands, verifiers); None when every task is scored
            in-process.
        scratch: a directory for workspaces.
        run_id, run_seed: written on every record; the seed derives each sample's seed.
        time_budget: seconds per rollout (0: each task's `[agent] timeout_sec`).
        snapshots: where terminal episodes are snapshotted after each turn and found
            again on resume (`rlforge.run.snapshot`); None: not snapshotted.
    """

    def __init__(self, client, env_options: EnvOptions, task_runner: TaskRunner | None,
                 scratch: Path, *, run_id: str, run_seed: int, time_budget: float = 0.0,
                 snapshots: EpisodeSnapshots | None = None):
        self.client = client
        self.env_options = env_options
        self.task_runner = task_runner
        self.scratch = scratch
        self.run_id = run_id
        self.run_seed = run_seed
        self.time_budget = time_budget
        self.snapshots = snapshots

    async def _answers(self, messages: list[dict[str, Any]], seed: int,
                       tools: list[dict[str, Any]] | None) -> bool:
        """Whether the endpoint answers `messages` (one token asked) right now."""
        try:
            await self.client.chat(messages, seed=seed, tools=tools,
                                   tool_choice="auto" if tools else None, max_tokens=1)
        except PolicyRequestError:
            return False
        return True

    async def rollout(self, task: Task, sample: int) -> RolloutRecord:
        """Run one rollout to its end and return its record (never raises for the
        rollout's own failures; see the module docstring). A terminal episode with a
        snapshot (an earlier session was cut off) continues from it."""
        seed = sample_seed(self.run_seed, task.task_id, sample)
        rollout_id = f"{task.task_id}#{sample}"
        started_at, clock = utc_now(), time.perf_counter()
        snapshots = self.snapshots if task.kind == "terminal" else None
        env = Environment(task, self.env_options, self.task_runner, self.scratch,
                          track_workspace=snapshots is not None)
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0, "attempts": 0,
                 "policy_seconds": 0.0}
        error: dict[str, Any] | None = None
        outcome: Outcome | None = None
        finish_reason = None
        tools = env.tools
        budget = self.time_budget
        resumed: list[dict[str, Any]] = []
        earlier = 0.0  # wall seconds of the sessions before this one
        try:
            budget = budget or task.agent_timeout  # reads task.toml if not read yet
            messages = None
            spent = 0.0  # of the budget, in the sessions before this one
            snap = self._snapshot(snapshots, rollout_id, seed, resumed)
            restarted = False
            if snap is not None and snapshots is not None:  # restoring is rlforge's time
                try:
                    messages = await restore(env, snap, snapshots.directory(rollout_id))
                    usage.update(snap["usage"])
                    finish_reason = snap["finish_reason"]
                    spent, earlier = float(snap["budget_seconds"]), float(snap["seconds"])
                    started_at = snap["started_at"]
                    resumed.append({"after_turn": env.turns, "at": utc_now()})
                except SnapshotMismatch as exc:  # never a partial episode: from turn 1
                    resumed.append(_restarted(snap, str(exc)))
                    restarted = True
            # The reply that opened the turn a kill cut off, if it had arrived: that turn
            # plays again from it, the policy not asked twice.
            reply = (snapshots.reply(rollout_id, env.turns)
                     if snapshots is not None and not restarted else None)
            if reply is not None and all(k in reply for k in _SNAPSHOT_FIELDS if k != "resumed"):
                usage.update(reply["usage"])
                finish_reason = reply["finish_reason"]
                spent, earlier = float(reply["budget_seconds"]), float(reply["seconds"])
                started_at = reply["started_at"]
                if snap is None:  # cut off in its first turn: nothing snapshotted yet
                    resumed.extend(reply.get("resumed") or [])
                    resumed.append({"after_turn": 0, "at": utc_now()})
                resumed[-1]["reply_kept"] = True
            else:
                reply = None
            opened, overhead = time.perf_counter(), 0.0
            async with asyncio.timeout(budget - spent) as deadline:
                env.on_scoring = lambda: deadline.reschedule(None)  # verifying is not the policy's time
                if messages is None:
                    messages = await env.reset()
                first = list(messages[:2])  # the system prompt and the instruction

                async def keep(save: Callable[..., Any], *args: Any) -> None:
                    """Snapshot work, in a thread; not the policy's time."""
                    nonlocal overhead
                    now = time.perf_counter()
                    await asyncio.to_thread(save, *args)
                    cost = time.perf_counter() - now
                    overhead += cost
                    when = deadline.when()
                    if when is not None:
                        deadline.reschedule(when + cost)

                def counters() -> dict[str, Any]:
                    now = time.perf_counter()
                    return {"rollout_id": rollout_id, "seed": seed, "usage": dict(usage),
                            "finish_reason": finish_reason, "started_at": started_at,
                            "budget_seconds": spent + now - opened - overhead,
                            "seconds": earlier + now - clock, "resumed": resumed}

                while not env.done:
                    if reply is not None:
                        message, reply = reply["message"], None
                        messages, _, _, _ = await env.step(message)
                        if snapshots is not None and not env.done:
                            await keep(snapshots.save, env, rollout_id, counters())
                        continue
                    usage["requests"] += 1
                    asked_at = time.perf_counter()
                    try:
                        result = await self.client.chat(
                            messages, seed=seed, tools=tools,
                            tool_choice="auto" if tools else None)
                    except asyncio.CancelledError:  # the budget ran out while it answered
                        usage["policy_seconds"] += time.perf_counter() - asked_at
                        raise
                    except PolicyContextLength as exc:
                        _count_failure(usage, exc)
                        error = exc.record()
                        await env.finish(None, "context_length")
                        break
                    except PolicyBadRequest as exc:
                        # Refused after the episode's first request was answered: what
                        # changed since is what the policy added (its tool calls, the
                        # output of its commands). If the endpoint still answers that first
                        # request, the refusal is the policy's doing: the episode ends and
                        # is scored, as at a context overflow. Otherwise it is the endpoint's.
                        if usage["requests"] == 1 or not await self._answers(first, seed, tools):
                            raise
                        _count_failure(usage, exc)
                        error = {**exc.record(), "infra": False}
                        await env.finish(None, "request_refused")
                        break
                    usage["attempts"] += result.attempts
                    usage["policy_seconds"] += result.latency
                    usage["prompt_tokens"] += result.prompt_tokens or 0
                    usage["completion_tokens"] += result.completion_tokens or 0
                    finish_reason = result.finish_reason
                    if snapshots is not None:
                        await keep(snapshots.save_reply, rollout_id, env.turns, result.message,
                                   counters())
                    messages, _, _, _ = await env.step(result.message)
                    if snapshots is not None and not env.done:
                        await keep(snapshots.save, env, rollout_id, counters())
        except TimeoutError:
            outcome = "timeout"
            error = {"type": "time_budget", "infra": False,
                     "message": f"the rollout ran past its time budget of {budget:g}s"}
        except PolicyRequestError as exc:
            _count_failure(usage, exc)
            outcome, error = "invalid", exc.record()
        except InfraError as exc:
            outcome, error = "invalid", exc.record()
        except UserError as exc:  # the task directory is broken, not the policy
            outcome, error = "invalid", {"type": "task", "infra": True, "message": str(exc)}
        except Exception as exc:  # a bug in rlforge: kept on the rollout, logged in full
            logger.exception("rollout %s#%d failed inside rlforge", task.task_id, sample)
            outcome = "invalid"
            error = {"type": "internal_error", "infra": True,
                     "message": f"{type(exc).__name__}: {exc}"[:500]}
        finally:
            env.close()
        if outcome is None:
            outcome = "pass" if env.reward and env.reward.get("outcome") == "pass" else "fail"
            reward = env.reward
        elif outcome == "timeout":
            assert error is not None, "a timeout records its error"
            reward = {"components": {}, "total": 0.0, "outcome": "timeout",
                      "detail": error["message"]}
        else:
            reward = None
        return {
            "schema": RECORD_SCHEMA, "run_id": self.run_id,
            "rollout_id": f"{task.task_id}#{sample}", "task_id": task.task_id,
            "sample": sample, "seed": seed, "generator": task.generator,
            "generator_version": task.generator_version, "split": task.split,
            "kind": task.kind, "verifier": task.verifier,
            # the dicts the environment and the policy client build have these shapes
            "outcome": outcome, "reward": cast("Reward | None", reward),
            "error": cast("RolloutError | None", error),
            "ended_by": env.ended_by or ("time_budget" if outcome == "timeout" else "error"),
            "turns": env.turns, "commands": len(env.steps),
            "prompt_tokens": int(usage["prompt_tokens"]),
            "completion_tokens": int(usage["completion_tokens"]),
            "requests": int(usage["requests"]), "attempts": int(usage["attempts"]),
            "policy_seconds": usage["policy_seconds"],
            "seconds": round(earlier + time.perf_counter() - clock, 6),
            "started_at": started_at, "finished_at": utc_now(),
            "scored_by": (("in_process" if kinds.scored_in_process(task) else "sandbox")
                          if reward is not None and outcome != "timeout" else None),
            "finish_reason": finish_reason,
            "messages": env.messages, "steps": env.steps, "submission": env.submission,
            "resumed": resumed,
        }

    def _snapshot(self, snapshots: EpisodeSnapshots | None, rollout_id: str, seed: int,
                  resumed: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The rollout's snapshot from an earlier session, if it has a usable one; one that
        cannot be used is noted in `resumed` (the episode restarts)."""
        if snapshots is None:
            return None
        try:
            snap = snapshots.load(rollout_id)
            if snap is not None and (snap.get("rollout_id"), snap.get("seed")) != (rollout_id, seed):
                raise SnapshotMismatch(f"the snapshot is of {snap.get('rollout_id')} with seed "
                                       f"{snap.get('seed')}, not of {rollout_id} with seed {seed}")
            missing = [k for k in _SNAPSHOT_FIELDS if snap is not None and k not in snap]
            if missing:
                raise SnapshotMismatch(f"the snapshot lacks {', '.join(missing)}")
        except SnapshotMismatch as exc:
            resumed.append(_restarted(None, str(exc)))
            return None
        if snap is not None:
            resumed.extend(snap.get("resumed") or [])
        return snap


#: What the run driver stores beside an episode in its snapshot.
_SNAPSHOT_FIELDS = ("usage", "finish_reason", "started_at", "budget_seconds", "seconds",
                    "resumed")


def _restarted(snap: dict[str, Any] | None, reason: str) -> dict[str, Any]:
    """The `resumed` entry of an episode whose snapshot could not be used."""
    turn = (snap.get("episode") or {}).get("turns") if isinstance(snap, dict) else None
    return {"after_turn": 0, "at": utc_now(), "snapshot_turn": turn, "restarted": reason}


def _count_failure(usage: dict[str, Any], exc: PolicyRequestError) -> None:
    """Adds a failed request's attempts and time (its latency) to the rollout's usage."""
    usage["attempts"] += exc.attempts
    usage["policy_seconds"] += exc.latency


class TableSink:
    """Loads finished rollouts into the `rollouts` table in batches, off the event loop.

    A batch that cannot be written (another process holds the database) stays queued for
    the next one; rollouts.jsonl has everything regardless.
    """

    def __init__(self, db_path: str | Path, interval: float = FLUSH_SECONDS):
        self.db_path = db_path
        self.interval = interval
        self.lines: list[str] = []
        self.written = 0
        self.failures = 0
        self._lock = asyncio.Lock()

    def add(self, line: str) -> None:
        """Queue one rollouts.jsonl line."""
        self.lines.append(line)

    async def flush(self) -> None:
        """Load the queued lines (in a thread; DuckDB does the parsing)."""
        async with self._lock:
            lines, self.lines = self.lines, []
            if not lines:
                return
            try:
                await asyncio.to_thread(self._write, lines)
                self.written += len(lines)
            except Exception as exc:  # a locked or unwritable database: retry later
                self.failures += 1
                if self.failures == 1:
                    logger.warning("rollouts not loaded into %s yet (%s); will retry",
                                   self.db_path, exc)
                self.lines = lines + self.lines

    def _write(self, lines: list[str]) -> None:
        con = db.connect(self.db_path)
        try:
            insert_lines(con, lines)
        finally:
            con.close()

    async def run_periodically(self, stop: asyncio.Event) -> None:
        """Flush every `interval` seconds until `stop` is set (a batch being written is
        finished first, never cut off: its rows are not queued anywhere else)."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.interval)
            except TimeoutError:
                await self.flush()


class Rollouts(Protocol):
    """What `drive` plays rollouts with: a `RolloutRunner`, or the Ray executor's runner
    that hands them to workers."""

    async def rollout(self, task: Task, sample: int) -> RolloutRecord: ...


async def drive(tasks: list[Task], items: list[WorkItem], runner: Rollouts,
                store: RunStore, sink: TableSink | None, progress: Progress, *,
                concurrency: int, quotas: dict[str, int] | None = None,
                on_record: Callable[[RolloutRecord, RolloutSummary], None] | None = None) -> list[RolloutSummary]:
    """Run `items` on `concurrency` workers; every record is stored as it ends.

    Returns the facts of the rollouts run (in finishing order). When all went well the
    sink keeps its last batch (`sink.lines`) for the caller to load with the run's
    summary in one transaction; if the run was interrupted, it is loaded here.
    """
    scheduler = Scheduler(items, quotas)
    snapshots = EpisodeSnapshots(store.snapshots_dir)
    remaining = Counter(item.task for item in items)
    facts: list[RolloutSummary] = []

    async def worker() -> None:
        while (item := await scheduler.take()) is not None:
            task = tasks[item.task]
            progress.in_flight += 1
            try:
                record = await runner.rollout(task, item.sample)
            finally:
                progress.in_flight -= 1
            scheduler.finished(item, record["seconds"])
            line = store.append(record)
            if record["kind"] == "terminal":  # its record is written: its snapshot goes
                snapshots.discard(record["rollout_id"])
            fact = RolloutSummary.of(record)
            facts.append(fact)
            progress.add(fact, record.get("resumed"))
            if sink is not None:
                sink.add(line)
            if on_record is not None:
                on_record(record, fact)
            remaining[item.task] -= 1
            if not remaining[item.task]:
                task.drop_files()

    stop = asyncio.Event()
    flusher = asyncio.create_task(sink.run_periodically(stop)) if sink is not None else None
    completed = False
    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(items) or 1)))))
        completed = True
    finally:
        if flusher is not None:
            stop.set()
            await flusher
            if not completed and sink is not None:  # a flusher runs only with a sink
                await sink.flush()
    return facts
