"""`rlforge forget`: a deletion request, from the key a customer gave to every copy rlforge
made (rlforge/forget.py), with a dry run and the audit log."""

from __future__ import annotations

import json
from typing import Optional

import typer

from rlforge.cli.common import console, shown_path, state

HELP = """Erase a customer (a deletion request) from everything rlforge made of them.

KEY is a ticket id (csv:10001), a pseudonym (<EMAIL_3f9a1c>), or an e-mail address or
name as the customer wrote it (hashed the way ingest hashed it; never stored). Removes
the tickets it matches with their messages and links, retires the tasks built from them
or holding their text (a new dataset version: `rlforge tasks diff` lists them), deletes
their task directories and rollouts, replaces the pseudonym elsewhere, lists the exports
to write again, and writes an audit row without the key. Exit 0 also when nothing
matched (said on the output). Run it again after a crash: it finishes what was pending.
"""


def forget(
    ctx: typer.Context,
    key: Optional[str] = typer.Argument(None, help="ticket id, pseudonym, e-mail or name "
                                        "(none: only finish requests a crash left pending)"),
    kind: str = typer.Option("auto", "--kind", help="how to read KEY: auto, ticket, "
                             "pseudonym, email or name"),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="print what would be removed; "
                                 "change nothing"),
    log: bool = typer.Option(False, "--log", help="list the audit log of past requests and exit"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable report"),
) -> None:
    from rlforge.forget import KEY_KINDS, audit_in, forget_in

    st = state(ctx)
    if log:
        rows = audit_in(st.db_path)
        if as_json:
            console.print_json(json.dumps(rows, default=str))
            return
        for r in rows:
            counts = ", ".join(f"{k} {v:,}" for k, v in r["counts"].items() if v)
            console.print(f"{r['forget_id']}  {r['status']}  key: {r['key_kind']}  "
                          f"{r['requested_at']:%Y-%m-%d %H:%M:%S}  {counts or 'nothing'}",
                          highlight=False, soft_wrap=True)
        if not rows:
            console.print("no deletion request recorded")
        return
    if kind not in KEY_KINDS:
        raise typer.BadParameter(f"must be one of {', '.join(KEY_KINDS)}", param_hint="--kind")
    report = forget_in(st.db_path, key, kind=kind, dry_run=dry_run)
    if report is None:
        console.print("no pending request; give a KEY to forget (see --help)")
        return
    if as_json:
        console.print_json(json.dumps(report.to_dict(), default=str))
        return
    for forget_id in report.resumed:
        console.print(f"finished pending request {forget_id} (a crash had left its files)",
                      highlight=False)
    if key is None:
        return
    if not report.matched:
        console.print(f"nothing matched this {report.key_kind} key: nothing to remove "
                      "(never ingested, or already forgotten)", highlight=False)
        return
    verb = "would remove" if report.dry_run else "removed"
    console.print(f"forget ({report.key_kind} key): {verb}", highlight=False)
    for what, n in report.counts.items():
        if n:
            console.print(f"  {what:<24} {n:>8,}", highlight=False)
    if report.tasks:
        console.print(f"tasks {'to retire' if report.dry_run else 'retired'} ({len(report.tasks)}):",
                      highlight=False)
        for t in report.tasks:
            console.print(f"  - {t['task_id']}  {t['generator']}  {shown_path(t['out_dir'] or '')}"
                          f"  ({t['why']})", highlight=False, soft_wrap=True)
    for out_dir, version in report.versions.items():
        console.print(f"dataset version v{version} of {shown_path(out_dir)} "
                      f"{'would retire' if report.dry_run else 'retires'} them "
                      f"(`rlforge tasks diff {version - 1} {version} --dir {shown_path(out_dir)}`)",
                      highlight=False, soft_wrap=True)
    if report.exports:
        console.print(f"exports to write again ({len(report.exports)}):", highlight=False)
        for e in report.exports:
            console.print(f"  {e['kind']} {e['format']}  {shown_path(e['out'])}  "
                          f"(written {e['written_at'][:19]})", highlight=False, soft_wrap=True)
    if not report.dry_run:
        console.print(f"audit: forget_log {report.forget_id} (kind of key and counts; "
                      "the key itself is not stored)", highlight=False)


forget.__doc__ = HELP


def register(app: typer.Typer) -> None:
    app.command("forget", help=HELP)(forget)
