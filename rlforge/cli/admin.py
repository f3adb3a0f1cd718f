"""`rlforge init`, `rlforge config show`, `rlforge status`: set-up and a look at the store."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, shown_path, state
from rlforge.config import CONFIG_FILE, render_default_file
from rlforge.errors import UserError

config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)


def init(
    path: Path = typer.Argument(Path(CONFIG_FILE), help="where to write the config file"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing file"),
) -> None:
    """Write a commented rlforge.toml with every setting at its default."""
    if path.exists() and not force:
        raise UserError(f"{path} already exists; pass --force to overwrite it")
    path.write_text(render_default_file(), encoding="utf-8")
    console.print(f"wrote {path}")


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Print every resolved setting and where it came from (secrets masked)."""
    cfg = state(ctx).config
    rows = cfg.explain()
    unknown = cfg.unknown_file_keys()
    if as_json:
        console.print_json(json.dumps({"settings": rows, "unknown_keys": unknown}, default=str))
        return
    table = Table("setting", "value", "source", "env var")
    for column in table.columns:  # a narrow terminal wraps a long value, never cuts it
        column.overflow = "fold"
    for r in rows:
        table.add_row(r["key"], json.dumps(r["value"]) if not isinstance(r["value"], str) else r["value"],
                      r["source"], r["env"])
    console.print(table)
    for key in unknown:
        console.print(f"[yellow]warning:[/] unknown key {key!r} in {cfg.file_path}")


def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    recent: int = typer.Option(10, "--recent", help="how many recent ingests to list"),
) -> None:
    """Row counts per table and the most recent ingests."""
    path = state(ctx).db_path
    con = db.connect(path, read_only=True)
    try:
        d = db.status(con, recent)
    finally:
        con.close()
    if as_json:
        console.print_json(json.dumps({"db": str(path), **d}, default=str))
        return
    counts, recent_rows, version, redacted = (d["tables"], d["recent_ingests"],
                                              d["schema_version"], d["redactions"])
    console.print(f"[bold]{path}[/] (schema version {version})")
    t = Table("table", "rows")
    for name, n in counts.items():
        t.add_row(name, f"{n:,}")
    console.print(t)
    if recent_rows:  # narrow enough for an 80-column CI log (duplicates: read - loaded -
        # quarantined); --json has every field
        r = Table(title="recent ingests", box=box.SIMPLE_HEAD, pad_edge=False)
        r.add_column("run", justify="right", no_wrap=True)
        r.add_column("file", overflow="fold", ratio=1, min_width=14)
        for name in ("format", "status", "read", "loaded", "quar.", "finished"):
            r.add_column(name, no_wrap=True,
                         justify="left" if name in ("format", "status", "finished") else "right")
        for row in recent_rows:
            done = row["finished_at"]
            r.add_row(str(row["run_id"]), shown_path(str(row["path"])), str(row["format"] or "-"),
                      str(row["status"]), *(f"{row[c] or 0:,}" for c in
                                            ("read", "loaded", "quarantined")),
                      done.strftime("%m-%d %H:%M") if hasattr(done, "strftime") else str(done or "-"))
        console.print(r)
    if redacted:
        k = Table("redacted kind", "redactions", box=box.SIMPLE_HEAD, pad_edge=False)
        for kind, n in redacted.items():
            k.add_row(kind, f"{n:,}")
        console.print(k)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.add_typer(config_app, name="config")
    app.command("status")(status)
