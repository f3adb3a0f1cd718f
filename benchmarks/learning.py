"""Does training on rlforge's tasks make the embedded model better on held-out tasks?

The flywheel end to end on this machine's CPU: export the tasks for TRL, train the
embedded SmolLM2-135M with GRPO on the train split (reward: the task's own verifier,
through `examples/learn_grpo.py`), then score the base model and the trained one with
`rlforge run` on the test split, both served by `python -m rlforge.hf_server`, on the same
tasks with the same seeds. Prints the training steps, wall time, peak RSS, the reward
curve, and each generator's held-out pass rate before and after with 95% Wilson
intervals, the run ids, and the machine's load.

    python benchmarks/learning.py --tasks demo/learn-tasks --generators tickets.triage
    python benchmarks/learning.py --warm-up-gold ... --difficulty 0.1:0.9
        # GRPO twice from the warmed-up model: on every train task, and only on the train
        # tasks whose pass rate under that model lies in the band; both scored

With no --tasks directory there yet, it ingests sample_data/ and builds the single-turn
tasks (tickets.triage, logs.diagnose, tickets.reply) into it first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from learn_grpo import load_policy, train, warm_then_train, warm_up_start, with_lora  # noqa: E402

from rlforge.difficulty import wilson  # noqa: E402
from rlforge.hf_server import TransformersServer  # noqa: E402
from rlforge.local_model import find_gguf  # noqa: E402

SINGLE_TURN = "tickets.triage,logs.diagnose,tickets.reply"


def rlforge(*args: str, db: Path) -> subprocess.CompletedProcess:
    """One `rlforge` command with the benchmark's database; stops on failure."""
    env = {**os.environ, "RLFORGE_DB": str(db)}
    done = subprocess.run([sys.executable, "-m", "rlforge", *args], env=env, text=True,
                          capture_output=True)
    if done.returncode not in (0, 3):  # 3: below a pass-rate gate, still a result
        sys.exit(f"rlforge {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def build_sample_tasks(out: Path, db: Path, limit: int) -> None:
    """Ingest sample_data/ and build its single-turn tasks into `out` (as the demo does)."""
    data = ROOT / "sample_data"
    rlforge("ingest", "tickets", str(data / "tickets/tickets.csv"), db=db)
    rlforge("ingest", "tickets", str(data / "tickets/zendesk_export.json"),
            "--map", "category=custom_fields.360041872211", db=db)
    rlforge("ingest", "tickets", str(data / "tickets/jira_export.csv"),
            "--map", "category=Component/s", db=db)
    logs = sorted(str(p) for p in (data / "logs").rglob("*") if p.is_file()
                  and p.name.endswith((".log", ".log.gz", ".jsonl", ".syslog")))
    rlforge("ingest", "logs", *logs, db=db)
    rlforge("build-tasks", "--out", str(out), "--generators", SINGLE_TURN,
            "--limit", str(limit), "--seed", "1", db=db)


def held_out(tasks: Path, model: str | Path, name: str, run_id: str, args: argparse.Namespace,
             db: Path, split: str | None = None, samples: int | None = None
             ) -> dict[str, Counter]:
    """Serve `model`, run it on the held-out split (or `split`); {generator: Counter(pass=,
    n=)}. The run calibrates the model on those tasks (`task_stats`, under `name`)."""
    with TransformersServer(model, name, log_path=args.work / f"{run_id}.server.log") as server:
        rlforge("run", str(tasks), "--base-url", server.base_url, "--model", name,
                "--api-key-env", "", "--split", split or args.split, "--generators", args.generators,
                "--samples", str(samples or args.samples), "--seed", str(args.seed),
                "--temperature", str(args.temperature), "--max-tokens", str(args.max_tokens),
                "--concurrency", "1", "--request-timeout", str(args.request_timeout),
                "--time-budget", str(args.request_timeout),
                *(["--limit", str(args.limit)] if args.limit else []), "--runs-dir", str(args.work / "runs"), "--run-id", run_id,
                "--quiet", db=db)
    by_gen: dict[str, Counter] = {}
    for line in (args.work / "runs" / run_id / "rollouts.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["outcome"] == "invalid":
            continue
        c = by_gen.setdefault(r["generator"], Counter())
        c["n"] += 1
        c["pass"] += r["outcome"] == "pass"
    return by_gen


def rate(c: Counter) -> str:
    low, high = wilson(c["pass"], c["n"])
    return f"{c['pass']}/{c['n']} = {c['pass'] / max(c['n'], 1):.3f} [{low:.3f}, {high:.3f}]"


def verdict(before: Counter, after: Counter) -> str:
    """Whether `after`'s pass rate is apart from `before`'s: the 95% intervals disjoint."""
    (bl, bh), (al, ah) = wilson(before["pass"], before["n"]), wilson(after["pass"], after["n"])
    return "improved" if al > bh else "worse" if ah < bl else "no separable change"


def band_and_all(args: argparse.Namespace, db: Path, export: Path, gens: list[str],
                 grpo: dict, runs: dict[str, str], stamp: str, base: dict[str, Counter]
                 ) -> tuple[dict[str, dict[str, Counter]], dict[str, dict]]:
    """The calibration loop: warm up (if asked), measure the start model on the train split,
    then GRPO from that same start twice, on every train task ("trained") and on the band
    ("band"), and score both on the held-out split. Returns (held-out results by stage,
    training results by stage)."""
    stages: dict[str, dict[str, Counter]] = {"base": base}
    start: Path = find_gguf()
    start_name, warmed = "smollm2-135m-base", None
    if args.warm_up_gold or args.warm_up_samples:
        model, _, warmed = warm_up_start(
            export, args.work / "start", generators=gens, warm_up_samples=args.warm_up_samples,
            warm_up_gold=args.warm_up_gold, warm_up_learning_rate=args.warm_up_learning_rate,
            seed=args.seed, lora_rank=args.lora,
            max_completion_length=args.max_completion_length)
        del model
        start, start_name = args.work / "start" / "warm-up", "smollm2-135m-warm-up"
        runs["warm_up"] = f"learn-warm-up-{stamp}"
        stages["warm-up"] = held_out(args.tasks, start, start_name, runs["warm_up"], args, db)
    runs["calibration"] = f"learn-calibrate-{stamp}"
    measured = held_out(args.tasks, start, start_name, runs["calibration"], args, db,
                        split="train", samples=args.calibration_samples)
    print(f"{start_name} on the train split: " + ", ".join(
        f"{g} {rate(c)}" for g, c in sorted(measured.items())), flush=True)
    band_export = args.work / "trl-band"
    rlforge("export", "tasks", str(args.tasks), "--format", "trl", "--out", str(band_export),
            "--split", "all", "--force", "--difficulty", args.difficulty,
            "--difficulty-model", start_name, "--unmeasured", "drop", db=db)
    results: dict[str, dict] = {}
    runs["band"] = f"learn-band-{stamp}"
    for stage, rows, out in (("trained", export, args.work / "trained"),
                             ("band", band_export, args.work / "trained-band")):
        model, tokenizer = load_policy(start)
        if args.lora:
            model = with_lora(model, args.lora)
        results[stage] = train(rows, out, generators=gens, model=model, tokenizer=tokenizer,
                               **grpo)
        del model
        stages[stage] = held_out(args.tasks, out, f"smollm2-135m-grpo-{stage}", runs[stage],
                                 args, db)
    if warmed:
        results["trained"]["warm_up"] = warmed
    return stages, results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=Path, default=ROOT / "demo" / "learn-tasks",
                   help="a build-tasks output (built from sample_data/ when missing)")
    p.add_argument("--work", type=Path, default=ROOT / "demo" / "learning")
    p.add_argument("--generators", default="tickets.triage", help="train and score these")
    p.add_argument("--split", default="test", help="the held-out split to score")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--warm-up-samples", type=int, default=0, metavar="N",
                   help="before GRPO, fine-tune on the base model's passing completions "
                   "among N samples per train task (0: no warm-up)")
    p.add_argument("--warm-up-learning-rate", type=float, default=5e-5)
    p.add_argument("--lora", type=int, default=0, metavar="RANK",
                   help="train a LoRA adapter of this rank instead of every weight")
    p.add_argument("--warm-up-gold", action="store_true",
                   help="before GRPO, fine-tune on the train tasks' gold answers; the "
                   "warmed-up checkpoint is scored on the held-out split too")
    p.add_argument("--samples", type=int, default=2, help="held-out samples per task")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=0, help="score at most this many tasks per "
                   "run, the calibration's too (0: all; a smoke test)")
    p.add_argument("--difficulty", metavar="LOW:HIGH", help="also train on the band: GRPO "
                   "runs twice from the same start (the warmed-up model, or the base): on "
                   "every train task, and only on those whose pass rate under the start "
                   "model lies in this band (measured first: --calibration-samples per "
                   "train task); both are scored")
    p.add_argument("--calibration-samples", type=int, default=4,
                   help="with --difficulty: samples per train task of the start model")
    p.add_argument("--request-timeout", type=float, default=600.0,
                   help="seconds per request and per rollout (the CPU server is slow on a "
                   "loaded machine; the tasks' own budget is 60 s)")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    db = args.work / "rlforge.duckdb"
    started = time.monotonic()
    if not (args.tasks / "manifest.parquet").exists():
        build_sample_tasks(args.tasks, db, limit=400)
    export = args.work / "trl"
    gens = [g.strip() for g in args.generators.split(",") if g.strip()]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs = {"base": f"learn-base-{stamp}", "trained": f"learn-trained-{stamp}"}
    rlforge("export", "tasks", str(args.tasks), "--format", "trl", "--out", str(export),
            "--split", "all", "--force", db=db)
    base = held_out(args.tasks, find_gguf(), "smollm2-135m-base", runs["base"], args, db)
    grpo = dict(steps=args.steps, batch=args.batch, num_generations=args.num_generations,
                max_completion_length=args.max_completion_length,
                learning_rate=args.learning_rate, seed=args.seed)
    trained = args.work / "trained"
    t0 = time.monotonic()
    if args.difficulty:
        stages, results = band_and_all(args, db, export, gens, grpo, runs, stamp, base)
        result = results["trained"]
    else:
        result = warm_then_train(export, trained, generators=gens,
                                 warm_up_samples=args.warm_up_samples,
                                 warm_up_gold=args.warm_up_gold,
                                 warm_up_learning_rate=args.warm_up_learning_rate,
                                 lora_rank=args.lora, **grpo)
        results = {"trained": result}
    train_seconds = time.monotonic() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if not args.difficulty:
        after = held_out(args.tasks, trained, "smollm2-135m-grpo", runs["trained"], args, db)
        stages = {"base": base, "trained": after}
        if "warm_up" in result:  # what the warm-up alone did, apart from GRPO
            runs["warm_up"] = f"learn-warm-up-{stamp}"
            stages = {"base": base, "warm-up": held_out(
                args.tasks, trained / "warm-up", "smollm2-135m-warm-up", runs["warm_up"],
                args, db), "trained": after}
    compare = rlforge("report", "--compare", runs["base"], runs["trained"], "--out",
                      str(args.work / "compare.html"), "--runs-dir", str(args.work / "runs"),
                      db=db)

    print(f"training: {train_seconds:.0f} s wall for every stage, peak RSS {rss_mb:.0f} MB "
          f"(batch {args.batch}, {args.num_generations} generations, "
          f"{args.max_completion_length} tokens, lr {args.learning_rate}"
          f"{f', LoRA rank {args.lora}' if args.lora else ''})")
    if "warm_up" in result:
        w, found = result["warm_up"], result["warm_up"]["sampled"]
        if found:
            print(f"warm-up sampling: base passed {found['passes']}/{found['completions']} "
                  f"train samples ({found['by_generator']}) in {found['seconds']:.0f} s")
        print(f"warm-up: SFT {w['sft']['steps']} steps on {w['sft']['rows']} "
              f"{'gold answers' if w['source'] == 'gold' else 'passing completions'} in "
              f"{w['sft']['seconds']:.0f} s, loss {' '.join(f'{x:.2f}' for x in w['sft']['loss'])}")
    for name, r in results.items():
        print(f"GRPO ({name}): {r['steps']} steps on {r['rows']} train rows of "
              f"{args.generators} in {r['seconds']:.0f} s")
        print("  reward curve (mean verifier reward per step): "
              + " ".join(f"{c['reward']:.2f}" for c in r["curve"]))
        print("  share of prompt groups with no reward spread (no gradient) per step: "
              + " ".join(f"{c['zero_std_groups']:.2f}" for c in r["curve"]
                         if c["zero_std_groups"] is not None))
    print(f"held-out ({args.split} split, {args.samples} samples/task, seed {args.seed}, "
          f"temperature {args.temperature}); pass rate [95% Wilson]:")
    for g in sorted(set().union(*stages.values())):
        print(f"  {g:<16} " + "   ".join(f"{name} {rate(stage.get(g, Counter()))}"
                                         for name, stage in stages.items()))
        for name in [n for n in stages if n not in ("base", "warm-up")]:
            print(f"    {name} against base: {verdict(stages['base'].get(g, Counter()), stages[name].get(g, Counter()))}")
        if "band" in stages:
            print(f"    band against trained on every task: "
                  f"{verdict(stages['trained'].get(g, Counter()), stages['band'].get(g, Counter()))}")
    print(f"runs: {', '.join(runs.values())} in {args.work / 'runs'}; "
          f"compare: {args.work / 'compare.html'} ({compare.returncode})")
    print(f"total wall {time.monotonic() - started:.0f} s; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
