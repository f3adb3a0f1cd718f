"""`rlforge rescore`: the verifiers run again on a run's stored submissions, no model.

Every rollout that left a submission (a reply text, or the files its workspace changed)
is scored again by its task's verifier — in-process for answer and reply tasks, in the
sandbox otherwise — after a verifier was fixed, or when the sandbox failed during the run.
A submission is stored as exactly what the verifiers read (regular files), so it is judged
afresh whatever links or special files the policy left. One stored without some content
(past the byte limit: `complete` is False) is judged without it and may lose a pass, never
gain one. Rollouts without a submission (the endpoint failed, the time budget ran out), or
whose submission was over a copy-out cap (a fail by construction), keep their
outcome. Each re-scored line keeps its previous outcome under `rescored`; the previous log
stays as `rollouts.before-rescore-<time>.jsonl`; the table and the summary follow.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rlforge import db
from rlforge.config import Settings, default_cache_dir
from rlforge.errors import UserError
from rlforge.records import RolloutSummary, RunPlan
from rlforge.run.driver import Progress
from rlforge.run.environment import Environment, InfraError
from rlforge.run.session import RunReport, finalize
from rlforge.run.store import ROLLOUTS, RunStore, reload_run, utc_now
from rlforge.taskdir import Task, load_task
from rlforge.verify import kinds


def rescore(settings: Settings, run_id: str, *, min_pass_rate: float | None = None,
            max_infra_error_rate: float | None = None,
            progress: Progress | None = None) -> RunReport:
    """Run the verifiers again on every stored submission (the model is not called).

    Rollouts without a submission (the policy endpoint failed, the time budget ran out)
    keep their outcome. The previous log is kept as `rollouts.before-rescore-<time>.jsonl`.
    """
    started = time.perf_counter()
    store = RunStore.open(settings.run.runs_dir, run_id)
    store.lock()
    try:
        plan = RunPlan.from_dict(store.read_config()).with_overrides(
            None, min_pass_rate, max_infra_error_rate)
        records = store.read_rollouts(repair=True)
        progress = progress or Progress()
        progress.total = len(records)
        counts = asyncio.run(_rescore_all(plan, records, progress, default_cache_dir(settings)))
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
        store.rewrite_rollouts(records, keep_previous=f"rollouts.before-rescore-{stamp}.jsonl")
        db_path = settings.general.db
        con = db.connect(db_path)
        try:
            con.execute("BEGIN")
            reload_run(con, run_id, store.dir / ROLLOUTS)
            con.execute("COMMIT")
        finally:
            con.close()
        report = finalize(db_path, store, plan, [RolloutSummary.of(r) for r in records],
                          status="finished" if len(records) == len(plan.tasks) * plan.samples
                          else "running")
        report.rescored = counts
        report.session_rollouts = counts["rescored"]
        report.seconds = time.perf_counter() - started
        return report
    finally:
        store.close()


async def _rescore_all(plan: RunPlan, records: list[dict[str, Any]], progress: Progress,
                       cache_dir: Path) -> dict[str, int]:
    from rlforge.sandbox import SandboxPool
    from rlforge.verify.runner import TaskRunner

    paths = dict((task_id, path) for task_id, path in plan.tasks)
    tasks: dict[str, Task | None] = {}
    counts = {"rescored": 0, "changed": 0, "no_submission": 0, "incomplete_submission": 0,
              "too_large": 0, "task_missing": 0}
    scratch = Path(tempfile.mkdtemp(prefix="rlforge-rescore-"))
    try:
        async with SandboxPool(plan.sandbox_workers) as pool:
            runner = TaskRunner(pool, plan.env.sandbox_mode, plan.sandbox, cache_dir)
            limit = asyncio.Semaphore(pool.workers * 2)

            async def one(record: dict[str, Any]) -> None:
                submission = record.get("submission")
                task_id = record["task_id"]
                if task_id not in tasks:
                    try:
                        tasks[task_id] = load_task(paths[task_id])
                    except (UserError, KeyError):
                        tasks[task_id] = None
                task = tasks[task_id]
                if submission is None:
                    counts["no_submission"] += 1
                elif submission.get("error"):  # over a copy-out cap: nothing to judge
                    counts["too_large"] += 1
                elif task is None:
                    counts["task_missing"] += 1
                else:
                    async with limit:
                        await _rescore_one(record, task, plan, runner, scratch)
                    counts["rescored"] += 1
                    counts["incomplete_submission"] += submission.get("complete") is False
                    previous = record["rescored"]["previous"]
                    counts["changed"] += (previous["outcome"] != record["outcome"] or
                                          previous["total"] != (record["reward"] or {}).get("total"))
                progress.add(RolloutSummary.of(record))

            await asyncio.gather(*(one(r) for r in records))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return counts


async def _rescore_one(record, task: Task, plan: RunPlan, runner, scratch: Path) -> None:
    env = Environment(task, plan.env, runner, scratch)
    previous = {"outcome": record["outcome"], "total": (record.get("reward") or {}).get("total")}
    error = record.get("error")
    if error and error.get("infra"):  # a verifier or sandbox failure: scored afresh now
        error = None
    try:
        reward = await env.verify(record["submission"])
        outcome = "pass" if reward.get("outcome") == "pass" else "fail"
        scored_by = "in_process" if kinds.scored_in_process(task) else "sandbox"
    except InfraError as exc:
        reward, outcome, error, scored_by = None, "invalid", exc.record(), None
    finally:
        env.close()
    if record["submission"].get("complete") is False and outcome == "pass" \
            and previous["outcome"] != "pass":  # judged without some of its content
        record["rescored"] = {"at": utc_now(), "previous": previous, "kept": (
            "a pass on part of the submission (content past the byte limit was not "
            "stored) does not replace its previous outcome")}
        return
    record.update(outcome=outcome, reward=reward, error=error, scored_by=scored_by,
                  rescored={"at": utc_now(), "previous": previous})
