"""The JSONL export in inspect_ai: the documented `inspect eval` recipe, scored by each
task's own verifier (inspect_ai lives in `.venv-harbor` with Harbor; see test_harbor.py)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from test_export_tasks import export, gold_answer, hf_offline, tasks_by_split, tasks_dir  # noqa: F401
from test_harbor import HARBOR_VENV, harbor

pytestmark = pytest.mark.slow


class Policy(ThreadingHTTPServer):
    """An OpenAI-compatible chat endpoint on 127.0.0.1: model `gold` replies with the task's
    gold answer (looked up by the instruction), model `echo` with the instruction itself."""

    def __init__(self, gold: dict[str, str]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.gold = gold
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        question = question if isinstance(question, str) else question[0]["text"]
        text = self.server.gold.get(question.strip(), "?") if body["model"] == "gold" else question
        reply = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def inspect_eval(workdir: Path, model: str, policy: Policy, logs: Path) -> dict:
    """The README's recipe against a local OpenAI-compatible endpoint (inspect 0.3.285
    takes the task file relative to the working directory); the log it wrote."""
    env = {**os.environ, "LOCAL_API_KEY": "test", "LOCAL_BASE_URL": policy.url}
    done = subprocess.run([str(HARBOR_VENV / "bin" / "inspect"), "eval", "jsonl/rlforge_inspect.py",
                           "--model", f"openai-api/local/{model}",
                           "--log-dir", str(logs), "--log-format", "json", "--display", "none"],
                          capture_output=True, text=True, cwd=workdir, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [log] = [json.loads(p.read_text()) for p in logs.glob("*.json")]
    assert log["status"] == "success", json.dumps(log.get("error"))[:3000]
    return log


def test_inspect_eval_recipe_scores_with_the_tasks_verifier(cli, tasks_dir, tmp_path):
    harbor()  # skips, loudly, where no Python >= 3.12 exists; fails where setup was not run
    out = tmp_path / "jsonl"
    export(cli, tasks_dir, out, "jsonl")
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert all(json.loads(r["target"]) == r["reference"] for r in rows)
    policy = Policy({r["prompt"][-1]["content"].strip(): gold_answer(Path(r["path"])) for r in rows})
    try:
        gold = inspect_eval(tmp_path, "gold", policy, tmp_path / "logs-gold")
        echo = inspect_eval(tmp_path, "echo", policy, tmp_path / "logs-echo")
    finally:
        policy.shutdown()
    for log, want in ((gold, 1.0), (echo, 0.0)):  # an echoed instruction is a known trick
        assert {s["id"] for s in log["samples"]} == {r["task_id"] for r in rows}
        assert [s["scores"]["rlforge_verifier"]["value"] for s in log["samples"]] == [want] * len(rows)
        assert log["results"]["scores"][0]["metrics"]["mean"]["value"] == want
    sample = gold["samples"][0]
    assert sample["scores"]["rlforge_verifier"]["metadata"]["outcome"] == "pass"
