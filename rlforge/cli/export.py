"""`rlforge export tasks|rollouts`: datasets for trainers from task directories and runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from rlforge.cli.common import (console, difficulty_model_option, difficulty_option,
                                err_console, selection, state, unmeasured_option)

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
    for split, n in report["rows"].items():
        if not n:
            err_console.print(f"[yellow]note:[/] no {split} tasks: no {split} file written",
                              highlight=False, soft_wrap=True)


@app.command("tasks")
def tasks(
    ctx: typer.Context,
    tasks_dir: Path = typer.Argument(..., help="a build-tasks output (or one task directory)"),
    fmt: str = typer.Option(..., "--format", "-f", help="verl, trl, jsonl or hf"),
    split: str = typer.Option("train", "--split", help="train, val, test, a comma-separated "
                              "list, or all"),
    out: Path = typer.Option(..., "--out", "-o", help="output directory (files are named by split)"),
    force: bool = typer.Option(False, "--force", help="replace the contents of a non-empty --out"),
    difficulty: Optional[str] = difficulty_option(),
    difficulty_model: Optional[str] = difficulty_model_option(),
    unmeasured: Optional[str] = unmeasured_option(),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="verl/trl: count prompt "
                                            "tokens with this tokenizer (a Hugging Face name or "
                                            "directory, or a .gguf file; default: an approximation)"),
    max_prompt_length: Optional[int] = typer.Option(None, "--max-prompt-length", min=1,
                                                    help="verl/trl: warn about prompts longer "
                                                    "than this many tokens (the trainer's limit)"),
    filter_overlong: bool = typer.Option(False, "--filter-overlong", help="leave out the rows "
                                         "longer than --max-prompt-length"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable report"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Export task directories as a trainer's dataset (veRL parquet, TRL, JSONL, HF folder)."""
    from rlforge.export.tasks import TASK_FORMATS, export_tasks, parse_splits

    if fmt not in TASK_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(TASK_FORMATS)}", param_hint="--format")
    if filter_overlong and max_prompt_length is None:
        raise typer.BadParameter("give --max-prompt-length too", param_hint="--filter-overlong")
    st = state(ctx)
    chosen = selection(st.config, difficulty, difficulty_model, unmeasured)
    report = export_tasks(tasks_dir, fmt, out, parse_splits(split), force=force,
                          selection=chosen, db_path=st.db_path, model=difficulty_model,
                          tokenizer=tokenizer,
                          max_prompt_length=max_prompt_length,
                          filter_overlong=filter_overlong).to_dict()
    tokens = report.get("prompt_tokens", {})
    if tokens.get("overlong") and not tokens.get("filtered"):
        err_console.print(f"[yellow]warning:[/] {tokens['overlong']:,} prompt(s) longer than "
                          f"--max-prompt-length {tokens['max_prompt_length']:,} tokens (longest "
                          f"{tokens['max']:,}, counted by {tokens['counted_by']}); the trainer would "
                          "drop or truncate them. --filter-overlong leaves them out.",
                          highlight=False, soft_wrap=True)
    if as_json:
        console.print_json(json.dumps(report))
    elif not quiet:
        _print(report, f"export tasks --format {fmt} → {out}")
        if tokens:
            console.print(f"prompt tokens: longest {tokens['max']:,} (counted by {tokens['counted_by']})",
                          highlight=False)
        console.print(f"{report['total_rows']:,} rows written")


@app.command("rollouts")
def rollouts(
    ctx: typer.Context,
    run_id: str = typer.Argument(..., help="a run id (a directory under the runs directory) "
                                 "or the path of a run's directory"),
    fmt: str = typer.Option(..., "--format", "-f", help="sft, dpo or grpo"),
    out: Path = typer.Option(..., "--out", "-o", help="output directory (files are named by split)"),
    split: str = typer.Option("all", "--split", help="task split: train, val, test, a "
                              "comma-separated list, or all"),
    max_pairs: Optional[int] = typer.Option(None, "--max-pairs", min=1, help="dpo: pairs kept "
                                            "per task (default: its number of samples)"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="where runs/<run_id>/ "
                                            "live (default: run.runs_dir)"),
    force: bool = typer.Option(False, "--force", help="replace the contents of a non-empty --out"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable report"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Export a run's rollouts: SFT (passing chats), DPO (chosen/rejected pairs), GRPO (advantages)."""
    from rlforge.export.rollouts import ROLLOUT_FORMATS, export_rollouts
    from rlforge.export.tasks import parse_splits

    if fmt not in ROLLOUT_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(ROLLOUT_FORMATS)}", param_hint="--format")
    cfg = state(ctx).config
    where = cfg.get("run.runs_dir", str(runs_dir) if runs_dir else None)
    report = export_rollouts(run_id, fmt, out, runs_dir=where, splits=parse_splits(split),
                             force=force, max_pairs_per_task=max_pairs,
                             db_path=state(ctx).db_path).to_dict()
    if as_json:
        console.print_json(json.dumps(report))
    elif not quiet:
        _print(report, f"export rollouts {report['run_id']} --format {fmt} → {out}")
        console.print(f"{report['total_rows']:,} rows from {report['rollouts']:,} rollouts; "
                      f"{report['excluded_invalid']:,} infrastructure-invalid rollouts excluded")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")
