"""What the incident generators share: linked tickets and what a policy may read of them.

`incidents.repair` (rlforge.tasks.generators.incidents_repair) and `incidents.diagnose`
(rlforge.tasks.generators.incidents_diagnose) start from the links `rlforge.links` stores: a ticket
joined to the commit that fixed it, or to the log windows that show it, at or above a
confidence (`rlforge.links.THRESHOLD` by default). A policy sees the ticket as stored
(redacted at ingest): its subject, the customer's opening message and the conversation's
public messages that the generator allows (`conversation`), never the resolution field,
private notes, the ticket's key or the link's evidence.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

from rlforge import links as linkstore
from rlforge.tasks.generators.logs_common import FAILURE_LEVELS, Record


@dataclass
class Message:
    role: str  # customer | agent
    text: str
    created_at: dt.datetime | None


@dataclass
class Ticket:
    """A ticket as a policy may read it (see `conversation`)."""

    ticket_id: str
    subject: str
    created_at: dt.datetime | None
    content_hash: str
    messages: list[Message] = field(default_factory=list)

    def text(self) -> str:
        """The ticket as the instruction shows it (subject, then each message)."""
        parts = [f"Subject: {self.subject}"] if self.subject else []
        for m in self.messages:
            who = "Customer" if m.role == "customer" else "Support agent"
            parts.append(f"{who}:\n{m.text.strip()}")
        return "\n\n".join(parts)


def conversation(con: duckdb.DuckDBPyConnection, ticket_id: str,
                 keep: Callable[[Message], bool]) -> Ticket | None:
    """The ticket `ticket_id`: its subject, the opening message (`tickets.body`, the
    customer's report, always) and the public messages of its conversation that `keep`
    accepts, in order; a message repeating the opening one is left out. None if no such
    ticket."""
    row = con.execute("SELECT subject, body, created_at, content_hash FROM tickets "
                      "WHERE ticket_id = ? LIMIT 1", [ticket_id]).fetchone()
    if row is None:
        return None
    subject, body, created, digest = row
    ticket = Ticket(ticket_id, (subject or "").strip(), created, digest)
    opening = Message("customer", body or "", created)
    if opening.text.strip():
        ticket.messages.append(opening)
    for role, text, when, public in con.execute(
            "SELECT role, text, created_at, is_public FROM ticket_messages WHERE ticket_id = ? "
            "ORDER BY seq", [ticket_id]).fetchall():
        m = Message(role or "", text or "", when)
        if public is False or not m.text.strip() or _same(m.text, body or ""):
            continue
        if keep(m):
            ticket.messages.append(m)
    return ticket


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def shares_run(text: str, other: str, n: int) -> bool:
    """Whether `text` holds a run of `n` consecutive words of `other` (fewer if `other` is
    shorter, but at least 3), compared as case-folded words."""
    theirs = words(other)
    n = min(n, len(theirs))
    if n < 3:
        return False
    mine = " " + " ".join(words(text)) + " "
    return any(" " + " ".join(theirs[i:i + n]) + " " in mine for i in range(len(theirs) - n + 1))


def linked(con: duckdb.DuckDBPyConnection, target_kind: str,
           min_confidence: float) -> list[dict[str, Any]]:
    """Stored links of one target kind at or above `min_confidence`, surest first."""
    return [r for r in linkstore.links(con, min_confidence) if r["target_kind"] == target_kind]


def evidence_kinds(link: dict[str, Any]) -> list[str]:
    return sorted({e["kind"] for e in link.get("evidence") or []})


def failures(con: duckdb.DuckDBPyConnection, link: dict[str, Any]) -> list[tuple[bool, Record]]:
    """The WARN/ERROR/FATAL records of a log-window link's window, in file order, shown
    with their fields (`with_fields`), each with whether it holds an id the ticket shares with the log (its `shared_id` evidence:
    in the message or the other fields, as `rlforge.links` found it)."""
    ids = [e["value"] for e in link.get("evidence") or [] if e["kind"] == "shared_id"]
    rows = con.execute(f"""
        SELECT line_no, ts, host, component, level, message, template_id,
               list_has_any(?, regexp_extract_all(
                   concat_ws(' ', message, CAST(fields AS VARCHAR)), '{linkstore.ID_TOKEN}'))
        FROM log_lines WHERE ingest_run = ? AND ts BETWEEN ? AND ?
          AND level IN (SELECT unnest(?)) ORDER BY line_no""",
                       [ids, link["ingest_run"], link["window_start"], link["window_end"],
                        list(FAILURE_LEVELS)]).fetchall()
    records = [Record(r[0], r[1], r[2], r[3], r[4], r[5] or "", r[6], link["ingest_run"])
               for r in rows]
    return list(zip((bool(r[7]) for r in rows), with_fields(con, records)))


_NEEDS_QUOTES = re.compile(r'[\s"]')


def field_text(fields: str | None, shown: list[str | None]) -> str:
    """A record's other fields as `key=value` words (a value with spaces or quotes as a
    JSON string), leaving out those already shown: a value equal to one of `shown` (the
    message, level, host, component) and the time (a value holding `shown[0]`, the time
    as `YYYY-MM-DDTHH:MM:SS`)."""
    try:
        data = json.loads(fields) if fields else {}
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    seen = {str(v).casefold() for v in shown[1:] if v}
    out = []
    for key, value in data.items():
        if isinstance(value, (dict, list)) or value is None:
            continue
        text = str(value)
        if text.casefold() in seen or (shown[0] and str(shown[0]) in text):
            continue
        quoted = json.dumps(text) if not text or _NEEDS_QUOTES.search(text) else text
        out.append(f"{key}={quoted}")
    return " ".join(out)


def with_fields(con: duckdb.DuckDBPyConnection, records: list[Record]) -> list[Record]:
    """`records` (of one ingested file) with their other fields after the first line of
    the message (`field_text`), so ids kept in fields (a request id in JSON logs) are
    shown."""
    if not records or records[0].run is None:
        return records
    fields = dict(con.execute(
        "SELECT line_no, fields FROM log_records WHERE ingest_run = ? AND line_no BETWEEN ? AND ?",
        [records[0].run, records[0].line_no, records[-1].line_no]).fetchall())
    out = []
    for r in records:
        first, sep, rest = r.message.partition("\n")
        time = r.ts.strftime("%Y-%m-%dT%H:%M:%S") if r.ts else None
        extra = field_text(fields.get(r.line_no), [time, first, r.level, r.host, r.component])
        out.append(dataclasses.replace(r, message=f"{first} {extra}".strip() + sep + rest)
                   if extra else r)
    return out
