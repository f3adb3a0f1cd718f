"""build-tasks after a crash: the rerun's time against a full build's.

On the sample-data tickets and logs, in fresh processes on one database:

  (a) a full validated build of N tasks (--generators, default the ticket and log
      generators: logs.script validation runs programs in the sandbox, while ticket
      answers are scored in the rlforge process and cost little to redo), uninterrupted;
  (b) the same build into another directory, SIGKILLed mid-way: once a share (--kill-at,
      default half) of (a)'s wall time has passed (tasks differ in cost, so half the tasks
      can be far less than half the work);
  (c) the rerun of (b)'s command, which keeps what (b) finished and does the rest.

(c)'s tree must be byte-identical to (a)'s; the script checks that and prints the times.

Usage: python benchmarks/build_resume.py [--tasks 40] [--kill-at 0.5] [--generators G,...]
       [--no-validate]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICKETS = ROOT / "sample_data" / "tickets"
LOGS = ROOT / "sample_data" / "logs"


def command(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "rlforge", "--db", str(db), *args]


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def timed(cmd: list[str]) -> tuple[float, dict]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-1500:]}")
    return time.perf_counter() - t, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=40)
    ap.add_argument("--kill-at", type=float, default=0.5)
    ap.add_argument("--generators", default="tickets.triage,tickets.reply,logs.script,logs.diagnose")
    ap.add_argument("--no-validate", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlforge-bench-resume-"))
    db = work / "rlforge.duckdb"
    for name, extra in (("tickets.csv", []),
                        ("zendesk_export.json", ["--map", "category=custom_fields.360041872211"]),
                        ("jira_export.csv", ["--map", "category=Component/s"])):
        subprocess.run(command(db, "ingest", "tickets", str(TICKETS / name), *extra, "-q"),
                       check=True)
    subprocess.run(command(db, "ingest", "logs", *map(str, sorted(LOGS.glob("*.log*"))), "-q"), check=True)
    build = ["build-tasks", "--generators", args.generators, "--limit",
             str(args.tasks), "--seed", "1", "--json"] + (["--no-validate"] if args.no_validate else [])
    full_s, full = timed(command(db, *build, "--out", str(work / "full")))
    out = work / "killed"
    proc = subprocess.Popen(command(db, *build, "--out", str(out)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    tree = work / f".{out.name}.rlforge-build" / "tree"
    t = time.perf_counter()
    staged = 0
    while proc.poll() is None:
        staged = len(os.listdir(tree)) if tree.is_dir() else 0
        if time.perf_counter() - t >= full_s * args.kill_at:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    killed_s = time.perf_counter() - t
    if proc.returncode != -signal.SIGKILL:
        sys.exit("the build ended before it could be killed; use more --tasks")
    rerun_s, rerun = timed(command(db, *build, "--out", str(out)))
    same = digest(out) == digest(work / "full")
    mode = "not validated" if args.no_validate else "validated in the sandbox"
    print(f"{full['emitted']} tasks ({mode}); {os.cpu_count()} CPUs")
    print(f"(a) full build                        {full_s:7.2f} s")
    print(f"(b) killed with {staged} tasks staged     {killed_s:7.2f} s")
    print(f"(c) rerun: {rerun['resumed']} kept, {rerun['emitted'] - rerun['resumed']} built  "
          f"{rerun_s:7.2f} s  ({rerun_s / full_s:.0%} of the full build)")
    print(f"(c)'s tree byte-identical to (a)'s: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
