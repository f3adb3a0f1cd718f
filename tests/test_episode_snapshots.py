"""Episode snapshots on real task directories, real files and real bwrap: the workspace
round trip, `rlforge.envs` save/restore, and budgets that count the turns and time before
a resume."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from pathlib import Path

import pytest

from rlforge import envs
from rlforge.errors import SnapshotMismatch
from rlforge.run.workspace import WorkspaceTracker, rebuild, scan, tree_digest
from rlforge.verify.runner import fresh_workspace
from test_resume_episodes import tally_script, tally_task
from test_run_support import ScriptedPolicy


def listing(root: Path) -> dict[str, tuple]:
    """Everything below `root`, read independently of rlforge: kind, mode, modification
    time, bytes or target."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path), st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            elif stat.S_ISFIFO(st.st_mode):
                out[rel] = ("fifo", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_mtime_ns,
                            hashlib.sha256(Path(path).read_bytes()).hexdigest())
    return out


def test_a_workspace_difference_rebuilds_byte_for_byte(tmp_path):
    task = tally_task(tmp_path / "tasks", "ta")
    ws = fresh_workspace(task, tmp_path)
    tracker = WorkspaceTracker(ws)
    blobs = tmp_path / "blobs"
    first = tracker.capture(blobs)
    assert first.workspace["changed"] == {} and first.workspace["removed"] == []
    assert first.bytes_read == 0 and first.bytes_stored == 0  # hashed once, at the start
    # Every kind of change a policy's commands can leave.
    (ws / "acc.txt").write_bytes(b"x" * 5000)
    (ws / "data.log").unlink()
    (ws / "keep" / "notes.md").chmod(0o755)  # same bytes, new mode
    (ws / "link").symlink_to("../outside/secret")
    os.mkfifo(ws / "pipe", 0o640)
    (ws / "keep2").mkdir(0o750)
    (ws / "keep2" / "empty").mkdir()
    name = os.fsdecode(b"caf\xe9-not-utf8.bin")
    (ws / name).write_bytes(bytes(range(256)))
    (ws / "copy.log").write_bytes(b"one\ntwo\n")  # the bytes of the file deleted
    deep = ws.joinpath(*[f"d{i}" for i in range(20)])
    deep.mkdir(parents=True)
    (deep / "leaf").write_bytes(b"deep\n")
    second = tracker.capture(blobs)
    changed = second.workspace["changed"]
    assert second.workspace["removed"] == ["data.log"]
    assert changed["keep/notes.md"][0:2] == ("file", 0o755) and "link" in changed
    # Stored: only the bytes not in the starting workspace at the same path.
    assert second.bytes_stored == 5000 + 256 + 8 + 5
    assert second.bytes_read == 5000 + 256 + 8 + 5 + len(b"# notes\n")  # the chmod'ed one too
    # Turn 3: one file changes, one is replaced by a directory: only it is read again.
    (ws / "acc.txt").write_bytes(b"y" * 7)
    (ws / "copy.log").unlink()
    (ws / "copy.log").mkdir()
    os.utime(ws / "keep" / "readme.txt", ns=(10**18, 10**18))  # touched: only its time moves
    third = tracker.capture(blobs)
    assert third.bytes_read == 7 + len(b"untouched, or only touched\n")
    assert third.bytes_stored == 7 and "keep/readme.txt" not in third.workspace["changed"]
    assert set(os.listdir(blobs)) >= third.blobs
    expected = listing(ws)
    for name_ in ("again", "bad", "gone", "esc"):
        (tmp_path / name_).mkdir()
    rebuilt, base = rebuild(task, third.workspace, blobs, tmp_path / "again")
    assert listing(rebuilt) == expected
    assert tree_digest(scan(rebuilt)[0]) == third.workspace["tree"] == tree_digest(scan(ws)[0])
    assert base == (tracker.base, tracker.base_times)
    # A blob that is not what was hashed, or gone: refused, never a partial workspace.
    blob = blobs / changed[name][2]
    blob.write_bytes(b"other")
    with pytest.raises(SnapshotMismatch, match="damaged"):
        rebuild(task, third.workspace, blobs, tmp_path / "bad")
    blob.unlink()
    with pytest.raises(SnapshotMismatch, match="missing"):
        rebuild(task, third.workspace, blobs, tmp_path / "gone")
    with pytest.raises(SnapshotMismatch, match="not a path in the workspace"):
        rebuild(task, {**third.workspace, "removed": ["../../etc"]}, blobs, tmp_path / "esc")
    # An entry below a link (which no scan lists) is refused, not written through it.
    blob.write_bytes(bytes(range(256)))
    through = {**third.workspace, "changed": {**third.workspace["changed"],
                                              "link/escaped": ("file", 0o644, "0" * 64)}}
    with pytest.raises(SnapshotMismatch, match="below the link"):
        rebuild(task, through, blobs, tmp_path / "esc")
    assert not (tmp_path / "esc" / "outside").exists()  # where the link points from there


def play(env, steps):
    out = None
    for step in steps:
        out = env.step(step)
    return out


def test_envs_save_and_restore_continue_an_episode_elsewhere(tmp_path):
    task = tally_task(tmp_path / "tasks", "ta")
    script = tally_script(12)
    with envs.load(task) as env:  # the episode in one go
        env.reset()
        _, whole_reward, done, whole = play(env, script)
        whole_messages = list(env.messages)
    assert done and whole["outcome"] == "pass"

    with envs.load(task) as env:
        env.reset()
        play(env, script[:5])
        cost = env.save(tmp_path / "ckpt")
        assert cost.bytes_written > 0 and cost.seconds > 0
        at_save = list(env.messages)
    with envs.load(task) as env:  # another environment (as another process would)
        messages = env.restore(tmp_path / "ckpt")
        assert messages == at_save
        _, reward, done, info = play(env, script[5:])
        assert (reward, info["outcome"], info["turns"]) == (whole_reward, "pass", whole["turns"])
        assert env.messages == whole_messages
        assert info["submission"] == whole["submission"]
        with pytest.raises(SnapshotMismatch, match="under way"):
            env.save(tmp_path / "over")
    # Another task's snapshot, or one whose workspace does not hash: refused.
    other = tally_task(tmp_path / "tasks", "tb")
    with envs.load(other) as env:
        with pytest.raises(SnapshotMismatch, match="is of task"):
            env.restore(tmp_path / "ckpt")
        with pytest.raises(SnapshotMismatch, match="no episode saved"):
            env.restore(tmp_path / "nothing")
    for blob in (tmp_path / "ckpt" / "blobs").iterdir():
        blob.write_bytes(b"tampered\n")
    with envs.load(task) as env:
        with pytest.raises(SnapshotMismatch):
            env.restore(tmp_path / "ckpt")
        assert [m["role"] for m in env.messages] == ["system", "user"]  # as reset leaves it


def test_a_resumed_episode_counts_its_earlier_turns_and_time(tmp_path):
    """Resuming buys nothing: max_turns counts the turns before the cut, the time budget
    the time before it."""
    from rlforge.policy import PolicyClient, PolicyConfig
    from rlforge.records import EnvOptions
    from rlforge.run import RolloutRunner
    from rlforge.run.snapshot import EpisodeSnapshots
    from rlforge.sandbox import SandboxPool
    from rlforge.taskdir import load_task
    from rlforge.verify.runner import TaskRunner

    task = load_task(tally_task(tmp_path / "tasks", "ta"))
    snapshots = EpisodeSnapshots(tmp_path / "snapshots")

    async def session(policy, options, budget, cut_after=None):
        async with PolicyClient(PolicyConfig(base_url=policy.url, model="m"), api_key="") as client, \
                SandboxPool(2) as pool:
            runner = RolloutRunner(client, options, TaskRunner(pool, "bwrap"), tmp_path,
                                   run_id="r", run_seed=0, time_budget=budget,
                                   snapshots=snapshots)
            play = asyncio.create_task(runner.rollout(task, 0))
            if cut_after is None:
                return await play
            while True:  # a kill: the task is gone mid-episode, its snapshot stays
                doc = snapshots.load(f"{task.task_id}#0")
                if doc and doc["episode"]["turns"] >= cut_after:
                    play.cancel()
                    await asyncio.gather(play, return_exceptions=True)
                    return doc
                await asyncio.sleep(0.01)

    with ScriptedPolicy({"ta": tally_script(12)}, delay=0.05) as policy:
        capped = EnvOptions(max_turns=6)
        cut = asyncio.run(session(policy, capped, 60, cut_after=4))
        before = len(policy.requests)
        record = asyncio.run(session(policy, capped, 60))
        assert (record["ended_by"], record["turns"], record["commands"]) == ("max_turns", 6, 6)
        assert len(policy.requests) - before <= 3  # turn 5 or 6 (if cut in flight), not 1-4
        assert record["resumed"][0]["after_turn"] == cut["episode"]["turns"]
        assert record["seconds"] >= cut["seconds"] and record["requests"] >= 6

    with ScriptedPolicy({"ta": tally_script(12)}, delay=0.4) as policy:
        snapshots.discard(f"{task.task_id}#0")
        cut = asyncio.run(session(policy, EnvOptions(), 3.0, cut_after=3))
        spent = cut["budget_seconds"]
        assert 1.2 < spent < 3.0
        before = len(policy.requests)
        record = asyncio.run(session(policy, EnvOptions(), 3.0))
        # What was left of 3 s after the cut: a few more turns, then the budget ends it.
        assert record["outcome"] == "timeout" and record["resumed"]
        assert len(policy.requests) - before <= (3.0 - spent) / 0.4 + 2
        assert record["turns"] < 14
        # Its earlier turns are on the record, before and after the cut.
        assert sum(m["role"] == "assistant" for m in record["messages"]) == record["turns"]
        assert record["messages"][:len(cut["episode"]["messages"])] == cut["episode"]["messages"]


def test_any_sequence_of_changes_rebuilds_exactly(tmp_path):
    """Property: whatever a policy does to its workspace over several turns (files written,
    rewritten, removed, chmod'ed, touched; directories, links, FIFOs; one kind replaced by
    another), each turn's difference rebuilds that turn's workspace exactly."""
    import itertools
    import shutil

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from rlforge.taskdir import WORKSPACE

    names = st.sampled_from(["a", "b", "c.py", "d/e", "d/f", "g/h/i", "caf\udce9"])
    action = st.one_of(
        st.tuples(st.just("write"), names, st.binary(max_size=64)),
        st.tuples(st.just("remove"), names, st.none()),
        st.tuples(st.just("chmod"), names, st.sampled_from([0o600, 0o755, 0o444])),
        st.tuples(st.just("touch"), names, st.integers(10**15, 10**18)),
        st.tuples(st.just("link"), names, st.sampled_from(["a", "../x", "/etc/passwd"])),
        st.tuples(st.just("fifo"), names, st.none()),
        st.tuples(st.just("mkdir"), names, st.none()),
    )
    counter = itertools.count()

    def apply(ws: Path, what: str, rel: str, arg) -> None:
        path = ws / rel
        if what != "remove":
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.parent.is_symlink() or not path.parent.is_dir():
                return
        exists = path.is_symlink() or path.exists()
        if what == "write":
            if exists and (path.is_symlink() or not path.is_file()):
                return
            path.write_bytes(arg)
        elif what == "remove" and exists:
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        elif what in ("chmod", "touch") and exists and not path.is_symlink():
            if what == "chmod" and not path.is_dir():
                path.chmod(arg)
            elif what == "touch":
                os.utime(path, ns=(arg, arg))
        elif what in ("link", "fifo", "mkdir") and not exists:
            {"link": lambda: path.symlink_to(arg), "fifo": lambda: os.mkfifo(path),
             "mkdir": lambda: path.mkdir()}[what]()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.lists(action, max_size=8), min_size=1, max_size=4))
    def check(turns):
        case = tmp_path / f"case{next(counter)}"
        task = case / "task"
        app = task / WORKSPACE
        (app / "d").mkdir(parents=True)
        (app / "a").write_bytes(b"start a\n")
        (app / "d" / "e").write_bytes(b"start e\n")
        ws = fresh_workspace(task, case)
        tracker = WorkspaceTracker(ws)
        for n, actions in enumerate(turns):
            for what, rel, arg in actions:
                apply(ws, what, rel, arg)
            captured = tracker.capture(case / "blobs")
            (case / f"r{n}").mkdir()
            rebuilt, _ = rebuild(task, captured.workspace, case / "blobs", case / f"r{n}")
            assert listing(rebuilt) == listing(ws)
        shutil.rmtree(case)

    check()
