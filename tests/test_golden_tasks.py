"""Golden task directories: what a build from sample_data renders, reviewed in diffs.

The files under tests/golden/tasks/ are a build of two tasks per ticket generator from the
project's sample data (seed 0). A change to templates, generators or the verifier shows up
here as a diff to review. Regenerate with: UPDATE_GOLDEN=1 pytest tests/test_golden_tasks.py
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from builds import build_options
from paths import SAMPLE_DATA
from rlforge import db
from rlforge.ingest import tickets
from rlforge.tasks.build import build_tasks
from rlforge.verify import standalone

GOLDEN = Path(__file__).parent / "golden" / "tasks"
GENERATORS = ["tickets.triage", "tickets.reply"]


def _files(root: Path) -> dict[str, bytes]:
    """Every file but the manifest and the verifier's (verbatim copies, checked separately)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "manifest.parquet"
            and not (p.parent.name == "tests" and p.name.startswith(standalone.PREFIX))}


def test_rendered_tasks_match_the_golden_files(tmp_path):
    con = db.connect(tmp_path / "g.duckdb")
    db.meta_set(con, "redaction_key", "5a" * 32)  # fixed, so pseudonyms are the same every run
    tickets.ingest_file(con, SAMPLE_DATA / "tickets" / "tickets.csv")
    out = tmp_path / "tasks"
    build_tasks(con, build_options(out=out, generators=GENERATORS, mix={g: 1 for g in GENERATORS},
                                   limit=4, seed=0, validate=False))
    for tests in out.glob("*/tests"):
        carried = {p.name: p.read_bytes() for p in tests.glob(standalone.PREFIX + "*.py")}
        kind = json.loads((tests / "reference.json").read_text())["verifier"]
        assert carried == standalone.task_files(kind), f"{tests.parent.name} carries other files"
    got = _files(out)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, data in got.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_bytes(data)
    want = _files(GOLDEN)
    assert sorted(got) == sorted(want), "task files differ from tests/golden/tasks"
    for rel in want:
        assert got[rel] == want[rel], f"{rel} differs from the golden copy"
