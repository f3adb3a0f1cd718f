"""`rlforge run` and `rlforge rescore` through the CLI, against real HTTP servers on 127.0.0.1.

The endpoint is either the fault-injecting server (tests/fault_server.py) or a scripted
policy (test_run_support.py) whose replies are fixed per task, so outcomes are known.
Tasks are real task directories rendered by rlforge's renderer or built from sample_data.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from pathlib import Path

import pytest

from fault_server import FaultServer
from rlforge import envs
from test_run_support import (SUBMIT, ScriptedPolicy, bash_call, count_task, label_task,
                              script_task)


@pytest.fixture
def fault():
    server = FaultServer().start()
    yield server
    server.stop()


def run_json(cli, *args):
    result = cli("run", *args, "--json")
    data = json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else None
    return result, data


def rollouts_of(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "rollouts.jsonl").read_text().splitlines()]


def alternate(first: str, second: str):
    """A step answering `first` to the first request it sees, `second` to the next, ..."""
    counter = itertools.count()
    lock = threading.Lock()

    def step(body):
        with lock:
            n = next(counter)
        return first if n % 2 == 0 else second
    return step


# --- the main path -----------------------------------------------------------------------

def test_run_stores_every_rollout_with_stats_and_gates(cli, tmp_path, query, monkeypatch):
    tasks = tmp_path / "tasks"
    label_task(tasks, "right", "billing")
    label_task(tasks, "wrong", "login")
    label_task(tasks, "mixed", "shipping")
    policy = ScriptedPolicy({"right": ["Money.\nANSWER: billing"], "wrong": ["ANSWER: billing"],
                             "mixed": [alternate("ANSWER: shipping", "no idea")]}).start()
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-test-9f8e7d6c5b4a39281706")
    monkeypatch.setenv("RLFORGE_RUN_SAMPLES", "2")  # env equivalent of --samples
    (tmp_path / "rlforge.toml").write_text("[run]\nconcurrency = 3\n")
    try:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "scripted",
                                "--api-key-env", "MY_ENDPOINT_KEY", "--seed", "7")
    finally:
        policy.stop()
    assert result.exit_code == 0, result.output
    assert (data["rollouts"], data["pass"], data["fail"], data["invalid"]) == (6, 3, 3, 0)
    assert data["pass_rate"] == pytest.approx(0.5)
    assert data["pass_at_k"] == {"1": 0.5, "2": pytest.approx(2 / 3, abs=1e-6)}
    assert data["complete"] is True and data["gate"]["exit_code"] == 0
    records = rollouts_of(data["run_dir"])
    assert sorted((r["task_id"], r["sample"]) for r in records) == sorted(
        (t.name, s) for t in tasks.iterdir() for s in (0, 1))
    # Distinct seeds per sample, and the seed each request carried is the record's.
    by_task = {}
    for r in records:
        by_task.setdefault(r["task_id"], set()).add(r["seed"])
    assert all(len(seeds) == 2 for seeds in by_task.values())
    assert sorted(b["seed"] for b in policy.requests) == sorted(r["seed"] for r in records)
    mixed = sorted((r for r in records if "mixed" in r["messages"][1]["content"]),
                   key=lambda r: r["outcome"])
    assert [r["outcome"] for r in mixed] == ["fail", "pass"]
    assert mixed[0]["reward"]["components"]["valid_format"]["value"] == 0.0
    for r in records:
        assert r["messages"][0]["role"] == "system" and r["messages"][-1]["role"] == "assistant"
        assert r["scored_by"] == "in_process" and r["requests"] == 1 and r["attempts"] == 1
        assert r["prompt_tokens"] > 0 and r["seconds"] >= r["policy_seconds"] > 0
        assert r["started_at"] <= r["finished_at"]
    # The key went to the server and nowhere else.
    assert set(policy.authorizations) == {"Bearer sk-test-9f8e7d6c5b4a39281706"}
    run_dir = Path(data["run_dir"])
    for path in run_dir.iterdir():
        assert "sk-test-9f8e7d6c5b4a39281706" not in path.read_text()
    config = json.loads((run_dir / "config.json").read_text())
    assert config["policy"]["api_key_env"] == "MY_ENDPOINT_KEY"
    assert config["settings"]["run.samples"] == {"value": 2, "source": "env RLFORGE_RUN_SAMPLES"}
    assert config["settings"]["run.concurrency"]["source"] == "file rlforge.toml"
    assert config["settings"]["run.seed"] == {"value": 7, "source": "flag"}
    # The table mirrors the log; advantages are standardised within each task's group.
    rows = query("SELECT rollout_id, outcome, reward, advantage FROM rollouts WHERE run_id = ?",
                 [data["run_id"]])
    assert sorted(r[0] for r in rows) == sorted(r["rollout_id"] for r in records)
    advantages = {(rid.split("#")[0], outcome): adv for rid, outcome, _, adv in rows}
    mixed_id = mixed[0]["task_id"]
    assert advantages[(mixed_id, "pass")] == pytest.approx(1.0)
    assert advantages[(mixed_id, "fail")] == pytest.approx(-1.0)
    assert all(adv == 0.0 for (tid, _), adv in advantages.items() if tid != mixed_id)
    assert query("SELECT status, rollouts, pass_rate, samples FROM runs") == \
        [("finished", 6, 0.5, 2)]
    assert not any("sk-test" in str(v) for v in query("SELECT config FROM runs")[0])
    groups = [json.loads(x) for x in (run_dir / "groups.jsonl").read_text().splitlines()]
    assert {g["task_id"]: g["passes"] for g in groups}[mixed_id] == 1


def test_pass_rate_gate_exits_3_and_says_why(cli, tmp_path):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    label_task(tasks, "b", "login")
    policy = ScriptedPolicy({"a": ["ANSWER: billing"], "b": ["ANSWER: billing"]}).start()
    try:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m",
                                "--min-pass-rate", "0.75")
    finally:
        policy.stop()
    assert result.exit_code == 3
    assert data["pass_rate"] == 0.5 and data["gate"]["exit_code"] == 3
    assert "pass rate 50.0% is below --min-pass-rate 75.0%" in result.stderr


def test_multi_turn_rollouts_run_commands_in_the_sandbox(cli, tmp_path, query):
    tasks = tmp_path / "tasks"
    count_task(tasks, "count")
    script_task(tasks, "prog")
    program = "import sys\nprint(sum(1 for _ in open(sys.argv[1])))\n"
    policy = ScriptedPolicy({
        "count": [bash_call("wc -l data.log", "c1"),
                  bash_call("wc -l < data.log > answer.txt", "c2"), SUBMIT],
        "prog": [bash_call(f"cat > count.py <<'EOF'\n{program}EOF\npython3 count.py data.log"),
                 "The program is written.\nSUBMIT"],
    }).start()
    try:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
    finally:
        policy.stop()
    assert result.exit_code == 0, result.output
    assert data["pass"] == 2
    records = {r["generator"]: r for r in rollouts_of(data["run_dir"])}
    count = records["test.count"]
    assert (count["turns"], count["commands"], count["ended_by"]) == (3, 2, "submitted")
    tool_messages = [m for m in count["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == {"role": "tool", "tool_call_id": "c1",
                                "content": "[exit code 0]\n12 data.log\n"}
    # Assistant turns go back to the server with "" content next to tool calls.
    assert all(m["content"] == "" for m in count["messages"] if m.get("tool_calls"))
    assert count["submission"]["files"] == {"answer.txt": {"text": "12\n"}}
    assert count["scored_by"] == "in_process"
    prog = records["test.script"]
    assert prog["scored_by"] == "sandbox" and prog["ended_by"] == "submitted"
    assert prog["messages"][3]["role"] == "tool"
    assert prog["messages"][3]["content"] == "[exit code 0]\n12\n"  # the program ran
    assert prog["reward"]["components"]["runs"]["value"] == 1.0
    # The Python API scores a stored submission the same way.
    with envs.load(tasks / prog["task_id"]) as env:
        assert env.verify(prog["submission"]) == prog["reward"]
    assert query("SELECT count(*) FROM rollouts WHERE commands > 0") == [(2,)]


def test_rescore_reruns_verifiers_on_stored_submissions_only(cli, tmp_path, query):
    tasks = tmp_path / "tasks"
    count_dir = count_task(tasks, "count")
    label_task(tasks, "label", "billing")
    policy = ScriptedPolicy({"count": [bash_call("wc -l < data.log > answer.txt"), SUBMIT],
                             "label": ["ANSWER: billing"]}).start()
    try:
        _, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
        assert data["pass"] == 2
        served = len(policy.requests)
        # The verifier's reference changes: the stored workspace no longer passes.
        ref_path = count_dir / "tests" / "reference.json"
        ref = json.loads(ref_path.read_text())
        ref_path.write_text(json.dumps({**ref, "answer": 13}))
        result = cli("rescore", data["run_id"], "--json", "--min-pass-rate", "0.9")
        assert len(policy.requests) == served  # the model was not called
    finally:
        policy.stop()
    assert result.exit_code == 3
    again = json.loads(result.stdout)
    assert again["rescored"] == {"rescored": 2, "changed": 1, "no_submission": 0,
                                 "incomplete_submission": 0, "too_large": 0,
                                 "task_missing": 0}
    assert (again["pass"], again["fail"]) == (1, 1)
    records = {r["task_id"]: r for r in rollouts_of(data["run_dir"])}
    count = records[count_dir.name]
    assert count["outcome"] == "fail" and count["rescored"]["previous"] == \
        {"outcome": "pass", "total": 1.0}
    assert len(list(Path(data["run_dir"]).glob("rollouts.before-rescore-*.jsonl"))) == 1
    assert query("SELECT outcome, rescored_at IS NOT NULL FROM rollouts WHERE task_id = ?",
                 [count_dir.name]) == [("fail", True)]


# --- faults --------------------------------------------------------------------------------

# (fault step, error type, attempts per rollout with run.max_retries = 1)
FAULTS = [("429:0.05", "rate_limited", 2), ("500", "server_error", 2), ("slow:3", "timeout", 2),
          ("truncated", "malformed_response", 1), ("reset", "connection", 2)]


@pytest.mark.parametrize("step,kind,attempts", FAULTS, ids=[k for _, k, _ in FAULTS])
def test_endpoint_faults_make_invalid_rollouts_and_the_run_completes(cli, tmp_path, fault,
                                                                     monkeypatch, step, kind,
                                                                     attempts):
    tasks = tmp_path / "tasks"
    for name in ("a", "b", "c"):
        label_task(tasks, name, "billing")
    monkeypatch.setenv("RLFORGE_RUN_MAX_RETRIES", "1")
    result, data = run_json(cli, tasks, "--base-url", fault.url, "--model", step,
                            "--samples", "2", "--concurrency", "4", "--request-timeout", "0.5",
                            "--max-infra-error-rate", "0.5")
    assert result.exit_code == 4, result.output
    assert (data["rollouts"], data["invalid"], data["infra_error_rate"]) == (6, 6, 1.0)
    assert data["pass_rate"] is None and data["errors"] == {kind: 6}
    assert "infrastructure error rate 100.0% is above --max-infra-error-rate 50.0%" in result.stderr
    for r in rollouts_of(data["run_dir"]):
        assert r["outcome"] == "invalid" and r["reward"] is None and r["submission"] is None
        assert r["error"]["type"] == kind and r["error"]["infra"] is True
        assert r["attempts"] == attempts  # a malformed answer is not retried
    assert fault.requests == 6 * attempts


def one_rollout(cli, tmp_path, url: str, model: str, *args: str):
    """Run one label task; the run's JSON summary and its only record."""
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    result, data = run_json(cli, tasks, "--base-url", url, "--model", model, *args)
    assert result.exit_code == 0, result.output
    (record,) = rollouts_of(data["run_dir"])
    return data, record


def test_a_fault_that_clears_on_retry_is_not_an_error(cli, tmp_path, fault):
    _, record = one_rollout(cli, tmp_path, fault.url, "500,ok")
    assert record["outcome"] == "fail" and record["error"] is None  # "ok" is not a label
    assert (record["requests"], record["attempts"]) == (1, 2)


def test_context_overflow_is_the_policys_failure_not_infra(cli, tmp_path, fault):
    data, record = one_rollout(cli, tmp_path, fault.url, "context")
    assert (record["outcome"], record["ended_by"], record["error"]["type"]) == \
        ("fail", "context_length", "context_length")
    assert record["error"]["infra"] is False and data["infra_error_rate"] == 0.0


@pytest.mark.parametrize("steps,outcome", [("tool,400,ok", "fail"), ("tool,400", "invalid")],
                         ids=["endpoint-answers", "endpoint-broken"])
def test_a_request_refused_after_the_policys_turns_is_its_fail_if_the_endpoint_answers(
        cli, tmp_path, fault, steps, outcome):
    """A 400 on a later turn is the conversation's (the policy's tool calls, its commands'
    output: a server can refuse history it cannot parse) when the endpoint still answers the
    episode's first request; only when it does not is it the endpoint's, and invalid."""
    tasks = tmp_path / "tasks"
    count_task(tasks, "count")
    result, data = run_json(cli, tasks, "--base-url", fault.url, "--model", steps)
    (record,) = rollouts_of(data["run_dir"])
    assert record["outcome"] == outcome and record["error"]["type"] == "bad_request", record
    if outcome == "fail":
        assert record["ended_by"] == "request_refused" and record["error"]["infra"] is False
        assert record["reward"]["outcome"] == "fail" and data["infra_error_rate"] == 0.0
    else:
        assert record["error"]["infra"] is True and data["infra_error_rate"] == 1.0
    assert fault.requests == 3  # the episode's two requests and the probe


def test_time_budget_ends_a_runaway_rollout_as_timeout(cli, tmp_path, fault):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    label_task(tasks, "b", "billing")
    result, data = run_json(cli, tasks, "--base-url", fault.url, "--model", "slow:5",
                            "--request-timeout", "30", "--time-budget", "0.5")
    assert result.exit_code == 0
    assert (data["timeout"], data["invalid"], data["pass_rate"]) == (2, 0, 0.0)
    assert data["session"]["seconds"] < 4
    for r in rollouts_of(data["run_dir"]):
        assert r["outcome"] == "timeout" and r["reward"]["total"] == 0.0
        assert r["error"] == {"type": "time_budget", "infra": False,
                              "message": "the rollout ran past its time budget of 0.5s"}
        # the whole budget went waiting for the model: its time is the model's (was 0.0)
        assert 0.45 <= r["policy_seconds"] <= r["seconds"], r


# --- scheduling ----------------------------------------------------------------------------

def test_generator_quota_holds_while_others_use_the_free_slots(cli, tmp_path):
    tasks = tmp_path / "tasks"
    for i in range(4):
        label_task(tasks, f"slow{i}", "billing", generator="test.slow")
        label_task(tasks, f"fast{i}", "billing", generator="test.fast")
    (tmp_path / "rlforge.toml").write_text('[run]\ngenerator_concurrency = { "test.slow" = 1 }\n')
    with ScriptedPolicy({}, delay=0.2) as policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m",
                                "--concurrency", "4")
    assert result.exit_code == 0 and data["rollouts"] == 8
    # The records' own start and end times: never two test.slow rollouts at once, while
    # test.fast rollouts ran side by side.
    records = rollouts_of(data["run_dir"])
    slow = sorted((r["started_at"], r["finished_at"]) for r in records if r["generator"] == "test.slow")
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(slow, slow[1:]))
    fast = [r for r in records if r["generator"] == "test.fast"]
    overlapping = sum(1 for a, b in itertools.combinations(fast, 2)
                      if a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"])
    assert overlapping >= 1


# --- user errors ---------------------------------------------------------------------------

def test_user_errors_exit_1_with_one_line(cli, tmp_path):
    result = cli("run", "--resume", "nope")
    assert result.exit_code == 1 and "no run 'nope' in runs" in result.stderr
    result = cli("run")
    assert result.exit_code == 1 and "--resume RUN_ID" in result.stderr
    result = cli("run", tmp_path / "missing", "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 1 and "no such directory" in result.stderr
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    result = cli("run", tasks, "--base-url", "ftp://x", "--model", "m")
    assert result.exit_code == 1 and "not an http(s) URL" in result.stderr
    result = cli("run", tasks, "--generators", "tickets.triage", "--base-url", "http://127.0.0.1:9/v1")
    assert result.exit_code == 1 and "no tasks of generator tickets.triage" in result.stderr
    result = cli("run", "--resume", "x", "--model", "other")
    assert result.exit_code == 1 and "drop --model" in result.stderr
    result = cli("run", tasks, "--samples", "0")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_scheduler_starts_the_longest_first_and_learns_from_durations():
    from rlforge.run.schedule import Scheduler, WorkItem

    items = [WorkItem(i, 0, "a", 10.0) for i in range(5)] + \
        [WorkItem(10 + i, 0, "b", 5.0) for i in range(2)]
    scheduler = Scheduler(items)

    async def one_worker():
        order = []
        while (item := await scheduler.take()) is not None:
            order.append(item.generator)
            scheduler.finished(item, 0.1 if item.generator == "a" else 5.0)
        return order

    # "a" looks longer until three of its rollouts took 0.1 s each; then "b" goes first.
    assert asyncio.run(one_worker()) == ["a", "a", "a", "b", "b", "a", "a"]


def test_scheduler_quota_caps_one_generator_only():
    from rlforge.run.schedule import Scheduler, WorkItem

    items = [WorkItem(i, 0, "slow", 10.0) for i in range(4)] + \
        [WorkItem(10 + i, 0, "fast", 1.0) for i in range(8)]
    scheduler = Scheduler(items, {"slow": 1})
    running = {"slow": 0, "fast": 0}
    peak = {"slow": 0, "fast": 0}

    async def worker():
        while (item := await scheduler.take()) is not None:
            running[item.generator] += 1
            peak[item.generator] = max(peak[item.generator], running[item.generator])
            await asyncio.sleep(0.02 if item.generator == "slow" else 0.005)
            running[item.generator] -= 1
            scheduler.finished(item, 0.0)

    async def main():
        await asyncio.gather(*(worker() for _ in range(4)))

    asyncio.run(main())
    assert peak["slow"] == 1 and peak["fast"] >= 3 and scheduler.remaining == 0


def test_a_reply_with_a_lone_surrogate_is_stored_and_loaded(cli, tmp_path, query):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    policy = ScriptedPolicy({"a": ["ANSWER: billing \ud800"]}).start()
    try:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
    finally:
        policy.stop()
    assert result.exit_code == 0, result.output
    (record,) = rollouts_of(data["run_dir"])
    # Replaced as the verifier's UTF-8 read replaces it; the line and the table stay valid.
    assert record["messages"][-1]["content"] == "ANSWER: billing \ufffd\ufffd\ufffd"
    assert record["outcome"] == "fail"  # not one of the labels
    assert query("SELECT count(*) FROM rollouts") == [(1,)]


def test_commands_and_file_names_with_lone_surrogates_never_stop_the_run(cli, tmp_path, query):
    """A command the policy wrote, or a file name its bytes cannot decode, is kept exactly
    in rollouts.jsonl (a JSON escape), and the table gets U+FFFD: DuckDB's JSON reader
    refuses a lone surrogate, which once failed the whole run at its end (exit 2)."""
    tasks = tmp_path / "tasks"
    count_task(tasks, "count")
    policy = ScriptedPolicy({"count": [bash_call("echo \ud800 > answer.txt"),
                                       bash_call("touch \"$(printf 'odd\\377name')\""),
                                       SUBMIT]}).start()
    try:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m")
        assert result.exit_code == 0, result.output
        rescored = cli("rescore", data["run_id"], "--json")
    finally:
        policy.stop()
    assert rescored.exit_code == 0, rescored.output
    (record,) = rollouts_of(data["run_dir"])
    assert record["outcome"] == "fail" and record["steps"][0]["command"].startswith("echo \ud800")
    assert "odd\udcffname" in record["submission"]["files"]
    assert record["steps"][0]["exit_code"] == 126  # no program can receive that argument
    assert query("SELECT outcome, steps->>'$[0].command' FROM rollouts") == \
        [("fail", "echo \ufffd\ufffd\ufffd > answer.txt")]


def test_limit_takes_tasks_from_every_generator_in_turn(tmp_path):
    from rlforge.taskdir import discover_tasks
    from rlforge.run.session import select_tasks

    tasks = tmp_path / "tasks"
    for i in range(5):
        label_task(tasks, f"a{i}", "billing", generator="test.a")
    label_task(tasks, "b0", "billing", generator="test.b")
    count_task(tasks, "c0")
    found = discover_tasks(tasks)
    picked = select_tasks(found, limit=4)
    assert sorted(t.generator for t in picked) == ["test.a", "test.a", "test.b", "test.count"]
    assert select_tasks(found, limit=4) == picked  # the same choice every time
    assert [t.generator for t in select_tasks(found, generators=["test.a@1"], limit=2)] == \
        ["test.a", "test.a"]
    # Tasks a calibration put in the band come first: their generator takes the first
    # turn and they come first within it, so a small limit still holds them.
    late = [t for t in found if t.generator == "test.a" and t not in picked][0]
    assert [t.task_id for t in select_tasks(found, limit=1, first={late.task_id})] == \
        [late.task_id]
    assert late not in select_tasks(found, limit=1)


def test_a_limited_run_keeps_its_tickets_when_the_verifier_changes(tmp_path, monkeypatch):
    """A task's id hashes its verifier's files, so a verifier change gives every task a
    new id; `--limit` must still pick the same source records (before and after a fix is
    measured on the same tickets), as the build's own limit does."""
    from builds import build_options
    from paths import SAMPLE_DATA
    from rlforge import db
    from rlforge.ingest import tickets
    from rlforge.run.session import select_tasks
    from rlforge.taskdir import discover_tasks
    from rlforge.tasks.build import build_tasks
    from rlforge.verify import standalone

    con = db.connect(tmp_path / "t.duckdb")
    tickets.ingest_file(con, SAMPLE_DATA / "tickets" / "tickets.csv")
    gens = ["tickets.triage", "tickets.reply"]

    def build(out):
        build_tasks(con, build_options(out=out, generators=gens, mix={g: 1 for g in gens},
                                       limit=40, seed=0, validate=False))
        found = discover_tasks(out)
        built = {(t.generator, tuple(t.meta["metadata"]["rlforge"]["source_keys"]))
                 for t in found}
        picked = select_tasks(found, split="train", limit=6)
        return ({t.task_id for t in found}, built,
                [(t.generator, tuple(t.meta["metadata"]["rlforge"]["source_keys"]))
                 for t in picked])

    ids, built, picked = build(tmp_path / "before")
    real = standalone.task_files
    monkeypatch.setattr(standalone, "task_files", lambda verifier: {
        name: data + b"\n# a changed verifier\n" for name, data in real(verifier).items()})
    ids_after, built_after, picked_after = build(tmp_path / "after")
    assert not ids & ids_after  # every task has a new id
    assert built_after == built  # build-tasks --limit kept the same tickets
    assert len(picked) == 6 and {g for g, _ in picked} == set(gens)
    assert sorted(picked_after) == sorted(picked)  # and so does run --limit


def test_the_ci_example_calls_real_commands_with_real_flags(cli, tmp_path):
    import re
    import shlex

    import yaml

    from paths import ROOT

    workflow = yaml.safe_load((ROOT / "examples" / "github-actions-eval.yml").read_text())
    invocations = []  # the arguments of every `rlforge ...` the workflow runs
    for step in workflow["jobs"]["eval"]["steps"]:
        script = re.sub(r"\$\{\{[^}]*\}\}", "X", step.get("run", ""))
        for line in re.split(r"\n|&&|\|\|", script):
            words = shlex.split(line.split(">")[0])
            if words[:1] == ["rlforge"]:
                invocations.append(words[1:])
    assert [w[0] for w in invocations] == ["sandbox", "ingest", "ingest", "build-tasks", "run",
                                           "report"]
    for words in invocations:  # every command exists
        group = 2 if words[0] in ("sandbox", "ingest") else 1
        assert cli(*words[:group], "--help").exit_code == 0, words
    (run,) = [w for w in invocations if w[0] == "run"]
    assert {"--min-pass-rate", "--max-infra-error-rate", "--samples", "--concurrency",
            "--base-url", "--model", "--api-key-env", "--json"} <= set(run)
    # Its flags parse: the run stops at the missing tasks directory (1), not at a flag (2).
    result = cli(*run)
    assert result.exit_code == 1 and "tasks: no such directory" in result.stderr


def test_run_and_rescore_are_documented_with_every_flag(cli):
    import re

    from paths import ROOT

    readme = (ROOT / "README.md").read_text()
    for command in ("run", "rescore"):
        result = cli(command, "--help")
        assert result.exit_code == 0
        flags = set(re.findall(r"(--[a-z][a-z-]+)", result.output)) - {"--help"}
        missing = sorted(f for f in flags if f"`{f}" not in readme and f" {f}" not in readme)
        assert not missing, f"rlforge {command}: {missing} not in the README"
    assert "| `rlforge run TASKS_DIR" in readme and "| `rlforge rescore RUN_ID" in readme
    assert "| 3 | `rlforge run`" in readme and "| 4 | `rlforge run`" in readme


def test_a_build_manifest_lists_the_tasks_and_task_toml_is_read_on_first_use(cli, tmp_path,
                                                                            fault):
    import shutil

    from rlforge.taskdir import discover_tasks, load_task
    from test_run_support import built_tasks

    out = built_tasks(tmp_path, limit=4)
    listed = discover_tasks(out)
    assert len(listed) == 4 and all(t._meta is None for t in listed)
    for task in listed:  # what the manifest says is what task.toml says
        full = load_task(task.path)
        assert (task.task_id, task.generator, task.generator_version, task.verifier, task.kind,
                task.split) == (full.task_id, full.generator, full.generator_version,
                                full.verifier, full.kind, full.split)
        assert task.agent_timeout == full.agent_timeout and task.meta == full.meta
    # A directory the manifest does not list: every task.toml is read instead.
    label_task(out, "extra", "billing")
    assert {t.generator for t in discover_tasks(out)} >= {"test.answer"}
    assert all(t._meta is not None for t in discover_tasks(out))
    shutil.rmtree(next(p for p in out.iterdir() if p.name.startswith("test-answer")))
    # A task directory replaced after it was listed: its rollout is invalid, not a crash.
    first = discover_tasks(out)[0]
    toml = first.path / "task.toml"
    toml.write_text(toml.read_text().replace(first.task_id, "someone-else"))
    result, data = run_json(cli, out, "--base-url", fault.url, "--model", "ok",
                            "--max-infra-error-rate", "1")
    assert result.exit_code == 0 and (data["rollouts"], data["invalid"]) == (4, 1), result.output
    (broken,) = [r for r in rollouts_of(data["run_dir"]) if r["outcome"] == "invalid"]
    assert broken["task_id"] == first.task_id and broken["error"]["type"] == "task"
    assert "holds task someone-else" in broken["error"]["message"]
