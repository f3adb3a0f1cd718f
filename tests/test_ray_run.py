"""`rlforge run --executor ray` on a real Ray cluster (127.0.0.1 only, token auth on).

The first part is the run tests themselves — test_run.py, test_run_resume.py,
test_resume_episodes.py, test_run_repair.py and test_run_local.py, imported here unchanged — with `run.executor`
set to ray and `ray.address` to the session's Ray head for every test of this module
(the environment variables, as a user would set them; a resumed run in a subprocess
inherits them). They pass through the same CLI, the same checks of rollouts.jsonl, the
tables, resume after SIGKILL, rescore, faults, quotas, the repair task's sandbox and
venv, the embedded model.

Then what only Ray has: the same seeds give the same rollouts in content as the local
executor; two nodes (Ray's own multi-node test cluster on this machine) share the work,
task directories shipped through the object store; a node that dies mid-run hands its
rollouts to the other; the API key reaches no file Ray writes; user errors.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from test_ray_support import OBJECT_STORE_BYTES, ray_extra, ray_head  # noqa: F401  (fixtures)
from test_run import (alternate, fault, rollouts_of, run_json,  # noqa: F401
                      test_a_build_manifest_lists_the_tasks_and_task_toml_is_read_on_first_use,
                      test_a_fault_that_clears_on_retry_is_not_an_error,
                      test_a_reply_with_a_lone_surrogate_is_stored_and_loaded,
                      test_context_overflow_is_the_policys_failure_not_infra,
                      test_endpoint_faults_make_invalid_rollouts_and_the_run_completes,
                      test_generator_quota_holds_while_others_use_the_free_slots,
                      test_multi_turn_rollouts_run_commands_in_the_sandbox,
                      test_pass_rate_gate_exits_3_and_says_why,
                      test_rescore_reruns_verifiers_on_stored_submissions_only,
                      test_run_stores_every_rollout_with_stats_and_gates,
                      test_time_budget_ends_a_runaway_rollout_as_timeout,
                      test_user_errors_exit_1_with_one_line)
from test_run_local import \
    test_embedded_model_runs_single_and_multi_turn_tasks_deterministically  # noqa: F401
from test_run_repair import (repair_task,  # noqa: F401
                             test_a_patch_made_with_bash_passes_and_doing_nothing_fails)
from test_run_resume import (test_a_line_cut_short_by_a_kill_is_dropped_and_rerun,  # noqa: F401
                             test_resume_of_a_finished_run_runs_nothing_and_a_busy_run_is_refused,
                             test_sigkill_midway_then_resume_completes_exactly_once)
from test_resume_episodes import (episodes, tally_script, tally_task,  # noqa: F401
                                  test_sigkilled_multi_turn_episodes_resume_at_their_last_turn)
from test_run_support import SUBMIT, ScriptedPolicy, bash_call, count_task, label_task, script_task

pytestmark = pytest.mark.ray


@pytest.fixture(autouse=True)
def on_ray(isolated_env, ray_head, monkeypatch):  # noqa: F811
    """Every run of this module goes through Ray: executor and address from the environment."""
    monkeypatch.setenv("RLFORGE_RUN_EXECUTOR", "ray")
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", ray_head.address)
    return ray_head


VOLATILE = ("run_id", "seconds", "started_at", "finished_at", "policy_seconds")


def content(record: dict) -> dict:
    """A rollout record without what depends on the clock or the run's name."""
    out = {k: v for k, v in record.items() if k not in VOLATILE}
    out["steps"] = [{k: v for k, v in step.items() if k != "seconds"} for step in record["steps"]]
    return out


def by_seed(even, odd):
    """A step answering `even` when the request's seed is even, `odd` otherwise."""
    return lambda body: even if body["seed"] % 2 == 0 else odd


def mixed_tasks(root: Path) -> Path:
    """Single-turn (in-process), multi-turn (commands in the sandbox) and sandbox-verified
    tasks, and a policy whose every answer depends on the rollout's seed."""
    label_task(root, "label1", "billing")
    label_task(root, "label2", "login")
    count_task(root, "count")
    script_task(root, "prog")
    return root


def seeded_policy(delay: float = 0.0) -> ScriptedPolicy:
    program = "import sys\nprint(sum(1 for _ in open(sys.argv[1])))\n"
    return ScriptedPolicy({
        "label1": [by_seed("ANSWER: billing", "ANSWER: login")],
        "label2": [by_seed("ANSWER: login", "not sure")],
        "count": [by_seed(bash_call("wc -l < data.log > answer.txt", "c1"),
                          bash_call("echo 11 > answer.txt", "c1")), SUBMIT],
        "prog": [by_seed(bash_call(f"cat > count.py <<'EOF'\n{program}EOF"),
                         bash_call("echo 'print(0)' > count.py")), "SUBMIT"],
    }, delay=delay).start()


def on_both_executors(cli, tasks: Path, policy: ScriptedPolicy, *args: str):
    """The same run with each executor: {executor: its JSON summary}, and the records of
    the local and the Ray run, each by rollout id. Stops the policy."""
    runs = {}
    try:
        for executor in ("local", "ray"):
            result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m", *args,
                                    "--executor", executor)
            assert result.exit_code == 0, result.output
            runs[executor] = data
    finally:
        policy.stop()
    local, ray = (sorted(rollouts_of(runs[e]["run_dir"]), key=lambda r: r["rollout_id"])
                  for e in ("local", "ray"))
    return runs, local, ray


def test_same_seeds_give_the_same_rollouts_as_the_local_executor(cli, tmp_path):
    runs, local, ray = on_both_executors(cli, mixed_tasks(tmp_path / "tasks"), seeded_policy(),
                                         "--samples", "4", "--seed", "5", "--concurrency", "6")
    assert len(local) == len(ray) == 16
    assert [content(r) for r in ray] == [content(r) for r in local]
    # The seeds made a difference: both outcomes, commands in the sandbox, both scorers.
    assert {r["outcome"] for r in ray} == {"pass", "fail"}
    assert {r["scored_by"] for r in ray} == {"in_process", "sandbox"}
    assert sum(r["commands"] for r in ray) == 8
    config = json.loads((Path(runs["ray"]["run_dir"]) / "config.json").read_text())
    assert config["settings"]["run.executor"] == {"value": "ray", "source": "flag"}


def test_the_api_key_reaches_the_endpoint_and_no_file_ray_writes(cli, tmp_path, ray_head,
                                                                 monkeypatch):
    key = "sk-test-ray-" + "7c1e9a" * 4
    monkeypatch.setenv("MY_KEY", key)
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    count_task(tasks, "count")
    with ScriptedPolicy({"a": ["ANSWER: billing"],
                         "count": [bash_call("wc -l < data.log > answer.txt"), SUBMIT]}) as policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m",
                                "--api-key-env", "MY_KEY")
    assert result.exit_code == 0 and data["pass"] == 2, result.output
    assert set(policy.authorizations) == {f"Bearer {key}"}
    leaks = [str(p) for root in (ray_head.root, Path(data["run_dir"]))
             for p in root.rglob("*") if p.is_file() and not p.is_symlink()
             and key.encode() in _read(p)]
    assert leaks == []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # sockets, files gone meanwhile
        return b""


def test_ray_user_errors_are_one_line(cli, tmp_path, monkeypatch):
    tasks = tmp_path / "tasks"
    label_task(tasks, "a", "billing")
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", "127.0.0.1:9")
    result = cli("run", tasks, "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert result.exit_code == 1
    assert "no Ray cluster answers at 127.0.0.1:9" in result.stderr
    result = cli("run", tasks, "--base-url", "http://127.0.0.1:9/v1", "--executor", "spark")
    assert result.exit_code == 1 and "'spark' is not one of local, ray" in result.stderr
    assert "Traceback" not in result.output


# --- several nodes -----------------------------------------------------------------------

@pytest.fixture
def two_nodes(ray_extra, tmp_path):  # noqa: F811
    """Ray's multi-node test cluster: a head and a second node (raylets of their own) on
    this machine, 127.0.0.1 only like the session's head."""
    from ray.cluster_utils import Cluster

    root = tempfile.mkdtemp(prefix="rlforge-test-ray2-", dir="/tmp")  # short: socket paths
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "temp_dir": root,
        "object_store_memory": OBJECT_STORE_BYTES})
    second = cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
    cluster.wait_for_nodes()
    try:
        yield cluster, second
    finally:
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def test_ray_check_starts_a_worker_on_every_node_and_says_who_sees_the_tasks(cli, tmp_path,
                                                                              two_nodes):
    cluster, _ = two_nodes
    tasks = mixed_tasks(tmp_path / "tasks")
    result = cli("ray", "check", tasks, "--ray-address", cluster.address, "--json")
    assert result.exit_code == 0, result.output
    nodes = json.loads(result.stdout)["nodes"]
    assert len({n["node_id"] for n in nodes}) == 2
    assert all(n["sees_tasks"] is True and n["sandboxes"] >= 1 and n["cpus"] >= 1 for n in nodes)
    result = cli("ray", "check", "--ray-address", cluster.address)
    assert result.exit_code == 0 and "2 node(s), every worker started" in result.stdout
    result = cli("ray", "check", tmp_path / "missing", "--ray-address", cluster.address)
    assert result.exit_code == 1 and "missing: no such directory" in result.stderr


def test_concurrency_below_the_number_of_nodes_still_holds(cli, tmp_path, two_nodes,
                                                             monkeypatch):
    cluster, _ = two_nodes
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", cluster.address)
    tasks = tmp_path / "tasks"
    for i in range(4):
        label_task(tasks, f"t{i}", "billing")
    with ScriptedPolicy({}, delay=0.3) as policy:
        result, data = run_json(cli, tasks, "--base-url", policy.url, "--model", "m",
                                "--concurrency", "1")
    assert result.exit_code == 0 and data["rollouts"] == 4, result.output
    spans = sorted((r["started_at"], r["finished_at"]) for r in rollouts_of(data["run_dir"]))
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))  # one at a time


def test_capacities_share_exactly_by_sandboxes():
    from rlforge.execution.ray.cluster import Worker
    from rlforge.execution.ray.dispatch import capacities

    a, b, c = (Worker(None, f"n{i}", "h", sandboxes, 1, True) for i, sandboxes in
               enumerate((4, 4, 8)))
    assert capacities([a, b], 5) == {a: 3, b: 2}
    assert capacities([a, b], 1) == {a: 1, b: 0}
    assert capacities([a, b, c], 16) == {a: 4, b: 4, c: 8}
    assert capacities([a, b, c], 3) == {a: 1, b: 1, c: 1}  # remainders .75, .75, .5
    assert capacities([a, b, c], 6) == {a: 2, b: 1, c: 3}
    assert sum(capacities([a, b, c], 1001).values()) == 1001


def node_counts(caplog) -> list[int]:
    (line,) = [r.getMessage() for r in caplog.records
               if r.getMessage().startswith("rollouts per Ray node: ")]
    return [int(part.rsplit(" ", 1)[1]) for part in line.split(": ", 1)[1].split(", ")]


def test_two_nodes_share_the_rollouts_with_task_directories_shipped(cli, tmp_path, two_nodes,
                                                                    monkeypatch, caplog):
    cluster, _ = two_nodes
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", cluster.address)
    monkeypatch.setenv("RLFORGE_RAY_TASK_FILES", "ship")
    caplog.set_level(logging.INFO, logger="rlforge.execution.ray")
    _, local, ray = on_both_executors(cli, mixed_tasks(tmp_path / "tasks"), seeded_policy(0.05),
                                      "--samples", "3", "--seed", "2", "--concurrency", "4")
    assert [content(r) for r in ray] == [content(r) for r in local]
    counts = node_counts(caplog)
    assert len(counts) == 2 and sum(counts) == 12 and min(counts) >= 2


def run_losing_a_node(cli, tasks: Path, policy: ScriptedPolicy, two_nodes, concurrency: str,
                      ready) -> tuple:
    """Run `tasks` on the two-node cluster and remove the second node once `ready()`
    (within 120 s); the run's result and JSON summary. Stops the policy."""
    cluster, second = two_nodes

    def kill_second_node():
        deadline = time.monotonic() + 120
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        cluster.remove_node(second)

    killer = threading.Thread(target=kill_second_node)
    killer.start()
    try:
        return run_json(cli, tasks, "--base-url", policy.url, "--model", "m",
                        "--concurrency", concurrency)
    finally:
        killer.join()
        policy.stop()


def test_a_node_that_dies_hands_its_rollouts_to_the_other(cli, tmp_path, two_nodes, monkeypatch,
                                                          caplog):
    cluster, _ = two_nodes
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", cluster.address)
    tasks = tmp_path / "tasks"
    for i in range(8):
        label_task(tasks, f"t{i}", "billing")
    policy = ScriptedPolicy({f"t{i}": ["ANSWER: billing"] for i in range(8)}, delay=2.0).start()

    result, data = run_losing_a_node(cli, tasks, policy, two_nodes, "8",
                                     lambda: len(policy.requests) >= 8)
    assert result.exit_code == 0, result.output
    records = rollouts_of(data["run_dir"])
    assert sorted(r["task_id"] for r in records) == sorted(p.name for p in tasks.iterdir())
    assert {r["outcome"] for r in records} == {"pass"}
    # The second node's rollouts were played again on the first: more requests than rollouts.
    moved = len(policy.requests) - 8
    assert moved >= 1
    assert any("is gone" in r.getMessage() and f"its {moved} items move" in r.getMessage()
               for r in caplog.records)


def test_episodes_of_a_node_that_dies_continue_on_the_other_from_their_snapshots(
        cli, tmp_path, two_nodes, monkeypatch):
    """The runs directory is on a path both nodes see: a lost node's multi-turn episodes
    continue on the other from their last turn, and end as a run never interrupted."""
    cluster, _ = two_nodes
    monkeypatch.setenv("RLFORGE_RAY_ADDRESS", cluster.address)
    tasks = tmp_path / "tasks"
    names = ["ta", "tb", "tc", "td"]
    for name in names:
        tally_task(tasks, name)
    policy = ScriptedPolicy({name: tally_script(12) for name in names}, delay=0.2).start()

    def three_turns_in() -> bool:
        played = episodes(policy.requests)
        return len(played) == 4 and all(max(turns) >= 3 for turns in played.values())

    result, data = run_losing_a_node(cli, tasks, policy, two_nodes, "4", three_turns_in)
    assert result.exit_code == 0, result.output
    records = rollouts_of(data["run_dir"])
    assert {r["outcome"] for r in records} == {"pass"} and len(records) == 4
    moved = [r for r in records if r["resumed"]]
    assert moved, "no episode moved to the other node"
    assert all(e["after_turn"] >= 3 and "restarted" not in e for r in moved for e in r["resumed"])
    for episode, turns in episodes(policy.requests).items():  # none went back to turn 1
        assert turns == sorted(turns), f"{episode} went back: {turns}"
    assert all(r["turns"] == 14 for r in records)


# --- what a worker refuses -------------------------------------------------------------------

def test_a_worker_of_another_rlforge_version_refuses_to_serve():
    import asyncio

    from rlforge import __version__
    from rlforge.execution.ray.worker import NodeWorker

    answer = asyncio.run(NodeWorker().hello({
        "version": "0.0.0-elsewhere", "sandbox_workers": 1, "sandbox_mode": "none",
        "needs_sandbox": False, "cache_dir": None, "probe": []}))
    assert answer == {"error": f"it runs rlforge {__version__} and this machine rlforge "
                               "0.0.0-elsewhere; install the same version on every node"}


def test_a_task_too_big_to_ship_is_an_invalid_rollout_that_says_why(tmp_path, ray_head, fault):
    import asyncio

    from rlforge.execution.ray.cluster import TaskFiles, close_workers, connected, start_workers
    from rlforge.execution.ray.dispatch import Dispatcher
    from rlforge.execution.ray.rollouts import RayRolloutRunner
    from rlforge.run import EnvOptions
    from rlforge.taskdir import load_task

    task = load_task(label_task(tmp_path / "tasks", "a", "billing"))

    async def play(ray):
        workers = await start_workers(ray, sandbox_workers=1, sandbox_mode="none",
                                      needs_sandbox=False, cache_dir=None, probe=[],
                                      task_files="ship")
        try:
            env = EnvOptions(sandbox_mode="none").__dict__
            await workers[0].handle.open_run.remote(
                {"run_id": "big", "seed": 0, "time_budget": 0, "env": env},
                {"base_url": fault.url, "model": "ok", "stop": []}, "", 1)
            dispatcher = Dispatcher(workers, "rollout", {workers[0]: 1})
            files = TaskFiles(ray, ship=True, max_bytes=100)
            try:
                return await RayRolloutRunner(dispatcher, files).rollout(task, 0), files
            finally:
                await dispatcher.close()
        finally:
            await close_workers(ray, workers)

    with connected(ray_head.address) as ray:
        record, files = asyncio.run(play(ray))
    assert (record["outcome"], record["error"]["type"], record["error"]["infra"]) == \
        ("invalid", "task", True)
    assert "more than the 0 MB shipped through Ray's object store" in record["error"]["message"]
    assert files.shipped == 0 and fault.requests == 0  # nothing shipped, the model not asked
