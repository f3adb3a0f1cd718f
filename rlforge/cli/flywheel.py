"""`rlforge calibrate`: task difficulty measured from runs, stored for selection."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, state


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


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
