"""`rlforge.envs`: a task as a gym-like environment, on real task directories and real bwrap."""

from __future__ import annotations

import asyncio
import json

import pytest

from rlforge import envs
from rlforge.config import Config
from rlforge.errors import UserError
from test_run_support import (SUBMIT, bash_call, built_tasks, count_task, label_task,
                              script_task)

COUNT_TO_ANSWER = "wc -l < data.log > answer.txt"


def config(**env: str) -> Config:
    return Config(env={f"RLFORGE_{k.upper()}": v for k, v in env.items()})


@pytest.fixture
def triage(tmp_path):
    out = built_tasks(tmp_path, limit=2, generators=("tickets.triage",))
    task = sorted(p for p in out.iterdir() if p.is_dir())[0]
    return task, json.loads((task / "tests" / "reference.json").read_text())


def test_single_turn_episode_scores_the_reply(triage):
    task, ref = triage
    with envs.load(task) as env:
        messages = env.reset()
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[1]["content"] == (task / "instruction.md").read_text()
        assert env.tools is None
        messages, reward, done, info = env.step(f"It is about money.\nANSWER: {ref['answer']}")
        assert (reward, done, info["outcome"], info["ended_by"]) == (1.0, True, "pass", "answered")
        assert info["submission"] == {"type": "text",
                                      "text": f"It is about money.\nANSWER: {ref['answer']}"}
        assert messages[-1]["role"] == "assistant"
        with pytest.raises(UserError, match="episode is over"):
            env.step("again")
        env.reset()
        wrong = next(x for x in ref["labels"] if x != ref["answer"])
        _, reward, done, info = env.step({"role": "assistant", "content": f"ANSWER: {wrong}"})
        assert (reward, done, info["outcome"]) == (0.0, True, "fail")
        assert info["reward"]["components"]["valid_format"]["value"] == 1.0


def test_verify_scores_without_an_episode(triage):
    task, ref = triage
    with envs.load(task) as env:
        assert env.verify(f"ANSWER: {ref['answer']}")["total"] == 1.0
        ambiguous = env.verify("ANSWER: " + "\nANSWER: ".join(ref["labels"][:2]))
        assert ambiguous["total"] == 0.0 and ambiguous["detail"] == "ambiguous answer"


def test_multi_turn_commands_run_in_the_sandbox_then_submit(tmp_path):
    with envs.load(count_task(tmp_path / "tasks", "count")) as env:
        messages = env.reset()
        assert [t["function"]["name"] for t in env.tools] == ["bash", "submit"]
        messages, reward, done, info = env.step(bash_call("id -u; cat data.log | wc -l", "c1"))
        assert not done and reward == 0.0
        observation = messages[-1]
        assert observation["role"] == "tool" and observation["tool_call_id"] == "c1"
        # uid 65534 inside the sandbox: the command did not run on the host.
        assert observation["content"].splitlines() == ["[exit code 0]", "65534", "12"]
        messages, reward, done, info = env.step(bash_call(COUNT_TO_ANSWER))
        _, reward, done, info = env.step(SUBMIT)
        assert (reward, done, info["outcome"], info["ended_by"]) == (1.0, True, "pass", "submitted")
        assert info["submission"]["files"] == {"answer.txt": {"text": "12\n"}}
        assert [s["command"] for s in info["steps"]] == ["id -u; cat data.log | wc -l",
                                                         COUNT_TO_ANSWER]
        assert all(s["exit_code"] == 0 for s in info["steps"])


def test_bad_tool_calls_timeouts_and_long_output_are_observations(tmp_path):
    cfg = config(run_command_timeout="1", run_observation_chars="300")
    with envs.load(count_task(tmp_path / "tasks", "count"), config=cfg) as env:
        env.reset()
        messages, *_ = env.step(bash_call("sleep 30"))
        assert messages[-1]["content"].startswith("[killed: still running after 1s]")
        messages, *_ = env.step(bash_call("seq 1 5000"))
        text = messages[-1]["content"]
        assert text.startswith("[exit code 0]\n1\n2\n") and text.endswith("5000\n")
        assert "characters cut" in text and len(text) < 400
        assert env._env.steps[-1]["clipped"] is True
        broken = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "bash", "arguments": "{not json"}},
            {"id": "x2", "type": "function", "function": {"name": "python", "arguments": "{}"}}]}
        messages, reward, done, _ = env.step(broken)
        replies = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        assert replies["x1"].startswith("[error: arguments must be JSON")
        assert replies["x2"].startswith("[error: no tool named 'python'")
        assert not done


def test_text_protocol_for_servers_without_tool_calling(tmp_path):
    with envs.load(count_task(tmp_path / "tasks", "count"),
                   config=config(run_tool_protocol="text")) as env:
        messages = env.reset()
        assert env.tools is None and "```bash" in messages[0]["content"]
        messages, _, done, _ = env.step(f"Let me count.\n```bash\n{COUNT_TO_ANSWER}\n```")
        assert messages[-1] == {"role": "user", "content": "Output:\n[exit code 0]"}
        _, reward, done, info = env.step("All done.\nSUBMIT")
        assert (reward, done, info["ended_by"]) == (1.0, True, "submitted")


def test_turn_limit_and_idle_policy_end_the_episode(tmp_path):
    task = count_task(tmp_path / "tasks", "count")
    with envs.load(task, config=config(run_max_turns="2")) as env:
        env.reset()
        env.step(bash_call("true"))
        _, reward, done, info = env.step(bash_call(COUNT_TO_ANSWER))
        # The last turn's command still ran: the work counts.
        assert (done, info["ended_by"], reward) == (True, "max_turns", 1.0)
    with envs.load(task) as env:
        env.reset()
        messages, _, done, _ = env.step("I am thinking.")
        assert not done and messages[-1]["role"] == "user"
        _, reward, done, info = env.step("Still thinking.")
        assert (done, info["ended_by"], reward, info["outcome"]) == (True, "no_action", 0.0, "fail")


def test_a_planted_symlink_is_not_followed_when_scoring(tmp_path):
    with envs.load(count_task(tmp_path / "tasks", "count")) as env:
        env.reset()
        env.step(bash_call("echo 12 > /tmp/real; ln -s /tmp/real answer.txt"))
        _, reward, done, info = env.step(SUBMIT)
        assert (reward, info["outcome"]) == (0.0, "fail")
        # the stored submission is what verifiers read: regular files; the link is ignored
        # (absent), not skipped (which would make it incomplete and shield it from rescore)
        assert info["submission"]["ignored"] == ["answer.txt"]
        assert info["submission"]["skipped"] == [] and info["submission"]["complete"]


def test_script_verifier_runs_the_submitted_program_in_the_sandbox(tmp_path):
    with envs.load(script_task(tmp_path / "tasks", "prog")) as env:
        good = env.verify({"count.py": "import sys\nprint(sum(1 for _ in open(sys.argv[1])))\n"})
        assert (good["total"], good["outcome"]) == (1.0, "pass")
        wrong = env.verify({"count.py": "print(11)\n"})
        assert wrong["total"] == 0.0 and wrong["components"]["runs"]["value"] == 1.0
        assert env.verify({})["detail"] == "no program"


def test_async_api_and_blocking_calls_inside_a_loop(tmp_path):
    task = label_task(tmp_path / "tasks", "t", "login")

    async def episode(env):
        with pytest.raises(RuntimeError, match="areset"):
            env.reset()
        await env.areset()
        return await env.astep("ANSWER: login")

    with envs.load(task) as env:
        _, reward, done, info = asyncio.run(episode(env))
    assert (reward, done, info["outcome"]) == (1.0, True, "pass")


def test_the_documented_example_plays_tasks_with_a_policy_function(tmp_path):
    import importlib.util
    import subprocess
    import sys

    from paths import ROOT

    path = ROOT / "examples" / "envs_loop.py"
    spec = importlib.util.spec_from_file_location("envs_loop", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    tasks = built_tasks(tmp_path, limit=1, generators=("tickets.triage",))
    count = count_task(tasks, "count")
    info = example.play(count, example.rule_based_policy)
    assert (info["outcome"], info["ended_by"], info["turns"]) == ("fail", "submitted", 2)
    assert info["steps"][0]["command"] == "ls -la"
    triage = next(p for p in tasks.iterdir() if p.name.startswith("tickets-triage"))
    info = example.play(triage, example.rule_based_policy)
    assert info["ended_by"] == "answered" and info["outcome"] in ("pass", "fail")
    assert info["reward"]["components"]["valid_format"]["value"] == 1.0  # an offered option
    out = subprocess.run([sys.executable, str(path), str(tasks)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 2 and "ended_by=submitted" in out.stdout
