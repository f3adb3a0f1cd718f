"""Task directories as a run sees them: the metadata it schedules by, files read lazily.

A task is a Harbor directory (`task.toml`, `instruction.md`, `environment/`, `tests/test.sh`,
`solution/solve.sh`: one without all of them is refused, see `rlforge.tasks.staging`);
`[metadata.rlforge]` in task.toml says which generator made it, how it is verified
(`verifier`), whether it is single-turn (`kind = "answer"`) or multi-turn
(`kind = "terminal"`), and its split. Directories made by other tools work too: missing
fields fall back to a script verifier, single turn, no split.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlforge.errors import UserError
from rlforge.tasks.staging import check_task, check_whole
from rlforge.verify import kinds

_TABLE = re.compile(r"\[([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\]")


class _NotFlat(Exception):
    pass


def read_toml(text: str) -> dict[str, Any]:
    """Parse TOML; the flat files rlforge renders take a fast path, anything else tomllib.

    A run reads every task's task.toml before it starts, and tomllib spends ~0.3 ms on one.
    The files rlforge writes hold only `[table]` headers and `key = value` lines whose
    values are JSON-compatible scalars or arrays (see `rlforge.tasks.render.toml_value`);
    those lines are parsed with `json.loads` (~8x faster). The first line outside that
    subset (comments after values, inline tables, dates, multi-line values, dotted or
    quoted keys, repeated keys or tables, ...) sends the whole file to tomllib.
    """
    try:
        return _read_flat_toml(text)
    except _NotFlat:
        return tomllib.loads(text)


def _read_flat_toml(text: str) -> dict[str, Any]:
    root: dict[str, Any] = {}
    table = root
    tables: set[str] = set()
    slots: list[tuple[dict, str]] = []
    raw: list[str] = []
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        if line[0] == "[":
            found = _TABLE.fullmatch(line)
            if not found or found.group(1) in tables:
                raise _NotFlat
            tables.add(found.group(1))
            table = root
            for part in found.group(1).split("."):
                table = table.setdefault(part, {})
                if not isinstance(table, dict):
                    raise _NotFlat
            continue
        key, sep, value = line.partition(" = ")
        if not sep or key in table or not (key.isascii() and key.replace("-", "_").isidentifier()):
            raise _NotFlat
        table[key] = None  # taken (a repeated key is not flat)
        slots.append((table, key))
        raw.append(value)
    joined = "[" + ",".join(raw) + "]"
    try:  # every value at once: one JSON array
        values = json.loads(joined)
    except ValueError:
        raise _NotFlat from None
    if len(values) != len(slots):  # a value held a top-level comma, e.g. `1, 2`
        raise _NotFlat
    if ("{" in joined or "null" in joined) and not _toml_compatible(values):
        raise _NotFlat
    for (table, key), value in zip(slots, values):
        table[key] = value
    return root


def _toml_compatible(value: Any) -> bool:
    """A JSON value that means the same written as TOML (no objects, no null)."""
    if isinstance(value, list):
        return all(_toml_compatible(v) for v in value)
    return value is not None and not isinstance(value, dict)


DEFAULT_AGENT_TIMEOUT = 120.0
MANIFEST = "manifest.parquet"


@dataclass
class Task:
    """A Harbor task directory as a rollout needs it; files are read on first use.

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
    _meta: dict[str, Any] | None = field(default=None, repr=False)
    _agent_timeout: float | None = field(default=None, repr=False)  # from the manifest
    _listed: bool = field(default=False, repr=False)  # task.toml seen to name this task
    _instruction: str | None = field(default=None, repr=False)
    _reference: dict | None = field(default=None, repr=False)

    @property
    def meta(self) -> dict[str, Any]:
        """task.toml as a dict."""
        if self._meta is None:
            meta = _read_task_toml(self.path)
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
            with open(os.path.join(self.path, "task.toml"), "rb") as fh:
                self._listed = line in fh.read()
        except OSError:
            return False
        return self._listed

    @property
    def instruction(self) -> str:
        """instruction.md: what the policy sees."""
        if self._instruction is None:
            try:
                with open(os.path.join(self.path, "instruction.md"), "rb") as fh:
                    self._instruction = fh.read().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UserError(f"{self.path}: cannot read instruction.md ({exc})") from None
        return self._instruction

    @property
    def reference(self) -> dict:
        """tests/reference.json (empty when the task has none)."""
        if self._reference is None:
            try:
                with open(os.path.join(self.path, "tests", "reference.json"), "rb") as fh:
                    self._reference = json.loads(fh.read())
            except FileNotFoundError:
                self._reference = {}
            except (OSError, ValueError) as exc:
                raise UserError(f"{self.path}: cannot read tests/reference.json ({exc})") from None
        return self._reference

    @property
    def in_process(self) -> bool:
        """Scored from reference data by string comparison (no sandbox needed)."""
        return kinds.get(self.verifier).in_process and bool(self.reference)

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


def _read_task_toml(path: Path) -> dict[str, Any]:
    toml_path = os.path.join(path, "task.toml")
    try:
        with open(toml_path, "rb") as fh:
            return read_toml(fh.read().decode("utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise UserError(f"{path}: not a task directory (no task.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{toml_path}: not valid TOML ({exc})") from None


def load_task(task_dir: str | Path) -> Task:
    """Read a task directory's task.toml; a UserError if it is not a task, or not whole."""
    path = Path(task_dir)
    meta = _read_task_toml(path)
    rl = meta.get("metadata", {}).get("rlforge", {})
    name, _, version = str(rl.get("generator", "unknown")).partition("@")
    check_task(path)  # every part there: not one a crashed build-tasks cut short
    return Task(
        path=path, task_id=str(rl.get("task_id") or path.name), generator=name,
        generator_version=int(version) if version.isdigit() else None,
        verifier=str(rl.get("verifier", "script")), kind=str(rl.get("kind", "answer")),
        split=str(rl.get("split", "")), _meta=meta)


def discover_tasks(tasks_dir: str | Path) -> list[Task]:
    """The task at `tasks_dir`, or every task directory directly inside it, by task id.

    A directory written by `rlforge build-tasks` lists its tasks in manifest.parquet; when
    the manifest names exactly the directories present, the tasks are taken from it and
    each task.toml is read later, on first use. Otherwise every task.toml is read now.
    Either way a task that is not whole (see `rlforge.tasks.staging.TASK_PARTS`) is refused.
    """
    root = Path(tasks_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory; give a directory of tasks "
                        "(`rlforge build-tasks --out DIR`)")
    check_whole(root)  # no task cut short, none in a build's work area: refused, named
    if (root / "task.toml").is_file():
        return [load_task(root)]
    entries = sorted((e for e in os.scandir(root) if e.is_dir()), key=lambda e: e.name)
    tasks = _from_manifest(root, [e.name for e in entries])
    if tasks is None:
        tasks = []
        for entry in entries:
            try:
                tasks.append(load_task(entry.path))
            except UserError:
                if os.path.exists(os.path.join(entry.path, "task.toml")):
                    raise  # a task, but a broken one
    if not tasks:
        raise UserError(f"{root}: no task directories (folders with a task.toml) found")
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
            rows = con.execute("SELECT task_id, generator, version, verifier, kind, split, path, "
                               f"{timeout} FROM read_parquet(?) {active} ORDER BY path",
                               [str(manifest)]).fetchall()
    except duckdb.Error:
        return None  # not a manifest rlforge can read: fall back to the directories
    if sorted(str(r[6]) for r in rows) != names:
        return None
    return [Task(path=root / str(path), task_id=str(task_id), generator=str(generator),
                 generator_version=int(version) if version is not None else None,
                 verifier=str(verifier), kind=str(kind), split=str(split or ""),
                 _agent_timeout=float(timeout) if timeout is not None else None)
            for task_id, generator, version, verifier, kind, split, path, timeout in rows]
