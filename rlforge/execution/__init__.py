"""Where sandboxed work runs: one backend protocol, chosen once from one table.

Three kinds of work run untrusted code in sandboxes: rollouts (`rlforge run`), task
validation (`rlforge validate`, build-tasks), and the commits.repair build-time check of
each commit. A `Backend` does all three; the run loop, validation and the build call the
backend they are handed and never pick one themselves. `choose` picks it from `BACKENDS`
by the name in `run.executor` / `tasks.executor` — this table is the only place that
knows which backends exist, so no module of `rlforge.run`, `rlforge.verify` or
`rlforge.tasks` imports an implementation.

- `local`: this machine, through one sandbox pool (`rlforge.execution.local`);
- `ray`: a worker on every node of a Ray cluster (`rlforge.executors`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from rlforge.errors import ConfigError

if TYPE_CHECKING:  # types only: the implementations sit above this module
    from rlforge.config import Config
    from rlforge.records import RolloutSummary
    from rlforge.run.session import Session
    from rlforge.tasks.repair.checks import Checker
    from rlforge.tasks.repair.options import RepairOptions
    from rlforge.verify.validate import ValidationResult


class Backend(Protocol):
    """Runs the sandboxed work of rlforge somewhere; see the module docstring."""

    name: str

    def preflight(self, session: Session) -> None:
        """Refuse (a UserError) before anything starts when the session cannot run here."""

    async def rollouts(self, session: Session) -> list[RolloutSummary]:
        """Play the session's work items; the summaries of the rollouts played."""

    async def validate(self, task_dirs: list[Path], *, workers: int = 0,
                       sandbox_mode: str = "bwrap", spec_hook: Callable | None = None,
                       progress: Callable[[ValidationResult], None] | None = None,
                       concurrency: int | None = None,
                       settings: dict[str, Any] | None = None) -> list[ValidationResult]:
        """Validate tasks (`rlforge.verify.validate.validate_task` on each); results in
        input order, with the caller's paths."""

    async def repair_checker(self, con, opts: RepairOptions, *, workers: int, sandbox_mode: str,
                             cache_dir: Path, settings: dict[str, Any] | None) -> Checker:
        """A commits.repair `Checker` whose sandboxed runs happen here; the caller closes
        it, and then its `pool`."""


@dataclass(frozen=True)
class BackendInfo:
    name: str
    target: str  # "module:Class"; the class has `from_config(cfg | None) -> Backend`
    description: str


BACKENDS: dict[str, BackendInfo] = {b.name: b for b in (
    BackendInfo("local", "rlforge.execution.local:LocalBackend",
                "this machine, through one pool of sandbox.workers sandboxes"),
    BackendInfo("ray", "rlforge.executors.backend:RayBackend",
                "a worker on every node of a Ray cluster (ray.address); needs rlforge[ray]"),
)}


def choose(name: str | None, cfg: Config | None = None) -> Backend:
    """The backend called `name` (None: local), set up from `cfg` (None: the flag-less
    configuration)."""
    info = BACKENDS.get(name or "local")
    if info is None:
        raise ConfigError(f"unknown executor {name!r}; choose one of {', '.join(BACKENDS)}")
    module, _, attr = info.target.partition(":")
    return getattr(importlib.import_module(module), attr).from_config(cfg)
