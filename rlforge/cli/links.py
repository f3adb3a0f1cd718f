"""`rlforge links`: the incident links between tickets, commits and log windows."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlforge.cli.common import console, state


def links_cmd(
    ctx: typer.Context,
    min_confidence: Optional[float] = typer.Option(
        None, "--min-confidence", min=0.0, max=1.0,
        help="show links at or above this confidence (default: the threshold the incident "
        "generators use, 0.7)"),
    ticket: Optional[str] = typer.Option(None, "--ticket", help="only this ticket's links "
                                         "(its id as stored, e.g. jira:SUP-101)"),
    update: bool = typer.Option(False, "--update", help="relink every ticket first (ingest "
                                "links new records by itself)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Show which ticket reported what: the commits that fixed it and the log windows that
    show it, each with its evidence (ticket keys, URLs, shared ids, bursts) and confidence."""
    from rlforge import links

    st = state(ctx)
    floor = links.THRESHOLD if min_confidence is None else min_confidence
    done, rows = links.shown(st.db_path, floor, ticket,
                             relink=st.config.settings().links if update else None)
    if done is not None and not as_json:
        console.print(f"relinked {done.tickets_relinked} ticket(s): {done.links} link(s)")
    if as_json:
        print(json.dumps(rows, default=str, indent=1))
        return
    if not rows:
        console.print(f"no links at or above confidence {floor:g}"
                      " (ingest tickets with commits or logs first)")
        return
    t = Table(title=f"incident links (confidence ≥ {floor:g})")
    t.add_column("conf.", justify="right", no_wrap=True)
    t.add_column("ticket", no_wrap=True)
    t.add_column("target", overflow="fold", ratio=2)
    t.add_column("evidence", overflow="fold", ratio=2)
    for r in rows:
        if r["target_kind"] == "commit":
            target = f"commit {r['sha'][:10]} {r['subject'] or ''}"
        else:
            where = " ".join(x for x in (r["component"], r["host"]) if x)
            target = (f"log {r['log_file'].rsplit('/', 1)[-1]} {r['window_start']:%Y-%m-%d %H:%M}"
                      f"–{r['window_end']:%H:%M} {where}" if r["window_start"] else
                      f"log {r['log_file']}")
        evidence = "; ".join(f"{e['kind']} {e['value']} ({e['confidence']:.2f})" for e in r["evidence"])
        t.add_row(f"{r['confidence']:.2f}", escape(r["ticket_id"]), escape(target), escape(evidence))
    console.print(t)


def register(app: typer.Typer) -> None:
    app.command("links")(links_cmd)
