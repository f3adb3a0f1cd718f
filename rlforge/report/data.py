"""What the run report shows, computed from a run's files: tallies, curves, distributions.

Everything comes from `runs/<run_id>/config.json` and `rollouts.jsonl` through the run
store, and the statistics from `rlforge.stats` — the same functions `rlforge run` uses for
its summary, so the report and the run's own numbers agree. Invalid rollouts (the
infrastructure failed) are left out of every policy statistic and shown on their own.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlforge import difficulty, stats
from rlforge.records import RolloutSummary
from rlforge.run.store import load_rollouts, open_run, with_advantages
from rlforge.taskdir import INSTRUCTION, TASK_TOML

MAX_MESSAGE_CHARS = 20_000


@dataclass
class RunData:
    """One run, loaded: its frozen config, rollout records and summary."""

    run_id: str
    run_dir: Path
    plan: dict[str, Any]
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    generators: list[str] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return int(self.plan.get("samples") or max((r["sample"] for r in self.records), default=0) + 1)

    @property
    def valid(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["outcome"] != "invalid"]


def load_run(run: str | Path, runs_dir: str | Path) -> RunData:
    """A run by id (under `runs_dir`) or by its directory."""
    store = open_run(run, runs_dir)
    plan = store.read_config()
    records = load_rollouts(store)
    samples = int(plan.get("samples") or 1)
    summary = stats.summarize((RolloutSummary.of(r).to_dict() for r in records), samples)
    generators = sorted({r["generator"] for r in records})
    return RunData(store.run_id, store.dir, plan, records, summary, generators)


def reward_of(record: dict[str, Any]) -> float | None:
    """The rollout's total reward as statistics count it (None when invalid)."""
    return RolloutSummary.of(record).reward


def task_groups(records: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per task: (valid samples, passing samples)."""
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        if r["outcome"] != "invalid":
            groups[r["task_id"]][0] += 1
            groups[r["task_id"]][1] += r["outcome"] == "pass"
    return {t: (n, c) for t, (n, c) in groups.items()}


def breakdown(data: RunData) -> list[dict[str, Any]]:
    """One row per (generator, split) and per generator, then the whole run: counts,
    pass rate, mean reward, pass@1 and pass@k at the run's sample count."""
    slices: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in data.records:
        slices[(r["generator"], r.get("split") or "-")].append(r)
        slices[(r["generator"], "all")].append(r)
        slices[("all", "all")].append(r)
    k = data.samples
    rows = []
    for (gen, split), members in slices.items():
        tally = stats.Tally()
        for r in members:
            tally.add(r["outcome"], reward_of(r))
        curve = stats.pass_at_k_curve(task_groups(members).values(), k)
        rows.append({"generator": gen, "split": split, **tally.to_dict(),
                     "tasks": len({r["task_id"] for r in members}),
                     "pass_at_1": curve.get(1), "pass_at_k": curve.get(k), "k": k})
    order = {"train": 0, "val": 1, "test": 2, "-": 3, "all": 4}
    rows.sort(key=lambda r: (r["generator"] == "all", r["generator"], order.get(r["split"], 5)))
    return rows


#: the task.toml keys ([metadata.rlforge]) that name a task's question family
FAMILY_KEYS = ("question_kind", "fact", "label_field")
QUESTION_CHARS = 600


@dataclass
class TaskInfo:
    """What the report shows of a task beside its rollouts, read from its directory (the
    run's plan names it): "-" and empty when the directory has gone."""

    family: str = "-"
    question: str = ""
    source: str = ""


def task_infos(data: RunData) -> dict[str, TaskInfo]:
    """Per task of the run: its question family, the start of its instruction, and the
    source rows it was built from."""
    import tomllib

    out = {}
    for task_id, path in data.plan.get("tasks") or []:
        info = TaskInfo()
        try:
            meta = tomllib.loads((Path(path) / TASK_TOML).read_text(encoding="utf-8"))
            rl = meta.get("metadata", {}).get("rlforge", {})
            info.family = next((str(rl[k]) for k in FAMILY_KEYS if k in rl), "-")
            info.source = f"{rl.get('source_table', '?')}: {', '.join(map(str, rl.get('source_keys', [])))}"
            info.question = (Path(path) / INSTRUCTION).read_text(
                encoding="utf-8", errors="replace")[:QUESTION_CHARS]
        except (OSError, ValueError):
            pass
        out[task_id] = info
    return out


def family_breakdown(data: RunData, infos: dict[str, TaskInfo]) -> list[dict[str, Any]]:
    """One row per (generator, question family), for the generators whose tasks have
    families: tasks, rollouts, pass rate, mean reward, invalid."""
    slices: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in data.records:
        info = infos.get(r["task_id"])
        slices[(r["generator"], info.family if info else "-")].append(r)
    with_families = {g for g, f in slices if f != "-"}
    rows = []
    for (gen, fam), members in sorted(slices.items()):
        if gen not in with_families:
            continue
        tally = stats.Tally()
        for r in members:
            tally.add(r["outcome"], reward_of(r))
        rows.append({"generator": gen, "family": fam, **tally.to_dict(),
                     "tasks": len({r["task_id"] for r in members})})
    return rows


def task_rows(data: RunData, infos: dict[str, TaskInfo]) -> list[dict[str, Any]]:
    """One row per task, hardest first: its samples, passes, mean reward, family, source
    rows and question."""
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in data.records:
        by_task[r["task_id"]].append(r)
    rows = []
    for task_id, members in by_task.items():
        valid = [r for r in members if r["outcome"] != "invalid"]
        rewards = [reward_of(r) or 0.0 for r in valid]
        info = infos.get(task_id) or TaskInfo()
        rows.append({"task": task_id, "gen": members[0]["generator"],
                     "split": members[0].get("split") or "", "family": info.family,
                     "samples": len(members), "valid": len(valid),
                     "passes": sum(r["outcome"] == "pass" for r in valid),
                     "mean": sum(rewards) / len(rewards) if rewards else None,
                     "source": info.source, "question": info.question})
    rows.sort(key=lambda t: (t["passes"] / t["valid"] if t["valid"] else 2.0, t["task"]))
    return rows


def pass_at_k_series(data: RunData) -> dict[str, list[tuple[int, float]]]:
    """pass@k for k = 1..samples: the whole run, then each generator."""
    out = {}
    for name, members in [("all", data.records)] + [
            (g, [r for r in data.records if r["generator"] == g]) for g in data.generators]:
        curve = stats.pass_at_k_curve(task_groups(members).values(), data.samples)
        out[name] = [(k, v) for k, v in curve.items() if v is not None]
    return out


def rewards_by_generator(data: RunData) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {g: [] for g in data.generators}
    for r in data.valid:
        out[r["generator"]].append(float(reward_of(r) or 0.0))
    return out


def component_means(data: RunData) -> dict[str, list[dict[str, Any]]]:
    """Per generator, each reward component's mean value over the valid rollouts whose
    reward has it (`n` of them, of `of` valid rollouts of the generator), with its level,
    weight and whether it gates the total."""
    acc: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    valid: dict[str, int] = defaultdict(int)
    for r in data.valid:
        valid[r["generator"]] += 1
        for name, comp in ((r.get("reward") or {}).get("components") or {}).items():
            slot = acc[r["generator"]].setdefault(name, {
                "name": name, "level": comp.get("level", ""), "weight": comp.get("weight", 0.0),
                "gate": bool(comp.get("gate")), "sum": 0.0, "n": 0, "met": 0})
            value = float(comp.get("value") or 0.0)
            slot["sum"] += value
            slot["n"] += 1
            slot["met"] += value >= 1.0
    levels = {"coarse": 0, "medium": 1, "fine": 2}
    return {g: sorted(({**c, "mean": c["sum"] / c["n"], "of": valid[g]} for c in comps.values()),
                      key=lambda c: (levels.get(c["level"], 3), c["name"]))
            for g, comps in sorted(acc.items())}


def distribution(data: RunData, key: str, valid_only: bool = False) -> dict[str, list[float]]:
    """A numeric field of the rollouts, per generator (missing values left out)."""
    out: dict[str, list[float]] = {g: [] for g in data.generators}
    for r in (data.valid if valid_only else data.records):
        value = r.get(key)
        if isinstance(value, (int, float)):
            out[r["generator"]].append(float(value))
    return out


def quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "max": None}
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else ordered * 9
    return {"p50": statistics.median(ordered), "p90": q[8], "max": ordered[-1]}


def errors(data: RunData) -> list[dict[str, Any]]:
    """Errors by type: count, whether they are infrastructure (invalid) or the policy's,
    the generators they hit and one example message."""
    by_type: dict[str, dict[str, Any]] = {}
    for r in data.records:
        err = r.get("error")
        if not err:
            continue
        slot = by_type.setdefault(err.get("type") or "unknown", {
            "type": err.get("type") or "unknown", "count": 0, "infra": bool(err.get("infra")),
            "generators": Counter(), "example": str(err.get("message") or "")[:300]})
        slot["count"] += 1
        slot["generators"][r["generator"]] += 1
    return sorted(({**e, "generators": dict(e["generators"].most_common())}
                   for e in by_type.values()), key=lambda e: -e["count"])


def _clip(text: Any) -> Any:
    if isinstance(text, str) and len(text) > MAX_MESSAGE_CHARS:
        return text[:MAX_MESSAGE_CHARS] + f"\n[... {len(text) - MAX_MESSAGE_CHARS} characters " \
                                          "cut in the report ...]"
    return text


def browser_rows(data: RunData, limit: int) -> list[dict[str, Any]]:
    """The rollouts for the page's browser (the first `limit` by task and sample), compact."""
    advantages = with_advantages(data.records)
    rows = []
    for r in data.records[:limit]:
        reward = r.get("reward") or {}
        error = r.get("error") or {}
        rows.append({
            "id": r["rollout_id"], "task": r["task_id"], "sample": r["sample"], "seed": r.get("seed"),
            "gen": r["generator"], "split": r.get("split") or "", "outcome": r["outcome"],
            "reward": reward_of(r), "adv": advantages.get(r["rollout_id"]),
            "ptok": r.get("prompt_tokens"), "ctok": r.get("completion_tokens"),
            "sec": r.get("seconds"), "turns": r.get("turns"), "ended": r.get("ended_by"),
            "err": error.get("type"), "errmsg": _clip(error.get("message")),
            "detail": reward.get("detail") or "",
            "comps": [{"name": n, "value": c.get("value"), "weight": c.get("weight"),
                       "level": c.get("level"), "gate": c.get("gate"), "detail": c.get("detail")}
                      for n, c in (reward.get("components") or {}).items()],
            "messages": [{"role": m.get("role"), "content": _clip(m.get("content")),
                          "tool_calls": [{"name": (c.get("function") or {}).get("name"),
                                          "arguments": _clip((c.get("function") or {}).get("arguments"))}
                                         for c in m.get("tool_calls") or []]}
                         for m in r.get("messages") or []],
        })
    return rows


# --- difficulty ---------------------------------------------------------------------------

def task_rates(records: list[dict[str, Any]]) -> dict[str, tuple[str, float]]:
    """Per task with a valid sample: (generator, pass rate over its valid samples), the
    estimate `rlforge calibrate` stores."""
    gen_of = {r["task_id"]: r["generator"] for r in records}
    return {t: (gen_of[t], c / n) for t, (n, c) in task_groups(records).items() if n}


def difficulty_histograms(data: RunData) -> dict[str, list[int]]:
    """Per generator, then `all`: tasks per pass-rate bin (`difficulty.histogram_labels`:
    dead, the bins between, saturated)."""
    rates = task_rates(data.records)
    out = {g: difficulty.histogram(r for gen, r in rates.values() if gen == g)
           for g in sorted({gen for gen, _ in rates.values()})}
    out["all"] = difficulty.histogram(r for _, r in rates.values())
    return out


def difficulty_shift(a: RunData, b: RunData) -> dict[str, Any]:
    """How the tasks' difficulty moved from run A to run B: each side's histogram per
    generator, and, over the tasks both ran, how many went from each bin to each other
    (rows: A's bin, columns: B's)."""
    ra, rb = task_rates(a.records), task_rates(b.records)
    labels = difficulty.histogram_labels()
    gens = sorted({g for g, _ in ra.values()} | {g for g, _ in rb.values()})
    rows = []
    for g in gens + ["all"]:
        def of(rates):
            return [r for gen, r in rates.values() if g in ("all", gen)]
        moves = [[0] * len(labels) for _ in labels]
        for t in set(ra) & set(rb):
            if g in ("all", ra[t][0]):
                i = difficulty.histogram([ra[t][1]]).index(1)
                j = difficulty.histogram([rb[t][1]]).index(1)
                moves[i][j] += 1
        both = [t for t in set(ra) & set(rb) if g in ("all", ra[t][0])]
        rows.append({"generator": g, "a": difficulty.histogram(of(ra)),
                     "b": difficulty.histogram(of(rb)), "moves": moves, "shared": len(both),
                     "easier": sum(rb[t][1] > ra[t][1] for t in both),
                     "harder": sum(rb[t][1] < ra[t][1] for t in both)})
    return {"labels": labels, "generators": rows}


# --- comparing two runs -------------------------------------------------------------------

def task_status(passes: int, valid: int) -> str:
    """A task's status in a run: pass when at least half its valid samples passed."""
    if valid == 0:
        return "invalid"
    return "pass" if passes * 2 >= valid else "fail"


def compare(a: RunData, b: RunData) -> dict[str, Any]:
    """Per-generator deltas (B minus A) and the tasks whose status flipped."""
    rows_a = {(r["generator"], r["split"]): r for r in breakdown(a)}
    rows_b = {(r["generator"], r["split"]): r for r in breakdown(b)}
    generators = []
    for key in sorted(set(rows_a) | set(rows_b), key=lambda k: (k[0] == "all", k)):
        if key[1] != "all":
            continue
        ra, rb = rows_a.get(key), rows_b.get(key)
        row = {"generator": key[0]}
        for metric in ("pass_rate", "mean_reward", "pass_at_1", "infra_error_rate"):
            va = ra.get(metric) if ra else None
            vb = rb.get(metric) if rb else None
            row[metric] = {"a": va, "b": vb,
                           "delta": None if va is None or vb is None else vb - va}
        row["rollouts"] = {"a": ra["rollouts"] if ra else 0, "b": rb["rollouts"] if rb else 0}
        generators.append(row)
    ga, gb = task_groups(a.records), task_groups(b.records)
    gen_of = {r["task_id"]: r["generator"] for r in a.records + b.records}
    split_of = {r["task_id"]: r.get("split") or "" for r in a.records + b.records}
    tasks, flips = [], []
    for task in sorted(set(ga) | set(gb) | {r["task_id"] for r in a.records + b.records}):
        na, ca = ga.get(task, (0, 0))
        nb, cb = gb.get(task, (0, 0))
        sa, sb = task_status(ca, na), task_status(cb, nb)
        row = {"task_id": task, "generator": gen_of[task], "split": split_of[task],
               "a": {"status": sa, "passes": ca, "valid": na, "rate": ca / na if na else None},
               "b": {"status": sb, "passes": cb, "valid": nb, "rate": cb / nb if nb else None}}
        tasks.append(row)
        if {sa, sb} == {"pass", "fail"}:
            flips.append({**row, "direction": "fixed" if sb == "pass" else "broken"})
    only_a = sorted(t for t in ga if t not in gb)
    only_b = sorted(t for t in gb if t not in ga)
    return {"a": a.run_id, "b": b.run_id, "generators": generators, "tasks": len(tasks),
            "difficulty": difficulty_shift(a, b),
            "flips": flips, "fixed": sum(f["direction"] == "fixed" for f in flips),
            "broken": sum(f["direction"] == "broken" for f in flips),
            "only_in_a": only_a, "only_in_b": only_b, "task_rows": tasks}
