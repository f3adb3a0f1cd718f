"""build-tasks' options as the CLI makes them: a resolved configuration and the backend
it names, handed down (the library never picks either itself)."""

from __future__ import annotations

from typing import Any

from rlforge.config import Config
from rlforge.execution.local import LocalBackend
from rlforge.tasks.build import BuildOptions


def build_options(*, config: Config | None = None, **fields: Any) -> BuildOptions:
    """`BuildOptions(**fields)` on this machine's backend, with `config` (default: the
    flag-less configuration, which the tests' fixtures point at `tmp_path`)."""
    cfg = config or Config.load()
    return BuildOptions(config=cfg, backend=LocalBackend.from_config(cfg), **fields)
