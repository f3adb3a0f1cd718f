"""The `sandbox.*` settings reach every sandbox rlforge makes, and what a policy leaves in
its workspace is its own fail.

1. The limits a user sets (flag > RLFORGE_* env > rlforge.toml > default) hold for the
   policy's commands in `rlforge run`, for solve.sh and the verifier's launches in
   `rlforge validate`, and for the commits.repair build-time test runs; a process in the
   sandbox reads them from /proc/self/limits and `df`.
2. A multi-turn policy can leave more in its workspace than the capped file system holds
   (copy-out makes sparse files dense and hard links separate files): the next command,
   or the verifier, can then not copy it in. Policy code made that, so the rollout is a
   `fail` with reason `submission_too_large`, never `invalid`.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from builds import build_options
from test_run import rollouts_of, run_json
from test_run_support import SUBMIT, ScriptedPolicy, bash_call, count_task, make_task, script_task

pytestmark = pytest.mark.sandbox
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the capped file systems are root's")

MB = 1 << 20
LIMITS = "grep -E '^Max (address space|processes)' /proc/self/limits"


def _limit(text: str, name: str) -> int:
    """The soft limit `name` from /proc/self/limits lines."""
    for line in text.splitlines():
        if line.startswith(name):
            return int(line[len(name):].split()[0])
    raise AssertionError(f"no {name!r} in {text!r}")


def _df_kb(text: str, mount: str) -> int:
    """The size in KB `df -kP` gives for `mount`."""
    for line in text.splitlines():
        if line.endswith(" " + mount):
            return int(line.split()[1])
    raise AssertionError(f"no {mount} in {text!r}")


# --- 1. the settings reach every sandbox -------------------------------------------------------

def test_only_the_settings_a_user_gave_are_carried_and_the_rest_are_the_specs_own(monkeypatch):
    from rlforge.config import SETTINGS, Config
    from rlforge.sandbox import SandboxSpec, sandbox_settings, spec_of

    assert sandbox_settings(Config.load().settings().sandbox) == {"mode": "bwrap"}
    defaults = SandboxSpec()
    for s in SETTINGS:  # so leaving a default out applies the very same value
        name = {"sandbox.timeout": "timeout_sec"}.get(s.key, s.key.removeprefix("sandbox."))
        if s.key.startswith("sandbox.") and hasattr(defaults, name):
            assert getattr(defaults, name) == s.default, s.key
    monkeypatch.setenv("RLFORGE_SANDBOX_CPUS", "0")
    monkeypatch.setenv("RLFORGE_SANDBOX_COPY_FILES", "9")
    given = sandbox_settings(Config.load().settings().sandbox, "none")
    assert given == {"mode": "none", "cpus": None, "copy_files": 9}
    # a task's own request, under the user's settings, under the run's own fields
    spec = spec_of({"memory_mb": 2048, "copy_files": 1}, given, copy_files=3)
    assert (spec.memory_mb, spec.cpus, spec.copy_files, spec.mode) == (2048, None, 3, "none")


def test_run_gives_the_policys_commands_the_configured_limits(cli, tmp_path, monkeypatch):
    # The task asks for 1024 MB ([environment] memory_mb); the user's setting wins over it.
    monkeypatch.setenv("RLFORGE_SANDBOX_MEMORY_MB", "300")
    monkeypatch.setenv("RLFORGE_SANDBOX_MAX_PROCESSES", "77")
    monkeypatch.setenv("RLFORGE_SANDBOX_WORKSPACE_MB", "24")
    monkeypatch.setenv("RLFORGE_SANDBOX_TMP_MB", "20")
    tasks = tmp_path / "tasks"
    count_task(tasks, "limits")
    policy = ScriptedPolicy({"limits": [bash_call(f"{LIMITS}; df -kP /app /tmp", "l1"),
                                        bash_call("wc -l < data.log > answer.txt"), SUBMIT]})
    with policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
    assert result.exit_code == 0, result.output
    [record] = rollouts_of(data["run_dir"])
    assert record["outcome"] == "pass", record
    seen = next(m["content"] for m in record["messages"] if m.get("tool_call_id") == "l1")
    assert _limit(seen, "Max address space") == 300 * MB, seen
    assert _limit(seen, "Max processes") == 77, seen
    if os.geteuid() == 0:  # the capped file systems
        assert (_df_kb(seen, "/app"), _df_kb(seen, "/tmp")) == (24 * 1024, 20 * 1024), seen


COUNT_PY = """\
import re, sys
limits = open("/proc/self/limits").read()
assert int(re.search(r"Max address space +(\\d+)", limits).group(1)) == 300 << 20, limits
print(sum(1 for _ in open(sys.argv[1])))
"""


def test_validate_runs_solve_sh_and_the_verifier_under_the_configured_limits(cli, tmp_path):
    # The file is named by --config, away from the working directory: nothing may fall
    # back to reading ./rlforge.toml and find it by chance.
    config = tmp_path / "conf" / "limits.toml"
    config.parent.mkdir()
    config.write_text("[sandbox]\nmemory_mb = 300\n")
    solve = (f"#!/bin/bash\n{LIMITS} | grep -q ' {300 * MB} ' || exit 3\n"
             f"cat > /app/count.py <<'EOF'\n{COUNT_PY}EOF\n").encode()
    task = script_task(tmp_path / "tasks", "prog", solution=solve)
    result = cli("--config", config, "validate", task, "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["results"][0]["checks"]}
    assert checks["oracle"]["ok"], checks["oracle"]
    assert result.exit_code == 0, result.output


def test_config_file_names_the_cache_prepared_environments_are_built_in(cli, tmp_path,
                                                                        monkeypatch):
    # conftest names a cache in the environment, which would win over the file
    monkeypatch.delenv("RLFORGE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default, if it leaked
    cache = tmp_path / "from-config"
    config = tmp_path / "conf" / "cache.toml"
    config.parent.mkdir()
    config.write_text(f"cache_dir = {json.dumps(str(cache))}\n")
    task = count_task(tmp_path / "tasks", "venv", metadata={"env_requirements": []})
    result = cli("--config", config, "validate", task, "--json")
    assert result.exit_code == 0, result.output
    assert [p.name for p in (cache / "envs").iterdir() if p.is_dir()], "no venv in cache_dir"
    assert not (tmp_path / "xdg").exists()


@pytest.mark.slow  # a prepared environment with pytest, built once per session
def test_repair_checks_run_the_tests_under_the_configured_limits(tmp_path, shared_cache):
    from rlforge.config import Config
    from rlforge.sandbox import SandboxPool, prepare_env, spec_from_settings
    from rlforge.tasks.generators.commits_repair import CommitsRepair
    from rlforge.tasks.generators.repair.checks import Checker, write_tree
    from rlforge.tasks.generators.repair.options import RepoSettings

    config = tmp_path / "conf.toml"
    config.write_text("[sandbox]\nmemory_mb = 300\nmax_processes = 77\n")
    cfg = Config.load(config)
    generator = CommitsRepair(build_options(out=tmp_path / "out", config=cfg))
    tree = tmp_path / "tree"
    write_tree(tree, {"test_limits.py": (
        "def test_limits():\n"
        "    limits = open('/proc/self/limits').read()\n"
        f"    assert ' {300 * MB} ' in limits and ' 77 ' in limits, limits\n").encode()})
    venv = prepare_env(["pytest"], shared_cache)

    async def check():
        async with SandboxPool(1) as pool:
            checker = Checker(None, generator.opts, pool, shared_cache,
                              generator.build.sandbox_mode, generator.sandbox)
            try:
                return await checker._run(tree, venv, RepoSettings(), None, tmp_path)
            finally:
                checker.close()

    run = asyncio.run(check())
    assert run["outcomes"] == {"test_limits.py::test_limits": "passed"}, run
    assert spec_from_settings(cfg.settings().sandbox).memory_mb == 300


# --- 2. a workspace the policy grew past the cap is its own fail --------------------------------

def _episode(task_dir: Path, replies: list, scratch: Path, workspace_mb: int) -> dict:
    """Play `replies` in a real Environment whose sandboxes have a `workspace_mb` file
    system (set the way the user's sandbox settings are); the episode's info."""
    from rlforge.run.environment import EnvOptions, Environment
    from rlforge.taskdir import load_task
    from rlforge.sandbox import SandboxPool
    from rlforge.verify.runner import TaskRunner

    async def play() -> dict:
        async with SandboxPool(1) as pool:
            runner = TaskRunner(pool, "bwrap", {"workspace_mb": workspace_mb})
            env = Environment(load_task(task_dir), EnvOptions(), runner, scratch)
            try:
                await env.reset()
                for reply in replies:
                    _, _, done, info = await env.step(reply)
                    if done:
                        return info
            finally:
                env.close()
        raise AssertionError("the episode did not end")

    return asyncio.run(play())


GROW = [bash_call("truncate -s 15M a.bin", "g1"), bash_call("truncate -s 15M b.bin", "g2"),
        bash_call("wc -l < data.log > answer.txt", "g3"), SUBMIT]
LINKS = [bash_call("printf 'import sys\\nprint(sum(1 for _ in open(sys.argv[1])))\\n' > count.py && "
                   "head -c 12M /dev/zero > a.bin && ln a.bin b.bin && python3 count.py data.log",
                   "l1"), SUBMIT]


@as_root
def test_an_episode_whose_workspace_outgrew_its_cap_fails(tmp_path):
    # Sparse files cost nothing inside; copied out they are dense. After two commands the
    # workspace holds 30 MB and no longer fits the 16 MB file system of the next one.
    info = _episode(count_task(tmp_path / "tasks", "grow"), GROW, tmp_path, 16)
    assert info["outcome"] == "fail" and info["ended_by"] == "workspace_full", info
    assert info["reward"]["reason"] == "submission_too_large", info["reward"]
    assert len(info["steps"]) == 2


@as_root
def test_a_verifier_that_cannot_take_the_policys_workspace_scores_a_fail(tmp_path):
    # A hard link costs one copy inside and two outside: 12 MB in the sandbox, 24 MB for
    # the verifier's sandbox, whose 16 MB file system cannot take it.
    info = _episode(script_task(tmp_path / "tasks", "links"), LINKS, tmp_path, 16)
    assert info["steps"][0]["exit_code"] == 0, info
    assert info["outcome"] == "fail" and info["ended_by"] == "submitted", info
    assert info["reward"]["reason"] == "submission_too_large", info["reward"]


@as_root
def test_a_workspace_grown_past_its_cap_between_commands_is_a_fail(cli, tmp_path, monkeypatch):
    # The same through `rlforge run`, the cap set by RLFORGE_SANDBOX_WORKSPACE_MB.
    monkeypatch.setenv("RLFORGE_SANDBOX_WORKSPACE_MB", "16")
    tasks = tmp_path / "tasks"
    count_task(tasks, "grow")
    policy = ScriptedPolicy({"grow": GROW})
    with policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
    [record] = rollouts_of(data["run_dir"])
    assert record["outcome"] == "fail", record.get("error")
    assert record["error"] is None
    assert record["reward"]["reason"] == "submission_too_large", record["reward"]
    assert "16 MB" in json.dumps(record["reward"]), record["reward"]
    assert (record["ended_by"], record["commands"]) == ("workspace_full", 2)
    # the call that could not run is answered, so the conversation stays well formed
    answer = next(m["content"] for m in record["messages"] if m.get("tool_call_id") == "g3")
    assert answer.startswith("[not run: "), answer
    assert (data["invalid"], data["fail"]) == (0, 1)


@as_root
def test_a_task_workspace_over_the_cap_is_still_infra(cli, tmp_path, monkeypatch):
    # Before any policy command ran, a workspace that does not fit is the task's (or the
    # settings') problem: invalid, never counted against the policy.
    monkeypatch.setenv("RLFORGE_SANDBOX_WORKSPACE_MB", "1")
    tasks = tmp_path / "tasks"
    make_task(tasks, "big", kind="terminal", generator="test.big",
              reference={"verifier": "answer", "answer_kind": "numeric", "answer": 1,
                         "submission": "/app/answer.txt"},
              instruction="Write 1 to /app/answer.txt. [script:big]",
              workspace={"blob.bin": b"x" * (2 * MB)})
    policy = ScriptedPolicy({"big": [bash_call("echo 1 > answer.txt"), SUBMIT]})
    with policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
    [record] = rollouts_of(data["run_dir"])
    assert record["outcome"] == "invalid" and record["error"]["infra"], record
    assert "capped file system" in record["error"]["message"], record["error"]
    assert Path(data["run_dir"]).is_dir()


@as_root
def test_a_submission_too_large_for_the_verifiers_sandbox_is_its_fail(tmp_path):
    # Scoring a submission without an episode (`Environment.verify`, as `rlforge run`
    # scores a reply and rescore a stored workspace): the starting workspace fit when the
    # task was validated, so 600 directories under a 400-inode file system are the
    # submission's doing: a fail, never invalid.
    from rlforge.run.environment import EnvOptions, Environment
    from rlforge.taskdir import load_task
    from rlforge.sandbox import SandboxPool
    from rlforge.verify.runner import TaskRunner

    task = load_task(script_task(tmp_path / "tasks", "dirs"))

    async def score() -> dict:
        async with SandboxPool(1) as pool:
            runner = TaskRunner(pool, "bwrap", {"workspace_inodes": 400})
            env = Environment(task, EnvOptions(), runner, tmp_path)
            try:
                files = {f"pad/d{i}/f.txt": "" for i in range(600)}
                return await env.verify({**files, "count.py": "print(12)\n"})
            finally:
                env.close()

    reward = asyncio.run(score())
    assert reward["outcome"] == "fail" and reward["reason"] == "submission_too_large", reward
