"""`rlforge export tasks`: datasets for trainers from task directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from rlforge.cli import console, err_console

app = typer.Typer(help="Write tasks and rollouts as datasets trainers read (veRL, TRL, "
                  "Hugging Face, JSONL; SFT, DPO, GRPO).", no_args_is_help=True)


def _print(report: dict, title: str) -> None:
    console.print(f"[bold]{title}[/]", highlight=False, soft_wrap=True)
    t = Table("split", "rows")
    for split, n in report["rows"].items():
        t.add_row(split, f"{n:,}")
    console.print(t)
    for reason, n in report["skipped"].items():
        err_console.print(f"  skipped {n:,} × {reason}", highlight=False, soft_wrap=True)
    for f in report["files"]:
        console.print(f"  wrote {f}", highlight=False, soft_wrap=True)


@app.command("tasks")
def tasks(
    tasks_dir: Path = typer.Argument(..., help="a build-tasks output (or one task directory)"),
    fmt: str = typer.Option(..., "--format", "-f", help="verl, trl, jsonl or hf"),
    split: str = typer.Option("train", "--split", help="train, val, test, a comma-separated "
                              "list, or all"),
    out: Path = typer.Option(..., "--out", "-o", help="output directory (files are named by split)"),
    force: bool = typer.Option(False, "--force", help="replace the contents of a non-empty --out"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable report"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Export task directories as a trainer's dataset (veRL parquet, TRL, JSONL, HF folder)."""
    from rlforge.export.tasks import TASK_FORMATS, export_tasks, parse_splits

    if fmt not in TASK_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(TASK_FORMATS)}", param_hint="--format")
    report = export_tasks(tasks_dir, fmt, out, parse_splits(split), force=force).to_dict()
    if as_json:
        console.print_json(json.dumps(report))
    elif not quiet:
        _print(report, f"export tasks --format {fmt} → {out}")
        console.print(f"{report['total_rows']:,} rows written")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")
