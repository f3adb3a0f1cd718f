"""Which issue a reply answers, learned from the company's own tickets (no downloaded model).

A help desk's replies to one issue share their words with its replies to the next (Bitext's
27 intents split one product flow: delete, switch and edit an account), so gates that count
shared words cannot tell a reply to another issue from one to this ticket's. A linear
classifier trained on the replies themselves, labelled by the issue each answered, can: the
words that separate "delete" from "switch" are the ones it weighs.

`IssueModel.fit` trains one model per help desk (origin) at build time: a linear SVM
(scikit-learn's `LinearSVC`, deterministic) over each reply's content words and word
pairs outside its own facts (`issue_features`), each present feature weighing
1/sqrt(their number). Only tickets of the train split (by the stable hash the build
splits with) teach it, so the real replies of held-out tickets measure it fairly. The
issue is the ticket's intent, else its category; a desk with fewer than two issues of
`MIN_EXAMPLES` tickets each has no model, and its tasks keep the lexical gates alone.
`for_task` gives the pruned weights (the `KEEP` strongest per issue) that a task's hidden
reference carries for the `answers_issue` gate of `score_reply`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

from rlforge.tasks.spec import ANSWER_FILE, Submission
from rlforge.tasks.splits import hash_split
from rlforge.verify.standalone.replies import (COPY_N, ISSUE_MARGIN, _ngrams, issue_features,
                                               issue_scores, words)

MIN_EXAMPLES = 5   # training replies an issue needs to be a class
KEEP = 250         # weights kept per issue (by size) in a task's reference
SVM_C = 0.5        # the SVM's regularisation (measured on Bitext's held-out replies)


def issue_of(category: str | None, intent: str | None) -> str | None:
    """The issue a ticket raises, as the company labelled it: its intent, else its category."""
    return (intent or category or "").strip() or None


@dataclass
class IssueModel:
    classes: list[str]
    bias: list[float]
    weights: dict[str, str]  # feature -> "class:weight class:weight" (compact in JSON)
    trained_on: int

    @classmethod
    def fit(cls, rows: Sequence[tuple[str, str | None, str]],
            facts_of: Callable[[str], list[str]]) -> IssueModel | None:
        """A model from (ticket id, issue, reply) rows; only train-split tickets with an
        issue teach it. None when fewer than two issues have `MIN_EXAMPLES` replies."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.svm import LinearSVC

        train = [(issue, reply) for ticket, issue, reply in rows
                 if issue and reply and hash_split(ticket) == "train"]
        counts: dict[str, int] = {}
        for issue, _ in train:
            counts[issue] = counts.get(issue, 0) + 1
        classes = sorted(c for c, n in counts.items() if n >= MIN_EXAMPLES)
        if len(classes) < 2:
            return None
        kept = [(issue, reply) for issue, reply in train if issue in classes]
        # Present or not, scaled to unit length: each feature weighs 1/sqrt(their number).
        vec = TfidfVectorizer(analyzer=sorted, binary=True, use_idf=False, norm="l2")
        X = vec.fit_transform([issue_features(reply, facts_of(reply)) for _, reply in kept])
        svm = LinearSVC(C=SVM_C, random_state=0).fit(X, [issue for issue, _ in kept])
        names = vec.get_feature_names_out()
        coef, intercept = svm.coef_, svm.intercept_
        if len(classes) == 2:  # one separating row: class 1 scores +s, class 0 scores -s
            coef = [-coef[0], coef[0]]
            intercept = [-intercept[0], intercept[0]]
        weights: dict[str, list[str]] = {}
        for c, row in enumerate(coef):
            strongest = sorted(range(len(row)), key=lambda j: (-abs(row[j]), names[j]))[:KEEP]
            for j in strongest:
                w = round(float(row[j]), 3)
                if w:
                    weights.setdefault(str(names[j]), []).append(f"{c}:{w:g}")
        return cls(classes, [round(float(b), 4) for b in intercept],
                   {f: " ".join(ws) for f, ws in sorted(weights.items())}, len(kept))

    def for_task(self, issue: str | None, margin: float = ISSUE_MARGIN) -> dict | None:
        """The reference's `issue` entry for a ticket raising `issue` (None: not a class)."""
        if issue not in self.classes:
            return None
        return {"classes": self.classes, "label": issue, "bias": self.bias,
                "weights": self.weights, "margin": margin}

    def margin(self, issue: str, text: str, facts: Sequence[str] = ()) -> float:
        """How far ahead of every other issue `text` is read as `issue` (the gate's figure)."""
        task = self.for_task(issue)
        if task is None:
            return 0.0
        own, other = issue_scores(task, text, facts)
        return own - other


def other_issue_attacks(model: IssueModel, issue: str, facts: list[str],
                        other_replies: list[str]) -> list[Submission]:
    """The knowledge base's replies to other issues (by the desk's labels) that the issue
    model finds likeliest to be this one's, with the facts: verbatim, and with every fourth
    word dropped (no 4-gram copied). A best-of-N attack on `answers_issue`."""
    if not other_replies:
        return []
    tail = "\n\n" + " ".join(facts)

    def reworded(text: str) -> str:
        return " ".join(w for i, w in enumerate(text.split()) if i % 4 != 3)

    best = max(other_replies, key=lambda r: (model.margin(issue, r + tail, facts), r))
    best_reworded = max((reworded(r) for r in other_replies),
                        key=lambda r: (model.margin(issue, r + tail, facts), r))
    return [
        Submission("likeliest_other_issue_reply", {ANSWER_FILE: (best + tail).encode()},
                   "the knowledge base's reply to another issue most like this one's, with "
                   "the facts"),
        Submission("likeliest_other_issue_reworded",
                   {ANSWER_FILE: (best_reworded + tail).encode()},
                   "the same best of the other issues' replies, every fourth word dropped, "
                   "with the facts"),
    ]


# Replies that name the issue without answering it (a red team's families): the issue
# model sums its weights over the whole reply, so a list of the issue's strongest words
# anywhere -- in a refusal, after a fixed template -- sets the issue, and no gate reads
# negation. Each is built from what a policy has: the knowledge base, the ticket, and an
# issue model it can fit itself on the desk's train split as the build does.
REFUSAL = "Unfortunately we are not able to help with {} and cannot assist you with this."
CONCERNS = "This concerns {}."
TEMPLATE = ("Thanks for getting in touch with us about this, I understand it matters to you "
            "and I am glad to help. Here is what to do: {}. If anything is still unclear, "
            "just reply to this message and we will be happy to help you further.")
WORD_COUNTS = (3, 6, 10, 16)  # how many issue (or customer) words an attack names
HOUSE_RUN = 6                 # a house phrase: at least this many words in a row


def issue_words(model: IssueModel, issue: str, k: int) -> list[str]:
    """The `k` features (words, word pairs) that most favour `issue` over any other issue
    in the model, none inside another."""
    me = model.classes.index(issue)
    lead = []
    for feature, table in model.weights.items():
        ws = {int(c): float(w) for c, w in (item.split(":") for item in table.split())}
        mine = ws.get(me, 0.0)
        if mine > 0:
            lead.append((mine - max([0.0, *(w for c, w in ws.items() if c != me)]), feature))
    out: list[str] = []
    for _, feature in sorted(lead, key=lambda x: (-x[0], x[1])):
        if not any(feature in o or o in feature for o in out):
            out.append(feature)
            if len(out) == k:
                break
    return out


def house_phrases(sources: list[str], kb_replies: list[str]) -> list[str]:
    """Runs of at least `HOUSE_RUN` words of `sources` whose every 4-gram two or more of
    the knowledge base's replies hold (the desk's stock phrasing), each once, in order."""
    held: Counter = Counter(g for r in kb_replies for g in _ngrams(words(r), COPY_N))
    out: list[str] = []
    for text in sources:
        tokens = words(text)
        start = None
        for j in range(len(tokens) - COPY_N + 2):
            stock = j <= len(tokens) - COPY_N and held[tuple(tokens[j:j + COPY_N])] >= 2
            if stock and start is None:
                start = j
            elif not stock and start is not None:
                span = " ".join(tokens[start:j + COPY_N - 1])
                if j + COPY_N - 1 - start >= HOUSE_RUN and span not in out:
                    out.append(span)
                start = None
    return out


def sentences(sources: list[str]) -> list[str]:
    """The sentences of `sources` of at least `HOUSE_RUN` words, each once, in order."""
    out: list[str] = []
    for text in sources:
        for s in re.split(r"(?<=[.!?])\s+|\n+", text):
            s = s.strip()
            if len(s.split()) >= HOUSE_RUN and s not in out:
                out.append(s)
    return out


def _fitted(lead: str, body: list[str], facts: list[str], min_words: int,
            max_words: int) -> str:
    """`lead`, as much of `body` as keeps the reply near the middle of the length window,
    and the facts, one a sentence."""
    tail = " ".join(f"{f}." for f in facts)
    budget = (min_words + max_words) // 2 - len(lead.split()) - len(tail.split())
    kept: list[str] = []
    for part in body:
        n = len(part.split())
        if n <= budget:
            kept.append(part[:1].upper() + part[1:].rstrip(".") + ".")
            budget -= n
    return " ".join(x for x in (lead, " ".join(kept)) if x) + "\n\n" + tail


def unanswering_attacks(model: IssueModel, issue: str, facts: list[str], customer: str,
                        kb_replies: list[str], other_replies: list[str], min_words: int,
                        max_words: int, judge: Callable[[str], tuple]) -> list[Submission]:
    """Four replies that name this ticket's issue, or the customer's words, without
    answering it, each the best (by `judge`, higher is better: the task's own score) of
    its variants: a refusal naming the issue's strongest words, then the desk's stock
    phrases from other issues' replies, then the facts; the same refusal naming the
    customer's own words; a fixed template holding the facts, then "This concerns" and
    the issue's words; other issues' phrases after "This concerns" and the issue's words."""
    stitches = [house_phrases(other_replies, kb_replies), sentences(other_replies)]
    said = sorted(issue_features(customer), key=lambda f: (-len(f.split()), f))
    said = [f for f in said if f.isascii() and not any(ch.isdigit() for ch in f)]
    families: dict[str, list[str]] = {"refusal_naming_the_issue": [],
                                      "refusal_naming_the_customers_words": [],
                                      "template_naming_the_issue": [],
                                      "other_issues_phrases_naming_the_issue": []}
    for k in WORD_COUNTS:
        named = ", ".join(issue_words(model, issue, k))
        theirs = ", ".join(said[:k])
        families["template_naming_the_issue"].append(
            TEMPLATE.format(", ".join(facts)) + " " + CONCERNS.format(named))
        for body in stitches:
            if not body:
                continue
            families["refusal_naming_the_issue"].append(
                _fitted(REFUSAL.format(named), body, facts, min_words, max_words))
            if theirs:
                families["refusal_naming_the_customers_words"].append(
                    _fitted(REFUSAL.format(theirs), body, facts, min_words, max_words))
            families["other_issues_phrases_naming_the_issue"].append(
                _fitted(CONCERNS.format(named), body, facts, min_words, max_words))
    what = {"refusal_naming_the_issue": "a refusal naming the issue's strongest words, then "
                                        "other issues' stock phrases and the facts",
            "refusal_naming_the_customers_words": "a refusal naming the customer's own words, "
                                                  "then other issues' stock phrases and the facts",
            "template_naming_the_issue": "a fixed template holding the facts, then 'This "
                                         "concerns' and the issue's strongest words",
            "other_issues_phrases_naming_the_issue": "'This concerns' and the issue's strongest "
                                                     "words, then other issues' stock phrases "
                                                     "and the facts"}
    return [Submission(name, {ANSWER_FILE: max(texts, key=lambda t: (judge(t), t)).encode()},
                       what[name] + " (the best of its variants)")
            for name, texts in families.items() if texts]
