"""Commit ingest speed: `rlforge ingest commits` vs `git log --numstat`, same repository, same run.

  (a) git log --all --numstat > /dev/null          (what any tool must at least pay)
  (b) rlforge ingest commits REPO (fresh database, whole command, redaction on)
  (c) the same ingest through the library in-process (no interpreter start-up)
Goal: (b) / (a) <= 1.5. Median of --repeat fresh runs each.

Usage: python benchmarks/ingest_commits.py REPO [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IN_PROCESS = """
import json, sys, time
from rlforge import db
from rlforge.ingest import commits
from rlforge.ingest.redaction.redactor import Redactor
con = db.connect(sys.argv[2])
t = time.perf_counter()
r = commits.ingest_repo(con, sys.argv[1], redactor=Redactor(db.redaction_key(con)))
print(json.dumps({"seconds": time.perf_counter() - t, "loaded": r.n_loaded}))
"""


def timed(cmd: list[str], **kw) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlforge-bench-"))
    count = int(subprocess.run(["git", "-C", str(args.repo), "rev-list", "--all", "--count"],
                               capture_output=True, text=True, check=True).stdout)
    git_t, cli_t, lib_t = [], [], []
    for i in range(args.repeat):
        git_t.append(timed(["git", "-C", str(args.repo), "log", "--all", "--numstat"])[0])
        t, out = timed([sys.executable, "-m", "rlforge", "--db", str(work / f"c{i}.duckdb"),
                        "ingest", "commits", str(args.repo), "--json"])
        assert json.loads(out)["totals"]["n_loaded"] == count
        cli_t.append(t)
        _, out = timed([sys.executable, "-c", IN_PROCESS, str(args.repo), str(work / f"l{i}.duckdb")])
        lib_t.append(json.loads(out)["seconds"])
    a, b, c = (statistics.median(x) for x in (git_t, cli_t, lib_t))
    print(f"repository: {args.repo} ({count:,} commits); median of {args.repeat}")
    print(f"{'measurement':<46}{'seconds':>9}{'commits/s':>12}")
    print(f"{'(a) git log --all --numstat':<46}{a:>9.2f}{count / a:>12,.0f}")
    print(f"{'(b) rlforge ingest commits (whole command)':<46}{b:>9.2f}{count / b:>12,.0f}")
    print(f"{'(c) rlforge ingest, in-process':<46}{c:>9.2f}{count / c:>12,.0f}")
    print(f"ratio (b)/(a) = {b / a:.2f}  (goal <= 1.5);  (c)/(a) = {c / a:.2f}")


if __name__ == "__main__":
    main()
