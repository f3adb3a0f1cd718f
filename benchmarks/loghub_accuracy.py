"""Grouping accuracy of rlforge's template miner on the Loghub 2k samples, next to Drain.

Runs exactly what `rlforge ingest logs FILE --format FMT --mask RX ...` runs — the same
library function the CLI calls, with the same redaction default (on, with the database's
own key) — on each system in ../shared/data/loghub, into a fresh database, using only the
format string and masks of formats.json. Then it compares the grouping by `template_id`
of `log_lines` (in line order) with the ground-truth `EventTemplate`.

Grouping accuracy (GA): a line is correct when the set of lines in its predicted group
equals the set of lines in its true group; GA = correct lines / all lines.

    .venv/bin/python benchmarks/loghub_accuracy.py [--data ../shared/data/loghub] [SYSTEM ...]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rlforge import db  # noqa: E402
from rlforge.cli.ingest import make_redactor  # noqa: E402
from rlforge.config import setting  # noqa: E402
from rlforge.ingest import logs  # noqa: E402

SYSTEMS = ["HDFS", "Hadoop", "Spark", "Zookeeper", "BGL", "HPC", "Thunderbird", "Windows",
           "Android", "Apache", "OpenSSH"]
# Drain's grouping accuracy as given in ../shared/data/README.md: the published Loghub-2k
# figure, and drain3 0.9.11 measured on the corrected ground truth.
DRAIN_PUBLISHED = {"HDFS": 0.9975, "Hadoop": 0.9475, "Spark": 0.9200, "Zookeeper": 0.9665,
                   "BGL": 0.9625, "HPC": 0.8870, "Thunderbird": 0.9550, "Windows": 0.9970,
                   "Android": 0.9110, "Apache": 1.0000, "OpenSSH": 0.7875}
DRAIN3 = {"HDFS": 0.9975, "Hadoop": 0.9475, "Spark": 0.9200, "Zookeeper": 0.9665,
          "BGL": 0.9625, "HPC": 0.8870, "Thunderbird": 0.9550, "Windows": 0.9970,
          "Android": 0.8565, "Apache": 1.0000, "OpenSSH": 0.7890}


def grouping_accuracy(predicted: list, truth: list[str]) -> float:
    """GA: share of lines whose predicted group is exactly their true group."""
    true_groups: dict[str, set[int]] = collections.defaultdict(set)
    pred_groups: dict[object, set[int]] = collections.defaultdict(set)
    for i, (p, t) in enumerate(zip(predicted, truth)):
        true_groups[t].add(i)
        pred_groups[p].add(i)
    correct = 0
    for members in pred_groups.values():
        if true_groups[truth[next(iter(members))]] == members:
            correct += len(members)
    return correct / len(truth)


def run_system(data: Path, system: str, spec: dict, workdir: Path) -> tuple[float, float, int]:
    log = data / system / f"{system}_2k.log"
    truth = [row["EventTemplate"] for row in
             csv.DictReader(open(data / system / f"{system}_2k.log_structured.csv",
                                 encoding="utf-8"))]
    con = db.connect(workdir / f"{system}.duckdb")
    try:
        redactor = make_redactor(con, setting("redact").default)
        started = time.perf_counter()
        result = logs.ingest_file(con, log, fmt=spec["log_format"], masks=spec["regex"],
                                  redactor=redactor)
        seconds = time.perf_counter() - started
        if result.status != "ok":
            raise SystemExit(f"{system}: ingest failed: {result.error}")
        rows = con.execute("SELECT line_no, template_id FROM log_lines ORDER BY line_no").fetchall()
        n_templates = con.execute("SELECT count(*) FROM log_templates").fetchall()[0][0]
    finally:
        con.close()
    if len(rows) != len(truth):
        raise SystemExit(f"{system}: {len(rows)} lines loaded, ground truth has {len(truth)}")
    return grouping_accuracy([r[1] for r in rows], truth), seconds, n_templates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "loghub")
    ap.add_argument("systems", nargs="*", default=SYSTEMS)
    args = ap.parse_args(argv)
    formats = json.loads((args.data / "formats.json").read_text())
    print(f"{'system':<12} {'rlforge GA':>10} {'Drain (paper)':>13} {'drain3':>7} "
          f"{'vs Drain':>8} {'templates':>9} {'seconds':>7}")
    scores = []
    with tempfile.TemporaryDirectory() as tmp:
        for system in args.systems:
            ga, seconds, n_templates = run_system(args.data, system, formats[system], Path(tmp))
            scores.append(ga)
            drain = max(DRAIN_PUBLISHED[system], DRAIN3[system])
            verdict = ">=" if ga >= drain else "BELOW"
            print(f"{system:<12} {ga:>10.4f} {DRAIN_PUBLISHED[system]:>13.4f} "
                  f"{DRAIN3[system]:>7.4f} {verdict:>8} {n_templates:>9} {seconds:>7.2f}")
    mean = sum(scores) / len(scores)
    print(f"{'mean':<12} {mean:>10.4f} {sum(DRAIN_PUBLISHED[s] for s in args.systems) / len(scores):>13.4f} "
          f"{sum(DRAIN3[s] for s in args.systems) / len(scores):>7.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
