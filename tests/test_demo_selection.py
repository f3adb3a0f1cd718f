"""The demo's run step takes tasks the embedded model can pass.

SmolLM2-135M fails almost every sample task, so a run step that takes the first tasks of
each generator by id ends with every generator dead and teaches its reader nothing.
`scripts/demo.sh` calibrates the model on the single-turn tasks first and its run keeps
the tasks in the calibrated band. This test runs the demo's own `rlforge run` commands,
read from the script, against a real HTTP server that, like the embedded model, fails
every sample of most tasks and passes half the samples of a few.
"""

from __future__ import annotations

import hashlib
import json
import shlex

import pytest

from paths import ROOT, SAMPLE_DATA
from rated_policy import RatedPolicy
from rlforge.run.session import select_tasks
from rlforge.taskdir import discover_tasks

DEMO = ROOT / "scripts" / "demo.sh"
OWN = {"--run-id", "--runs-dir"}  # where a step writes: the test's own


def demo_runs() -> list[list[str]]:
    """The arguments of every `$rlforge run demo/tasks ...` command of the demo, in order,
    but where it writes (--run-id, --runs-dir)."""
    commands = DEMO.read_text().replace("\\\n", " ").splitlines()
    out = []
    for cmd in commands:
        if not cmd.strip().startswith("$rlforge run demo/tasks"):
            continue
        words = shlex.split(cmd, comments=True)
        args, i = [], 3
        while i < len(words):
            if words[i] in OWN:
                i += 2
                continue
            args.append(words[i])
            i += 1
        out.append(args)
    return out


def ok(result):
    assert result.exit_code in (0, 3), result.output
    return result


@pytest.mark.slow
def test_the_demo_run_keeps_tasks_the_model_can_pass(cli, tmp_path):
    ok(cli("ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv", "-q"))
    ok(cli("build-tasks", "--out", tmp_path / "tasks", "--generators", "tickets.triage",
           "--limit", "12", "--no-validate", "-q"))
    tasks = {p.name: p for p in (tmp_path / "tasks").iterdir() if (p / "task.toml").is_file()}
    # Alive on two tasks that a plain `--limit 5` (the first tasks in source order) leaves
    # out, dead on the rest: a run step that does not read a calibration misses them.
    first = {t.task_id for t in select_tasks(discover_tasks(tmp_path / "tasks"), limit=5)}
    alive = set(sorted(set(tasks) - first)[:2])
    assert len(alive) == 2

    def solved(task_id: str, seed: int) -> bool:
        coin = hashlib.sha256(f"{task_id}:{seed}".encode()).digest()[0]
        return task_id in alive and coin % 2 == 0

    runs = demo_runs()
    assert runs, f"no `$rlforge run demo/tasks` command in {DEMO}"
    with RatedPolicy(tasks, solved) as policy:
        for i, args in enumerate(runs):
            ok(cli("run", tmp_path / "tasks", *args, "--base-url", policy.url, "--model",
                   "embedded", "--api-key-env", "", "--runs-dir", tmp_path / "runs",
                   "--run-id", f"step{i}", "--json"))
    last = tmp_path / "runs" / f"step{len(runs) - 1}" / "rollouts.jsonl"
    rollouts = [json.loads(line) for line in last.read_text().splitlines()]
    taken = {r["task_id"] for r in rollouts}
    assert taken & alive, f"the demo's run took only tasks the model never passes: {taken}"
    assert any(r["outcome"] == "pass" for r in rollouts)
