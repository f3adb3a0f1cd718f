"""How fast is redaction? Ticket ingest with redaction on and off, and `redact_series` alone.

Default: ticket ingest rows/s on N generated tickets (default 1,000,000, the sample-data
generator's CSV), each run in a fresh process into a fresh database:
  * off   `tickets.ingest_file(..., redactor=None)`
  * on    `tickets.ingest_file` with the database's redactor, every kind on (person names
          and addresses included), and the share of the time spent redacting.
Goal: at least 2,000 tickets/s with every kind on.

With --series, also the older side-by-side on 1M log lines and 1M ticket texts:
  * rlforge  `Redactor.redact_series` (every kind, validated, pseudonymised);
  * python   `Redactor.redact_text` in a loop (pure `re`), timed on a sample, scaled;
  * floor    one bare polars `str.replace_all` of a naive IPv4/e-mail regex.

    .venv/bin/python benchmarks/redact_speed.py [--rows 1000000] [--keep DIR] [--series]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from rlforge.ingest.redaction.redactor import Redactor

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
HDFS = DATA / "loghub" / "HDFS" / "HDFS_2k.log"
BITEXT = DATA / "tickets" / "bitext" / "bitext_customer_support_sample.csv"
FALLBACK_LOG = [
    "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block "
    "blk_38865049064139660 terminating",
    "081109 204005 35 INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap "
    "updated: 10.251.73.220:50010 is added to blk_7128370237687728475 size 67108864",
    "081109 204106 329 INFO dfs.DataNode$DataXceiver: Receiving block blk_-1608999687919862906 "
    "src: /10.250.19.102:54106 dest: /10.250.19.102:50010",
]
FALLBACK_TICKETS = ["how can I cancel purchase 113542617735902?", "I need help to change my shipping address",
                    "where can I check the status of my refund?"]
NAIVE = r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"


def hdfs_lines(n: int, seed: int = 7) -> pl.Series:
    """HDFS-like lines: the real 2k templates with fresh IPs and block ids."""
    rnd = random.Random(seed)
    base = HDFS.read_text().splitlines() if HDFS.exists() else FALLBACK_LOG
    ips = [f"10.{rnd.randint(0, 255)}.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}" for _ in range(3000)]
    ip_re, blk_re = re.compile(r"\d+\.\d+\.\d+\.\d+"), re.compile(r"blk_-?\d+")
    out = []
    for i in range(n):
        line = ip_re.sub(lambda m: rnd.choice(ips), base[i % len(base)])
        out.append(blk_re.sub(lambda m: f"blk_{rnd.choice(['', '-'])}{rnd.getrandbits(63)}", line))
    return pl.Series("line", out)


def ticket_texts(n: int, seed: int = 7) -> pl.Series:
    """Support-ticket texts: Bitext requests, a third signed with one of 200k customers'
    e-mail, some with phone numbers, one in ten a corpus ticket full of secrets."""
    spec = importlib.util.spec_from_file_location(
        "make_corpus", ROOT / "tests" / "redaction_corpus" / "make_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    g = corpus.Gen(seed)
    secrets = [corpus.ticket(g).record()["text"] for _ in range(3000)]
    base = (pl.read_csv(BITEXT, infer_schema=False)["instruction"].to_list()
            if BITEXT.exists() else FALLBACK_TICKETS)
    rnd = g.r
    out = []
    for i in range(n):
        text = base[i % len(base)]
        if i % 3 == 0:
            c = rnd.randrange(200_000)
            text += f"\n-- {corpus.FIRST[c % 20]}.{corpus.LAST[c % 18]}{c}@{corpus.DOMAINS[c % 10]}"
        if i % 7 == 0:
            text += f" call me on +1 ({rnd.randint(201, 989)}) {rnd.randint(200, 999)}-{rnd.randint(0, 9999):04d}"
        if i % 10 == 0:
            text += "\n" + rnd.choice(secrets)
        out.append(text)
    return pl.Series("body", out)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(name: str, s: pl.Series, repeat: int, sample: int) -> None:
    mb = s.str.len_bytes().sum() / 1e6
    runs = []
    for _ in range(repeat):
        red = Redactor(b"bench-key" * 4)  # fresh: no candidate cache from an earlier run
        runs.append(timed(lambda: red.redact_series(s)))
    best = min(runs)
    py_red = Redactor(b"bench-key" * 4)
    part = s.head(sample).to_list()
    py = timed(lambda: [py_red.redact_text(t) for t in part]) * s.len() / len(part)
    floor = min(timed(lambda: s.str.replace_all(NAIVE, "<X>")) for _ in range(repeat))
    print(f"\n{name}: {s.len():,} rows, {mb:.0f} MB")
    print(f"  {'rlforge redact_series':28s} {best:7.2f} s  {s.len() / best:12,.0f} rows/s"
          f"   (runs: {', '.join(f'{r:.2f}' for r in runs)})")
    print(f"  {'python redact_text (scaled)':28s} {py:7.2f} s  {s.len() / py:12,.0f} rows/s"
          f"   ({len(part):,}-row sample)")
    print(f"  {'floor: one naive regex':28s} {floor:7.2f} s  {s.len() / floor:12,.0f} rows/s")
    print(f"  redactions: {dict(red.counts.most_common())}")


def _ingest_script() -> str:
    """benchmarks/ingest_tickets.py's in-process ingest, with the redactor made optional."""
    spec = importlib.util.spec_from_file_location("ingest_tickets", ROOT / "benchmarks" / "ingest_tickets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old = "red = Timed(db.redaction_key(con))"
    assert old in module.REDACT_SHARE
    return module.REDACT_SHARE.replace(old, old + " if sys.argv[3] == 'on' else None")


def bench_ingest(rows: int, keep: Path | None) -> None:
    work = Path(tempfile.mkdtemp(prefix="rlforge-redact-"))
    data_dir = keep or work
    data_dir.mkdir(parents=True, exist_ok=True)
    csv_path = data_dir / f"tickets_{rows}.csv"
    if not csv_path.exists():
        subprocess.run([sys.executable, str(ROOT / "sample_data" / "tickets" / "generate.py"),
                        "--rows", str(rows), "--format", "csv", "--out", str(csv_path)],
                       check=True, capture_output=True)
    print(f"\nticket ingest: {rows:,} generated tickets, "
          f"{csv_path.stat().st_size / 1e6:,.0f} MB CSV, fresh process each")
    for mode in ("off", "on"):
        proc = subprocess.run([sys.executable, "-c", _ingest_script(), str(csv_path),
                               str(work / f"{mode}.duckdb"), mode],
                              capture_output=True, text=True, check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        assert r["loaded"] == rows, r
        line = f"  redaction {mode:3s} {r['seconds']:8.1f} s  {rows / r['seconds']:10,.0f} tickets/s"
        if mode == "on":
            line += (f"   redacting {r['redact_seconds']:.1f} s "
                     f"({100 * r['redact_seconds'] / r['seconds']:.0f}%)")
        print(line)
        if mode == "on":
            print(f"  redactions: {json.dumps(r['redactions'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=20_000)
    ap.add_argument("--keep", type=Path, help="directory to keep the generated CSV in (reused)")
    ap.add_argument("--series", action="store_true", help="also time redact_series on texts")
    args = ap.parse_args()
    print(f"polars {pl.__version__}, {pl.thread_pool_size()} threads")
    bench_ingest(args.rows, args.keep)
    if args.series:
        bench("HDFS-like log lines", hdfs_lines(args.rows), args.repeat, args.sample)
        bench("ticket texts", ticket_texts(args.rows), args.repeat, args.sample)


if __name__ == "__main__":
    main()
