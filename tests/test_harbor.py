"""rlforge's tasks in real Harbor: its task loader, `harbor lint` and trials run through
rlforge's sandbox environment (`rlforge.harbor:SandboxEnvironment`), no Docker.

Harbor needs Python >= 3.12; `scripts/setup.sh` installs it into `.venv-harbor` from the
first such Python it finds. Where the machine has none, these tests are skipped with a
message saying so; where it has one but `.venv-harbor` is missing, they fail.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host_processes import host_pids_with
from paths import ROOT, SAMPLE_DATA
from rlforge.verify.standalone import rewards
from rlforge.verify.boundary import read_logged_result

HARBOR_VENV = ROOT / ".venv-harbor"
ENVIRONMENT = "rlforge.harbor:SandboxEnvironment"
GENERATORS = ("tickets-triage", "tickets-reply", "logs-diagnose", "logs-script", "commits-repair",
              "incidents-repair", "incidents-diagnose")


def _python_312() -> str | None:
    """A Python >= 3.12 on this machine, looked for as scripts/setup.sh does."""
    names = [os.environ.get("RLFORGE_HARBOR_PYTHON", ""), "python3.13", "python3.12",
             *sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python")),
             *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")))]
    for name in filter(None, names):
        exe = shutil.which(name)
        if exe and subprocess.run([exe, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"],
                                  capture_output=True).returncode == 0:
            return exe
    return None


def built_by_setup(exe: Path, client: str) -> Path:
    """`exe` of a client scripts/setup.sh installs in a Python >= 3.12 venv; a loud skip
    where this machine has no such Python, a failure where setup was not run."""
    if exe.is_file():
        return exe
    if _python_312() is None:
        print(f"\n*** SKIPPING THE {client.upper()} TESTS: this machine has no Python >= 3.12, "
              f"which {client} needs, so rlforge's tasks were NOT run in real {client} ***",
              file=sys.stderr)
        pytest.skip(f"NO PYTHON >= 3.12: {client} cannot be installed here; {client} tests NOT run")
    pytest.fail(f"{exe} is missing though this machine has Python >= 3.12: run scripts/setup.sh")


def harbor() -> Path:
    return built_by_setup(HARBOR_VENV / "bin" / "harbor", "Harbor")


def harbor_env(cache: Path) -> dict[str, str]:
    """Harbor's environment: rlforge importable from this checkout, rlforge's cache (the
    prepared venvs of repair tasks) shared with the build."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLFORGE_", "PYTHON"))}
    return {**env, "PYTHONPATH": str(ROOT), "RLFORGE_CACHE_DIR": str(cache)}


@pytest.fixture(scope="module")
def sample_tasks(tmp_path_factory, shared_cache) -> Path:
    """Every generator's tasks from sample_data/ (40, seed 1, as the demo builds them, with
    the opt-in tickets.reply too)."""
    harbor()
    root = tmp_path_factory.mktemp("harbor-tasks")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RLFORGE_")},
           "RLFORGE_DB": str(root / "rlforge.duckdb"), "RLFORGE_CACHE_DIR": str(shared_cache),
           "HOME": str(root), "PYTHONPATH": str(ROOT)}

    def rlforge(*args) -> None:
        done = subprocess.run([sys.executable, "-m", "rlforge", *map(str, args)], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    tickets = SAMPLE_DATA / "tickets"
    rlforge("ingest", "tickets", tickets / "tickets.csv")
    rlforge("ingest", "tickets", tickets / "zendesk_export.json", "--map",
            "category=custom_fields.360041872211")
    rlforge("ingest", "tickets", tickets / "jira_export.csv", "--map", "category=Component/s")
    subprocess.run([sys.executable, str(SAMPLE_DATA / "repo" / "build_repo.py"), str(root / "dura")],
                   check=True, capture_output=True)
    rlforge("ingest", "commits", root / "dura")
    rlforge("ingest", "logs", *sorted(p for p in SAMPLE_DATA.glob("logs/**/*") if p.is_file()
                                      and p.suffix not in (".py", ".md", ".json")))
    # the opt-in tickets.reply named too: a user who builds it scores it through Harbor
    rlforge("build-tasks", "--out", root / "tasks", "--limit", 40, "--seed", 1, "--no-validate",
            "--generators", ",".join(g.replace("-", ".", 1) for g in GENERATORS))
    return root / "tasks"


def task_dirs(tasks: Path) -> list[Path]:
    return sorted(p for p in tasks.iterdir() if (p / "task.toml").is_file())


def test_reward_json_is_harbors_flat_map_and_the_detail_sits_beside_it(tmp_path):
    comps = {"valid_format": rewards.component(1, 0, "medium", gate=True),
             "correct": rewards.component(0.5, 1.0), "reward": rewards.component(1, 0)}
    result = rewards.reward(comps)
    rewards.write_reward(result, str(tmp_path))
    flat = json.loads((tmp_path / "reward.json").read_text())
    assert flat == {"reward": 0.5, "correct": 0.5, "valid_format": 1.0, "component_reward": 1.0}
    assert all(type(v) is float for v in flat.values())  # what Harbor's parser accepts
    assert (tmp_path / "reward.txt").read_text() == "0.5\n"
    assert read_logged_result(tmp_path) == json.loads(json.dumps(result))
    (tmp_path / rewards.RESULT_NAME).unlink()  # a trial of another verifier: reward.json only
    assert read_logged_result(tmp_path)["components"]["correct"]["value"] == 0.5


def test_a_planted_reward_and_a_deep_directory_cannot_stand_as_the_reward(tmp_path):
    """Policy code that could write the reward directory planted reward.json = 1.0 and made
    rlforge_result.json a chain of 1,500 directories: deleting it recursively raised
    RecursionError, the verifier died before replacing reward.json, and Harbor read the
    planted 1.0. Now the names are cleared before policy code runs, a directory is set
    aside by a rename, and the total is written first."""
    for planted in ("reward.json", rewards.RESULT_NAME):
        logs = tmp_path / planted / "verifier"
        logs.mkdir(parents=True)
        (logs / "reward.json").write_text('{"reward": 1.0}')
        (logs / "reward.txt").write_text("1.0\n")
        deep = logs / planted

        def plant_chain():
            path = str(deep)
            for _ in range(1500):
                os.mkdir(path)
                path = os.path.join(path, "d")

        deep.unlink(missing_ok=True)
        plant_chain()
        rewards.claim_logs(str(logs))
        assert not any((logs / n).exists() for n in rewards.REWARD_NAMES)
        plant_chain()  # again after the claim (a process that outlived it)
        rewards.write_reward(rewards.reward({"correct": rewards.component(0)}), str(logs))
        assert json.loads((logs / "reward.json").read_text())["reward"] == 0.0
        assert (logs / "reward.txt").read_text() == "0.0\n"
        assert read_logged_result(logs)["outcome"] == "fail"
        assert sorted(p.name for p in logs.iterdir()) == sorted(rewards.REWARD_NAMES)


@pytest.mark.slow
def test_harbor_loads_and_lints_every_sample_task(sample_tasks):
    dirs = task_dirs(sample_tasks)
    assert {d.name.rsplit("-", 1)[0] for d in dirs} == set(GENERATORS)
    py = HARBOR_VENV / "bin" / "python"
    load = ("import sys, warnings\nwarnings.simplefilter('error', DeprecationWarning)\n"
            "from harbor.models.task.task import Task\n"
            "for d in sys.argv[1:]:\n"
            "    t = Task(d)\n"
            "    assert t.config.environment.network_mode.value == 'no-network', d\n"
            # the verifier runs apart from the agent, on the agent's /app
            "    v = t.config.verifier\n"
            "    assert (v.environment_mode.value, t.config.artifacts) == "
            "('separate', ['/app']), (d, v)\n"
            "print(len(sys.argv) - 1)\n")
    done = subprocess.run([str(py), "-c", load, *map(str, dirs)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == str(len(dirs)), done.stderr[-3000:]
    lint = subprocess.run([str(harbor()), "lint", "--json", *map(str, dirs)], capture_output=True,
                          text=True)
    assert lint.returncode == 0 and json.loads(lint.stdout) == [], lint.stdout[-3000:] + lint.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("generator", GENERATORS)
def test_trials_in_rlforges_sandbox_oracle_1_nop_0(sample_tasks, shared_cache, tmp_path, generator):
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith(generator + "-"))
    for agent, want in (("oracle", 1.0), ("nop", 0.0)):
        trials = tmp_path / agent
        done = subprocess.run([str(harbor()), "trial", "start", "-p", str(task), "-a", agent,
                               "-e", ENVIRONMENT, "--trials-dir", str(trials)],
                              env=harbor_env(shared_cache), capture_output=True, text=True,
                              timeout=1800)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        [trial] = [p for p in trials.iterdir() if (p / "result.json").is_file()]
        result = json.loads((trial / "result.json").read_text())
        assert result["exception_info"] is None, result["exception_info"]
        rewards = result["verifier_result"]["rewards"]
        assert rewards["reward"] == want, (agent, rewards, (trial / "verifier" / "test-stdout.txt").read_text()[-2000:])
        detail = read_logged_result(trial / "verifier")  # rlforge's full result, beside it
        assert detail["total"] == want and detail["outcome"] == ("pass" if want else "fail")
        assert rewards == {"reward": want, **{n: c["value"] for n, c in detail["components"].items()}}


# --- adversarial submissions through real Harbor ---------------------------------------------

#: What every attack does in the agent phase: plant the files the verifier writes, read what
#: it reads, and leave a process behind that waits for the tests to be uploaded.
AGENT_PHASE = r"""#!/bin/bash
mkdir -p /logs/verifier/reward.json 2>/dev/null
echo 1 > /logs/verifier/reward.txt 2>/dev/null
cat /tests/reference.json > /app/.seen 2>/dev/null
( for i in $(seq 600); do cp -r /tests /app/.tests 2>/dev/null && break; sleep 0.1; done ) &
"""

#: logs.script: a program that prints the reference's answers and kills its parent (the
#: verifier, where it runs as a child of it).
READ_AND_KILL = r'''import json, os, signal, sys
try:
    cases = json.load(open("/tests/reference.json"))["cases"]
    print(cases[0 if sys.argv[-1].rstrip("/").endswith("app/logs") else -1]["answer"]["answer"], flush=True)
finally:
    os.kill(os.getppid(), signal.SIGKILL)
'''

#: repair: the module under test reads every file of /tests at import (the hidden tests, the
#: checked-assert plan) into the test process, then kills its parent.
STEAL_AT_IMPORT = r'''
import os as _os, signal as _signal
_STOLEN = {}
for _d, _, _fs in _os.walk("/tests"):
    for _f in _fs:
        try:
            _STOLEN[_os.path.join(_d, _f)] = open(_os.path.join(_d, _f), "rb").read()
        except OSError:
            pass
if _os.getppid() > 1:
    _os.kill(_os.getppid(), _signal.SIGKILL)
'''


def _attack(task: Path) -> str:
    """The solve.sh of an adversarial submission for `task` (the harness reads its reference
    only to know where the submission goes)."""
    ref = json.loads((task / "tests" / "reference.json").read_text())
    kind = ref["verifier"]
    if kind == "script":
        return AGENT_PHASE + f"cat > /app/{ref['programs'][0]} <<'EOF'\n{READ_AND_KILL}EOF\n"
    if kind == "repair":
        diff = (task / "solution" / "gold.diff").read_text()
        module = next(line[6:] for line in diff.splitlines()
                      if line.startswith("+++ b/") and line.endswith(".py") and "test" not in line)
        return AGENT_PHASE + f"cat >> /app/{module} <<'EOF'\n{STEAL_AT_IMPORT}EOF\n"
    answer = ref["submission"]
    return AGENT_PHASE + (f"sleep 2; python3 -c 'import json; print(json.load(open(\"/app/.tests/reference.json\"))"
                          f".get(\"answer\", \"\"))' > {answer} 2>/dev/null || echo unknown > {answer}\n")


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("generator", GENERATORS)
def test_adversarial_trials_in_rlforges_sandbox_score_0_never_an_error(sample_tasks, shared_cache,
                                                                       tmp_path, generator):
    """Per generator, an attack run by Harbor as the agent's solution: reward files planted,
    /tests looked for in the agent phase and by a process left behind, and the code the
    verifier runs (a program, the module under test) reading /tests and killing its parent.
    Each must be a scored 0, never a trial error (what Harbor reports for a missing reward)."""
    original = next(d for d in task_dirs(sample_tasks) if d.name.startswith(generator + "-"))
    task = tmp_path / original.name
    shutil.copytree(original, task, symlinks=True)
    (task / "solution" / "solve.sh").write_text(_attack(task))
    trials = tmp_path / "trials"
    done = subprocess.run([str(harbor()), "trial", "start", "-p", str(task), "-a", "oracle",
                           "-e", ENVIRONMENT, "--trials-dir", str(trials)],
                          env=harbor_env(shared_cache), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [trial] = [p for p in trials.iterdir() if (p / "result.json").is_file()]
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    rewards = result["verifier_result"]["rewards"]
    assert rewards["reward"] == 0.0, (rewards, (trial / "verifier" / "test-stdout.txt").read_text()[-2000:])
    seen = trial / "artifacts" / "app"
    assert not (seen / ".seen").exists() or not (seen / ".seen").read_bytes(), "the agent read /tests"
    assert not (seen / ".tests").exists(), "a process the agent left saw /tests"


#: The answer file made a directory, then the agent's capped file system filled, a command
#: at a time (each command's copy-out takes at most 20,000 entries), until creating a file
#: fails: each once left the verifier with no reward (the answer's reader raised; the
#: verifier's own sandbox could not start with the agent's /app in it).
FILL = ("import os\nos.makedirs('/app/.fill', exist_ok=True)\nn = len(os.listdir('/app/.fill'))\n"
        "for i in range(n, n + 19500):\n    try:\n        open(f'/app/.fill/{i}', 'w').close()\n"
        "    except OSError:\n        break\n")
FILL_AND_MKDIR = ["rm -rf /app/answer.txt; mkdir -p /app/answer.txt/x"] + \
    [f"python3 -c {shlex.quote(FILL)}"] * 6


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("generator", ["tickets-triage", "logs-script"])
def test_a_full_workspace_or_an_answer_directory_is_a_scored_0(sample_tasks, shared_cache,
                                                               tmp_path, generator):
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith(generator + "-"))
    commands = tmp_path / "commands.json"
    commands.write_text(json.dumps(FILL_AND_MKDIR))
    env = harbor_env(shared_cache)
    env.update(PYTHONPATH=f"{ROOT}:{ROOT / 'tests'}", RLFORGE_TEST_COMMANDS=str(commands))
    trials = tmp_path / "trials"
    done = subprocess.run([str(harbor()), "trial", "start", "-p", str(task), "-a",
                           "harbor_agents:Commands", "-e", ENVIRONMENT, "--trials-dir", str(trials)],
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [trial] = [p for p in trials.iterdir() if (p / "result.json").is_file()]
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"]["reward"] == 0.0
    assert len(os.listdir(trial / "artifacts" / "app" / ".fill")) > 90_000  # it was full


def _commands_trial(task: Path, tmp_path: Path, cache: Path, commands: list[str], *extra: str,
                    env: dict[str, str] | None = None) -> subprocess.Popen:
    """A Harbor trial of `task` whose agent runs `commands` (`harbor_agents:Commands`),
    started in a session of its own; its results go to tmp_path/results.json."""
    (tmp_path / "commands.json").write_text(json.dumps(commands))
    run_env = {**harbor_env(cache), "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}",
               "RLFORGE_TEST_COMMANDS": str(tmp_path / "commands.json"),
               "RLFORGE_TEST_RESULTS": str(tmp_path / "results.json"), **(env or {})}
    return subprocess.Popen([str(harbor()), "trial", "start", "-p", str(task), "-a",
                             "harbor_agents:Commands", "-e", ENVIRONMENT, "--trials-dir",
                             str(tmp_path / "trials"), *extra], env=run_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _trial_result(tmp_path: Path) -> tuple[Path, dict]:
    [trial] = [p for p in (tmp_path / "trials").iterdir() if (p / "result.json").is_file()]
    return trial, json.loads((trial / "result.json").read_text())


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_workspace_the_agent_grew_past_its_cap_is_a_failed_command_not_a_trial_error(
        sample_tasks, shared_cache, tmp_path):
    """Sparse files cost nothing in a sandbox and are dense once copied out: two commands
    grow the workspace past a 16 MB cap (the user's `sandbox.workspace_mb`, which Harbor's
    environment now applies as `rlforge run` does), so the third command's sandbox cannot
    take it. That was a RuntimeError out of `exec`, which Harbor 0.26 records as the
    trial's exception (an unknown type: retried by a job, the attempt dropped). It is now
    the command's exit 126 with the reason, and the trial is graded: a 0, no exception."""
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith("tickets-triage-"))
    proc = _commands_trial(task, tmp_path, shared_cache,
                           ["truncate -s 15M /app/a.bin", "truncate -s 15M /app/b.bin",
                            "echo still here"], env={"RLFORGE_SANDBOX_WORKSPACE_MB": "16"})
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-3000:]
    (first, _), (second, _), (third, why) = json.loads((tmp_path / "results.json").read_text())
    assert (first, second, third) == (0, 0, 126), why
    assert "no longer fits the sandbox" in why, why
    _, result = _trial_result(tmp_path)
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"]["reward"] == 0.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_an_agent_timeout_kills_the_running_sandbox_and_its_thread(sample_tasks, shared_cache,
                                                                   tmp_path):
    """Harbor's agent timeout cancels the agent's coroutine; the command's sandbox ran on
    in its thread (`sleep 400` kept it, and Harbor's process, alive for 400 s, writing to
    /app while the verifier read it). The cancellation now kills the process tree and
    waits for the thread: the sandbox is gone within seconds of the timeout, and the
    trial ends, graded, with Harbor's AgentTimeoutError."""
    task = next(d for d in task_dirs(sample_tasks) if d.name.startswith("tickets-triage-"))
    marker = f"rlforge-stuck-{os.getpid()}-{tmp_path.name}"
    timeout = 4.0
    proc = _commands_trial(task, tmp_path, shared_cache, [f"sleep 400; : {marker}"],
                           "--agent-timeout", str(timeout))
    try:
        deadline = time.monotonic() + 300
        while not host_pids_with(marker):  # the agent's command has started
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
            time.sleep(0.1)
        started = time.monotonic()
        while host_pids_with(marker):
            assert time.monotonic() - started < timeout + 10, \
                f"the sandbox outlived the agent timeout: {host_pids_with(marker)}"
            time.sleep(0.1)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    _, result = _trial_result(tmp_path)
    assert result["exception_info"]["exception_type"] == "AgentTimeoutError", result["exception_info"]
    assert result["verifier_result"]["rewards"]["reward"] == 0.0
