"""The `ray` backend (`rlforge.execution`): rollouts, validation and the commits.repair
checks in a worker on every node of a Ray cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rlforge.config import Config
from rlforge.execution.ray.cluster import RayOptions
from rlforge.execution.ray.rollouts import ray_session
from rlforge.execution.ray.validation import start_ray_checker, validate_on_ray
from rlforge.records import RolloutSummary
from rlforge.run.session import Session
from rlforge.tasks.generators.repair.checks import Checker


class RayBackend:
    name = "ray"

    def __init__(self, options: RayOptions):
        self.options = options

    @classmethod
    def from_config(cls, cfg: Config) -> RayBackend:
        return cls(RayOptions.from_settings(cfg.settings()))

    def preflight(self, session: Session) -> None:
        """Nothing here: each worker checks its node's sandboxes as it starts."""

    async def rollouts(self, session: Session) -> list[RolloutSummary]:
        return await ray_session(self.options, session)

    async def validate(self, task_dirs: list[Path], *, workers: int = 0,
                       sandbox_mode: str = "bwrap", progress: Callable | None = None,
                       concurrency: int | None = None,
                       settings: dict[str, Any] | None = None) -> list:
        return await validate_on_ray(task_dirs, self.options, workers=workers,
                                     sandbox_mode=sandbox_mode, progress=progress,
                                     concurrency=concurrency, settings=settings)

    async def repair_checker(self, con, opts, *, workers: int, sandbox_mode: str,
                             cache_dir: Path, settings: dict[str, Any] | None) -> Checker:
        return await start_ray_checker(con, opts, self.options, workers, sandbox_mode,
                                       cache_dir, settings)
