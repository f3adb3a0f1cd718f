"""`rlforge ingest tickets|commits|logs`: records in, DuckDB out, nothing lost."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

import duckdb
import typer
from rich import box
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlforge import db
from rlforge.cli.common import console, err_console, stage_progress, state
from rlforge.errors import UserError
from rlforge.ingest.common import IngestResult, IngestSession, merge_counts
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


def make_redactor(con, enabled: bool, cfg=None, logs: bool = False):
    """The database's redactor (same key, same pseudonyms every run), or None if disabled;
    `cfg` (a Config) supplies the `redaction.*` settings; `logs` sets it for ops logs."""
    if not enabled:
        return None
    from rlforge.ingest.redaction.redactor import Redactor

    if cfg is None:
        return Redactor(db.redaction_key(con), logs=logs)
    return Redactor.configured(db.redaction_key(con), off=cfg.get("redaction.off"),
                               patterns=cfg.get("redaction.patterns"),
                               regions=cfg.get("redaction.phone_regions"), logs=logs)


def run_files(paths: Iterable[Path], one: Callable[[Path], IngestResult], *,
              quiet: bool, label: str, con=None) -> list[IngestResult]:
    """Ingest files one by one behind a progress display (rows/s), collecting results.

    With `con`, a background thread also shows how far DuckDB is through the current
    file's statement, so a single large file does not look stuck.
    """
    paths = list(paths)
    results: list[IngestResult] = []
    if quiet or not console.is_terminal:
        with stage_progress(f"ingest {label}", quiet) as update:  # a line per file, then every 15 s
            for i, p in enumerate(paths):
                if update:
                    update(f"reading {p}; files done", i, len(paths))
                results.append(one(p))
        return results
    columns = [SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.completed:.0f}/{task.total} files"),
               TextColumn("{task.fields[rows]}  {task.fields[rate]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        # rows are counted as each file ends: nothing is claimed before the first does
        task = progress.add_task(label, total=len(paths), rows="", rate="")
        started, rows, done = time.perf_counter(), 0, threading.Event()

        def poll() -> None:
            while not done.wait(0.25):
                try:
                    pct = con.query_progress()
                except Exception:  # no statement running at this instant
                    continue
                if pct is not None and 0 <= pct <= 100:
                    progress.update(task, completed=len(results) + pct / 100)

        watcher = threading.Thread(target=poll, daemon=True) if con is not None else None
        if watcher:
            con.execute("SET enable_progress_bar = true")  # tracked, not printed (db.connect)
            watcher.start()
        try:
            for p in paths:
                progress.update(task, description=f"{label} {p.name}")
                r = one(p)
                results.append(r)
                rows += r.n_read
                rate = rows / max(time.perf_counter() - started, 1e-9)
                progress.update(task, completed=len(results), rows=f"{rows:,} rows",
                                rate=f"{rate:,.0f} rows/s")
        finally:
            done.set()
            if watcher:
                watcher.join()
    return results


def link_new_records(session: IngestSession, cfg, quiet: bool) -> None:
    """Update the incident links (`rlforge.links`) with what this command loaded. The
    records are committed already: a failure here is a warning, and the next ingest or
    `rlforge links --update` links them."""
    from rlforge import links

    try:
        done = links.update(session.con, patterns=cfg.get("links.key_patterns"),
                            repos=cfg.get("links.repos"))
    except duckdb.Error as exc:
        err_console.print(f"[yellow]warning:[/] incident links not updated ({exc}); "
                          "run `rlforge links --update`")
        return
    if not quiet and done.tickets_relinked:
        console.print(f"links: {done.tickets_relinked} ticket(s) relinked, {done.above} link(s) "
                      f"at or above confidence {links.THRESHOLD} (rlforge links)")


def shown_path(path: str) -> str:
    """A stored (absolute) path as the table shows it: relative to the working directory
    when it lies under it, so the column stays narrow in an 80-column CI log."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


ALLOW_EMPTY_HELP = "a file from which nothing loads is not an error"


def nothing_loaded(r: IngestResult) -> str | None:
    """Why an ingested file gave the database nothing, or None when it did (or held only
    what was already stored): most often the wrong --format or --map."""
    if r.status != "ok" or r.n_loaded or r.n_duplicates or r.n_known:
        return None
    if not r.n_read:
        return (f"nothing loaded: no record read as {r.format or 'this format'} "
                "(check --format and --map)")
    top = max(r.quarantine_reasons.items(), key=lambda kv: kv[1], default=("", 0))[0]
    return (f"nothing loaded: all {r.n_read:,} records read as {r.format or 'this format'} "
            f"were quarantined" + (f" ({top})" if top else "") + " (check --format)")


def report(results: list[IngestResult], *, as_json: bool, quiet: bool, noun: str = "records",
           session: IngestSession | None = None, allow_empty: bool = False) -> int:
    """Print the per-file summary (table, or JSON for CI), then one error line per failed file
    (after its traceback when a bug failed it) and per file that loaded nothing (unless
    `allow_empty`); return the exit code (1 if any)."""
    failed = [r for r in results if r.status != "ok"]
    empty = [] if allow_empty else [(r, why) for r in results if (why := nothing_loaded(r))]
    totals = {k: sum(getattr(r, k) for r in results) for k in
              ("n_read", "n_loaded", "n_duplicates", "n_quarantined", "n_flagged")}
    redactions = merge_counts(*(r.redactions for r in results))
    if as_json:
        console.print_json(json.dumps({"files": [r.to_dict() for r in results], "totals": totals,
                                       "redactions": redactions, "failed": len(failed),
                                       "nothing_loaded": len(empty)},
                                      default=str))
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
        balanced = all(r.reconciles for r in results)
        console.print(f"read {totals['n_read']:,} = loaded {totals['n_loaded']:,} + duplicates "
                      f"{totals['n_duplicates']:,} + quarantined {totals['n_quarantined']:,}"
                      + ("" if balanced else "  [red]DOES NOT RECONCILE[/]"))
        if redactions:
            console.print("redacted: " + ", ".join(f"{k} {v:,}" for k, v in redactions.items()))
        reasons = merge_counts(*(r.quarantine_reasons for r in results))
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
    if session is not None and session.close_error:
        err_console.print(f"[yellow]warning:[/] {session.close_error}", highlight=False,
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
    from rlforge.ingest import tickets as tickets_lib

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
    conflict = cfg.get("ingest.tickets.on_conflict", on_conflict)
    redact = cfg.get("redact", False if no_redact else None)
    session = IngestSession(st.db_path)
    try:
        redactor = make_redactor(session.con, redact, cfg)
        results = run_files(paths, lambda p: session.run("tickets", p, lambda con, p: tickets_lib.ingest_file(
            con, p, fmt=fmt, mapping=mapping, redactor=redactor, on_conflict=conflict,
            origin=origin)), quiet=quiet or as_json, label="tickets", con=session.con)
        link_new_records(session, cfg, quiet or as_json)
    finally:
        session.close()
    if not redact and not quiet and not as_json:
        console.print("[yellow]warning:[/] redaction is off (--no-redact): PII and secrets "
                      "were stored as they are")
    code = report(results, as_json=as_json, quiet=quiet, noun="tickets", session=session,
                  allow_empty=allow_empty)
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
    from rlforge.ingest import commits as commits_lib

    st = state(ctx)
    cfg = st.config
    rev = cfg.get("ingest.commits.rev", rev)
    redact = cfg.get("redact", False if no_redact else None)
    session = IngestSession(st.db_path)
    try:
        redactor = make_redactor(session.con, redact, cfg)
        results = run_files(repos, lambda p: session.run("commits", p, lambda con, p: commits_lib.ingest_repo(
            con, p, rev=rev, redactor=redactor)), quiet=quiet or as_json, label="commits")
        link_new_records(session, cfg, quiet or as_json)
    finally:
        session.close()
    code = report(results, as_json=as_json, quiet=quiet, noun="commits", session=session,
                  allow_empty=allow_empty)
    if code:
        raise typer.Exit(code)
