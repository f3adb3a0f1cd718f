"""Drive rlforge tasks from your own loop with `rlforge.envs` — the same environment,
prompts, sandboxed commands and verifiers as `rlforge run`, with the policy in your hands.

    python examples/envs_loop.py TASKS_DIR                      # a toy rule-based policy
    python examples/envs_loop.py TASKS_DIR --base-url http://127.0.0.1:8000/v1 --model NAME

A trainer replaces `policy` with its own model (a vLLM engine, a HF model's generate, a
remote endpoint) and uses the reward (and `info["reward"]["components"]`) as it likes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any, Callable

import rlforge.envs

Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], dict[str, Any] | str]


def rule_based_policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None):
    """A stand-in for a model: picks the first offered option on single-turn tasks; on
    multi-turn tasks lists the workspace once, then submits."""
    if tools is None:
        options = re.findall(r"^- `([^`]+)`", messages[1]["content"], re.M)
        return f"ANSWER: {options[0]}" if options else "I do not know."
    if not any(m["role"] == "tool" for m in messages):
        call = {"id": "call_1", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la"})}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    submit = {"id": "call_2", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
    return {"role": "assistant", "content": "", "tool_calls": [submit]}


def endpoint_policy(base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY") -> Policy:
    """A policy served by any OpenAI-compatible endpoint (stdlib HTTP, one call per turn)."""
    def policy(messages, tools):
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0.7,
                                "max_tokens": 512}
        if tools:
            body.update(tools=tools, tool_choice="auto")
        headers = {"Content-Type": "application/json"}
        if os.environ.get(api_key_env):
            headers["Authorization"] = "Bearer " + os.environ[api_key_env]
        request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions",
                                         data=json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)["choices"][0]["message"]
    return policy


def play(task_dir: Path, policy: Policy) -> dict[str, Any]:
    """One episode of one task; returns the final `info` (outcome, reward, submission)."""
    with rlforge.envs.load(task_dir) as env:
        messages = env.reset()
        done, info = False, {}
        while not done:
            reply = policy(messages, env.tools)
            messages, reward, done, info = env.step(reply)
        return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path, help="a directory of tasks (rlforge build-tasks --out)")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: a toy policy)")
    parser.add_argument("--model", default="")
    parser.add_argument("--limit", type=int, default=5, help="how many tasks to play")
    args = parser.parse_args()
    policy = endpoint_policy(args.base_url, args.model) if args.base_url else rule_based_policy
    dirs = sorted(p for p in args.tasks.iterdir() if (p / "task.toml").is_file())[:args.limit]
    for task_dir in dirs:
        info = play(task_dir, policy)
        print(f"{task_dir.name}: {info['outcome']} reward={info['reward']['total']:.2f} "
              f"turns={info['turns']} ended_by={info['ended_by']}")


if __name__ == "__main__":
    main()
