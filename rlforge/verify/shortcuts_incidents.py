"""The shortcut battery for `incidents.diagnose`: what a policy learns first there.

An incident question names an id the ticket quotes (which service, host or time logged the
first WARN-or-worse record holding it) or a time span before the ticket (which service,
minute or host began the first error burst). The cheap answers skip the part that makes it
a question: the first failing record of all the logs (whatever id it holds, wherever it
falls), the first record holding the id at any level, the first ERROR record in the span
(no burst), the service or host with the most failures or the only one failing, the file
listed first, the service the ticket names. Each strategy reads only what the policy sees
-- the ticket, the question and the files as shown -- like `shortcuts` does for
`logs.diagnose`; the generator asks another family of a window any guess answers, and
`rlforge validate` scores every guess with the task's verifier (it must score 0).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rlforge.verify.shortcuts import LINE, Line, _time, _top

HEAD = re.compile(r"^==> (?:\S*/)?(\S+?)(?:\.log)? <==$")
FAILING = ("WARN", "ERROR", "FATAL")
ERRORS = ("ERROR", "FATAL")


@dataclass
class IncidentView:
    """An incident question as the policy sees it: the ticket, the question, and the
    records of the files shown, each with its service, in time order (files in the order
    listed for equal times, as the stated order rule says)."""

    question: str
    ticket: str
    records: list[tuple[str, Line]]
    services: list[str]

    @property
    def asked(self) -> str | None:
        """What the question asks for: `service`, `host`, `second` or `minute`."""
        q = self.question
        if "service's" in q or "Which service" in q:
            return "service"
        if "Which host" in q:
            return "host"
        if "`YYYY-MM-DD HH:MM:SS`" in q:
            return "second"
        if "`YYYY-MM-DD HH:MM`" in q:
            return "minute"
        return None

    @property
    def quoted_id(self) -> str | None:
        m = re.search(r"ticket quotes `([^`]+)`", self.question)
        return m.group(1) if m else None

    def span(self) -> tuple[dt.datetime, dt.datetime] | None:
        m = re.search(r"logged from (\S+ \S+) to (\S+ \S+) UTC", self.question)
        if m is None:
            return None
        try:
            return dt.datetime.fromisoformat(m.group(1)), dt.datetime.fromisoformat(m.group(2))
        except ValueError:
            return None

    def answer_of(self, hit: tuple[str, Line] | None) -> str | None:
        """The asked field of a record (its service, host, second or minute)."""
        if hit is None:
            return None
        service, line = hit
        asked = self.asked
        if asked == "service":
            return service
        if asked == "host":
            return None if line.host == "-" else line.host
        if line.time is None:
            return None
        return line.time.strftime("%Y-%m-%d %H:%M:%S" if asked == "second" else "%Y-%m-%d %H:%M")


def view(question: str, ticket: str, window: str) -> IncidentView:
    """The view of a question over a window as shown (files after `==> NAME <==` heads;
    a window without heads is one file, `-`)."""
    current, services, rows = "-", [], []
    for raw in window.splitlines():
        head = HEAD.match(raw)
        if head:
            current = head.group(1)
            services.append(current)
            continue
        if raw.startswith("\t"):
            continue
        m = LINE.match(raw)
        if m:
            t, host, level, comp, msg = m.groups()
            rows.append((len(services), current, Line(_time(t), host, level.upper(), comp, msg)))
    far = dt.datetime.max
    rows.sort(key=lambda r: (r[2].time or far, r[0]))  # stable: file order, then line order
    return IncidentView(question, ticket, [(s, line) for _, s, line in rows], services or ["-"])


def view_of_task(task_dir: Path) -> IncidentView | None:
    """The view of a rendered `incidents.diagnose` task from its instruction; None when it
    does not show its ticket, question and logs."""
    text = (Path(task_dir) / "instruction.md").read_text(encoding="utf-8", errors="replace")
    ticket = re.search(r"\n~~~text\n(.*?)~~~\n", text, re.S)
    q = re.search(r"\*\*Question:\*\* (.*?)\n\n~~~text\n(.*?)~~~", text, re.S)
    if ticket is None or q is None:
        return None
    return view(q.group(1), ticket.group(1), q.group(2))


# --- the strategies --------------------------------------------------------------------

def _first(v: IncidentView, levels: tuple[str, ...], within: bool = False,
           holding: str | None = None) -> tuple[str, Line] | None:
    span = v.span() if within else None
    for service, line in v.records:
        if levels and line.level not in levels:
            continue
        if holding is not None and holding not in line.message:
            continue
        if span is not None and (line.time is None or not span[0] <= line.time <= span[1]):
            continue
        return service, line
    return None


def first_failure(v: IncidentView) -> str | None:
    """The first WARN-or-worse record of all the logs, whatever it holds, whenever."""
    return v.answer_of(_first(v, FAILING))


def first_error(v: IncidentView) -> str | None:
    """The first ERROR or FATAL record of all the logs."""
    return v.answer_of(_first(v, ERRORS))


def first_error_in_span(v: IncidentView) -> str | None:
    """The first ERROR or FATAL record in the question's span: a burst's start without
    the burst."""
    return v.answer_of(_first(v, ERRORS, within=True)) if v.span() else None


def first_record_holding_id(v: IncidentView) -> str | None:
    """The first record holding the quoted id, at any level."""
    x = v.quoted_id
    return v.answer_of(_first(v, (), holding=x)) if x else None


def first_error_holding_id(v: IncidentView) -> str | None:
    """The first ERROR or FATAL record holding the quoted id (WARN left out)."""
    x = v.quoted_id
    return v.answer_of(_first(v, ERRORS, holding=x)) if x else None


def _field_counts(v: IncidentView, levels: tuple[str, ...]) -> Counter:
    asked = v.asked
    if asked not in ("service", "host"):
        return Counter()
    return Counter(s if asked == "service" else line.host for s, line in v.records
                   if line.level in levels and (asked == "service" or line.host != "-"))


def most_failing(v: IncidentView) -> str | None:
    """The service (or host) with the most WARN-or-worse records."""
    return _top(_field_counts(v, FAILING))


def most_erring(v: IncidentView) -> str | None:
    """The service (or host) with the most ERROR or FATAL records."""
    return _top(_field_counts(v, ERRORS))


def only_failing(v: IncidentView) -> str | None:
    """The only service (or host) with any ERROR or FATAL record."""
    names = set(_field_counts(v, ERRORS))
    return names.pop() if len(names) == 1 else None


def first_listed_service(v: IncidentView) -> str | None:
    return v.services[0] if v.asked == "service" and len(v.services) > 1 else None


def ticket_named_service(v: IncidentView) -> str | None:
    """The one service whose name the ticket holds."""
    if v.asked != "service":
        return None
    text = v.ticket.lower()
    named = [s for s in v.services if s != "-" and s.lower() in text]
    return named[0] if len(named) == 1 else None


def busiest_error_minute(v: IncidentView) -> str | None:
    """The minute with the most ERROR or FATAL records (for a minute question)."""
    if v.asked != "minute":
        return None
    return _top(Counter(line.time.strftime("%Y-%m-%d %H:%M") for _, line in v.records
                        if line.level in ERRORS and line.time))


#: Every strategy, by name. Each returns a guess or None where it does not apply.
STRATEGIES: dict[str, Callable[[IncidentView], str | None]] = {
    "first_failure": first_failure,
    "first_error": first_error,
    "first_error_in_span": first_error_in_span,
    "first_record_holding_id": first_record_holding_id,
    "first_error_holding_id": first_error_holding_id,
    "most_failing": most_failing,
    "most_erring": most_erring,
    "only_failing": only_failing,
    "first_listed_service": first_listed_service,
    "ticket_named_service": ticket_named_service,
    "busiest_error_minute": busiest_error_minute,
}


def guesses(v: IncidentView) -> dict[str, str]:
    """Every strategy's guess for the question (those that apply), by strategy name."""
    return {name: guess for name, strategy in STRATEGIES.items() if (guess := strategy(v))}
