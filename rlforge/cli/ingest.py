"""`rlforge ingest tickets|commits|logs`: records in, DuckDB out, nothing lost.

Each command resolves its options, calls one of `rlforge.ingest.load`'s functions and
prints the `IngestBatch` it returns: a progress display while it works, then a summary.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich import box
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlforge.cli.common import console, err_console, shown_path, stage_progress, state
from rlforge.errors import UserError
from rlforge.ingest.load import (FileProgress, IngestBatch, IngestOptions, load_commits,
                                 load_logs, load_tickets)
from rlforge.ingest.ticket_formats import FORMATS as TICKET_FORMATS

app = typer.Typer(help="Load tickets, commits and logs into the DuckDB store.", no_args_is_help=True)


def parse_map(pairs: list[str] | None) -> dict[str, str]:
    """`FIELD=COLUMN` pairs from the command line into a dict."""
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise typer.BadParameter(f"{p!r} is not FIELD=COLUMN", param_hint="--map")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def ingest_options(cfg, no_redact: bool) -> IngestOptions:
    """Redaction and linking as the flags and settings resolve them."""
    return IngestOptions(redact=cfg.get("redact", False if no_redact else None),
                         redaction_off=cfg.get("redaction.off"),
                         redaction_patterns=cfg.get("redaction.patterns"),
                         phone_regions=cfg.get("redaction.phone_regions"),
                         recognizer=cfg.get("redaction.recognizer"),
                         link_patterns=cfg.get("links.key_patterns"),
                         link_repos=cfg.get("links.repos"))


@contextlib.contextmanager
def file_progress(label: str, files: int, quiet: bool) -> Iterator:
    """A progress callback for `rlforge.ingest.load`: on a terminal a bar over the files
    with rows/s (rows are counted as each file ends: nothing is claimed before the first
    does, except the records read of a repository, counted as git writes them); elsewhere
    a line per file, then every 15 s (with those records read, when there are)."""
    if quiet or not console.is_terminal:
        with stage_progress(f"ingest {label}", quiet) as update:
            def say(event: FileProgress) -> None:
                if update and event.stage == "reading":
                    update(f"reading {event.path}; files done", int(event.files_done),
                           event.files)
                elif update and event.stage == "records":
                    update(f"reading {event.path}; {label} read", event.records,
                           event.records_total)
            yield say
        return
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.completed:.0f}/{task.total} files"),
               TextColumn("{task.fields[rows]}  {task.fields[rate]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=files, rows="", rate="")

        def show(event: FileProgress) -> None:
            if event.stage == "reading":
                progress.update(task, description=f"{label} {event.path.name}")
            elif event.stage == "statement":
                progress.update(task, completed=event.files_done)
            elif event.stage == "records":
                rate = event.records / max(event.seconds, 1e-9)
                progress.update(task, completed=event.files_done,
                                rows=f"{event.records:,}/{event.records_total or 0:,} {label}",
                                rate=f"{rate:,.0f}/s")
            else:
                rate = event.rows / max(event.seconds, 1e-9)
                progress.update(task, completed=event.files_done, rows=f"{event.rows:,} rows",
                                rate=f"{rate:,.0f} rows/s")
        yield show


ALLOW_EMPTY_HELP = "a file from which nothing loads is not an error"


def report(batch: IngestBatch, *, as_json: bool, quiet: bool, noun: str = "records",
           allow_empty: bool = False, warn_unredacted: bool = True) -> int:
    """Print what the ingest did: the incident links, the per-file summary (table, or JSON
    for CI), then one error line per failed file (after its traceback when a bug failed it)
    and per file that loaded nothing (unless `allow_empty`); return the exit code (1 if any)."""
    results = batch.results
    failed = batch.failed
    empty = [] if allow_empty else batch.empty()
    if batch.links_error is not None:
        err_console.print(f"[yellow]warning:[/] incident links not updated ({batch.links_error}); "
                          "run `rlforge links --update`")
    elif not (quiet or as_json) and batch.links is not None and batch.links.tickets_relinked:
        from rlforge.links import THRESHOLD

        console.print(f"links: {batch.links.tickets_relinked} ticket(s) relinked, "
                      f"{batch.links.above} link(s) at or above confidence {THRESHOLD} "
                      "(rlforge links)")
    if warn_unredacted and not batch.redacted and not quiet and not as_json:
        console.print("[yellow]warning:[/] redaction is off (--no-redact): PII and secrets "
                      "were stored as they are")
    totals = batch.totals
    redactions = batch.redactions
    if as_json:
        console.print_json(json.dumps(batch.to_dict(allow_empty), default=str))
    elif not quiet:
        # No vertical rules and short headers: with the file column it fits 80 columns.
        t = Table(title=f"ingest summary ({noun})", box=box.SIMPLE_HEAD)
        t.add_column("file", overflow="fold", ratio=1, min_width=14)
        for name in ("format", "read", "loaded", "dup", "quar.", "flag.", "sec", "status"):
            t.add_column(name, no_wrap=True, justify="left" if name in ("format", "status") else "right")
        for r in results:
            kind = (r.format or "-") + (f" ({r.line_endings})" if r.line_endings not in (None, "LF") else "")
            t.add_row(shown_path(r.path), kind, f"{r.n_read:,}", f"{r.n_loaded:,}",
                      f"{r.n_duplicates:,}", f"{r.n_quarantined:,}", f"{r.n_flagged:,}",
                      f"{r.seconds:.2f}", "ok" if r.status == "ok" else "[red]failed[/]")
        if len(results) > 1:
            t.add_row("total", "", *(f"{totals[k]:,}" for k in
                                     ("n_read", "n_loaded", "n_duplicates", "n_quarantined",
                                      "n_flagged")), "", "")
        console.print(t)
        balanced = batch.reconciles
        console.print(f"read {totals['n_read']:,} = loaded {totals['n_loaded']:,} + duplicates "
                      f"{totals['n_duplicates']:,} + quarantined {totals['n_quarantined']:,}"
                      + ("" if balanced else "  [red]DOES NOT RECONCILE[/]"))
        if redactions:
            console.print("redacted: " + ", ".join(f"{k} {v:,}" for k, v in redactions.items()))
        reasons = batch.quarantine_reasons
        if reasons:
            console.print("quarantined: " + "; ".join(f"{k} ({v:,})" for k, v in reasons.items())
                          + "  — see table `quarantine`")
        for r in results:
            for note in r.notes:
                console.print(f"[yellow]note:[/] {r.path}: {note}")
    for r in failed:
        if r.traceback:  # a bug (rlforge's, not the file's): its traceback, then its line
            err_console.print(r.traceback.rstrip(), markup=False, highlight=False,
                              emoji=False, soft_wrap=True)
        err_console.print("[bold red]error:[/] " + escape(f"{r.path}: {r.error}")
                          + (" (traceback above; please report it)" if r.traceback else ""),
                          highlight=False, soft_wrap=True)
    for r, why in empty:
        err_console.print("[bold red]error:[/] " + escape(f"{r.path}: {why}; --allow-empty "
                                                          "accepts it"),
                          highlight=False, soft_wrap=True)
    if batch.close_error:
        err_console.print(f"[yellow]warning:[/] {batch.close_error}", highlight=False,
                          soft_wrap=True)
    return 1 if failed or empty else 0


@app.command("tickets")
def tickets(
    ctx: typer.Context,
    # (readable=False: an unreadable file fails alone, with the others ingested)
    paths: list[Path] = typer.Argument(..., readable=False, help="ticket exports (.csv, .json, .jsonl; .gz too)"),
    fmt: Optional[str] = typer.Option(None, "--format", help=f"auto, {', '.join(TICKET_FORMATS)} "
                                      "or a plug-in's (default: detected from content)"),
    map_: Optional[list[str]] = typer.Option(None, "--map", help="FIELD=COLUMN, repeatable: "
                                             "source_id, subject, body, category, intent, "
                                             "priority, status, resolution, created_at, "
                                             "resolved_at, tags"),
    no_redact: bool = typer.Option(False, "--no-redact", help="store PII and secrets as they are"),
    on_conflict: Optional[str] = typer.Option(None, "--on-conflict", help="same id, different "
                                              "content: quarantine (default) or replace"),
    origin: Optional[str] = typer.Option(None, "--origin", help="namespace of ticket ids "
                                         "(default: the export family, e.g. zendesk)"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help=ALLOW_EMPTY_HELP),
    as_json: bool = typer.Option(False, "--json", help="machine-readable summary"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Load support tickets; every record ends loaded, duplicate, or quarantined."""
    st = state(ctx)
    cfg = st.config
    mapping = {**cfg.get("ingest.tickets.mapping"), **parse_map(map_)}
    fmt = cfg.get("ingest.tickets.format", fmt)
    if fmt and fmt != "auto":  # a bad flag, before any file is read (exit 2, as export)
        from rlforge.ingest import ticket_formats

        try:
            ticket_formats.get(fmt)
        except UserError as exc:
            raise typer.BadParameter(str(exc), param_hint="--format") from None
    with file_progress("tickets", len(paths), quiet or as_json) as progress:
        batch = load_tickets(st.db_path, paths, fmt=fmt, mapping=mapping,
                             on_conflict=cfg.get("ingest.tickets.on_conflict", on_conflict),
                             origin=origin, options=ingest_options(cfg, no_redact),
                             progress=progress,
                             watch_statements=console.is_terminal and not (quiet or as_json))
    code = report(batch, as_json=as_json, quiet=quiet, noun="tickets", allow_empty=allow_empty)
    if code:
        raise typer.Exit(code)


@app.command("commits")
def commits(
    ctx: typer.Context,
    repos: list[Path] = typer.Argument(..., readable=False, help="local git repositories"),
    rev: Optional[str] = typer.Option(None, "--rev", help="revision range in git rev-list "
                                      "syntax, e.g. 'main~300..main' (default: all refs)"),
    no_redact: bool = typer.Option(False, "--no-redact", help="store authors and messages as they are"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help=ALLOW_EMPTY_HELP),
    as_json: bool = typer.Option(False, "--json", help="machine-readable summary"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Load the commits of local git repositories (incremental: known commits are skipped)."""
    st = state(ctx)
    cfg = st.config
    with file_progress("commits", len(repos), quiet or as_json) as progress:
        batch = load_commits(st.db_path, repos, rev=cfg.get("ingest.commits.rev", rev),
                             options=ingest_options(cfg, no_redact), progress=progress)
    code = report(batch, as_json=as_json, quiet=quiet, noun="commits", allow_empty=allow_empty,
                  warn_unredacted=False)
    if code:
        raise typer.Exit(code)


@app.command("logs")
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
    st = state(ctx)
    cfg = st.config
    fmt = cfg.get("ingest.logs.format", fmt)
    keys = {**cfg.get("ingest.logs.keys"), **parse_map(key)}
    if fmt and fmt != "auto":  # a bad flag, before any file is read (exit 2, as export)
        from rlforge.ingest.logformats.registry import make_format

        try:
            make_format(fmt, keys)
        except UserError as exc:
            raise typer.BadParameter(str(exc), param_hint="--format") from None
    with file_progress("logs", len(paths), quiet or as_json) as progress:
        batch = load_logs(st.db_path, paths, fmt=fmt,
                          masks=cfg.get("ingest.logs.masks", list(mask) if mask else None),
                          keys=keys, unparsed=cfg.get("ingest.logs.unparsed", unparsed),
                          year=year, options=ingest_options(cfg, no_redact), progress=progress)
    code = report(batch, as_json=as_json, quiet=quiet, noun="log records",
                  allow_empty=allow_empty)
    if code:
        raise typer.Exit(code)
