"""Episode snapshots: a run SIGKILLed mid multi-turn episodes resumes each at its last
complete turn, never from its first, and ends as a run never killed ends."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from test_run_support import SUBMIT, ScriptedPolicy, bash_call, make_task

RLFORGE = [sys.executable, "-m", "rlforge"]
LINES = 12  # what a passing episode accumulates in /app/acc.txt


def tally_task(root: Path, name: str) -> Path:
    """A terminal task: write the number of lines of /app/acc.txt into /app/answer.txt;
    it passes when that is 12."""
    reference = {"verifier": "answer", "answer_kind": "numeric", "answer": LINES,
                 "submission": "/app/answer.txt"}
    return make_task(root, name, kind="terminal", generator="test.tally", reference=reference,
                     instruction=f"Make /app/acc.txt {LINES} lines long and write its line "
                                 f"count to /app/answer.txt. [script:{name}]",
                     workspace={"data.log": b"one\ntwo\n", "keep/notes.md": b"# notes\n",
                                "keep/readme.txt": b"untouched, or only touched\n"})


def tally_script(appends: int) -> list:
    """One line appended per turn (each turn's output depends on every earlier turn's
    files), a symlink, a mode change, a deletion and a new directory on the way; then the
    count is written and submitted."""
    turns = []
    for i in range(appends):
        command = f"echo line{i} >> /app/acc.txt && wc -l < /app/acc.txt && cat /app/acc.txt | md5sum"
        if i == 2:
            command += " && ln -s acc.txt /app/link && chmod +x /app/acc.txt && rm /app/data.log"
        if i == 4:
            command += " && mkdir -p /app/sub/deep && cp /app/acc.txt /app/sub/deep/copy && readlink /app/link && stat -c %a /app/acc.txt"
        turns.append(bash_call(command, f"call_{i}"))
    turns.append(bash_call("wc -l < /app/acc.txt > /app/answer.txt && cat /app/answer.txt",
                           "call_answer"))
    turns.append(SUBMIT)
    return turns


APPENDS = {"ta": 12, "tb": 10, "tc": 12, "td": 9, "te": 12, "tf": 11}


def turn_of(body: dict) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def episodes(requests: list[dict]) -> dict[tuple[str, int], list[int]]:
    """Per rollout (script, seed), the turn each of its requests asked, in order."""
    out: dict[tuple[str, int], list[int]] = defaultdict(list)
    for body in requests:
        out[(ScriptedPolicy.script_name(body), body["seed"])].append(turn_of(body))
    return out


def records_of(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_bytes().splitlines()] if log.exists() else []


def deepest_turn(requests: list[dict]) -> int:
    """The furthest turn any episode asked for among `requests`."""
    return max((turn_of(body) for body in requests), default=0)


def snapshot_turns(run_dir: Path) -> int:
    """Turns snapshotted so far, over every episode under way."""
    total = 0
    for episode in (run_dir / "snapshots").glob("*/episode.json"):
        try:
            total += json.loads(episode.read_bytes())["episode"]["turns"]
        except (OSError, ValueError, KeyError):
            pass  # replaced while read
    return total


@pytest.mark.slow
def test_sigkilled_multi_turn_episodes_resume_at_their_last_turn(tmp_path):
    tasks = tmp_path / "tasks"
    for name in APPENDS:
        tally_task(tasks, name)
    planned = {(p.name, s) for p in tasks.iterdir() for s in (0, 1)}
    scripts = {name: tally_script(n) for name, n in APPENDS.items()}
    run_dir = tmp_path / "runs" / "killed"
    log = run_dir / "rollouts.jsonl"
    flags = ["--samples", "2", "--concurrency", "3", "--quiet"]

    with ScriptedPolicy(scripts, delay=0.12) as policy:
        args = ["--base-url", policy.url, "--model", "scripted"]
        kills = 0
        command = [*RLFORGE, "run", str(tasks), *args, *flags, "--run-id", "killed"]
        while kills < 3:
            seen = len(policy.requests)
            proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            # Kill once this session played some turns and an episode is 3 turns in.
            while len(policy.requests) < seen + 20 or deepest_turn(policy.requests[seen:]) < 3:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the run played too few turns"
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            assert len(records_of(log)) < len(planned), "kill the run midway, not at its end"
            command = [*RLFORGE, "run", "--resume", "killed", "--quiet"]
        killed_requests = list(policy.requests)
        finished = subprocess.run([*RLFORGE, "run", "--resume", "killed", "--json"],
                                  cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert finished.returncode in (0, 3), finished.stderr
        report = json.loads(finished.stdout)
        all_requests = list(policy.requests)

        # The same run never killed, against the same policy: what resuming must equal.
        policy.requests.clear()
        clean = subprocess.run([*RLFORGE, "run", str(tasks), *args, *flags, "--run-id", "clean",
                                "--json"], cwd=tmp_path, capture_output=True, text=True,
                               timeout=300)
        assert clean.returncode in (0, 3), clean.stderr
        clean_requests = list(policy.requests)

    # The policy saw each episode go forward: never a turn asked again once the next was
    # asked (a restart from turn 1 would ask turn 0 again); a turn asked twice is one a
    # kill cut off in flight, at most once per kill.
    for episode, turns in episodes(all_requests).items():
        assert turns == sorted(turns), f"{episode} went back: {turns}"
        assert len(turns) - len(set(turns)) <= kills, f"{episode} repeated turns: {turns}"
    assert len(episodes(all_requests)) == len(planned)
    # Earlier turns cost nothing again: the killed run asked only the in-flight turns twice.
    assert len(all_requests) - len(clean_requests) <= kills * 3
    assert len(killed_requests) < len(all_requests)

    records = records_of(log)
    keys = [(r["task_id"], r["sample"]) for r in records]
    # Every rollout complete, none twice.
    assert len(keys) == len(set(keys)) == len(planned) and set(keys) == planned
    assert (report["rollouts"], report["complete"]) == (len(planned), True)
    assert report["session"]["episodes_resumed"] >= 1  # the last kill cut some off too
    assert report["session"]["episodes_restarted"] == 0
    # Resumed mid-way, from a snapshot that restored (never restarted from scratch).
    resumed = [r for r in records if r["resumed"]]
    assert resumed, "no episode was cut off mid-way"
    assert all("restarted" not in entry for r in records for entry in r["resumed"])
    # (after turn 0 only with the first turn's reply kept: cut off while its commands ran)
    assert all(entry["after_turn"] >= 1 or entry.get("reply_kept")
               for r in resumed for entry in r["resumed"])
    assert not any((run_dir / "snapshots").iterdir()), "snapshots outlived their rollouts"

    # Rewards, turns and the conversations equal the run never killed (same seeds).
    clean_records = {r["rollout_id"]: r for r in records_of(tmp_path / "runs" / "clean" / "rollouts.jsonl")}
    assert len(clean_records) == len(planned)
    outcomes = set()
    for r in records:
        c = clean_records[r["rollout_id"]]
        assert (r["reward"], r["outcome"], r["turns"], r["commands"], r["seed"]) == \
            (c["reward"], c["outcome"], c["turns"], c["commands"], c["seed"]), r["rollout_id"]
        assert r["messages"] == c["messages"], r["rollout_id"]
        assert [s["command"] for s in r["steps"]] == [s["command"] for s in c["steps"]]
        assert r["submission"] == c["submission"]
        assert r["requests"] >= c["requests"] and r["prompt_tokens"] >= c["prompt_tokens"]
        outcomes.add(r["outcome"])
    assert outcomes == {"pass", "fail"}  # both kinds of ending went through a resume


def test_a_snapshot_that_does_not_restore_restarts_the_episode_and_says_so(tmp_path):
    """A damaged snapshot is never continued from: the episode starts again from its first
    turn, and the record says why."""
    from rlforge.run.snapshot import BLOBS

    tasks = tmp_path / "tasks"
    tally_task(tasks, "ta")
    run_dir = tmp_path / "runs" / "r"
    with ScriptedPolicy({"ta": tally_script(12)}, delay=0.1) as policy:
        proc = subprocess.Popen([*RLFORGE, "run", str(tasks), "--base-url", policy.url,
                                 "--model", "scripted", "--run-id", "r", "--quiet"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while snapshot_turns(run_dir) < 6:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the run played too few turns"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        (snapshot,) = (run_dir / "snapshots").iterdir()
        cut_at = json.loads((snapshot / "episode.json").read_bytes())["episode"]["turns"]
        blobs = list((snapshot / BLOBS).iterdir())
        assert blobs, "acc.txt is new: its content is a blob"
        for blob in blobs:
            blob.write_bytes(b"not what was hashed\n")
        before = len(policy.requests)
        result = subprocess.run([*RLFORGE, "run", "--resume", "r", "--json"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        asked = [turn_of(b) for b in policy.requests[before:]]
    session = json.loads(result.stdout)["session"]
    assert (session["episodes_resumed"], session["episodes_restarted"]) == (0, 1)
    (record,) = records_of(run_dir / "rollouts.jsonl")
    assert asked[0] == 0 and asked == sorted(asked)  # from the first turn, not the last
    (entry,) = record["resumed"]
    assert entry["after_turn"] == 0 and entry["snapshot_turn"] == cut_at >= 6
    assert "damaged" in entry["restarted"]
    # Restarted whole: scored on a workspace played from the start.
    assert (record["outcome"], record["turns"]) == ("pass", 14)
    assert not any((run_dir / "snapshots").iterdir())


@pytest.mark.slow
def test_a_turn_cut_off_while_its_commands_run_is_not_asked_again(tmp_path):
    """The model's reply is kept as it arrives: a kill while the turn's command runs plays
    that turn again from the same reply, and the policy is asked each turn once."""
    tasks = tmp_path / "tasks"
    tally_task(tasks, "ta")
    script = tally_script(4)
    slow = 2
    script[slow] = bash_call("sleep 4 && echo slow >> /app/acc.txt && wc -l < /app/acc.txt",
                             "call_slow")
    run_dir = tmp_path / "runs" / "r"
    with ScriptedPolicy({"ta": script}) as policy:
        proc = subprocess.Popen([*RLFORGE, "run", str(tasks), "--base-url", policy.url,
                                 "--model", "scripted", "--run-id", "r", "--quiet"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while deepest_turn(policy.requests) < slow:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the slow turn never started"
            time.sleep(0.01)
        time.sleep(1.0)  # answered at once: its command is running
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        asked_before = [turn_of(b) for b in policy.requests]
        assert asked_before[-1] == slow, asked_before
        result = subprocess.run([*RLFORGE, "run", "--resume", "r", "--json"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode in (0, 3), result.stderr
        asked = [turn_of(b) for b in policy.requests]
    assert asked == list(range(len(script))), asked  # every turn asked once, none again
    (record,) = records_of(run_dir / "rollouts.jsonl")
    assert record["resumed"][-1]["after_turn"] == slow and record["resumed"][-1]["reply_kept"]
    assert record["turns"] == len(script) and record["requests"] == len(script)
    cmds = [s["command"] for s in record["steps"]]
    assert cmds.count(cmds[slow]) == 1 and "sleep 4" in cmds[slow]
