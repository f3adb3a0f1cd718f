"""The flywheel: difficulty measured from runs, the learnable band, curricula, and
incremental builds with dataset versions.

Runs go against `RatedPolicy` (tests/rated_policy.py), a real HTTP server on 127.0.0.1
whose chance of solving each task is a known function of the task id, so a calibration
can be checked against the truth. Tasks are built by the real CLI from sample_data.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from paths import SAMPLE_DATA
from rated_policy import RatedPolicy, rate, solves
from rlforge import difficulty


def ok(result):
    assert result.exit_code == 0, result.output
    return result


def as_json(result) -> dict:
    ok(result)
    return json.loads(result.stdout)


def task_dirs(root: Path) -> dict[str, Path]:
    return {p.name: p for p in root.iterdir() if (p / "task.toml").is_file()}


# --- the interval ------------------------------------------------------------------------

def test_wilson_interval_matches_known_values_and_stays_inside_0_1():
    lo, hi = difficulty.wilson(0, 16)
    assert lo == 0.0 and hi == pytest.approx(0.1936, abs=1e-4)
    lo, hi = difficulty.wilson(8, 16)
    assert (lo, hi) == (pytest.approx(0.2800, abs=1e-4), pytest.approx(0.7200, abs=1e-4))
    lo, hi = difficulty.wilson(16, 16)
    assert lo == pytest.approx(0.8064, abs=1e-4) and hi == 1.0
    assert difficulty.wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        difficulty.wilson(3, 2)


def test_invalid_rollouts_are_left_out_and_timeouts_count_as_fails():
    rows = [("r", "m", "t", "g", o) for o in ("pass", "fail", "timeout", "invalid", "pass")]
    (e,) = difficulty.measure(rows)
    assert (e.samples, e.passes, e.estimate) == (4, 2, 0.5)


def test_bins_share_a_quota_by_weight_and_unmeasured_tasks_follow_the_flag():
    est = {f"t{i}": difficulty.Estimate(f"t{i}", "g", "m", ["r"], 10, i, i / 10, 0, 1)
           for i in range(11)}
    items = sorted(est) + ["new"]
    sel = difficulty.make_selection("0.2:0.8", None, "drop")
    kept, why = difficulty.select(items, str, lambda _: "g", est, sel)
    assert kept == sorted(f"t{i}" for i in range(2, 9))
    assert why == {"pass rate outside 0.2:0.8": 4, "never measured for this model": 1}
    sel = difficulty.make_selection(None, None, "keep",
                                    bins=difficulty.split_mix({"pass:0-0.5": 1,
                                                               "pass:0.5-1": 3})[1])
    kept, _ = difficulty.select(items, str, lambda _: "g", est, sel, {"g": 4})
    # 1 from the low bin (t5 = 0.5 falls in the first bin holding it), 3 from the high one,
    # each taken in the order given
    assert sorted(kept) == ["t0", "t10", "t6", "t7"]


def test_the_schedule_moves_the_band_up_as_the_mean_pass_rate_rises():
    def est(rate_: float):
        return {"t": difficulty.Estimate("t", "g", "m", ["r"], 10, 0, rate_, 0, 1)}
    sel = difficulty.make_selection("auto", None, None)
    bands = [difficulty.resolve_band(sel, est(m)) for m in (0.1, 0.4, 0.6, 0.9)]
    assert [b.low for b in bands] == sorted(b.low for b in bands) and bands[0] != bands[-1]
    custom = difficulty.make_selection("auto", None, None,
                                       schedule=[{"until": 0.5, "difficulty": "0:0.3"},
                                                 {"until": 2, "difficulty": "0.6:1"}])
    assert str(difficulty.resolve_band(custom, est(0.7))) == "0.6:1"


# --- calibration against a server of known rates -----------------------------------------

def coverage(p: float, n: int, z: float = difficulty.Z95) -> float:
    """The chance that the Wilson interval of n samples at true rate p holds p."""
    bounds = [difficulty.wilson(k, n, z) for k in range(n + 1)]
    inside = [k for k, (lo, hi) in enumerate(bounds) if lo <= p <= hi]
    return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in inside)


def test_the_wilson_intervals_chance_of_holding_the_true_rate_is_near_95_percent():
    rates = [i / 100 for i in range(1, 100)]
    chances = [coverage(p, 16) for p in rates]
    assert 0.9 < sum(chances) / len(chances) < 0.97 and min(chances) > 0.75
    # an interval half as wide would hold the truth far less often
    assert sum(coverage(p, 16, z=difficulty.Z95 / 2) for p in rates) / len(rates) < 0.75


@pytest.fixture
def triage(cli, tmp_path):
    """Triage tasks built by the CLI from the sample tickets (not validated: fast)."""
    ok(cli("ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv", "-q"))
    ok(cli("build-tasks", "--out", tmp_path / "tasks", "--generators", "tickets.triage",
           "--limit", "60", "--no-validate", "-q"))
    return tmp_path / "tasks"


@pytest.mark.slow
def test_calibration_recovers_known_rates_and_the_band_keeps_exactly_its_tasks(
        cli, tmp_path, triage, query):
    tasks = task_dirs(triage)
    with RatedPolicy(tasks) as policy:
        run = as_json(cli("run", triage, "--base-url", policy.url, "--model", "rated",
                          "--samples", "16", "--concurrency", "16", "--json"))
    assert run["invalid"] == 0 and run["rollouts"] == 16 * len(tasks)
    # The run calibrated itself: one row per task, 16 samples each.
    rows = query("SELECT task_id, samples, passes, estimate, lo, hi, model, runs "
                 "FROM task_stats WHERE calibration_id = ?", [run["run_id"]])
    assert sorted(r[0] for r in rows) == sorted(tasks)
    seeds: dict[str, list[int]] = {}
    for line in (Path(run["run_dir"]) / "rollouts.jsonl").read_text().splitlines():
        r = json.loads(line)
        seeds.setdefault(r["task_id"], []).append(r["seed"])
    covered = 0
    for task_id, n, passes, estimate, lo, hi, model, runs in rows:
        assert (n, model, runs) == (16, "rated", [run["run_id"]])
        assert passes == sum(solves(task_id, s) for s in seeds[task_id])  # what the server did
        assert estimate == passes / n and (lo, hi) == pytest.approx(difficulty.wilson(passes, n))
        covered += lo <= rate(task_id) <= hi
    # Each interval holds its true rate with a probability the binomial gives exactly (about
    # 0.93 at n = 16, not 0.95); the count inside may sit below its mean by chance, by 4
    # standard deviations once in ~30,000 builds. A wrong interval falls far below.
    chances = [coverage(rate(r[0]), 16) for r in rows]
    mean = sum(chances)
    sd = math.sqrt(sum(c * (1 - c) for c in chances))
    assert mean / len(rows) > 0.85
    assert covered >= mean - 4 * sd, f"{covered} of {len(rows)} true rates inside, " \
                                     f"expected {mean:.1f} ± {sd:.1f}"
    estimates = {r[0]: r[3] for r in rows}
    band = {t for t, e in estimates.items() if 0.2 <= e <= 0.8}
    assert 0 < len(band) < len(tasks)
    # The manifest carries the estimates too.
    manifest = {r["task_id"]: r for r in pq.read_table(triage / "manifest.parquet").to_pylist()}
    assert json.loads(manifest[rows[0][0]]["difficulty"])["rated"]["estimate"] == rows[0][3]
    # `rlforge calibrate` again: the same numbers, and the shares per generator.
    cal = as_json(cli("calibrate", run["run_id"], "--json"))
    share = cal["shares"]["rated"]["tickets.triage"]
    assert share["in_band"] == len(band) and share["tasks"] == len(tasks)
    assert share["saturated"] == sum(e == 1 for e in estimates.values())
    assert share["dead"] == sum(e == 0 for e in estimates.values())
    # ... the pooled pass rate and the tasks per difficulty bin (dead first, saturated last).
    assert (share["samples"], share["passes"]) == (sum(r[1] for r in rows), sum(r[2] for r in rows))
    assert share["pass_rate"] == share["passes"] / share["samples"]
    assert share["histogram"] == difficulty.histogram(estimates.values())
    assert share["histogram"][0] == share["dead"] and share["histogram"][-1] == share["saturated"]
    # --difficulty 0.2:0.8 keeps exactly the tasks whose estimates lie in the band: in
    # build-tasks (same database, same seed: the same ids; the other 60 tickets give tasks
    # never measured, dropped here, kept by default) ...
    ok(cli("build-tasks", "--out", tmp_path / "band", "--generators", "tickets.triage",
           "--limit", "60", "--no-validate", "--difficulty", "0.2:0.8", "--unmeasured", "drop",
           "-q"))
    assert set(task_dirs(tmp_path / "band")) == band
    ok(cli("build-tasks", "--out", tmp_path / "band-keep", "--generators", "tickets.triage",
           "--no-validate", "--difficulty", "0.2:0.8", "-q"))
    kept = set(task_dirs(tmp_path / "band-keep"))
    ok(cli("build-tasks", "--out", tmp_path / "all", "--generators", "tickets.triage",
           "--no-validate", "-q"))
    every = set(task_dirs(tmp_path / "all"))
    assert kept & set(tasks) == band and kept - set(tasks) == every - set(tasks)
    # Curricula: difficulty bins share the quota by weight; `auto` takes the schedule's band.
    low = sorted((t for t, e in estimates.items() if e <= 0.5), key=str)
    high = sorted((t for t, e in estimates.items() if e > 0.5), key=str)
    report = as_json(cli("build-tasks", "--out", tmp_path / "bins", "--generators",
                         "tickets.triage", "--mix", "pass:0-0.5=1,pass:0.5-1=3", "--limit", "12",
                         "--no-validate", "--unmeasured", "drop", "--json"))
    built = set(task_dirs(tmp_path / "bins"))
    assert len(built) == 12 and len(built & set(low)) == 3 and len(built & set(high)) == 9
    assert report["difficulty"]["bins"] == {"0-0.5": 1.0, "0.5-1": 3.0}
    mean = sum(estimates.values()) / len(estimates)
    want = next(difficulty.parse_band(s["difficulty"]) for s in difficulty.SCHEDULE
                if mean < s["until"])
    report = as_json(cli("build-tasks", "--out", tmp_path / "auto", "--generators",
                         "tickets.triage", "--no-validate", "--difficulty", "auto",
                         "--unmeasured", "drop", "--json"))
    assert report["difficulty"]["band"] == str(want)
    assert set(task_dirs(tmp_path / "auto")) == {t for t, e in estimates.items() if e in want}
    # ... in export tasks (with the estimate in every row) ...
    as_json(cli("export", "tasks", triage, "--format", "verl", "--split", "all", "--out",
                tmp_path / "verl", "--difficulty", "0.2:0.8", "--json"))
    exported = [r["extra_info"] for split in ("train", "val", "test")
                if (tmp_path / "verl" / f"{split}.parquet").exists()
                for r in pq.read_table(tmp_path / "verl" / f"{split}.parquet").to_pylist()]
    assert {r["task_id"] for r in exported} == band
    assert all(r["pass_rate"] == estimates[r["task_id"]] and r["difficulty_model"] == "rated"
               and r["pass_samples"] == 16 for r in exported)
    as_json(cli("export", "tasks", triage, "--format", "trl", "--split", "all", "--out",
                tmp_path / "trl", "--json"))
    trl = pq.read_table(tmp_path / "trl" / "train.parquet").to_pylist()
    assert all(r["pass_rate"] == estimates[r["task_id"]] for r in trl)
    # ... and in run.
    with RatedPolicy(tasks) as policy:
        again = as_json(cli("run", triage, "--base-url", policy.url, "--model", "rated",
                            "--difficulty", "0.2:0.8", "--json"))
    plan = json.loads((Path(again["run_dir"]) / "config.json").read_text())
    assert {t for t, _ in plan["tasks"]} == band


def test_build_tasks_difficulty_without_calibration_drops_nothing_or_refuses(cli, tmp_path,
                                                                             triage):
    before = set(task_dirs(triage))
    ok(cli("build-tasks", "--out", tmp_path / "b", "--generators", "tickets.triage",
           "--limit", "60", "--no-validate", "--difficulty", "0.2:0.8", "-q"))
    assert set(task_dirs(tmp_path / "b")) == before  # never measured: kept by default
    r = cli("build-tasks", "--out", tmp_path / "c", "--generators", "tickets.triage",
            "--no-validate", "--difficulty", "0.2:0.8", "--unmeasured", "drop", "-q")
    assert r.exit_code == 1 and "no calibration" in r.output


# --- incremental builds and dataset versions ---------------------------------------------

def _tickets_csv(path: Path, rows: list[dict[str, str]], fields: list[str]) -> Path:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


@pytest.mark.slow
def test_incremental_build_renders_only_new_and_changed_tasks_and_diff_is_exact(
        cli, tmp_path, query):
    with open(SAMPLE_DATA / "tickets" / "tickets.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)
    first, later = rows[:100], rows[100:112]
    ok(cli("ingest", "tickets", _tickets_csv(tmp_path / "a.csv", first, fields), "-q"))
    out = tmp_path / "tasks"
    args = ("build-tasks", "--out", out, "--generators", "tickets.triage", "--json")
    started = time.perf_counter()
    v1 = as_json(cli(*args))
    first_seconds = time.perf_counter() - started
    assert v1["version"] == 1 and v1["new_version"] and v1["reused"] == 0
    assert v1["rendered"] == v1["emitted"] > 10
    m1 = {r["task_id"]: r for r in pq.read_table(out / "manifest.parquet").to_pylist()}
    # New records, and one record changed (its body edited, re-ingested with replace).
    with_task = {k.rpartition(":")[2] for r in m1.values() for k in r["source_keys"]}
    changed = dict(next(r for r in first if r["id"] in with_task))
    changed["description"] += "\n\nAlso, it started again this morning, same as before."
    ok(cli("ingest", "tickets", _tickets_csv(tmp_path / "b.csv", later, fields), "-q"))
    ok(cli("ingest", "tickets", _tickets_csv(tmp_path / "c.csv", [changed], fields),
           "--on-conflict", "replace", "-q"))
    started = time.perf_counter()
    v2 = as_json(cli(*args))
    second_seconds = time.perf_counter() - started
    m2_all = pq.read_table(out / "manifest.parquet").to_pylist()
    m2 = {r["task_id"]: r for r in m2_all if r["status"] == "active"}
    retired = {r["task_id"]: r for r in m2_all if r["status"] == "retired"}
    # Which tasks came from the changed ticket, and which are new.
    old_of_changed = {t for t, r in m1.items()
                      if any(k.rpartition(":")[2] == changed["id"] for k in r["source_keys"])}
    new_ids = set(m2) - set(m1)
    kept_ids = set(m2) & set(m1)
    assert old_of_changed and old_of_changed.isdisjoint(m2)  # it got a new id ...
    assert set(retired) == set(m1) - set(m2)  # ... and the old one is retired, not gone
    assert {retired[t]["retired_by"] for t in old_of_changed} <= new_ids
    assert v2["rendered"] == len(new_ids) and v2["reused"] == len(kept_ids)
    assert v2["rendered"] < v2["reused"] and v2["version"] == 2
    # Timed: the second build renders and validates a fifth as many tasks; what it still
    # pays for every kept task is linking it into the new tree and removing the old one.
    assert second_seconds < 0.75 * first_seconds, (first_seconds, second_seconds)
    # The incremental tree is byte for byte what a fresh build of the same database writes
    # (a kept task's task.toml is rewritten when its metadata changed).
    ok(cli("build-tasks", "--out", tmp_path / "fresh", "--generators", "tickets.triage",
           "--no-validate", "-q"))

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.name != "manifest.parquet"}
    assert files(out) == files(tmp_path / "fresh")
    # `rlforge tasks diff 1 2`: exactly the new, the changed and the removed.
    d = as_json(cli("tasks", "diff", "1", "2", "--dir", out, "--json"))
    pairs = {(c["old_id"], c["new_id"]) for c in d["changed"]}
    assert {o for o, _ in pairs} == old_of_changed
    assert {a["task_id"] for a in d["added"]} | {n for _, n in pairs} == new_ids
    assert {r["task_id"] for r in d["removed"]} == set(m1) - set(m2) - old_of_changed
    assert d["unchanged"] == len(kept_ids)
    assert all("source changed" in c["why"] for c in d["changed"])
    # A third build over the same database is the same version, nothing rendered.
    v3 = as_json(cli(*args))
    assert (v3["version"], v3["new_version"], v3["rendered"]) == (2, False, 0)
    # The versions and their snapshots are in the database; the tree holds only tasks.
    assert query("SELECT version, tasks, rendered, reused FROM dataset_versions "
                 "WHERE out_dir = ? ORDER BY version", [str(out.resolve())]) == [(1, len(m1), len(m1), 0),
                                         (2, len(m2), len(new_ids), len(kept_ids))]
    assert {p.name for p in out.iterdir()} == set(m2) | {"manifest.parquet"}
    from rlforge.taskdir import discover_tasks
    assert {t.task_id for t in discover_tasks(out)} == set(m2)


# --- the report ----------------------------------------------------------------------------

def test_report_shows_the_difficulty_histogram_and_how_it_moved(cli, tmp_path, query):
    ok(cli("ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv", "-q"))
    ok(cli("build-tasks", "--out", tmp_path / "tasks", "--generators", "tickets.triage",
           "--limit", "12", "--no-validate", "-q"))
    tasks = task_dirs(tmp_path / "tasks")
    ids = []
    with RatedPolicy(tasks) as policy:
        for seed in ("1", "2"):  # other seeds: other samples pass
            ids.append(as_json(cli("run", tmp_path / "tasks", "--base-url", policy.url,
                                   "--model", "rated", "--samples", "4", "--seed", seed,
                                   "--json"))["run_id"])
    hist = {}
    for run_id in ids:
        rates = [r[0] for r in query("SELECT estimate FROM task_stats WHERE calibration_id = ?",
                                     [run_id])]
        hist[run_id] = difficulty.histogram(rates)
    assert hist[ids[0]] != hist[ids[1]]
    got = as_json(cli("report", "--compare", ids[0], ids[1], "--out", tmp_path / "c.html",
                      "--json"))
    shift = {g["generator"]: g for g in got["difficulty"]["generators"]}
    assert shift["all"]["a"] == hist[ids[0]] and shift["all"]["b"] == hist[ids[1]]
    assert shift["tickets.triage"]["a"] == hist[ids[0]]
    moves = shift["all"]["moves"]
    assert sum(map(sum, moves)) == shift["all"]["shared"] == len(tasks)
    assert [sum(row) for row in moves] == hist[ids[0]]  # rows: A's bins; columns: B's
    assert [sum(col) for col in zip(*moves)] == hist[ids[1]]
    html = (tmp_path / "c.html").read_text()
    assert "Difficulty, A → B" in html
    ok(cli("report", ids[0], "--out", tmp_path / "r.html", "--json"))
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Difficulty</h2>" in page and "1 (saturated)" in page
