"""build-tasks speed: tasks/s for N reference-answer tasks, with validation off and on.

Reference-answer tasks here are `tickets.triage` tasks: the Bitext support requests (each
gives a category task and an intent task) plus generated tickets from the sample-data
generator, as many as needed to reach N. Both builds run the real command in a fresh
process on the same database:

  (a) rlforge build-tasks --generators tickets.triage --limit N --no-validate
  (b) rlforge build-tasks --generators tickets.triage --limit N   (every task proven in the
      sandbox: oracle, null, and every adversarial submission)

Usage: python benchmarks/build_tasks.py [--tasks 10000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BITEXT = ROOT.parent / "shared" / "data" / "tickets" / "bitext" / "bitext_customer_support_sample.csv"


def rlforge(db: Path, *args: str) -> tuple[float, dict]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rlforge", "--db", str(db), *args, "--json"],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"failed: rlforge {' '.join(args)}\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    return elapsed, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="rlforge-bench-build-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "rlforge.duckdb"
    if not db.exists():
        rlforge(db, "ingest", "tickets", str(BITEXT), "--origin", "bitext", "--map", "body=instruction",
                "--map", "resolution=response", "--map", "category=category", "--map", "intent=intent")
        extra_rows = max(0, args.tasks - 2 * 4514) + 200
        gen = work / "generated.csv"
        subprocess.run([sys.executable, str(ROOT / "sample_data" / "tickets" / "generate.py"),
                        "--rows", str(extra_rows), "--format", "csv", "--out", str(gen)],
                       check=True, capture_output=True)
        rlforge(db, "ingest", "tickets", str(gen), "--origin", "generated")
    common = ["build-tasks", "--generators", "tickets.triage", "--limit", str(args.tasks),
              "--seed", "1", "--force"]
    off, rep_off = rlforge(db, *common, "--out", str(work / "tasks-off"), "--no-validate")
    on, rep_on = rlforge(db, *common, "--out", str(work / "tasks-on"))
    n_off, n_on = rep_off["emitted"], rep_on["emitted"]
    sample = next(p for p in (work / "tasks-on").iterdir() if p.is_dir())
    adversarial = len(json.loads((sample / "tests" / "validation.json").read_text())["adversarial"])
    checks = 1 + 1 + adversarial + 1  # oracle, null, adversarial submissions, echoed instruction
    print(f"{args.tasks:,} tickets.triage tasks requested; {os.cpu_count()} CPUs; "
          f"sandbox workers: default (2 x cores)")
    print(f"{'build':<34}{'tasks':>8}{'seconds':>10}{'tasks/s':>10}")
    print(f"{'(a) --no-validate':<34}{n_off:>8,}{off:>10.1f}{n_off / off:>10.1f}")
    print(f"{'(b) validated in the sandbox':<34}{n_on:>8,}{on:>10.1f}{n_on / on:>10.1f}")
    for label, rep in (("(a)", rep_off), ("(b)", rep_on)):
        reasons = Counter(d["reason"].split(":")[0] for d in rep["drops"])
        print(f"{label} dropped {len(rep['drops'])}: " + (", ".join(
            f"{n} {reason}" for reason, n in reasons.most_common()) or "none"))
    print(f"{checks} checks per task (oracle, null, "
          f"{adversarial} adversarial, echoed instruction) in 2 bubblewrap runs: solve.sh then "
          f"test.sh, and one batch of the verifier over the other submissions")

if __name__ == "__main__":
    main()
