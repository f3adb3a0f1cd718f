"""Throughput of `rlforge run` against bare aiohttp and httpx loops sending the same requests.

Against `fake_openai_server.py` (fixed latency, default 50 ms, canned answers) this runs

1. a bare aiohttp loop and 2. a bare httpx loop (the loops of
   `policy_client_throughput.py`: C worker coroutines, one pooled client), each reading
   every task's instruction and reference answer, sending the chat request `rlforge run`
   sends (the same system prompt and instruction), and checking the answer;
3. `rlforge run TASKS --concurrency C` itself: task discovery, scheduling, the policy
   client, in-process scoring, rollouts.jsonl, the DuckDB tables, the summary;

each as a fresh process, interleaved, several rounds, all in the same run against the same
server, on single-turn answer tasks rendered by rlforge's own renderer (half of them get
the right answer from the fake server, half a wrong one, so scoring does real work). It
prints rollouts/s over the whole process (interpreter start to exit) and, for rlforge,
the run's own session time, client CPU ms per rollout, peak RSS; then peak RSS over a
20,000-rollout run, and start-up: `rlforge run --help`, a one-task run end to end, and
the time from spawning `rlforge run` on all the tasks to its first rollout.

Run: `python benchmarks/run_throughput.py [--rollouts 5000] [--concurrency 64]`.
Other load on the machine shows in the figures: compare rounds, run it again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import policy_client_throughput as bare  # noqa: E402  (the bare loops and server helpers)

MODEL = bare.MODEL
LABELS = ["account_management", "billing", "bug_report", "feature_request", "login_access",
          "performance", "shipping_order"]


# --- tasks -------------------------------------------------------------------------------

def make_tasks(out: Path, n: int) -> Path:
    """n single-turn label tasks, rendered as build-tasks renders them (cached by n)."""
    from rlforge.tasks.render import Renderer, render_task, write_task
    from rlforge.tasks.spec import SourceRef, Submission, TaskSpec

    marker = out.parent / f".{out.name}-complete"
    if marker.exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    templates = Path(tempfile.mkdtemp(prefix="bench-templates-"))
    (templates / "instruction.md.j2").write_text(
        "# Triage a support ticket\n\nCustomer {{ n }} writes: {{ body }}\n\n"
        "Choose one of: {{ labels | join(', ') }}.\n"
        "End your reply with one line: `ANSWER: <option>`.\n<<reply:{{ reply }}>>\n")
    renderer = Renderer(templates)
    manifest = []
    for i in range(n):
        label = LABELS[i % len(LABELS)]
        reply = f"ANSWER: {label}" if i % 2 == 0 else f"ANSWER: {LABELS[(i + 1) % len(LABELS)]}"
        spec = TaskSpec(
            generator="bench.triage", version=1, source=SourceRef("bench", [str(i)], [str(i)]),
            instruction_template="instruction.md",
            context={"title": f"ticket {i}", "n": i, "labels": LABELS, "reply": reply,
                     "body": f"My order #{100000 + i} never arrived and I was charged twice. "
                             "Please look into it as soon as you can; it has been a week. " * 3},
            reference={"verifier": "answer", "answer_kind": "label", "answer": label,
                       "labels": LABELS, "submission": "/app/answer.txt", "max_chars": 200},
            solution_files={"solve.sh": b"#!/bin/bash\n"}, verifier="answer",
            group_key=str(i), dedup_text=str(i), null=Submission("null"), adversarial=[],
            agent_timeout_sec=60.0)
        task = render_task(spec, renderer, seed=0, split="train")
        write_task(task, out)
        manifest.append((task.task_id, spec.generator, spec.version, spec.verifier, spec.kind,
                         task.split, task.task_id, "bench", [str(i)], [str(i)], str(i),
                         task.template_hash, spec.agent_timeout_sec))
    write_manifest(out, manifest)
    shutil.rmtree(templates)
    marker.touch()
    return out


def write_manifest(out: Path, rows: list[tuple]) -> None:
    """manifest.parquet with the columns `rlforge build-tasks` writes."""
    import duckdb

    with duckdb.connect() as con:
        con.execute("CREATE TABLE manifest (task_id VARCHAR, generator VARCHAR, version BIGINT, "
                    "verifier VARCHAR, kind VARCHAR, split VARCHAR, path VARCHAR, "
                    "source_table VARCHAR, source_keys VARCHAR[], content_hashes VARCHAR[], "
                    "group_key VARCHAR, template_hash VARCHAR, agent_timeout_sec DOUBLE)")
        con.executemany("INSERT INTO manifest VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.execute(f"COPY (SELECT * FROM manifest ORDER BY task_id) TO '{out / 'manifest.parquet'}' "
                    "(FORMAT parquet)")


def task_dirs(tasks: Path) -> list[Path]:
    return sorted(p for p in tasks.iterdir() if p.is_dir())


# --- the variants, each in its own process ------------------------------------------------

def child(variant: str, url: str, tasks: Path, samples: int, concurrency: int) -> None:
    """A bare loop: read the tasks, send the same requests rlforge sends, check answers."""
    system = ("You are answering in this chat: you cannot run commands or write files. Where "
              "the task says how to answer in chat, do exactly that.")
    work = []
    for d in task_dirs(tasks):
        instruction = (d / "instruction.md").read_text()
        answer = json.loads((d / "tests" / "reference.json").read_text())["answer"]
        for s in range(samples):
            body = {"model": MODEL, "messages": [{"role": "system", "content": system},
                                                 {"role": "user", "content": instruction}],
                    "temperature": 0.0, "max_tokens": 512, "seed": s}
            work.append((body, f"ANSWER: {answer}"))
    runner = {"aiohttp": bare.run_aiohttp, "httpx": bare.run_httpx}[variant]
    import asyncio

    start = time.perf_counter()
    correct = asyncio.run(runner(url, work, concurrency))
    print(json.dumps({"correct": correct, "loop_seconds": time.perf_counter() - start}))


def measure_rusage(cmd: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Run cmd; its wall seconds, its own CPU seconds and peak RSS (wait4), its output."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in (0, 3):  # 3: the pass-rate gate (half the answers are wrong)
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({proc.returncode}):\n{stderr[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024, "stdout": stdout, "stderr": stderr}


def rlforge_cmd(tasks: Path, url: str, samples: int, concurrency: int, run_id: str) -> list[str]:
    return [sys.executable, "-m", "rlforge", "run", str(tasks), "--base-url", url, "--model",
            MODEL, "--samples", str(samples), "--concurrency", str(concurrency), "--run-id",
            run_id, "--json", "--quiet"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=3, help="runs per variant (interleaved)")
    parser.add_argument("--rss-rollouts", type=int, default=20000)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "rlforge-bench-run")
    parser.add_argument("--child", choices=("aiohttp", "httpx"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.url, args.tasks, args.samples, args.concurrency)
        return

    n, c = args.rollouts, args.concurrency
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tasks = make_tasks(work / f"tasks-{n}", n)
    print(f"{n:,} single-turn answer tasks in {tasks} ({time.perf_counter() - started:.1f}s "
          f"to render, 0 if cached)")
    ceiling = c / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    print(f"{n:,} rollouts per run, concurrency {c}, server latency {args.latency_ms:g} ms "
          f"(ceiling {ceiling:,.0f} rollouts/s), {args.rounds} interleaved rounds\n")
    server, url = bare.start_server(args.latency_ms)
    env = {**os.environ, "RLFORGE_DB": str(work / "bench.duckdb")}
    runs = work / "runs"
    shutil.rmtree(runs, ignore_errors=True)  # every invocation starts from an empty store
    for leftover in work.glob("bench.duckdb*"):
        leftover.unlink()
    results: dict[str, list[dict]] = {"aiohttp": [], "httpx": [], "rlforge run": []}
    try:
        before = bare.server_stats(url)
        for round_no in range(1, args.rounds + 1):
            for variant in ("aiohttp", "httpx"):
                m = measure_rusage([sys.executable, __file__, "--child", variant, "--url", url,
                                    "--tasks", str(tasks), "--concurrency", str(c)], work)
                figures = json.loads(m["stdout"].strip().splitlines()[-1])
                results[variant].append({"rate": n / m["wall"], "loop_rate": n / figures["loop_seconds"],
                                         "cpu_ms": m["cpu"] * 1000 / n, "rss_mb": m["rss_mb"],
                                         "correct": figures["correct"]})
                r = results[variant][-1]
                print(f"  round {round_no} {variant:12} {r['rate']:7.0f} rollouts/s whole process "
                      f"({r['loop_rate']:5.0f} in its loop), {r['cpu_ms']:.3f} CPU ms/rollout, "
                      f"{r['rss_mb']:.0f} MB peak RSS, {r['correct']:,} right", flush=True)
            run_id = f"bench-{os.getpid()}-{round_no}"
            m = measure_rusage(rlforge_cmd(tasks, url, 1, c, run_id), work, env)
            shutil.rmtree(runs / run_id, ignore_errors=True)
            report = json.loads(m["stdout"])
            results["rlforge run"].append({
                "rate": n / m["wall"], "loop_rate": n / report["session"]["seconds"],
                "cpu_ms": m["cpu"] * 1000 / n, "rss_mb": m["rss_mb"], "correct": report["pass"],
                "invalid": report["invalid"]})
            r = results["rlforge run"][-1]
            print(f"  round {round_no} {'rlforge run':12} {r['rate']:7.0f} rollouts/s whole process "
                  f"({r['loop_rate']:5.0f} in its session), {r['cpu_ms']:.3f} CPU ms/rollout, "
                  f"{r['rss_mb']:.0f} MB peak RSS, {r['correct']:,} passed, {r['invalid']} invalid",
                  flush=True)
        after = bare.server_stats(url)

        print(f"\nmedian of {args.rounds} rounds   whole-process rollouts/s   CPU ms/rollout   peak RSS")
        med = {}
        for variant, rows in results.items():
            med[variant] = statistics.median(r["rate"] for r in rows)
            print(f"  {variant:22} {med[variant]:10.0f}            "
                  f"{statistics.median(r['cpu_ms'] for r in rows):8.3f}     "
                  f"{statistics.median(r['rss_mb'] for r in rows):5.0f} MB")
        best = max(med["aiohttp"], med["httpx"])
        print(f"  rlforge run / faster bare loop: {med['rlforge run'] / best:.2f}x (goal >= 0.90)")
        served = after["requests"] - before["requests"]
        server_ms = (after["cpu_seconds"] - before["cpu_seconds"]) * 1000 / served
        print(f"  server: {server_ms:.3f} CPU ms per request (~{1000 / server_ms:,.0f} req/s per core)")

        # Peak RSS over a long run: the same tasks, several samples each.
        samples = max(1, -(-args.rss_rollouts // n))
        m = measure_rusage(rlforge_cmd(tasks, url, samples, c, f"rss-{os.getpid()}"), work, env)
        shutil.rmtree(runs / f"rss-{os.getpid()}", ignore_errors=True)
        report = json.loads(m["stdout"])
        print(f"\n{report['rollouts']:,} rollouts ({n:,} tasks x {samples} samples): peak RSS "
              f"{m['rss_mb']:.0f} MB (goal < 400), {m['cpu'] * 1000 / report['rollouts']:.3f} "
              f"CPU ms/rollout, {report['rollouts'] / m['wall']:.0f} rollouts/s whole process")

        # Start-up.
        help_runs = [measure_rusage([sys.executable, "-m", "rlforge", "run", "--help"], work, env)["wall"]
                     for _ in range(3)]
        one = work / "one-task"
        if not one.exists():
            one.mkdir()
            shutil.copytree(task_dirs(tasks)[0], one / task_dirs(tasks)[0].name)
        one_runs = []
        for i in range(3):
            shutil.rmtree(runs / f"one{i}", ignore_errors=True)
            one_runs.append(measure_rusage(rlforge_cmd(one, url, 1, c, f"one{i}"), work, env)["wall"])
        first = []
        for i in range(3):
            shutil.rmtree(runs / f"first{i}", ignore_errors=True)
            spawned = time.time()
            measure_rusage(rlforge_cmd(tasks, url, 1, c, f"first{i}"), work, env)
            with open(runs / f"first{i}" / "rollouts.jsonl") as fh:
                starts = [json.loads(line)["started_at"] for line in fh]
            earliest = min(starts).replace("Z", "+00:00")
            from datetime import datetime
            first.append(datetime.fromisoformat(earliest).timestamp() - spawned)
        print(f"start-up (median of 3): `rlforge run --help` {statistics.median(help_runs):.2f}s; "
              f"a one-task run end to end {statistics.median(one_runs):.2f}s; spawn to first "
              f"rollout over {n:,} tasks {statistics.median(first):.2f}s (goal < 1 s)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
