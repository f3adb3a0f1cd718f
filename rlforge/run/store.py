"""Where a run's results live: `runs/<run_id>/` on disk, and the `runs`/`rollouts` tables.

    runs/<run_id>/
      config.json      the frozen resolved configuration (no secrets), written once
      rollouts.jsonl   one JSON line per finished rollout, appended and flushed as each ends
      summary.json     pass rate, pass@k, per generator and split (at the end of each session)
      groups.jsonl     per task: valid samples, passes, pass@k, each sample's advantage
      lock             held (flock) by the process working on the run
      snapshots/       one directory per terminal episode under way: its state after its
                       last complete turn (`rlforge.run.snapshot`), gone once its record
                       is written

rollouts.jsonl is the record of truth: the DuckDB tables are loaded from it (in batches
while the run goes, and in full on `--resume` and `rescore`; DuckDB parses the lines), so
a run killed at any moment loses at most the rollouts in flight. A line cut short by the
kill is dropped when the run is resumed, and that rollout runs again.

Export and the report read a finished run through `open_run`, `load_rollouts` and
`with_advantages`, so every reader sees the same records and advantages.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any, Iterable, TextIO

from rlforge import stats
from rlforge.errors import UserError
from rlforge.records import RolloutRecord, RolloutSummary, valid_utf8

CONFIG = "config.json"
ROLLOUTS = "rollouts.jsonl"
SUMMARY = "summary.json"
GROUPS = "groups.jsonl"
SNAPSHOTS = "snapshots"



def new_run_id() -> str:
    """A sortable, unique run id: UTC date and time plus 4 random hex digits."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string (the form rollouts.jsonl stores)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class RunStore:
    """One run's directory; create with `create` or `open`, then `lock` before writing."""

    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self.run_id = run_dir.name
        self._lock_fd: int | None = None
        self._out: TextIO | None = None

    @classmethod
    def create(cls, runs_dir: str | Path, run_id: str | None = None) -> "RunStore":
        """A new, empty run directory (locked)."""
        run_id = run_id or new_run_id()
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise UserError(f"run id {run_id!r} is not a valid directory name")
        run_dir = Path(runs_dir) / run_id
        try:
            run_dir.mkdir(parents=True)
        except FileExistsError:
            raise UserError(f"run {run_id} already exists in {runs_dir}; resume it with "
                            f"`rlforge run --resume {run_id}` or choose another --run-id") from None
        store = cls(run_dir)
        store.lock()
        return store

    @classmethod
    def open(cls, runs_dir: str | Path, run_id: str) -> "RunStore":
        """An existing run (not locked yet)."""
        run_dir = Path(runs_dir) / run_id
        if not (run_dir / CONFIG).is_file():
            known = sorted(p.name for p in Path(runs_dir).glob("*/" + CONFIG)) if Path(runs_dir).is_dir() else []
            hint = f"; runs in {runs_dir}: {', '.join(p.split('/')[0] for p in known[-5:])}" if known else ""
            raise UserError(f"no run {run_id!r} in {runs_dir} (no {CONFIG}){hint}")
        return cls(run_dir)

    @property
    def snapshots_dir(self) -> Path:
        """Where the run's episode snapshots live (`rlforge.run.snapshot`)."""
        return self.dir / SNAPSHOTS

    # Locking -------------------------------------------------------------------------

    def lock(self) -> None:
        """Take the run's lock; a UserError if another process holds it."""
        if self._lock_fd is not None:
            return
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(f"run {self.run_id} is in use by another rlforge process; wait "
                            "for it to finish (or stop it) and try again") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def close(self) -> None:
        """Flush and close the log, release the lock."""
        if self._out is not None:
            self._out.close()
            self._out = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Files ---------------------------------------------------------------------------

    def write_config(self, config: dict[str, Any]) -> None:
        _atomic_write(self.dir / CONFIG, json.dumps(config, indent=1, sort_keys=True) + "\n")

    def read_config(self) -> dict[str, Any]:
        return json.loads((self.dir / CONFIG).read_text(encoding="utf-8"))

    def read_rollouts(self, repair: bool = False) -> list[dict[str, Any]]:
        """Every complete line of rollouts.jsonl.

        Args:
            repair: cut a trailing partial line (a kill mid-write) off the file, so new
                lines start clean (needs the lock).
        """
        path = self.dir / ROLLOUTS
        if not path.exists():
            return []
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data) and repair:
            with open(path, "r+b") as fh:
                fh.truncate(end)
        records = []
        for number, line in enumerate(data[:end].splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                raise UserError(f"{path}:{number}: not a JSON line; the run log is damaged "
                                "(move the line away to recover)") from None
        return records

    def append(self, record: RolloutRecord | dict[str, Any]) -> str:
        """Append one rollout and flush it to the OS (no fsync: a process kill loses
        nothing written; a machine crash may lose the last lines, which resume reruns).
        Returns the line written (without its newline)."""
        if self._out is None:
            self._out = open(self.dir / ROLLOUTS, "a", encoding="utf-8")
        line = record_line(record)
        self._out.write(line + "\n")
        self._out.flush()
        return line

    def rewrite_rollouts(self, records: Iterable[dict[str, Any]], keep_previous: str) -> None:
        """Replace rollouts.jsonl atomically; the previous file is kept as `keep_previous`
        (`<stem>-2<suffix>`, `-3`, ... when a file of that name is kept already: two
        rescores within one second)."""
        path = self.dir / ROLLOUTS
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(record_line(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            keep, n = Path(keep_previous), 1
            while True:
                try:
                    os.link(path, self.dir / keep)
                    break
                except FileExistsError:
                    n += 1
                    keep = Path(f"{Path(keep_previous).stem}-{n}{Path(keep_previous).suffix}")
        os.replace(tmp, path)

    def write_summary(self, summary: dict[str, Any], groups: list[dict[str, Any]]) -> None:
        _atomic_write(self.dir / SUMMARY, json.dumps(summary, indent=1) + "\n")
        _atomic_write(self.dir / GROUPS, "".join(json.dumps(g, separators=(",", ":")) + "\n"
                                                  for g in groups))


# --- reading a run (export, report) ------------------------------------------------------

def open_run(run: str | Path, runs_dir: str | Path) -> RunStore:
    """A run by id (under `runs_dir`) or by the path of its directory."""
    path = Path(run)
    if (path / CONFIG).is_file():
        return RunStore(path)
    return RunStore.open(runs_dir, str(run))


def load_rollouts(store: RunStore) -> list[dict[str, Any]]:
    """The run's rollout records, one per (task, sample): the last written wins."""
    latest: dict[str, dict[str, Any]] = {}
    for record in store.read_rollouts():
        latest[record["rollout_id"]] = record
    return sorted(latest.values(), key=lambda r: (r["task_id"], r["sample"]))


def with_advantages(records: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each rollout's GRPO advantage within its task's group, as `rlforge run` computes it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["task_id"], []).append(r)
    out: dict[str, float | None] = {}
    for members in groups.values():
        values = stats.group_advantages([RolloutSummary.of(r).reward for r in members])
        for r, a in zip(members, values):
            out[r["rollout_id"]] = None if a is None else round(a, 6)
    return out


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- DuckDB ------------------------------------------------------------------------------

#: The fields of a rollouts.jsonl line the `rollouts` table keeps, with their SQL types.
_LINE_STRUCTURE = json.dumps({
    "run_id": "VARCHAR", "rollout_id": "VARCHAR", "task_id": "VARCHAR", "sample": "INTEGER",
    "seed": "BIGINT", "generator": "VARCHAR", "generator_version": "INTEGER", "split": "VARCHAR",
    "kind": "VARCHAR", "verifier": "VARCHAR", "outcome": "VARCHAR",
    "reward": {"total": "DOUBLE", "components": "JSON"}, "error": "JSON", "ended_by": "VARCHAR",
    "turns": "INTEGER", "commands": "INTEGER", "prompt_tokens": "BIGINT",
    "completion_tokens": "BIGINT", "requests": "INTEGER", "attempts": "INTEGER",
    "policy_seconds": "DOUBLE", "seconds": "DOUBLE", "started_at": "VARCHAR",
    "finished_at": "VARCHAR", "scored_by": "VARCHAR", "rescored": {"at": "VARCHAR"},
    "messages": "JSON", "steps": "JSON", "submission": "JSON"})

#: How rollouts.jsonl lines (column `line` of `{source}`) become rows of the `rollouts`
#: table. DuckDB parses each line once (`from_json`), so loading costs no Python per row;
#: the advantage is filled in at the end of the run.
ROLLOUT_SELECT = """
    SELECT r.run_id, r.rollout_id, r.task_id, r.sample, r.seed, r.generator,
           r.generator_version, r.split, r.kind, r.verifier, r.outcome,
           CASE WHEN r.outcome = 'invalid' THEN NULL ELSE r.reward.total END,
           r.reward.components, NULL::DOUBLE, r.error->>'type', r.error, r.ended_by, r.turns,
           r.commands, r.prompt_tokens, r.completion_tokens, r.requests, r.attempts,
           r.policy_seconds, r.seconds, replace(r.started_at, 'Z', '')::TIMESTAMP,
           replace(r.finished_at, 'Z', '')::TIMESTAMP, r.scored_by,
           replace(r.rescored.at, 'Z', '')::TIMESTAMP, r.messages, r.steps, r.submission
    FROM (SELECT from_json(line, ?) AS r FROM ({source}))"""


def record_line(record: RolloutRecord | dict[str, Any]) -> str:
    """One rollouts.jsonl line. A name or text the policy made may hold lone surrogates
    (bytes that did not decode): they are written as JSON escapes (\\udcff), which
    json.loads reads back, so nothing the policy wrote is lost."""
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return line.encode("utf-8", "backslashreplace").decode("utf-8")


#: A JSON escape of a UTF-16 surrogate: rollouts.jsonl writes a lone one (a byte the
#: policy's text or file names could not decode) this way, and DuckDB's JSON reader
#: refuses the whole statement over one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


def table_line(line: str) -> str:
    """A rollouts.jsonl line as the `rollouts` table stores it: lone surrogates, which the
    file keeps as escapes so that nothing the policy wrote is lost, become U+FFFD."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    return json.dumps(valid_utf8(json.loads(line)), ensure_ascii=False,
                      separators=(",", ":"))


def insert_lines(con, lines: list[str]) -> None:
    """Append rollouts.jsonl lines to the `rollouts` table in one statement."""
    if lines:
        source = "SELECT unnest(?::VARCHAR[]) AS line"
        con.execute("INSERT INTO rollouts " + ROLLOUT_SELECT.format(source=source),
                    [_LINE_STRUCTURE, [table_line(line) for line in lines]])


def reload_run(con, run_id: str, log: Path) -> None:
    """Make the table hold exactly the run's rollouts.jsonl (on resume and rescore); run it
    inside the caller's transaction."""
    con.execute("DELETE FROM rollouts WHERE run_id = ?", [run_id])
    if not (log.exists() and log.stat().st_size):
        return
    if _has_surrogate_escape(log):  # rare: the lines go through Python
        with open(log, encoding="utf-8") as fh:
            insert_lines(con, [line for line in fh.read().splitlines() if line.strip()])
        return
    source = "SELECT json AS line FROM read_ndjson_objects(?)"
    con.execute("INSERT INTO rollouts " + ROLLOUT_SELECT.format(source=source),
                [_LINE_STRUCTURE, str(log)])


def _has_surrogate_escape(path: Path, block: int = 1 << 20) -> bool:
    tail = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            if _SURROGATE_ESCAPE_BYTES.search(tail + chunk):
                return True
            tail = chunk[-5:]
    return False


def set_advantages(con, run_id: str, advantages: dict[str, float | None]) -> None:
    """Write each rollout's group advantage (rollout_id -> value) into the table."""
    if advantages:
        con.execute("UPDATE rollouts SET advantage = a.value FROM (SELECT unnest(?::VARCHAR[]) "
                    "AS rollout_id, unnest(?::DOUBLE[]) AS value) a "
                    "WHERE rollouts.run_id = ? AND rollouts.rollout_id = a.rollout_id",
                    [list(advantages), list(advantages.values()), run_id])


def upsert_run(con, row: dict[str, Any]) -> None:
    """Insert or replace the run's row in `runs`."""
    columns = ["run_id", "status", "created_at", "updated_at", "tasks_dir", "run_dir",
               "base_url", "model", "embedded", "samples", "tasks", "planned", "rollouts",
               "pass_rate", "mean_reward", "infra_error_rate", "pass_at_k", "summary", "config",
               "rlforge_version"]
    values = [row.get(c) for c in columns]
    for i, c in enumerate(columns):
        if c in ("pass_at_k", "summary", "config") and values[i] is not None:
            values[i] = json.dumps(values[i])
    con.execute(f"INSERT OR REPLACE INTO runs ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})", values)
