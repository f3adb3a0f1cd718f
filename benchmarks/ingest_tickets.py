"""Ticket ingest speed: `rlforge ingest tickets` vs a bare DuckDB read_csv, same file, same run.

Builds a CSV of N generated tickets (default 1,000,000) with the sample-data generator,
then times, each in a fresh process and into a fresh database file (median of --repeat):

  (a) bare DuckDB:   CREATE TABLE t AS SELECT * FROM read_csv(file)
  (b) rlforge:       rlforge ingest tickets file --no-redact      (goal: b / a <= 1.5)
  (c) rlforge:       rlforge ingest tickets file  (redaction on)  rows/s, share of time redacting

Usage: python benchmarks/ingest_tickets.py [--rows 1000000] [--repeat 3] [--keep DIR]
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

ROOT = Path(__file__).resolve().parent.parent

BARE = """
import sys, duckdb
con = duckdb.connect(sys.argv[2])
con.execute("SET enable_progress_bar = false")
con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{sys.argv[1]}')")
print(con.execute("SELECT count(*) FROM t").fetchall()[0][0])
"""

REDACT_SHARE = """
import json, sys, time
from rlforge import db
from rlforge.ingest import tickets
from rlforge.ingest.redaction.redactor import Redactor

class Timed(Redactor):
    spent = 0.0
    def redact_series(self, s):
        t = time.perf_counter()
        try:
            return super().redact_series(s)
        finally:
            Timed.spent += time.perf_counter() - t

con = db.connect(sys.argv[2])
con.execute("SET enable_progress_bar = false")
red = Timed(db.redaction_key(con))
t = time.perf_counter()
r = tickets.ingest_file(con, sys.argv[1], redactor=red)
total = time.perf_counter() - t
print(json.dumps({"seconds": total, "redact_seconds": Timed.spent, "loaded": r.n_loaded,
                  "redactions": r.redactions}))
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="directory to keep the CSV in (reused if present)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlforge-bench-"))
    data_dir = args.keep or work
    data_dir.mkdir(parents=True, exist_ok=True)
    csv_path = data_dir / f"tickets_{args.rows}.csv"
    if not csv_path.exists():
        subprocess.run([sys.executable, str(ROOT / "sample_data" / "tickets" / "generate.py"),
                        "--rows", str(args.rows), "--format", "csv", "--out", str(csv_path)],
                       check=True, capture_output=True)
    size_mb = csv_path.stat().st_size / 1e6
    rlforge = [sys.executable, "-m", "rlforge"]
    bare, ours, red = [], [], []
    for i in range(args.repeat):
        t, out = timed([sys.executable, "-c", BARE, str(csv_path), str(work / f"bare{i}.duckdb")])
        assert int(out.strip()) == args.rows, out
        bare.append(t)
        t, out = timed([*rlforge, "--db", str(work / f"ours{i}.duckdb"), "ingest", "tickets",
                        str(csv_path), "--no-redact", "--json"])
        assert json.loads(out)["totals"]["n_loaded"] == args.rows, out[:500]
        ours.append(t)
    for i in range(max(1, args.repeat // 2)):
        t, out = timed([sys.executable, "-c", REDACT_SHARE, str(csv_path), str(work / f"red{i}.duckdb")])
        red.append(json.loads(out.strip().splitlines()[-1]))
    a, b = statistics.median(bare), statistics.median(ours)
    r = min(red, key=lambda x: x["seconds"])
    print(f"file: {args.rows:,} tickets, {size_mb:,.0f} MB CSV; median of {args.repeat} fresh processes")
    print(f"{'measurement':<44}{'seconds':>10}{'rows/s':>14}")
    print(f"{'(a) duckdb CREATE TABLE AS read_csv':<44}{a:>10.2f}{args.rows / a:>14,.0f}")
    print(f"{'(b) rlforge ingest tickets --no-redact':<44}{b:>10.2f}{args.rows / b:>14,.0f}")
    print(f"{'(c) rlforge ingest (redaction on, in-process)':<44}{r['seconds']:>10.2f}"
          f"{args.rows / r['seconds']:>14,.0f}")
    print(f"ratio (b)/(a) = {b / a:.2f}   (goal <= 1.5)")
    print(f"redaction: {r['redact_seconds']:.2f} s = {100 * r['redact_seconds'] / r['seconds']:.0f}% "
          f"of (c); redactions: {json.dumps(r['redactions'])}")


if __name__ == "__main__":
    main()
