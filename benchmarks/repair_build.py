"""How close a `commits.repair` build comes to the floor: the repository's own tests.

A candidate commit cannot be checked faster than running its tests at the parent and with
the fix. This benchmark measures, on one repository:

1. rlforge: `rlforge ingest commits`, then `rlforge build-tasks --generators commits.repair`
   (build-time check + validation of the emitted tasks) over the last --last commits, in a
   child process that times, without changing them, the parts the build spends in:
   preparing environments, sandboxed test runs of the check (and the sandbox set-up inside
   them), the oracle, null and adversarial runs of validation (and the canaries inside
   them, by their share of the tests run), and rlforge's own process (its CPU time); and,
   per candidate, the sandboxed runs of its check (at the parent or with the fix) and how
   many tests each reported;
2. the floor: for every candidate (every commit that passed the database screen, whether
   or not a static screen then kept it out of the sandbox, so the ratio compares alike
   before and after such a screen), the same tests run bare (`<the prepared venv>/bin/
   python -m pytest`, no sandbox, no rlforge) on the parent tree (the commit's tests
   applied) and on the fixed tree, parent and fix interleaved, each run once;
3. the ratio of the two, per candidate and in total, and candidates per core-hour;
4. per submission of validation (oracle, null, each adversarial): how often it was scored,
   how often without a run of its own (settled by a gate decided before any run, or the
   same tree as another), and its wall seconds.

Sandbox set-up is measured directly first (median of `/bin/true` through
`rlforge.sandbox.run` minus bare, interleaved) and multiplied by the number of sandboxes
the build started. The load average is printed beside every timing: on a shared machine
other jobs slow both sides. Every step is the real code; fetched repositories are cloned
into a scratch directory, never into this checkout.

Usage: python benchmarks/repair_build.py SOURCE [--last 100] [--workers 0] [--work DIR]
           [--cache DIR] [--floor-from REPORT.json] [--json-out FILE]
It runs unchanged against an older checkout (PYTHONPATH=that checkout) for a baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from repair_workdir import prepare

CHILD = "--child-build"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the child: build-tasks with timers around the parts ------------------------------------

def _child(out: Path, argv: list[str]) -> None:
    """Run `rlforge <argv>` in this process with timers; write what they saw to `out`."""
    import contextvars
    import functools

    from rlforge.sandbox import pool as pool_mod
    from rlforge.tasks import build as build_mod
    from rlforge.tasks.generators import commits_repair as repair_gen
    from rlforge.tasks.generators.repair import checks as checks_mod
    from rlforge.tasks.generators.repair.runners import python as py_runner
    from rlforge.verify import runner as vrunner
    from rlforge.verify import validate as validate_mod

    rec: dict = {"phase": "generate", "sandbox_runs": defaultdict(int), "sandbox_wall": defaultdict(float),
                 "env_prep": 0.0, "env_prep_calls": 0, "check_test_seconds": 0.0,
                 "candidates": {}, "tasks": {}, "verify": defaultdict(float), "verify_runs": defaultdict(int),
                 "canary_share": 0.0, "check_runs": {}, "considered": {}, "submissions": {}}
    verify_times: dict[str, list[float]] = defaultdict(list)  # task dir -> its runs, in order
    in_oracle = contextvars.ContextVar("in_oracle", default=False)

    def timed(owner, name, after):
        original = getattr(owner, name)

        @functools.wraps(original)
        async def wrapper(*a, **kw):
            t = time.perf_counter()
            result = await original(*a, **kw)
            after(time.perf_counter() - t, a, kw, result)
            return result
        setattr(owner, name, wrapper)

    def on_sandbox(dt, a, kw, result):
        rec["sandbox_runs"][rec["phase"]] += 1
        rec["sandbox_wall"][rec["phase"]] += dt
        spec = a[2] if len(a) > 2 else kw.get("spec")
        workspace = getattr(spec, "workspace", None)
        if rec["phase"] == "generate" and workspace is not None:
            # a check's trees are <scratch>/<sha[:12]>-<random>/{parent,fixed}
            tree = Path(workspace)
            runs = rec["check_runs"].setdefault(tree.parent.name.split("-")[0], [])
            try:
                tests = len(json.loads((Path(spec.logs) / "results.json").read_text())["outcomes"])
            except (OSError, ValueError, KeyError, TypeError):
                tests = None
            runs.append([tree.name, tests])

    def on_check(dt, a, kw, result):
        snap = a[1]
        rec["candidates"][snap.sha] = {"seconds": dt, "cached": result.cached, "status": result.status,
                                       "reason": result.reason, "sandboxed": not result.cached}

    def on_run(dt, a, kw, result):
        if isinstance(result, dict):
            rec["check_test_seconds"] += float(result.get("seconds") or 0.0)

    def on_validate(dt, a, kw, result):
        task_dir = Path(a[0])
        meta = (task_dir / "task.toml").read_text()
        sha = next((line.split('"')[1] for line in meta.splitlines() if line.startswith("commit =")), "?")
        rec["tasks"][sha] = {"seconds": dt, "ok": result.ok}
        # each submission's seconds: validation's own figure, or (a checkout whose checks
        # carry none, which runs them one by one in order) the timed verifier runs
        runs = verify_times.pop(str(task_dir), [])
        subs = [c for c in result.checks if c.name not in ("leak", "oracle")]
        for i, c in enumerate(subs):
            seconds = getattr(c, "seconds", runs[i] if i < len(runs) else 0.0)
            rec["submissions"].setdefault(c.name, []).append([seconds, getattr(c, "settled", "")])
        for c in result.checks:
            if c.name == "oracle" and hasattr(c, "seconds"):
                rec["submissions"].setdefault("oracle", []).append([c.seconds, ""])

    def on_oracle(dt, a, kw, result):
        rec["verify"]["oracle"] += dt
        rec["verify_runs"]["oracle"] += 1
        _canaries(a[0], dt)

    def on_verify(dt, a, kw, result):
        if rec["phase"] != "validate" or in_oracle.get():
            return
        verify_times[str(a[0])].append(dt)
        rec["verify_runs"]["null and adversarial"] += 1
        _canaries(a[0], dt)

    def _canaries(task_dir, dt):
        try:
            ref = json.loads((Path(task_dir) / "tests" / "reference.json").read_text())
        except (OSError, ValueError):
            return
        tests = len(ref.get("fail_to_pass", [])) + len(ref.get("pass_to_pass", []))
        planted = 3 if ref.get("fail_to_pass") else 0  # verify.standalone.canaries.CANARIES
        rec["canary_share"] += dt * planted / max(1, tests + planted)

    def on_candidate(dt, a, kw, result):
        generator, row = a[0], a[2]
        why = "" if result is not None else next(
            (r["reason"] for r in reversed(generator.rejections) if r["source"] == f"{row.repo}@{row.sha}"), "")
        rec["considered"][row.sha] = {"seconds": dt, "kept": result is not None, "reason": why}

    timed(repair_gen.CommitsRepair, "_check_one", on_candidate)
    timed(pool_mod.SandboxPool, "run", on_sandbox)
    timed(checks_mod.Checker, "check", on_check)
    timed(checks_mod.Checker, "_run", on_run)
    timed(validate_mod, "validate_task", on_validate)
    original_oracle = vrunner.TaskRunner.oracle

    async def oracle(self, *a, **kw):
        in_oracle.set(True)  # oracle() calls verify(): not a null run (this task only)
        t = time.perf_counter()
        result = await original_oracle(self, *a, **kw)
        in_oracle.set(False)
        on_oracle(time.perf_counter() - t, a, kw, result)
        return result
    vrunner.TaskRunner.oracle = oracle  # type: ignore[method-assign]
    timed(vrunner.TaskRunner, "verify", lambda dt, a, kw, r: on_verify(dt, a[1:], kw, r))
    # the oracle wrapper's args start after self; verify's wrapper gets self first
    for module in (py_runner, vrunner):
        prepare = module.prepare_env

        def wrapped(*a, _prepare=prepare, **kw):
            t = time.perf_counter()
            try:
                return _prepare(*a, **kw)
            finally:
                rec["env_prep"] += time.perf_counter() - t
                rec["env_prep_calls"] += 1
        module.prepare_env = wrapped
    write_and_validate = build_mod._write_and_validate

    def phase_validate(*a, **kw):
        rec["phase"] = "validate"
        rec["generate_wall"] = time.perf_counter() - started
        rec["generate_cpu"] = cpu()
        return write_and_validate(*a, **kw)
    build_mod._write_and_validate = phase_validate

    from rlforge.cli import app
    started = time.perf_counter()
    code = 0
    try:
        app(argv, standalone_mode=False)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    rec["wall"] = time.perf_counter() - started
    rec.setdefault("generate_wall", rec["wall"])
    rec["cpu_self"], rec["cpu_children"] = cpu()
    rec.setdefault("generate_cpu", cpu())
    rec["exit"] = code
    out.write_text(json.dumps(rec, default=dict))


def cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of the processes it reaped."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


# --- the parent: set up, run the child, measure the floor -------------------------------------

def run(cmd: list[str], cwd: Path, ok=(0,)) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode not in ok:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return proc.stdout


def sandbox_setup_seconds(n: int = 15) -> float:
    """Median wall time a sandbox adds to `/bin/true` (interleaved with bare runs)."""
    from rlforge.sandbox import SandboxSpec, run as sandboxed

    with tempfile.TemporaryDirectory() as ws:
        spec = SandboxSpec(workspace=Path(ws), timeout_sec=30)
        bare, boxed = [], []
        for _ in range(n + 2):
            t = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            bare.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = sandboxed(["/bin/true"], spec)
            boxed.append(time.perf_counter() - t)
            if r.failure:
                sys.exit(f"the sandbox does not start: {r.failure}")
    return statistics.median(boxed[2:]) - statistics.median(bare[2:])


def floor(repo: Path, shas: list[str], cache: Path, timeout: float) -> dict[str, dict]:
    """Bare pytest at the parent and with the fix for each commit, interleaved; a run that
    takes longer than `timeout` is killed and counts `timeout` (rlforge stops it too)."""
    from rlforge.tasks.generators.repair import gitrepo
    from rlforge.tasks.generators.repair.checks import apply_gold, write_tree
    from rlforge.tasks.generators.repair.options import RepoSettings
    from rlforge.tasks.generators.repair.runners import get

    runner = get("python")
    rules = runner.test_rules()
    out: dict[str, dict] = {}
    for i, sha in enumerate(shas):
        parent = run(["git", "rev-parse", f"{sha}^"], repo).strip()
        snap = gitrepo.snapshot(repo, sha, parent, rules)
        reqs = sorted(set(runner.dependencies(snap.workspace).requirements))
        settings = runner.settings_for(snap.workspace, RepoSettings())
        try:
            venv = runner.prepare(reqs, settings, cache)
        except Exception as exc:  # noqa: BLE001 - the build dropped it the same way
            out[sha] = {"error": str(exc)[:200]}
            continue
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "parent", Path(tmp) / "fixed"
            a.mkdir()
            write_tree(a, {**snap.workspace, **snap.hidden})
            for rel in snap.hidden_deleted:
                (a / rel).unlink(missing_ok=True)
            shutil.copytree(a, b)
            if apply_gold(b, snap.gold_diff):
                out[sha] = {"error": "patch does not apply"}
                continue
            env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": tmp, "PYTHONDONTWRITEBYTECODE": "1",
                   "PYTHONPATH": os.pathsep.join(settings.pythonpath or ())}  # relative to the tree
            times, hung, spent = {}, [], 0.0
            for side in (("parent", "fixed") if i % 2 == 0 else ("fixed", "parent")):
                tree = a if side == "parent" else b
                t, c = time.perf_counter(), cpu()[1]
                try:
                    subprocess.run([f"{venv}/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                                   cwd=tree, env=env, capture_output=True, timeout=timeout)
                except subprocess.TimeoutExpired:
                    hung.append(side)
                times[side] = time.perf_counter() - t
                spent += cpu()[1] - c
            out[sha] = {**times, "floor": times["parent"] + times["fixed"], "hung": hung, "cpu": spent}
    return out


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == CHILD:
        _child(Path(sys.argv[2]), sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a repository: a path, a bare mirror or a URL")
    ap.add_argument("--last", type=int, default=100, help="commits considered (0 = all)")
    ap.add_argument("--workers", type=int, default=0, help="sandboxes at once (0 = the default)")
    ap.add_argument("--cache", type=Path, help="environment cache to reuse (default: a fresh one)")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temp dir)")
    ap.add_argument("--no-floor", action="store_true", help="skip the bare pytest runs")
    ap.add_argument("--reuse-build", action="store_true",
                    help="take the build's figures from an earlier run in --work (floor again)")
    ap.add_argument("--floor-timeout", type=float, default=120.0,
                    help="seconds a bare run may take (rlforge's collect_timeout; a hang counts this)")
    ap.add_argument("--floor-from", type=Path,
                    help="take the floor from an earlier --json-out report of the same commits "
                         "(its per-candidate floors) instead of running it again")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()
    work, repo, cache = prepare(args.source, args.work, last=args.last, workers=args.workers,
                         cache=args.cache, prefix="rlforge-repair-build-")
    print(f"load {load()}: sandbox set-up ...", file=sys.stderr)
    setup = sandbox_setup_seconds()
    if not args.reuse_build:
        run([sys.executable, "-m", "rlforge", "ingest", "commits", str(repo), "--rev", "HEAD", "-q"], work)
    timings = work / "timings.json"
    print(f"load {load()}: build-tasks ...", file=sys.stderr)
    saved = work / "build.json"
    if args.reuse_build and saved.is_file() and timings.is_file():
        built = json.loads(saved.read_text())
    else:
        load_before = load()
        t = time.perf_counter()
        out = run([sys.executable, __file__, CHILD, str(timings), "build-tasks", "--generators",
                   "commits.repair", "--out", str(work / "tasks"), "--force", "--json"], work, ok=(0, 1))
        if "{" not in out:
            sys.exit(f"build-tasks wrote no report: see {timings} and rerun the child by hand")
        built = {**json.loads(out[out.index("{"):]), "bench_wall": time.perf_counter() - t,
                 "bench_load": [load_before, load()]}
        saved.write_text(json.dumps(built))
    build_wall = built["bench_wall"]
    load_before, load_after = built["bench_load"]
    rec = json.loads(timings.read_text())
    sandboxed = sorted(s for s, c in rec["candidates"].items() if c["sandboxed"])
    considered_shas = sorted(rec.get("considered") or {s: None for s in sandboxed})  # every candidate
    if args.floor_from:
        earlier = json.loads(args.floor_from.read_text())
        floors = {sha: f for sha, f in earlier.get("floor", {}).get("per_candidate", {}).items()
                  if sha in considered_shas}
        missing = [sha for sha in considered_shas if sha not in floors]
        print(f"load {load()}: floor of {len(floors)} candidates from {args.floor_from}, "
              f"{len(missing)} run now ...", file=sys.stderr)
        floors.update({} if args.no_floor else floor(repo, missing, cache, args.floor_timeout))
    else:
        print(f"load {load()}: floor over every one of {len(considered_shas)} candidates ...", file=sys.stderr)
        floors = {} if args.no_floor else floor(repo, considered_shas, cache, args.floor_timeout)
    floor_load = load()
    cores = len(os.sched_getaffinity(0))
    floor_total = sum(f.get("floor", 0.0) for f in floors.values())
    floor_cpu = sum(f.get("cpu", 0.0) for f in floors.values())
    runs = sum(rec["sandbox_runs"].values())
    shares = {
        "environment preparation": rec["env_prep"],
        "sandbox set-up (estimate: runs x set-up)": runs * setup,
        "check: tests in the sandbox": rec["check_test_seconds"],
        "validation: oracle": rec["verify"].get("oracle", 0.0),
        "validation: null": sum(x[0] for x in rec["submissions"].get("null", [])),
        "validation: adversarial set": sum(x[0] for name, xs in rec["submissions"].items()
                                           if name not in ("null", "oracle") for x in xs),
        "validation: canaries (estimate: share of tests run)": rec["canary_share"],
        "rlforge itself (its process's CPU)": rec["cpu_self"],
    }
    per = []
    for sha in considered_shas:
        c, f, task = rec["candidates"].get(sha), floors.get(sha, {}), rec["tasks"].get(sha)
        seen = (rec.get("considered") or {}).get(sha) or {}
        if c is None:  # kept out of the sandbox before its check
            c = {"seconds": seen.get("seconds", 0.0), "status": "unrun", "reason": seen.get("reason", "")}
        spent = c["seconds"] + (task["seconds"] if task else 0.0)
        per.append({"sha": sha[:12], "status": c["status"], "reason": c["reason"],
                    "sandboxed": sha in sandboxed,
                    "check_s": round(c["seconds"], 2), "validate_s": round(task["seconds"], 2) if task else None,
                    "floor_s": round(f["floor"], 2) if "floor" in f else None,
                    "ratio": round(spent / f["floor"], 2) if f.get("floor") else None})
    submissions = {}
    for name, xs in rec["submissions"].items():
        ran = [x[0] for x in xs if not x[1]]
        submissions[name] = {"scored": len(xs), "ran": len(ran), "settled": len(xs) - len(ran),
                             "total_s": round(sum(x[0] for x in xs), 2),
                             "mean_run_s": round(statistics.mean(ran), 2) if ran else None,
                             "max_s": round(max(x[0] for x in xs), 2),
                             "how": sorted({x[1] for x in xs if x[1]})}
    import duckdb
    con = duckdb.connect(str(work / "rlforge.duckdb"), read_only=True)
    considered = con.execute("SELECT count(*) FROM (SELECT 1 FROM commits ORDER BY committed_at DESC "
                             "LIMIT ?)", [args.last or 10**9]).fetchall()[0][0]
    con.close()
    report = {
        "source": args.source, "last": args.last, "cores": cores, "workers": args.workers,
        "sandbox_setup_s": round(setup, 4),
        "build": {"wall_s": round(build_wall, 1), "generate_wall_s": round(rec["generate_wall"], 1),
                  "validate_wall_s": round(rec["wall"] - rec["generate_wall"], 1),
                  "load_before": load_before, "load_after": load_after,
                  "cpu_self_s": round(rec["cpu_self"], 1), "cpu_children_s": round(rec["cpu_children"], 1),
                  "generate_cpu_s": [round(x, 1) for x in rec.get("generate_cpu", (0, 0))],
                  "sandbox_runs": dict(rec["sandbox_runs"]), "emitted": built.get("emitted"),
                  "commits_considered": considered, "candidates": len(considered_shas),
                  "candidates_sandboxed": len(sandboxed)},
        "floor": {"total_s": round(floor_total, 1), "cpu_s": round(floor_cpu, 1), "load_after": floor_load,
                  "over": f"every candidate ({len(considered_shas)})", "from": str(args.floor_from or ""),
                  "hung_runs": sum(len(f.get("hung", [])) for f in floors.values()),
                  "per_candidate": floors},
        "submissions": submissions,
        "ratio_wall": round(build_wall / floor_total, 2) if floor_total else None,
        "ratio_cpu": round((rec["cpu_self"] + rec["cpu_children"]) / floor_cpu, 2) if floor_cpu else None,
        "ratio_cpu_check": round(sum(rec.get("generate_cpu", (0, 0))) / floor_cpu, 2) if floor_cpu else None,
        "shares_s": {k: round(v, 1) for k, v in shares.items()},
        "candidates_per_core_hour": round(len(considered_shas) / (build_wall * cores / 3600), 1)
        if considered_shas else None,
        "commits_per_core_hour": round(considered / (build_wall * cores / 3600), 1),
        "per_candidate": per, "work": str(work),
    }
    print(f"{args.source}: last {args.last}: {considered} commits, {len(considered_shas)} candidates "
          f"(past the database screen), {len(sandboxed)} checked in the sandbox, "
          f"{built.get('emitted')} emitted; {cores} cores")
    print(f"build+validate {build_wall:.1f}s wall (generate {rec['generate_wall']:.1f}s, validate "
          f"{rec['wall'] - rec['generate_wall']:.1f}s) [load {load_before} -> {load_after}]")
    print(f"floor over every candidate ({len(floors)} of {len(considered_shas)} measured"
          f"{', taken from ' + str(args.floor_from) if args.floor_from else ''}; bare pytest, parent + fix, "
          f"once each) {floor_total:.1f}s [load {floor_load}]: "
          f"ratio {report['ratio_wall']}x wall; CPU {floor_cpu:.1f}s: rlforge uses {report['ratio_cpu']}x "
          f"its CPU ({report['ratio_cpu_check']}x in the check alone)")
    print(f"sandbox set-up {setup * 1000:.0f} ms x {runs} sandboxes; rlforge CPU {rec['cpu_self']:.1f}s, "
          f"children CPU {rec['cpu_children']:.1f}s (of which the check: "
          f"{report['build']['generate_cpu_s']}); sandboxes {dict(rec['sandbox_runs'])}")
    print("where the time went (seconds summed over concurrent runs; they overlap):")
    for k, v in shares.items():
        print(f"  {k:55s} {v:8.1f}s")
    runs_of = rec.get("check_runs", {})
    if runs_of:
        per_side: dict[str, list[int]] = defaultdict(list)
        for runs_one in runs_of.values():
            for side, tests in runs_one:
                per_side[side].append(tests or 0)
        shape = defaultdict(int)
        for runs_one in runs_of.values():
            shape["+".join(sorted(side for side, _ in runs_one))] += 1
        print(f"check runs per candidate: mean {sum(map(len, runs_of.values())) / len(runs_of):.2f} "
              f"({', '.join(f'{n} x {k}' for k, n in sorted(shape.items(), key=lambda x: -x[1]))}); "
              "tests reported per run: " + ", ".join(
                  f"{side} median {statistics.median(v):g} over {len(v)} runs"
                  for side, v in sorted(per_side.items())))
        report["check_runs"] = {"per_candidate": {k: v for k, v in runs_of.items()}}
    print(f"candidates per core-hour {report['candidates_per_core_hour']}, commits per core-hour "
          f"{report['commits_per_core_hour']}")
    if submissions:
        print("validation per submission (seconds summed over tasks; settled = scored without a run of its own):")
        for name, x in sorted(submissions.items(), key=lambda kv: -kv[1]["total_s"]):
            print(f"  {name:28s} scored {x['scored']:3d} ran {x['ran']:3d} settled {x['settled']:3d} "
                  f"total {x['total_s']:7.2f}s mean run {x['mean_run_s'] if x['mean_run_s'] is not None else '-':>6} "
                  f"max {x['max_s']:6.2f}s {'; '.join(x['how'])[:60]}")
    for p in per:
        print(f"  {p['sha']} {p['status']:8s} check {p['check_s']:6.2f}s validate {p['validate_s'] or 0:6.2f}s "
              f"floor {p['floor_s'] if p['floor_s'] is not None else '-':>6} ratio {p['ratio'] or '-'} "
              f"{p['reason'][:40]}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
