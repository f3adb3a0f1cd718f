"""logs.script on every log format: how many tasks each source gets, by fact, and why every
other candidate window pair was dropped.

Each source is ingested into a fresh database (the same library function `rlforge ingest
logs` calls, with `--format`, `--mask` and `--year` as given), then `logs.script` makes
every task it can (seed 0, no limit, not rendered or validated). Prints per source: the
format the file was read in, the candidate window pairs, the tasks by fact, and the drop
reasons (each cut at its first parenthesis, so like reasons add up), then a table by format.

    PYTHONPATH=. .venv/bin/python benchmarks/logs_script_formats.py [--rlforge DIR] \\
        FILE[::FORMAT[::YEAR]] ...

FORMAT is any `rlforge ingest logs --format` value (default: auto), a header format
string included; a Loghub file (`.../loghub/<S>/<S>_2k.log`) given as `FILE::loghub` is
read with that system's format string and masks from `formats.json` beside it. `--rlforge
DIR` measures another checkout's generator (a worktree of main: "before").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _format_of(path: Path, fmt: str) -> tuple[str, list[str]]:
    """The format string and masks a source is read with (`loghub`: from formats.json)."""
    if fmt != "loghub":
        return fmt or "auto", []
    system = path.name.split("_")[0]
    spec = json.loads((path.parent.parent / "formats.json").read_text())[system]
    return spec["log_format"], spec["regex"]


def measure(path: Path, fmt: str, year: int | None, seed: int) -> dict:
    """logs.script's tasks (by fact) and drops (by reason) on one source."""
    from rlforge import db
    from rlforge.ingest import logs
    from rlforge.tasks.generators.logs_script import LogsScript
    from rlforge.tasks.spec import BuildContext

    spec, masks = _format_of(path, fmt)
    with tempfile.TemporaryDirectory() as tmp:
        con = db.connect(Path(tmp) / "bench.duckdb")
        result = logs.ingest_file(con, path, fmt=spec, masks=masks, year=year)
        gen = LogsScript()
        candidates = gen.available(con)
        facts = Counter(s.extra_metadata["fact"] for s in gen.specs(BuildContext(con, seed)))
        drops = Counter(re.sub(r" \(.*", "", r["reason"]) if not r["reason"].startswith(
            "no question") else r["reason"] for r in gen.rejections)
        records = con.execute("SELECT count(*) FROM log_lines").fetchall()[0][0]
        con.close()
    return {"format": getattr(result, "format", spec), "records": records,
            "candidates": candidates, "facts": facts, "drops": drops}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="FILE[::FORMAT[::YEAR]]")
    parser.add_argument("--rlforge", type=Path, default=ROOT,
                        help="the rlforge checkout whose generator makes the tasks")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.rlforge.resolve()))
    import rlforge

    print(f"generator: {Path(rlforge.__file__).parent.parent}")
    by_format: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for item in args.files:
        name, fmt, year = (item.split("::") + ["", ""])[:3]
        started = time.perf_counter()
        got = measure(Path(name), fmt, int(year) if year else None, args.seed)
        label = fmt or "auto"
        emitted = sum(got["facts"].values())
        print(f"{Path(name).name} [{label} -> {got['format']}]: {got['records']} records, "
              f"{got['candidates']} candidates, {emitted} tasks "
              f"({time.perf_counter() - started:.1f}s)")
        if got["facts"]:
            print("    tasks: " + ", ".join(f"{f} {n}" for f, n in got["facts"].most_common()))
        for reason, n in got["drops"].most_common():
            print(f"    dropped {n} x {reason}")
        row = by_format["header (a format string)" if "<" in str(got["format"])
                        else str(got["format"])]
        row[0] += 1
        row[1] += got["candidates"]
        row[2] += emitted
    print(f"\n{'format':<40} {'sources':>7} {'candidates':>10} {'tasks':>6}")
    for fmt_name, (n, cands, tasks) in sorted(by_format.items()):
        print(f"{fmt_name[:40]:<40} {n:>7} {cands:>10} {tasks:>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
