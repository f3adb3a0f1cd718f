"""`rlforge ingest tickets|commits|logs`: records in, DuckDB out, nothing lost."""

from __future__ import annotations

import typer

app = typer.Typer(help="Load tickets, commits and logs into the DuckDB store.", no_args_is_help=True)
