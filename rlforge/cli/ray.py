"""`rlforge ray check`, and the `--executor` / `--ray-address` flags the Ray-capable commands share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from rlforge.cli.common import console, state
from rlforge.execution import BACKENDS

ray_app = typer.Typer(help="Scale-out on Ray: check a cluster before a run.", no_args_is_help=True)


def executor_option(work: str):
    """`--executor local|ray` for a command whose `work` can run in Ray workers."""
    names = "; ".join(f"{b.name}: {b.description}" for b in BACKENDS.values())
    return typer.Option(None, "--executor", help=f"where {work} run (default local) — {names}")


def ray_address_option(when: str = "with --executor ray: "):
    """`--ray-address HOST:PORT|auto`."""
    return typer.Option(None, "--ray-address", help=f"{when}HOST:PORT of the cluster's head, or "
                        "auto (default: a private instance on this machine)")


@ray_app.command("check")
def check(
    ctx: typer.Context,
    tasks_dir: Optional[Path] = typer.Argument(None, help="a directory of tasks: say which nodes "
                                               "see it by path (the others get copies)"),
    ray_address: Optional[str] = ray_address_option(when=""),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="bwrap (default: every node "
                                          "must build sandboxes) or none"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Start an rlforge worker on every Ray node, as a run would, and show what each offers."""
    from rlforge.execution.ray.cluster import RayOptions, describe_cluster

    cfg = state(ctx).config
    cfg.with_flags(ray__address=ray_address, sandbox__mode=sandbox)
    nodes = describe_cluster(RayOptions.from_settings(cfg.settings()), sandbox_workers=cfg.get("sandbox.workers"),
                             sandbox_mode=cfg.get("sandbox.mode"), tasks_dir=tasks_dir)
    if as_json:
        console.print_json(json.dumps({"nodes": nodes}))
        return
    table = Table("node", "id", "CPUs", "sandboxes", "sees the tasks",
                  title=f"rlforge ray check: {len(nodes)} node(s), every worker started")
    for n in nodes:
        sees = "-" if n["sees_tasks"] is None else "yes" if n["sees_tasks"] else "no: gets copies"
        table.add_row(n["host"], n["node_id"][:8], str(n["cpus"]), str(n["sandboxes"]), sees)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(ray_app, name="ray")
