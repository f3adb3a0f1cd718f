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


# --- the stated rule -------------------------------------------------------------------
#
# What an instruction says defines its answer. Patterns are shown with PATTERN_RULE, and
# every answer is computed a second time from the window as the task shows it (the text,
# parsed back by RECORD_LINE) by that rule alone, with no template ids: a task whose two
# answers differ is dropped with the reason (see `rule_disagreement`).

PATTERN_RULE = ("In a pattern, `<*>` stands for any run of characters (possibly none), a "
                "space stands for one or more spaces or tabs, and every other character stands "
                "for itself; a record matches a pattern when the whole first line of its "
                "message (the text after `COMPONENT: `) matches.")
RECORD_LINE = re.compile(r"^(\S+) (\S+) (\S+) (\S+?): (.*)$")


def pattern_regex(pattern: str) -> re.Pattern:
    """The regular expression PATTERN_RULE describes, for `fullmatch` on a first line."""
    pieces = []
    for i, literal in enumerate(pattern.split("<*>")):
        if i:
            pieces.append(".*?")
        pieces.append("[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", literal)))
    return re.compile("".join(pieces))


@dataclass(frozen=True)
class ShownRecord:
    """A record as the window shows it: what a solver reads."""

    time: str
    host: str
    level: str
    component: str
    message: str  # the first line


def parse_shown(text: str) -> list[ShownRecord]:
    """The records of a rendered window (continuation lines, which start with a tab, are
    skipped); a line that is not a record raises, since then the text is not what the
    instruction describes."""
    out = []
    for line in text.splitlines():
        if line.startswith("\t"):
            continue
        m = RECORD_LINE.match(line)
        if m is None:
            raise ValueError(f"not a record line: {line[:80]!r}")
        out.append(ShownRecord(*m.groups()))
    return out


def shown_time(r: ShownRecord):
    import datetime as dt

    if r.time == "-":
        return None
    return dt.datetime.fromisoformat(r.time)


def error_burst_start(times_levels, gap_sec: float = 60.0, size: int = 3,
                      levels=ERROR_LEVELS):
    """Index of the first record of the first error burst: at least `size` ERROR/FATAL
    records, each at most `gap_sec` after the one before; None when there is none.
    `times_levels`: (time or None, lower-case level or None) per record, in order."""
    run: list[tuple[int, object]] = []
    for i, (t, level) in enumerate(times_levels):
        if level not in levels or t is None:
            continue
        if run and (t - run[-1][1]).total_seconds() > gap_sec:
            run = []
        run.append((i, t))
        if len(run) >= size:
            return run[0][0]
    return None


def minute_of_peak(times_levels, levels=ERROR_LEVELS) -> str | None:
    """The minute (`YYYY-MM-DD HH:MM`) with the most ERROR/FATAL records; None on a tie or
    when fewer than two minutes have errors."""
    from collections import Counter

    counts = Counter(t.strftime("%Y-%m-%d %H:%M") for t, level in times_levels
                     if level in levels and t is not None)
    top = counts.most_common(2)
    if len(counts) < 2 or top[0][1] == top[1][1]:
        return None
    return top[0][0]


def longest_gap(times_levels, min_sec: float = 5.0) -> int | None:
    """Index of the record after which the longest silence (time to the next record)
    begins; None when it is shorter than `min_sec`, not unique, or a time is missing."""
    times = [t for t, _ in times_levels]
    if len(times) < 3 or any(t is None for t in times):
        return None
    gaps = sorted(((times[i + 1] - times[i]).total_seconds(), i) for i in range(len(times) - 1))
    (second, _), (top, i) = gaps[-2], gaps[-1]
    if top < min_sec or top == second:
        return None
    return i
