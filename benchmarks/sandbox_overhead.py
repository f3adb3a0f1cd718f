"""What the sandbox adds to a command's wall time: bare vs bubblewrap, same run.

Runs `/usr/bin/python3 -c pass` N times (default 100) started directly with
`subprocess.run` and N times through `rlforge.sandbox.run` (namespaces, mounts, seccomp,
prlimit, output capture; as root also the pids, memory and cpu cgroups, the switch to the
run's own host uid, and the capped tmpfs mounts with a workspace of `--files` small files
and a logs directory copied in and back out), interleaved so that background load hits
both alike, after a few warm-up runs of each. Prints both medians, the difference, and
p10/p90 for each, of wall time and of CPU time (this process and the processes it
reaped: less sensitive to other load on the machine). Goal: at most 15 ms added.
It runs unchanged against an older checkout (PYTHONPATH=that checkout) for a baseline.

Run: `python benchmarks/sandbox_overhead.py [--runs 100] [--files 50]`. Other jobs on the
machine show up as noise; if the p90s are far above the medians, run it again.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rlforge.sandbox import SandboxSpec, ensure_available, run

PY = "/usr/bin/python3"
CMD = [PY, "-c", "pass"]
GOAL_MS = 15.0


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (bubblewrap reaps the command)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bare() -> tuple[float, float]:
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run(CMD, capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"})
    return time.perf_counter() - start, _cpu() - cpu


def sandboxed(spec: SandboxSpec) -> tuple[float, float]:
    start, cpu = time.perf_counter(), _cpu()
    result = run(CMD, spec)
    elapsed = time.perf_counter() - start
    if not result.ok:
        raise SystemExit(f"sandboxed run failed: {result}")
    return elapsed, _cpu() - cpu


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=10)[int(q * 10) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs of each (default 100)")
    parser.add_argument("--files", type=int, default=50,
                        help="files of 2 KB in the workspace copied in and out (default 50)")
    args = parser.parse_args()
    support = ensure_available()
    root = Path(tempfile.mkdtemp(prefix="rlforge-bench-"))
    try:
        _measure(args, support, root)
    finally:
        shutil.rmtree(root)


def _measure(args: argparse.Namespace, support, root: Path) -> None:
    workspace, logs = root / "app", root / "logs"
    workspace.mkdir()
    for i in range(args.files):
        (workspace / f"pkg{i % 5}").mkdir(parents=True, exist_ok=True)
        (workspace / f"pkg{i % 5}" / f"m{i}.py").write_text("x = 1\n" * 340)
    logs.mkdir()
    spec = SandboxSpec(workspace=workspace, logs=logs, timeout_sec=30)
    for _ in range(5):  # warm caches: page cache, bwrap's and python's first start
        bare()
        sandboxed(spec)
    times: dict[str, list[tuple[float, float]]] = {"bare": [], "sandboxed": []}
    for _ in range(args.runs):
        times["bare"].append(bare())
        times["sandboxed"].append(sandboxed(spec))
    limits = getattr(support, "limits", None)  # older checkouts, run for the baseline
    print(f"command: {' '.join(CMD)}; {args.runs} runs each, interleaved; workspace of "
          f"{args.files} files; bubblewrap {'.'.join(map(str, support.version))}; "
          f"{limits() if limits else 'process limit via ' + support.pid_limit}")
    for label, index in (("wall", 0), ("cpu", 1)):
        ms = {k: [v[index] * 1000 for v in vs] for k, vs in times.items()}
        med = {k: statistics.median(v) for k, v in ms.items()}
        for k in ("bare", "sandboxed"):
            print(f"{label:>4} {k:>9}: median {med[k]:6.2f} ms   p10 {quantile(ms[k], 0.1):6.2f}   "
                  f"p90 {quantile(ms[k], 0.9):6.2f}")
        added = med["sandboxed"] - med["bare"]
        verdict = "within" if added <= GOAL_MS else "OVER"
        print(f"{label:>4}     added: {added:6.2f} ms (median difference; goal <= {GOAL_MS:g} ms: "
              f"{verdict})")


if __name__ == "__main__":
    main()
