"""Code-repair tasks from a real repository, the way a new user would make them.

  1. git clone SOURCE (a path, a bare mirror or a URL) into a scratch directory;
  2. rlforge ingest commits (all commits reachable from HEAD);
  3. rlforge build-tasks --generators commits.repair over the last --last commits
     (validation on: gold 1, null and adversarials 0), with a fresh environment cache
     unless --cache is given;
  4. rlforge validate on the emitted tasks, again, as a separate command.

Reports commits considered, candidates after screening, kept, rejected by reason,
seconds per build-time check and per emitted task, and the validate pass rate; writes the
same as JSON (--json-out). Every step is the real CLI in a subprocess.

Usage: python benchmarks/repair_tasks.py SOURCE [--last 300] [--workers 0] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
from repair_workdir import prepare


def run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1):  # validate exits 1 when a task fails: still a result
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("--last", type=int, default=300)
    ap.add_argument("--workers", type=int, default=0, help="concurrent sandboxes (0 = 2 x cores)")
    ap.add_argument("--cache", type=Path, help="environment cache to reuse (default: a fresh one)")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temp dir)")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    work, repo, _ = prepare(args.source, args.work, last=args.last, workers=args.workers,
                         cache=args.cache, prefix="rlforge-repair-bench-")
    rlforge = [sys.executable, "-m", "rlforge"]
    ingest_s, _ = run(rlforge + ["ingest", "commits", str(repo), "--rev", "HEAD", "-q"], work)
    build_s, out = run(rlforge + ["build-tasks", "--generators", "commits.repair", "--out",
                                  str(work / "tasks"), "--force", "--json"], work)
    build = json.loads(out)
    validate_s, out = run(rlforge + ["validate", str(work / "tasks"), "--json"], work)
    validated = json.loads(out)
    con = duckdb.connect(str(work / "rlforge.duckdb"), read_only=True)
    considered = con.execute("SELECT count(*) FROM (SELECT 1 FROM commits ORDER BY committed_at DESC "
                             "LIMIT ?)", [args.last]).fetchall()[0][0]
    checks = con.execute("SELECT status, reason, seconds FROM repair_checks").fetchall()
    head = con.execute("SELECT max(committed_at), min(committed_at) FROM (SELECT committed_at FROM "
                       "commits ORDER BY committed_at DESC LIMIT ?)", [args.last]).fetchall()[0]
    con.close()
    rejected = Counter(d["reason"].split(" (")[0] for d in build["drops"]
                       if d["generator"] == "commits.repair" and not d["task_id"])
    failed_validation = Counter(d["reason"][:90] for d in build["drops"]
                                if d["generator"] == "commits.repair" and d["task_id"])
    kept = build["emitted"]
    check_seconds = [s for _, _, s in checks if s]
    report = {
        "source": args.source, "window": {"last": args.last, "newest": str(head[0]), "oldest": str(head[1])},
        "commits_considered": considered, "candidates_checked": len(checks),
        "kept": kept, "rejected": dict(rejected.most_common()),
        "rejected_total": sum(rejected.values()),
        "dropped_by_validation": dict(failed_validation),
        "seconds": {"ingest": round(ingest_s, 1), "build_with_validation": round(build_s, 1),
                    "validate_again": round(validate_s, 1)},
        "seconds_per_check": {"median": round(statistics.median(check_seconds), 2) if check_seconds else None,
                              "mean": round(statistics.mean(check_seconds), 2) if check_seconds else None},
        "seconds_per_kept_task": round(build_s / kept, 1) if kept else None,
        "validate": {"tasks": validated["tasks"], "passed": validated["passed"],
                     "pass_rate": round(validated["passed"] / validated["tasks"], 4) if validated["tasks"] else None,
                     "seconds_per_task": round(validate_s / validated["tasks"], 2) if validated["tasks"] else None,
                     "failures": [r["reason"] for r in validated["results"] if not r["ok"]][:10]},
        "work": str(work),
    }
    print(f"{args.source}: {considered} commits considered ({report['window']['oldest'][:10]} .. "
          f"{report['window']['newest'][:10]}), {len(checks)} checked in the sandbox, {kept} kept")
    for reason, n in rejected.most_common():
        print(f"  rejected {n:4d} × {reason}")
    for reason, n in failed_validation.most_common():
        print(f"  dropped {n:4d} × at validation: {reason}")
    print(f"build-tasks (with validation) {build_s:.0f}s = {report['seconds_per_kept_task']}s per kept task; "
          f"median check {report['seconds_per_check']['median']}s")
    print(f"validate: {validated['passed']}/{validated['tasks']} passed in {validate_s:.0f}s "
          f"({report['validate']['seconds_per_task']}s per task)")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
