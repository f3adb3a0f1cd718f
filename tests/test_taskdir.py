"""`rlforge.taskdir` on real directories: a task written by hand in Harbor's layout loads as
one record, discovery finds the tasks under a root (from a build's manifest too), and a
task cut short, a foreign folder or a build's work area are told apart."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from rlforge.errors import UserError
from rlforge.taskdir import (PARTS, check_task, check_whole, discover_tasks,
                             find_incomplete_tasks, load_task, task_dirs)
from test_run_support import label_task


def write_task(root: Path, name: str, *, rlforge: str | None = None,
               reference: dict | None = None, timeout: float = 60.0) -> Path:
    """A whole task directory in Harbor's layout, every file written by hand."""
    d = root / name
    (d / "environment" / "app").mkdir(parents=True)
    (d / "environment" / "Dockerfile").write_text("FROM debian\nCOPY app/ /app/\n")
    (d / "environment" / "app" / "notes.txt").write_text("the workspace\n")
    (d / "tests").mkdir()
    (d / "tests" / "test.sh").write_text("#!/bin/bash\nexit 0\n")
    if reference is not None:
        (d / "tests" / "reference.json").write_text(json.dumps(reference))
    (d / "solution").mkdir()
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (d / "instruction.md").write_text(f"Do {name}.\n")
    table = f"\n[metadata.rlforge]\n{rlforge}\n" if rlforge else ""
    (d / "task.toml").write_text(f'[task]\nname = "{name}"\n\n[agent]\ntimeout_sec = {timeout}\n'
                                 + table)
    return d


def rlforge_table(task_id: str, split: str = "train") -> str:
    return (f'task_id = "{task_id}"\ngenerator = "test.answer@3"\nverifier = "answer"\n'
            f'kind = "answer"\nsplit = "{split}"')


def test_a_task_loads_as_one_record_with_its_files_read_on_use(tmp_path):
    ref = {"verifier": "answer", "answer": "42", "submission": "/app/out/answer.txt"}
    d = write_task(tmp_path, "t1", rlforge=rlforge_table("answer-1", "val"), reference=ref,
                   timeout=7.5)
    task = load_task(d)
    assert (task.path, task.task_id, task.generator, task.generator_version) == \
        (d, "answer-1", "test.answer", 3)
    assert (task.verifier, task.kind, task.split) == ("answer", "answer", "val")
    assert task.agent_timeout == 7.5 and task.meta["task"]["name"] == "t1"
    assert task.instruction == "Do t1.\n" and task.reference == ref
    assert task.answer_file == "out/answer.txt"


def test_a_foreign_harbor_task_falls_back_to_defaults(tmp_path):
    task = load_task(write_task(tmp_path, "plain"))
    assert (task.task_id, task.generator, task.generator_version) == ("plain", "unknown", None)
    assert (task.verifier, task.kind, task.split) == ("script", "answer", "")
    assert task.reference == {} and task.answer_file == "answer.txt"


def test_what_the_renderer_writes_is_a_whole_task(tmp_path):
    d = label_task(tmp_path / "tasks", "a", "billing")
    check_task(d)
    assert all((d / part).exists() for part in PARTS)
    assert load_task(d).reference["answer"] == "billing"


@pytest.mark.parametrize("remove, named", [
    ("solution/solve.sh", "missing solution/solve.sh"),
    ("environment", "missing environment/"),
])
def test_a_task_cut_short_is_refused_naming_what_it_lacks(tmp_path, remove, named):
    d = write_task(tmp_path, "cut")
    target = d / remove
    if target.is_dir():
        for p in sorted(target.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        target.rmdir()
    else:
        target.unlink()
    with pytest.raises(UserError, match=f"is not a whole task: {named}"):
        load_task(d)
    with pytest.raises(UserError, match=named):
        discover_tasks(tmp_path)
    assert [(p.name, p.missing) for p in find_incomplete_tasks(tmp_path)] == \
        [("cut", (named.removeprefix("missing "),))]


def test_no_task_toml_or_a_broken_one_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="not a task directory"):
        load_task(tmp_path)
    d = write_task(tmp_path, "bad")
    (d / "task.toml").write_text("[task\n")
    with pytest.raises(UserError, match="not valid TOML"):
        load_task(d)


def test_discovery_finds_the_tasks_under_a_root_by_name(tmp_path):
    root = tmp_path / "tasks"
    write_task(root, "b", rlforge=rlforge_table("id-b"))
    write_task(root, "a", rlforge=rlforge_table("id-a"))
    (root / "notes").mkdir()  # holds nothing of a task: not a task, left alone
    (root / "notes" / "README").write_text("hello\n")
    assert task_dirs(root) == [root / "a", root / "b"]
    assert [t.task_id for t in discover_tasks(root)] == ["id-a", "id-b"]
    assert task_dirs(root / "a") == [root / "a"]  # a task directory is its own root
    assert [t.task_id for t in discover_tasks(root / "a")] == ["id-a"]


def test_discovery_refuses_what_holds_no_task_or_one_id_twice(tmp_path):
    with pytest.raises(UserError, match="no such directory"):
        task_dirs(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no task directories"):
        task_dirs(tmp_path / "empty")
    write_task(tmp_path / "twice", "a", rlforge=rlforge_table("same"))
    write_task(tmp_path / "twice", "b", rlforge=rlforge_table("same"))
    with pytest.raises(UserError, match="task id same appears twice"):
        discover_tasks(tmp_path / "twice")


def test_a_build_work_area_is_never_a_task(tmp_path):
    work = tmp_path / ".tasks.rlforge-build" / "tree"
    write_task(work, "a", rlforge=rlforge_table("id-a"))
    with pytest.raises(UserError, match="work area of an unfinished build-tasks"):
        check_whole(work / "a")
    with pytest.raises(UserError, match="work area"):
        discover_tasks(work)


def test_discovery_takes_the_tasks_a_build_manifest_lists(tmp_path):
    root = tmp_path / "tasks"
    for name in ("a", "b"):
        write_task(root, name, rlforge=rlforge_table(f"id-{name}"), timeout=60)
    with duckdb.connect() as con:
        con.execute("COPY (SELECT * FROM (VALUES ('id-a', 'test.answer', 3, 'answer', 'answer', "
                    "'train', 'a', 9.0), ('id-b', 'test.answer', 3, 'answer', 'answer', 'val', 'b', "
                    "9.0)) AS m(task_id, generator, version, verifier, kind, split, path, "
                    f"agent_timeout_sec)) TO '{root / 'manifest.parquet'}' (FORMAT parquet)")
    tasks = discover_tasks(root)
    # the manifest's fields, task.toml not read yet (it says split train and 60 s for b)
    assert [(t.task_id, t.split, t.expected_seconds) for t in tasks] == \
        [("id-a", "train", 9.0), ("id-b", "val", 9.0)]
    assert tasks[1].meta["agent"]["timeout_sec"] == 60  # read on first use
    write_task(root, "c", rlforge=rlforge_table("id-c"))  # one the manifest does not list
    assert [(t.task_id, t.split) for t in discover_tasks(root)] == \
        [("id-a", "train"), ("id-b", "train"), ("id-c", "train")]  # each task.toml read
