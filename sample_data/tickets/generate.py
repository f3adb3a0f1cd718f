#!/usr/bin/env python3
"""Seeded generator of Tallybird's (fictional) support-desk exports.

Writes the same kind of tickets in three vendor formats so that `rlforge ingest
tickets` has realistic, redactable input and the triage and reply task generators have
labelled conversations to work from:

    python sample_data/tickets/generate.py                      # the committed samples
    python sample_data/tickets/generate.py --rows 1000000 --format csv --out /tmp/big.csv

Standard library only; the same seed gives the same bytes. See sample_data/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tallybird as c  # noqa: E402  (sibling modules; this file runs as a script)
from ticket_formats import CSV_COLUMNS, WRITERS, write_bulk_csv  # noqa: E402
from planted import plant  # noqa: E402
from ticket_model import draw_tickets  # noqa: E402

__all__ = ["CSV_COLUMNS", "DEFAULT_SEED", "c", "draw_tickets", "main"]

DEFAULT_SEED = 20240601
SPLIT = {"csv": 120, "zendesk": 100, "jira": 80}  # the committed sample files
FILES = {"csv": "tickets.csv", "zendesk": "zendesk_export.json", "jira": "jira_export.csv"}


def open_out(path: Path):
    if path.suffix == ".gz":
        # mtime=0 keeps the bytes identical from run to run
        raw = gzip.GzipFile(filename="", mode="wb", fileobj=open(path, "wb"), mtime=0)
        return io.TextIOWrapper(raw, encoding="utf-8", newline="")
    return open(path, "w", encoding="utf-8", newline="")


def write_samples(out_dir: Path, seed: int) -> dict[str, int]:
    """The three committed sample files, from one draw of sum(SPLIT) tickets with the
    incidents' tickets planted (planted.py)."""
    tickets = plant(draw_tickets(sum(SPLIT.values()), seed))
    start = 0
    counts = {}
    for fmt, n in SPLIT.items():
        with open_out(out_dir / FILES[fmt]) as fh:
            WRITERS[fmt](tickets[start:start + n], fh)
        counts[FILES[fmt]] = n
        start += n
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent,
                    help="where the three sample files go (default: next to this script)")
    ap.add_argument("--rows", type=int, help="write this many tickets to --out instead")
    ap.add_argument("--format", choices=sorted(WRITERS), default="csv")
    ap.add_argument("--out", type=Path, help="output file for --rows (.gz compresses)")
    args = ap.parse_args(argv)
    if args.rows is None:
        for name, n in write_samples(args.out_dir, args.seed).items():
            print(f"{n:6d} tickets  {args.out_dir / name}")
        return 0
    if args.out is None:
        ap.error("--rows needs --out")
    with open_out(args.out) as fh:
        if args.format == "csv":
            write_bulk_csv(args.rows, args.seed, fh)
        else:
            WRITERS[args.format](draw_tickets(args.rows, args.seed), fh)
    print(f"{args.rows:6d} tickets  {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
