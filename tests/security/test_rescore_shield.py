"""A stored submission is exactly what the verifiers score, and `rescore` judges it again.

Verifiers copy in regular files only. A submission stored with a symlink in it used to be
marked incomplete, and `rlforge rescore` kept an incomplete submission's old result: one
symlink in the workspace shielded a pass from every later fix of a verifier. Now links and
special files are absent on both sides (one that replaced a file is a deletion), only
content past the byte limit makes a submission incomplete, and an incomplete one is judged
again too (it can lose a pass, never gain one).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlforge.run.submission import rebuild_workspace, workspace_changes
from rlforge.taskdir import WORKSPACE, load_task
from test_run_support import SUBMIT, ScriptedPolicy, bash_call, count_task

pytestmark = pytest.mark.sandbox


def _rollouts(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "rollouts.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("shield", ["ln -s /etc/hostname link", "mkfifo pipe",
                                    "ln -s /app sub"], ids=["symlink", "fifo", "dir-link"])
def test_a_link_in_the_workspace_does_not_shield_a_pass_from_rescore(cli, tmp_path, shield):
    tasks = tmp_path / "tasks"
    task = count_task(tasks, "count")
    policy = ScriptedPolicy({"count": [bash_call(f"wc -l < data.log > answer.txt; {shield}"),
                                       SUBMIT]}).start()
    try:
        result = cli("run", tasks, "--base-url", policy.url, "--model", "m", "--json")
    finally:
        policy.stop()
    data = json.loads(result.stdout)
    assert data["pass"] == 1
    # The verifier is fixed (here: its reference changes): the stored answer no longer passes.
    ref_path = task / "tests" / "reference.json"
    ref_path.write_text(json.dumps({**json.loads(ref_path.read_text()), "answer": 13}))
    again = json.loads(cli("rescore", data["run_id"], "--json").stdout)
    assert again["rescored"]["rescored"] == 1
    [record] = _rollouts(data["run_dir"])
    assert record["outcome"] == "fail"
    assert record["rescored"]["previous"]["outcome"] == "pass"


def test_a_link_over_a_starting_file_is_stored_as_its_deletion(tmp_path):
    tasks = tmp_path / "tasks"
    task = load_task(count_task(tasks, "count"))
    ws = tmp_path / "ws"
    start = task.path / WORKSPACE
    ws.mkdir()
    (ws / "data.log").symlink_to(start / "data.log")  # the verifier reads no data.log
    os.mkfifo(ws / "fifo")
    (ws / "answer.txt").write_text("12\n")
    sub = workspace_changes(start, ws)
    assert sub["complete"] is True
    assert sub["deleted"] == ["data.log"]
    assert sorted(sub["ignored"]) == ["data.log", "fifo"]
    rebuilt = rebuild_workspace(task, sub, tmp_path)
    assert sorted(p.name for p in rebuilt.iterdir()) == ["answer.txt"]


def test_an_incomplete_submission_is_judged_again_and_never_gains_a_pass(cli, tmp_path):
    tasks = tmp_path / "tasks"
    task = count_task(tasks, "count")
    policy = ScriptedPolicy({"count": [bash_call("wc -l < data.log > answer.txt"),
                                       SUBMIT]}).start()
    try:
        data = json.loads(cli("run", tasks, "--base-url", policy.url, "--model", "m",
                              "--json").stdout)
    finally:
        policy.stop()
    log = Path(data["run_dir"]) / "rollouts.jsonl"
    # As if a big file had not fit the stored submission.
    [record] = _rollouts(data["run_dir"])
    record["submission"].update(complete=False, skipped=["big.bin"])
    log.write_text(json.dumps(record) + "\n")
    ref_path = task / "tests" / "reference.json"
    ref_path.write_text(json.dumps({**json.loads(ref_path.read_text()), "answer": 13}))
    again = json.loads(cli("rescore", data["run_id"], "--json").stdout)
    assert again["rescored"]["incomplete_submission"] == 1
    [record] = _rollouts(data["run_dir"])
    assert record["outcome"] == "fail"  # lost its pass
    # Back to the old reference, the partial submission would pass: it may not gain it.
    record["outcome"] = "fail"
    log.write_text(json.dumps(record) + "\n")
    ref_path.write_text(json.dumps({**json.loads(ref_path.read_text()), "answer": 12}))
    cli("rescore", data["run_id"], "--json")  # within the same second as the one above
    [record] = _rollouts(data["run_dir"])
    assert record["outcome"] == "fail" and "kept" in record["rescored"]


def test_two_rescores_in_one_second_keep_both_previous_logs(tmp_path):
    # the kept log's name is stamped to the second: a second rewrite in that second
    # crashed with FileExistsError (after the rescore had run, before the table was written)
    from rlforge.run.store import RunStore

    store = RunStore.create(tmp_path / "runs", "r1")
    store.rewrite_rollouts([{"n": 1}], keep_previous="rollouts.before-rescore-x.jsonl")
    store.rewrite_rollouts([{"n": 2}], keep_previous="rollouts.before-rescore-x.jsonl")
    store.rewrite_rollouts([{"n": 3}], keep_previous="rollouts.before-rescore-x.jsonl")
    kept = sorted(p.name for p in store.dir.glob("rollouts.before-rescore-*"))
    assert kept == ["rollouts.before-rescore-x-2.jsonl", "rollouts.before-rescore-x.jsonl"]
    assert [json.loads(x)["n"] for x in (store.dir / "rollouts.jsonl").read_text().splitlines()] == [3]
    assert json.loads((store.dir / "rollouts.before-rescore-x-2.jsonl").read_text())["n"] == 2
