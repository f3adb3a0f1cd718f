"""`incidents.diagnose`: from a customer's ticket to the log evidence that explains it.

A ticket linked to a log window (`rlforge.links`, at or above `min_confidence`) becomes a
task: the policy reads the ticket as the customer wrote it (subject, opening message and
the customer's later messages, redacted as stored; never the agents' replies, the
resolution or the link's evidence), with the time it was opened, and the logs of the
linked window's services over a longer span: the window is grown to a token budget
(`context_tokens`, `logs.diagnose`'s long-context budgets: across every file whose times
overlap it, `logs_common.grow_fleet`, or within its own file when it is alone) and shown
file by file in the instruction (`inline`, the default) and written to `/app/logs/`.

Question families (`question_kind`), each a rule the instruction states and asked only
where the shown records support it and the ticket does not already give the answer away:
- `id_first_service` / `id_failure_host` / `id_failure_time`: the ticket quotes an id (a
  request or trace id, an error code) that the logs hold; which service / host logged the
  first WARN, ERROR or FATAL record whose message holds it, and when. The service family
  needs the id in at least two services' logs, the host family two hosts.
- `burst_first_service` / `burst_start_minute` / `burst_first_host`: among the error bursts
  (`BURST_RULE`) that began in the `LEAD` before the ticket was opened, which service's
  began first, in which minute, on which host. The service family needs bursts in at
  least two services' logs.

Each answer is computed in DuckDB over exactly the records shown (SQL: the first matching
record in the stated order; bursts with window functions) and computed again from the
shown text by the stated rule; a question whose two answers differ is not asked, nor one
whose answer the ticket holds (the service it names, a host or minute it quotes, its own
opening time). Validation adds, to `logs.diagnose`'s adversarial answers, the naive
answers a ticket suggests (the service it names, the time it was opened): each scores 0.
A question the shortcut battery (`rlforge.verify.shortcuts_incidents`: the first failure
of all the logs, the first record holding the id at any level, ...) answers is not asked;
the next family is tried (`screen_shortcuts`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rlforge.links import BURST_LEAD, THRESHOLD, identifiers, names
from rlforge.tasks.generators.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.generators.incidents import (Ticket, conversation, evidence_kinds, failures, linked,
                                     with_fields)
from rlforge.tasks.generators.logs_common import (ERROR_LEVELS, FAILURE_LEVELS, ORDER_RULE, SECTION_HEAD,
                                       TOKENIZER_NOTE, Record, ShownRecord, SourceLines,
                                       WindowStats, _field, approx_tokens, error_burst_start,
                                       fmt_time, grow_fleet, grow_window, parse_shown,
                                       parse_token_budgets, render, window_records,
                                       render_sections, section_names, shown_time, time_order)
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.spec import BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify import shortcuts, shortcuts_incidents as incident_shortcuts

ID_KINDS = ("id_first_service", "id_failure_host", "id_failure_time")
BURST_KINDS = ("burst_first_service", "burst_start_minute", "burst_first_host")
KINDS = ID_KINDS + BURST_KINDS
LEAD = BURST_LEAD  # bursts that began this long before the ticket was opened
ONSET_MARGIN = dt.timedelta(minutes=5)
BURST_GAP = dt.timedelta(seconds=60)  # BURST_RULE's most time between two records of a burst  # the records around the incident's onset seed the logs
RESERVE_TOKENS = 1500  # the prompt around the logs: ticket, question, wording
BURST_RULE = ("A burst is a run of at least 3 records of one file at level ERROR or FATAL, "
              "each logged at most 60 seconds after the one before it in that file (records "
              "at other levels in between do not break it); it begins at its first record.")
HOLDS = ("A record holds `{x}` when `{x}` appears in the first line of its record line as "
         "shown above (the text after `COMPONENT: `: its message, then its other fields as "
         "`key=value`).")
_SQL_SHOWN = """(SELECT unnest($runs::BIGINT[]) AS run, unnest($pos::INTEGER[]) AS pos,
                        unnest($lo::BIGINT[]) AS lo, unnest($hi::BIGINT[]) AS hi)"""


@dataclass
class Question:
    kind: str
    text: str
    answer_ref: dict
    answer_text: str
    candidates: list[str]
    params: dict
    naive: list[Submission]


def _svc(name: str) -> str:
    return name.removesuffix(".log")


def read_shown(text: str, single: str) -> list[tuple[str, list[ShownRecord]]]:
    """(service, records in file order) per file of a window as shown; a window without
    file heads is the file `single`."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines(keepends=True):
        m = SECTION_HEAD.match(line.rstrip("\n"))
        if m:
            sections.append((m.group(1), []))
        else:
            if not sections:
                sections.append((single, []))
            sections[-1][1].append(line)
    return [(_svc(name), parse_shown("".join(lines))) for name, lines in sections]


def _in_order(sections: list[tuple[str, list]], time_of) -> list[tuple[str, Any]]:
    """Every record with its service, in ORDER_RULE's order."""
    return time_order([[(s, r) for r in recs] for s, recs in sections], lambda p: time_of(p[1]))


def stated_answer(kind: str, sections: list[tuple[str, list[ShownRecord]]], params: dict):
    """The answer by the instruction's words alone, from the window as shown."""
    if kind in ID_KINDS:
        x = params["id"]
        hit = next(((s, r) for s, r in _in_order(sections, shown_time)
                    if r.level.lower() in FAILURE_LEVELS and x in r.message), None)
        if hit is None:
            return None
        s, r = hit
        return {"id_first_service": s, "id_failure_host": r.host,
                "id_failure_time": _second(shown_time(r))}[kind]
    lo, hi = (dt.datetime.fromisoformat(params[k]) for k in ("from", "to"))
    starts = []
    for pos, (s, recs) in enumerate(sections):
        timed = [(t, r) for r in recs if (t := shown_time(r)) is not None and lo <= t <= hi]
        i = error_burst_start([(t, r.level.lower()) for t, r in timed], levels=ERROR_LEVELS)
        if i is not None:
            starts.append((timed[i][0], pos, s, timed[i][1].host))
    if not starts:
        return None
    starts.sort()
    if len(starts) > 1 and starts[0][0] == starts[1][0]:
        return None  # two services began at the same time: no first
    t, _, s, host = starts[0]
    return {"burst_first_service": s, "burst_start_minute": t.strftime("%Y-%m-%d %H:%M"),
            "burst_first_host": host}[kind]


def _whole_second(t: dt.datetime, up: bool) -> dt.datetime:
    cut = t.replace(microsecond=0)
    return cut + dt.timedelta(seconds=1) if up and cut != t else cut


def _second(t: dt.datetime | None) -> str | None:
    return None if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def _bounds(sections: list[tuple[str, list[Record]]]) -> dict:
    return {"runs": [recs[0].run for _, recs in sections], "pos": list(range(len(sections))),
            "lo": [recs[0].line_no for _, recs in sections],
            "hi": [recs[-1].line_no for _, recs in sections]}


def first_failure_with(con, sections, x: str, whole: bool = False
                       ) -> tuple[int, str | None, dt.datetime] | None:
    """DuckDB: (file position, host, time) of the first shown WARN/ERROR/FATAL record whose
    message's first line or other fields hold `x`, in ORDER_RULE's order; with `whole`,
    over every record of the shown files, shown or not."""
    bounds = _bounds(sections)
    if whole:
        bounds = {**bounds, "lo": [0] * len(sections), "hi": [2 ** 62] * len(sections)}
    return con.execute(f"""
        SELECT s.pos, l.host, date_trunc('millisecond', l.ts) FROM log_lines l
        JOIN {_SQL_SHOWN} s ON l.ingest_run = s.run AND l.line_no BETWEEN s.lo AND s.hi
        WHERE l.level IN (SELECT unnest($levels::VARCHAR[]))
          AND (contains(split_part(l.message, chr(10), 1), $x)
               OR contains(coalesce(CAST(l.fields AS VARCHAR), ''), $x))
        ORDER BY date_trunc('millisecond', l.ts), s.pos, l.line_no LIMIT 1""",
                       {**bounds, "levels": list(FAILURE_LEVELS), "x": x}).fetchone()


def first_bursts(con, sections, lo: dt.datetime, hi: dt.datetime) -> list[tuple]:
    """DuckDB: (file position, start, host of its first record) of each shown file's first
    burst (BURST_RULE) among its records logged from `lo` to `hi`, earliest first."""
    return con.execute(f"""
        WITH e AS (
            SELECT s.pos, l.line_no, date_trunc('millisecond', l.ts) AS t, l.host
            FROM log_lines l
            JOIN {_SQL_SHOWN} s ON l.ingest_run = s.run AND l.line_no BETWEEN s.lo AND s.hi
            WHERE l.level IN (SELECT unnest($levels::VARCHAR[])) AND l.ts IS NOT NULL
              AND date_trunc('millisecond', l.ts) BETWEEN $a AND $b),
        lagged AS (SELECT *, lag(t) OVER (PARTITION BY pos ORDER BY line_no) AS prev FROM e),
        runs AS (SELECT *, sum(CASE WHEN prev IS NULL OR t - prev > INTERVAL 60 SECOND
                                    THEN 1 ELSE 0 END)
                           OVER (PARTITION BY pos ORDER BY line_no) AS grp FROM lagged),
        bursts AS (SELECT pos, grp, arg_min(t, line_no) AS start, arg_min(host, line_no) AS host
                   FROM runs GROUP BY pos, grp HAVING count(*) >= 3)
        SELECT pos, arg_min(start, grp), arg_min(host, grp) FROM bursts
        GROUP BY pos ORDER BY 2, 1""",
                       {**_bounds(sections), "levels": list(ERROR_LEVELS), "a": lo,
                        "b": hi}).fetchall()


def _given(ticket_text: str, kind: str, answer: str, opened: dt.datetime | None) -> bool:
    """Whether the ticket (as shown, with its opening time) gives the answer away."""
    if kind.endswith("service"):
        return names(ticket_text, answer) or _word(ticket_text, answer)
    if kind.endswith("host"):
        return _word(ticket_text, answer)
    t = dt.datetime.fromisoformat(answer)
    if opened is not None and abs((t - opened).total_seconds()) < 60 and \
            t.strftime("%H:%M") == opened.strftime("%H:%M"):
        return True
    return re.search(rf"(?<!\d){t:%H}[:.h]{t:%M}(?!\d)", ticket_text) is not None


def _word(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text, re.I) is not None


@register("incidents.diagnose", 1, "From a customer's ticket to the log evidence: which "
          "service or host failed first for the request it quotes or in the burst before it "
          "was opened, and when; logs of the linked window's services grown to a token "
          "budget; answers computed in DuckDB and re-derived by the stated rule.",
          verifier="answer")
class IncidentsDiagnose(Generator):
    sources = ("tickets", "log_records")

    def __init__(self, context_tokens="8k", families=None, min_confidence: float = THRESHOLD,
                 inline: bool = True, screen_shortcuts: bool = True):
        """`context_tokens`: budgets (e.g. `8k,32k`), one task per budget; `families`:
        the question kinds to ask (default all); `inline`: show the logs in the
        instruction too (else only in /app/logs/, a terminal task); `screen_shortcuts`:
        do not ask a question the shortcut battery answers (off: to measure it)."""
        self.budgets = parse_token_budgets(context_tokens)
        if not self.budgets:
            from rlforge.errors import UserError

            raise UserError("incidents.diagnose needs a token budget (context_tokens, e.g. 8k)")
        names = [families] if isinstance(families, str) else families
        unknown = set(names or ()) - set(KINDS)
        if unknown:
            from rlforge.errors import UserError

            raise UserError(f"unknown question families {', '.join(sorted(unknown))}; valid: "
                            f"{', '.join(KINDS)}")
        self.kinds = [k for k in KINDS if names is None or k in names]
        self.min_confidence = float(min_confidence)
        self.inline = bool(inline)
        self.screen_shortcuts = bool(screen_shortcuts)
        self.rejections: list[dict[str, str]] = []
        self.gates: Counter = Counter()
        self._source: SourceLines | None = None

    def _incidents(self, con) -> list[dict]:
        """The surest log-window link of each ticket (with times)."""
        best: dict[str, dict] = {}
        for lk in linked(con, "log_window", self.min_confidence):
            if lk["window_start"] is not None:
                best.setdefault(lk["ticket_id"], lk)
        return [best[t] for t in sorted(best)]

    def available(self, con) -> int:
        return len(self._incidents(con))

    def _reject(self, link: dict, reason: str, gate: str) -> None:
        self.gates[gate] += 1
        self.rejections.append({"source": f"{link['ticket_id']} -> {link['log_file']}",
                                "reason": reason})

    def specs(self, ctx: BuildContext):
        self.rejections, self.gates = [], Counter()
        made: Counter = Counter()
        for link in stable_sample(self._incidents(ctx.con), None, ctx.seed,
                                  key=lambda lk: lk["link_id"]):
            ticket = conversation(ctx.con, link["ticket_id"], lambda m: m.role == "customer")
            if ticket is None or not ticket.messages or ticket.created_at is None:
                self._reject(link, "ticket has no customer text or no opening time", "no_ticket")
                continue
            w = self._seed(ctx.con, link)
            if w is None:
                self._reject(link, "the linked window holds no records", "no_records")
                continue
            for budget in self.budgets:
                if ctx.limit is not None and sum(made.values()) >= ctx.limit:
                    return
                spec = self._spec(ctx, link, ticket, w, budget, made)
                if spec is not None:
                    made[spec.extra_metadata["question_kind"]] += 1
                    yield spec

    @staticmethod
    def _seed(con, link: dict) -> WindowStats | None:
        """The incident's onset in the linked window: the records of its file within
        `ONSET_MARGIN` of the first failure record holding an id the ticket shares with the
        log, else of the window's first failure record, else the whole window."""
        found = failures(con, link)
        onset = next((r.ts for holds, r in found if holds), None) or \
            next((r.ts for _, r in found), None)
        lo, hi = (link["window_start"], link["window_end"]) if onset is None else \
            (onset - ONSET_MARGIN, onset + ONSET_MARGIN)
        row = con.execute("""
            SELECT min(line_no), max(line_no), count(*) FROM log_lines
            WHERE ingest_run = ? AND ts BETWEEN ? AND ?""", [link["ingest_run"], lo, hi]).fetchone()
        if not row or not row[2]:
            return None
        return WindowStats(link["ingest_run"], link["log_file"], 0, row[0], row[1], row[2],
                           0, 0, 0, 0, row[2], 0)

    @staticmethod
    def _sections(con, w: WindowStats, budget: int, fixed: int, fleet: bool | None = None):
        """The logs shown: every file overlapping the window's time grown together to the
        budget; the window's own file alone when no other file overlaps it (`fleet`
        True or False: only that way, as an earlier try of the same task chose)."""
        if fleet is not False:
            found = grow_fleet(con, w, budget, fixed)
            if found is not None or fleet:
                return found
        records = grow_window(con, w, budget, fixed)
        return None if records is None else [(section_names(con, [w.ingest_run])[w.ingest_run],
                                              records)]

    def _instruction(self, context: dict) -> str:
        from rlforge.tasks.render import Renderer

        return Renderer().render("incidents.diagnose/instruction.md.j2", context)

    def _spec(self, ctx: BuildContext, link: dict, ticket: Ticket, w: WindowStats, budget: int,
              made: Counter) -> TaskSpec | None:
        # The logs are grown to `grow` tokens as logs_common renders records; shown with
        # their fields they take more, so `grow` is scaled down until the instruction
        # comes within 5% of the budget.
        seed = window_records(ctx.con, w)
        ratio = approx_tokens(render(with_fields(ctx.con, seed))) / max(1, approx_tokens(render(seed)))
        fixed, tokens = RESERVE_TOKENS, 0
        grow = fixed + int((budget - fixed) / max(1.0, ratio))
        fleet: bool | None = None
        for _ in range(5):
            plain = self._sections(ctx.con, w, grow, fixed, fleet)
            if plain is None:
                self._reject(link, f"context unfit: the logs around the window cannot come "
                                   f"within 5% of {budget} tokens", "context_unfit")
                return None
            fleet = len(plain) > 1
            sections = [(n, with_fields(ctx.con, recs)) for n, recs in plain]
            text = render_sections(sections)
            q = self._ask(ctx, link, ticket, sections, text, budget, made)
            if q is None:
                return None
            context = self._context(ticket, sections, text, q)
            tokens = approx_tokens(self._instruction(context))
            if not self.inline:
                tokens += approx_tokens(text)
            if 0.95 * budget <= tokens <= 1.05 * budget:
                break
            shown = approx_tokens(text)
            fixed = tokens - shown + 16
            ratio = shown / max(1, approx_tokens(render_sections(plain)))
            grow = fixed + int((budget - fixed) / max(1.0, ratio))
        else:
            self._reject(link, f"context budget: {tokens} tokens, not within 5% of {budget}",
                         "context_budget")
            return None
        files = self._files(ctx, sections)
        timed = [r.ts for _, recs in sections for r in recs if r.ts is not None]
        reference = {"verifier": "answer", "submission": "/app/answer.txt", "max_chars": 1000,
                     **q.answer_ref, "stated_rule": {"kind": q.kind, **q.params}}
        secret = [q.answer_text] if q.answer_ref["answer_kind"] == "exact" and \
            len(q.answer_text) >= 3 else []
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("links", [ticket.ticket_id, f"{w.file}:{w.first_line}-{w.last_line}"],
                             [ticket.content_hash, hashlib.sha256(text.encode()).hexdigest()[:32]]),
            instruction_template="instruction.md", context=context, reference=reference,
            solution_files={"solve.sh": solve_script(q.answer_text)}, verifier="answer",
            group_key=ticket.ticket_id,  # one split with the ticket's triage and reply tasks
            dedup_text=(f"{q.text}\n{files} {budget}\n{ticket.text()}")[:4000],
            time=ticket.created_at,
            workspace={f"logs/{n}": data.encode() for n, data in files.items()},
            null=null_submission(),
            adversarial=adversarial_answers(options=q.candidates[:200], candidates=q.candidates)
            + q.naive,
            category="ops-incident", difficulty="hard" if budget > 16384 else "medium",
            keywords=["incident", "logs", "tickets", q.kind],
            secret_strings=secret, leak_allowed=[text, *(f"`{c}`" for c in q.candidates)],
            evidence_in_workspace=True, kind="answer" if self.inline else "terminal",
            agent_timeout_sec=300.0, verifier_timeout_sec=30.0, memory_mb=512,
            extra_metadata={
                "question_kind": q.kind, "ticket_id": ticket.ticket_id,
                "link_confidence": float(link["confidence"]), "link_evidence": evidence_kinds(link),
                "files": list(files), "window_records": sum(len(r) for _, r in sections),
                "span": [fmt_time(min(timed, default=None)), fmt_time(max(timed, default=None))],
                "context_budget": budget, "context_tokens": tokens, "tokenizer": TOKENIZER_NOTE})

    def _files(self, ctx: BuildContext, sections) -> dict[str, str]:
        """Workspace files: as the services wrote them where every file can be read again
        and the logs are also inline; else as the instruction shows them (the rule reads
        that)."""
        if self.inline:
            if self._source is None or self._source.con is not ctx.con:
                self._source = SourceLines(ctx.con)
            written = {n: self._source.text(recs) for n, recs in sections}
            if all(t is not None for t in written.values()):
                return {n: t or "" for n, t in written.items()}
        return {n: render(recs) for n, recs in sections}

    def _context(self, ticket: Ticket, sections, text: str, q: Question) -> dict:
        records = [r for _, recs in sections for r in recs]
        timed = [r.ts for r in records if r.ts is not None]
        return {"title": f"Diagnose a customer's incident: {q.kind.replace('_', ' ')}",
                "ticket": ticket.text(), "opened": _second(ticket.created_at),
                "question": q.text, "window": text, "inline": self.inline,
                "n_records": len(records), "order_rule": ORDER_RULE,
                "span": f"{fmt_time(min(timed, default=None))} … {fmt_time(max(timed, default=None))}",
                "files": [n for n, _ in sections], "many": len(sections) > 1}

    def _ask(self, ctx, link, ticket: Ticket, sections, text: str, budget: int,
             made: Counter) -> Question | None:
        """The first family (fewest made so far first) that fits, agrees with its stated
        rule and is not given by the ticket."""
        shown = read_shown(text, sections[0][0])
        records = [r for _, recs in sections for r in recs]
        if any(r.ts is None for r in records):
            self._reject(link, "a shown record has no time", "untimed")
            return None
        rng = ctx.rng(self.name, link["link_id"], budget)
        order = sorted(self.kinds, key=lambda k: (made[k], rng.random()))
        ticket_text = ticket.text()
        tried, why, cheap = [], [], []
        for kind in order:
            q = self._question(ctx.con, kind, ticket, sections, shown, rng)
            if isinstance(q, str):
                why.append(f"{kind}: {q}")
                continue
            if q is None:
                continue
            got = stated_answer(kind, shown, q.params)
            if got != q.answer_ref["answer"]:
                self._reject(link, f"stated rule disagrees ({kind}): the rule gives {got!r}, "
                                   f"DuckDB {q.answer_ref['answer']!r}", "stated_rule")
                continue
            if _given(ticket_text, kind, q.answer_text, ticket.created_at):
                tried.append(kind)
                continue
            solved = shortcuts.scored(incident_shortcuts.guesses(
                incident_shortcuts.view(q.text, ticket_text, text)), q.answer_ref) \
                if self.screen_shortcuts else {}
            if solved:
                name, guess = next(iter(solved.items()))
                cheap.append(f"shortcut {name} answers {kind} (it guesses {guess[:60]!r})")
                continue
            return q
        if cheap:
            self._reject(link, cheap[0] + (f"; {len(cheap) - 1} other families too" if len(cheap) > 1
                                           else "") + ("; answer in the ticket: " + ", ".join(tried)
                                                       if tried else ""), "shortcut")
        elif tried:
            self._reject(link, f"answer in the ticket ({', '.join(tried)}), no other family "
                               "fits", "answer_in_ticket")
        else:
            self._reject(link, "no family fits" + (f" ({'; '.join(why)})" if why else ""),
                         "no_family_fits")
        return None

    def _question(self, con, kind, ticket: Ticket, sections, shown, rng) -> Question | str | None:
        """The question of family `kind`, None where the logs cannot support it, or the
        reason it is not asked."""
        services = [s for s, _ in shown]
        hosts = sorted({r.host for _, recs in shown for r in recs if r.host != "-"})
        named = [s for s in services if names(ticket.text(), s)]
        opened_at = ticket.created_at
        assert opened_at is not None, "specs() skips tickets without an opening time"
        opened = opened_at.strftime("%Y-%m-%d %H:%M:%S")
        if kind in ID_KINDS:
            lines = {s: "\n".join(r.message for r in recs) for s, recs in shown}
            ids = sorted(x for x in identifiers(ticket.text())
                         if any(x in body for body in lines.values()))
            if kind == "id_first_service":
                ids = [x for x in ids if sum(x in body for body in lines.values()) >= 2]
            if not ids:
                return "no id of the ticket in the logs shown" + \
                    (" (in two services' logs)" if kind == "id_first_service" else "")
            x = rng.choice(ids)
            hit = first_failure_with(con, sections, x)
            if hit is None:
                return None
            if first_failure_with(con, sections, x, whole=True) != hit:
                return f"`{x}` fails earlier than the logs shown"
            pos, host, t = hit
            what = f"the first record at level WARN, ERROR or FATAL that holds `{x}`"
            rule = HOLDS.format(x=x)
            params = {"id": x}
            if kind == "id_first_service":
                return self._service_q(kind, f"The customer's ticket quotes `{x}`. Which service "
                                       f"logged {what}? {rule} Answer with the service's name "
                                       "(its log file's name without `.log`).",
                                       services[pos], services, named, params)
            if kind == "id_failure_host":
                return self._host_q(kind, f"The customer's ticket quotes `{x}`. Which host logged "
                                    f"{what}? {rule} Answer with the host exactly as shown.",
                                    host, hosts, params)
            answer = t.strftime("%Y-%m-%d %H:%M:%S")
            return Question(kind, f"The customer's ticket quotes `{x}`. When was {what} logged? "
                            f"{rule} Answer in UTC as `YYYY-MM-DD HH:MM:SS`.",
                            {"answer_kind": "timestamp", "answer": answer, "tolerance_sec": 1},
                            answer, sorted({r.ts.strftime("%Y-%m-%d %H:%M:%S") for _, recs in sections
                                    for r in recs}),
                            params, [Submission("ticket_opened_time", {"answer.txt": opened.encode()},
                                                "the time the ticket was opened")])
        # The hours before the ticket, cut to where every file shown has records (whole
        # seconds): what the rule reads is then all that was logged in that span.
        firsts = [recs[0].ts for _, recs in sections]
        lasts = [recs[-1].ts for _, recs in sections]
        lo = _whole_second(max([opened_at - LEAD, *firsts]), up=True)
        hi = _whole_second(min([opened_at, *lasts]), up=False)
        if hi - lo < 2 * BURST_GAP:
            return "the logs shown do not cover the hours before the ticket"
        found = first_bursts(con, sections, lo, hi)
        if not found:
            return "no burst in the logs shown before the ticket"
        if len(found) > 1 and found[0][1] == found[1][1]:
            return "two services' bursts began at the same time"
        pos, start, host = found[0]
        if (start - lo) <= BURST_GAP:
            return "the first burst may have begun before the logs shown"
        params = {"from": lo.isoformat(sep=" "), "to": hi.isoformat(sep=" ")}
        which = (f"{BURST_RULE} Consider only the records logged from {_second(lo)} to "
                 f"{_second(hi)} UTC (within the {int(LEAD.total_seconds() // 3600)} hours "
                 "before the ticket was opened, where every file shown has records). Among "
                 "the bursts in them, take the one that began first.")
        if kind == "burst_first_service":
            if len(found) < 2:
                return None
            return self._service_q(kind, f"{which} In which service's log is it? Answer with the "
                                   "service's name (its log file's name without `.log`).",
                                   services[pos], services, named, params)
        if kind == "burst_first_host":
            return self._host_q(kind, f"{which} Which host logged its first record? Answer "
                                "with the host exactly as shown.", host, hosts, params)
        minute = start.strftime("%Y-%m-%d %H:%M")
        return Question(kind, f"{which} In which minute did it begin? Answer in UTC as "
                        "`YYYY-MM-DD HH:MM`.",
                        {"answer_kind": "timestamp", "answer": minute, "tolerance_sec": 0},
                        minute, sorted({r.ts.strftime("%Y-%m-%d %H:%M") for _, recs in sections
                                        for r in recs}), params,
                        [Submission("ticket_opened_minute",
                                    {"answer.txt": hi.strftime("%Y-%m-%d %H:%M").encode()},
                                    "the minute the ticket was opened")])

    @staticmethod
    def _service_q(kind, text, answer, services, named, params) -> Question | None:
        if len(services) < 2:
            return None
        naive = [Submission(f"service_the_ticket_names_{i}", {"answer.txt": s.encode()},
                            "the service the ticket names") for i, s in enumerate(named)
                 if s != answer]
        return Question(kind, text, {"answer_kind": "exact", "answer": answer}, answer,
                        services, params, naive)

    @staticmethod
    def _host_q(kind, text, host, hosts, params) -> Question | None:
        host = _field(host)
        if host == "-" or len(hosts) < 2:
            return None
        return Question(kind, text, {"answer_kind": "exact", "answer": host}, host, hosts,
                        params, [])
