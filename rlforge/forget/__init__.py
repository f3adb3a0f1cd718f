"""`rlforge forget`: erase one customer (a deletion request) from everything rlforge made.

A request names a **key**: a ticket id (`csv:10001`, or its source id `10001` when one
ticket has it), a pseudonym as stored (`<EMAIL_3376bb>`), or an e-mail address or a name
as the customer wrote it. The clear value is never stored: an e-mail or a name is hashed
as ingest hashed it (`Redactor.pseudonym`, keyed by the database's own key) and looked up
as that pseudonym, and as itself (any letter case, a whole word) where the redaction
missed it (`match`).

What goes (`plan.plan` finds it, `forget` removes it, `files` does the file part):

- the tickets the key matches (a ticket id: that ticket; a pseudonym, e-mail or name:
  every ticket whose text, fields, tags or message authors hold it), their messages,
  their links and link terms, the build drops and quarantine rows about them;
- the tasks built from them (`source_keys`), and every other task whose files hold a
  copy of their text (a reply task's knowledge base of earlier tickets) or the
  pseudonym: their directories are removed, the `tasks` and `task_stats` rows deleted, and
  each build output they were in gets a new dataset version that retires them (so
  `rlforge tasks diff` lists them as removed) and a manifest that marks them retired;
- the rollouts of those tasks, and any rollout that holds their text: the `rollouts`
  rows, and their lines in every JSONL file of the run's directory (rollouts.jsonl, its
  pre-rescore copies, groups.jsonl);
- a person's pseudonym (or clear value) anywhere else in the database (a commit
  message, a log line) is replaced by `<EMAIL_forgotten>` or `<PERSON_forgotten>`.

Exports rlforge recorded (`exports`: every `rlforge export` since this version) that hold
a removed task are marked stale and listed: they must be written again.

**Crash safety.** The database work and the request's row in `forget_log` (status
`pending`, with the file work left as ids and paths) commit in one transaction; then the
files are removed and rewritten, each step idempotent; then the row is marked `done`. A
kill before the commit leaves nothing done; a kill after it leaves a pending request that
the next `rlforge forget` finishes first, so a kill at any point and a rerun end in the
same state as one uninterrupted run.

**The audit row** (`forget_log`) holds the kind of key, when, and the counts per table
and kind: never the key, the pseudonym, a ticket id or a hash of any of them. A pseudonym
is itself a keyed hash: whoever holds the database could hash a suspected address and
find it in the log, which would say that this person asked to be forgotten.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from rlforge import __version__, db
from rlforge.forget.files import do_files
from rlforge.forget.match import KEY_KINDS, resolve_key, table_exists
from rlforge.forget.plan import delete_rows, plan

__all__ = ["KEY_KINDS", "KILL_HOOK", "ForgetReport", "audit", "audit_in", "finish_pending",
           "forget", "forget_in"]

#: Test-only hook: set it to `db` or `files` to make the process SIGKILL itself after that
#: step of a forget (tests/test_forget.py proves that a rerun finishes the request). Never
#: set it otherwise.
KILL_HOOK = "RLFORGE_TEST_FORGET_KILL_AFTER"
_NO_FILES: dict[str, Any] = {"task_ids": [], "task_dirs": [], "out_dirs": {}, "rollout_ids": [], "runs": []}


@dataclass
class ForgetReport:
    """What `forget` did (or, with `dry_run`, would do)."""

    key_kind: str
    matched: bool
    dry_run: bool
    forget_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    exports: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)  # pending requests finished first

    def to_dict(self) -> dict[str, Any]:
        return {"key_kind": self.key_kind, "matched": self.matched, "dry_run": self.dry_run,
                "forget_id": self.forget_id, "counts": self.counts, "tasks": self.tasks,
                "exports": self.exports, "versions": self.versions, "resumed": self.resumed}


def _kill_point(step: str) -> None:
    if os.environ.get(KILL_HOOK) == step:  # test-only: see KILL_HOOK
        os.kill(os.getpid(), signal.SIGKILL)


def _finish(con: duckdb.DuckDBPyConnection, forget_id: str) -> dict[str, int]:
    """Do a request's file work and mark it done; its counts."""
    pending, counts = con.execute("SELECT pending, counts FROM forget_log WHERE forget_id = ?",
                                  [forget_id]).fetchall()[0]
    do_files(json.loads(pending) if pending else _NO_FILES, _kill_point)
    con.execute("UPDATE forget_log SET status = 'done', finished_at = ?, pending = NULL "
                "WHERE forget_id = ?", [db.now(), forget_id])
    con.execute("CHECKPOINT")  # the deleted rows out of the write-ahead log
    return json.loads(counts or "{}")


def finish_pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Finish every request a kill left pending (its database part is done); their ids."""
    if not table_exists(con, "forget_log"):
        return []
    ids = [r[0] for r in con.execute("SELECT forget_id FROM forget_log WHERE status = 'pending' "
                                     "ORDER BY requested_at").fetchall()]
    for forget_id in ids:
        _finish(con, forget_id)
    return ids


def forget(con: duckdb.DuckDBPyConnection, text: str, *, kind: str = "auto",
           dry_run: bool = False) -> ForgetReport:
    """Forget the customer or ticket `text` names (see the module docstring).

    Args:
        con: a writable connection (read-only is enough with `dry_run`).
        text: a ticket id, a pseudonym, or an e-mail or name as the customer wrote it.
        kind: `auto` or one of `KEY_KINDS` (see `match.resolve_key`).
        dry_run: find what would go, change nothing.

    Returns:
        The counts per table and kind, the tasks retired, the exports to write again. A
        key that matches nothing (never ingested, or forgotten already) changes and
        records nothing: `matched` is False.
    """
    resumed = [] if dry_run else finish_pending(con)
    key = resolve_key(con, text, kind)
    p = plan(con, key)
    report = ForgetReport(key.kind, p.matched, dry_run,
                          counts={k: v for k, v in p.counts.items() if v},
                          tasks=[{k: t[k] for k in ("task_id", "generator", "out_dir", "why")}
                                 for t in p.tasks],
                          exports=p.exports, versions=dict(p.versions), resumed=resumed)
    if dry_run or not p.matched:
        return report
    forget_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S-") + secrets.token_hex(3)
    con.execute("BEGIN TRANSACTION")
    try:  # the intent (with the file work left) and the rows go together, or neither does
        con.execute("INSERT INTO forget_log VALUES (?, ?, 'pending', ?, NULL, ?, ?, ?)",
                    [forget_id, key.kind, db.now(), json.dumps(report.counts),
                     json.dumps(p.pending()), __version__])
        delete_rows(con, p, forget_id)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    _kill_point("db")
    report.forget_id = forget_id
    _finish(con, forget_id)
    return report


def audit(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The forget_log rows, newest first: id, kind of key, status, times, counts."""
    if not table_exists(con, "forget_log"):
        return []
    cur = con.execute("SELECT forget_id, key_kind, status, requested_at, finished_at, counts "
                      "FROM forget_log ORDER BY requested_at DESC")
    names = [d[0] for d in cur.description]
    return [{**dict(zip(names, r)), "counts": json.loads(r[5] or "{}")} for r in cur.fetchall()]


def forget_in(db_path: str | Path, text: str | None, *, kind: str = "auto",
              dry_run: bool = False) -> ForgetReport | None:
    """`rlforge forget`: open the database at `db_path` and `forget`; with no key, only
    finish the requests a kill left pending (None when there was none)."""
    con = db.connect(db_path, read_only=dry_run)
    try:
        if text is None:
            resumed = [] if dry_run else finish_pending(con)
            return ForgetReport("none", False, dry_run, resumed=resumed) if resumed else None
        return forget(con, text, kind=kind, dry_run=dry_run)
    finally:
        con.close()


def audit_in(db_path: str | Path) -> list[dict[str, Any]]:
    """`rlforge forget --log`: the audit rows of the database at `db_path`."""
    con = db.connect(db_path, read_only=True)
    try:
        return audit(con)
    finally:
        con.close()
