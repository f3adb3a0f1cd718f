"""`rlforge export rollouts`: SFT, DPO and GRPO datasets from real runs, loaded back.

The runs are real `rlforge run`s against a graded policy: an OpenAI-compatible HTTP server
on 127.0.0.1 that knows each task's gold answer and, per model, answers each task right
with its own probability (seeded by the request's seed, so runs repeat), answers wrong
otherwise, and fails some requests with 500 or 429 so that some rollouts are invalid.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from rlforge import stats
from test_export_tasks import (build_sample_tasks, gold_answer, hf_offline, mixed_tasks,  # noqa: F401
                               once, tasks_dir)

datasets = pytest.importorskip("datasets")

SKILLS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _hash(*parts) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


class GradedPolicy:
    """The server; `infra_percent` of requests fail (half 500, half 429) per model."""

    def __init__(self, tasks_dir: Path, infra_percent: dict[str, int]):
        self.by_instruction = {}
        # Skills go round the tasks in order (not by a hash of their ids), so every skill
        # level is played whatever ids a build gives its tasks.
        self.skill = {}
        for i, task in enumerate(sorted(p for p in tasks_dir.iterdir() if (p / "task.toml").is_file())):
            ref = json.loads((task / "tests" / "reference.json").read_text())
            gold = gold_answer(task) if ref.get("verifier") in ("answer", "reply") else None
            self.by_instruction[(task / "instruction.md").read_text()] = (task.name, ref, gold)
            self.skill[task.name] = i
        self.infra_percent = infra_percent
        self.requests = 0
        policy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, payload = policy.answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        ThreadingHTTPServer.request_queue_size = 128
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict) -> tuple[int, dict]:
        self.requests += 1
        model, seed = body["model"], body.get("seed", 0)
        instruction = next(m["content"] for m in body["messages"] if m["role"] == "user")
        task_id, ref, gold = self.by_instruction[instruction]
        h = _hash(model, task_id, seed)
        time.sleep((h >> 40) % 25 / 1000)
        if h % 100 < self.infra_percent.get(model, 0):
            status = 500 if (h >> 7) % 2 else 429
            return status, {"error": {"message": "overloaded", "type": "server_error"}}
        skill = SKILLS[(self.skill[task_id] + _hash(model)) % len(SKILLS)]
        right = (h >> 8) % 1000 < skill * 1000
        if body.get("tools"):  # a terminal task: look around once, then submit
            turn = sum(m["role"] == "assistant" for m in body["messages"])
            name, args = ("bash", {"command": "ls -la && git log --oneline | head -3"}) if turn == 0 \
                else ("submit", {})
            call = {"id": f"call_{turn}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)}}
            return 200, {"id": "chatcmpl-t", "object": "chat.completion", "created": 0, "model": model,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                              "tool_calls": [call]},
                                      "finish_reason": "tool_calls"}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
        if ref["verifier"] == "answer":
            wrong = next(x for x in ref["labels"] if x != ref["answer"])
            content = f"The request is about this.\nANSWER: {gold if right else wrong}"
        else:
            facts = ref.get("required") or []
            content = gold if right or not facts else gold.replace(facts[0], "(see above)")
        words = sum(len(m["content"] or "") for m in body["messages"]) // 4
        return 200, {
            "id": f"chatcmpl-{h % 10**8}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": words, "completion_tokens": max(1, len(content) // 4),
                      "total_tokens": words + max(1, len(content) // 4)}}

    def __enter__(self) -> "GradedPolicy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_runs(root: Path, models: dict[str, int], samples: int = 4, limit: int = 24,
              tasks_dir: Path | None = None, env: dict[str, str] | None = None,
              args: tuple[str, ...] = ()) -> dict:
    """Run each model (name -> infra percent) over tasks (built under root if not given)."""
    from rlforge.cli import app

    tasks_dir = tasks_dir or build_sample_tasks(root, limit=limit)
    env = {"RLFORGE_DB": str(root / "rlforge.duckdb"), "RLFORGE_RUN_MAX_RETRIES": "0",
           "RLFORGE_RUN_RUNS_DIR": str(root / "runs"), **(env or {})}
    runs = {}
    with GradedPolicy(tasks_dir, models) as policy:
        for model in models:
            result = CliRunner().invoke(app, [
                "run", str(tasks_dir), "--base-url", policy.url, "--model", model,
                "--samples", str(samples), "--concurrency", "4", "--run-id", f"run-{model}",
                "--seed", "1", "--json", *args], env=env, catch_exceptions=False)
            assert result.exit_code in (0, 3, 4), result.output
            runs[model] = f"run-{model}"
    return {"tasks": tasks_dir, "runs_dir": root / "runs", "db": root / "rlforge.duckdb",
            "runs": runs}


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> dict:
    return once("run_dirs", lambda: make_runs(tmp_path_factory.mktemp("export-rollouts"),
                                              {"policy-a": 25}))


def records_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "rollouts.jsonl").read_text().splitlines()]


def export_run(cli, run_dirs: dict, out: Path, fmt: str, *args: str) -> dict:
    result = cli("export", "rollouts", run_dirs["runs"]["policy-a"], "--runs-dir",
                 run_dirs["runs_dir"], "--format", fmt, "--out", out, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def load_split(out: Path, split: str):
    return datasets.load_dataset("parquet", data_files={split: str(out / f"{split}.parquet")})[split]


def test_the_graded_policy_gives_every_outcome(run_dirs):
    records = records_of(run_dirs["runs_dir"] / "run-policy-a")
    outcomes = {r["outcome"] for r in records}
    assert {"pass", "fail", "invalid"} <= outcomes
    assert {r["error"]["type"] for r in records if r["outcome"] == "invalid"} <= \
        {"server_error", "rate_limited"}


def test_sft_is_the_passing_conversations_and_counts_invalid(cli, run_dirs, tmp_path):
    report = export_run(cli, run_dirs, tmp_path / "sft", "sft")
    records = records_of(run_dirs["runs_dir"] / "run-policy-a")
    invalid = sum(r["outcome"] == "invalid" for r in records)
    assert report["rollouts"] == len(records) and report["excluded_invalid"] == invalid > 0
    passing = {r["rollout_id"]: r for r in records if r["outcome"] == "pass"}
    rows = []
    for split, n in report["rows"].items():
        if n:
            ds = load_split(tmp_path / "sft", split)
            assert ds.num_rows == n
            rows += list(ds)
    assert sorted(r["rollout_id"] for r in rows) == sorted(passing)
    for row in rows:
        record = passing[row["rollout_id"]]
        assert [(m["role"], m["content"]) for m in row["messages"]] == \
            [(m["role"], m["content"]) for m in record["messages"]]
        assert row["messages"][-1]["role"] == "assistant" and row["reward"] == 1.0


def test_dpo_pairs_a_better_and_a_worse_sample_of_the_same_task(cli, run_dirs, tmp_path):
    report = export_run(cli, run_dirs, tmp_path / "dpo", "dpo", "--split", "train")
    assert set(report["rows"]) == {"train"} and report["rows"]["train"] > 0
    by_id = {r["rollout_id"]: r for r in records_of(run_dirs["runs_dir"] / "run-policy-a")}
    ds = load_split(tmp_path / "dpo", "train")
    assert {"prompt", "chosen", "rejected"} <= set(ds.column_names)
    per_task: dict[str, int] = {}
    for row in ds:
        chosen, rejected = by_id[row["chosen_rollout_id"]], by_id[row["rejected_rollout_id"]]
        assert chosen["task_id"] == rejected["task_id"] == row["task_id"]
        assert chosen["split"] == "train"
        assert "invalid" not in (chosen["outcome"], rejected["outcome"])
        assert chosen["reward"]["total"] == row["chosen_reward"] > row["rejected_reward"] == \
            rejected["reward"]["total"]
        assert [m["content"] for m in row["prompt"]] == [m["content"] for m in chosen["messages"][:2]]
        assert [m["content"] for m in row["prompt"]] == [m["content"] for m in rejected["messages"][:2]]
        assert row["chosen"] == [{"role": "assistant", "content": chosen["messages"][2]["content"],
                                  "tool_calls": None, "tool_call_id": None}]
        assert row["rejected"][-1]["content"] == rejected["messages"][2]["content"]
        per_task[row["task_id"]] = per_task.get(row["task_id"], 0) + 1
    assert max(per_task.values()) <= 4  # at most one pair per sample by default
    capped = export_run(cli, run_dirs, tmp_path / "dpo1", "dpo", "--split", "train", "--max-pairs", "1")
    assert capped["rows"]["train"] == len(per_task)


def test_grpo_rows_carry_the_runs_group_advantages(cli, run_dirs, tmp_path):
    report = export_run(cli, run_dirs, tmp_path / "grpo", "grpo")
    groups = {json.loads(line)["task_id"]: json.loads(line) for line in
              (run_dirs["runs_dir"] / "run-policy-a" / "groups.jsonl").read_text().splitlines()}
    rows = [row for split, n in report["rows"].items() if n for row in load_split(tmp_path / "grpo", split)]
    records = records_of(run_dirs["runs_dir"] / "run-policy-a")
    assert len(rows) == sum(r["outcome"] != "invalid" for r in records)
    for row in rows:
        # The advantage the run itself stored for this sample (groups.jsonl).
        assert row["advantage"] == groups[row["task_id"]]["advantages"][str(row["sample"])]
        assert row["group_size"] == groups[row["task_id"]]["valid"]
        assert row["completion"][0]["role"] == "assistant" and row["prompt"][-1]["role"] == "user"
    # Within a group the advantages are centred: they sum to zero.
    by_task: dict[str, list[float]] = {}
    for row in rows:
        by_task.setdefault(row["task_id"], []).append(row["advantage"])
    assert any(any(a != 0 for a in v) for v in by_task.values())
    for values in by_task.values():
        assert abs(sum(values)) < 1e-4
    assert stats.group_advantages([1.0, 0.0]) == [1.0, -1.0]


def test_rollout_export_errors(cli, run_dirs, tmp_path):
    missing = cli("export", "rollouts", "no-such-run", "--runs-dir", run_dirs["runs_dir"],
                  "--format", "sft", "--out", tmp_path / "o")
    assert missing.exit_code == 1 and "no run 'no-such-run'" in missing.output
    bad = cli("export", "rollouts", "run-policy-a", "--runs-dir", run_dirs["runs_dir"],
              "--format", "ppo", "--out", tmp_path / "o")
    assert bad.exit_code == 2 and "sft, dpo, grpo" in bad.output
    by_path = cli("export", "rollouts", run_dirs["runs_dir"] / "run-policy-a", "--format", "sft",
                  "--out", tmp_path / "o")
    assert by_path.exit_code == 0 and "infrastructure-invalid rollouts excluded" in by_path.output
    assert pq.read_schema(tmp_path / "o" / "train.parquet").names[0] == "messages"


@pytest.fixture(scope="module")
def terminal_run(tmp_path_factory, mixed_tasks, shared_cache) -> dict:
    """A real multi-turn run: the policy calls bash in the sandbox, then submits."""
    def make() -> dict:
        root = tmp_path_factory.mktemp("terminal-run")
        return make_runs(root, {"policy-t": 0}, samples=2, tasks_dir=mixed_tasks,
                         env={"RLFORGE_CACHE_DIR": str(shared_cache), "HOME": str(root)},
                         args=("--generators", "commits.repair"))

    return once("terminal_run", make)


@pytest.mark.slow
def test_multi_turn_rollouts_keep_tool_calls_and_observations(cli, terminal_run, tmp_path):
    records = records_of(terminal_run["runs_dir"] / "run-policy-t")
    assert len(records) == 2 and {r["outcome"] for r in records} == {"fail"}
    result = cli("export", "rollouts", "run-policy-t", "--runs-dir", terminal_run["runs_dir"],
                 "--format", "grpo", "--out", tmp_path / "grpo", "--json")
    assert result.exit_code == 0, result.output
    split = records[0]["split"]
    rows = list(load_split(tmp_path / "grpo", split))
    assert len(rows) == 2
    for row in rows:
        record = next(r for r in records if r["rollout_id"] == row["rollout_id"])
        roles = [m["role"] for m in row["completion"]]
        assert roles == ["assistant", "tool", "assistant"]  # bash, its output, submit
        call = row["completion"][0]["tool_calls"][0]
        assert call["function"]["name"] == "bash" and "git log" in call["function"]["arguments"]["command"]
        observation = row["completion"][1]
        assert observation["tool_call_id"] == call["id"]
        assert observation["content"] == record["messages"][3]["content"]
        assert row["completion"][2]["tool_calls"][0]["function"]["name"] == "submit"
        assert row["advantage"] == 0.0 and row["reward"] == 0.0
