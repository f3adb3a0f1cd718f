"""The shortcut battery for `tickets.triage`: the label a policy guesses without reading.

A triage task is worth learning when its label follows from what the customer means, not
from a cue a policy picks up first: the label the training tickets carry most often (it
is told no reason, it just answers that), the label whose own words the ticket holds
("billing" in a ticket about billing), or the label of a ticket it has already seen that
is a near copy of this one (a template's draws, a customer writing twice). Each strategy
reads what the policy sees -- the subject, the message and the listed labels -- and, for
the two that learn from training, the other tickets of the same help desk and field (what
a policy trained on them would have seen). `tickets.triage` screens its candidates with
them: a ticket a strategy labels right is not emitted (the reason names the strategy), and
the majority label is capped so that no label is most frequent on its own
(`balance_labels`). `rlforge validate` scores the text-only strategy on every task.

Across splits, the label of a ticket of another split with the same subject line
(`same_subject_label`, subjects compared by `normal_subject`): a help desk's templated
subjects carry their label, so a policy trained on one split reads the answer of a test
ticket off its subject. Splits keep one subject's tickets together
(`rlforge.tasks.splits.subject_key`), and `benchmarks/shortcuts.py --tickets` measures it.

The plain nearest neighbour (the label of the most similar other ticket, however far) is
measured (`NEAREST`) but not screened: it is what a classifier that learned the task does,
and dropping what it gets right would keep the mislabelled tickets.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

COPY_SIMILARITY = 0.6  # word-set Jaccard at and above which a ticket is a near copy
MIN_WORD = 3
STOP = frozenset("""the and for you your our with this that have has was were are but not
from they them their can could would will just what when there here been into about please
thanks thank hello dear team any all get got also out one its it's""".split())


#: A redaction placeholder (`<PERSON_3f2a1b>`): a keyed hash, so another database's key
#: writes another one for the same value; what a ticket says is its kind alone.
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*?)_[0-9a-f]{6,}>", re.IGNORECASE)


def words(text: str) -> set[str]:
    """The content words of a text, lower case (a redaction placeholder is its kind)."""
    return {w for w in re.findall(r"[a-z][a-z0-9']+", PLACEHOLDER.sub(r"\1", text).lower())
            if len(w) >= MIN_WORD and w not in STOP}


def _stem(word: str) -> str:
    return word[:max(4, len(word) - 3)] if len(word) > 5 else word


class Seen:
    """The tickets a policy could have trained on: their labels counted, and their word
    sets indexed to find a near copy fast (prefix filtering: two sets with a Jaccard of at
    least t share one of the first |A| - ceil(t|A|) + 1 words of each, words ordered
    rarest first over `corpus`)."""

    def __init__(self, corpus: list[str], threshold: float = COPY_SIMILARITY):
        df = Counter(w for text in corpus for w in words(text))
        self.rank = {w: (n, w) for w, n in df.items()}
        self.threshold = threshold
        self.labels: Counter = Counter()
        self.sets: list[tuple[frozenset[str], str]] = []
        self.index: dict[str, list[int]] = defaultdict(list)

    def _prefix(self, ws: set[str] | frozenset[str]) -> list[str]:
        ordered = sorted(ws, key=lambda w: self.rank.get(w, (0, w)))
        return ordered[:len(ordered) - math.ceil(self.threshold * len(ordered)) + 1]

    def add(self, text: str, label: str) -> None:
        ws = frozenset(words(text))
        self.labels[label] += 1
        self.sets.append((ws, label))
        for w in self._prefix(ws):
            self.index[w].append(len(self.sets) - 1)

    def copy_of(self, ws: set[str]) -> tuple[float, str] | None:
        """(similarity, label) of the most similar seen ticket at or above the threshold."""
        best: tuple[float, str] | None = None
        for i in {i for w in self._prefix(ws) for i in self.index.get(w, ())}:
            theirs, label = self.sets[i]
            sim = len(ws & theirs) / len(ws | theirs)
            if sim >= self.threshold and (best is None or sim > best[0]):
                best = (sim, label)
        return best

    def nearest(self, ws: set[str]) -> tuple[float, str] | None:
        """(similarity, label) of the most similar seen ticket, however similar (a scan)."""
        scored = ((len(ws & t) / len(ws | t), label) for t, label in self.sets if ws | t)
        return max(scored, default=None, key=lambda x: x[0])


@dataclass
class TriageView:
    """A triage question as the policy sees it (the subject and message as `text`, the
    listed labels) and, for the strategies that learn, the tickets it could have seen."""

    text: str
    labels: list[str]
    seen: Seen | None = None
    _words: set[str] | None = field(default=None, repr=False)

    @property
    def own_words(self) -> set[str]:
        if self._words is None:
            self._words = words(self.text)
        return self._words


def label_words(label: str) -> list[str]:
    """The words of a label (`login_access` -> login, access)."""
    return [w for w in re.findall(r"[a-z][a-z0-9]+", label.lower()) if len(w) >= MIN_WORD]


def label_in_text(v: TriageView) -> str | None:
    """The label whose words (by stem) the ticket holds most often, when one leads."""
    stems = Counter(_stem(w) for w in re.findall(r"[a-z][a-z0-9]+", v.text.lower()))
    hits = Counter({label: sum(stems[_stem(w)] for w in label_words(label)) for label in v.labels})
    top = hits.most_common(2)
    if not top or top[0][1] == 0 or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def majority_label(v: TriageView) -> str | None:
    """The label the seen tickets carry most often, when one leads."""
    top = v.seen.labels.most_common(2) if v.seen else []
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def near_copy_label(v: TriageView) -> str | None:
    """The label of a seen ticket that is a near copy of this one (word-set Jaccard at
    least `COPY_SIMILARITY`)."""
    best = v.seen.copy_of(v.own_words) if v.seen and v.own_words else None
    return best[1] if best else None


#: Reply and forward prefixes of mail clients and help desks, in several languages
#: (`Re[2]:`, `AW:`, `WG:`, `SV:`, `Fwd:`, `TR:`, `RIF:`), repeated or not.
REPLY_PREFIX = re.compile(r"^(?:\W*(?:re|aw|wg|sv|vs|fw|fwd|tr|rif|ri|antw|odp)\s*"
                          r"(?:\[\d+\]|\(\d+\))?\s*:)+", re.I)


def normal_subject(subject: str | None) -> str:
    """A subject line as tickets of one template share it: reply prefixes dropped, case
    folded, every word holding a digit (an order number, `v2`, `10+`) one `0`, punctuation
    and spacing gone."""
    text = REPLY_PREFIX.sub("", (subject or "").strip())
    return " ".join("0" if any(c.isdigit() for c in w) else w
                    for w in re.findall(r"[^\W_]+", text.casefold()))


TYPO_MIN = 5  # a word shorter than this is never read as another word's typo
TYPO_LONG = 8  # two words this long or longer may be two edits apart


def typo_distance(a: str, b: str, most: int) -> int:
    """The optimal-string-alignment distance of two words (insertions, deletions,
    substitutions and swaps of two neighbours), or `most + 1` once it is sure to exceed
    `most`."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        now = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            now[j] = min(row[j] + 1, now[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                now[j] = min(now[j], before[j - 2] + 1)
        if min(now) > most:
            return most + 1
        before, row = row, now
    return row[-1]


def typo_apart(a: str, b: str) -> bool:
    """Whether two different words are one typo apart ("renewal", "rnewal"): one edit, or
    two when both have `TYPO_LONG` letters or more; never a word shorter than `TYPO_MIN`
    letters or holding a digit ("cart" and "card" are two words, "0" an order number)."""
    if a == b or min(len(a), len(b)) < TYPO_MIN or any(c.isdigit() for c in a + b):
        return False
    most = 2 if min(len(a), len(b)) >= TYPO_LONG else 1
    return typo_distance(a, b, most) <= most


def near_subjects(a: list[str], b: list[str]) -> bool:
    """Whether two normalised subjects (`normal_subject`, as words) are one subject
    written twice: the same words but one, which is a typo of the other's (`typo_apart`),
    or the same words in the same order with one more in the longer of three or more."""
    if len(a) == len(b):
        diff = [(x, y) for x, y in zip(a, b) if x != y]
        return len(diff) == 1 and typo_apart(*diff[0])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return len(long) == len(short) + 1 >= 3 and any(
        long[:i] + long[i + 1:] == short for i in range(len(long)))


def same_subject_label(subject: str | None, others: list[tuple[str | None, str]],
                       near: bool = False) -> str | None:
    """The label most of the `others` (subject, label: tickets of another split) with this
    ticket's normalised subject carry, when one leads; with `near`, also those whose
    subject is a near-identical one (`near_subjects`: a typo, a word more)."""
    mine = normal_subject(subject)
    if not mine:
        return None
    words = mine.split()
    top = Counter(label for theirs, label in others
                  if (other := normal_subject(theirs)) == mine
                  or near and other and near_subjects(words, other.split())).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def nearest_label(v: TriageView) -> str | None:
    """The label of the most similar seen ticket, however similar (measured only)."""
    best = v.seen.nearest(v.own_words) if v.seen and v.own_words else None
    return best[1] if best else None


#: The screened strategies, by name. Each returns a guess or None where it does not apply.
STRATEGIES: dict[str, Callable[[TriageView], str | None]] = {
    "label_in_text": label_in_text,
    "majority_label": majority_label,
    "near_copy_label": near_copy_label,
}
#: Measured beside them, never screened (see the module docstring).
NEAREST: dict[str, Callable[[TriageView], str | None]] = {"nearest_label": nearest_label}
TEXT_ONLY = ("label_in_text",)  # what `rlforge validate` can run from a task alone


def guesses(v: TriageView, strategies=None) -> dict[str, str]:
    """Every strategy's guess (those that apply), by strategy name."""
    return {name: guess for name, strategy in (strategies or STRATEGIES).items()
            if (guess := strategy(v))}


def solved(v: TriageView, answer: str, strategies=None) -> dict[str, str]:
    """The strategies whose guess is the answer (labels compare as the verifier does:
    case, spaces and underscores aside)."""
    want = _norm(answer)
    return {n: g for n, g in guesses(v, strategies).items() if _norm(g) == want}


def _norm(label: str) -> str:
    return re.sub(r"[\s_]+", " ", label.strip().lower())


def balance_labels(labels: list[str]) -> dict[str, int]:
    """How many tickets of each label to keep so that no label is most frequent on its
    own: the most frequent is cut to the count of the next (a majority-label guess then
    has no majority to learn). Labels not cut are kept whole."""
    counts = Counter(labels).most_common()
    keep = dict(counts)
    if len(counts) >= 2 and counts[0][1] > counts[1][1]:
        keep[counts[0][0]] = counts[1][1]
    return keep


def view_of_task(task_dir: Path) -> TriageView | None:
    """The text-only view of a rendered triage task (subject, message, listed labels)."""
    text = (Path(task_dir) / "instruction.md").read_text(encoding="utf-8", errors="replace")
    body = re.search(r"\*\*Message:\*\*\n\n~~~text\n(.*?)~~~", text, re.S)
    if body is None:
        return None
    subject = re.search(r"^\*\*Subject:\*\* (.*)$", text, re.M)
    labels = re.findall(r"^- `([^`]+)`", text.split("options:", 1)[-1], re.M)
    return TriageView(f"{subject.group(1) if subject else ''}\n{body.group(1)}", labels)
