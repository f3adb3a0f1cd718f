"""logs.script on a source without ERROR records (HDFS from ../shared/data/loghub): every
candidate window pair is a task or a reason, never a silent zero, and a fact that needs no
ERROR record (the component that logged the most records) is asked."""

from __future__ import annotations

import json

import pytest

from rlforge import db
from rlforge.ingest import logs
from rlforge.tasks.generators.logs_script import LogsScript
from rlforge.tasks.spec import BuildContext


def test_every_candidate_is_a_task_or_a_reason(tmp_path):
    from paths import SHARED_DATA

    loghub = SHARED_DATA / "loghub"
    if not loghub.is_dir():
        pytest.skip("shared Loghub data not present")
    spec = json.loads((loghub / "formats.json").read_text())["HDFS"]
    con = db.connect(tmp_path / "x.duckdb")
    logs.ingest_file(con, loghub / "HDFS" / "HDFS_2k.log", fmt=spec["log_format"],
                     masks=spec["regex"], year=2017)
    gen = LogsScript()
    candidates = gen.available(con)
    specs = list(gen.specs(BuildContext(con, seed=0)))
    explained = {r["source"] for r in gen.rejections}
    assert candidates > 0
    assert len(specs) + len(explained) == candidates
    assert all(r["reason"] for r in gen.rejections)
    assert not con.execute("SELECT count(*) FROM log_lines WHERE level IN ('error', 'fatal')"
                           ).fetchall()[0][0]
    facts = {s.extra_metadata["fact"] for s in specs}
    assert "top_component" in facts
    for s in specs:
        visible, held = (c["answer"]["answer"] for c in s.reference["cases"])
        assert visible != held  # a remembered answer fails the held-back case
    assert "first_error_time" in gen.skipped(con) and "top_component" not in gen.skipped(con)
