"""`rlforge calibrate`: task difficulty measured from runs, stored for selection."""

from __future__ import annotations

import json

import typer
from rlforge.cli.common import console, print_shares, state


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
    cal = difficulty.calibrate_runs(state(ctx).db_path, run_ids, chosen).to_dict()
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
