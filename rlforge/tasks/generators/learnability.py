"""Whether a label field can be learned from ticket text, measured before tasks are made.

A triage task teaches something only if its label follows from the text. Before any task
of a label field is emitted, a cheap text classifier (TF-IDF of words and word pairs, a
linear SVM; scikit-learn, the `learn` extra) is cross-validated on the tickets of
that field, and compared with two baselines: always guessing the most common label, and
the same classifier trained on shuffled labels (what it scores when labels carry no
signal). The field is emitted only when the classifier beats the better baseline by a
clear margin (`min_lift`, accuracy points). Everything is fixed by the seed: the sample,
the folds and the shuffle.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import asdict, dataclass

from rlforge.errors import UserError

MIN_LIFT = 0.10      # accuracy points the classifier must gain over the better baseline
MAX_ROWS = 6000      # tickets measured per field (a stable sample beyond that)
FOLDS = 5


@dataclass(frozen=True)
class Learnability:
    """Cross-validated figures for one label field (accuracies and macro-F1 in [0, 1])."""

    n: int
    n_labels: int
    folds: int
    accuracy: float
    macro_f1: float
    majority: float
    majority_f1: float
    shuffled: float
    shuffled_f1: float

    @property
    def lift(self) -> float:
        """Accuracy over the better of the two baselines."""
        return round(self.accuracy - max(self.majority, self.shuffled), 4)

    def passes(self, min_lift: float = MIN_LIFT) -> bool:
        return self.lift >= min_lift

    def summary(self) -> str:
        """The figures on one line (no parentheses: build-tasks groups reasons by the text
        before the first ' (')."""
        return (f"{self.folds}-fold accuracy {self.accuracy:.3f}, macro-F1 {self.macro_f1:.3f}; "
                f"majority label {self.majority:.3f}/{self.majority_f1:.3f}; shuffled labels "
                f"{self.shuffled:.3f}/{self.shuffled_f1:.3f}; lift {self.lift:+.3f}; "
                f"{self.n:,} tickets, {self.n_labels} labels")

    def to_dict(self) -> dict:
        return {**asdict(self), "lift": self.lift}

    def metadata(self) -> dict[str, float | int]:
        """Flat keys for a task's `[metadata.rlforge]`."""
        return {"learn_accuracy": self.accuracy, "learn_macro_f1": self.macro_f1,
                "learn_majority": self.majority, "learn_shuffled": self.shuffled,
                "learn_lift": self.lift, "learn_tickets": self.n}


def _sample(texts: list[str], labels: list[str], seed: int, limit: int):
    if len(texts) <= limit:
        return texts, labels
    order = sorted(range(len(texts)), key=lambda i: hashlib.sha256(
        f"{seed}:{i}:{texts[i]}".encode()).hexdigest())[:limit]
    order.sort()
    return [texts[i] for i in order], [labels[i] for i in order]


def measure(texts: list[str], labels: list[str], seed: int, folds: int = FOLDS,
            max_rows: int = MAX_ROWS) -> Learnability:
    """Cross-validate the classifier and both baselines on `texts` labelled `labels`.

    Raises:
        UserError: scikit-learn is not installed.
    """
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.metrics import accuracy_score, f1_score
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from sklearn.pipeline import make_pipeline
        from sklearn.svm import LinearSVC
    except ImportError:
        raise UserError("tickets.triage measures whether labels are learnable with "
                        "scikit-learn, a dependency of rlforge missing here: "
                        "pip install scikit-learn") from None
    texts, labels = _sample(texts, labels, seed, max_rows)
    counts = Counter(labels)
    k = max(2, min(folds, min(counts.values())))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % (2 ** 32))

    def model():
        return make_pipeline(
            TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), min_df=2, max_features=100_000),
            LinearSVC(C=0.5, random_state=seed % (2 ** 32)))

    def score(ys: list[str]) -> tuple[float, float]:
        predicted = cross_val_predict(model(), texts, ys, cv=splitter)
        return (round(float(accuracy_score(ys, predicted)), 4),
                round(float(f1_score(ys, predicted, average="macro", zero_division=0)), 4))

    accuracy, macro_f1 = score(labels)
    shuffled = list(labels)
    random.Random(f"learnability:{seed}").shuffle(shuffled)
    shuffled_acc, shuffled_f1 = score(shuffled)
    top, n_top = counts.most_common(1)[0]
    majority = n_top / len(labels)
    # Always answering `top`: F1 of that label is 2p/(1+p), every other label scores 0.
    majority_f1 = (2 * majority / (1 + majority)) / len(counts)
    return Learnability(n=len(labels), n_labels=len(counts), folds=k, accuracy=accuracy,
                        macro_f1=macro_f1, majority=round(majority, 4),
                        majority_f1=round(majority_f1, 4), shuffled=shuffled_acc,
                        shuffled_f1=shuffled_f1)
