"""`incidents.repair`: fix the code a customer's ticket reports broken; `commits.repair`'s
workspace, verifier and validation, with the ticket instead of the commit message.

SWE-bench's instructions are the issue a user wrote, not the commit message. Here a commit
qualifies only when a stored link (`rlforge.links`) joins it to a ticket at or above
`min_confidence` (0.7 by default); the surest ticket is the task's. The instruction shows
that ticket as stored (redacted at ingest): its subject, the customer's opening message and
the customer's later public messages written before the commit (the agents' replies too
with `agent_messages`, off by default: they often say what the fix is), never its
resolution, its key or the link's evidence; with `log_excerpt` > 0, also the first
WARN/ERROR/FATAL records (at most that many) of the ticket's surest linked log window.
Everything else is `commits.repair`'s (`CommitsRepair` is reused, not copied): the
workspace is the repository at the parent, the commit's test changes are hidden, the same
build-time fail-to-pass / pass-to-pass check (cached per commit, so building both
generators checks a commit once), the same verifier and adversarial submissions.

The commit message must not reach the policy: a ticket whose text holds the commit's
subject or any `LEAK_WORDS` consecutive words of its message is rejected before the check
(`ticket quotes the commit message`), and the subject is one of the task's secret strings,
so validation's leak check catches it too. Commits without a link are rejected as
`no linked ticket`.
"""

from __future__ import annotations

import datetime as dt

from rlforge.links import THRESHOLD
from rlforge.tasks.generators.commits_repair import CommitsRepair, problem_statement
from rlforge.tasks.generators.incidents import (Message, Ticket, conversation, evidence_kinds, failures,
                                     linked, shares_run)
from rlforge.tasks.generators.logs_common import render
from rlforge.tasks.registry import register
from rlforge.tasks.generators.repair.select import CommitRow
from rlforge.tasks.spec import SourceRef

LEAK_WORDS = 8  # this many consecutive words of the commit message in the ticket: a leak
EXCERPT_LINES = 12
BORROWED_TEMPLATES = ["commits.repair/Dockerfile.j2", "commits.repair/test.sh.j2"]


@register("incidents.repair", 2, "Fix the code so the tests of the commit that fixed a "
          "customer's ticket pass; the instruction is the ticket (and optionally its log "
          "excerpt), not the commit message; commits.repair's workspace and verifier.",
          verifier="repair")
class IncidentsRepair(CommitsRepair):
    sources = ("tickets", "commits")

    def __init__(self, build=None, min_confidence: float = THRESHOLD,
                 log_excerpt: int = EXCERPT_LINES, agent_messages: bool = False,
                 **options) -> None:
        """`min_confidence`: the least link confidence a commit's ticket needs;
        `log_excerpt`: records of the linked log window to show (0: none);
        `agent_messages`: also show the agents' public replies written before the commit
        (SWE-bench's hints; off: they often say what the fix is); other options are
        `commits.repair`'s."""
        super().__init__(build=build, **options)
        self.min_confidence = float(min_confidence)
        self.log_excerpt = int(log_excerpt)
        self.agent_messages = bool(agent_messages)
        self._chosen: dict[tuple[str, str], tuple[dict, Ticket, str]] = {}

    def _window(self, con) -> list[CommitRow]:
        by_commit: dict[tuple[str, str], dict] = {}
        for link in linked(con, "commit", self.min_confidence):  # surest first
            by_commit.setdefault((link["repo"], link["sha"]), link)
        self._chosen = {}
        out = []
        for row in super()._window(con):
            best = by_commit.get((row.repo, row.sha))
            if best is None:
                self._reject(row, "no linked ticket",
                             f"no ticket link at or above {self.min_confidence:g}")
                continue
            ticket = self._ticket(con, best["ticket_id"], row)
            if ticket is None or not ticket.messages:
                self._reject(row, "linked ticket has no text", best["ticket_id"])
                continue
            excerpt = self._excerpt(con, best["ticket_id"])
            seen = ticket.text() + "\n" + excerpt
            subject, body = problem_statement(row.message)
            if shares_run(seen, subject, len(subject.split())) or \
                    shares_run(seen, f"{subject}\n{body}", LEAK_WORDS):
                self._reject(row, "ticket quotes the commit message", best["ticket_id"])
                continue
            self._chosen[(row.repo, row.sha)] = (best, ticket, excerpt)
            out.append(row)
        return out

    def _request(self, row: CommitRow) -> str:
        """The ticket (and log excerpt) the instruction shows, never the commit message."""
        _, ticket, excerpt = self._chosen[(row.repo, row.sha)]
        return ticket.text() + "\n" + excerpt

    def _ticket(self, con, ticket_id: str, row: CommitRow) -> Ticket | None:
        """The ticket as the policy sees it: the customer's messages written before the
        commit (and the agents', with `agent_messages`); one without a time counts only
        when the customer wrote it."""
        when = row.committed_at
        if when is not None and when.tzinfo is not None:  # tickets store naive UTC
            when = when.astimezone(dt.timezone.utc).replace(tzinfo=None)

        def before(m: Message) -> bool:
            if m.role != "customer" and not self.agent_messages:
                return False
            if m.created_at is None or when is None:
                return m.role == "customer"
            return m.created_at < when
        return conversation(con, ticket_id, before)

    def _excerpt(self, con, ticket_id: str) -> str:
        """At most `log_excerpt` WARN/ERROR/FATAL records of the ticket's linked log
        windows, those holding an id the ticket quotes first, shown in time order."""
        if self.log_excerpt <= 0:
            return ""
        found = [f for w in linked(con, "log_window", self.min_confidence)
                 if w["ticket_id"] == ticket_id and w["window_start"] is not None
                 for f in failures(con, w)]
        found.sort(key=lambda hr: (not hr[0], hr[1].ts, hr[1].line_no))
        chosen = sorted((r for _, r in found[:self.log_excerpt]), key=lambda r: (r.ts, r.line_no))
        return render(chosen) if chosen else ""

    def _spec(self, row, snap, settings, found, check, ctx):
        spec = super()._spec(row, snap, settings, found, check, ctx)
        link, ticket, excerpt = self._chosen[(row.repo, row.sha)]
        subject, _ = problem_statement(row.message)
        spec.context.update({
            "title": f"Fix what a customer reported in {spec.context['repo_name']}",
            "ticket": ticket.text(), "opened": ticket.created_at.strftime("%Y-%m-%d %H:%M UTC")
            if ticket.created_at else "", "log_excerpt": excerpt,
            "log_file": str(link.get("log_file") or "")})
        spec.source = SourceRef("links", [f"{row.repo}@{row.sha}", ticket.ticket_id],
                                [f"git:{row.sha}", ticket.content_hash])
        spec.dedup_text = ticket.text() + "\n" + excerpt
        spec.related_groups = [ticket.ticket_id]  # one split with the ticket's other tasks
        if len(subject.split()) >= 3:
            spec.secret_strings = [*spec.secret_strings, subject]
        spec.templates = [*spec.templates, *BORROWED_TEMPLATES]
        spec.keywords = [*spec.keywords, "incident"]
        spec.extra_metadata.update({"ticket_id": ticket.ticket_id,
                                    "link_confidence": float(link["confidence"]),
                                    "link_evidence": evidence_kinds(link),
                                    "log_excerpt_records": excerpt.count("\n")})
        return spec
