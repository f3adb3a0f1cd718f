"""`rlforge ingest logs` and `rlforge templates`: ops logs in, mined templates out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, state
from rlforge.cli.ingest import (ALLOW_EMPTY_HELP, link_new_records, make_redactor, parse_map,
                                report, run_files)
from rlforge.errors import UserError
from rlforge.ingest.common import IngestSession


def ingest_logs(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., readable=False, help="log files (.gz read transparently)"),
    fmt: Optional[str] = typer.Option(
        None, "--format", help="auto (detected from the first lines), jsonl, syslog, access, "
        "docker, cri, plain, a plug-in's, or a header format string such as "
        "'<Date> <Time> <Level> <Component>: <Content>' (a space matches one or more blanks; "
        "other text between fields is a regex fragment)"),
    mask: Optional[list[str]] = typer.Option(
        None, "--mask", help="regex whose matches are parameters (<*>) before template "
        "mining; repeatable"),
    key: Optional[list[str]] = typer.Option(
        None, "--key", help="ROLE=KEY for JSON lines, repeatable; roles: ts, level, message, "
        "component, host (dotted keys reach into objects, e.g. level=Level.Name)"),
    unparsed: Optional[str] = typer.Option(
        None, "--unparsed", help="lines that match no format: quarantine (default) or "
        "message-only (loaded with only their message, flagged)"),
    no_redact: bool = typer.Option(False, "--no-redact", help="store PII and secrets as they are"),
    year: Optional[int] = typer.Option(
        None, "--year", min=1971, max=2100, help="year of times written without one (classic "
        "syslog, `[10.30 16:49:06]`); default: the year of each file's modification time"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help=ALLOW_EMPTY_HELP),
    as_json: bool = typer.Option(False, "--json", help="machine-readable summary"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Load ops logs; every record ends loaded, duplicate, or quarantined, with its template."""
    from rlforge.ingest import logs as logs_lib

    st = state(ctx)
    cfg = st.config
    fmt = cfg.get("ingest.logs.format", fmt)
    masks = cfg.get("ingest.logs.masks", list(mask) if mask else None)
    keys = {**cfg.get("ingest.logs.keys"), **parse_map(key)}
    unparsed = cfg.get("ingest.logs.unparsed", unparsed)
    if fmt and fmt != "auto":  # a bad flag, before any file is read (exit 2, as export)
        from rlforge.ingest.logformats.registry import make_format

        try:
            make_format(fmt, keys)
        except UserError as exc:
            raise typer.BadParameter(str(exc), param_hint="--format") from None
    redact = cfg.get("redact", False if no_redact else None)
    session = IngestSession(st.db_path)
    try:
        redactor = make_redactor(session.con, redact, cfg, logs=True)
        results = run_files(paths, lambda p: session.run("logs", p, lambda con, p: logs_lib.ingest_file(
            con, p, fmt=fmt, masks=masks, keys=keys, unparsed=unparsed, redactor=redactor,
            year=year)),
            quiet=quiet or as_json, label="logs")
        link_new_records(session, cfg, quiet or as_json)
    finally:
        session.close()
    if not redact and not quiet and not as_json:
        console.print("[yellow]warning:[/] redaction is off (--no-redact): PII and secrets "
                      "were stored as they are")
    code = report(results, as_json=as_json, quiet=quiet, noun="log records", session=session,
                  allow_empty=allow_empty)
    if code:
        raise typer.Exit(code)


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
    from rlforge.cli.ingest import app as ingest_app

    ingest_app.command("logs")(ingest_logs)
    app.command("templates")(templates)
