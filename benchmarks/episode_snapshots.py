"""What episode snapshots cost per turn, and the model calls they save after a kill.

1. Overhead per turn. On real tasks built from `sample_data/` (commits.repair from the
   sample repository, logs.script from the sample logs) it plays 20-turn terminal
   episodes through `Environment` with the real sandbox: reading files, editing them,
   running the task's test suite or a script (which leaves caches behind), and after
   every turn takes the snapshot `rlforge run` takes (`rlforge.run.snapshot.save`). It
   prints, per task kind, the median and largest snapshot time and bytes written per turn,
   next to the median command time of the turn and the workspace's size (what a full copy
   per turn would write), then restores the last snapshot and checks its hash.
2. Model calls saved. A real `rlforge run` subprocess plays 20-turn episodes on the 8
   logs.script tasks against a scripted policy server on 127.0.0.1 (--latency seconds
   per answer, standing in for a model) and is SIGKILLed once half of the run's model
   calls were made; then `rlforge run --resume` finishes it. The same is done again with
   the snapshots deleted after the kill (what a resume did before snapshots: every
   interrupted episode from its first turn). It prints the model calls of each, and of a
   run never killed.

   Played twice: with instant commands and with commands of at least 0.5 s
   (`--command-seconds`), where a kill finds most episodes running a command, their
   model's reply kept (`reply.json`): those turns are not asked again.

Run: `python benchmarks/episode_snapshots.py [--turns 20] [--latency 0.05] [--concurrency 8]
[--command-seconds 0 0.5]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_run_support import SUBMIT, ScriptedPolicy, bash_call  # noqa: E402

RLFORGE = [sys.executable, "-m", "rlforge"]


def build(work: Path) -> dict[str, list[Path]]:
    """Repair and script tasks from sample_data/ (not validated: the episodes need not pass)."""
    from rlforge import db
    from rlforge.config import Config
    from rlforge.execution.local import LocalBackend
    from rlforge.ingest import logs
    from rlforge.ingest.commits import ingest_repo
    from rlforge.tasks.build import BuildOptions, build_tasks

    cfg = Config.load()
    out: dict[str, list[Path]] = {}
    subprocess.run([sys.executable, str(ROOT / "sample_data" / "repo" / "build_repo.py"),
                    str(work / "dura")], check=True, capture_output=True)
    con = db.connect(work / "src.duckdb")
    try:
        ingest_repo(con, work / "dura")
        for path in sorted((ROOT / "sample_data" / "logs").iterdir()):
            if path.is_file() and path.suffix not in (".py", ".md") and path.name != "incident.json":
                logs.ingest_file(con, path)
        for generator, name, limit in (("commits.repair", "repair", 2), ("logs.script", "script", 8)):
            target = work / f"tasks-{name}"
            build_tasks(con, BuildOptions(out=target, generators=[generator], limit=limit,
                                          validate=False, config=cfg,
                                          backend=LocalBackend.from_config(cfg)))
            out[name] = sorted(p for p in target.iterdir() if (p / "task.toml").is_file())
    finally:
        con.close()
    return out


#: A repair-like episode, turn after turn: look around, edit sources, run the test suite.
REPAIR = (
    lambda i: "git status --short; ls",
    lambda i: "f=$(git ls-files '*.py' | grep -v test | head -1); head -40 \"$f\"",
    lambda i: (f"f=$(git ls-files '*.py' | grep -v test | head -1); "
               f"echo '# turn {i}: try another approach' >> \"$f\"; git diff --stat"),
    lambda i: "timeout 20 python -m pytest -q -x 2>&1 | tail -3",
    lambda i: f"printf 'note {i}\\n' >> NOTES.txt; grep -rn 'def ' --include=*.py . | wc -l",
)
#: A script-writing episode: read the logs, grow a program, run it.
SCRIPT = (
    lambda i: "ls -R /app | head -20; head -3 $(find /app -name '*.log' | head -1)",
    lambda i: (f"cat >> /app/solve.py <<'EOF'\n# step {i}\nimport sys, collections\n"
               f"counts = collections.Counter()\nEOF\nwc -l /app/solve.py"),
    lambda i: "python3 /app/solve.py $(find /app -name '*.log' | head -1) | head -5",
    lambda i: (f"grep -c ERROR $(find /app -name '*.log' | head -1) > /app/out{i}.txt; "
               f"cat /app/out{i}.txt"),
)


def episode(kinds, turns: int) -> list[str]:
    """`turns` commands, cycling through the turn kinds."""
    return [kinds[i % len(kinds)](i) for i in range(turns)]


def workspace_bytes(ws: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(ws):
        for name in names:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


async def overhead(task_dirs: list[Path], commands: list[str], work: Path) -> dict:
    """Snapshot cost per turn over episodes of `commands` on each task."""
    from rlforge.config import default_cache_dir
    from rlforge.config import Config
    from rlforge.records import EnvOptions
    from rlforge.run import snapshot
    from rlforge.run.environment import Environment
    from rlforge.run.workspace import scan, tree_digest
    from rlforge.sandbox import SandboxPool
    from rlforge.taskdir import load_task
    from rlforge.verify.runner import TaskRunner

    saves, written, hashed, steps, sizes, restores = [], [], [], [], [], []
    options = EnvOptions(max_turns=len(commands) + 2)
    async with SandboxPool(2) as pool:
        runner = TaskRunner(pool, "bwrap", None, default_cache_dir(Config.load().settings()))
        for task_dir in task_dirs:
            task = load_task(task_dir)
            env = Environment(task, options, runner, work, track_workspace=True)
            await env.reset()
            where = work / "snap" / task.task_id
            for command in commands:
                started = time.perf_counter()
                await env.step(bash_call(command))
                steps.append(time.perf_counter() - started)
                cost = await asyncio.to_thread(snapshot.save, env, where)
                saves.append(cost.seconds)
                written.append(cost.bytes_written)
                hashed.append(cost.bytes_hashed)
                assert env.workspace is not None
                sizes.append(workspace_bytes(env.workspace))
            assert env.workspace is not None
            digest = tree_digest(scan(env.workspace)[0])
            again = Environment(task, options, runner, work, track_workspace=True)
            started = time.perf_counter()
            await snapshot.restore(again, snapshot.load(where) or {}, where)
            restores.append(time.perf_counter() - started)
            assert again.workspace is not None and tree_digest(scan(again.workspace)[0]) == digest
            store = sum(p.stat().st_size for p in where.rglob("*") if p.is_file())
            env.close()
            again.close()
    return {"tasks": len(task_dirs), "turns": len(saves),
            "snapshot_ms": {"median": round(statistics.median(saves) * 1e3, 2),
                            "max": round(max(saves) * 1e3, 2)},
            "snapshot_bytes_written": {"median": int(statistics.median(written)),
                                       "max": max(written), "total": sum(written)},
            "bytes_hashed_per_turn": int(statistics.mean(hashed)),
            "command_turn_ms_median": round(statistics.median(steps) * 1e3, 1),
            "workspace_bytes_median": int(statistics.median(sizes)),
            "full_copies_bytes_total": sum(sizes),
            "snapshot_dir_bytes_at_end": store,
            "restore_ms_median": round(statistics.median(restores) * 1e3, 1)}


def killed_at_half(tasks: Path, turns: int, latency: float, work: Path, *,
                   keep_snapshots: bool, kill: bool = True, concurrency: int = 8,
                   command_seconds: float = 0.0) -> dict:
    """Model calls of a run of `tasks` SIGKILLed at half its calls and resumed; each
    command takes at least `command_seconds` (a test suite's run, say)."""
    commands = [f"sleep {command_seconds:g}; {c}" if command_seconds else c
                for c in episode(SCRIPT, turns - 1)]
    script = [bash_call(c, f"call_{i}") for i, c in enumerate(commands)] + [SUBMIT]
    run_id = (f"{'snap' if keep_snapshots else 'nosnap'}-{'kill' if kill else 'clean'}"
              f"-{command_seconds:g}")
    with ScriptedPolicy({"": script}, delay=latency) as policy:
        flags = ["--base-url", policy.url, "--model", "m", "--concurrency", str(concurrency),
                 "--max-turns", str(turns + 1), "--quiet"]
        expected = len([p for p in tasks.iterdir() if (p / "task.toml").is_file()]) * turns
        started = time.perf_counter()
        proc = subprocess.Popen([*RLFORGE, "run", str(tasks), *flags, "--run-id", run_id],
                                cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while kill and len(policy.requests) < expected // 2:
            if proc.poll() is not None:
                sys.exit(proc.stderr.read().decode()[-2000:])
            time.sleep(0.005)
        at_kill = len(policy.requests)
        if kill:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        if kill:
            if not keep_snapshots:
                shutil.rmtree(work / "runs" / run_id / "snapshots", ignore_errors=True)
            done = subprocess.run([*RLFORGE, "run", "--resume", run_id, "--quiet"], cwd=work,
                                  capture_output=True, text=True)
            if done.returncode not in (0, 3):
                sys.exit(done.stderr[-2000:])
        seconds = time.perf_counter() - started
        records = [json.loads(line) for line in
                   (work / "runs" / run_id / "rollouts.jsonl").read_text().splitlines()]
    return {"model_calls": len(policy.requests), "calls_at_kill": at_kill if kill else None,
            "rollouts": len(records), "resumed": sum(1 for r in records if r["resumed"]),
            "seconds": round(seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.05,
                    help="seconds the scripted policy takes per answer")
    ap.add_argument("--concurrency", type=int, default=8,
                    help="episodes at once in part 2 (8, the task count: each is cut at its "
                         "middle; fewer: some are cut, some done, some not started)")
    ap.add_argument("--command-seconds", type=float, nargs="*", default=[0.0, 0.5],
                    help="part 2 is played once per value: each command sleeps this long "
                         "first (a kill then finds episodes running commands, not only "
                         "waiting for the model)")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temp dir)")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="rlforge-snap-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("RLFORGE_DB", str(work / "rlforge.duckdb"))
    os.chdir(work)
    tasks = build(work)
    report = {"turns": args.turns}
    for name, commands in (("repair", episode(REPAIR, args.turns)),
                           ("script", episode(SCRIPT, args.turns))):
        report[name] = asyncio.run(overhead(tasks[name], commands, work))
        r = report[name]
        print(f"{name}: {r['turns']} turns on {r['tasks']} tasks: snapshot "
              f"{r['snapshot_ms']['median']} ms median ({r['snapshot_ms']['max']} max), "
              f"{r['snapshot_bytes_written']['median']:,} B written median "
              f"({r['snapshot_bytes_written']['total']:,} B in all; a full copy per turn: "
              f"{r['full_copies_bytes_total']:,} B); the turn's command "
              f"{r['command_turn_ms_median']} ms median; restore {r['restore_ms_median']} ms")
    script_dir = tasks["script"][0].parent
    report["model_calls"] = {}
    for pause in args.command_seconds:
        play = {"concurrency": args.concurrency, "command_seconds": pause}
        calls = {
            "never_killed": killed_at_half(script_dir, args.turns, args.latency, work,
                                           keep_snapshots=True, kill=False, **play),
            "killed_resumed_with_snapshots": killed_at_half(
                script_dir, args.turns, args.latency, work, keep_snapshots=True, **play),
            "killed_resumed_from_scratch": killed_at_half(
                script_dir, args.turns, args.latency, work, keep_snapshots=False, **play),
        }
        base = calls["never_killed"]["model_calls"]
        print(f"commands of at least {pause:g} s:")
        for label, c in calls.items():
            print(f"  {label}: {c['model_calls']} model calls ({c['model_calls'] - base:+d} vs "
                  f"never killed; killed at {c['calls_at_kill']}), {c['resumed']} rollouts "
                  f"resumed, {c['seconds']} s")
        saved = (calls["killed_resumed_from_scratch"]["model_calls"]
                 - calls["killed_resumed_with_snapshots"]["model_calls"])
        print(f"  model calls saved by resuming episodes: {saved}")
        report["model_calls"][f"{pause:g}"] = {**calls, "saved": saved}
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
