"""`rlforge validate --executor ray` and `rlforge build-tasks --executor ray` on a real Ray
cluster (the session's head on 127.0.0.1): the same results as on this machine.

- validate: real triage and reply tasks built from sample_data, a multi-turn task and
  tasks whose oracle fails, validated locally, on Ray by path, and on Ray with every task
  directory shipped through the object store: the same JSON, check by check.
- build-tasks: the commits.repair test repository of test_commits_repair.py (every way a
  commit is kept or rejected), built locally and on Ray into separate databases: each
  commit kept or rejected for the same reason, the same task directories byte for byte,
  the fail-to-pass / pass-to-pass checks having run in the Ray workers.
"""

from __future__ import annotations

import json
import logging
import re
import tomllib
from pathlib import Path

import pytest

from test_commits_repair import build_calc
from test_ray_support import ray_head  # noqa: F401  (fixture)
from test_run_support import built_tasks, count_task, label_task

pytestmark = pytest.mark.ray


def untimed(value):
    """`value` without the `seconds` each check took (the one field two runs differ in)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def validate_json(cli, tasks: Path, *args: str) -> dict:
    result = cli("validate", tasks, "--json", *args)
    assert result.exit_code == 1, result.output  # the label tasks' oracles fail
    return untimed(json.loads(result.stdout))


def test_validate_on_ray_gives_the_local_results_by_path_and_shipped(cli, tmp_path, ray_head,
                                                                     monkeypatch,  # noqa: F811
                                                                     caplog):
    caplog.set_level(logging.INFO, logger="rlforge.execution.ray")
    tasks = built_tasks(tmp_path, limit=6)
    count_task(tasks, "count")
    label_task(tasks, "oracle-is-a-no-op", "billing")  # its solve.sh writes nothing: fails
    local = validate_json(cli, tasks)
    assert (local["tasks"], local["passed"], local["failed"]) == (8, 7, 1)
    on_ray = validate_json(cli, tasks, "--executor", "ray", "--ray-address", ray_head.address)
    assert on_ray == local
    assert per_node(caplog, "tasks validated per Ray node") == 8
    monkeypatch.setenv("RLFORGE_RAY_TASK_FILES", "ship")
    monkeypatch.setenv("RLFORGE_TASKS_EXECUTOR", "ray")
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", ray_head.address)
    shipped = validate_json(cli, tasks)
    assert shipped == local


def test_a_directory_that_is_no_task_fails_the_same_way_on_ray(tmp_path, ray_head):  # noqa: F811
    import asyncio

    from rlforge.execution.ray.backend import RayBackend
    from rlforge.execution.ray.cluster import RayOptions
    from rlforge.verify.validate import validate_many

    label_task(tmp_path / "tasks", "a", "billing")
    given = [Path("tasks") / p.name for p in (tmp_path / "tasks").iterdir()] + [Path("nowhere")]
    local = asyncio.run(validate_many(given, sandbox_mode="none"))
    on_ray = asyncio.run(RayBackend(RayOptions(ray_head.address, "ship")).validate(
        given, sandbox_mode="none"))
    assert [untimed(r.to_dict()) for r in on_ray] == [untimed(r.to_dict()) for r in local]
    assert on_ray[1].reason == "nowhere: not a task directory (no task.toml)"


def per_node(caplog, what: str) -> int:
    """How many items the Ray workers did, from the driver's closing log line."""
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith(what)]
    return sum(int(part.rsplit(" ", 1)[1]) for part in line.split(": ", 1)[1].split(", "))


def test_build_tasks_on_ray_checks_and_validates_commits_like_a_local_build(cli, tmp_path,
                                                                           ray_head,  # noqa: F811
                                                                           caplog):
    caplog.set_level(logging.INFO, logger="rlforge.execution.ray")
    expect = build_calc(tmp_path / "calc")
    (tmp_path / "rlforge.toml").write_text(
        '[tasks.generator_options."commits.repair".repo_settings.calc]\n'
        "collect_timeout = 4\nper_test_timeout = 5\n")
    builds = {}
    for executor in ("local", "ray"):
        db = tmp_path / f"{executor}.duckdb"
        assert cli("--db", db, "ingest", "commits", tmp_path / "calc").exit_code == 0
        result = cli("--db", db, "build-tasks", "--generators", "commits.repair", "--seed", "7",
                     "--out", tmp_path / executor, "--json", "--executor", executor,
                     "--ray-address", ray_head.address)
        assert result.exit_code == 0, result.output
        builds[executor] = json.loads(result.stdout)
    local, ray = builds["local"], builds["ray"]
    assert ray["per_generator"] == local["per_generator"]
    assert local["per_generator"]["commits.repair"]["emitted"] == 2
    reasons = {b: sorted((d["source"], d["reason"]) for d in builds[b]["drops"]) for b in builds}
    assert reasons["ray"] == reasons["local"]
    assert len(reasons["ray"]) == sum(1 for r in expect.values() if r != "kept")
    assert tree(tmp_path / "ray") == tree(tmp_path / "local")
    # The checks and the validation ran in the Ray workers (the local build logs neither).
    counts = ray["per_generator"]["commits.repair"]
    assert per_node(caplog, "commits checked per Ray node") >= counts["emitted"]
    assert per_node(caplog, "tasks validated per Ray node") == \
        counts["emitted"] + counts["dropped_validation"]


MEASURED = re.compile(rb'(timeout_sec = |"budget_sec": )[0-9.]+')


def tree(root: Path) -> dict[str, bytes]:
    """Every task file under root, by its commit and relative path, with what depends on
    how long the fix's tests took in the check — the verifier's timeout and budget, and so
    the task id, a hash of the files — left out (two local builds differ there too). The
    manifest (parquet with the build's own metadata) aside."""
    out = {}
    for task in sorted(p for p in root.iterdir() if p.is_dir()):
        commit = tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]["commit"]
        for p in sorted(task.rglob("*")):
            if p.is_file():
                data = MEASURED.sub(rb"\1N", p.read_bytes()).replace(task.name.encode(), b"ID")
                out[f"{commit}/{p.relative_to(task)}"] = data
    return out
