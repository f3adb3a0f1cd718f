"""Calibration on sample_data: how well `rlforge calibrate` recovers known pass rates, and the
saturated / dead / in-band shares per generator; then two incremental builds, timed.

1. Ingests sample_data (the three ticket exports, the dura repository, every log file)
   into a fresh database, builds up to `--per-gen` tasks of each generator that has rows
   (not validated: the run is what is measured);
2. runs them with `--samples K` (default 16) against `tests/rated_policy.py`, a server on
   127.0.0.1 that solves task T with probability rate(T), a fixed function of its id;
3. prints, per generator, the share of tasks whose true rate lies inside the stored
   Wilson interval, and the saturated / dead / in-band (0.2-0.8) shares;
4. with `--embedded N`, runs N tasks of each generator (`--limit` takes them in turn),
   `--embedded-samples` each (4), against the embedded SmolLM2 model (slow: one request
   at a time; a rollout ends at `--embedded-budget` seconds) and prints its shares;
5. with `--incremental`, times a validated build of the first 100 sample tickets'
   triage and reply tasks, then another after 12 more tickets and one edited ticket.

Run: `python benchmarks/calibration.py [--per-gen 20] [--samples 16] [--embedded 3]
[--embedded-samples 4] [--embedded-budget 60]
[--incremental | --incremental-only]`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from rated_policy import RatedPolicy, rate  # noqa: E402

SAMPLE = ROOT / "sample_data"
LOGS = sorted(p for p in (SAMPLE / "logs").glob("**/*") if p.is_file()
              and p.suffix not in (".py", ".md", ".json"))


def rlforge(env: dict, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "rlforge", *map(str, args)], env=env,
                         capture_output=True, text=True)
    if out.returncode not in (0, 3):
        raise SystemExit(f"rlforge {' '.join(map(str, args))} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def shares_table(cal: dict) -> None:
    for model, per_gen in cal["shares"].items():
        print(f"\n{model}: tasks, saturated, dead, in band {cal['band']}")
        for gen, s in per_gen.items():
            print(f"  {gen:16} {s['tasks']:4}  sat {s['saturated_share']:6.1%}  "
                  f"dead {s['dead_share']:6.1%}  in band {s['in_band_share']:6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-gen", type=int, default=20)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--embedded", type=int, default=0, help="tasks per generator for the "
                    "embedded model (0: skip)")
    ap.add_argument("--embedded-samples", type=int, default=4)
    ap.add_argument("--embedded-budget", type=float, default=60.0, help="seconds per "
                    "embedded rollout")
    ap.add_argument("--incremental", action="store_true")
    ap.add_argument("--incremental-only", action="store_true", help="only the timed builds")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlforge-calibration-"))
    env = {**os.environ, "RLFORGE_DB": str(work / "r.duckdb"), "PYTHONPATH": str(ROOT)}
    os.chdir(work)
    if args.incremental_only:
        incremental(work, env)
        return
    rlforge(env, "ingest", "tickets", SAMPLE / "tickets" / "tickets.csv", "-q")
    rlforge(env, "ingest", "tickets", SAMPLE / "tickets" / "jira_export.csv", "--map",
            "category=Component/s", "-q")
    rlforge(env, "ingest", "tickets", SAMPLE / "tickets" / "zendesk_export.json", "--map",
            "category=custom_fields.360041872211", "-q")
    subprocess.run([sys.executable, str(SAMPLE / "repo" / "build_repo.py"), str(work / "dura")],
                   check=True, capture_output=True)
    rlforge(env, "ingest", "commits", work / "dura", "-q")
    rlforge(env, "ingest", "logs", *LOGS, "-q")
    generators = ["tickets.triage", "tickets.reply", "logs.diagnose", "logs.script",
                  "commits.repair", "incidents.repair", "incidents.diagnose"]
    n = args.per_gen * len(generators)
    mix = ",".join(f"{g}=1" for g in generators)
    build = json.loads(rlforge(env, "build-tasks", "--out", work / "tasks", "--generators",
                               ",".join(generators), "--mix", mix, "--limit", n,
                               "--no-validate", "--json"))
    print(f"built {build['emitted']} tasks: "
          + ", ".join(f"{g} {s['emitted']}" for g, s in build["per_generator"].items()))
    tasks = {p.name: p for p in (work / "tasks").iterdir() if (p / "task.toml").is_file()}
    started = time.perf_counter()
    with RatedPolicy(tasks) as policy:
        run = json.loads(rlforge(env, "run", work / "tasks", "--base-url", policy.url,
                                 "--model", "rated", "--samples", args.samples,
                                 "--concurrency", args.concurrency, "--json"))
    print(f"run {run['run_id']}: {run['rollouts']} rollouts in "
          f"{time.perf_counter() - started:.0f}s, invalid {run['invalid']}")
    cal = run["calibration"]
    import duckdb

    con = duckdb.connect(str(work / "r.duckdb"), read_only=True)
    rows = con.execute("SELECT task_id, generator, lo, hi FROM task_stats WHERE "
                       "calibration_id = ?", [run["run_id"]]).fetchall()
    con.close()
    by_gen: dict[str, list[bool]] = {}
    for task_id, gen, lo, hi in rows:
        by_gen.setdefault(gen, []).append(lo <= rate(task_id) <= hi)
    print(f"\ntrue rate inside the 95% Wilson interval (K = {args.samples}):")
    for gen, hits in sorted(by_gen.items()):
        print(f"  {gen:16} {sum(hits)}/{len(hits)} = {sum(hits) / len(hits):.1%}")
    hits = [h for hs in by_gen.values() for h in hs]
    print(f"  {'all':16} {sum(hits)}/{len(hits)} = {sum(hits) / len(hits):.1%}")
    shares_table(cal)
    if args.embedded:
        started = time.perf_counter()
        # every generator, N tasks each; a multi-turn rollout ends at --embedded-budget
        emb = json.loads(rlforge(env, "run", work / "tasks", "--limit",
                                 args.embedded * len(generators), "--samples",
                                 args.embedded_samples, "--time-budget", args.embedded_budget,
                                 "--json"))
        print(f"\nembedded model: {emb['rollouts']} rollouts in "
              f"{time.perf_counter() - started:.0f}s, invalid {emb['invalid']}")
        shares_table(emb["calibration"])
    if args.incremental:
        incremental(work, env)


def incremental(work: Path, env: dict) -> None:
    env = {**env, "RLFORGE_DB": str(work / "inc.duckdb")}
    with open(SAMPLE / "tickets" / "tickets.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)

    def write(path: Path, chosen: list[dict]) -> Path:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=fields)
        w.writeheader()
        w.writerows(chosen)
        path.write_text(buf.getvalue(), encoding="utf-8")
        return path

    rlforge(env, "ingest", "tickets", write(work / "a.csv", rows[:100]), "-q")
    args = ("build-tasks", "--out", work / "inc", "--generators", "tickets.triage,tickets.reply",
            "--json")
    t = time.perf_counter()
    v1 = json.loads(rlforge(env, *args))
    first = time.perf_counter() - t
    edited = dict(rows[5])
    edited["description"] += "\n\nAlso, it started again this morning."
    rlforge(env, "ingest", "tickets", write(work / "b.csv", rows[100:112]), "-q")
    rlforge(env, "ingest", "tickets", write(work / "c.csv", [edited]), "--on-conflict",
            "replace", "-q")
    t = time.perf_counter()
    v2 = json.loads(rlforge(env, *args))
    second = time.perf_counter() - t
    diff = json.loads(rlforge(env, "tasks", "diff", "1", "2", "--dir", work / "inc", "--json"))
    print(f"\nincremental (validated): v1 {v1['emitted']} tasks rendered {v1['rendered']} in "
          f"{first:.1f}s; v2 {v2['emitted']} tasks, rendered {v2['rendered']}, kept "
          f"{v2['reused']}, retired {v2['retired']} in {second:.1f}s ({second / first:.0%})")
    print(f"diff v1 v2: {len(diff['added'])} added, {len(diff['removed'])} removed, "
          f"{len(diff['changed'])} changed, {diff['unchanged']} unchanged; changed because: "
          + ", ".join(sorted({c['why'] for c in diff['changed']})))


if __name__ == "__main__":
    main()
