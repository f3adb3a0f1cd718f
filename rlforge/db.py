"""The DuckDB store: one file, a versioned schema, and forward-only migrations.

Every command opens the database through `connect`, which applies any migration not yet
recorded in `schema_migrations`. A migration is (name, SQL); names sort in the order they
must run. The schema version is the number of applied migrations.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from rlforge import __version__
from rlforge.errors import DatabaseInUse, UserError


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


MIGRATIONS: list[Migration] = [
    Migration("0001_core", """
        CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
        CREATE SEQUENCE ingest_run_seq START 1;
        CREATE TABLE ingest_runs (
            run_id BIGINT PRIMARY KEY,
            source VARCHAR NOT NULL,          -- tickets | commits | logs
            path VARCHAR NOT NULL,            -- file or repository path
            format VARCHAR,
            sha256 VARCHAR,                   -- of the file (tickets, logs)
            head VARCHAR,                     -- repository HEAD (commits)
            status VARCHAR NOT NULL,          -- ok | failed
            error VARCHAR,
            n_read BIGINT DEFAULT 0,
            n_loaded BIGINT DEFAULT 0,
            n_duplicates BIGINT DEFAULT 0,
            n_quarantined BIGINT DEFAULT 0,
            n_flagged BIGINT DEFAULT 0,
            redactions JSON,
            rlforge_version VARCHAR,
            started_at TIMESTAMP,
            finished_at TIMESTAMP,
            seconds DOUBLE
        );
        CREATE TABLE quarantine (
            ingest_run BIGINT,
            source VARCHAR,
            file VARCHAR,
            record_no BIGINT,                 -- 1-based record or line number in the file
            raw VARCHAR,                      -- redacted, capped at 64 KB
            reason VARCHAR,
            created_at TIMESTAMP
        );
        CREATE TABLE tickets (
            ticket_id VARCHAR NOT NULL,       -- origin:source_id
            origin VARCHAR,                   -- export family (csv, zendesk, jira, ...)
            source_id VARCHAR,
            subject VARCHAR,
            body VARCHAR,
            category VARCHAR,
            intent VARCHAR,
            priority VARCHAR,
            status VARCHAR,
            resolution VARCHAR,
            created_at TIMESTAMP,
            resolved_at TIMESTAMP,
            tags VARCHAR[],
            extra JSON,
            content_hash VARCHAR NOT NULL,
            flags VARCHAR[],
            file VARCHAR,
            record_no BIGINT,                 -- record in the file; NULL for plain CSV rows
                                              -- loaded on the fast path (kept in file order)
            ingest_run BIGINT
        );
        CREATE TABLE ticket_messages (
            ticket_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,
            role VARCHAR,                     -- customer | agent
            author VARCHAR,                   -- pseudonymised
            text VARCHAR,
            created_at TIMESTAMP,
            is_public BOOLEAN
        );
        CREATE TABLE commits (
            repo VARCHAR NOT NULL,            -- absolute repository path
            sha VARCHAR NOT NULL,
            parents VARCHAR[],
            author VARCHAR,                   -- pseudonymised
            committer VARCHAR,
            authored_at TIMESTAMPTZ,
            committed_at TIMESTAMPTZ,
            subject VARCHAR,
            message VARCHAR,
            is_merge BOOLEAN,
            files_changed INTEGER,
            lines_added INTEGER,
            lines_removed INTEGER,
            ingest_run BIGINT,
            PRIMARY KEY (repo, sha)
        );
        CREATE TABLE commit_files (
            repo VARCHAR NOT NULL,
            sha VARCHAR NOT NULL,
            path VARCHAR NOT NULL,
            old_path VARCHAR,
            change_type VARCHAR,              -- A M D R C T
            lines_added INTEGER,
            lines_removed INTEGER,
            is_binary BOOLEAN,
            is_test BOOLEAN,
            language VARCHAR
        );
    """),
    Migration("0002_logs", """
        CREATE TABLE log_templates (
            template_id VARCHAR NOT NULL,     -- stable hash of the template text
            template VARCHAR NOT NULL,        -- constant text, <*> for each parameter
            n_tokens INTEGER,
            count BIGINT,                     -- log records with this template
            first_seen TIMESTAMP,             -- earliest / latest record time (ts)
            last_seen TIMESTAMP,
            example VARCHAR,                  -- one message (redacted)
            created_run BIGINT,
            updated_run BIGINT
        );
        CREATE TABLE template_merges (        -- a template generalised: old id -> new id
            old_id VARCHAR NOT NULL,
            new_id VARCHAR NOT NULL,
            old_template VARCHAR,
            new_template VARCHAR,
            ingest_run BIGINT,
            merged_at TIMESTAMP
        );
        CREATE TABLE log_messages (           -- distinct messages of one ingest chunk
            message_id BIGINT NOT NULL,
            message VARCHAR,                  -- redacted; multi-line records joined by \\n
            template_id VARCHAR,
            params VARCHAR[]                  -- values at the <*> of the template (first line)
        );
        CREATE TABLE log_records (            -- a line, with its continuation lines if any
            ingest_run BIGINT NOT NULL,
            line_no BIGINT NOT NULL,          -- 1-based line of the record's first line
            n_lines INTEGER,
            ts TIMESTAMP,                     -- UTC when the source has a zone
            ts_text VARCHAR,                  -- the time as written in the source
            host VARCHAR,
            component VARCHAR,
            level VARCHAR,                    -- trace debug info notice warn error fatal
            message_id BIGINT,
            fields VARCHAR,                   -- JSON text: the format's other fields (redacted)
            flag VARCHAR,                     -- invalid_utf8 | unparsed (loaded message-only)
            record_hash UBIGINT               -- dropped by 0007_log_records_without_hash
        );
        CREATE VIEW log_lines AS
        SELECT r.ingest_run, i.path AS file, r.line_no, r.n_lines, r.ts, r.ts_text, r.host,
               r.component, r.level, m.message, m.template_id, m.params, r.fields::JSON AS fields,
               r.flag
        FROM log_records r
        JOIN log_messages m USING (message_id)
        JOIN ingest_runs i ON i.run_id = r.ingest_run;
    """),
    Migration("0003_tasks", """
        CREATE TABLE tasks (
            task_id VARCHAR NOT NULL,
            generator VARCHAR,
            version INTEGER,
            verifier VARCHAR,
            kind VARCHAR,                     -- answer | terminal
            split VARCHAR,                    -- train | val | test
            path VARCHAR,                     -- the task directory
            out_dir VARCHAR,                  -- the build's --out
            source_table VARCHAR,
            source_keys VARCHAR[],
            content_hashes VARCHAR[],
            group_key VARCHAR,
            template_hash VARCHAR,
            seed BIGINT,
            validated BOOLEAN,
            build_id VARCHAR,
            built_at TIMESTAMP
        );
        CREATE TABLE task_drops (
            build_id VARCHAR,
            generator VARCHAR,
            source_keys VARCHAR,
            task_id VARCHAR,
            reason VARCHAR,
            dropped_at TIMESTAMP
        );
    """),
    Migration("0004_repair", """
        CREATE TABLE repair_checks (          -- build-time F2P/P2P check of a commit
            repo VARCHAR NOT NULL,
            sha VARCHAR NOT NULL,
            check_key VARCHAR NOT NULL,       -- hash of test command, environment, limits
            status VARCHAR,                   -- kept | rejected
            reason VARCHAR,                   -- no F2P, flaky, hang at parent, ...
            detail VARCHAR,
            fail_to_pass VARCHAR[],
            pass_to_pass VARCHAR[],
            flaky VARCHAR[],
            requirements VARCHAR[],
            env_key VARCHAR,
            gold_seconds DOUBLE,              -- one test run with the fix
            seconds DOUBLE,                   -- the whole check
            checked_at TIMESTAMP,
            PRIMARY KEY (repo, sha, check_key)
        );
    """),
    Migration("0005_runs", """
        CREATE TABLE runs (                   -- one `rlforge run`, resumed or not
            run_id VARCHAR PRIMARY KEY,
            status VARCHAR,                   -- running | finished
            created_at TIMESTAMP,
            updated_at TIMESTAMP,
            tasks_dir VARCHAR,
            run_dir VARCHAR,                  -- runs/<run_id>/: config.json, rollouts.jsonl
            base_url VARCHAR,                 -- empty for the embedded local model
            model VARCHAR,
            embedded BOOLEAN,
            samples INTEGER,
            tasks INTEGER,
            planned BIGINT,                   -- tasks x samples
            rollouts BIGINT,                  -- finished so far
            pass_rate DOUBLE,                 -- over valid (non-invalid) rollouts
            mean_reward DOUBLE,
            infra_error_rate DOUBLE,          -- invalid / rollouts
            pass_at_k JSON,                   -- {"1": ..., "K": ...}
            summary JSON,                     -- per generator and split, errors by type
            config JSON,                      -- the frozen resolved config (no secrets)
            rlforge_version VARCHAR
        );
        CREATE TABLE rollouts (               -- one line of runs/<run_id>/rollouts.jsonl
            run_id VARCHAR NOT NULL,
            rollout_id VARCHAR NOT NULL,      -- <task_id>#<sample>
            task_id VARCHAR NOT NULL,
            sample INTEGER NOT NULL,
            seed BIGINT,
            generator VARCHAR,
            generator_version INTEGER,
            split VARCHAR,
            kind VARCHAR,                     -- answer | terminal
            verifier VARCHAR,
            outcome VARCHAR,                  -- pass | fail | timeout | invalid
            reward DOUBLE,                    -- total; NULL when invalid
            components JSON,                  -- named reward components
            advantage DOUBLE,                 -- group-normalised within the task's samples
            error_type VARCHAR,               -- timeout, rate_limited, sandbox, verifier, ...
            error JSON,
            ended_by VARCHAR,                 -- answered | submitted | max_turns | ...
            turns INTEGER,
            commands INTEGER,
            prompt_tokens BIGINT,
            completion_tokens BIGINT,
            requests INTEGER,
            attempts INTEGER,
            policy_seconds DOUBLE,
            seconds DOUBLE,
            started_at TIMESTAMP,
            finished_at TIMESTAMP,
            scored_by VARCHAR,                -- in_process | sandbox
            rescored_at TIMESTAMP,
            messages JSON,
            steps JSON,
            submission JSON
        );
    """),
    # Free text and hashes are stored with zstd. DuckDB's default for strings (a dictionary
    # plus FSST, chosen per segment after trying both) spent ~2.5 of 8 CPU-seconds of a 1M-row
    # CSV ingest analysing these columns, and its file was twice as large (257 vs 130 MB).
    # Short categorical columns (origin, category, status, ...) keep the default. DuckDB
    # cannot change a column's compression in place, so the tables are rebuilt.
    Migration("0006_ticket_text_zstd", """
        CREATE TABLE tickets_v6 (
            ticket_id VARCHAR NOT NULL USING COMPRESSION zstd,
            origin VARCHAR,
            source_id VARCHAR USING COMPRESSION zstd,
            subject VARCHAR USING COMPRESSION zstd,
            body VARCHAR USING COMPRESSION zstd,
            category VARCHAR, intent VARCHAR, priority VARCHAR, status VARCHAR,
            resolution VARCHAR USING COMPRESSION zstd,
            created_at TIMESTAMP, resolved_at TIMESTAMP,
            tags VARCHAR[],
            extra JSON USING COMPRESSION zstd,
            content_hash VARCHAR NOT NULL USING COMPRESSION zstd,
            flags VARCHAR[], file VARCHAR, record_no BIGINT, ingest_run BIGINT
        );
        INSERT INTO tickets_v6 SELECT * FROM tickets;
        DROP TABLE tickets;
        ALTER TABLE tickets_v6 RENAME TO tickets;
        CREATE TABLE ticket_messages_v6 (
            ticket_id VARCHAR NOT NULL, seq INTEGER NOT NULL, role VARCHAR, author VARCHAR,
            text VARCHAR USING COMPRESSION zstd, created_at TIMESTAMP, is_public BOOLEAN
        );
        INSERT INTO ticket_messages_v6 SELECT * FROM ticket_messages;
        DROP TABLE ticket_messages;
        ALTER TABLE ticket_messages_v6 RENAME TO ticket_messages;
    """),
    # Log duplicates are found by line number and content directly (DuckDB skips the row
    # groups outside a chunk's line numbers), so the stored hash of each record goes: it
    # cost the writer ~8% of its time and 8 bytes a record, and DuckDB's hash() may change
    # between versions, which would have hidden duplicates written by an older one.
    Migration("0007_log_records_without_hash", """
        ALTER TABLE log_records DROP COLUMN record_hash;
    """),
    Migration("0008_flywheel", """
        CREATE TABLE task_stats (             -- a task's pass rate under a model, measured
            calibration_id VARCHAR NOT NULL,  -- the runs pooled, joined by '+'
            task_id VARCHAR NOT NULL,
            generator VARCHAR,
            model VARCHAR NOT NULL,           -- the run's model ('embedded': the local one)
            runs VARCHAR[],                   -- the runs whose rollouts were counted
            samples INTEGER,                  -- valid rollouts (invalid ones left out)
            passes INTEGER,
            estimate DOUBLE,                  -- passes / samples
            lo DOUBLE,                        -- 95% Wilson score interval
            hi DOUBLE,
            method VARCHAR,                   -- wilson95
            calibrated_at TIMESTAMP
        );
        CREATE TABLE dataset_versions (       -- a build-tasks output whose tasks changed
            out_dir VARCHAR NOT NULL,         -- the build's --out (resolved)
            version INTEGER NOT NULL,         -- 1, 2, ... per out_dir
            hash VARCHAR NOT NULL,            -- sha256 of the active tasks (tasks/versions.py)
            build_id VARCHAR,
            created_at TIMESTAMP,
            tasks INTEGER,
            rendered INTEGER,                 -- rendered by that build
            reused INTEGER,                   -- kept unchanged from the build before
            retired INTEGER,                  -- tasks of the version before that left
            PRIMARY KEY (out_dir, version)
        );
        CREATE TABLE dataset_version_tasks (  -- the snapshot: a version's active tasks
            out_dir VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            task_id VARCHAR NOT NULL,
            generator VARCHAR,
            generator_version INTEGER,
            split VARCHAR,
            source_table VARCHAR,
            source_keys VARCHAR[],
            content_hashes VARCHAR[],
            template_hash VARCHAR
        );
    """),
    Migration("0009_repair_checked_values", """
        -- {fail-to-pass id: lines of its checked asserts the parent's code already passed}
        ALTER TABLE repair_checks ADD COLUMN held_at_parent VARCHAR;
        -- {pass-to-pass id: lines of its literal asserts the fix passed in every run}
        ALTER TABLE repair_checks ADD COLUMN p2p_checks VARCHAR;
    """),
    Migration("0010_forget", """
        CREATE TABLE exports (                -- an `rlforge export` written (rlforge/forget.py)
            kind VARCHAR NOT NULL,            -- tasks | rollouts
            format VARCHAR,
            out VARCHAR NOT NULL,             -- the export's directory (resolved)
            source VARCHAR,                   -- the tasks directory or the run it read
            task_ids VARCHAR[],               -- the tasks whose rows (or rollouts) it holds
            files VARCHAR[],
            written_at TIMESTAMP,
            stale_since TIMESTAMP,            -- a forget removed some of its tasks: write it again
            stale_forget VARCHAR              -- that forget's id
        );
        CREATE TABLE forget_log (             -- one deletion request (`rlforge forget`)
            forget_id VARCHAR PRIMARY KEY,
            key_kind VARCHAR,                 -- ticket | pseudonym | email | name (never the key)
            status VARCHAR,                   -- pending: the files still to do | done
            requested_at TIMESTAMP,
            finished_at TIMESTAMP,
            counts JSON,                      -- rows and files removed, per table and kind
            pending JSON,                     -- the file work left (ids and paths); NULL when done
            rlforge_version VARCHAR
        );
    """),
    Migration("0011_commit_bytes", """
        -- The exact bytes of a text git gave that is not UTF-8; NULL when the text column
        -- holds it exactly (see rlforge.ingest.gitbytes). The text column then reads each
        -- stray byte as its Windows-1252 character (U+FFFD where it has none).
        ALTER TABLE commits ADD COLUMN message_bytes BLOB;
        ALTER TABLE commits ADD COLUMN author_bytes BLOB;     -- with --no-redact only
        ALTER TABLE commits ADD COLUMN committer_bytes BLOB;  -- with --no-redact only
        ALTER TABLE commit_files ADD COLUMN path_bytes BLOB;
        ALTER TABLE commit_files ADD COLUMN old_path_bytes BLOB;
    """),
    Migration("0012_repair_p2p_variants", """
        -- [copies of pass-to-pass tests with an input changed, with the values the build
        --  measured at the parent and with the fix] (rlforge/verify/standalone/variants.py)
        ALTER TABLE repair_checks ADD COLUMN p2p_variants VARCHAR;
    """),
]


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """Number of applied migrations."""
    return con.execute("SELECT count(*) FROM schema_migrations").fetchall()[0][0]


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations in name order; return the names applied."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP, rlforge_version VARCHAR)")
    done = {r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()}
    applied = []
    for m in sorted(MIGRATIONS, key=lambda m: m.name):
        if m.name in done:
            continue
        con.execute("BEGIN")
        try:
            con.execute(m.sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        [m.name, now(), __version__])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(m.name)
    return applied


def connect(path: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the rlforge database and bring its schema up to date."""
    path = Path(path)
    if read_only and not path.exists():
        raise UserError(f"database {path} does not exist; run `rlforge ingest ...` first "
                        "or pass --db PATH")
    if path.parent and not path.parent.exists():
        raise UserError(f"directory {path.parent} for database {path} does not exist")
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        holder = lock_holder(str(exc))
        if holder:
            raise DatabaseInUse(f"database {path} is in use: {holder}; run this again when "
                                "it has finished") from None
        raise UserError(f"cannot open database {path}: {exc}") from None
    # No progress tracking by default (it costs ~15% on a large scan); the CLI turns it on
    # when it shows progress. DuckDB never prints its own bar.
    con.execute("SET enable_progress_bar = false; SET enable_progress_bar_print = false")
    if not read_only:
        migrate(con)
    return con


def connect_when_free(path: str | Path, wait: float = 600.0,
                      told: Callable[[str], None] | None = None) -> duckdb.DuckDBPyConnection:
    """`connect`, waiting up to `wait` seconds (polling every 2 s) while another process
    holds the database; `told` hears once who holds it."""
    deadline = time.monotonic() + wait
    said = False
    while True:
        try:
            return connect(path)
        except DatabaseInUse as exc:
            if time.monotonic() > deadline:
                raise
            if told is not None and not said:
                told(f"{exc}; waiting for it (up to {wait:.0f}s)")
                said = True
            time.sleep(2.0)


def lock_holder(message: str) -> str | None:
    """Who holds the database, from DuckDB's lock error ("Conflicting lock is held in
    <program> (PID n)"): the holder's command line and since when it runs, read from /proc.
    None when the error is not a lock conflict."""
    m = re.search(r"Conflicting lock is held in (.*?) \(PID (\d+)\)", message)
    if not m:
        return None
    pid = int(m.group(2))
    what, since = m.group(1), None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        args = [a.decode(errors="replace") for a in cmdline if a]
        # `python -m rlforge ...`, `.../bin/rlforge ...`: show it from `rlforge` on
        start = next((i for i, a in enumerate(args) if Path(a).name == "rlforge"
                      or a == "rlforge" or a.endswith("/rlforge/__main__.py")), None)
        if args:
            what = " ".join(["rlforge", *args[start + 1:]] if start is not None else args)
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        started = dt.datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"),
                                            dt.timezone.utc)
        since = started.strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OSError, ValueError, IndexError, StopIteration):
        pass  # not on this machine's /proc (or it just ended): say what DuckDB said
    kind = "an ingest" if " ingest " in f" {what} " else "another process"
    return f"{kind} holds it ({what}, PID {pid}" + (f", running since {since})" if since else ")")


class ArrowStream:
    """A polars DataFrame as DuckDB should scan it: through the Arrow C stream interface.

    Handed a polars DataFrame, DuckDB converts it through pyarrow, whose import alone
    costs ~0.1 s of a short command; any object with `__arrow_c_stream__` it reads
    directly. Use it through `scanning`.
    """

    def __init__(self, frame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema=None):
        return self.frame.__arrow_c_stream__(requested_schema)


@contextmanager
def scanning(con: duckdb.DuckDBPyConnection, name: str, frame):
    """A polars DataFrame readable by SQL as the view `name` for the block's duration."""
    con.register(name, ArrowStream(frame))
    try:
        yield
    finally:
        con.unregister(name)


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    """Append rows (tuples in the table's column order) with one statement. `executemany`
    runs a statement per row, ~0.4 ms each: 46 ms for the 116 templates of one BGL file."""
    if not rows:
        return
    with scanning(con, f"_rows_{table}", rows_frame(rows)):
        con.execute(f"INSERT INTO {table} SELECT * FROM _rows_{table}")


def rows_frame(rows: list[tuple], schema: list[str] | None = None):
    """Python rows as a polars DataFrame DuckDB can scan: a column of only None or of only
    empty lists (polars' Null type, which DuckDB refuses from Arrow) becomes text."""
    import polars as pl  # not at the top: commands that never insert rows skip loading it

    frame = pl.DataFrame(rows, schema=schema, orient="row", infer_schema_length=None)
    return frame.with_columns(pl.col(pl.Null).cast(pl.String),
                              pl.col(pl.List(pl.Null)).cast(pl.List(pl.String)))


def now() -> dt.datetime:
    """Naive UTC timestamp, the form every TIMESTAMP column in rlforge stores."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def meta_get(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def meta_set(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])


def redaction_key(con: duckdb.DuckDBPyConnection) -> bytes:
    """The database's pseudonym key, created on first use, so re-ingests map identically."""
    value = meta_get(con, "redaction_key")
    if value is None:
        value = secrets.token_hex(32)
        meta_set(con, "redaction_key", value)
    return bytes.fromhex(value)


def record_export(path: str | Path, kind: str, fmt: str, out: str | Path, source: str | Path,
                  task_ids: list[str], files: list[str]) -> bool:
    """Record an export written to `out` in the `exports` table of the database at `path`,
    so that `rlforge forget` can list it for regeneration when it removes one of its tasks.
    A database that does not exist is not created for it (False: nothing recorded)."""
    if not Path(path).is_file():
        return False
    con = connect_when_free(path, wait=60.0)
    try:
        con.execute("INSERT INTO exports VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                    [kind, fmt, str(Path(out).resolve()), str(Path(source).resolve()),
                     sorted(set(task_ids)), list(files), now()])
    finally:
        con.close()
    return True


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def next_run_id(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT nextval('ingest_run_seq')").fetchall()[0][0]


def table_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of every user table that exists (the status view)."""
    existing = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall()]
    skip = {"meta", "schema_migrations"}
    return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]
            for t in existing if t not in skip}


def status(con: duckdb.DuckDBPyConnection, recent: int = 10) -> dict[str, Any]:
    """`rlforge status`: the schema version, row counts per table, redactions per kind over
    every ingest, and the `recent` latest ingest runs."""
    rows = con.execute(
        "SELECT run_id, source, path, format, status, n_read, n_loaded, n_duplicates, "
        "n_quarantined, finished_at FROM ingest_runs ORDER BY run_id DESC LIMIT ?", [recent]
    ).fetchall()
    cols = ["run_id", "source", "path", "format", "status", "read", "loaded", "duplicates",
            "quarantined", "finished_at"]
    return {"schema_version": schema_version(con), "tables": table_counts(con),
            "redactions": redaction_counts(con),
            "recent_ingests": [dict(zip(cols, r)) for r in rows]}


def redaction_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Redactions per kind over every ingest run, most first (occurrences, not values)."""
    total: dict[str, int] = {}
    for (raw,) in con.execute("SELECT redactions FROM ingest_runs WHERE redactions IS NOT NULL").fetchall():
        for kind, n in (json.loads(raw) if isinstance(raw, str) else raw or {}).items():
            total[kind] = total.get(kind, 0) + int(n)
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))
