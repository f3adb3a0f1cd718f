"""rlforge's tasks in real verifiers (0.4.0): its `HarborTaskset` parser loads every sample
task with the workspace staged, and one episode runs through verifiers' own rollout loop
(`Agent.run`: task setup, the harness against verifiers' interception server, scoring by
the task's test.sh and verifiers' reward.json parser) in rlforge's sandbox runtime
(`rlforge.verifiers_env`), against a scripted OpenAI-compatible policy on 127.0.0.1.

verifiers 0.4.0 pins harbor==0.24.0 and needs Python >= 3.12, so `scripts/setup.sh`
installs it into `.venv-verifiers` (constraints-verifiers.txt). Where the machine has no
Python >= 3.12 these tests are skipped with a message saying so; where it has one but the
venv is missing, they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from paths import ROOT
from test_harbor import GENERATORS, _attack, built_by_setup, sample_tasks, task_dirs  # noqa: F401
from test_run_support import Refuse, ScriptedPolicy, bash_call

VENV = ROOT / ".venv-verifiers"
MODULE = "rlforge.verifiers_env"

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]


def verifiers_python() -> Path:
    return built_by_setup(VENV / "bin" / "python", "verifiers")


def in_verifiers(*args: str, cache: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLFORGE_", "PYTHON"))}
    env.update(PYTHONPATH=str(ROOT), RLFORGE_CACHE_DIR=str(cache), OPENAI_API_KEY="scripted")
    return subprocess.run([str(verifiers_python()), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_verifiers_parses_every_sample_task_with_the_workspace_staged(sample_tasks, shared_cache):
    dirs = task_dirs(sample_tasks)
    done = in_verifiers("-m", MODULE, "load", str(sample_tasks), cache=shared_cache)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout)
    assert [t["dir"] for t in loaded] == [d.name for d in dirs]
    assert all(t["network_allow"] == [] for t in loaded)  # no-network reached verifiers
    # verifiers' own HarborTaskset config, without rlforge's ignore_dockerfile default,
    # rejects them: the Dockerfile is why the option is needed.
    plain = ("import sys; from pathlib import Path\n"
             "from verifiers.v1.tasksets.harbor.taskset import HarborConfig, parse_task\n"
             "parse_task(Path(sys.argv[1]), 0, HarborConfig())\n")
    refused = in_verifiers("-c", plain, str(dirs[0]), cache=shared_cache)
    assert refused.returncode != 0 and "docker_image" in refused.stderr, refused.stderr[-2000:]


def test_one_episode_through_verifiers_loop_gold_1_nop_0(sample_tasks, shared_cache):
    task = next(d for d in task_dirs(sample_tasks)
                if d.name.startswith("logs-diagnose-") and (d / "environment" / "app").is_dir())
    # the gold-like policy lists /app, then runs the task's gold solution as one bash call,
    # then says it is done; the do-nothing policy says it is done at once
    gold_like = [bash_call("ls -R /app", "call-0"), bash_call((task / "solution" / "solve.sh").read_text())]
    policies = {"gold": ScriptedPolicy({"": gold_like}).start(), "nop": ScriptedPolicy({}).start()}
    try:
        results = {}
        for model, policy in policies.items():
            done = in_verifiers("-m", MODULE, "run", str(sample_tasks), "--task", task.name,
                                "--model", model, "--base-url", policy.url, cache=shared_cache)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            results[model] = json.loads(done.stdout)
    finally:
        for policy in policies.values():
            policy.server.shutdown()
    gold, nop = results["gold"], results["nop"]
    assert gold["reward"] == 1.0 and gold["ok"], gold
    assert nop["reward"] == 0.0 and nop["ok"], nop
    # the other numbers of reward.json are verifiers' metrics, parsed from the same file
    assert gold["metrics"].get("correct") == 1.0 and nop["metrics"].get("correct") == 0.0, (gold, nop)
    # the policy's calls went through verifiers' interception; its first command saw the
    # task's workspace (environment/app) staged at /app
    listing = next(m["content"] for r in policies["gold"].requests for m in r["messages"]
                   if m["role"] == "tool" and m.get("tool_call_id") == "call-0")
    staged = {p.name for p in (task / "environment" / "app").rglob("*")}
    assert staged and all(name in listing for name in staged), listing[:2000]


@pytest.mark.parametrize("generator", GENERATORS)
def test_adversarial_episodes_score_0_never_a_task_error(sample_tasks, shared_cache, generator):
    """Per generator, the attack of test_harbor played as the policy's one command: reward
    files planted (a directory at reward.json once made verifiers raise a task error),
    /tests looked for, and the code the verifier runs reading /tests and killing its
    parent. A scored 0 with no error, never a task error."""
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith(generator + "-"))
    policy = ScriptedPolicy({"": [bash_call(_attack(task), "call-0")]}).start()
    try:
        done = in_verifiers("-m", MODULE, "run", str(sample_tasks), "--task", task.name,
                            "--model", "attacker", "--base-url", policy.url, cache=shared_cache)
    finally:
        policy.server.shutdown()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["ok"] and not result["errors"] and result["reward"] == 0.0, result


def test_an_episode_that_outgrows_the_context_is_graded(sample_tasks, shared_cache):
    """A policy that bloats its conversation until the endpoint refuses it (400, "maximum
    context length") once left the episode ungraded (verifiers' `ok` false, no reward
    recorded): a rollout a policy could choose on every task it would fail. It is now
    graded, as `rlforge run` scores it: a fail, unless the workspace passes."""
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith("logs-script-"))
    refusal = Refuse(400, "This model's maximum context length is 4096 tokens. However, you "
                          "requested 5000 tokens. Please reduce the length of the messages.")
    policy = ScriptedPolicy({"": [bash_call("echo hello", "call-0"), refusal]}).start()
    try:
        done = in_verifiers("-m", MODULE, "run", str(sample_tasks), "--task", task.name,
                            "--model", "bloater", "--base-url", policy.url, cache=shared_cache)
    finally:
        policy.server.shutdown()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["outgrew_context"] and result["reward"] == 0.0, result
    assert result["metrics"].get("correct") == 0.0, result  # the task's verifier ran


def _deep_call(depth: int) -> dict:
    """A bash call whose arguments are JSON nested `depth` deep (2 bytes of output a level)."""
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call-deep", "type": "function",
        "function": {"name": "bash", "arguments": '{"command": ' + "[" * depth + "]" * depth + "}"}}]}


def test_a_tool_call_too_deep_or_unreadable_is_graded_and_a_provider_fault_is_not(sample_tasks, shared_cache):
    """A reply whose tool-call arguments nest 2,000 deep (~4 KB) made verifiers' interception
    server answer 502 (decoding them hits the recursion limit): the episode ended ungraded
    (a HarnessError), a rollout a policy could choose on every task it would fail. It is
    now graded, with its own stop condition. An endpoint that itself answers 502 (a real
    infrastructure fault) still leaves the episode ungraded."""
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith("logs-script-"))
    digits = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call-digits", "type": "function",
        "function": {"name": "bash", "arguments": '{"command": ' + "7" * 5000 + "}"}}]}
    custom = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call-custom", "type": "custom", "custom": {"name": "bash", "input": "echo hi"}}]}
    policies = {"deep": ScriptedPolicy({"": [_deep_call(2000)]}).start(),
                # just under the depth verifiers' own hook fails at on the next request
                "window": ScriptedPolicy({"": [_deep_call(1488)]}).start(),
                # a number json.loads refuses with ValueError, not JSONDecodeError
                "digits": ScriptedPolicy({"": [digits, {"role": "assistant", "content": "done"}]}).start(),
                "down": ScriptedPolicy({"": [Refuse(502, "upstream is down")]}).start(),
                # a call with no `function` (OpenAI's custom tools) once raised a KeyError
                # in the harness: a harness error, the episode ungraded
                "custom": ScriptedPolicy({"": [custom]}).start()}
    try:
        results = {}
        for model, policy in policies.items():
            done = in_verifiers("-m", MODULE, "run", str(sample_tasks), "--task", task.name,
                                "--model", model, "--base-url", policy.url, cache=shared_cache)
            results[model] = (done.returncode, json.loads(done.stdout), done.stderr[-3000:])
    finally:
        for policy in policies.values():
            policy.server.shutdown()
    code, deep, err = results["deep"]
    assert code == 0 and deep["ok"] and not deep["errors"], (deep, err)
    assert deep["stop_condition"] == "policy_reply_too_deep" and deep["reward"] == 0.0, deep
    assert deep["metrics"].get("correct") == 0.0, deep  # the task's verifier ran
    code, window, err = results["window"]
    assert code == 0 and window["ok"] and window["stop_condition"] == "policy_reply_too_deep", (window, err)
    code, digits, err = results["digits"]
    assert code == 0 and digits["ok"] and not digits["errors"] and digits["reward"] == 0.0, (digits, err)
    code, custom_result, err = results["custom"]
    assert code == 0 and custom_result["ok"] and not custom_result["errors"], (custom_result, err)
    assert custom_result["stop_condition"] == "policy_tool_call_unreadable", custom_result
    assert custom_result["reward"] == 0.0 and custom_result["metrics"].get("correct") == 0.0, custom_result
    code, down, err = results["down"]
    assert code == 1 and not down["ok"] and down["stop_condition"] != "policy_reply_too_deep", (down, err)


GROWN = """
import asyncio, json
from rlforge.verifiers_env import SandboxRuntime

async def main():
    runtime = SandboxRuntime()
    await runtime.start()
    runtime._fields["workspace_mb"] = 16  # a small cap, as the settings could set
    try:
        out = []
        for command in ("truncate -s 15M a.bin", "truncate -s 15M b.bin", "echo still here"):
            result = await runtime.run(["bash", "-c", command], {})
            out.append([result.exit_code, result.stderr[:80]])
        print(json.dumps(out))
    finally:
        runtime.cleanup()

asyncio.run(main())
"""


def test_a_workspace_grown_past_its_cap_is_the_commands_not_a_sandbox_error(shared_cache):
    """Sparse files cost nothing inside a sandbox and are dense once copied out: commands
    that grow the workspace past the cap made the next command's sandbox fail to start,
    a SandboxError that left the rollout ungraded (a red team: 15 sparse 16 MiB files a
    command). The command is now not run and says why, as in `rlforge run`, and the
    episode goes on to be graded."""
    done = in_verifiers("-c", GROWN, cache=shared_cache)
    assert done.returncode == 0, done.stderr[-3000:]
    (first, _), (second, _), (third, why) = json.loads(done.stdout)
    assert (first, second) == (0, 0)
    assert third == 126 and why.startswith("[not run: the workspace no longer fits"), why


def test_a_policy_that_sleeps_is_stopped_by_the_tasks_agent_timeout(sample_tasks, shared_cache, tmp_path):
    """verifiers drops a task's declared timeouts unless told not to: a policy whose command
    slept 400 s held its rollout for 413 s (a red team). rlforge's taskset keeps them, so
    the episode stops at the task's agent timeout and is graded: a fail, never an error."""
    import shutil
    import time

    source = next(d for d in task_dirs(sample_tasks) if d.name.startswith("logs-script-"))
    tasks = tmp_path / "tasks"
    task = tasks / source.name
    shutil.copytree(source, task, symlinks=True)
    toml = (task / "task.toml").read_text()
    assert "[agent]\ntimeout_sec = " in toml
    (task / "task.toml").write_text(re.sub(r"(\[agent\]\ntimeout_sec = )[0-9.]+", r"\g<1>5.0", toml))
    policy = ScriptedPolicy({"": [bash_call("sleep 300", "call-0")]}).start()
    started = time.monotonic()
    try:
        done = in_verifiers("-m", MODULE, "run", str(tasks), "--task", task.name,
                            "--model", "sleeper", "--base-url", policy.url, cache=shared_cache)
    finally:
        policy.server.shutdown()
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["stop_condition"] == "agent_timeout", result
    assert result["ok"] and not result["errors"] and result["reward"] == 0.0, result
    assert result["metrics"].get("correct") == 0.0, result  # the task's verifier ran
    assert took < 120, took
