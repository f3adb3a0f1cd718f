"""`tickets.reply`: draft the reply to a customer from the case notes of the real resolution.

The key facts of the real reply — template placeholders such as `{{Order Number}}`,
pseudonymised values, ids, amounts, menu paths, quoted UI strings, links — become the case
notes the agent is given and the facts its reply must contain (partial credit). The
instruction also shows an internal note or a resolved ticket of another customer; their
distinctive values (other pseudonyms, ids, internal remarks) must not appear in the reply.
A length window around the real reply's length rules out empty and padded answers, and
three gates rule out stuffing (see `score_reply`): at most half the reply may be fact
text, at most a bounded share may be copied from what the instruction shows, and its word
pairs must be pairs the company's other replies use, at least half as often as the real
reply's are (lorem ipsum, or common words strung together, are not).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable

from rlforge.tasks.answers import null_submission, solve_script
from rlforge.tasks.registry import register
from rlforge.tasks.spec import ANSWER_FILE, BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify.standalone import (COPY_SHARE, bigrams, common_share, contains, copied_share,
                                       normalize)

FACT_PATTERNS = [
    re.compile(r"\{\{[^{}\n]{1,60}\}\}"),                       # template placeholders
    re.compile(r"<[A-Z_]{2,20}_[0-9a-f]{6}>"),                  # rlforge pseudonyms
    re.compile(r"\b[A-Z]{2,6}-\d[\d-]{2,}\b"),                  # ids such as INV-2024-06232
    re.compile(r"#\d{4,}\b"),                                   # ticket / order numbers
    re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d\d)?"),                 # amounts
    re.compile(r"\b[A-Z][\w&]*(?: [A-Z][\w&]*)*(?: ?> ?[A-Z][\w&]*(?: [A-Z][\w&]*)*)+"),  # menu paths
    re.compile(r"https?://[^\s)>\]]+"),                         # links
    re.compile(r"(?<!\w)'[^'\n]{3,40}'(?!\w)|(?<!\w)\"[^\"\n]{3,40}\"(?!\w)"),  # quoted UI strings
]
DISTINCT = [p for p in FACT_PATTERNS[:5]]
MAX_FACTS = 6
MIN_REPLY_WORDS = 12
COMMON_BIGRAMS = 3000  # the most frequent word pairs of an origin's other replies
LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
         "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.")


def _pairs(text: str) -> set[str]:
    return set(bigrams(text))


def bigram_ranking(replies: list[str]) -> tuple[list[tuple[str, int]], Counter]:
    """Word pairs of a set of replies by how many replies hold them (ties by the pair)."""
    counts = Counter(b for r in replies for b in _pairs(r))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), counts


def common_bigrams(ranking: list[tuple[str, int]], own: str, n: int = COMMON_BIGRAMS) -> list[str]:
    """The `n` most frequent pairs of the other replies: those of `own` count once less."""
    mine = _pairs(own)
    out = [b for b, c in ranking if c - (b in mine) >= 1][:n]
    return sorted(out)


def key_facts(text: str) -> list[str]:
    """Distinct facts in a reply, in order of appearance, at most MAX_FACTS."""
    found: list[tuple[int, str]] = []
    for pattern in FACT_PATTERNS:
        for m in pattern.finditer(text):
            fact = m.group(0).strip().strip("'\"").rstrip(".,;:")
            if len(fact) >= 3:
                found.append((m.start(), fact))
    out: list[str] = []
    for _, fact in sorted(found):
        if not any(fact.casefold() in f.casefold() or f.casefold() in fact.casefold() for f in out):
            out.append(fact)
    return out[:MAX_FACTS]


def distinctive(text: str) -> list[str]:
    """Values in a text specific to its ticket (pseudonyms, ids, amounts), for the forbidden list."""
    return sorted({m.group(0) for p in DISTINCT for m in p.finditer(text)})


def forbiddable(gold: str, visible: str) -> Callable[[str], bool]:
    """Whether a value may be forbidden in the reply to a ticket: neither its gold reply nor
    the ticket itself holds it, compared as the verifier compares (normalised, so a
    placeholder like "{{Live Chat}}" counts as held by a reply saying "live chat")."""
    held = (normalize(gold), normalize(visible))
    return lambda value: not value or all(normalize(value) not in text for text in held)


@register("tickets.reply", 1, "Write the reply to a customer from case notes; graded on key "
          "facts present, forbidden content absent, and length.", verifier="reply")
class TicketReply:
    def available(self, con) -> int:
        return len(self._rows(con))

    def _rows(self, con):
        rows = con.execute(f"""
            SELECT t.ticket_id, t.content_hash, t.subject, t.body, t.resolution, t.created_at,
                   t.origin, t.category,
                   (SELECT string_agg(m.text, '\n\n' ORDER BY m.seq) FROM ticket_messages m
                    WHERE m.ticket_id = t.ticket_id AND NOT m.is_public) AS internal
            FROM tickets t
            WHERE t.body IS NOT NULL AND t.resolution IS NOT NULL
              AND len(string_split(t.resolution, ' ')) >= {MIN_REPLY_WORDS}
            ORDER BY t.ticket_id""").fetchall()
        return [r for r in rows if key_facts(r[4])]

    def specs(self, ctx: BuildContext):
        rows = self._rows(ctx.con)
        if len(rows) < 2:
            return
        by_origin: dict[str, list] = {}
        for r in rows:
            by_origin.setdefault(r[6], []).append(r)
        vocab = {origin: bigram_ranking([r[4] for r in members])[0] for origin, members in by_origin.items()}
        for row in stable_sample(rows, ctx.limit, ctx.seed, key=lambda r: r[0]):
            peers = [p for p in by_origin[row[6]] if p[0] != row[0]] or [p for p in rows if p[0] != row[0]]
            ctx.rng("tickets.reply", row[0]).shuffle(peers)
            # A peer whose reply is (nearly) this one's would make copying it the answer;
            # among the rest, prefer one whose reply holds values this one must not repeat.
            peers = [p for p in peers[:200] if copied_share(row[4], [p[4]]) <= COPY_SHARE / 2] or peers
            may_forbid = forbiddable(row[4], f"{row[2] or ''}\n{row[3]}")
            other = next((p for p in peers[:50] if any(map(may_forbid, distinctive(p[4])))),
                         peers[0])
            spec = self._spec(row, other, may_forbid, vocab[row[6]])
            if spec is not None:
                yield spec

    def _spec(self, row, other, may_forbid: Callable[[str], bool],
              ranking: list[tuple[str, int]]) -> TaskSpec | None:
        ticket_id, content_hash, subject, body, resolution, created_at, origin, category, internal = row
        facts = key_facts(resolution)
        gold = resolution.strip()
        forbidden = [v for v in distinctive(other[3] + "\n" + other[4]) + distinctive(internal or "")
                     if may_forbid(v)]
        if internal:
            note = " ".join(internal.split()[:12])
            if note and not contains(gold, note):
                forbidden.append(note)
        n_words = len(gold.split())
        fact_words = sum(len(f.split()) for f in facts)
        min_words = max(5, int(n_words * 0.4), fact_words + 5)
        if min_words > n_words:
            return None  # the reply is little more than its facts: nothing to write
        max_words = max(60, n_words * 3)
        padded = (gold + "\n\n") * (2 + max_words // max(1, n_words))
        shown = [t for t in (subject, body, other[2], other[3], other[4], internal) if t]
        vocab = common_bigrams(ranking, gold)
        min_common = round(0.5 * common_share(gold, vocab), 3)
        stuffing = [
            Submission("facts_repeated", {ANSWER_FILE: ((" ".join(facts) + "\n") * 9).encode()},
                       "the key facts pasted nine times"),
            Submission("lorem_and_facts", {ANSWER_FILE: (LOREM + " " + " ".join(facts) + " " + LOREM).encode()},
                       "filler text around the key facts"),
            Submission("customer_message_and_facts",
                       {ANSWER_FILE: (body + "\n\n" + " ".join(facts)).encode()},
                       "the customer's own message with the facts appended"),
        ]
        if internal and len(internal.split()) >= 5:
            note = internal.replace(".", "", 1)
            stuffing.append(Submission("internal_note_edited", {ANSWER_FILE: (gold + "\n\n" + note).encode()},
                                       "the right reply plus the internal note, one period removed"))
        hidden = [v for v in forbidden if len(v) >= 2 and not v.isspace()]
        if hidden:
            value = hidden[0]
            masked = value[:1] + "\u200b" + value[1:]
            stuffing.append(Submission("forbidden_with_zero_width", {ANSWER_FILE: (gold + " " + masked).encode()},
                                       "the right reply plus a forbidden value with U+200B inside"))
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("tickets", [ticket_id, other[0]], [content_hash, other[1]]),
            instruction_template="instruction.md",
            context={"title": "Reply to a customer", "subject": subject or "", "body": body,
                     "facts": facts, "internal": internal or "",
                     "example_subject": other[2] or "", "example_body": other[3],
                     "example_reply": other[4], "min_words": min_words, "max_words": max_words},
            reference={"verifier": "reply", "required": facts, "forbidden": sorted(set(forbidden)),
                       "min_words": min_words, "max_words": max_words,
                       "submission": f"/app/{ANSWER_FILE}", "pass_threshold": 1.0,
                       "copy_sources": shown, "common_bigrams": vocab,
                       "min_common_share": min_common},
            solution_files={"solve.sh": solve_script(gold)},
            verifier="reply", group_key=ticket_id, dedup_text=f"{subject or ''}\n{body}",
            time=created_at, null=null_submission(),
            adversarial=[
                Submission("empty", {ANSWER_FILE: b""}, "an empty reply"),
                Submission("facts_only", {ANSWER_FILE: " ".join(facts).encode()},
                           "the key facts alone, no reply"),
                Submission("padded", {ANSWER_FILE: padded.encode()},
                           "the right reply repeated far past the length limit"),
                Submission("copies_other_ticket",
                           {ANSWER_FILE: (other[4] + "\n\n" + " ".join(facts)).encode()},
                           "another customer's resolution with the facts appended"),
                *stuffing,
            ],
            category="support-reply", difficulty="medium",
            keywords=["tickets", "writing", category or "general"],
            secret_strings=[gold] if len(gold) > 40 else [],
            leak_allowed=[body, subject or "", other[4], other[3], *facts],
            agent_timeout_sec=120.0, verifier_timeout_sec=30.0, memory_mb=512,
            extra_metadata={"n_facts": len(facts), "n_forbidden": len(set(forbidden))},
        )
