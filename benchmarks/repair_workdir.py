"""The scratch project the repair benchmarks build in: a clone of SOURCE and its config.

SOURCE is a path, a bare mirror (`.../<owner>+<name>/repo`, as the fetch tool stores one)
or a URL. The clone's directory is named after the project, because that is the name the
built tasks show. Shared by `repair_tasks.py` and `repair_build.py`.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


def project_name(source: str) -> str:
    source = source.rstrip("/")
    name = Path(source[:-4] if source.endswith(".git") else source).name
    if name == "repo":
        name = Path(source).parent.name.split("+")[-1]
    return name


def prepare(source: str, work: Path | None, *, last: int, workers: int, cache: Path | None,
            prefix: str) -> tuple[Path, Path, Path]:
    """Clone SOURCE into WORK (a new temp dir when None) and write its rlforge.toml.

    Returns the work directory, the clone and the environment cache directory.
    """
    work = work or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    repo = work / project_name(source)
    if not repo.exists():
        subprocess.run(["git", "clone", "-q", source, str(repo)], check=True)
    cache = cache or work / "cache"
    (work / "rlforge.toml").write_text(
        f'db = "{work / "rlforge.duckdb"}"\ncache_dir = "{cache}"\n\n[sandbox]\nworkers = {workers}\n\n'
        f'[tasks.repair]\nlast = {last}\n')
    return work, repo, cache
