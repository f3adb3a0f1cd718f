"""The `local` backend: sandboxed work on this machine, through one sandbox pool."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from rlforge.config import Config, default_cache_dir
from rlforge.records import RolloutSummary
from rlforge.run.driver import RolloutRunner, drive
from rlforge.run.session import Session, sandbox_needed
from rlforge.run.snapshot import EpisodeSnapshots
from rlforge.sandbox import SandboxPool
from rlforge.tasks.generators.repair.checks import Checker
from rlforge.verify.runner import TaskRunner
from rlforge.verify.validate import ValidationResult, validate_many


class LocalBackend:
    """See the module docstring. `cache_dir`: where the tasks' prepared environments are
    built (the command's `cache_dir`)."""

    name = "local"

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir

    @classmethod
    def from_config(cls, cfg: Config) -> LocalBackend:
        return cls(default_cache_dir(cfg.settings()))

    def preflight(self, session: Session) -> None:
        """Refuse (one clear error) when rollouts need a sandbox this host cannot make."""
        if sandbox_needed(session.tasks, session.items, session.plan):
            from rlforge.sandbox import ensure_available

            ensure_available()

    async def rollouts(self, session: Session) -> list[RolloutSummary]:
        from rlforge.policy import PolicyClient

        plan = session.plan
        scratch = Path(tempfile.mkdtemp(prefix="rlforge-run-"))
        try:
            async with PolicyClient(session.policy, api_key=session.api_key) as client, \
                    SandboxPool(plan.sandbox_workers) as pool:
                runner = RolloutRunner(
                    client, plan.env,
                    TaskRunner(pool, plan.env.sandbox_mode, plan.sandbox, self.cache_dir),
                    scratch, run_id=plan.run_id, run_seed=plan.seed,
                    time_budget=plan.time_budget,
                    snapshots=EpisodeSnapshots(session.store.snapshots_dir))
                return await drive(session.tasks, session.items, runner, session.store,
                                   session.sink, session.progress, concurrency=session.concurrency,
                                   quotas=plan.generator_concurrency)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    async def validate(self, task_dirs: list[Path], *, workers: int = 0,
                       sandbox_mode: str = "bwrap",
                       progress: Callable[[ValidationResult], None] | None = None,
                       concurrency: int | None = None,
                       settings: dict[str, Any] | None = None) -> list[ValidationResult]:
        return await validate_many(task_dirs, workers=workers, sandbox_mode=sandbox_mode,
                                   progress=progress, concurrency=concurrency,
                                   settings=settings, cache_dir=self.cache_dir)

    async def repair_checker(self, con, opts, *, workers: int, sandbox_mode: str,
                             cache_dir: Path, settings: dict[str, Any] | None) -> Checker:
        return Checker(con, opts, SandboxPool(workers), cache_dir, sandbox_mode, settings)
