"""Task difficulty measured from runs: pass-rate estimates with intervals, the learnable
band, difficulty bins and the curriculum schedule.

A group of samples that all pass or all fail has zero advantage and teaches a policy
nothing, so RL recipes keep the tasks whose pass rate under a reference model lies inside
a band. This module measures that rate and selects by it:

- **Calibration** (`calibrate`): per task and model, over the valid rollouts of one or more
  runs (invalid ones, the infrastructure's failures, are left out; a timeout is a fail),
  n samples with c passes give the estimate c/n and a 95% **Wilson score interval**
  (Wilson, 1927). Wilson rather than the normal (Wald) interval because at the small k of
  a calibration run (k = 16) and rates near 0 or 1 Wald's interval collapses to a point
  (c = 0 gives [0, 0]); Wilson's stays honest there (c = 0 of 16 gives [0, 0.194]) and its
  coverage is close to the nominal 95% for every rate. The rows go to the `task_stats`
  table (one per task, model and calibration) and into the `difficulty` column of the
  manifest of the tasks directory the runs used.
- **Shares per generator**: *saturated* (every sample passed), *dead* (none did), *in
  band* (the estimate within the band, default 0.2-0.8).
- **Band** (`Band`, `--difficulty LOW:HIGH`): keep the tasks whose latest estimate for the
  model (`--difficulty-model`) lies in [LOW, HIGH]; a task never measured for that model
  is kept or dropped (`--unmeasured keep|drop`).
- **Bins** (`--mix pass:0.0-0.2=1,pass:0.2-0.8=3,...`): weights per difficulty bin, next
  to the weights per generator; `pass:unmeasured=W` weights the tasks never measured.
- **Schedule** (`--difficulty auto`): the band follows the model's mean pass rate over the
  tasks of its latest calibration, by `SCHEDULE` (or the `[[curriculum.stages]]` of
  rlforge.toml): the first stage whose `until` is above the mean pass rate gives the band.
  As the policy gets better (the mean rises, between runs) the band moves up: a weak
  policy trains on what it sometimes solves, a strong one keeps the tasks that still
  separate its samples and drops those it has mastered less quickly than the hard ones.

This module sits beside `stats` at the bottom of the package: it imports only `db` and
`errors`, so `tasks`, `run`, `export` and `report` can all use it.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from rlforge import db
from rlforge.errors import UserError
from rlforge.taskdir import MANIFEST

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
METHOD = "wilson95"
DEFAULT_BAND = (0.2, 0.8)
UNMEASURED = "unmeasured"
BIN_PREFIX = "pass:"

#: The default curriculum: (until mean pass rate, band). The first stage whose `until`
#: is above the model's mean pass rate applies.
SCHEDULE: list[dict[str, Any]] = [
    {"until": 0.25, "difficulty": "0.05:0.6"},
    {"until": 0.5, "difficulty": "0.1:0.8"},
    {"until": 0.75, "difficulty": "0.2:0.9"},
    {"until": 1.01, "difficulty": "0.3:0.95"},
]


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion.

    Args:
        passes: successes, 0 <= passes <= n.
        n: trials; 0 gives (0, 1), nothing known.
        z: the normal quantile (1.96 for 95%).

    Returns:
        (low, high), both in [0, 1].
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= passes <= n:
        raise ValueError(f"need 0 <= passes <= n, got {passes} of {n}")
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Estimate:
    """One task's measured pass rate under one model."""

    task_id: str
    generator: str
    model: str
    runs: list[str]
    samples: int
    passes: int
    estimate: float
    lo: float
    hi: float

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "runs": self.runs, "samples": self.samples,
                "passes": self.passes, "estimate": round(self.estimate, 6),
                "lo": round(self.lo, 6), "hi": round(self.hi, 6), "method": METHOD}


# --- the band ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Band:
    """A closed interval of pass rates, [low, high]."""

    low: float
    high: float

    def __contains__(self, value: float) -> bool:
        return self.low - 1e-12 <= value <= self.high + 1e-12

    def __str__(self) -> str:
        return f"{self.low:g}:{self.high:g}"


def parse_band(text: str, flag: str = "--difficulty") -> Band:
    """`0.2:0.8` into a Band (0 <= LOW <= HIGH <= 1)."""
    low, sep, high = (text if ":" in text else text.replace("-", ":", 1)).partition(":")
    try:
        band = Band(float(low), float(high)) if sep else None
    except ValueError:
        band = None
    if band is None or not 0 <= band.low <= band.high <= 1:
        raise UserError(f"{flag} {text!r}: give LOW:HIGH pass rates with 0 <= LOW <= HIGH <= 1, "
                        "e.g. 0.2:0.8")
    return band


@dataclass
class Selection:
    """What `--difficulty`, `--difficulty-model`, `--unmeasured` and the bin weights of
    `--mix` ask for. `band` None and no bins: no selection by difficulty."""

    band: Band | str | None = None  # a Band, "auto" (the schedule), or None
    model: str | None = None
    unmeasured: str = "keep"  # keep | drop
    bins: dict[str, float] = field(default_factory=dict)  # "0.2-0.8" or "unmeasured" -> weight
    schedule: list[dict[str, Any]] | None = None

    @property
    def active(self) -> bool:
        return self.band is not None or bool(self.bins)


def make_selection(difficulty: str | None, model: str | None, unmeasured: str | None,
                   bins: dict[str, float] | None = None,
                   schedule: list[dict[str, Any]] | None = None) -> Selection:
    """A Selection from the command-line flags (strings as typed)."""
    if unmeasured not in (None, "keep", "drop"):
        raise UserError(f"--unmeasured {unmeasured!r}: use keep or drop")
    band: Band | str | None = None
    if difficulty:
        band = "auto" if difficulty.strip() == "auto" else parse_band(difficulty.strip())
    return Selection(band, model or None, unmeasured or "keep", dict(bins or {}), schedule)


def split_mix(mix: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """`--mix` weights into (per generator, per difficulty bin); a bin is `pass:LOW-HIGH`
    or `pass:unmeasured`."""
    generators, bins = {}, {}
    for name, weight in mix.items():
        if not name.startswith(BIN_PREFIX):
            generators[name] = weight
            continue
        key = name[len(BIN_PREFIX):].strip()
        if key != UNMEASURED:
            band = parse_band(key, flag=f"--mix {name}")
            key = f"{band.low:g}-{band.high:g}"
        bins[key] = weight
    return generators, bins


def bin_of(estimate: Estimate | None, bins: Iterable[str]) -> str | None:
    """The first bin (in the order given) holding the estimate; `unmeasured` for none."""
    if estimate is None:
        return UNMEASURED if UNMEASURED in bins else None
    for key in bins:
        if key != UNMEASURED and estimate.estimate in parse_band(key):
            return key
    return None


def resolve_band(sel: Selection, estimates: dict[str, Estimate]) -> Band | None:
    """The band to apply: the one given, or the schedule's stage for the model's mean
    pass rate over its measured tasks (`auto`)."""
    if sel.band != "auto":
        return sel.band  # type: ignore[return-value]
    if not estimates:
        raise UserError("--difficulty auto follows the latest calibration, and this model "
                        "has none: run the tasks first (`rlforge run`, `rlforge calibrate`)")
    mean = sum(e.estimate for e in estimates.values()) / len(estimates)
    for stage in sel.schedule or SCHEDULE:
        if mean < float(stage.get("until", 1.01)):
            return parse_band(str(stage["difficulty"]), flag="curriculum stage")
    return parse_band(str((sel.schedule or SCHEDULE)[-1]["difficulty"]), flag="curriculum stage")


def select(items: list[Any], key, generator_of, estimates: dict[str, Estimate],
           sel: Selection, quotas: dict[str, int | None] | None = None
           ) -> tuple[list[Any], Counter]:
    """The items a Selection keeps, in their order.

    Args:
        items: tasks (any objects); `key(item)` is the task id, `generator_of(item)` its
            generator.
        estimates: task id -> latest estimate for the model.
        sel: the band, the unmeasured rule and the bin weights.
        quotas: tasks per generator (None: all that pass the band), the first ones in the
            order given (a generator's own sampling order: with nothing measured, a build
            keeps the tasks it keeps without a band); shared among the bins by their
            weights when bins are given.

    Returns:
        (kept items, why the others were left out: reason -> count).
    """
    band = resolve_band(sel, estimates) if sel.band is not None else None
    dropped: Counter = Counter()
    passing = []
    for item in items:
        e = estimates.get(key(item))
        if e is None:
            if sel.unmeasured == "drop":
                dropped["never measured for this model"] += 1
                continue
        elif band is not None and e.estimate not in band:
            dropped[f"pass rate outside {band}"] += 1
            continue
        passing.append(item)
    if not sel.bins and not quotas:
        return passing, dropped
    by_cell: dict[tuple[str, str | None], list[Any]] = {}
    for item in passing:
        b = bin_of(estimates.get(key(item)), sel.bins) if sel.bins else None
        if sel.bins and b is None:
            dropped["in no --mix difficulty bin"] += 1
            continue
        by_cell.setdefault((generator_of(item), b), []).append(item)
    kept_ids: set[int] = set()
    for gen in sorted({g for g, _ in by_cell}):
        quota = (quotas or {}).get(gen)
        if sel.bins:
            quota_of = shares(quota, sel.bins) if quota is not None else None
            for b in sel.bins:
                cell = by_cell.get((gen, b), [])
                take = cell if quota_of is None else cell[:quota_of[b]]
                if sel.bins[b] <= 0:
                    take = []
                kept_ids.update(id(x) for x in take)
                dropped["over its generator's or bin's quota"] += len(cell) - len(take)
        else:
            cell = by_cell.get((gen, None), [])
            take = cell if quota is None else cell[:quota]
            kept_ids.update(id(x) for x in take)
            dropped["over its generator's quota"] += len(cell) - len(take)
    return [x for x in passing if id(x) in kept_ids], dropped


def shares(total: int, weights: dict[str, float],
           all_zero: str = "--mix gives every difficulty bin a weight of 0") -> dict[str, int]:
    """`total` shared by weight, largest remainder first (ties by name).

    Raises:
        UserError: every weight is 0 (`all_zero` says so).
    """
    s = sum(weights.values())
    if s <= 0:
        raise UserError(all_zero)
    exact = {k: total * w / s for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[: total - sum(out.values())]:
        out[k] += 1
    return out


# --- calibration -------------------------------------------------------------------------

@dataclass
class Calibration:
    """What `calibrate` measured and wrote."""

    calibration_id: str
    runs: list[str]
    models: list[str]
    band: Band
    estimates: list[Estimate]
    manifests: list[str] = field(default_factory=list)

    def shares(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per model, per generator (and `all`): tasks, saturated, dead, in band."""
        return {m: generator_shares([e for e in self.estimates if e.model == m], self.band)
                for m in self.models}

    def to_dict(self) -> dict[str, Any]:
        return {"calibration_id": self.calibration_id, "runs": self.runs, "models": self.models,
                "band": str(self.band), "method": METHOD, "tasks": len(self.estimates),
                "shares": self.shares(), "manifests": self.manifests}


def generator_shares(estimates: list[Estimate], band: Band = Band(*DEFAULT_BAND)
                     ) -> dict[str, dict[str, Any]]:
    """Per generator and over all: tasks, and the share saturated (all samples passed),
    dead (none passed) and in band (estimate within `band`); the samples and passes pooled
    over the tasks (`pass_rate` = passes / samples, with its Wilson interval) and the
    tasks per difficulty bin (`histogram`, bins as `histogram_labels`)."""
    groups: dict[str, list[Estimate]] = {}
    for e in estimates:
        groups.setdefault(e.generator, []).append(e)
    groups = dict(sorted(groups.items()))
    if estimates:
        groups["all"] = list(estimates)
    out = {}
    for gen, es in groups.items():
        n = len(es)
        sat = sum(e.passes == e.samples for e in es)
        dead = sum(e.passes == 0 for e in es)
        inb = sum(e.estimate in band for e in es)
        samples, passes = sum(e.samples for e in es), sum(e.passes for e in es)
        out[gen] = {"tasks": n, "saturated": sat, "dead": dead, "in_band": inb,
                    "saturated_share": sat / n, "dead_share": dead / n, "in_band_share": inb / n,
                    "samples": samples, "passes": passes,
                    "pass_rate": passes / samples if samples else None,
                    "pass_rate_interval": list(wilson(passes, samples)),
                    "histogram": histogram(e.estimate for e in es)}
    return out


def model_of(model: str | None, embedded: bool | None) -> str:
    """The name calibrations file a run's model under ('embedded' for the local model)."""
    return model or ("embedded" if embedded else "unnamed")


def measure(rows: Iterable[tuple[str, str, str, str, str]]) -> list[Estimate]:
    """Estimates from rollout rows (run_id, model, task_id, generator, outcome): invalid
    rollouts left out, every other outcome but pass counted as a fail."""
    acc: dict[tuple[str, str], list[Any]] = {}
    for run_id, model, task_id, generator, outcome in rows:
        if outcome == "invalid":
            continue
        slot = acc.setdefault((task_id, model), [generator, set(), 0, 0])
        slot[1].add(run_id)
        slot[2] += 1
        slot[3] += outcome == "pass"
    out = []
    for (task_id, model), (generator, runs, n, c) in sorted(acc.items()):
        lo, hi = wilson(c, n)
        out.append(Estimate(task_id, generator, model, sorted(runs), n, c, c / n, lo, hi))
    return out


def calibrate_runs(db_path: Path, run_ids: list[str],
                   band: Band = Band(*DEFAULT_BAND)) -> Calibration:
    """`calibrate` in one transaction of the database at `db_path` (`rlforge calibrate`)."""
    con = db.connect(db_path)
    try:
        con.execute("BEGIN")
        cal = calibrate(con, run_ids, band)
        con.execute("COMMIT")
        return cal
    finally:
        con.close()


def calibrate(con, run_ids: list[str], band: Band = Band(*DEFAULT_BAND),
              update_manifests: bool = True) -> Calibration:
    """Estimate every task's pass rate per model from the rollouts of `run_ids`, pooled;
    store the estimates in `task_stats` and the tasks directories' manifests.

    Calibrating the same runs again replaces that calibration's rows.

    Args:
        con: the rlforge database (its `runs` and `rollouts` tables).
        run_ids: runs to pool (their models may differ: one estimate per model).
        band: the band the in-band share is counted against.
        update_manifests: write the estimates into each run's tasks directory manifest.

    Returns:
        The estimates and the shares per generator.

    Raises:
        UserError: a run is not in the database.
    """
    run_ids = sorted(set(run_ids))
    if not run_ids:
        raise UserError("name at least one run: rlforge calibrate RUN_ID...")
    found = {r[0]: r for r in con.execute(
        "SELECT run_id, model, embedded, tasks_dir FROM runs WHERE list_contains(?, run_id)",
        [run_ids]).fetchall()}
    missing = [r for r in run_ids if r not in found]
    if missing:
        raise UserError(f"no run {', '.join(missing)} in the database (table runs); pass "
                        "--db of the database the run wrote")
    models = {r: model_of(found[r][1], found[r][2]) for r in run_ids}
    rows = con.execute("SELECT run_id, task_id, generator, outcome FROM rollouts "
                       "WHERE list_contains(?, run_id)", [run_ids]).fetchall()
    estimates = measure((r, models[r], t, g, o) for r, t, g, o in rows)
    calibration_id = "+".join(run_ids)
    now = db.now()
    con.execute("DELETE FROM task_stats WHERE calibration_id = ?", [calibration_id])
    db.insert_rows(con, "task_stats", [
        (calibration_id, e.task_id, e.generator, e.model, e.runs, e.samples, e.passes,
         e.estimate, e.lo, e.hi, METHOD, now) for e in estimates])
    cal = Calibration(calibration_id, run_ids, sorted(set(models.values())), band, estimates)
    if update_manifests:
        for tasks_dir in sorted({found[r][3] for r in run_ids if found[r][3]}):
            if annotate_manifest(Path(tasks_dir), latest_for_tasks(con, tasks_dir_ids(tasks_dir))):
                cal.manifests.append(str(Path(tasks_dir) / MANIFEST))
    return cal


def latest(con, model: str | None = None) -> tuple[str | None, dict[str, Estimate]]:
    """(model, task id -> its latest estimate for the model). With `model` None: the only
    model calibrated, else a UserError naming them; no calibration at all: (None, {})."""
    models = [r[0] for r in con.execute(
        "SELECT DISTINCT model FROM task_stats ORDER BY model").fetchall()]
    if model is None:
        if not models:
            return None, {}
        if len(models) > 1:
            raise UserError(f"calibrations of several models ({', '.join(models)}): choose one "
                            "with --difficulty-model NAME")
        model = models[0]
    rows = con.execute("""
        SELECT task_id, generator, model, runs, samples, passes, estimate, lo, hi
        FROM task_stats WHERE model = ?
        QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY calibrated_at DESC,
                                   calibration_id DESC) = 1""", [model]).fetchall()
    if not rows and models:
        raise UserError(f"no calibration of model {model!r}; calibrated: {', '.join(models)}")
    return model, {r[0]: Estimate(r[0], r[1], r[2], list(r[3]), r[4], r[5], r[6], r[7], r[8])
                   for r in rows}


def measured(db_path: Path, model: str | None, required: bool) -> dict[str, Estimate]:
    """The latest pass-rate estimates of `model` (or of the only model calibrated) in the
    database at `db_path`, for rows' metadata; empty when there is no database or
    calibration, unless `required` (a selection by difficulty needs them)."""
    if not db_path.exists():
        if required:
            raise UserError(f"--difficulty reads the pass rates in the database, and {db_path} "
                            "does not exist; pass --db or calibrate first (`rlforge calibrate`)")
        return {}
    con = db.connect(db_path, read_only=True)
    try:
        has_table = con.execute("SELECT count(*) FROM information_schema.tables "
                                "WHERE table_name = 'task_stats'").fetchall()[0][0]
        if not has_table:
            return {}
        try:
            return latest(con, model)[1]
        except UserError:
            if required:
                raise
            return {}  # several models and none chosen: rows carry no estimate
    finally:
        con.close()


def latest_for_tasks(con, task_ids: set[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """task id -> model -> the latest estimate, for the given tasks."""
    if not task_ids:
        return {}
    rows = con.execute("""
        SELECT task_id, generator, model, runs, samples, passes, estimate, lo, hi
        FROM task_stats WHERE list_contains(?, task_id)
        QUALIFY row_number() OVER (PARTITION BY task_id, model ORDER BY calibrated_at DESC,
                                   calibration_id DESC) = 1""", [sorted(task_ids)]).fetchall()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        e = Estimate(r[0], r[1], r[2], list(r[3]), r[4], r[5], r[6], r[7], r[8])
        out.setdefault(e.task_id, {})[e.model] = e.to_dict()
    return out


# --- the manifest ------------------------------------------------------------------------

def tasks_dir_ids(tasks_dir: str | Path) -> set[str]:
    """The task ids a build's manifest lists (empty without one)."""
    rows = _read_manifest(Path(tasks_dir) / MANIFEST)
    return {r["task_id"] for r in rows or []}


def _read_manifest(path: Path) -> list[dict[str, Any]] | None:
    if not path.is_file():
        return None
    import polars as pl

    try:
        return pl.read_parquet(path).to_dicts()
    except Exception:  # noqa: BLE001 - not a manifest rlforge can read: leave it alone
        return None


def annotate_manifest(tasks_dir: Path, by_task: dict[str, dict[str, dict[str, Any]]]) -> bool:
    """Write each task's latest estimates (per model, JSON) into the `difficulty` column of
    the directory's manifest, replacing the file in one rename. False: no manifest."""
    import polars as pl

    path = tasks_dir / MANIFEST
    if not path.is_file():
        return False
    try:
        frame = pl.read_parquet(path)
    except Exception:  # noqa: BLE001 - not ours to rewrite
        return False
    values = [json.dumps(by_task[t], sort_keys=True) if t in by_task else None
              for t in frame["task_id"].to_list()]
    frame = frame.with_columns(pl.Series("difficulty", values, dtype=pl.Utf8))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.write_parquet(tmp, statistics=False)
    os.replace(tmp, path)
    return True


def histogram(rates: Iterable[float], edges: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
              ) -> list[int]:
    """Counts of pass rates per bin: exactly 0 (dead), then (edge, next edge] up to 1
    exclusive, then exactly 1 (saturated)."""
    counts = [0] * (len(edges) + 1)
    for r in rates:
        if r <= 0:
            counts[0] += 1
        elif r >= 1:
            counts[-1] += 1
        else:
            i = next(i for i in range(1, len(edges)) if r <= edges[i])
            counts[i] += 1
    return counts


def histogram_labels(edges: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)) -> list[str]:
    return (["0 (dead)"] + [f"{edges[i - 1]:g}-{edges[i]:g}" for i in range(1, len(edges))]
            + ["1 (saturated)"])
