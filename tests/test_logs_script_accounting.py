"""logs.script on a source without ERROR records emits nothing; it must say why for every
candidate window pair, never a silent zero (HDFS from ../shared/data/loghub)."""

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
