"""`rlforge templates`: the log templates mined by `rlforge ingest logs`."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, state


def templates(
    ctx: typer.Context,
    top: int = typer.Option(20, "--top", min=0, help="how many templates (0 = all)"),
    level: Optional[str] = typer.Option(
        None, "--level", help="only templates with records at this level (trace, debug, "
        "info, notice, warn, error, fatal); counts are then of those records"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List the mined log templates: counts, first and last seen, an example."""
    from rlforge.ingest.logformats.levels import LEVELS, normalise_level
    from rlforge.ingest import templates as tm

    if level is not None:
        import polars as pl

        norm = normalise_level(pl.Series([level]))[0]
        if norm is None:
            raise typer.BadParameter(f"{level!r} is not a level; valid: {', '.join(LEVELS)}",
                                     param_hint="--level")
        level = norm
    con = db.connect(state(ctx).db_path, read_only=True)
    try:
        rows = tm.list_templates(con, top or None, level)
    finally:
        con.close()
    if as_json:
        console.print_json(json.dumps(rows, default=str))
        return
    if not rows:
        console.print("no templates" + (f" with {level} records" if level else "")
                      + " (run `rlforge ingest logs FILE` first)")
        return
    t = Table(title=f"log templates{f' ({level} records)' if level else ''}")
    t.add_column("template_id", no_wrap=True)
    t.add_column("count", justify="right", no_wrap=True)
    t.add_column("first / last seen", overflow="fold")
    t.add_column("template (example)", overflow="fold", ratio=1)
    for r in rows:
        example = (r["example"] or "").split("\n", 1)[0][:200]
        t.add_row(r["template_id"], f"{r['count']:,}",
                  f"{r['first_seen'] or '-'}\n{r['last_seen'] or '-'}",
                  f"{escape(r['template'])}\n[dim]{escape(example)}[/]")
    console.print(t)


def register(app: typer.Typer) -> None:
    app.command("templates")(templates)
