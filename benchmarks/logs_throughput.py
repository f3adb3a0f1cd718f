"""Log ingest throughput: rlforge vs drain3 vs a bare polars parse, side by side.

Builds 1,000,000-line files by repeating the HDFS, BGL and Thunderbird 2k samples of
../shared/data/loghub, then times, each in a fresh Python process:

(a) rlforge: `ingest_file` — the library function `rlforge ingest logs` calls, with the
    same defaults (redaction on, in its mode for ops logs) — end to end into a fresh DuckDB file: connect and
    migrate, read, parse, redact, mine, write, commit, close;
(b) drain3 0.9.11 end to end: read the file line by line, the benchmark's header regex,
    `TemplateMiner.add_log_message` on the content (masks, similarity threshold and depth
    from formats.json);
(c) polars: read the lines and extract the header fields with the benchmark's regex.

The three run in rounds, (a) (b) (c) one after the other, --repeat rounds per system, so
a slow minute of a shared machine falls on all three alike. A rate is the median over the
rounds; a/b is the median of the rounds' own a/b, printed with the lowest of them.

Each clock starts after the process has imported its libraries (the same for all three)
and stops when the work is done. Then the peak RSS of (a) on a 5,000,000-line file (BGL
repeated). Goals: (a) at least 5x faster than (b), at most 3x slower than (c), peak RSS
at most 1.5 GB.

    .venv/bin/python benchmarks/logs_throughput.py [--lines 1000000] [--repeat 5]
        [--rss-lines 5000000] [--workdir DIR] [--data ../shared/data/loghub]

The machine is shared: rerun when a row looks disturbed (the spread between the fastest
and slowest run and the load average are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ["HDFS", "BGL", "Thunderbird"]

RLFORGE = r"""
import json, resource, sys, time
import rlforge.cli  # first: the process tuning an `rlforge ingest` command runs with
from rlforge import db
from rlforge.ingest.load import make_redactor
from rlforge.config import setting
from rlforge.ingest import logs
spec, path, dbfile = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
con = db.connect(dbfile)
result = logs.ingest_file(con, path, fmt=spec["log_format"], masks=spec["regex"],
                          redactor=make_redactor(con, setting("redact").default, logs=True))
con.close()
seconds = time.perf_counter() - t0
assert result.status == "ok", result.error
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "lines": result.n_read, "cpu": use.ru_utime + use.ru_stime,
                  "rss": use.ru_maxrss * 1024}))
"""

DRAIN3 = r"""
import json, re, resource, sys, time
from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig
spec, path = json.loads(sys.argv[1]), sys.argv[2]
rx = re.compile(sys.argv[3])
cfg = TemplateMinerConfig()
cfg.profiling_enabled = False
cfg.drain_sim_th = spec["st"]
cfg.drain_depth = spec["depth"]
cfg.masking_instructions = [MaskingInstruction(m, "*") for m in spec["regex"]]
t0 = time.perf_counter()
miner = TemplateMiner(config=cfg)
n = 0
with open(path, encoding="utf-8") as fh:
    for line in fh:
        m = rx.match(line.rstrip("\r\n"))
        if m:
            miner.add_log_message(m.group("Content"))
            n += 1
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "lines": n, "clusters": len(miner.drain.clusters),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

POLARS = r"""
import json, resource, sys, time
import polars as pl
path, rx = sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
lines = pl.read_csv(path, has_header=False, separator="\x1f", quote_char=None,
                    new_columns=["line"], infer_schema=False)["line"]
fields = lines.str.extract_groups(rx).struct.unnest()
n = int(fields["Content"].is_not_null().sum())
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "lines": n,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def header_regex(log_format: str) -> str:
    """The benchmark's header regex (logparser convention): a field is `(?P<name>.*?)`,
    a space matches `\\s+`, other text between fields is a regex fragment."""
    import re

    out = ""
    for i, part in enumerate(re.split(r"(<[^<>]+>)", log_format)):
        if i % 2:
            out += f"(?P<{part[1:-1]}>.*?)"
        else:
            out += re.sub(" +", r"\\s+", part)
    return "^" + out + "$"


def build(sample: Path, out: Path, n_lines: int) -> Path:
    """A file of n_lines made by repeating a sample (every line newline-terminated)."""
    if out.exists() and out.stat().st_size > 0:
        return out
    lines = sample.read_bytes().splitlines(keepends=False)
    block = b"\n".join(lines) + b"\n"
    reps, rest = divmod(n_lines, len(lines))
    with open(out, "wb") as fh:
        for _ in range(reps):
            fh.write(block)
        fh.write(b"".join(line + b"\n" for line in lines[:rest]))
    return out


def run(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


Job = tuple[str, tuple[str, ...], Path | None]  # code, its arguments, a database to delete


def rates(jobs: list[Job], repeat: int) -> tuple[list[list[float]], dict]:
    """Lines/s of each job in `repeat` rounds that run every job once, in turn; and the
    first job's last output."""
    out: list[list[float]] = [[] for _ in jobs]
    first: dict = {}
    for _ in range(repeat):
        for i, (code, args, fresh) in enumerate(jobs):
            if fresh is not None and fresh.exists():
                fresh.unlink()
            got = run(code, *args)
            out[i].append(got["lines"] / got["seconds"])
            if i == 0:
                first = got
    return out, first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "loghub")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rss-lines", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("systems", nargs="*", default=SYSTEMS)
    args = ap.parse_args(argv)
    formats = json.loads((args.data / "formats.json").read_text())
    tmp = tempfile.TemporaryDirectory() if args.workdir is None else None
    work = Path(tmp.name) if tmp else args.workdir
    work.mkdir(parents=True, exist_ok=True)
    print(f"{args.lines:,}-line files, {args.repeat} rounds of fresh processes (a) (b) (c); "
          f"lines/s, median of the rounds (a/b: median and lowest of the rounds' a/b; spread "
          f"= fastest/slowest run; load = 1-minute load average, {os.cpu_count()} cores)")
    print(f"{'system':<12} {'(a) rlforge':>12} {'(b) drain3':>11} {'(c) polars':>11} "
          f"{'a/b':>6} {'lowest':>6} {'c/a':>6} {'spread a,b,c':>16} {'RSS (a)':>8} "
          f"{'load':>5}")
    try:
        for system in args.systems:
            spec = formats[system]
            path = build(args.data / system / f"{system}_2k.log",
                         work / f"{system}_{args.lines}.log", args.lines)
            rx = header_regex(spec["log_format"])
            dbfile = work / f"{system}.duckdb"
            spec_json = json.dumps(spec)
            (ra, rb, rc), la = rates([(RLFORGE, (spec_json, str(path), str(dbfile)), dbfile),
                                      (DRAIN3, (spec_json, str(path), rx), None),
                                      (POLARS, (spec_json, str(path), rx), None)], args.repeat)
            a, b, c = (statistics.median(r) for r in (ra, rb, rc))
            ab = [x / y for x, y in zip(ra, rb)]
            spread = ",".join(f"{max(r) / min(r):.2f}" for r in (ra, rb, rc))
            print(f"{system:<12} {a:>12,.0f} {b:>11,.0f} {c:>11,.0f} "
                  f"{statistics.median(ab):>6.2f} {min(ab):>6.2f} {c / a:>6.2f} {spread:>16} "
                  f"{la['rss'] / 2**20:>6.0f}MB {os.getloadavg()[0]:>5.1f}", flush=True)
        if args.rss_lines:
            spec = formats["BGL"]
            path = build(args.data / "BGL" / "BGL_2k.log", work / f"BGL_{args.rss_lines}.log",
                         args.rss_lines)
            dbfile = work / "rss.duckdb"
            if dbfile.exists():
                dbfile.unlink()
            got = run(RLFORGE, json.dumps(spec), str(path), str(dbfile))
            print(f"peak RSS of (a) on a {args.rss_lines:,}-line BGL file: "
                  f"{got['rss'] / 2**20:,.0f} MB ({got['lines'] / got['seconds']:,.0f} lines/s)")
    finally:
        if tmp:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
