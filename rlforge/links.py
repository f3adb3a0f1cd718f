"""Links between the records of one incident: a ticket, the commits that fixed it, and
the log windows that show it.

A link joins one ticket to one target (a commit, or a window of one ingested log file)
and keeps every piece of evidence found for it, each with a confidence; the link's
confidence is 1 - prod(1 - c) over its evidence. The evidence kinds:

- `ticket_key`: the ticket's key in a commit's message: a Jira-style key (`TB-1042`)
  as a word, a numeric id only as `#10117` or after a word such as "ticket" or "issue",
  or a user pattern (`links.key_patterns`) whose first group is the key. A closing verb
  before it ("Fixes TB-1042") makes it surer; a commit made long before the ticket was
  opened cannot fix it, and the evidence is discounted. A bare number is every issue
  tracker's: it counts in full only when corroborated (`corroborated`: a repository
  declared the help desk's in `links.repos`, or a commit near the ticket's time).
- `ticket_url`: a URL in a commit's message whose path ends with the ticket's key.
- `shared_id`: an identifier (a request or trace id, an error code, a host: a token
  with letters and digits, at least 8 characters, not a version, date or placeholder)
  written in the ticket's conversation and in log records from a week before the ticket
  to two days after it. Its confidence falls with the number of tickets and records that
  hold it: a request id in one ticket and a few records is strong, a host name in
  thousands of records is weak.
- `time_component`: the ticket names a service whose log shows an error burst (see
  `_bursts`) that started at most `BURST_LEAD` before the ticket was opened. Alone it stays below the
  default threshold unless the burst is the only one in that span.

`update` is incremental: it reads only what the ingest runs since its last call added
(tickets, commits, log files), works out which tickets that can touch, and recomputes
their links. `rlforge ingest` calls it after every command; `rlforge links` shows them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import duckdb

from rlforge import db
from rlforge.config import LinkSettings
from rlforge.ingest.common import service_name
from rlforge.ingest.logformats.levels import ERROR_LEVELS

THRESHOLD = 0.7  # links at or above it are shown and used by the incident generators
BURST_BUCKET = dt.timedelta(minutes=10)  # errors are counted per bucket of this width
BURST_LEAD = dt.timedelta(hours=2)  # a ticket opened this long after a burst began can report it
SHARED_BEFORE = dt.timedelta(days=7)  # a shared id's records may precede the ticket this much
SHARED_AFTER = dt.timedelta(days=2)  # or follow it (a retry the customer reports later)
FIX_AFTER = dt.timedelta(days=14)  # a fix naming a ticket by number lands this soon after it
OPEN_FIX = dt.timedelta(days=90)  # (after it was resolved, or opened if never resolved)
UNCORROBORATED = 0.5  # a bare number neither near the ticket's time nor in a declared repo
WINDOW_MARGIN = dt.timedelta(minutes=5)  # around the records the evidence points at
_META_KEY = "links.last_ingest_run"

# A Jira-style key, a #number, a number after a ticket word, a URL.
_JIRA_KEY = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{1,9}-[1-9][0-9]{0,6})(?![\w-])")
_SLUG_KEY = re.compile(r"(?<=/)([A-Z][A-Z0-9]{1,9}-[1-9][0-9]{0,6})-[a-z]")
_REVERT = re.compile(r"\s*(?:revert|back\s*out)\b", re.I)
_HASH_NUM = re.compile(r"(?<![\w&])#([0-9]{1,9})(?![\w-])")
_WORD_NUM = re.compile(r"\b(?:ticket|issue|case|bug|request|incident)s?\s*(?:#|no\.?\s*|number\s*)?"
                       r"([0-9]{3,9})\b", re.I)
_URL = re.compile(r"https?://[^\s<>\"')\]]+")
_CLOSING = re.compile(r"\b(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|addresse[sd]|refs?|see)"
                      r"\s*:?\s*$", re.I)
_PULL = re.compile(r"\b(?:pull request|PR|merge request)\s*$", re.I)
# What counts as an identifier in text (RE2 syntax: DuckDB runs it over the logs).
ID_TOKEN = r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]"
_NOT_ID = re.compile(r"v?[0-9]+(?:\.[0-9]+)+[a-z]*|[0-9]{4}-[0-9]{2}-[0-9]{2}.*|"
                     r"[A-Z]+(?:_[A-Z0-9]+)*_[0-9a-f]{6}", re.I)


@dataclass
class Evidence:
    kind: str
    value: str
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "confidence": round(self.confidence, 3)}


@dataclass
class Link:
    ticket_id: str
    target_kind: str  # commit | log_window
    repo: str | None = None
    sha: str | None = None
    ingest_run: int | None = None
    log_file: str | None = None
    window_start: dt.datetime | None = None
    window_end: dt.datetime | None = None
    component: str | None = None
    host: str | None = None
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def target(self) -> str:
        return f"{self.repo}@{self.sha}" if self.target_kind == "commit" else f"log:{self.ingest_run}"

    @property
    def link_id(self) -> str:
        return hashlib.sha1(f"{self.ticket_id}\x1f{self.target_kind}\x1f{self.target}".encode()).hexdigest()[:16]

    @property
    def confidence(self) -> float:
        miss = 1.0
        for e in self.evidence:
            miss *= 1.0 - e.confidence
        return 1.0 - miss


def is_identifier(token: str) -> bool:
    """Whether a token of text is an identifier worth joining on (see the module doc)."""
    return (len(token) >= 8 and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
            and not _NOT_ID.fullmatch(token))


def identifiers(text: str) -> set[str]:
    return {t for t in re.findall(ID_TOKEN, text or "") if is_identifier(t)}


# --- keys in commit messages --------------------------------------------------------------

def key_references(message: str, patterns: Iterable[str] = ()) -> list[tuple[str, str, float]]:
    """(kind, key, confidence) of every ticket reference in a commit message: `ticket_url`,
    `ticket_key` (a key with its prefix, or a `links.key_patterns` match) or
    `ticket_number` (a bare number, `#53` or "issue 53": linked only when corroborated)."""
    found: list[tuple[str, str, float]] = []

    def sure(start: int, base: float) -> float:
        before = message[max(0, start - 20):start]
        if _PULL.search(before):
            return 0.0  # "Merge pull request #12": a pull request's number, not a ticket's
        return min(0.97, base + 0.1) if _CLOSING.search(before) else base

    urls = list(_URL.finditer(message))
    for m in urls:
        tail = m.group().rstrip("/.,;:").rsplit("/", 1)[-1].split("?")[0].split("#")[0]
        if tail:
            found.append(("ticket_url", tail, 0.95))
    in_url = [(m.start(), m.end()) for m in urls]

    def outside(m: re.Match) -> bool:
        return not any(s <= m.start() < e for s, e in in_url)
    for m in _JIRA_KEY.finditer(message):
        if outside(m):
            found.append(("ticket_key", m.group(1), sure(m.start(), 0.85)))
    for m in _SLUG_KEY.finditer(message):  # a branch name: "user/PROJ-12-fix-the-thing"
        if outside(m):
            found.append(("ticket_key", m.group(1), 0.6))  # slugs carry typos: not alone
    subject_end = message.find("\n") if "\n" in message else len(message)
    for m in _HASH_NUM.finditer(message):
        if not outside(m):
            continue
        squash = m.end() < subject_end and re.fullmatch(r"\)\s*", message[m.end():subject_end]) \
            and message[m.start() - 1:m.start()] == "("
        # "Subject (#3156)": the pull request a squash merge came from, not a ticket
        found.append(("ticket_number", m.group(1), 0.3 if squash else sure(m.start(), 0.75)))
    for m in _WORD_NUM.finditer(message):
        if outside(m) and not re.search(r"\b(?:pull|merge)\s*$", message[max(0, m.start() - 8):m.start()], re.I):
            found.append(("ticket_number", m.group(1), 0.85))
    for pattern in patterns:
        for m in re.finditer(pattern, message):
            if m.groups() and m.group(1):
                found.append(("ticket_key", m.group(1), sure(m.start(), 0.85)))
    if _REVERT.match(message):  # undoes a change: the key it names is not fixed by it
        found = [(kind, key, c * 0.5) for kind, key, c in found]
    best: dict[tuple[str, str], float] = {}
    for kind, key, c in found:  # a key written twice is one piece of evidence
        best[(kind, key)] = max(c, best.get((kind, key), 0.0))
    return [(kind, key, c) for (kind, key), c in best.items() if c > 0]


# --- the update ---------------------------------------------------------------------------

@dataclass
class UpdateReport:
    new_runs: int = 0
    tickets_relinked: int = 0
    links: int = 0  # rows written
    above: int = 0  # of them at or above THRESHOLD


def update(con: duckdb.DuckDBPyConnection, *, patterns: Iterable[str] = (),
           full: bool = False, repos: dict[str, str] | None = None) -> UpdateReport:
    """Link what the ingest runs since the last update added (all of it if `full`)."""
    ensure_table(con)
    row = con.execute("SELECT value FROM meta WHERE key = ?", [_META_KEY]).fetchall()
    last = -1 if full or not row else int(row[0][0])
    top = con.execute("SELECT coalesce(max(run_id), -1) FROM ingest_runs").fetchall()[0][0]
    runs = con.execute("SELECT run_id, source FROM ingest_runs WHERE run_id > ? AND status = 'ok'",
                       [last]).fetchall()
    report = UpdateReport(new_runs=len(runs))
    if runs:
        by_source: dict[str, list[int]] = defaultdict(list)
        for run_id, source in runs:
            by_source[source].append(run_id)
        patterns = tuple(patterns)
        fresh = [r[0] for r in con.execute(
            "SELECT ticket_id FROM tickets" + ("" if full else " WHERE list_contains(?, ingest_run)"),
            [] if full else [by_source.get("tickets", [])]).fetchall()]
        _index_terms(con, fresh)
        affected = set(fresh) | _touched_tickets(con, by_source, patterns)
        if affected:
            links = _links_for(con, affected, patterns, repos)
            _store(con, affected, links)
            report.tickets_relinked = len(affected)
            report.links = len(links)
            report.above = sum(lk.confidence >= THRESHOLD for lk in links)
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [_META_KEY, str(top)])
    return report


def ensure_table(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE TABLE IF NOT EXISTS links (
            link_id VARCHAR PRIMARY KEY, ticket_id VARCHAR NOT NULL, target_kind VARCHAR NOT NULL,
            repo VARCHAR, sha VARCHAR, ingest_run BIGINT, log_file VARCHAR,
            window_start TIMESTAMP, window_end TIMESTAMP, component VARCHAR, host VARCHAR,
            evidence JSON, confidence DOUBLE, updated_at TIMESTAMP)""")
    # the identifiers of each ticket's conversation, found once when the ticket is new
    con.execute("CREATE TABLE IF NOT EXISTS link_terms (ticket_id VARCHAR NOT NULL, term VARCHAR NOT NULL)")


def _ticket_texts(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, str]:
    """Each ticket's whole conversation as one text (subject, body, messages, resolution)."""
    rows = con.execute("""
        SELECT t.ticket_id, concat_ws(' ', t.subject, t.body, t.resolution,
               (SELECT string_agg(m.text, ' ') FROM ticket_messages m WHERE m.ticket_id = t.ticket_id))
        FROM tickets t WHERE list_contains(?, t.ticket_id)""", [ids]).fetchall()
    return {tid: text or "" for tid, text in rows}


def _index_terms(con, tickets: list[str], batch: int = 50_000) -> None:
    """Store the identifiers of `tickets` (replacing what an earlier text of theirs had)."""
    for i in range(0, len(tickets), batch):
        ids = tickets[i:i + batch]
        rows = [(tid, term) for tid, text in _ticket_texts(con, ids).items()
                for term in sorted(identifiers(text))]
        con.execute("DELETE FROM link_terms WHERE list_contains(?, ticket_id)", [ids])
        if rows:
            import pyarrow as pa

            _terms = pa.table({"ticket_id": [r[0] for r in rows], "term": [r[1] for r in rows]})  # noqa: F841
            con.execute("INSERT INTO link_terms SELECT * FROM _terms")


def _keys(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Ticket key -> ticket ids (a numeric id may belong to tickets of several origins)."""
    out: dict[str, list[str]] = defaultdict(list)
    for tid, sid in con.execute("SELECT ticket_id, source_id FROM tickets").fetchall():
        if sid:
            out[str(sid)].append(tid)
    return out


def _log_tokens(runs: list[int] | None) -> str:
    """SQL: (ingest_run, file, line_no, ts, component, host, tok) for every identifier-like
    token of the records of `runs` (all runs if None; `?` takes the list)."""
    where = "WHERE list_contains(?, ingest_run)" if runs is not None else ""
    return f"""
        SELECT ingest_run, file, line_no, ts, component, host, unnest(regexp_extract_all(
            concat_ws(' ', message, CAST(fields AS VARCHAR)), '{ID_TOKEN}')) AS tok
        FROM log_lines {where}"""


def _touched_tickets(con, by_source: dict[str, list[int]], patterns: tuple[str, ...]) -> set[str]:
    """Tickets (already known) whose links the new commits and log files can change."""
    affected: set[str] = set()
    if by_source.get("commits"):
        keys = _keys(con)
        for (message,) in con.execute("SELECT message FROM commits WHERE list_contains(?, ingest_run)",
                                      [by_source["commits"]]).fetchall():
            for _, key, _ in key_references(message or "", patterns):
                affected.update(keys.get(key, ()))
    runs = by_source.get("logs")
    if runs:
        affected |= {r[0] for r in con.execute(f"""
            SELECT DISTINCT t.ticket_id FROM ({_log_tokens(runs)}) l
            JOIN link_terms t ON t.term = l.tok""", [runs]).fetchall()}
        for b in _bursts(con, runs):
            near = [r[0] for r in con.execute(
                "SELECT ticket_id FROM tickets WHERE created_at BETWEEN ? AND ?",
                [b.start - WINDOW_MARGIN, b.start + BURST_LEAD]).fetchall()]
            affected |= {tid for tid, text in _ticket_texts(con, near).items() if names(text, b.service)}
    return affected


@dataclass(frozen=True)
class Burst:
    ingest_run: int
    log_file: str
    service: str
    start: dt.datetime
    end: dt.datetime
    errors: int


def _bursts(con, runs: list[int] | None = None) -> list[Burst]:
    """Error bursts per log file: runs of `BURST_BUCKET` buckets (gaps of one allowed) whose
    error count is at least 3 and at least 3x (the file's median bucket + 1), the median
    taken over every bucket of the file's time span (quiet ones count as 0). A burst
    starts at its first error record."""
    where = "WHERE list_contains(?, ingest_run)" if runs is not None else ""
    params = [runs] if runs is not None else []
    width = int(BURST_BUCKET.total_seconds())
    rows = con.execute(f"""
        SELECT ingest_run, any_value(file), time_bucket(INTERVAL {width} SECOND, ts) AS b,
               count(*), min(ts), max(ts)
        FROM log_lines {where} {'AND' if where else 'WHERE'} ts IS NOT NULL
             AND level IN {ERROR_LEVELS}
        GROUP BY ingest_run, b ORDER BY ingest_run, b""", params).fetchall()
    spans = {r: (lo, hi) for r, lo, hi in con.execute(
        f"SELECT ingest_run, min(ts), max(ts) FROM log_lines {where} GROUP BY ingest_run",
        params).fetchall()}
    per_run: dict[int, list[tuple[str, dt.datetime, int, dt.datetime, dt.datetime]]] = defaultdict(list)
    for run, file, bucket, n, first, last in rows:
        per_run[run].append((file, bucket, n, first, last))
    out = []
    for run, buckets in per_run.items():
        lo, hi = spans[run]
        total = max(1, int((hi - lo) / BURST_BUCKET) + 1) if lo and hi else len(buckets)
        counts = sorted([n for _, _, n, _, _ in buckets] + [0] * max(0, total - len(buckets)))
        floor = max(3, 3 * (counts[len(counts) // 2] + 1))
        file = buckets[0][0]
        group: list[tuple[dt.datetime, int, dt.datetime, dt.datetime]] = []
        for item in [(b, n, f, la) for _, b, n, f, la in buckets if n >= floor] + [None]:
            if group and (item is None or item[0] - group[-1][0] > 2 * BURST_BUCKET):
                out.append(Burst(run, file, service_name(file), group[0][2], group[-1][3],
                                 sum(x[1] for x in group)))
                group = []
            if item is not None:
                group.append(item)
    return out


def _near(opened: dt.datetime | None, b: Burst) -> bool:
    """Whether a ticket opened at `opened` can report burst `b`."""
    return opened is not None and b.start - WINDOW_MARGIN <= opened <= b.start + BURST_LEAD


def names(text: str, service: str) -> bool:
    """Whether a ticket's text names a service ("inventory-sync", "inventory sync")."""
    if len(service) < 5:
        return False
    words = re.split(r"[-_. ]+", service.lower())
    return re.search(r"(?<![\w])" + r"[-_. ]?".join(map(re.escape, words)) + r"(?![\w])",
                     text.lower()) is not None


def declared_origin(repo: str, repos: dict[str, str]) -> str | None:
    """The ticket origin `links.repos` declares a repository's (by path or directory name)."""
    return repos.get(repo) or repos.get(repo.rstrip("/").rsplit("/", 1)[-1])


def corroborated(repo: str, origin: str | None, when, t_open, t_resolved,
                 repos: dict[str, str]) -> bool:
    """Whether a bare ticket number in a commit can be that ticket's: the repository is
    declared as its help desk's (`links.repos`), or the commit was made near the ticket's
    time (from a day before it was opened to FIX_AFTER after it was resolved, or OPEN_FIX
    after it was opened while unresolved). Elsewhere "#53" is as likely another tracker's."""
    declared = declared_origin(repo, repos)
    if declared is not None:
        return declared == origin
    if when is None or t_open is None:
        return False
    at = _utc(when)
    end = t_resolved + FIX_AFTER if t_resolved is not None else t_open + OPEN_FIX
    return t_open - dt.timedelta(days=1) <= at <= max(end, t_open)


def _links_for(con, tickets: set[str], patterns: tuple[str, ...],
               repos: dict[str, str] | None = None) -> list[Link]:
    links: dict[tuple[str, str], Link] = {}
    repos = repos or {}
    chosen = sorted(tickets)
    times = {tid: (created, resolved, origin) for tid, created, resolved, origin in con.execute(
        "SELECT ticket_id, created_at, resolved_at, origin FROM tickets "
        "WHERE list_contains(?, ticket_id)", [chosen]).fetchall()}
    opened = {tid: t[0] for tid, t in times.items()}
    keys = _keys(con)
    # ticket keys in commit messages
    for repo, sha, message, when in con.execute(
            "SELECT repo, sha, message, committed_at FROM commits").fetchall():
        for kind, key, conf in key_references(message or "", patterns):
            for tid in [t for t in keys.get(key, ()) if t in tickets]:
                c = conf / len(keys[key])  # a key several tickets share says less
                t_open, t_resolved, origin = times.get(tid, (None, None, None))
                if t_open is not None and when is not None and \
                        _utc(when) < t_open - dt.timedelta(days=1):
                    c *= 0.3  # committed before the ticket existed
                elif kind == "ticket_number" and not corroborated(repo, origin, when, t_open,
                                                                   t_resolved, repos):
                    c *= UNCORROBORATED
                lk = links.setdefault((tid, f"c:{repo}:{sha}"), Link(tid, "commit", repo=repo, sha=sha))
                # a number is a key as far as the evidence says; it only needed corroborating
                lk.evidence.append(Evidence("ticket_key" if kind == "ticket_number" else kind, key, c))
    # identifiers shared with log records; weaker the more tickets and records hold them
    rows = con.execute(f"""
        WITH mine AS (SELECT ticket_id, term FROM link_terms WHERE list_contains(?, ticket_id)),
             df AS (SELECT term, count(DISTINCT ticket_id) AS n FROM link_terms
                    WHERE term IN (SELECT term FROM mine) GROUP BY term),
             hits AS (SELECT ingest_run, any_value(file) AS file, tok, count(DISTINCT line_no) AS n,
                             min(ts) AS lo, max(ts) AS hi, mode(component) AS comp, mode(host) AS host
                      FROM ({_log_tokens(None)}) WHERE tok IN (SELECT term FROM mine)
                      GROUP BY ingest_run, tok)
        SELECT m.ticket_id, h.ingest_run, h.file, h.tok, h.n, df.n, h.lo, h.hi, h.comp, h.host
        FROM hits h JOIN mine m ON m.term = h.tok JOIN df ON df.term = h.tok
        ORDER BY m.ticket_id, h.ingest_run, h.tok""", [chosen]).fetchall()
    for tid, run, file, tok, n, tickets_with, lo, hi, comp, host in rows:
        c = (0.9 if n <= 200 else 0.3) / max(1, tickets_with)
        t_open = opened.get(tid)
        if t_open is not None and lo is not None and \
                (hi < t_open - SHARED_BEFORE or lo > t_open + SHARED_AFTER):
            continue  # an order number seen in another month: the same value, not the incident
        if t_open is None or lo is None:
            c *= 0.5  # no times to check the records against the ticket
        lk = links.setdefault((tid, f"l:{run}"), Link(tid, "log_window", ingest_run=run, log_file=file))
        lk.evidence.append(Evidence("shared_id", tok, c))
        _widen(lk, lo, hi, comp, host)
    # tickets opened soon after an error burst on a service they name
    bursts = _bursts(con)
    if bursts:
        texts = _ticket_texts(con, chosen)
        for tid, text in texts.items():
            t_open = opened.get(tid)
            for b in bursts:
                if not _near(t_open, b) or not names(text, b.service):
                    continue
                assert t_open is not None
                rivals = sum(1 for o in bursts if o.service == b.service and o is not b
                             and abs((o.start - t_open).total_seconds()) <= BURST_LEAD.total_seconds() * 3)
                lk = links.setdefault((tid, f"l:{b.ingest_run}"), Link(
                    tid, "log_window", ingest_run=b.ingest_run, log_file=b.log_file))
                lk.evidence.append(Evidence("time_component",
                                            f"{b.service} burst {b.start:%Y-%m-%d %H:%M}",
                                            0.75 if rivals == 0 else 0.4))
                _widen(lk, b.start, b.end, None, None)
    return list(links.values())


def _utc(when: dt.datetime) -> dt.datetime:
    """A time as naive UTC, as tickets and log records store theirs."""
    return when.astimezone(dt.timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def _widen(lk: Link, lo, hi, comp, host) -> None:
    if lo is not None:
        lo = lo - WINDOW_MARGIN
        lk.window_start = lo if lk.window_start is None else min(lk.window_start, lo)
    if hi is not None:
        hi = hi + WINDOW_MARGIN
        lk.window_end = hi if lk.window_end is None else max(lk.window_end, hi)
    lk.component = lk.component or comp
    lk.host = lk.host or host


def _store(con, tickets: set[str], links: list[Link]) -> None:
    now = db.now()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM links WHERE list_contains(?, ticket_id)", [sorted(tickets)])
        if links:
            con.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                [lk.link_id, lk.ticket_id, lk.target_kind, lk.repo, lk.sha, lk.ingest_run,
                 lk.log_file, lk.window_start, lk.window_end, lk.component, lk.host,
                 json.dumps([e.to_dict() for e in lk.evidence]), round(lk.confidence, 4), now]
                for lk in links])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def shown(db_path, min_confidence: float = THRESHOLD, ticket_id: str | None = None, *,
          relink: LinkSettings | None = None) -> tuple[UpdateReport | None, list[dict[str, Any]]]:
    """`rlforge links`: the stored links (`links`), after relinking every ticket when
    `relink` gives the settings to do it with (`update(full=True)`)."""
    con = db.connect(db_path, read_only=relink is None)
    try:
        done = None if relink is None else update(con, patterns=relink.key_patterns, full=True,
                                                 repos=relink.repos)
        return done, links(con, min_confidence, ticket_id)
    finally:
        con.close()


def links(con: duckdb.DuckDBPyConnection, min_confidence: float = THRESHOLD,
          ticket_id: str | None = None) -> list[dict[str, Any]]:
    """Stored links at or above `min_confidence`, surest first (one ticket's if given),
    each with its commit's subject (None for a log window)."""
    if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'links'").fetchall():
        return []  # nothing ingested since links exist
    sql = ("SELECT l.*, c.subject FROM links l LEFT JOIN commits c USING (repo, sha) "
           "WHERE l.confidence >= ?" + (" AND l.ticket_id = ?" if ticket_id else ""))
    cur = con.execute(sql + " ORDER BY l.confidence DESC, l.ticket_id, l.target_kind, l.link_id",
                      [min_confidence] + ([ticket_id] if ticket_id else []))
    names = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        rec = dict(zip(names, row))
        rec["evidence"] = json.loads(rec["evidence"]) if rec["evidence"] else []
        out.append(rec)
    return out
