"""How often redaction fires on ops logs, and on what: the kinds a log line rarely holds.

Runs the redactor over every line of the log files rlforge ships or reads in its tests
(sample_data/logs, ../shared/data/formats, the LogHub 2k samples), once as text (how
tickets are redacted) and once in logs mode (`Redactor(logs=True)`, what `rlforge ingest
logs` uses), and prints per kind the redactions of each, with examples of the kinds an
ops log almost never really holds (PHONE, PASSWORD, SECRET, CARD), to be judged by eye.

    python benchmarks/log_redaction.py [--examples 5]
"""

from __future__ import annotations

import argparse
import gzip
import re
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SUSPECT = ("PHONE", "PASSWORD", "SECRET", "CARD")
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)_[0-9a-f]{6}>")


def log_files() -> list[Path]:
    files = [p for p in sorted((ROOT / "sample_data" / "logs").rglob("*"))
             if p.is_file() and p.suffix not in (".py", ".md", ".json") or p.name.endswith(".json.log.gz")]
    files += [p for p in sorted((SHARED / "formats").rglob("*")) if p.is_file()
              and "tickets" not in p.parts and p.suffix not in (".md", ".json")]
    files += sorted(SHARED.glob("loghub/*/*_2k.log"))
    return [p for p in files if p.is_file()]


def lines_of(path: Path) -> list[str]:
    raw = gzip.open(path, "rt", errors="replace") if path.suffix == ".gz" else \
        path.open(errors="replace")
    with raw as f:
        return f.read().splitlines()


def main() -> None:
    from rlforge.ingest.redaction.redactor import Redactor

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=5)
    args = ap.parse_args()
    files = log_files()
    modes = {"text": Redactor(b"k" * 32), "logs": Redactor(b"k" * 32, logs=True)}
    counts = {m: Counter() for m in modes}
    examples: dict[str, dict[str, list[str]]] = {m: defaultdict(list) for m in modes}
    n_lines, started = 0, time.perf_counter()
    for path in files:
        for line in lines_of(path):
            n_lines += 1
            for mode, red in modes.items():
                out = red.redact_text(line)
                if out == line:
                    continue
                for kind in PLACEHOLDER.findall(out):
                    counts[mode][kind] += 1
                    if kind in SUSPECT and len(examples[mode][kind]) < args.examples:
                        examples[mode][kind].append(f"{path.name}: {line[:160]}")
    print(f"{len(files)} files, {n_lines:,} lines, {time.perf_counter() - started:.1f}s")
    kinds = sorted(set(counts["text"]) | set(counts["logs"]))
    print(f"{'kind':14s} {'as text':>9s} {'logs mode':>10s}")
    for k in kinds:
        print(f"{k:14s} {counts['text'][k]:9,d} {counts['logs'][k]:10,d}")
    for mode in modes:
        for kind, lines in sorted(examples[mode].items()):
            print(f"\n{mode} {kind}:")
            for x in lines:
                print("   ", x)


if __name__ == "__main__":
    main()
