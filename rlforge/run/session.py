"""`rlforge run` and `--resume` as library calls: plan, execute, summarise, gate.

A run is planned once — tasks, samples, seeds, policy and loop settings, resolved from
flag > RLFORGE_* env > rlforge.toml > default — and the plan is frozen in
`runs/<run_id>/config.json` (the API key's *name* only). Resuming reads that plan back,
keeps every rollout already in rollouts.jsonl, and runs exactly the (task, sample) pairs
missing from it; a terminal episode that was under way continues from its snapshot after
its last complete turn (`rlforge.run.snapshot`). (`rlforge.run.rescore` scores stored submissions again.)

With no endpoint configured, the run starts the embedded local model (llama.cpp with
SmolLM2-135M, see `rlforge.local_model`), one rollout at a time (that server serves one
request at a time), and stops it at the end; `RunReport.notice` says it is a smoke test.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Protocol

from rlforge import __version__, db, difficulty, stats
from rlforge.config import RunSettings, Settings
from rlforge.errors import ConfigError, UserError
from rlforge.records import EnvOptions, Gates, RolloutSummary, RunPlan
from rlforge.run.driver import Progress, TableSink
from rlforge.run.schedule import WorkItem, prior_seconds
from rlforge.run.snapshot import EpisodeSnapshots
from rlforge.run.store import (ROLLOUTS, RunStore, insert_lines, new_run_id, reload_run,
                               set_advantages, upsert_run, utc_now)
from rlforge.taskdir import Task, discover_tasks, load_task
from rlforge.verify import kinds

PLAN_SCHEMA = 1


@dataclass
class Session:
    """The rollouts one `rlforge run` (or resume) plays, handed to its `RolloutBackend`:
    the plan, where records go, the tasks and the missing (task, sample) items; the
    policy fields are set once the endpoint is up."""

    plan: RunPlan
    store: RunStore
    tasks: list[Task]
    items: list[WorkItem]
    sink: TableSink
    progress: Progress
    policy: Any = None  # rlforge.policy.PolicyConfig
    api_key: str = ""
    concurrency: int = 1  # rollouts in flight in the whole run


class RolloutBackend(Protocol):
    """Where a session's rollouts play: an `rlforge.execution` backend, chosen by the CLI
    (or the caller of `start` / `resume`) and handed down."""

    def preflight(self, session: Session) -> None:
        """Refuse (a UserError) before anything starts when the session cannot run here."""

    async def rollouts(self, session: Session) -> list[RolloutSummary]:
        """Play the session's work items; the summaries of the rollouts played."""


@dataclass
class RunReport:
    """What a run (or a resume, or a rescore) produced; `to_dict` is the `--json` output."""

    run_id: str
    run_dir: str
    summary: dict[str, Any]
    plan: RunPlan = field(repr=False)
    session_rollouts: int = 0
    episodes: dict[str, int] = field(default_factory=dict)  # resumed / restarted this session
    seconds: float = 0.0
    exit_code: int = 0
    gate: str = ""
    notice: str = ""
    rescored: dict[str, int] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)  # difficulty.Calibration

    def to_dict(self) -> dict[str, Any]:
        plan, policy = self.plan, self.plan.policy
        out = {
            "run_id": self.run_id, "run_dir": self.run_dir, "tasks_dir": plan.tasks_dir,
            "model": policy["model"], "base_url": policy["base_url"],
            "embedded": plan.embedded, "samples": plan.samples,
            "planned": len(plan.tasks) * plan.samples,
            **self.summary,
            "session": {"rollouts": self.session_rollouts, **self.episodes,
                        "seconds": round(self.seconds, 3),
                        "rollouts_per_s": round(self.session_rollouts / self.seconds, 3)
                        if self.seconds > 0 else None},
            "gate": {"min_pass_rate": plan.gates.min_pass_rate,
                     "max_infra_error_rate": plan.gates.max_infra_error_rate,
                     "exit_code": self.exit_code, "reason": self.gate},
        }
        if self.notice:
            out["notice"] = self.notice
        if self.rescored:
            out["rescored"] = self.rescored
        if self.calibration:
            out["calibration"] = self.calibration
        return out


# --- planning ----------------------------------------------------------------------------

def select_tasks(tasks: list[Task], *, generators: list[str] | None = None,
                 split: str | None = None, limit: int | None = None,
                 first: set[str] | frozenset[str] = frozenset()) -> list[Task]:
    """Tasks of the given generators (names, `@version` ignored) and split; with `limit`,
    that many taken in turn from each generator, so a small run still covers every kind
    of task. Each generator's tasks are taken in an order fixed by the records they were
    made from (`source_order`), so a limited run keeps the same records when a task's
    files (its verifier, its template) and so its id change. The tasks in `first` (those a
    calibration measured inside the band) come before the others: their generators take
    the first turns, and within a generator they are taken first."""
    if generators:
        wanted = {g.split("@")[0] for g in generators}
        known = {t.generator for t in tasks}
        unknown = sorted(wanted - known)
        if unknown:
            raise UserError(f"no tasks of generator {', '.join(unknown)} in this directory; "
                            f"it holds: {', '.join(sorted(known))}")
        tasks = [t for t in tasks if t.generator in wanted]
    if split:
        splits = {s.strip() for s in split.split(",")}
        tasks = [t for t in tasks if t.split in splits]
        if not tasks:
            raise UserError(f"no tasks in split {split!r}")
    tasks = sorted(tasks, key=lambda t: t.task_id)
    if not limit or limit >= len(tasks):
        return tasks
    by_generator: dict[str, list[Task]] = {}
    for t in sorted(tasks, key=lambda t: (t.task_id not in first, source_order(t))):
        by_generator.setdefault(t.generator, []).append(t)
    queues = [by_generator[g] for g in sorted(
        by_generator, key=lambda g: (by_generator[g][0].task_id not in first, g))]
    picked: list[Task] = []
    for rank in range(max(len(q) for q in queues)):
        picked += [q[rank] for q in queues if rank < len(q)]
    return sorted(picked[:limit], key=lambda t: t.task_id)


def source_order(task: Task) -> tuple[str, str]:
    """A sort key from the task's source records (a hash, so a limited run samples across
    them rather than taking the lowest keys), its id where it names none (tasks made by
    other tools) and to break ties."""
    if not task.source_keys:
        return task.task_id, task.task_id
    joined = "\n".join((task.generator, *task.source_keys))
    return hashlib.sha256(joined.encode()).hexdigest(), task.task_id


def select_by_difficulty(db_path, tasks: list[Task], sel: difficulty.Selection
                         ) -> tuple[list[Task], dict[str, Any], set[str]]:
    """The tasks whose latest measured pass rate the selection keeps, what it chose, and
    the ids of the kept tasks that were measured (the others are kept unmeasured)."""
    if not os.path.exists(db_path):
        raise UserError(f"--difficulty reads the pass rates in the database, and {db_path} "
                        "does not exist; pass --db or run `rlforge calibrate` first")
    con = db.connect(db_path, read_only=True)
    try:
        model, estimates = difficulty.latest(con, sel.model)
    finally:
        con.close()
    kept, dropped = difficulty.select(tasks, lambda t: t.task_id, lambda t: t.generator,
                                      estimates, sel)
    if not kept:
        raise UserError(f"no task passes the difficulty selection ({', '.join(dropped)}); "
                        "widen --difficulty or use --unmeasured keep")
    band = difficulty.resolve_band(sel, estimates) if sel.band is not None else None
    return kept, {"model": model, "band": str(band) if band else None,
                  "unmeasured": sel.unmeasured, "dropped": dict(dropped)}, {
        t.task_id for t in kept if t.task_id in estimates}


def plan_run(settings: Settings, tasks_dir: Path, tasks: list[Task], run_id: str, *,
             selection: dict[str, Any]) -> RunPlan:
    """The frozen configuration of a new run (no secrets)."""
    from rlforge.policy import PolicyClient, PolicyConfig
    from rlforge.sandbox import sandbox_settings

    run = settings.run
    if run.samples < 1:
        raise ConfigError(f"run.samples must be at least 1, got {run.samples}")
    if run.concurrency < 1:
        raise ConfigError(f"run.concurrency must be at least 1, got {run.concurrency}")
    policy = PolicyConfig.from_settings(run)
    adapter = ""
    if run.adapter:
        if policy.base_url:
            raise UserError(f"--adapter {run.adapter} is served with the embedded model; the "
                            f"endpoint {policy.base_url} serves its own weights (drop one of them)")
        from rlforge.local_model import MODEL_NAME, find_adapter

        adapter = str(find_adapter(run.adapter))
        # the name the server will serve it under, so calibrations keep it apart
        policy = replace(policy, model=f"{MODEL_NAME}+{Path(adapter).stem}")
    if policy.base_url:
        PolicyClient(policy, api_key="")  # a bad URL is a user error before anything starts
        if not policy.model:
            raise UserError(f"--base-url {policy.base_url} needs --model NAME (the model the "
                            f"endpoint serves{_served(settings, policy)})")
    try:
        quotas = {str(k): int(v) for k, v in run.generator_concurrency.items()}
    except (TypeError, ValueError):
        raise ConfigError("run.generator_concurrency must map generator names to integers, "
                          "e.g. { \"commits.repair\" = 4 }") from None
    env = EnvOptions.from_settings(run, settings.sandbox.mode, **judge_options(run, tasks_dir))
    return RunPlan(
        schema=PLAN_SCHEMA, run_id=run_id, created_at=utc_now(),
        rlforge_version=__version__, tasks_dir=str(tasks_dir.resolve()),
        tasks=[[t.task_id, os.path.abspath(t.path)] for t in tasks],
        selection=selection, samples=run.samples, seed=run.seed,
        concurrency=run.concurrency, generator_concurrency=quotas,
        time_budget=run.time_budget, env=env,
        policy=policy.record(), embedded=not policy.base_url, adapter=adapter,
        gates=Gates(run.min_pass_rate, run.max_infra_error_rate),
        sandbox_workers=settings.sandbox.workers, sandbox=sandbox_settings(settings.sandbox),
        settings=settings.record(),
    )


def _served(settings: Settings, policy: Any) -> str:
    """', it lists: a, b' when the endpoint answers GET /models quickly, else ''."""
    from dataclasses import replace

    from rlforge.policy import PolicyClient

    async def ask() -> list[str]:
        quick = replace(policy, request_timeout=5.0, max_retries=0)
        async with PolicyClient(quick, api_key=settings.secret(policy.api_key_env) or "") as client:
            return await client.models()

    try:
        ids = asyncio.run(ask())
    except Exception:  # noqa: BLE001 - only a hint for the error message
        return ""
    return f"; it lists: {', '.join(ids[:10])}" if ids else ""


def judge_options(run: RunSettings, tasks_dir: Path) -> dict[str, str]:
    """The EnvOptions of the reply judge the tasks were built with, when `run.judge`."""
    from rlforge.tasks.judge import JUDGE_FILE

    path = Path(tasks_dir) / JUDGE_FILE
    if not run.judge or not path.is_file():
        return {}
    try:
        judge = json.loads(path.read_text())
        return {"judge_base_url": str(judge["base_url"]), "judge_model": str(judge["model"]),
                "judge_api_key_env": run.judge_api_key_env}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a judge build-tasks checked ({exc}); rebuild with "
                        f"--judge-base-url/--judge-model or run with --no-judge") from None


def work_items(tasks: list[Task], samples: int, done: set[tuple[str, int]]) -> list[WorkItem]:
    """Every (task, sample) not in `done`."""
    return [WorkItem(i, s, t.generator, prior_seconds(t.expected_seconds, t.kind == "terminal"))
            for i, t in enumerate(tasks) for s in range(samples) if (t.task_id, s) not in done]


# --- running -----------------------------------------------------------------------------

def start(settings: Settings, tasks_dir: Path, *, backend: RolloutBackend,
          run_id: str | None = None,
          generators: list[str] | None = None, split: str | None = None,
          limit: int | None = None, progress: Progress | None = None,
          difficulty_selection: difficulty.Selection | None = None) -> RunReport:
    """Plan and execute a new run over the tasks in `tasks_dir`; see the module docstring.
    `backend`: where the rollouts play; `difficulty_selection`: only the tasks whose
    measured pass rate it keeps (`rlforge.difficulty`)."""
    found = discover_tasks(tasks_dir)
    chosen: dict[str, Any] = {}
    in_band: set[str] = set()
    if difficulty_selection is not None and difficulty_selection.active:
        found, chosen, in_band = select_by_difficulty(settings.general.db, found,
                                                      difficulty_selection)
    tasks = select_tasks(found, generators=generators, split=split, limit=limit, first=in_band)
    run_id = run_id or new_run_id()
    plan = plan_run(settings, tasks_dir, tasks, run_id,
                    selection={"generators": generators, "split": split, "limit": limit,
                               **({"difficulty": chosen} if chosen else {})})
    store = RunStore.create(settings.run.runs_dir, run_id)
    try:
        store.write_config(plan.to_dict())
        return _execute(settings, store, plan, tasks, [], progress or Progress(), backend)
    finally:
        store.close()


def resume(settings: Settings, run_id: str, *, backend: RolloutBackend,
           concurrency: int | None = None,
           min_pass_rate: float | None = None, max_infra_error_rate: float | None = None,
           progress: Progress | None = None) -> RunReport:
    """Finish an interrupted run: every rollout stored is kept, each missing one runs."""
    store = RunStore.open(settings.run.runs_dir, run_id)
    store.lock()
    try:
        plan = RunPlan.from_dict(store.read_config()).with_overrides(
            concurrency, min_pass_rate, max_infra_error_rate)
        records = store.read_rollouts(repair=True)
        tasks = _plan_tasks(plan)
        return _execute(settings, store, plan, tasks, records, progress or Progress(), backend)
    finally:
        store.close()


def _plan_tasks(plan: RunPlan) -> list[Task]:
    tasks = []
    for task_id, path in plan.tasks:
        task = load_task(path)
        if task.task_id != task_id:
            raise UserError(f"{path} now holds task {task.task_id}, not {task_id}; the run's "
                            "tasks changed since it started")
        tasks.append(task)
    return tasks


def _execute(settings: Settings, store: RunStore, plan: RunPlan, tasks: list[Task],
             records: list[dict[str, Any]], progress: Progress,
             backend: RolloutBackend) -> RunReport:
    started = time.perf_counter()
    db_path = settings.general.db
    done = {(r["task_id"], r["sample"]) for r in records}
    if len(done) != len(records):
        raise UserError(f"{store.dir}/rollouts.jsonl holds the same rollout twice; "
                        "the run log was edited by hand")
    items = work_items(tasks, plan.samples, done)
    # Episodes cut off mid-way continue from their snapshots; the rest are stale.
    EpisodeSnapshots(store.snapshots_dir).discard_all_but(
        {f"{tasks[i.task].task_id}#{i.sample}" for i in items})
    facts = [RolloutSummary.of(r) for r in records]
    progress.total = len(tasks) * plan.samples
    progress.done = progress.resumed = len(records)
    for fact in facts:
        progress.outcomes[fact.outcome] += 1
    # The table mirrors the log before anything new is added: a resume reloads it, a new
    # run clears rows a deleted run of the same id may have left.
    con = db.connect(db_path)
    try:
        con.execute("BEGIN")  # one transaction: one sync to disk
        reload_run(con, store.run_id, store.dir / ROLLOUTS)
        _record_run(con, store, plan, facts, status="running")
        con.execute("COMMIT")
    finally:
        con.close()
    notice = ""
    sink = TableSink(db_path)
    if items:
        session = Session(plan, store, tasks, items, sink, progress)
        backend.preflight(session)
        with _policy(settings, plan) as (session.policy, session.api_key, notice, session.concurrency):
            progress.started = time.monotonic()
            facts += asyncio.run(backend.rollouts(session))
    report = finalize(db_path, store, plan, facts, status="finished", lines=sink.lines)
    report.session_rollouts = len(items)
    report.episodes = {"episodes_resumed": progress.episodes_resumed,
                       "episodes_restarted": progress.episodes_restarted}
    report.seconds = time.perf_counter() - started
    report.notice = notice
    return report


def sandbox_needed(tasks: list[Task], items: list[WorkItem], plan: RunPlan) -> bool:
    """Whether these rollouts run anything under bubblewrap (commands, sandboxed verifiers)."""
    return plan.env.sandbox_mode == "bwrap" and any(
        tasks[i.task].kind == "terminal" or not kinds.get(tasks[i.task].verifier).in_process
        for i in items)


@contextlib.contextmanager
def _policy(settings: Settings, plan: RunPlan) -> Iterator[tuple[Any, str, str, int]]:
    """(policy config, API key, notice, rollout concurrency): the configured endpoint, or
    the embedded local model, started here and stopped on the way out."""
    from rlforge.policy import PolicyConfig

    policy = PolicyConfig(**{**plan.policy, "stop": tuple(plan.policy["stop"])})
    if not plan.embedded:
        yield policy, settings.secret(policy.api_key_env) or "", "", plan.concurrency
        return
    from rlforge.local_model import NOTICE, LocalModel

    with LocalModel(adapter=plan.adapter or None) as local:
        policy = PolicyConfig(**{**asdict(policy), **local.policy_overrides()})
        yield policy, "", NOTICE, 1




# --- results -----------------------------------------------------------------------------

def finalize(db_path, store: RunStore, plan: RunPlan, facts: list[RolloutSummary], *,
             status: str, lines: list[str] | None = None) -> RunReport:
    """Summary, pass@k, per-group advantages; summary.json, groups.jsonl, the DB (with the
    last `lines` of rollouts.jsonl not loaded yet, in the same transaction); the gate."""
    samples = plan.samples
    summary = stats.summarize((f.to_dict() for f in facts), samples)
    lost = next((f for f in sorted(facts, key=lambda f: (f.task_id, f.sample))
                 if f.outcome == "invalid"), None)
    summary["first_error"] = (None if lost is None else
                              {"task_id": lost.task_id, "sample": lost.sample,
                               "type": lost.error_type, "message": lost.error_message})
    groups: dict[str, list[RolloutSummary]] = {}
    for f in facts:
        groups.setdefault(f.task_id, []).append(f)
    advantages: dict[str, float | None] = {}
    group_rows = []
    for task_id, members in sorted(groups.items()):
        members.sort(key=lambda f: f.sample)
        values = stats.group_advantages([f.reward for f in members])
        valid = [f for f in members if f.outcome != "invalid"]
        passes = sum(f.outcome == "pass" for f in valid)
        for f, a in zip(members, values):
            advantages[f"{task_id}#{f.sample}"] = None if a is None else round(a, 6)
        group_rows.append({
            "task_id": task_id, "generator": members[0].generator, "split": members[0].split,
            "samples": len(members), "valid": len(valid), "passes": passes,
            "mean_reward": round(sum(f.reward or 0.0 for f in valid) / len(valid), 6) if valid else None,
            "pass_at_k": {str(k): round(stats.pass_at_k(len(valid), passes, k), 6)
                          for k in range(1, len(valid) + 1)},
            "advantages": {str(f.sample): advantages[f"{task_id}#{f.sample}"] for f in members}})
    summary["complete"] = len(facts) == len(plan.tasks) * samples
    store.write_summary(summary, group_rows)
    try:
        con = db.connect(db_path)
    except UserError as exc:
        raise UserError(f"{exc}; every rollout is in {store.dir}/rollouts.jsonl: "
                        f"`rlforge run --resume {store.run_id}` loads them once the database "
                        "is free") from None
    try:
        con.execute("BEGIN")
        insert_lines(con, lines or [])
        set_advantages(con, store.run_id, advantages)
        _record_run(con, store, plan, facts, status=status, summary=summary)
        # The run's difficulty measurement: its tasks' pass rates, in task_stats and the
        # tasks directory's manifest (`rlforge.difficulty`).
        calibration = difficulty.calibrate(con, [store.run_id]).to_dict() if facts else {}
        con.execute("COMMIT")
    finally:
        con.close()
    code, reason = gate(summary, plan.gates.min_pass_rate, plan.gates.max_infra_error_rate,
                        plan.endpoint)
    return RunReport(store.run_id, str(store.dir), summary, plan, exit_code=code, gate=reason,
                     calibration=calibration)


def gate(summary: dict[str, Any], min_pass_rate: float, max_infra_error_rate: float,
         endpoint: str = "") -> tuple[int, str]:
    """(exit code, reason): 4 when no rollout is valid or infrastructure errors exceed their
    limit (checked first: then the pass rate says little), 3 when the pass rate is below its
    minimum, else 0. The reason names the endpoint and the first error."""
    infra = summary["infra_error_rate"] or 0.0
    none_valid = summary["rollouts"] > 0 and summary["valid"] == 0
    if none_valid or infra > max_infra_error_rate:
        first = summary.get("first_error") or {}
        cause = (f"; first error ({first.get('task_id')}#{first.get('sample')}): "
                 f"{first.get('type')}: {first.get('message') or 'no message'}" if first else "")
        where = f" against {endpoint}" if endpoint else ""
        what = (f"infrastructure error rate {infra:.1%} is above --max-infra-error-rate "
                f"{max_infra_error_rate:.1%}" if infra > max_infra_error_rate else
                "no rollout was valid")
        return 4, f"{what}{where} ({summary['invalid']} invalid rollouts){cause}"
    rate = summary["pass_rate"]
    if min_pass_rate > 0 and (rate is None or rate < min_pass_rate):
        shown = "n/a (no valid rollout)" if rate is None else f"{rate:.1%}"
        return 3, f"pass rate {shown} is below --min-pass-rate {min_pass_rate:.1%}"
    return 0, ""


def _record_run(con, store: RunStore, plan: RunPlan, facts: list[RolloutSummary], *,
                status: str, summary: dict[str, Any] | None = None) -> None:
    existing = con.execute("SELECT created_at FROM runs WHERE run_id = ?",
                           [store.run_id]).fetchall()
    summary = summary or {}
    upsert_run(con, {
        "run_id": store.run_id, "status": status,
        "created_at": existing[0][0] if existing else _naive(plan.created_at),
        "updated_at": db.now(), "tasks_dir": plan.tasks_dir,
        "run_dir": str(store.dir.resolve()), "base_url": plan.policy["base_url"],
        "model": plan.policy["model"], "embedded": plan.embedded,
        "samples": plan.samples, "tasks": len(plan.tasks),
        "planned": len(plan.tasks) * plan.samples, "rollouts": len(facts),
        "pass_rate": summary.get("pass_rate"), "mean_reward": summary.get("mean_reward"),
        "infra_error_rate": summary.get("infra_error_rate"),
        "pass_at_k": summary.get("pass_at_k"), "summary": summary or None, "config": plan.to_dict(),
        "rlforge_version": __version__})


def _naive(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)
