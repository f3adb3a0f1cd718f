"""`rlforge build-tasks`, `rlforge validate` and `rlforge tasks diff`: Harbor task directories,
proven before use, and what changed between two versions of a dataset."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.table import Table

from rlforge import db, execution
from rlforge.cli.common import (console, difficulty_model_option, difficulty_option,
                                err_console, selection, stage_progress, state,
                                unmeasured_option)
from rlforge.cli.ray import executor_option, ray_address_option
from rlforge.errors import UserError


tasks_app = typer.Typer(help="Dataset versions of a build-tasks output.", no_args_is_help=True)


def build_tasks(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "--out", help="output directory (default: tasks/)"),
    generators: Optional[str] = typer.Option(None, "--generators", help="comma-separated names, "
                                             "e.g. tickets.triage,logs.diagnose (default: all)"),
    mix: Optional[str] = typer.Option(None, "--mix", help="weights per generator and per "
                                      "difficulty bin, comma-separated, e.g. tickets.triage=3, "
                                      "logs.diagnose=1, pass:0.2-0.5=1 (no spaces)"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="total tasks, shared by --mix"),
    seed: Optional[int] = typer.Option(None, "--seed", help="seed for sampling and rendering"),
    templates: Optional[Path] = typer.Option(None, "--templates", help="directory of templates "
                                             "overriding rlforge's own"),
    no_validate: bool = typer.Option(False, "--no-validate", help="skip sandboxed validation"),
    split_by: str = typer.Option("hash", "--split-by", help="hash (grouped, stable) or time"),
    cutoff: Optional[str] = typer.Option(None, "--cutoff", help="with --split-by time: first "
                                         "date of the test split, e.g. 2024-06-01"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="bwrap (default) or none (unsafe)"),
    force: bool = typer.Option(False, "--force", help="replace a non-empty --out directory"),
    difficulty: Optional[str] = difficulty_option(),
    difficulty_model: Optional[str] = difficulty_model_option(),
    unmeasured: Optional[str] = unmeasured_option(),
    executor: Optional[str] = executor_option("validation and the commits.repair checks"),
    ray_address: Optional[str] = ray_address_option(),
    list_: bool = typer.Option(False, "--list", help="list the generators and how many source "
                               "rows each can use now, then exit"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable report"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
    judge_base_url: Optional[str] = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible endpoint of a reply judge (checked "
        "on the reply tasks: gold must outscore shuffled replies)"),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="the judge's model"),
    judge_min_auc: float = typer.Option(0.8, "--judge-min-auc", min=0.5, max=1.0,
                                        help="refuse a judge below this gold-vs-shuffled AUC"),
) -> None:
    """Generate Harbor task directories from the store, validate them, write a manifest."""
    from rlforge.tasks import build as build_lib

    st = state(ctx)
    cfg = st.config
    if list_:
        con = db.connect(st.db_path)
        try:
            rows = build_lib.list_generators(con, cfg.settings())
        finally:
            con.close()
        if as_json:
            console.print_json(json.dumps(rows))
            return
        t = Table("generator", "verifier", "usable rows", "description")
        for r in rows:
            skip = "".join(f"\nskips {k}: {v}" for k, v in r["cannot_support"].items())
            if r["opt_in"]:
                skip += f"\nopt-in, built only when --generators names it: {r['opt_in']}"
            t.add_row(f"{r['name']}@{r['version']}", r["verifier"], f"{r['usable_rows']:,}"
                      + (f" ({r['why_none']})" if r["why_none"] else ""), r["description"] + skip)
        console.print(t)
        for r in rows:
            _print_runners(r["name"], r.get("runners", {}))
        return
    if split_by not in ("hash", "time"):
        raise typer.BadParameter("must be hash or time", param_hint="--split-by")
    when = None
    if cutoff:
        try:
            when = dt.datetime.fromisoformat(cutoff)
        except ValueError:
            raise typer.BadParameter(f"{cutoff!r} is not a date like 2024-06-01",
                                     param_hint="--cutoff") from None
    mode = cfg.get("sandbox.mode", sandbox)
    cfg.with_flags(tasks__executor=executor, ray__address=ray_address)
    opts = build_lib.BuildOptions(
        out=Path(cfg.get("tasks.out", str(out) if out else None)),
        generators=[g.strip() for g in generators.split(",") if g.strip()] if generators else None,
        mix=build_lib.parse_mix(mix), limit=limit, seed=cfg.get("tasks.seed", seed),
        templates=Path(t) if (t := cfg.get("tasks.templates", str(templates) if templates else None)) else None,
        validate=not no_validate, split_by=split_by, cutoff=when, sandbox_mode=mode,
        workers=cfg.get("sandbox.workers"), force=force,
        generator_options=cfg.get("tasks.generator_options"), config=cfg,
        backend=execution.choose(cfg, "tasks.executor"),
        selection=selection(cfg, difficulty, difficulty_model, unmeasured))
    if mode == "none" and opts.validate:
        err_console.print("[bold yellow]warning:[/] --sandbox none: validation runs task scripts "
                          "WITHOUT isolation")
    con = db.connect(st.db_path)
    try:
        with stage_progress("build-tasks", quiet or as_json) as update:
            def told(line: str) -> None:
                err_console.print(f"build-tasks: {line}", highlight=False, soft_wrap=True)

            report = build_lib.build_tasks(
                con, opts, update, reconnect=lambda: db.connect_when_free(st.db_path, told=told))
    except KeyboardInterrupt:
        err_console.print("build-tasks stopped; the tasks it finished are kept: run the same "
                          "command again to go on", soft_wrap=True)
        raise
    finally:
        con.close()
    if judge_base_url or judge_model:
        report.judge = _check_judge(report, judge_base_url, judge_model, judge_min_auc,
                                    opts.seed)
    if as_json:
        console.print_json(json.dumps(report.to_dict(), default=str))
    elif not quiet:
        _print_build(report)
    if report.emitted == 0:
        err_console.print("[bold red]error:[/] no task was emitted; see the drop reasons above "
                          "and `rlforge build-tasks --list` for usable source rows", soft_wrap=True)
        raise typer.Exit(1)
    if report.judge is not None and not report.judge["accepted"]:
        err_console.print(f"[bold red]error:[/] judge refused: {report.judge['summary']}; the "
                          "tasks are built without it", soft_wrap=True, highlight=False)
        raise typer.Exit(1)


def _check_judge(report, base_url: str | None, model: str | None, min_auc: float,
                 seed: int) -> dict:
    """Check the reply judge on the built reply tasks (host side): the figures."""
    from rlforge.tasks import judge as judge_lib

    if not (base_url and model):
        raise UserError("--judge-base-url and --judge-model go together")
    result = judge_lib.check_build(Path(report.out), judge_lib.Judge(base_url, model), seed,
                                   min_auc)
    return {**result.to_dict(), "summary": result.summary(), "model": model,
            "weight": judge_lib.JUDGE_WEIGHT}


def _print_runners(generator: str, by_repo: dict[str, str]) -> None:
    """One line per repository: the test runner a repair generator found, or why none."""
    for repo, runner in by_repo.items():
        named = runner.split(",", 1)[0]  # `go@1` or `go@1, whose results ...`: a runner
        how = f"runner {runner}" if "@" in named and " " not in named else f"no test runner ({runner})"
        console.print(f"  {generator} {repo}: {how}", highlight=False, soft_wrap=True)


def _print_build(report) -> None:
    from rlforge.tasks.generators.repair.spec import summary_line

    # The path goes on a line of its own: a table's title wraps at the table's width.
    console.print(f"build-tasks → {report.out}", highlight=False, soft_wrap=True)
    t = Table("generator", "candidates", "emitted", "dropped", "train", "val", "test")
    for g, s in report.per_generator.items():
        t.add_row(g, f"{s['candidates']:,}", f"{s['emitted']:,}", f"{s['dropped']:,}",
                  f"{s['split_train']:,}", f"{s['split_val']:,}", f"{s['split_test']:,}")
    console.print(t)
    for g, s in report.per_generator.items():
        if s["unaccounted"]:
            console.print(f"[yellow]  {g}: {s['unaccounted']:,} candidate(s) neither emitted "
                          "nor dropped[/]",
                          highlight=False, soft_wrap=True)
    for g, by_repo in getattr(report, "runners", {}).items():
        _print_runners(g, by_repo)
    for g, o in getattr(report, "opt_in", {}).items():
        if o["built"]:
            console.print(f"[yellow]  {g}: built because --generators names it, though "
                          f"{o['why']}[/]", highlight=False, soft_wrap=True)
        else:
            console.print(f"  {g}: not built (opt-in: --generators {g} builds it): {o['why']}",
                          highlight=False, soft_wrap=True)
    for g, fields in getattr(report, "learnability", {}).items():
        for name, f in sorted(fields.items()):
            console.print(
                f"  learnability {g} {name}: {f['folds']}-fold accuracy {f['accuracy']:.3f}, "
                f"macro-F1 {f['macro_f1']:.3f}; majority {f['majority']:.3f}; shuffled "
                f"{f['shuffled']:.3f}; lift {f['lift']:+.3f} over {f['n']:,} tickets → "
                + ("emitted" if f.get("emitted") else f"refused (need {f['min_lift']:+.2f})"),
                highlight=False, soft_wrap=True)
    for g, figures in getattr(report, "specification", {}).items():
        if figures.get("checked"):
            console.print(f"  specified {g}: {summary_line(figures)}", highlight=False, soft_wrap=True)
    if getattr(report, "judge", None):
        j = report.judge
        console.print(f"  judge {j['model']}: {j['summary']} → "
                      + (f"accepted (component `judge`, weight {j['weight']})" if j["accepted"]
                         else "refused"), highlight=False, soft_wrap=True)
    reasons = Counter(f"{d['generator']}: {d['reason'].split(' (')[0]}" for d in report.drops)
    for reason, n in reasons.most_common(12):
        console.print(f"  dropped {n:,} × {reason}", highlight=False, soft_wrap=True)
    if report.resumed:
        console.print(f"resumed an unfinished build: {report.resumed:,} tasks kept as they were")
    if report.difficulty:
        d = report.difficulty
        console.print(f"difficulty: model {d['model'] or '(none calibrated)'}, band "
                      f"{d['band'] or 'any'}, never-measured tasks {d['unmeasured']}; "
                      + ", ".join(f"dropped {n:,} × {why}" for why, n in d["dropped"].items()),
                      highlight=False, soft_wrap=True)
    console.print(f"rendered {report.rendered:,}, kept {report.reused:,} unchanged from the "
                  f"previous build; dataset version v{report.version} "
                  f"({report.version_hash[:12]}{', new' if report.new_version else ', unchanged'}"
                  f"{f', {report.retired:,} retired' if report.retired else ''})",
                  highlight=False)
    if report.limit is not None and report.emitted < report.limit:
        per = [f"{g} {s['emitted']:,}" + (f" (of {report.usable[g]:,} usable rows)"
                                           if g in report.usable else "")
               for g, s in report.per_generator.items()]
        console.print(f"[yellow]--limit {report.limit:,}: built {report.emitted:,}[/] (the "
                      "generators ran out of usable rows, or their tasks were dropped as "
                      "above): " + ", ".join(per), highlight=False, soft_wrap=True)
    console.print(f"{report.emitted:,} tasks in {report.seconds:.1f}s"
                  + ("" if report.validated else " [yellow](not validated)[/]")
                  + f"; manifest: {report.out}/manifest.parquet")


def validate(
    ctx: typer.Context,
    tasks_dir: Path = typer.Argument(..., help="a task directory, or a directory of tasks"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="bwrap (default) or none (unsafe)"),
    executor: Optional[str] = executor_option("the tasks' checks"),
    ray_address: Optional[str] = ray_address_option(),
    as_json: bool = typer.Option(False, "--json", help="machine-readable results"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print failures only"),
) -> None:
    """Prove tasks: gold solution scores 1, null and adversarial submissions score 0, no leaks."""
    from rlforge.sandbox import sandbox_settings
    from rlforge.taskdir import task_dirs

    cfg = state(ctx).config
    cfg.with_flags(tasks__executor=executor, ray__address=ray_address)
    backend = execution.choose(cfg, "tasks.executor")
    dirs = task_dirs(tasks_dir)
    mode = cfg.get("sandbox.mode", sandbox)
    settings = sandbox_settings(cfg.settings().sandbox, mode)
    if mode == "none":
        err_console.print("[bold yellow]warning:[/] --sandbox none: task scripts run WITHOUT isolation")
    with stage_progress("validate", quiet or as_json) as update:
        tick: Callable[[object], None] | None = None
        if update is not None:
            done = 0
            update("validating", 0, len(dirs))

            def tick(_result: object) -> None:
                nonlocal done
                done += 1
                update("validating", done, len(dirs))
        results = asyncio.run(backend.validate(dirs, workers=cfg.get("sandbox.workers"),
                                               sandbox_mode=mode, progress=tick,
                                               settings=settings))
    failed = [r for r in results if not r.ok]
    if as_json:
        console.print_json(json.dumps({"tasks": len(results), "passed": len(results) - len(failed),
                                       "failed": len(failed),
                                       "results": [r.to_dict() for r in results]}, default=str))
    else:
        by_gen: dict[str, Counter] = {}
        for r in results:
            by_gen.setdefault(r.generator, Counter())["ok" if r.ok else "failed"] += 1
        if not quiet:
            console.print(f"validate {tasks_dir}", highlight=False, soft_wrap=True)
            t = Table("generator", "tasks", "passed", "failed")
            for g, c in sorted(by_gen.items()):
                t.add_row(g, str(c["ok"] + c["failed"]), str(c["ok"]), str(c["failed"]))
            console.print(t)
        for r in failed:
            err_console.print(f"[red]FAIL[/] {r.task_id}: {r.reason}", highlight=False, soft_wrap=True)
        if not quiet:
            console.print(f"{len(results) - len(failed)}/{len(results)} tasks passed validation")
    if failed:
        raise typer.Exit(1)


@tasks_app.command("diff")
def diff(
    ctx: typer.Context,
    v1: str = typer.Argument(..., help="a version of --dir: its number (3 or v3) or "
                             "content-hash prefix; or a build directory or manifest file"),
    v2: str = typer.Argument(..., help="the later version, named the same way"),
    tasks_dir: Optional[Path] = typer.Option(None, "--dir", help="the build-tasks output "
                                             "holding the versions (default: tasks.out)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable result"),
) -> None:
    """List the tasks added, removed and changed from dataset version V1 to V2."""
    from rlforge.tasks.versions import diff_versions

    st = state(ctx)
    where = Path(st.config.get("tasks.out", str(tasks_dir) if tasks_dir else None))
    con = db.connect(st.db_path, read_only=True)
    try:
        d = diff_versions(con, where, v1, v2)
    finally:
        con.close()
    if as_json:
        console.print_json(json.dumps(d))
        return
    console.print(f"{d['from']['name']} ({d['from']['tasks']} tasks) → {d['to']['name']} "
                  f"({d['to']['tasks']} tasks): {len(d['added'])} added, "
                  f"{len(d['removed'])} removed, {len(d['changed'])} changed, "
                  f"{d['unchanged']} unchanged", highlight=False)
    for row in d["added"]:
        console.print(f"+ {row['task_id']}  {row['generator']}  {','.join(row['source_keys'])}",
                      highlight=False, soft_wrap=True)
    for row in d["removed"]:
        console.print(f"- {row['task_id']}  {row['generator']}  {','.join(row['source_keys'])}",
                      highlight=False, soft_wrap=True)
    for row in d["changed"]:
        console.print(f"~ {row['old_id']} → {row['new_id']}  {row['generator']}  "
                      f"{','.join(row['source_keys'])} ({row['why']})", highlight=False,
                      soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("build-tasks")(build_tasks)
    app.command("validate")(validate)
    app.add_typer(tasks_app, name="tasks")
