"""Verification time per task: how long scoring one submission takes, per generator.

Builds tasks from sample_data with the real CLI (tickets, the demo repository, the sample
logs), then for each commits.repair and logs.script task (or those named with
--generators) runs its gold solution once in the sandbox and times the verifier on that
workspace --repeat times, the way `rlforge run` scores a multi-turn rollout
(`TaskRunner.verify`). Prints per generator the median and the spread of the per-task
medians, and writes the raw timings as JSON (--json-out).

Usage: python benchmarks/verify_time.py [--limit 20] [--repeat 3] [--tasks DIR]

To compare two versions, run it with PYTHONPATH pointing at each checkout in turn: the
tasks are built by the version under test, since a task carries its own verifier.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"


def build(out: Path, limit: int, generators: str) -> None:
    env = {**os.environ, "RLFORGE_DB": str(out.parent / "bench.duckdb")}
    rl = [sys.executable, "-m", "rlforge"]

    def run(*args):
        subprocess.run(rl + [str(a) for a in args], check=True, env=env, capture_output=True)

    run("ingest", "tickets", SAMPLE / "tickets" / "tickets.csv")
    subprocess.run([sys.executable, str(SAMPLE / "repo" / "build_repo.py"), str(out.parent / "dura")],
                   check=True, capture_output=True)
    run("ingest", "commits", out.parent / "dura")
    run("ingest", "logs", *sorted((SAMPLE / "logs").glob("*.log*")))
    run("build-tasks", "--out", out, "--limit", limit, "--seed", "1", "--generators", generators,
        "--no-validate")


async def time_tasks(dirs: list[Path], repeat: int) -> dict[str, list[float]]:
    from rlforge.sandbox import SandboxPool
    from rlforge.taskdir import load_task
    from rlforge.verify.runner import TaskRunner, fresh_workspace

    out: dict[str, list[float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="verify-bench-"))
    try:
        async with SandboxPool(2) as pool:
            runner = TaskRunner(pool)
            for d in dirs:
                meta = load_task(d).meta
                gold = fresh_workspace(d, scratch)
                why = await runner.run_solution(d, meta, gold)
                if why:
                    print(f"{d.name}: solve.sh failed: {why}", file=sys.stderr)
                    continue
                times = []
                for _ in range(repeat):
                    ws = Path(tempfile.mkdtemp(dir=scratch))
                    shutil.copytree(gold, ws, dirs_exist_ok=True, symlinks=True)
                    t = time.perf_counter()
                    run = await runner.verify(d, meta, ws, scratch)
                    times.append(time.perf_counter() - t)
                    total = None if run.reward is None else run.reward.get("total")
                    if total != 1.0:
                        print(f"{d.name}: gold scored {total} ({run.error})", file=sys.stderr)
                out[d.name] = times
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--generators", default="commits.repair,logs.script")
    ap.add_argument("--tasks", type=Path, help="time these tasks instead of building new ones")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="verify-time-"))
    try:
        tasks = args.tasks
        if tasks is None:
            tasks = work / "tasks"
            build(tasks, args.limit, args.generators)
        wanted = tuple(g.replace(".", "-") + "-" for g in args.generators.split(","))
        dirs = sorted(p for p in tasks.iterdir() if (p / "task.toml").is_file() and p.name.startswith(wanted))
        timings = asyncio.run(time_tasks(dirs, args.repeat))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"verification time per task (gold submission, {args.repeat} runs each; median of the "
          f"per-task medians, fastest-slowest task; 1-minute load {load:.1f}, "
          f"{len(os.sched_getaffinity(0))} cores)")
    for gen in args.generators.split(","):
        prefix = gen.replace(".", "-") + "-"
        meds = [statistics.median(v) for k, v in timings.items() if k.startswith(prefix)]
        if meds:
            print(f"  {gen:<16} {len(meds):>3} tasks  median {statistics.median(meds):6.2f} s  "
                  f"range {min(meds):.2f}-{max(meds):.2f} s")
    if args.json_out:
        args.json_out.write_text(json.dumps(timings, indent=1))


if __name__ == "__main__":
    main()
