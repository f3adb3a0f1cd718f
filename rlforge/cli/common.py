"""What every command module shares: the consoles and the state the root callback keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from rlforge.config import Config

console = Console()
err_console = Console(stderr=True)


@dataclass
class State:
    """What the root callback resolved, handed to every command through ctx.obj."""

    config: Config
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def db_path(self) -> Path:
        return Path(self.config.get("db"))


def state(ctx: typer.Context) -> State:
    """The State the root callback stored (commands call this first)."""
    return ctx.find_root().obj
