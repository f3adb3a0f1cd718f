"""What the log generators share: windows of log records, and how a window is shown.

A window is a run of consecutive records of one ingested file (`log_lines`, in line order).
Windows are chosen with SQL from per-window statistics, so a table of millions of lines is
never read whole. A record is rendered as one line, the same way in the instruction and in
the workspace file:

    TIMESTAMP HOST LEVEL COMPONENT: MESSAGE

(`-` where the source has no value; continuation lines of a multi-line record follow,
each starting with a tab). Times are UTC, ISO 8601.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import duckdb

ERROR_LEVELS = ("error", "fatal")
FAILURE_LEVELS = ("warn", "error", "fatal")


@dataclass(frozen=True)
class Record:
    line_no: int
    ts: object
    host: str | None
    component: str | None
    level: str | None
    message: str
    template_id: str | None


@dataclass(frozen=True)
class WindowStats:
    ingest_run: int
    file: str
    index: int
    first_line: int
    last_line: int
    n: int
    n_errors: int
    n_failures: int
    n_components: int
    n_hosts: int
    n_with_time: int
    n_templates: int

    @property
    def key(self) -> str:
        return f"{self.ingest_run}:{self.first_line}-{self.last_line}"


def service_name(path: str) -> str:
    """A file's service name: its file name without log/compression suffixes."""
    name = PurePosixPath(path).name
    while True:
        stem, dot, ext = name.rpartition(".")
        if dot and ext.lower() in ("log", "gz", "jsonl", "json", "txt", "syslog", "out"):
            name = stem
        else:
            return name or "logs"


def window_stats(con: duckdb.DuckDBPyConnection, size: int) -> list[WindowStats]:
    """Statistics of every window of `size` consecutive records, per ingested file."""
    rows = con.execute(f"""
        WITH numbered AS (
            SELECT ingest_run, file, line_no, ts, host, component, level, template_id,
                   (row_number() OVER (PARTITION BY ingest_run ORDER BY line_no) - 1) // {int(size)} AS w
            FROM log_lines)
        SELECT ingest_run, any_value(file), w, min(line_no), max(line_no), count(*),
               count(*) FILTER (WHERE level IN {ERROR_LEVELS}),
               count(*) FILTER (WHERE level IN {FAILURE_LEVELS}),
               count(DISTINCT component), count(DISTINCT host), count(ts),
               count(DISTINCT template_id)
        FROM numbered GROUP BY ingest_run, w
        HAVING count(*) >= {max(10, int(size) // 2)}
        ORDER BY ingest_run, w""").fetchall()
    return [WindowStats(*r) for r in rows]


def incident_group(w: WindowStats, records: list[Record]) -> str:
    """Split group of a window: the hour it starts in, so one incident seen in several
    services' logs lands in one split; files without times group by neighbouring windows."""
    first = next((r.ts for r in records if r.ts is not None), None)
    if first is not None:
        return "logs-hour:" + first.strftime("%Y-%m-%dT%H")
    return f"logs-file:{w.file}:{w.index // 4}"


def window_records(con: duckdb.DuckDBPyConnection, w: WindowStats) -> list[Record]:
    rows = con.execute("""
        SELECT line_no, ts, host, component, level, message, template_id FROM log_lines
        WHERE ingest_run = ? AND line_no BETWEEN ? AND ? ORDER BY line_no""",
                       [w.ingest_run, w.first_line, w.last_line]).fetchall()
    return [Record(*r[:5], r[5] or "", r[6]) for r in rows]


def fmt_time(ts) -> str:
    if ts is None:
        return "-"
    if getattr(ts, "microsecond", 0):
        return ts.isoformat(timespec="milliseconds")
    return ts.isoformat(timespec="seconds")


def _field(value: str | None) -> str:
    return re.sub(r"\s+", "_", value.strip()) if value and value.strip() else "-"


def render(records: list[Record]) -> str:
    """The window as text: one line per record, continuation lines indented by a tab."""
    out = []
    for r in records:
        first, *rest = r.message.split("\n")
        out.append(f"{fmt_time(r.ts)} {_field(r.host)} {(r.level or '-').upper()} "
                   f"{_field(r.component)}: {first}")
        out.extend("\t" + line.lstrip("\t") for line in rest)
    return "\n".join(out) + "\n"


def template_regex(template: str) -> re.Pattern:
    """A regex matching a message's first line against a template (<*> = any text)."""
    parts = [re.escape(p) for p in template.split("<*>")]
    return re.compile("(?:.*?)".join(parts), re.S)


def templates_of(con: duckdb.DuckDBPyConnection, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = con.execute("SELECT template_id, any_value(template) FROM log_templates "
                       "WHERE template_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL",
                       [sorted(ids)]).fetchall()
    return dict(rows)


ID_PATTERN = re.compile(r"\b(?:blk_-?\d{6,}|[A-Za-z]{2,12}[_-][0-9a-fA-F]{6,}|"
                        r"[A-Za-z]{2,12}_\d{4,})\b")


def ids_in(message: str) -> set[str]:
    """Request, block and similar ids in a message (not pseudonyms, not plain numbers)."""
    return {m.group(0) for m in ID_PATTERN.finditer(message)
            if not m.group(0).isdigit() and message[max(0, m.start() - 1):m.start()] != "<"}
