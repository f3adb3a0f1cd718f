"""What the incident generators share: linked tickets and what a policy may read of them.

`incidents.repair` (rlforge.tasks.incidents_repair) and `incidents.diagnose`
(rlforge.tasks.incidents_diagnose) start from the links `rlforge.links` stores: a ticket
joined to the commit that fixed it, or to the log windows that show it, at or above a
confidence (`rlforge.links.THRESHOLD` by default). A policy sees the ticket as stored
(redacted at ingest): its subject, the customer's opening message and the conversation's
public messages that the generator allows (`conversation`), never the resolution field,
private notes, the ticket's key or the link's evidence.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

from rlforge import links as linkstore


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
