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

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from rlforge.ingest.common import service_name  # noqa: F401  (re-exported for the log generators)
from rlforge.ingest.logformats.levels import ERROR_LEVELS, FAILURE_LEVELS
from rlforge.verify.shortcuts import pattern_regex  # noqa: F401  (the stated rule's regex)


@dataclass(frozen=True)
class Record:
    line_no: int
    ts: dt.datetime | None
    host: str | None
    component: str | None
    level: str | None
    message: str
    template_id: str | None
    run: int | None = None  # the ingest run (file) it came from


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


def records_between(con: duckdb.DuckDBPyConnection, ingest_run: int, first: int,
                    last: int) -> list[Record]:
    """The records of one ingested file from line `first` to line `last`, in order."""
    rows = con.execute("""
        SELECT line_no, ts, host, component, level, message, template_id FROM log_lines
        WHERE ingest_run = ? AND line_no BETWEEN ? AND ? ORDER BY line_no""",
                       [ingest_run, first, last]).fetchall()
    return [Record(r[0], r[1], r[2], r[3], r[4], r[5] or "", r[6], ingest_run) for r in rows]


def window_records(con: duckdb.DuckDBPyConnection, w: WindowStats) -> list[Record]:
    return records_between(con, w.ingest_run, w.first_line, w.last_line)


def fmt_time(ts) -> str:
    if ts is None:
        return "-"
    if getattr(ts, "microsecond", 0):
        return ts.isoformat(timespec="milliseconds")
    return ts.isoformat(timespec="seconds")


def _field(value: str | None) -> str:
    return re.sub(r"\s+", "_", value.strip()) if value and value.strip() else "-"


def render(records: list[Record], columns: bool = False) -> str:
    """The window as text: one line per record, continuation lines indented by a tab. With
    `columns`, the host and level fields are padded with spaces to their widest (as loggers
    with fixed-width fields write them)."""
    out = []
    hosts = [_field(r.host) for r in records]
    levels = [(r.level or "-").upper() for r in records]
    hw, lw = (max(map(len, hosts), default=0), max(map(len, levels), default=0)) \
        if columns else (0, 0)
    for r, host, level in zip(records, hosts, levels):
        first, *rest = r.message.split("\n")
        out.append(f"{fmt_time(r.ts)} {host:<{hw}} {level:<{lw}} "
                   f"{_field(r.component)}: {first}")
        out.extend("\t" + line.lstrip("\t") for line in rest)
    return "\n".join(out) + "\n"


# --- windows of several files ----------------------------------------------------------
#
# A window may hold the records of several services' files over one time span. It is shown
# file by file, each after a head line naming its workspace file, the way `tail` shows
# several files; its questions are about all the records together, in `time_order`.

SECTION_HEAD = re.compile(r"^==> /app/logs/(\S+) <==$")
ORDER_RULE = ("The records of all the files count together, in time order; records with the "
              "same time (as shown) are in the order the files are listed, then in their order "
              "within the file, and a record without a time comes right after the record "
              "before it in its file.")


def render_sections(sections: list[tuple[str, list[Record]]]) -> str:
    """A window of several files: (workspace file name, records) each, each after its head
    line; one file alone is rendered without one."""
    if len(sections) == 1:
        return render(sections[0][1])
    return "".join(f"==> /app/logs/{name} <==\n" + render(recs) for name, recs in sections)


def record_time(r: Record):
    """A record's time as the window shows it (to the millisecond)."""
    return None if r.ts is None else dt.datetime.fromisoformat(fmt_time(r.ts))


def time_order(sections: list[list], time_of) -> list:
    """The records of several files in one list, ordered as ORDER_RULE states."""
    keyed = []
    for s, recs in enumerate(sections):
        last = dt.datetime.min
        for i, r in enumerate(recs):
            t = time_of(r)
            last = last if t is None else t
            keyed.append(((last, s, i), r))
    keyed.sort(key=lambda kr: kr[0])
    return [r for _, r in keyed]


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
    instruction describes. A window of several files (`render_sections`) is read file by
    file and its records are merged in `time_order`."""
    sections: list[list[ShownRecord]] = []
    for line in text.splitlines():
        if line.startswith("\t"):
            continue
        if SECTION_HEAD.match(line):
            sections.append([])
            continue
        m = RECORD_LINE.match(line)
        if m is None:
            raise ValueError(f"not a record line: {line[:80]!r}")
        if not sections:
            sections.append([])
        sections[-1].append(ShownRecord(*m.groups()))
    if len(sections) <= 1:
        return sections[0] if sections else []
    return time_order(sections, shown_time)


def shown_time(r: ShownRecord):
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


# --- long-context windows ------------------------------------------------------------
#
# Token counts are an approximation of GPT-style BPE tokenizers (no tokenizer download):
# the text is cut the way their pre-tokenizers cut it (runs of letters, runs of at most
# three digits, runs of other symbols, each with an optional leading space; runs of
# whitespace), and each piece counts one token per started 8 characters. BPE never joins
# pieces, so real counts are at least the number of pieces; common words are one token.

TOKEN_PIECE = re.compile(r" ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+")
TOKENIZER_NOTE = ("approximate: GPT-style pre-tokenizer pieces (letter runs, 1-3 digits, "
                  "symbol runs, whitespace), one token per started 8 characters of a piece")


def approx_tokens(text: str) -> int:
    """Tokens of `text` by the approximation above (TOKENIZER_NOTE)."""
    return sum((len(p) + 7) // 8 for p in TOKEN_PIECE.findall(text))


def parse_token_budgets(spec) -> list[int]:
    """`8k,32k,128k` (k = 1024), a number, or a list of them -> budgets in tokens."""
    from rlforge.errors import UserError

    if spec is None or spec == "":
        return []
    items = spec.split(",") if isinstance(spec, str) else \
        (list(spec) if isinstance(spec, (list, tuple)) else [spec])
    out = []
    for item in items:
        text = str(item).strip().lower()
        try:
            n = int(float(text[:-1]) * 1024) if text.endswith("k") else int(text)
        except ValueError:
            raise UserError(f"context tokens {item!r}: give a number or e.g. 32k") from None
        if n < 1024:
            raise UserError(f"context tokens {item!r}: at least 1k")
        out.append(n)
    return sorted(set(out))


def grow_window(con: duckdb.DuckDBPyConnection, w: WindowStats, budget: int,
                fixed: int) -> list[Record] | None:
    """The records of `w`'s file around `w` (all of `w`'s records inside), grown one record
    at a time on alternate sides while their rendered tokens plus `fixed` (the rest of the
    prompt) stay within `budget`; None when the file is too short to come within 5% of it."""
    seed = window_records(con, w)
    per = max(1, approx_tokens(render(seed)) // max(1, len(seed)))
    last_line = con.execute("SELECT max(line_no) FROM log_records WHERE ingest_run = ?",
                            [w.ingest_run]).fetchall()[0][0]
    reach = 8 * (budget // per + 1)  # lines fetched on each side
    while True:
        around = records_between(con, w.ingest_run, w.first_line - reach, w.last_line + reach)
        lo = next(i for i, r in enumerate(around) if r.line_no == w.first_line)
        hi = lo + len(seed)
        tokens = [approx_tokens(render([r])) for r in around]
        total = fixed + sum(tokens[lo:hi])
        if total > budget:
            return None
        grew = True
        while grew:
            grew = False
            if lo > 0 and total + tokens[lo - 1] <= budget:
                lo -= 1
                total += tokens[lo]
                grew = True
            if hi < len(around) and total + tokens[hi] <= budget:
                total += tokens[hi]
                hi += 1
                grew = True
        more = (lo == 0 and w.first_line - reach > 1) or \
            (hi == len(around) and w.last_line + reach < last_line)
        if total >= 0.95 * budget or not more:
            break
        reach *= 4
    return around[lo:hi] if total >= 0.95 * budget else None


class _FileTokens:
    """One ingested file's records and their tokens, fetched as the line range grows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run: int):
        self.con, self.run = con, run
        self.by_line: dict[int, tuple[Record, int]] = {}
        self.lo: int | None = None
        self.hi: int | None = None

    def _fetch(self, first: int, last: int) -> None:
        for r in records_between(self.con, self.run, first, last):
            self.by_line[r.line_no] = (r, approx_tokens(render([r])))

    def span(self, first: int, last: int) -> list[tuple[Record, int]]:
        if self.lo is None or self.hi is None:
            self._fetch(first, last)
            self.lo, self.hi = first, last
        if first < self.lo:
            self._fetch(first, self.lo - 1)
            self.lo = first
        if last > self.hi:
            self._fetch(self.hi + 1, last)
            self.hi = last
        return [self.by_line[n] for n in sorted(self.by_line) if first <= n <= last]


def grow_fleet(con: duckdb.DuckDBPyConnection, w: WindowStats, budget: int,
               fixed: int) -> list[tuple[str, list[Record]]] | None:
    """A window across every file with times: the records of each file logged within
    `delta` seconds of `w`'s time span (a file's lines from the first to the last such
    record; `w`'s own records all inside), with the largest `delta` whose rendered tokens
    plus `fixed` stay within `budget`. Returns (service file name, records) per file, in the
    order of ingest; None when `w` has no time, or all the files together cannot come
    within 5% of the budget, or `w`'s span alone exceeds it."""
    times = [r.ts for r in window_records(con, w) if r.ts is not None]
    if not times:
        return None
    a, b = min(times), max(times)
    # The files of the same period: those whose times overlap those of `w`'s file.
    spans = {run: (lo, hi) for run, lo, hi in con.execute("""
        SELECT ingest_run, min(ts), max(ts) FROM log_records WHERE ts IS NOT NULL
        GROUP BY ingest_run""").fetchall()}
    own = spans[w.ingest_run]
    spans = {run: s for run, s in spans.items() if s[0] <= own[1] and s[1] >= own[0]}
    first_ts, last_ts = min(s[0] for s in spans.values()), max(s[1] for s in spans.values())
    files = {run: _FileTokens(con, run) for run in spans}
    names = section_names(con, list(files))

    def bounds(delta: int) -> dict[int, tuple[int, int]]:
        got = span_bounds(con, w, a, b, delta)
        return {run: lines for run, lines in got.items() if run in files}

    def cost(delta: int) -> tuple[int, list]:
        chosen = sorted(bounds(delta).items())
        spans = [(names[run], files[run].span(lo, hi)) for run, (lo, hi) in chosen]
        total = fixed + sum(t for _, recs in spans for _, t in recs)
        if len(spans) > 1:
            total += sum(approx_tokens(f"==> /app/logs/{n} <==\n") for n, _ in spans)
        return total, [(n, [r for r, _ in recs]) for n, recs in spans]

    top = int(max((b - first_ts).total_seconds(), (last_ts - a).total_seconds())) + 1
    total, best = cost(0)
    if total > budget:
        return None
    lo, hi = 0, top  # cost(lo) fits; find the largest delta that fits
    if cost(top)[0] <= budget:
        total, best = cost(top)
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            t, sections = cost(mid)
            if t <= budget:
                lo, total, best = mid, t, sections
            else:
                hi = mid
    if total < 0.95 * budget or len(best) < 2:
        return None
    return best


def span_bounds(con: duckdb.DuckDBPyConnection, w: WindowStats, a, b,
                delta: int = 0) -> dict[int, tuple[int, int]]:
    """Per ingested file, the first and last line of its records logged from `delta` seconds
    before `a` to `delta` seconds after `b`; `w`'s file always, with all of `w`'s lines."""
    step = dt.timedelta(seconds=delta)
    got = {run: (lo, hi) for run, lo, hi in con.execute("""
        SELECT ingest_run, min(line_no), max(line_no) FROM log_records
        WHERE ts BETWEEN ? AND ? GROUP BY ingest_run""", [a - step, b + step]).fetchall()}
    lo, hi = got.get(w.ingest_run, (w.first_line, w.last_line))
    got[w.ingest_run] = (min(lo, w.first_line), max(hi, w.last_line))
    return got


def span_sections(con: duckdb.DuckDBPyConnection,
                  w: WindowStats) -> list[tuple[str, list[Record]]]:
    """`w`'s records (its file first) and those every other file logged in `w`'s time span:
    (workspace file name, records) each. A window without times is its file alone."""
    records = window_records(con, w)
    times = [r.ts for r in records if r.ts is not None]
    names = section_names(con, [w.ingest_run])
    if not times:
        return [(names[w.ingest_run], records)]
    bounds = span_bounds(con, w, min(times), max(times))
    bounds[w.ingest_run] = (w.first_line, w.last_line)
    names = section_names(con, list(bounds))
    runs = [w.ingest_run] + sorted(r for r in bounds if r != w.ingest_run)
    return [(names[r], records if r == w.ingest_run else records_between(con, r, *bounds[r]))
            for r in runs]


def section_names(con: duckdb.DuckDBPyConnection, runs: list[int]) -> dict[int, str]:
    """Workspace file names of ingested files: `<service>.log`, made unique by a number."""
    paths = dict(con.execute("SELECT run_id, path FROM ingest_runs WHERE run_id IN "
                             "(SELECT unnest(?::BIGINT[]))", [sorted(runs)]).fetchall())
    out: dict[int, str] = {}
    for run in sorted(runs):
        name, n = service_name(paths.get(run, "logs")), 1
        while f"{name}.log" in out.values():
            n += 1
            name = f"{service_name(paths.get(run, 'logs'))}-{n}"
        out[run] = f"{name}.log"
    return out


# --- source lines as written ----------------------------------------------------------
#
# A workspace shows the records as the service wrote them, every field kept. Nothing more is
# stored at ingest for this (that halved ingest throughput): the build reads the lines
# again from the ingested file, when it is still there with the sha256 its ingest recorded,
# and redacts them with the database's key. A record's lines are used only when every
# pseudonym its stored fields hold is in them too (what was redacted at ingest is redacted
# here) and its time text is there (the lines are the ones ingested); else the window is
# rendered as the instruction shows it.

PSEUDONYM = re.compile(r"<[A-Z][A-Z0-9_]*_[0-9a-f]{6,}>")
SOURCE_CACHE_LINES = 2_000_000  # lines of one file kept in memory by a build


class SourceLines:
    """The source lines of ingested log files, read again and redacted, for one build."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._files: dict[int, list[str] | None] = {}
        self._redacted: dict[tuple[int, int], str] = {}
        self._redactor: Any = None

    def _lines(self, run: int) -> list[str] | None:
        if run not in self._files:
            self._files[run] = self._read(run)
        return self._files[run]

    def _read(self, run: int) -> list[str] | None:
        from rlforge import db
        from rlforge.ingest.logformats.reader import iter_line_blocks
        from rlforge.ingest.logs import line_endings, read_head

        row = self.con.execute("SELECT path, sha256 FROM ingest_runs WHERE run_id = ?",
                               [run]).fetchone()
        if row is None or not row[1] or not Path(row[0]).is_file():
            return None
        path = Path(row[0])
        try:
            if db.sha256_file(path) != row[1]:
                return None
            lines: list[str] = []
            for block in iter_line_blocks(path, newline=line_endings(read_head(path))):
                lines.extend(block.lines.to_list())
                if len(lines) > SOURCE_CACHE_LINES:
                    return None
        except Exception:  # unreadable now: the rendered window is shown instead
            return None
        return lines

    def _redact(self, text: str) -> str:
        if self._redactor is None:
            from rlforge.ingest.common import DATABASE_REDACTOR, resolve_redactor

            self._redactor = resolve_redactor(self.con, DATABASE_REDACTOR)
        return self._redactor.redact_text(text)

    def text(self, records: list[Record]) -> str | None:
        """`records` (of one file, in order) as their source lines, or None (see above)."""
        run = records[0].run if records else None
        lines = None if run is None else self._lines(run)
        if lines is None or run is None:
            return None
        rows = {r[0]: r[1:] for r in self.con.execute("""
            SELECT r.line_no, r.n_lines, r.ts_text, r.host, r.component, r.fields::VARCHAR
            FROM log_records r WHERE r.ingest_run = ? AND r.line_no BETWEEN ? AND ?""",
                                                       [run, records[0].line_no,
                                                        records[-1].line_no]).fetchall()}
        out = []
        for r in records:
            if r.line_no not in rows:
                return None
            n, ts_text, host, component, fields = rows[r.line_no]
            key = (run, r.line_no)
            if key not in self._redacted:
                self._redacted[key] = self._redact("\n".join(lines[r.line_no - 1:
                                                                   r.line_no - 1 + (n or 1)]))
            text = self._redacted[key]
            stored = " ".join(x for x in (host, component, r.message, fields) if x)
            if (ts_text and ts_text not in text) or \
                    not set(PSEUDONYM.findall(stored)) <= set(PSEUDONYM.findall(text)):
                return None
            out.append(text + "\n")
        return "".join(out)
