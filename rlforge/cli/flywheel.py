"""`rlforge calibrate` and `rlforge tasks diff`: task difficulty measured from runs, and what
changed between two versions of a dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, state

tasks_app = typer.Typer(help="Dataset versions of a build-tasks output.", no_args_is_help=True)


def print_shares(cal: dict) -> None:
    """The saturated / dead / in-band table of a calibration, per model and generator."""
    for model, per_gen in cal["shares"].items():
        t = Table("generator", "tasks", "saturated", "dead", f"in band {cal['band']}",
                  title=f"difficulty of {model} ({cal['method']}, runs {', '.join(cal['runs'])})")
        for gen, s in per_gen.items():
            t.add_row(gen, f"{s['tasks']:,}", f"{s['saturated_share']:.0%} ({s['saturated']})",
                      f"{s['dead_share']:.0%} ({s['dead']})",
                      f"{s['in_band_share']:.0%} ({s['in_band']})",
                      style="bold" if gen == "all" else None)
        console.print(t)


def calibrate(
    ctx: typer.Context,
    run_ids: list[str] = typer.Argument(..., help="runs whose rollouts are pooled"),
    band: str = typer.Option("0.2:0.8", "--band", help="the band the in-band share counts"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable result"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Estimate each task's pass rate per model (Wilson 95% interval) from runs; store it."""
    from rlforge import difficulty

    chosen = difficulty.parse_band(band, "--band")
    con = db.connect(state(ctx).db_path)
    try:
        con.execute("BEGIN")
        cal = difficulty.calibrate(con, run_ids, chosen).to_dict()
        con.execute("COMMIT")
    finally:
        con.close()
    if as_json:
        console.print_json(json.dumps(cal))
    elif not quiet:
        print_shares(cal)
        console.print(f"{cal['tasks']:,} task estimates in table task_stats "
                      f"(calibration_id = '{cal['calibration_id']}')"
                      + "".join(f"; {m}" for m in cal["manifests"]), highlight=False,
                      soft_wrap=True)


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
    app.command("calibrate")(calibrate)
    app.add_typer(tasks_app, name="tasks")
