"""logs.script on a plain log of bare messages (no time, host, component or level; no two
templates holding the same words): every count and distinct-values question falls to a cheap
program there, so the tasks it gets are joins of two patterns by a shared id
(`unmatched_ids`), which no program of the script battery answers. The gold program, run on
the directories as written, prints the reference answers."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from rlforge import db
from rlforge.ingest import logs
from rlforge.tasks.generators.logs_common import Record, render
from rlforge.tasks.generators.logs_script import LogsScript
from rlforge.tasks.generators.logs_script_facts import (directory_text, fact_value, stated_fact,
                                                        statement_of, unmatched)
from rlforge.tasks.spec import BuildContext
from rlforge.verify import shortcuts_script


def _job_log(path, n_lines: int = 480, seed: int = 7) -> None:
    """Jobs queued by a user, most of them finished later, some never; nothing else."""
    rng = random.Random(seed)
    users = ["ada", "brook", "cyril", "dana", "emil", "fern", "gus"]
    open_jobs: list[str] = []
    lines = []
    while len(lines) < n_lines:
        if open_jobs and rng.random() < 0.45:
            job = open_jobs.pop(rng.randrange(len(open_jobs)))
            if rng.random() < 0.8:  # the rest are never finished
                lines.append(f"job {job} finished in {rng.randint(3, 900)} ms")
            continue
        job = f"job-{rng.getrandbits(24):06x}"
        open_jobs.append(job)
        lines.append(f"job {job} queued by {rng.choice(users)}")
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def job_db(tmp_path):
    path = tmp_path / "jobs.log"
    _job_log(path)
    con = db.connect(tmp_path / "x.duckdb")
    logs.ingest_file(con, path, fmt="plain")
    yield con
    con.close()


def test_a_bare_plain_log_gets_join_tasks_no_shortcut_answers(job_db, tmp_path):
    gen = LogsScript()
    candidates = gen.available(job_db)
    specs = list(gen.specs(BuildContext(job_db, seed=0)))
    assert candidates >= 2
    assert len(specs) + len({r["source"] for r in gen.rejections}) == candidates
    joins = [s for s in specs if s.extra_metadata["fact"] == "unmatched_ids"]
    assert joins, [r["reason"] for r in gen.rejections]
    for n, spec in enumerate(joins):
        meta = spec.extra_metadata
        other = (meta["other_pattern"], meta["other_slot"])
        answers = [c["answer"]["answer"] for c in spec.reference["cases"]]
        assert answers[0] != answers[1] and min(answers) >= 1
        cases = [({k.rpartition("/")[2]: v for k, v in spec.workspace.items()}, answers[0]),
                 ({k.rpartition("/")[2]: v for k, v in spec.tests_data.items()}, answers[1])]
        assert shortcuts_script.solved("unmatched_ids", meta["pattern"],
                                       spec.context["statement"], cases, meta["slot"], other) == {}
        # the gold program prints each directory's answer
        solve = spec.solution_files["solve.sh"].decode()
        gold = solve.split("<<'RLFORGE_EOF'\n", 1)[1].rsplit("RLFORGE_EOF", 1)[0]
        program = tmp_path / "gold.py"
        program.write_text(gold)
        for (files, answer), name in zip(cases, ("visible", "held")):
            where = tmp_path / f"{name}-{n}"
            where.mkdir(parents=True)
            for file, data in files.items():
                (where / file).write_bytes(data)
            out = subprocess.run([sys.executable, str(program), str(where)], capture_output=True,
                                 text=True, timeout=60, check=True).stdout.split()
            assert out[-1] == str(answer)


def _rec(i: int, message: str) -> Record:
    return Record(i, None, None, None, None, message, None)


def test_unmatched_counts_distinct_texts_of_the_first_the_second_never_names():
    messages = ["open s-0001 by ann", "open s-0002 by bob", "open s-0002 by bob",
                "open s-0003 by cy", "close s-0001", "close s-0009", "noise s-0003 here"]
    first, second = ("open <*> by <*>", 1), ("close <*>", 1)
    assert unmatched(messages, first, second) == 2  # s-0002 (twice) and s-0003
    assert unmatched(messages, second, first) == 1  # s-0009
    records = [_rec(i, m) for i, m in enumerate(messages)]
    assert fact_value("unmatched_ids", records, *first, other=second) == 2
    # the stated rule, from the directory as written, agrees with the reference
    text = directory_text({"x.log": render(records).encode()})
    assert stated_fact("unmatched_ids", text, *first, other=second) == 2
    statement = statement_of("unmatched_ids", *first, other=second)
    assert "`open <*> by <*>`" in statement and "`close <*>`" in statement


def test_join_battery_counts_are_the_wrong_programs():
    text = "".join(f"- - - -: {m}\n" for m in (
        "open s-1 by a", "open s-1 by a", "open s-2 by b", "close s-1", "close s-3",
        "close s-4"))
    got = shortcuts_script.join_counts("open <*> by <*>", 1, ("close <*>", 1), text)
    assert got["join_first_texts"] == 2 and got["join_second_texts"] == 3
    assert got["join_shared_texts"] == 1 and got["join_reversed"] == 2
    assert got["join_either_texts"] == 4 and got["join_difference_in_number"] == -1
    assert got["join_record_difference"] == 0
