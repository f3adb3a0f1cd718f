"""A policy cannot turn its own failure into `invalid`.

An `invalid` rollout is dropped from the pass rate, the advantages and the exports: a
policy that could make its failures look like infrastructure faults would train on a world
where it never fails. Each attack here once did that; each must now end as the command's
own failure (a result with an exit status), never as a sandbox failure.
"""

from __future__ import annotations

import os

import pytest

from rlforge.sandbox import SandboxSpec, run

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="the memory cgroup is the root path's")]

ROUNDS = 8

# Memory held where no process's RSS shows it (tmpfs pages of /tmp and /dev/shm, a memfd),
# then the limit reached from a process smaller than bubblewrap's monitor: on cgroup v1
# the OOM killer takes the largest RSS in the cgroup, which used to be the monitor.
TMPFS_THEN_SMALL_WRITER = ("head -c 90M /dev/zero > /tmp/held; "
                           "exec dd if=/dev/zero of=/dev/shm/more bs=64k 2>/dev/null")
MEMFD_THEN_EXEC = """
import os
fd = os.memfd_create("held", 0)  # no MFD_CLOEXEC: it survives the exec below
for _ in range(100):
    os.write(fd, b"x" * (1 << 20))
os.execv("/bin/dd", ["dd", "if=/dev/zero", "of=/dev/shm/more", "bs=64k"])
"""


@pytest.mark.parametrize("argv", [["bash", "-c", TMPFS_THEN_SMALL_WRITER],
                                  ["/usr/bin/python3", "-c", MEMFD_THEN_EXEC]],
                         ids=["tmpfs", "memfd"])
def test_memory_without_rss_never_costs_the_sandbox_its_monitor(argv):
    for _ in range(ROUNDS):
        r = run(argv, SandboxSpec(memory_mb=128, timeout_sec=30))
        assert r.failure is None, f"the sandbox itself was lost: {r.failure}"
        assert r.oom_killed and r.exit_code == 137, r


@pytest.mark.parametrize("bad", ["echo a\0b", "echo \ud800",
                                 # one byte over what the kernel passes in one argument
                                 "echo " + "x" * (128 * 1024 - 5),
                                 # a third of the characters, four bytes each
                                 ": " + "\U0001f600" * 33_000],
                         ids=["nul", "lone-surrogate", "128-kib", "emoji"])
def test_a_command_no_program_can_receive_is_its_own_failure(bad):
    r = run(["bash", "-c", bad], SandboxSpec(timeout_sec=10))
    assert r.failure is None and r.exit_code == 126, r
    assert b"rlforge:" in r.stderr
    env = run(["true"], SandboxSpec(timeout_sec=10, env={"X": bad}))
    assert env.failure is None and env.exit_code == 126, env


def _children(pid: int) -> list[int]:
    """Children of every thread of `pid`."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as fh:
            out += [int(p) for p in fh.read().split()]
    return out


def test_a_sandbox_lost_after_its_command_started_is_the_commands_failure():
    """Whatever ends the sandbox once its command runs (here: its monitor killed), the result
    is the command's failure when a probe with the same limits then runs cleanly."""
    import signal
    import threading
    import time

    results = []
    worker = threading.Thread(target=lambda: results.append(
        run(["bash", "-c", "echo started; sleep 20"], SandboxSpec(memory_mb=128, timeout_sec=30))))
    worker.start()
    deadline = time.monotonic() + 10
    monitor = None
    while monitor is None and time.monotonic() < deadline:
        for pid in _children(os.getpid()):
            try:
                with open(f"/proc/{pid}/comm") as fh:
                    if fh.read().strip() == "bwrap" and _children(pid):
                        monitor = pid
            except OSError:
                pass
        time.sleep(0.05)
    assert monitor is not None, "no bubblewrap monitor with a running sandbox was seen"
    time.sleep(0.3)  # the command is past its start
    os.kill(monitor, signal.SIGKILL)
    worker.join(30)
    [r] = results
    assert r.failure is None and r.exit_code == 137 and r.killed, r
    assert any("the command ended it" in note for note in r.notes), r.notes


def _call(name, arguments, call_id="c1"):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


# Replies whose bytes the policy chose, in shapes no parser expects: each once raised
# out of the environment (RecursionError from nested JSON, AttributeError from a tool
# call that is not an object), which `rlforge run` recorded as an invalid rollout and the
# Python API raised at the trainer.
MALFORMED_REPLIES = {
    "nested_arguments": _call("bash", "[" * 100_000 + "]" * 100_000),
    "nested_object_arguments": _call("bash", '{"command": ' * 50_000),
    "tool_calls_a_string": {"role": "assistant", "content": "", "tool_calls": "bash -c ls"},
    "a_call_not_an_object": {"role": "assistant", "content": "", "tool_calls": [["bash", "ls"]]},
    "function_not_an_object": {"role": "assistant", "content": "",
                               "tool_calls": [{"id": "c1", "function": "bash"}]},
    "content_an_object": {"role": "assistant", "content": {"text": ["ls"]}},
}


@pytest.mark.parametrize("reply", MALFORMED_REPLIES.values(), ids=MALFORMED_REPLIES)
def test_a_reply_no_parser_expects_is_answered_or_failed_never_raised(tmp_path, reply):
    from rlforge import envs
    from test_run_support import SUBMIT, count_task

    with envs.load(count_task(tmp_path / "tasks", "count")) as env:
        env.reset()
        _, reward, done, info = env.step(reply)
        if not done:
            _, reward, done, info = env.step(SUBMIT)
        assert done and info["outcome"] == "fail" and reward == 0.0, info


@pytest.mark.parametrize("submission", [
    {"type": "workspace", "files": {"answer.txt": {"base64": "not base64 at all!"}}, "deleted": []},
    {"type": "workspace", "files": {"answer.txt": 12}, "deleted": []},
    {"type": "workspace", "files": [["answer.txt", "12"]], "deleted": "answer.txt"},
    {"answer.txt": ["12"]},
], ids=["bad_base64", "file_not_an_object", "files_a_list", "content_a_list"])
def test_a_submission_no_parser_expects_is_its_fail(tmp_path, submission):
    from rlforge import envs
    from test_run_support import count_task

    with envs.load(count_task(tmp_path / "tasks", "count")) as env:
        reward = env.verify(submission)
        assert reward["outcome"] == "fail" and reward["total"] == 0.0, reward


def test_an_answer_that_is_a_directory_is_a_fail(tmp_path):
    """`mkdir /app/answer.txt` made every answer verifier raise IsADirectoryError: no reward
    under Harbor, verifiers and test.sh as root (found by the red team on all three)."""
    from rlforge.verify.standalone import verify

    ws = tmp_path / "app"
    (ws / "answer.txt" / "x").mkdir(parents=True)
    ref = {"verifier": "answer", "answer_kind": "label", "answer": "billing",
           "labels": ["billing", "login"], "submission": "/app/answer.txt"}
    result = verify.score(ref, str(tmp_path), workspace=str(ws))
    assert result["outcome"] == "fail" and result["total"] == 0.0, result


def test_test_sh_writes_a_fail_when_scoring_raises_on_what_the_policy_left(tmp_path, monkeypatch):
    """Whatever raises while scoring what the policy left (here: the disk its code filled,
    ENOSPC, as under Docker) is its fail, and a reward is written: never a verifier that
    exits with no reward."""
    import errno
    import json

    from rlforge.verify.standalone import entry
    from rlforge.verify.standalone.rewards import RESULT_NAME

    monkeypatch.setattr(entry, "harden", lambda: None)  # it stops other processes
    monkeypatch.setattr(entry, "protect_inputs", lambda tests_dir: None)
    monkeypatch.delenv(entry.SCORER_ENV, raising=False)
    (tmp_path / "tests").mkdir()
    ref_path = tmp_path / "tests" / "reference.json"
    ref_path.write_text(json.dumps({"verifier": "script"}))
    logs = tmp_path / "logs"
    logs.mkdir()

    def disk_full(ref, tests_dir):
        raise OSError(errno.ENOSPC, "No space left on device")

    assert entry.verifier_main(str(ref_path), str(logs), disk_full) == 0
    assert json.loads((logs / "reward.json").read_text())["reward"] == 0.0
    detail = json.loads((logs / RESULT_NAME).read_text())
    assert detail["outcome"] == "fail" and detail["reason"] == "unscorable"
    # A reference that cannot be read is the task's fault: no reward, a traceback.
    ref_path.write_text("{not json")
    with pytest.raises(ValueError):
        entry.verifier_main(str(ref_path), str(logs), disk_full)


def test_a_workspace_no_copy_can_read_is_a_fail_when_the_episode_is_cut_short(tmp_path):
    """A path past PATH_MAX in /app, then the episode ended by the driver (a context
    overflow) rather than by a step: reading the workspace raised ENAMETOOLONG outside the
    step's guard, and the rollout was invalid."""
    from rlforge import envs
    from test_run_support import bash_call, count_task

    deep = "cd /app; n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 25); do mkdir $n && cd $n; done; echo x > f"
    with envs.load(count_task(tmp_path / "tasks", "count")) as env:
        env.reset()
        env.step(bash_call(deep))
        reward = env._run(env._env.finish(None, "context_length"))
        assert reward["outcome"] == "fail" and reward["total"] == 0.0, reward


def test_a_reply_that_normalizes_to_millions_of_words_fails_at_once():
    """U+FDFA is one character that NFKC turns into 18 (three words): a million of them, 3 MB,
    made every reply gate walk three million words (43 s, past the verifier's timeout)."""
    import time

    from rlforge.verify.standalone import replies

    ref = {"verifier": "reply", "required": ["Settings > Billing"], "forbidden": ["INV-1"],
           "min_words": 10, "max_words": 120, "submission": "/app/answer.txt"}
    started = time.perf_counter()
    result = replies.score_reply(ref, "\ufdfa" * 1_000_000)
    assert time.perf_counter() - started < 2
    assert result["outcome"] == "fail" and result["reason"] == "length", result


def test_the_script_verifier_keeps_to_one_budget_across_its_cases(tmp_path):
    """Each case of a script task once had its own timeout and its own copy of the
    workspace, with nothing bounding their sum: a policy that made its workspace slow to
    copy (76,000 files) and its program slow pushed scoring past Harbor's verifier timeout,
    which records no reward at all (red team, s51). The cases now share one budget, kept
    under that timeout: what is left when a case's turn comes is all it gets, and a case
    with less than a second left is not run, the policy's fail."""
    from rlforge.verify.standalone import verify

    ws = tmp_path / "app"
    ws.mkdir()
    (ws / "data.log").write_text("".join(f"line {i}\n" for i in range(12)))
    (ws / "count.sh").write_text('sleep 3\nwc -l < "$1"\n')
    case = {"path": "/app/data.log", "answer": {"answer_kind": "numeric", "answer": 12}}
    ref = {"verifier": "script", "workspace": "/app", "programs": ["count.sh"], "timeout_sec": 10,
           "cases": [{"name": "visible", **case}, {"name": "again", **case}]}
    unbounded = verify.score(ref, str(tmp_path), workspace=str(ws))
    assert unbounded["outcome"] == "pass", unbounded  # 10 s a case: both run, both right
    bounded = verify.score({**ref, "budget_sec": 4}, str(tmp_path), workspace=str(ws))
    assert bounded["outcome"] == "fail" and bounded["reason"] == "timeout", bounded
    assert "again: not run" in bounded["components"]["correct"]["detail"], bounded
