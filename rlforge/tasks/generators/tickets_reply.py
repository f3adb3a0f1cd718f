"""`tickets.reply`: answer a customer by researching how the company resolved similar tickets.

A multi-turn task. The policy sees the customer's message, never the facts of the answer.
Its workspace holds what the company knows: earlier resolved tickets of the same help desk
as files under `kb/tickets/` (what was already redacted at ingest; never the target ticket,
never one whose reply is (nearly) the target's or whose message is the same, never one
created after it), plus an optional docs folder (`docs` option) under `kb/docs/`, and a
search command `kb/search.py` (BM25, ranked snippets) that the run loop also offers as a
`search` tool beside `bash` and `submit`. A knowledge base holds the `KB_RELEVANT`
earlier tickets most similar to the customer's message and `KB_OTHERS` others drawn by
the seed, so searching, not listing, is how the policy finds its way.

The required facts are the whole units of the real reply — template placeholders such as
`{{Order Number}}`, ids, amounts, menu paths, links, quoted UI strings; never a
pseudonymised value, which no file the policy sees lets it derive — and derivability is proven at build time: each fact occurs in the real reply,
does not occur in the customer's own text (those are dropped from the list: echoing them
proves nothing), and occurs in a file of the task's knowledge base; a ticket whose reply
needs a fact the knowledge base lacks is dropped with that reason, as is one left with no
fact to research. The reward is `score_reply`'s (see `rlforge.verify.standalone.replies`): facts
present (partial credit), distinctive values of the other customers in the knowledge base
absent (never an ordinary one- or two-digit number, which any numbered step holds), a
length window, and the gates against stuffing (fact share), naming the facts only other
issues' replies hold (`focused`), copying (4-grams shared with the customer's message and
the knowledge-base files that are no precedent), a reply stitched from fragments cut out
of the knowledge base's sentences (`whole_sentences`), filler (word pairs the company's replies
use, and its word triples: `phrased`) and answering another ticket (`on_topic`: the
reply's content words stay closer to the real reply's than to a knowledge-base reply
written for another issue, and share some with it; and, where the desk labels its
tickets' issues, `answers_issue`: a classifier trained on the desk's own labelled replies
reads the reply as this ticket's issue, see `reply_issues`). A ticket whose
real reply does not pass those gates itself is dropped with the figure.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path
from typing import Callable

from rlforge.tasks.generators import kb_search
from rlforge.tasks.generators.answers import null_submission, solve_script
from rlforge.tasks.generators.reply_issues import (IssueModel, issue_of, other_issue_attacks,
                                                   unanswering_attacks)
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.render import builtin_templates
from rlforge.tasks.splits import THRESHOLD, shingles, subject_key
from rlforge.tasks.spec import ANSWER_FILE, BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify.standalone.replies import (COPY_N, COPY_SHARE, FRAGMENT_LIMITS,
                                               _mentions_words, _ngrams, bigrams, common_share,
                                               contains, copied_share, cosine, cut_from_kb,
                                               kb_sentences, score_reply, topic_terms,
                                               topic_vector, trigrams, words)

# A menu path: capitalised segments joined by '>'; a segment after the first may go on in
# lower case ("Time zone", "Single sign-on") for up to three words, never into the sentence
# ("... > Webhooks and click", "... > Payment method with the postcode").
_CAP = r"[A-Z][\w&'’]*(?:-\w+)*"
_STOP = ("a|an|the|and|or|but|with|without|to|then|from|in|on|at|for|of|by|as|before|after|"
         "if|when|where|so|is|are|was|be|you|your|it|its|that|which|this|there|here|again|now")
_SEGMENT = rf"{_CAP}(?: (?:{_CAP}|(?!(?:{_STOP})\b)[a-z][\w'’]*(?:-\w+)*)){{0,3}}"
FACT_PATTERNS = [
    re.compile(r"\{\{[^{}\n]{1,60}\}\}"),                       # template placeholders
    re.compile(r"<[A-Z_]{2,20}_[0-9a-f]{6}>"),                  # rlforge pseudonyms
    re.compile(r"\b[A-Z]{2,6}-\d[\d-]{2,}\b"),                  # ids such as INV-2024-06232
    re.compile(r"#\d{4,}\b"),                                   # ticket / order numbers
    re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d\d)?"),                 # amounts
    re.compile(rf"\b{_CAP}(?: {_CAP})*(?: ?> ?{_SEGMENT})+"),  # menu paths
    re.compile(r"https?://[^\s)>\]]+"),                         # links
    re.compile(r"(?<!\w)'[^'\n]{3,40}'(?!\w)|(?<!\w)\"[^\"\n]{3,40}\"(?!\w)"),  # quoted UI strings
]
DISTINCT = FACT_PATTERNS[1:5]  # values specific to one ticket (not shared placeholders)
PSEUDONYM = FACT_PATTERNS[1]
MAX_FACTS = 6
MIN_REPLY_WORDS = 12
KB_RELEVANT = 12
KB_OTHERS = 12
MAX_FORBIDDEN = 200
MAX_DISTRACTORS = 200
DISTRACTOR_ALLOWANCE = 5
NEAR_DUPLICATE = THRESHOLD  # requests this alike (shingle Jaccard) are the same ticket again
COPY_MARGIN = 0.10     # the copy gate's allowance above the real reply's own share
MAX_COPY_LIMIT = 0.60  # no task whose copy gate would need to be looser than this
COMMON_BIGRAMS = 3000  # the most frequent word pairs of an origin's other replies
COMMON_TRIGRAMS = 3000  # and word triples
TRIGRAM_FACTOR = 0.45  # a reply's share of them must be this much of the real reply's
TOPIC_TERMS = 1500     # the idf of this many of an origin's most frequent reply words
SAME_ISSUE = 0.2       # a KB reply this alike the real reply (tf-idf cosine) may answer it too
LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
         "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.")
SEARCH_COMMAND = "python3 /app/kb/search.py"
# The fixed wording of the instruction (the template without its variables): a fact it
# holds ("Help" in "help desk") would be given away, so it is never a required fact.
INSTRUCTION_TEXT = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", " ", (
    builtin_templates() / "tickets.reply" / "instruction.md.j2").read_text(encoding="utf-8"))


def _pairs(text: str) -> set[str]:
    return set(bigrams(text))


def _triples(text: str) -> set[str]:
    return set(trigrams(text))


def bigram_ranking(replies: list[str], size: int = 2) -> tuple[list[tuple[str, int]], Counter]:
    """Word pairs (`size` 3: triples) of a set of replies by how many replies hold them
    (ties by the words)."""
    grams = _triples if size == 3 else _pairs
    counts = Counter(b for r in replies for b in grams(r))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), counts


def common_bigrams(ranking: list[tuple[str, int]], own: str, n: int = COMMON_BIGRAMS,
                   size: int = 2) -> list[str]:
    """The `n` most frequent pairs (`size` 3: triples) of the other replies: those of `own`
    count once less."""
    mine = _triples(own) if size == 3 else _pairs(own)
    out: list[str] = []
    for b, c in ranking:  # most frequent first: stop at n
        if len(out) >= n:
            break
        if c - (b in mine) >= 1:
            out.append(b)
    return sorted(out)


def _whole(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is a whole unit: not glued to a word, or a hyphenated
    word, on either side (so 'Settings > Security > Single' of '... Single-Sign-On' is not)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end:end + 2]
    glued_after = bool(after) and (after[0].isalnum() or after[0] == "_"
                                   or (after[0] in "-’'" and after[1:2].isalnum()))
    return not glued_after and not (before.isalnum() or before == "_")


def key_facts(text: str, limit: int | None = MAX_FACTS) -> list[str]:
    """Distinct whole facts in a reply, in order of appearance, at most `limit`."""
    found: list[tuple[int, str]] = []
    for pattern in FACT_PATTERNS:
        for m in pattern.finditer(text):
            raw = m.group(0)
            fact = raw.strip().strip("'\"").rstrip(".,;:!?")
            end = m.start() + len(raw.rstrip().rstrip(".,;:!?"))
            if len(fact) >= 3 and _whole(text, m.start(), end):
                found.append((m.start(), fact))
    out: list[str] = []
    for _, fact in sorted(found):
        if not any(fact.casefold() in f.casefold() or f.casefold() in fact.casefold() for f in out):
            out.append(fact)
    return out[:limit]


def distractors(kb_texts: list[str], facts: list[str], gold: str, customer: str) -> list[str]:
    """The knowledge base's facts that are not this reply's: every whole fact of its files
    that neither the real reply nor the customer's message holds and that is no part of a
    required fact. A reply listing many of them was not written for this ticket."""
    out: set[str] = set()
    for text in kb_texts:
        for fact in key_facts(text, limit=None):
            if contains(gold, fact) or contains(customer, fact):
                continue
            if any(contains(fact, f) or contains(f, fact) for f in facts):
                continue
            out.add(fact)
    return sorted(out)[:MAX_DISTRACTORS]


def distractor_allowance(facts: list[str]) -> int:
    """How many of the knowledge base's other facts a reply may name: what a real reply to
    the same issue, written for another customer, names (a help desk's macros carry their
    placeholders and steps: up to 4 in 95% of them in a templated export), never a listing
    of the knowledge base (6 or more in 99% of such walks)."""
    return DISTRACTOR_ALLOWANCE


def distinctive(text: str) -> list[str]:
    """Values in a text specific to its ticket (pseudonyms, ids, amounts), for the forbidden list."""
    return sorted({m.group(0) for p in DISTINCT for m in p.finditer(text)})


def _forbidden_order(value: str) -> tuple[int, str]:
    """Which of the other customers' values the forbidden list keeps first, should it be
    cut: their pseudonyms and ids, then ticket numbers, then amounts (a "$3" is the
    likeliest to be some other reply's ordinary number)."""
    kind = next(i for i, p in enumerate(DISTINCT) if p.search(value))
    return ((0, 0, 1, 2)[kind], value)


def forbiddable(gold: str, visible: str) -> Callable[[str], bool]:
    """Whether a value may be forbidden in the reply to a ticket: no ordinary number, and
    neither its gold reply nor the ticket itself holds it, compared exactly as the verifier compares (words, so "$3"
    is held by a reply with a step "3.", and "{{Live Chat}}" by one saying "live chat")."""
    return lambda value: (bool(value) and not _ordinary_number(value)
                          and not contains(gold, value) and not contains(visible, value))


def _ordinary_number(value: str) -> bool:
    """Whether a value is, as the verifier compares words, a number of one or two digits
    ("$3" is the word "3"): any reply's step "3." or "2 days" holds it, so forbidding it
    would fail replies for their numbering, and leaking it tells nothing."""
    found = words(value)
    return bool(found) and all(w.isdigit() and len(w) <= 2 for w in found)


def kb_document(row) -> str:
    """One earlier resolved ticket as a knowledge-base file."""
    ticket_id, _, subject, body, resolution, created_at, *_ = row
    when = f"created: {created_at:%Y-%m-%d}\n" if created_at else ""
    return (f"# {subject or 'Support request'}\n\nticket: {ticket_id}\n{when}\n"
            f"## Customer wrote\n\n{body.strip()}\n\n## Resolution sent\n\n{resolution.strip()}\n")


def kb_name(ticket_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", ticket_id).strip("_")[:80] + ".md"


def read_docs(folder: str | Path | None) -> dict[str, str]:
    """The text files of a docs folder by path relative to it (sorted; binary files skipped)."""
    if not folder:
        return {}
    root = Path(folder)
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            out[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def unusable(row) -> str | None:
    """Why a ticket cannot be a reply task before any research is tried (None: it may)."""
    body, resolution = (row[3] or "").strip(), (row[4] or "").strip()
    if not body:
        return "no customer message"
    if not resolution:
        return "no resolution text"
    if len(resolution.split()) < MIN_REPLY_WORDS:
        return f"resolution under {MIN_REPLY_WORDS} words"
    return None


class _Origin:
    """The resolved tickets of one help desk, tokenised once for ranking."""

    def __init__(self, rows):
        self.rows = rows
        self.docs = [kb_document(r) for r in rows]
        self.index = kb_search.Index([kb_search.tokens(d) for d in self.docs])
        self.shingles = [shingles(f"{r[2] or ''}\n{r[3]}") for r in rows]
        self.ranking = bigram_ranking([r[4] for r in rows])[0]
        self.triples = bigram_ranking([r[4] for r in rows], size=3)[0]
        df: Counter = Counter()
        for r in rows:
            df.update(set(topic_terms(r[4])))
        n = len(rows)
        # Smoothed so that a word in every reply still weighs something; words past the
        # table are rarer than any in it and weigh as a word seen once.
        self.idf = {t: round(math.log(1 + n / c), 4) for t, c in df.most_common(TOPIC_TERMS)}
        self.default_idf = round(math.log(1 + n), 4)
        self._words: dict[int, list[str]] = {}
        self._reply_grams: dict[int, set] = {}
        self._issues: IssueModel | None = None
        self._trained = False

    @property
    def issues(self) -> IssueModel | None:
        """The desk's issue model (`reply_issues`), trained on first use; None without labels."""
        if not self._trained:
            self._issues = IssueModel.fit([(r[0], issue_of(r[7], r[8]), r[4]) for r in self.rows],
                                          lambda reply: key_facts(reply, limit=None))
            self._trained = True
        return self._issues

    # The verifier's word lists and 4-grams of a ticket, computed once per build.
    def words(self, i: int) -> list[str]:
        if i not in self._words:
            self._words[i] = words(self.docs[i])
        return self._words[i]

    def reply_grams(self, i: int) -> set:
        if i not in self._reply_grams:
            self._reply_grams[i] = _ngrams(words(self.rows[i][4]), COPY_N)
        return self._reply_grams[i]


@register("tickets.reply", 2, "Answer a customer by researching earlier resolved tickets "
          "(search tool, bash); graded on the real resolution's facts, forbidden content, "
          "length and anti-stuffing gates.", verifier="reply")
class TicketReply(Generator):
    sources = ("tickets",)
    opt_in = ("its gates read a reply's words, not its meaning, and red teams passed them with "
              "replies that do not answer the ticket; see the README's tickets.reply bound")

    def __init__(self, docs: str | None = None, kb_relevant: int = KB_RELEVANT,
                 kb_others: int = KB_OTHERS):
        self.docs = read_docs(docs)
        self.doc_words = [words(text) for text in self.docs.values()]
        self.kb_relevant, self.kb_others = int(kb_relevant), int(kb_others)
        self.rejections: list[dict[str, str]] = []

    def available(self, con) -> int:
        return sum(unusable(r) is None for r in self._rows(con))

    def _rows(self, con):
        """Every ticket, usable or not (`unusable` says why not)."""
        return con.execute("""
            SELECT t.ticket_id, t.content_hash, t.subject, t.body, t.resolution, t.created_at,
                   t.origin, t.category, t.intent
            FROM tickets t ORDER BY t.ticket_id""").fetchall()

    def specs(self, ctx: BuildContext):
        self.rejections = []
        rows = self._rows(ctx.con)
        by_origin: dict[str, list] = {}
        for r in rows:
            if unusable(r) is None:
                by_origin.setdefault(r[6], []).append(r)
        origins = {name: _Origin(members) for name, members in by_origin.items()}
        emitted = 0
        for row in stable_sample(rows, None, ctx.seed, key=lambda r: r[0]):
            if ctx.limit is not None and emitted >= ctx.limit:
                break
            result = unusable(row) or self._spec(ctx, row, origins[row[6]])
            if isinstance(result, str):
                self.rejections.append({"source": row[0], "reason": result})
                continue
            emitted += 1
            yield result

    def knowledge_base(self, ctx: BuildContext, row, origin: _Origin) -> list[int]:
        """Indices (into `origin.rows`) of the earlier tickets this task's KB holds: the
        `kb_relevant` requests most similar to this one by BM25 and `kb_others` drawn by the
        seed; never this ticket, a near-duplicate of its request (word 3-shingle Jaccard at
        least the splits' threshold) or one created after it (when both have a time)."""
        ticket_id, _, subject, body, gold, created_at, *_ = row
        mine = shingles(f"{subject or ''}\n{body}")
        allowed = []
        for i, p in enumerate(origin.rows):
            if p[0] == ticket_id or (created_at and (not p[5] or p[5] >= created_at)):
                continue
            theirs = origin.shingles[i]
            if len(mine & theirs) >= NEAR_DUPLICATE * len(mine | theirs):
                continue
            allowed.append(i)
        ranked = self.by_similarity(row, origin, allowed)
        chosen = ranked[:self.kb_relevant]
        taken = set(chosen)
        rest = [i for i in allowed if i not in taken]
        ctx.rng("tickets.reply.kb", ticket_id).shuffle(rest)
        return sorted(chosen + rest[:self.kb_others], key=lambda i: origin.rows[i][0])

    @staticmethod
    def by_similarity(row, origin: _Origin, candidates: list[int]) -> list[int]:
        """`candidates` whose request shares a word with this one, most similar first."""
        scores = origin.index.scores(kb_search.tokens(f"{row[2] or ''}\n{row[3]}"), max_share=0.5)
        return sorted((i for i in candidates if scores.get(i, 0) > 0), key=lambda i: (-scores[i], i))

    def _spec(self, ctx: BuildContext, row, origin: _Origin) -> TaskSpec | str:
        """The task for one ticket, or why it cannot be one."""
        ticket_id, content_hash, subject, body, resolution, created_at, origin_name, category, \
            intent = row
        gold = resolution.strip()
        customer = f"{subject or ''}\n{body}"
        # A pseudonym (a name in the greeting, an agent's sign-off) stands for a value the
        # policy cannot derive: the customer's message holds other tokens, and the only
        # way to another is to copy another customer's, which is forbidden.
        candidates = [f for f in key_facts(gold, limit=None) if not PSEUDONYM.fullmatch(f)][:MAX_FACTS]
        if not candidates:
            return "reply has no whole fact (id, code, menu path, command, URL, amount) to research"
        facts = [f for f in candidates if not contains(customer, f)]
        if not facts:
            return "every fact of the reply is in the customer's own message"
        facts = [f for f in facts if not contains(INSTRUCTION_TEXT, f)]
        if not facts:
            return "every fact of the reply is in the instruction's own wording"
        kb = self.knowledge_base(ctx, row, origin)
        if not kb:
            return "no earlier resolved ticket of this help desk to research"
        files = {f"kb/tickets/{kb_name(origin.rows[i][0])}": origin.docs[i] for i in kb}
        files.update({f"kb/docs/{rel}": text for rel, text in self.docs.items()})
        missing = [f for f in facts if not any(_mentions_words(origin.words(i), f) for i in kb)
                   and not any(_mentions_words(w, f) for w in self.doc_words)]
        if missing:
            return f"fact not findable in the task's knowledge base ({missing[0]})"
        n_words = len(gold.split())
        fact_words = sum(len(f.split()) for f in facts)
        min_words = max(5, int(n_words * 0.4), fact_words + 5)
        if min_words > n_words:
            return "the reply is little more than its facts"
        # A precedent (an earlier reply that shares much of this one's wording) is what
        # research should find: adapting it is the skill, so it is no copy source. Every
        # other KB ticket is, with the customer's message.
        mine = _ngrams(words(gold), COPY_N)
        precedents = {i for i in kb if len(mine & origin.reply_grams(i)) > COPY_SHARE / 2 * len(mine)}
        copy_sources = [customer, *(origin.docs[i] for i in kb if i not in precedents)]
        # A company's replies share their phrasing, so the real reply shares some 4-grams
        # with its knowledge base: the copy gate sits COPY_MARGIN above that share (never
        # below the verifier's default), and a ticket whose real reply already needs more
        # than MAX_COPY_LIMIT is too close to its KB to tell copying from answering.
        # Every 4-gram shown counts, the house's phrasing too: a reply stitched from runs
        # that two KB replies share each is all copy (exempting such runs let a stitch of
        # other issues' replies pass 57 of 91 Bitext tasks).
        own_copy = copied_share(gold, copy_sources)
        copy_limit = round(max(COPY_SHARE, own_copy + COPY_MARGIN), 2)
        if copy_limit > MAX_COPY_LIMIT:
            return (f"the real reply repeats its knowledge base ({own_copy:.0%} of its 4-grams; "
                    f"at most {MAX_COPY_LIMIT - COPY_MARGIN:.0%} can be told from copying)")
        # The sentences of the KB a reply could be cut from (`whole_sentences`): the real
        # reply must not be such a cut itself.
        sentences = kb_sentences([origin.docs[i] for i in kb] + list(self.docs.values()))
        cut = cut_from_kb(gold, sentences)
        if cut is not None:
            return (f"the real reply reads as fragments of its knowledge base ({cut[1]:.0%} of "
                    f"its sentences cut out of longer ones with at most {cut[0]} word(s) of "
                    f"their own; at most {cut[2]:.0%})")
        # The replies of the KB written for another issue: the policy's reply must stay
        # closer to the real reply's words than to theirs (`on_topic`). Accepting
        # closeness to a KB reply alike the real one instead let a fixed template with the
        # facts pass 24 of 91 Bitext tasks (5 without): the real reply alone sets the topic.
        drop = {w for f in facts for w in words(f)}
        def vector(text: str) -> dict[str, float]:
            return {t: round(x, 4) for t, x in
                    topic_vector(text, origin.idf, origin.default_idf, drop).items()}

        own = vector(gold)
        if not own:
            return "the reply has no words beyond its facts to tell what it answers"
        theirs = {i: vector(origin.rows[i][4]) for i in kb}
        apart = sorted(((cosine(own, theirs[i]), i) for i in kb), reverse=True)
        off = [i for near, i in apart if near < SAME_ISSUE]
        topic = {"idf": origin.idf, "default_idf": origin.default_idf, "reply": own,
                 "others": [theirs[i] for i in off]}
        # What the replies to this issue name (their menu paths, steps, placeholders) a
        # reply to it may name too; the facts only other issues' replies hold it may not.
        # Which issue the reply answers, as the desk's own labelled replies teach it: the
        # real reply must be read as its own ticket's issue; other issues' replies are not.
        issue = issue_of(category, intent)
        model = origin.issues
        issue_ref = model.for_task(issue) if model is not None else None
        if issue_ref is not None and model is not None:
            ahead = model.margin(str(issue), gold, facts)
            if ahead < issue_ref["margin"]:
                return (f"the real reply is not read as its own issue ({ahead:+.2f} ahead of "
                        f"the next; at least {issue_ref['margin']:+.2f})")
        others_facts = distractors([origin.rows[i][4] for i in off] + list(self.docs.values()),
                                   facts, gold, customer)
        may_forbid = forbiddable(gold, customer)
        forbidden = sorted({v for i in kb for v in distinctive(origin.docs[i]) if may_forbid(v)},
                           key=_forbidden_order)[:MAX_FORBIDDEN]
        max_words = max(60, n_words * 3)
        vocab = common_bigrams(origin.ranking, gold)
        min_common = round(0.5 * common_share(gold, vocab), 3)
        phrases = common_bigrams(origin.triples, gold, COMMON_TRIGRAMS, size=3)
        min_phrased = round(TRIGRAM_FACTOR * common_share(gold, phrases, n=3), 3)
        others = [i for i in kb if i not in precedents]
        nearest = next((origin.rows[i] for i in self.by_similarity(row, origin, others)),
                       origin.rows[others[0]] if others else None)
        adversarial = self._adversarial(gold, body, facts, forbidden, nearest, max_words,
                                        [origin.rows[i][4] for i in kb], min_words,
                                        origin.rows[off[0]][4] if off else None)
        reference = {"verifier": "reply", "required": facts, "forbidden": forbidden,
                     "min_words": min_words, "max_words": max_words,
                     "submission": f"/app/{ANSWER_FILE}", "pass_threshold": 1.0,
                     "copy_sources": copy_sources, "kb_sentences": sentences,
                     "fragment_limits": list(FRAGMENT_LIMITS), "common_bigrams": vocab,
                     "min_common_share": min_common, "max_copy_share": copy_limit,
                     "common_trigrams": phrases, "min_trigram_share": min_phrased,
                     "distractors": others_facts,
                     "max_distractors": distractor_allowance(facts), "topic": topic,
                     **({"issue": issue_ref} if issue_ref is not None else {})}
        if issue_ref is not None and model is not None:
            other_replies = [origin.rows[i][4] for i in kb
                             if issue_of(origin.rows[i][7], origin.rows[i][8]) not in (None, issue)]
            adversarial += other_issue_attacks(model, str(issue), facts, other_replies)
            adversarial += unanswering_attacks(
                model, str(issue), facts, customer, [origin.rows[i][4] for i in kb],
                other_replies, min_words, max_words, lambda text: _standing(reference, text))
        workspace = {path: text.encode() for path, text in files.items()}
        workspace["kb/search.py"] = Path(kb_search.__file__).read_bytes()
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("tickets", [ticket_id], [content_hash]),
            instruction_template="instruction.md",
            context={"title": "Reply to a customer", "subject": subject or "", "body": body,
                     "n_tickets": len(kb), "n_docs": len(self.docs),
                     "search": SEARCH_COMMAND, "min_words": min_words, "max_words": max_words},
            reference=reference,
            solution_files={"solve.sh": solve_script(gold)},
            verifier="reply", kind="terminal", group_key=ticket_id,
            subject_key=subject_key(subject), dedup_text=customer, time=created_at, null=null_submission(),
            adversarial=adversarial, workspace=workspace,
            category="support-reply", difficulty="medium",
            keywords=["tickets", "writing", "search", category or "general"],
            secret_strings=[gold] if len(gold) > 40 else [],
            leak_allowed=[body, subject or ""],
            agent_timeout_sec=300.0, verifier_timeout_sec=30.0, memory_mb=512,
            extra_metadata={"n_facts": len(facts), "n_forbidden": len(forbidden),
                            "kb_tickets": len(kb), "kb_docs": len(self.docs),
                            "search_command": SEARCH_COMMAND},
        )

    @staticmethod
    def _adversarial(gold: str, body: str, facts: list[str], forbidden: list[str], nearest,
                     max_words: int, kb_replies: list[str], min_words: int,
                     other_issue: str | None) -> list[Submission]:
        n_words = len(gold.split())
        padded = (gold + "\n\n") * (2 + max_words // max(1, n_words))
        subs = [
            Submission("empty", {ANSWER_FILE: b""}, "an empty reply"),
            Submission("facts_only", {ANSWER_FILE: " ".join(facts).encode()},
                       "the key facts alone, no reply"),
            Submission("padded", {ANSWER_FILE: padded.encode()},
                       "the right reply repeated far past the length limit"),
            Submission("facts_repeated", {ANSWER_FILE: ((" ".join(facts) + "\n") * 9).encode()},
                       "the key facts pasted nine times"),
            Submission("lorem_and_facts",
                       {ANSWER_FILE: (LOREM + " " + " ".join(facts) + " " + LOREM).encode()},
                       "filler text around the key facts"),
            Submission("customer_message_and_facts",
                       {ANSWER_FILE: (body + "\n\n" + " ".join(facts)).encode()},
                       "the customer's own message with the facts appended"),
        ]
        if nearest is not None:
            subs.append(Submission("copies_other_ticket",
                                   {ANSWER_FILE: (nearest[4] + "\n\n" + " ".join(facts)).encode()},
                                   "the most similar earlier resolution, copied, with the facts "
                                   "appended"))
        if other_issue is not None:
            reworded = " ".join(w for i, w in enumerate(other_issue.split()) if i % 4 != 3)
            subs.append(Submission("answers_another_issue",
                                   {ANSWER_FILE: (reworded + "\n\n" + " ".join(facts)).encode()},
                                   "the knowledge base's reply to the nearest other issue, every "
                                   "fourth word dropped (no 4-gram copied), with the facts"))
        walk = kb_walk(kb_replies, max_words)
        if walk:
            subs.append(Submission("knowledge_base_walk", {ANSWER_FILE: walk.encode()},
                                   "every fact the knowledge base's replies hold, strung on "
                                   "their word pairs, never reading the ticket"))
        walk = kb_walk(kb_replies, max(min_words + 10, 40), facts)
        if walk:
            subs.append(Submission("walk_with_the_facts", {ANSWER_FILE: walk.encode()},
                                   "the task's own facts strung on the knowledge base's word "
                                   "pairs: every pair one the company writes, no sentence"))
        hidden = [v for v in forbidden if len(v) >= 2 and not v.isspace()]
        if hidden:
            value = hidden[0]
            masked = value[:1] + "\u200b" + value[1:]
            subs.append(Submission("forbidden_with_zero_width",
                                   {ANSWER_FILE: (gold + " " + masked).encode()},
                                   "the right reply plus a forbidden value with U+200B inside"))
        return subs


def _standing(reference: dict, text: str) -> tuple[bool, int, float]:
    """How near `text` comes to passing the task: passes, gates held, total."""
    result = score_reply(reference, text)
    held = sum(1 for c in result["components"].values() if c["gate"] and c["value"] >= 1)
    return result["outcome"] == "pass", held, result["total"]


def kb_walk(replies: list[str], max_words: int, facts: list[str] | None = None) -> str:
    """A reply written without reading the ticket: a walk over the word pairs of the
    knowledge base's replies (each pair one the company writes, no four words in a row
    copied), with `facts` strung in (by default every menu path, link, quoted string and
    placeholder those replies hold), until the length allows no more."""
    # what can be forbidden (ids, pseudonyms, amounts: the other customers' own) it leaves
    if facts is None:
        facts = sorted({f for r in replies for f in key_facts(r, limit=None) if not distinctive(f)})
    tokens = [[w for w in words(r) if w.isalpha()] for r in replies]
    grams = set().union(*(_ngrams(t, COPY_N) for t in tokens)) if tokens else set()
    follows: dict[str, list[str]] = {}
    for t in tokens:
        for a, b in zip(t, t[1:]):
            follows.setdefault(a, []).append(b)
    budget = max_words - sum(len(f.split()) + 1 for f in facts)
    walk: list[str] = []
    word = next((t[0] for t in tokens if t), "")
    while word and len(walk) < budget:
        walk.append(word)
        nxt = [w for w in sorted(set(follows.get(word, [])))
               if tuple(walk[-(COPY_N - 1):] + [w]) not in grams]
        word = nxt[len(walk) % len(nxt)] if nxt else ""
        if not word and walk:  # a dead end: start again from a reply's first word
            word = tokens[len(walk) % len(tokens)][0] if tokens[len(walk) % len(tokens)] else ""
    text, step = [], max(1, len(walk) // max(1, len(facts)))
    for i, fact in enumerate(facts):
        text += walk[i * step:(i + 1) * step] + [fact + "."]
    return " ".join(text + walk[len(facts) * step:])
