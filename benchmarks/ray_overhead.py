"""Ray's overhead on `rlforge run`: rollouts/s with `--executor local` and `--executor ray`.

On one machine, against `fake_openai_server.py` (fixed latency, default 50 ms, canned
answers: half right, half wrong, so scoring does real work), this runs the same run —
2,000 single-turn answer tasks rendered by rlforge's renderer, one sample each, the same
concurrency — as `rlforge run` in a fresh process per run, alternating the two executors
for several rounds:

- `local`: the run as it always was, in one process;
- `ray`: `--executor ray --ray-address` a Ray head this script started on 127.0.0.1
  (`ray start --head`, loopback only, token auth), so the figure is what a cluster costs:
  connecting, one worker per node, rollouts dispatched in batches and records sent back.

For each run it prints rollouts/s over the rollouts themselves (first rollout started to
last finished, from rollouts.jsonl), over the session (`session.seconds` of the run's
JSON: planning, Ray start-up, rollouts, tables), and over the whole process; the
driver's CPU and the whole machine's CPU per rollout (Ray's worker, raylet and GCS run
outside the driver process). Then the medians and the overhead, 1 − ray/local, on the
rollouts phase (goal: at most 15%) and on the session; and the start-up of a private Ray
instance (`--executor ray` without an address) for comparison.

Run: `python benchmarks/ray_overhead.py [--rollouts 2000] [--samples 1] [--concurrency 64]
[--rounds 3]` (`--rollouts` is the number of tasks; each gets `--samples` rollouts).
Needs `pip install 'rlforge[ray]'`. Other load on the machine shows in the figures:
compare rounds, run it again.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import policy_client_throughput as bare  # noqa: E402  (the fake server)
import run_throughput  # noqa: E402  (tasks, measuring a process)

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def machine_cpu_seconds() -> float:
    """CPU seconds spent by the whole machine so far (user + nice + system + irq)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = sum(int(fields[i]) for i in (0, 1, 2, 5, 6))
    return ticks / os.sysconf("SC_CLK_TCK")


def start_head(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """A Ray head on 127.0.0.1 only (see the README's security note)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head",
                             "--block", "--port=0", "--node-ip-address=127.0.0.1",
                             "--include-dashboard=false", "--disable-usage-stats",
                             f"--temp-dir={root}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    marker = root / "ray_current_cluster"
    deadline = time.monotonic() + 120
    while not (marker.exists() and marker.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the Ray head did not start (is `rlforge[ray]` installed?)")
        time.sleep(0.2)
    time.sleep(1)  # the raylet registers after the GCS writes the address
    return proc, marker.read_text().strip()


def rollouts_phase(run_dir: Path) -> float:
    """Seconds from the first rollout's start to the last one's end."""
    starts, ends = [], []
    with open(run_dir / "rollouts.jsonl") as fh:
        for line in fh:
            r = json.loads(line)
            starts.append(r["started_at"])
            ends.append(r["finished_at"])

    def seconds(stamp: str) -> float:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    return seconds(max(ends)) - seconds(min(starts))


def one_run(tasks: Path, url: str, samples: int, concurrency: int, run_id: str, work: Path,
            env: dict, extra: list[str]) -> dict:
    cpu = machine_cpu_seconds()
    m = run_throughput.measure_rusage(
        run_throughput.rlforge_cmd(tasks, url, samples, concurrency, run_id) + extra, work, env)
    machine = machine_cpu_seconds() - cpu
    report = json.loads(m["stdout"])
    n = report["session"]["rollouts"]
    run_dir = work / report["run_dir"]  # relative to the run's working directory
    figures = {"rollouts": n, "passed": report["pass"], "invalid": report["invalid"],
               "phase_rate": n / rollouts_phase(run_dir), "session_rate": n / report["session"]["seconds"],
               "process_rate": n / m["wall"], "session_s": report["session"]["seconds"],
               "wall_s": m["wall"], "driver_cpu_ms": m["cpu"] * 1000 / n,
               "machine_cpu_ms": machine * 1000 / n}
    shutil.rmtree(run_dir, ignore_errors=True)
    return figures


def show(label: str, f: dict) -> None:
    print(f"  {label:24} {f['phase_rate']:6.0f} rollouts/s in the rollouts phase, "
          f"{f['session_rate']:5.0f} over the session ({f['session_s']:.2f}s), "
          f"{f['process_rate']:5.0f} whole process; CPU ms/rollout: driver "
          f"{f['driver_cpu_ms']:.3f}, machine {f['machine_cpu_ms']:.3f}; "
          f"{f['passed']:,} passed, {f['invalid']} invalid", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--samples", type=int, default=1, help="samples per task (rollouts = "
                        "tasks x samples: --samples 10 shows a longer run)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per executor (interleaved)")
    parser.add_argument("--workdir", type=Path,
                        default=Path(tempfile.gettempdir()) / "rlforge-bench-ray")
    args = parser.parse_args()

    n, c = args.rollouts, args.concurrency
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    tasks = run_throughput.make_tasks(work / f"tasks-{n}", n)
    ceiling = c / (args.latency_ms / 1000) if args.latency_ms else float("inf")
    print(f"{n:,} single-turn tasks x {args.samples} sample(s), concurrency {c}, server latency "
          f"{args.latency_ms:g} ms (ceiling {ceiling:,.0f} rollouts/s), {args.rounds} "
          f"interleaved rounds, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} at the start\n")
    env = {**os.environ, **LOOPBACK, "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(24), "RLFORGE_DB": str(work / "bench.duckdb")}
    for leftover in work.glob("bench.duckdb*"):
        leftover.unlink()
    shutil.rmtree(work / "runs", ignore_errors=True)  # every run starts from an empty store
    server, url = bare.start_server(args.latency_ms)
    head_root = Path(f"/tmp/rlforge-bench-ray-{os.getpid()}")
    head, address = start_head(head_root, env)
    results: dict[str, list[dict]] = {"local": [], "ray": []}
    try:
        for round_no in range(1, args.rounds + 1):
            for executor in ("local", "ray"):
                extra = ["--executor", executor]
                if executor == "ray":
                    extra += ["--ray-address", address]
                f = one_run(tasks, url, args.samples, c, f"bench-{executor}-{round_no}", work, env,
                            extra)
                results[executor].append(f)
                show(f"round {round_no} {executor}", f)
        print(f"\nmedian of {args.rounds}            rollouts phase   session   whole process"
              f"   machine CPU ms/rollout")
        med = {}
        for executor, rows in results.items():
            med[executor] = {k: statistics.median(r[k] for r in rows)
                             for k in ("phase_rate", "session_rate", "process_rate",
                                       "machine_cpu_ms")}
            m = med[executor]
            print(f"  {executor:22} {m['phase_rate']:8.0f}/s   {m['session_rate']:6.0f}/s   "
                  f"{m['process_rate']:8.0f}/s        {m['machine_cpu_ms']:.3f}")
        for key, label in (("phase_rate", "rollouts phase"), ("session_rate", "session"),
                           ("process_rate", "whole process")):
            overhead = 1 - med["ray"][key] / med["local"][key]
            goal = " (goal <= 15%)" if key == "phase_rate" else ""
            print(f"  Ray overhead, {label:15} {overhead:6.1%}{goal}")

        # A private instance (no address): what starting Ray costs a one-off command.
        f = one_run(tasks, url, args.samples, c, "bench-private", work, env,
                    ["--executor", "ray"])
        show("ray, private instance", f)
        print(f"  start-up of a private instance: session {f['session_s']:.2f}s vs "
              f"{statistics.median(r['session_s'] for r in results['ray']):.2f}s on the running head")
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(head_root, ignore_errors=True)
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
