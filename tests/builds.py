"""build-tasks' options as the CLI makes them: a resolved configuration and the backend
it names, handed down (the library never picks either itself); and the repair tests'
fixture steps (a private home, ingest the repositories, build their tasks)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rlforge import db
from rlforge.config import Config
from rlforge.execution.local import LocalBackend
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import BuildOptions, BuildReport, build_tasks


def build_options(*, config: Config | None = None, **fields: Any) -> BuildOptions:
    """`BuildOptions(**fields)` on this machine's backend, with `config` (default: the
    flag-less configuration, which the tests' fixtures point at `tmp_path`)."""
    cfg = config or Config.load()
    return BuildOptions(config=cfg, backend=LocalBackend.from_config(cfg), **fields)


@contextmanager
def repair_home(root: Path, cache: Path) -> Iterator[None]:
    """Work in `root` as home and current directory, with the shared prepared-environment
    `cache` the only RLFORGE_* setting (for module-scoped fixtures, which the autouse
    `isolated_env` does not cover); undone on exit."""
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("RLFORGE_")]:
            mp.delenv(key)
        mp.setenv("RLFORGE_CACHE_DIR", str(cache))
        mp.setenv("HOME", str(root))
        mp.chdir(root)
        yield


def build_repair(root: Path, repos: Iterable[Path], *, validate: bool, seed: int = 7,
                 **generator_options: Any) -> BuildReport:
    """Ingest `repos` into `root`/rlforge.duckdb and build their commits.repair tasks into
    `root`/tasks with `generator_options`; the build's report."""
    con = db.connect(root / "rlforge.duckdb")
    try:
        for repo in repos:
            ingest_repo(con, repo)
        return build_tasks(con, build_options(
            out=root / "tasks", generators=["commits.repair"], seed=seed, validate=validate,
            generator_options={"commits.repair": generator_options}))
    finally:
        con.close()
