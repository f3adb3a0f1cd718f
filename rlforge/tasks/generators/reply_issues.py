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

from dataclasses import dataclass
from typing import Callable, Sequence

from rlforge.tasks.spec import ANSWER_FILE, Submission
from rlforge.tasks.splits import hash_split
from rlforge.verify.standalone.replies import ISSUE_MARGIN, issue_features, issue_scores

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
