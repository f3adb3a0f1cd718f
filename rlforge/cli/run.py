"""`rlforge run` and `rlforge rescore`: rollouts against an endpoint, a live view, a CI gate."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rlforge import execution
from rlforge.cli.common import (console, difficulty_model_option, difficulty_option,
                                err_console, print_shares, selection, state,
                                unmeasured_option)
from rlforge.cli.ray import executor_option, ray_address_option
from rlforge.errors import GateFailed, UserError


def run(
    ctx: typer.Context,
    tasks_dir: Optional[Path] = typer.Argument(None, help="a directory of tasks (from "
                                               "build-tasks), or one task; omit with --resume"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint, "
                                           "e.g. http://127.0.0.1:8000/v1 (default: the embedded "
                                           "local model)"),
    model: Optional[str] = typer.Option(None, "--model", help="model name sent to the endpoint"),
    adapter: Optional[str] = typer.Option(None, "--adapter", help="a LoRA adapter (GGUF) to "
                                          "serve the embedded model with: a file (e.g. from "
                                          "examples/gguf_adapter.py) or the name of one rlforge "
                                          "ships (smollm2-135m-triage)"),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="NAME of the env "
                                              "variable holding the API key"),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, help="samples per task "
                                          "(a GRPO group; pass@k for every k up to it)"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", min=1,
                                              help="rollouts in flight"),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1,
                                             help="max tokens per completion"),
    seed: Optional[int] = typer.Option(None, "--seed", help="base seed of the samples' seeds"),
    min_pass_rate: Optional[float] = typer.Option(None, "--min-pass-rate", min=0.0, max=1.0,
                                                  help="exit 3 when the pass rate is below this"),
    max_infra_error_rate: Optional[float] = typer.Option(
        None, "--max-infra-error-rate", min=0.0, max=1.0,
        help="exit 4 when the share of rollouts lost to infrastructure errors is above this"),
    time_budget: Optional[float] = typer.Option(None, "--time-budget", min=0.0,
                                                help="seconds per rollout (0: the task's "
                                                "[agent] timeout_sec)"),
    max_turns: Optional[int] = typer.Option(None, "--max-turns", min=1,
                                            help="policy turns per multi-turn rollout"),
    request_timeout: Optional[float] = typer.Option(None, "--request-timeout", min=0.1,
                                                    help="seconds per request to the endpoint"),
    tool_protocol: Optional[str] = typer.Option(None, "--tool-protocol",
                                                help="auto, tools or text (```bash blocks)"),
    generators: Optional[str] = typer.Option(None, "--generators", help="only tasks of these "
                                             "generators, e.g. tickets.triage,tickets.reply"),
    split: Optional[str] = typer.Option(None, "--split", help="only tasks of this split "
                                        "(or of these: val,test)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="N tasks, taken in turn "
                                        "from each generator (by task id)"),
    difficulty: Optional[str] = difficulty_option(),
    difficulty_model: Optional[str] = difficulty_model_option(),
    unmeasured: Optional[str] = unmeasured_option(),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="RUN_ID",
                                         help="finish an interrupted run: no rollout lost or "
                                         "run twice"),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="name of the new run "
                                         "(default: date-time-random)"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="where runs/<run_id>/ "
                                            "go (default: runs)"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="bwrap (default) or none (unsafe)"),
    executor: Optional[str] = executor_option("rollouts and their sandboxes"),
    ray_address: Optional[str] = ray_address_option(),
    judge: Optional[bool] = typer.Option(None, "--judge/--no-judge", help="score reply tasks "
                                         "with the judge build-tasks checked on them "
                                         "(TASKS_DIR/judge.json; default: when there is one)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live view; errors and the gate only"),
) -> None:
    """Run tasks against a model: rollouts stored in runs/<run_id>/ and DuckDB, pass@k, a CI gate.

    Exit codes: 0 ok, 1 user error, 3 pass rate below --min-pass-rate, 4 infrastructure
    error rate above --max-infra-error-rate.
    """
    from rlforge.run import Progress, resume as resume_run, start
    from rlforge.run.store import new_run_id

    cfg = state(ctx).config
    cfg.with_flags(run__base_url=base_url, run__model=model,
                   run__adapter=adapter, run__api_key_env=api_key_env,
                   run__samples=samples, run__concurrency=concurrency,
                   run__temperature=temperature, run__max_tokens=max_tokens, run__seed=seed,
                   run__min_pass_rate=min_pass_rate,
                   run__max_infra_error_rate=max_infra_error_rate,
                   run__time_budget=time_budget, run__max_turns=max_turns,
                   run__request_timeout=request_timeout, run__tool_protocol=tool_protocol,
                   run__runs_dir=str(runs_dir) if runs_dir else None, sandbox__mode=sandbox,
                   run__executor=executor, ray__address=ray_address, run__judge=judge)
    if cfg.get("sandbox.mode") == "none":
        err_console.print("[bold yellow]warning:[/] --sandbox none: the policy's commands and "
                          "the verifiers run WITHOUT isolation")
    settings = cfg.settings()
    progress = Progress()
    backend = execution.choose(cfg, "run.executor")
    if resume:
        changed = [name for name, value in (
            ("TASKS_DIR", tasks_dir), ("--base-url", base_url), ("--model", model),
            ("--adapter", adapter),
            ("--api-key-env", api_key_env), ("--samples", samples), ("--seed", seed),
            ("--temperature", temperature), ("--max-tokens", max_tokens),
            ("--generators", generators), ("--split", split), ("--limit", limit),
            ("--run-id", run_id), ("--time-budget", time_budget), ("--max-turns", max_turns),
            ("--tool-protocol", tool_protocol), ("--difficulty", difficulty),
            ("--difficulty-model", difficulty_model), ("--unmeasured", unmeasured),
            ("--judge/--no-judge", judge))
            if value is not None]
        if changed:
            raise UserError(f"--resume continues the run as it was planned; drop "
                            f"{', '.join(changed)} (only --concurrency and the gates may change)")
        name = resume
        call = lambda: resume_run(settings, resume,  # noqa: E731
                                  concurrency=concurrency, min_pass_rate=min_pass_rate,
                                  max_infra_error_rate=max_infra_error_rate, progress=progress,
                                  backend=backend)
    else:
        if tasks_dir is None:
            raise UserError("give a directory of tasks (rlforge run TASKS_DIR) or --resume RUN_ID")
        name = run_id or new_run_id()
        gens = [g.strip() for g in generators.split(",") if g.strip()] if generators else None
        chosen = selection(cfg, difficulty, difficulty_model, unmeasured)
        call = lambda: start(settings, tasks_dir, run_id=name, generators=gens,  # noqa: E731
                             split=split, limit=limit, progress=progress, backend=backend,
                             difficulty_selection=chosen)
    report = _with_live_view(call, progress, name, quiet or as_json, "run")
    _finish(report, as_json, quiet)


def rescore(
    ctx: typer.Context,
    run_id: str = typer.Argument(..., help="the run to re-score (a directory in runs/)"),
    min_pass_rate: Optional[float] = typer.Option(None, "--min-pass-rate", min=0.0, max=1.0,
                                                  help="exit 3 when the pass rate is below this"),
    max_infra_error_rate: Optional[float] = typer.Option(None, "--max-infra-error-rate",
                                                         min=0.0, max=1.0,
                                                         help="exit 4 above this infra error rate"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="where the run lives "
                                            "(default: runs)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="errors and the gate only"),
) -> None:
    """Re-run the verifiers on a run's stored submissions, without calling the model."""
    from rlforge.run import Progress, rescore as rescore_run

    cfg = state(ctx).config
    cfg.with_flags(run__runs_dir=str(runs_dir) if runs_dir else None)
    settings = cfg.settings()
    progress = Progress()
    report = _with_live_view(lambda: rescore_run(settings, run_id,
                                                 min_pass_rate=min_pass_rate,
                                                 max_infra_error_rate=max_infra_error_rate,
                                                 progress=progress),
                             progress, run_id, quiet or as_json, "rescore")
    _finish(report, as_json, quiet)


# --- output ------------------------------------------------------------------------------

def _with_live_view(call, progress, run_id: str, silent: bool, verb: str):
    """Run `call` with a live view on a terminal, a line every 15 s elsewhere."""
    try:
        if silent:
            return call()
        if err_console.is_terminal:
            with Live(_LiveView(progress, run_id, verb), console=err_console,
                      refresh_per_second=4, transient=True):
                return call()
        stop = threading.Event()

        def ticker() -> None:
            while not stop.wait(15.0):
                err_console.print(_status_line(progress, run_id), highlight=False, soft_wrap=True)

        thread = threading.Thread(target=ticker, name="rlforge-progress", daemon=True)
        thread.start()
        try:
            return call()
        finally:
            stop.set()
    except KeyboardInterrupt:
        if verb == "run":
            err_console.print(f"interrupted; finished rollouts are stored. Continue with: "
                              f"rlforge run --resume {run_id}", soft_wrap=True)
        raise


def _status_line(p, run_id: str) -> str:
    rate = "n/a" if p.pass_rate is None else f"{p.pass_rate:.1%}"
    errors = ", ".join(f"{k} {v}" for k, v in p.errors.most_common(4)) or "none"
    return (f"{run_id}: {p.done:,}/{p.total:,} done, {p.in_flight} in flight, pass rate {rate}, "
            f"{p.tokens_per_second:,.0f} tokens/s, {p.rollouts_per_second:,.1f} rollouts/s, "
            f"errors: {errors}")


class _LiveView:
    """The live table, rebuilt from the counters at each refresh."""

    def __init__(self, progress, run_id: str, verb: str):
        self.p = progress
        self.run_id = run_id
        self.verb = verb

    def __rich__(self):
        p = self.p
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        if not p.total:
            t.add_row(f"{self.verb} {self.run_id}", "reading the tasks, planning the run…")
            return t
        share = p.done / p.total
        bar = "█" * int(share * 30) + "·" * (30 - int(share * 30))
        t.add_row(f"{self.verb} {self.run_id}", f"{bar} {p.done:,}/{p.total:,} "
                  f"({p.in_flight} in flight, {p.elapsed:,.0f}s)")
        rate = "n/a" if p.pass_rate is None else f"{p.pass_rate:.1%}"
        outcomes = "  ".join(f"{k} {p.outcomes[k]:,}" for k in ("pass", "fail", "timeout", "invalid"))
        t.add_row("pass rate", f"{rate}   ({outcomes})")
        t.add_row("throughput", f"{p.tokens_per_second:,.0f} completion tokens/s, "
                  f"{p.rollouts_per_second:,.1f} rollouts/s")
        errors = ", ".join(f"{k} {v:,}" for k, v in p.errors.most_common(6)) or "none"
        t.add_row("errors", Text(errors, style="red" if p.errors else ""))
        return t


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.1%}"


def _finish(report, as_json: bool, quiet: bool) -> None:
    data = report.to_dict()
    if report.notice:
        err_console.print(f"[bold yellow]note:[/] {report.notice}", soft_wrap=True)
    if as_json:
        console.print_json(json.dumps(data, default=str))
    elif not quiet:
        _print_summary(data)
    if report.exit_code:
        raise GateFailed(report.gate, report.exit_code)


def _print_summary(d: dict[str, Any]) -> None:
    ks = sorted(d["pass_at_k"], key=int)
    shown_k = [k for k in ks if k in ("1", ks[-1])] if ks else []
    t = Table("generator", "n", "pass", "fail", "t/o", "inv", "rate", "reward",
              *[f"pass@{k}" for k in shown_k], box=box.SIMPLE_HEAD, pad_edge=False,
              collapse_padding=True,
              title=f"run {d['run_id']}: {d['model'] or 'embedded model'}, {d['samples']} "
                    f"sample(s) per task", caption="t/o: past the time budget; inv: invalid "
                    "(infrastructure failed, not counted against the policy)")
    t.columns[0].no_wrap = True
    for name, g in d["by_generator"].items():
        t.add_row(name, f"{g['rollouts']:,}", f"{g['pass']:,}", f"{g['fail']:,}",
                  f"{g['timeout']:,}", f"{g['invalid']:,}", _pct(g["pass_rate"]),
                  "-" if g["mean_reward"] is None else f"{g['mean_reward']:.3f}",
                  *[_pct(g["pass_at_k"].get(k)) for k in shown_k])
    t.add_section()
    t.add_row("all", f"{d['rollouts']:,}", f"{d['pass']:,}", f"{d['fail']:,}", f"{d['timeout']:,}",
              f"{d['invalid']:,}", _pct(d["pass_rate"]),
              "-" if d["mean_reward"] is None else f"{d['mean_reward']:.3f}",
              *[_pct(d["pass_at_k"].get(k)) for k in shown_k], style="bold")
    console.print(t)
    if len(d["by_split"]) > 1 or "-" not in d["by_split"]:
        s = Table("split", "n", "rate", "reward", "inv", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
        for name, g in d["by_split"].items():
            s.add_row(name, f"{g['rollouts']:,}", _pct(g["pass_rate"]),
                      "-" if g["mean_reward"] is None else f"{g['mean_reward']:.3f}",
                      f"{g['invalid']:,}")
        console.print(s)
    if len(ks) > 1:
        console.print("pass@k: " + "  ".join(f"@{k} {_pct(d['pass_at_k'][k])}" for k in ks),
                      highlight=False)
    if d["errors"]:
        console.print("errors by type: " + ", ".join(f"{k} {v:,}" for k, v in d["errors"].items()),
                      highlight=False)
    if d.get("rescored"):
        r = d["rescored"]
        console.print(f"re-scored {r['rescored']:,} submissions ({r['changed']:,} changed, "
                      f"{r['incomplete_submission']:,} of them incomplete); kept as they were: "
                      f"{r['no_submission']:,} without a submission, {r['too_large']:,} over a "
                      f"copy-out cap, {r['task_missing']:,} with the task gone", highlight=False)
    session = d["session"]
    console.print(f"infrastructure error rate {_pct(d['infra_error_rate'])}; "
                  f"{d['prompt_tokens']:,} prompt + {d['completion_tokens']:,} completion tokens; "
                  f"{session['rollouts']:,} rollouts this session in {session['seconds']:.1f}s",
                  highlight=False)
    if session.get("episodes_resumed") or session.get("episodes_restarted"):
        console.print(f"{session['episodes_resumed']:,} episodes continued from their last "
                      f"turn; {session['episodes_restarted']:,} started again (their snapshot "
                      "did not restore: `resumed` on the record says why)", highlight=False)
    console.print(f"rollouts: {d['run_dir']}/rollouts.jsonl and the `rollouts` table "
                  f"(run_id = '{d['run_id']}')", highlight=False, soft_wrap=True)
    if d.get("calibration"):
        print_shares(d["calibration"])


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("rescore")(rescore)
