"""A task directory as one typed record (`Task`), loaded one way (`load_task`) and found
one way under a root (`task_dirs`, `discover_tasks`).

`[metadata.rlforge]` in task.toml says which generator made the task, how it is verified
(`verifier`), whether it is single-turn (`kind = "answer"`) or multi-turn
(`kind = "terminal"`), and its split. Directories made by other tools work too: missing
fields fall back to a script verifier, single turn, no split.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlforge.errors import UserError
from rlforge.taskdir.check import check_task, check_whole
from rlforge.taskdir.fasttoml import read_toml
from rlforge.taskdir.layout import INSTRUCTION, MANIFEST, REFERENCE, TASK_TOML

DEFAULT_AGENT_TIMEOUT = 120.0


@dataclass
class Task:
    """A task directory as a run, validation and the exports need it; files are read on
    first use.

    `meta` is task.toml. Tasks listed by a build's manifest start without it and read it
    the first time it is needed, so a run over many tasks does not parse every task.toml
    before it can begin; the manifest also gives each task's agent timeout, so a task
    scored in-process never needs its task.toml at all.
    """

    path: Path
    task_id: str
    generator: str
    generator_version: int | None
    verifier: str
    kind: str
    split: str
    source_keys: tuple[str, ...] = ()  # the records it was made from (build-tasks' tasks)
    _meta: dict[str, Any] | None = field(default=None, repr=False)
    _agent_timeout: float | None = field(default=None, repr=False)  # from the manifest
    _listed: bool = field(default=False, repr=False)  # task.toml seen to name this task
    _instruction: str | None = field(default=None, repr=False)
    _reference: dict | None = field(default=None, repr=False)

    @property
    def meta(self) -> dict[str, Any]:
        """task.toml as a dict."""
        if self._meta is None:
            meta = read_task_toml(self.path)
            listed = meta.get("metadata", {}).get("rlforge", {}).get("task_id") or self.path.name
            if listed != self.task_id:
                raise UserError(f"{self.path} holds task {listed}, not {self.task_id}; the task "
                                "directory changed after it was listed")
            self._meta = meta
        return self._meta

    @property
    def agent_timeout(self) -> float:
        """`[agent] timeout_sec`: the default time budget of a rollout."""
        if self._agent_timeout is not None and self._listed_here():
            return self._agent_timeout
        return float(self.meta.get("agent", {}).get("timeout_sec", DEFAULT_AGENT_TIMEOUT))

    def _listed_here(self) -> bool:
        """Whether task.toml still names this task (a byte search, no parse, done once like
        reading `meta`; when it fails, `meta` parses the file and says what is wrong)."""
        if self._meta is not None or self._listed:
            return True
        line = f"\ntask_id = {json.dumps(self.task_id)}\n".encode()
        try:
            with open(os.path.join(self.path, TASK_TOML), "rb") as fh:
                self._listed = line in fh.read()
        except OSError:
            return False
        return self._listed

    @property
    def instruction(self) -> str:
        """instruction.md: what the policy sees."""
        if self._instruction is None:
            try:
                with open(os.path.join(self.path, INSTRUCTION), "rb") as fh:
                    self._instruction = fh.read().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UserError(f"{self.path}: cannot read {INSTRUCTION} ({exc})") from None
        return self._instruction

    @property
    def reference(self) -> dict:
        """tests/reference.json (empty when the task has none)."""
        if self._reference is None:
            try:
                with open(os.path.join(self.path, REFERENCE), "rb") as fh:
                    self._reference = json.loads(fh.read())
            except FileNotFoundError:
                self._reference = {}
            except (OSError, ValueError) as exc:
                raise UserError(f"{self.path}: cannot read {REFERENCE} ({exc})") from None
        return self._reference

    @property
    def answer_file(self) -> str:
        """Where a text submission goes, relative to /app: the reference's `submission`
        file (answer tasks), its `submission_patch` (a diff, for repair tasks), or
        answer.txt."""
        ref = self.reference
        if "submission" not in ref and ref.get("submission_patch"):
            return str(PurePosixPath(ref["submission_patch"]))
        target = PurePosixPath(ref.get("submission", "/app/answer.txt"))
        try:
            return str(target.relative_to("/app"))
        except ValueError:
            return "answer.txt"

    @property
    def expected_seconds(self) -> float:
        """The agent timeout as known without reading a file (task.toml if read already,
        else the manifest's, else the default): the scheduler's guess before any rollout."""
        if self._meta is None:
            return self._agent_timeout or DEFAULT_AGENT_TIMEOUT
        return self.agent_timeout

    def drop_files(self) -> None:
        """Forget the cached files (memory, on long runs); they are read again if needed."""
        self._meta = self._instruction = self._reference = None
        self._listed = False


def read_task_toml(task_dir: str | Path) -> dict[str, Any]:
    """A task directory's task.toml; a `UserError` when there is none or it is not TOML."""
    toml_path = os.path.join(task_dir, TASK_TOML)
    try:
        with open(toml_path, "rb") as fh:
            return read_toml(fh.read().decode("utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise UserError(f"{task_dir}: not a task directory (no {TASK_TOML})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{toml_path}: not valid TOML ({exc})") from None


def load_task(task_dir: str | Path) -> Task:
    """A task directory as a `Task`, task.toml read.

    Raises:
        UserError: it is not a task (no task.toml, or not TOML), or not whole (a part
            missing: one a crashed build-tasks cut short).
    """
    path = Path(task_dir)
    meta = read_task_toml(path)
    rl = meta.get("metadata", {}).get("rlforge", {})
    name, _, version = str(rl.get("generator", "unknown")).partition("@")
    check_task(path)
    return Task(
        path=path, task_id=str(rl.get("task_id") or path.name), generator=name,
        generator_version=int(version) if version.isdigit() else None,
        verifier=str(rl.get("verifier", "script")), kind=str(rl.get("kind", "answer")),
        split=str(rl.get("split", "")), source_keys=_keys(rl.get("source_keys")), _meta=meta)


def _keys(value: Any) -> tuple[str, ...]:
    """Source keys as recorded (a list in task.toml or the manifest; absent: none)."""
    return tuple(str(k) for k in value) if isinstance(value, (list, tuple)) else ()


def task_dirs(root: str | Path) -> list[Path]:
    """The task at `root`, or every task directory directly inside it (a folder with a
    task.toml), by name.

    Raises:
        UserError: `root` is no directory, holds no task, or holds one that is not whole
            (`check_whole`).
    """
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory; give a task directory or a directory "
                        "of tasks (`rlforge build-tasks --out DIR`)")
    check_whole(root)  # no task cut short, none in a build's work area: refused, named
    if (root / TASK_TOML).is_file():
        return [root]
    dirs = sorted(p for p in root.iterdir() if (p / TASK_TOML).is_file())
    if not dirs:
        raise UserError(f"{root}: no task directories (folders with a {TASK_TOML}) found")
    return dirs


def discover_tasks(tasks_dir: str | Path) -> list[Task]:
    """The tasks of `task_dirs(tasks_dir)`, loaded; task ids must be unique.

    A directory written by `rlforge build-tasks` lists its tasks in its manifest; when the
    manifest names exactly the directories present, the tasks are taken from it and each
    task.toml is read later, on first use. Otherwise every task.toml is read now.
    """
    root = Path(tasks_dir)
    dirs = task_dirs(root)
    if dirs[0] == root:
        return [load_task(root)]
    names = sorted(e.name for e in os.scandir(root) if e.is_dir())
    tasks = _from_manifest(root, names)
    if tasks is None:
        tasks = [load_task(d) for d in dirs]
    seen: dict[str, Path] = {}
    for t in tasks:
        if t.task_id in seen:
            raise UserError(f"task id {t.task_id} appears twice: {seen[t.task_id]} and {t.path}")
        seen[t.task_id] = t.path
    return tasks


def _from_manifest(root: Path, names: list[str]) -> list[Task] | None:
    """The tasks a build's manifest lists, if it lists exactly the directories in `names`."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        return None
    import duckdb

    try:
        with duckdb.connect() as con:
            source = con.sql("SELECT * FROM read_parquet(?)", params=[str(manifest)])
            # older manifests have no agent_timeout_sec column
            timeout = "agent_timeout_sec" if "agent_timeout_sec" in source.columns else "NULL"
            # retired tasks (rlforge.tasks.versions) stay listed, with no directory
            active = "WHERE status = 'active'" if "status" in source.columns else ""
            keys = "source_keys" if "source_keys" in source.columns else "NULL"
            rows = con.execute("SELECT task_id, generator, version, verifier, kind, split, path, "
                               f"{timeout}, {keys} FROM read_parquet(?) {active} ORDER BY path",
                               [str(manifest)]).fetchall()
    except duckdb.Error:
        return None  # not a manifest rlforge can read: fall back to the directories
    if sorted(str(r[6]) for r in rows) != names:
        return None
    return [Task(path=root / str(path), task_id=str(task_id), generator=str(generator),
                 generator_version=int(version) if version is not None else None,
                 verifier=str(verifier), kind=str(kind), split=str(split or ""),
                 source_keys=_keys(keys),
                 _agent_timeout=float(timeout) if timeout is not None else None)
            for task_id, generator, version, verifier, kind, split, path, timeout, keys in rows]
