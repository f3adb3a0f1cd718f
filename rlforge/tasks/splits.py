"""Train/val/test splits without leakage.

Tasks are grouped before they are split, and a whole group lands in one split:
- the generator's group key (the same ticket thread, the same incident, the same commit);
- near-duplicate texts: MinHash signatures over word 3-shingles, LSH bands to find
  candidate pairs, a Jaccard estimate to confirm them, union-find to merge groups;
- the same subject line (`subject_key`: case, digits and ids, spacing, punctuation and
  reply prefixes such as `Re:`/`AW:`/`Fwd:` set aside): a help desk's templated subjects
  ("Charged twice", "Webhooks stopped firing") carry the label of every ticket under them,
  so tickets of one subject land in one split, and so do tickets whose subjects are one
  subject written differently (`subject_families`: a typo in one word, "renewal" and
  "rnewal", or one word more). A subject of one word ("Help") joins nothing, and a
  subject shared by more than `MAX_SUBJECT_SHARE` of a build's tasks (and more than
  `MAX_SUBJECT_FLOOR`) is generic there and joins nothing either: no group swallows a
  split; a family of near-identical subjects over that share falls apart into its own
  subjects.
The split of a group is a stable hash of its smallest key, so adding data never moves an
existing group. `--split-by time` instead cuts at a date: before it train, from it on test.
Repair tasks (a workspace at a commit's parent holds every earlier fix) split by history
per repository instead of by hash: see `rlforge.tasks.lineage`.
Exact duplicates (same text and same reference) are dropped before grouping.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter, defaultdict
from typing import Sequence

from rlforge.verify.shortcuts_triage import (PLACEHOLDER, TYPO_LONG, TYPO_MIN, near_subjects,
                                             normal_subject)

SPLITS = ("train", "val", "test")
NUM_PERM = 64
BANDS = 16  # 16 bands of 4 rows: pairs at Jaccard ~0.5 and above are found with high probability
THRESHOLD = 0.6
_EMPTY = 1 << 64
MAX_SUBJECT_SHARE = 0.05  # a subject on more of the tasks than this is generic: it joins none
MAX_SUBJECT_FLOOR = 5  # ... but a subject on this many tasks or fewer is never generic
MIN_SUBJECT_WORDS = 2  # words (of two letters or more) a subject needs to join tickets


def shingles(text: str, k: int = 3) -> set[int]:
    words = re.findall(r"\w+", text.casefold())
    if len(words) < k:
        words = words + [""] * (k - len(words))
    return {int.from_bytes(hashlib.blake2b(" ".join(words[i:i + k]).encode(), digest_size=8).digest(), "big")
            for i in range(len(words) - k + 1)}


def minhash(text: str) -> tuple[int, ...]:
    """One-permutation MinHash: each shingle hash goes to one of NUM_PERM bins, the minimum
    per bin is kept, and empty bins borrow from the next filled one (densification)."""
    sig = [_EMPTY] * NUM_PERM
    for h in shingles(text):
        b, v = h % NUM_PERM, h // NUM_PERM
        if v < sig[b]:
            sig[b] = v
    filled = [i for i in range(NUM_PERM) if sig[i] != _EMPTY]
    for i in range(NUM_PERM):
        if sig[i] == _EMPTY:
            j = next((f for f in filled if f > i), filled[0])
            sig[i] = sig[j] + ((j - i) % NUM_PERM) * _EMPTY
    return tuple(sig)


def subject_key(subject: str | None) -> str | None:
    """The key tickets of one subject share (`shortcuts_triage.normal_subject`: reply
    prefixes, case, digits and ids, punctuation set aside). None for a subject too short to
    say what a ticket is about (fewer than `MIN_SUBJECT_WORDS` words of two letters or
    more: "Help", "Re: question")."""
    words = normal_subject(PLACEHOLDER.sub(r"\1", subject or "")).split()
    if sum(len(w) >= 2 and w != "0" for w in words) < MIN_SUBJECT_WORDS:
        return None
    return "subject:" + " ".join(words)


class _Sets:
    """Disjoint sets of the items 0..n-1 (union-find); a set is named by its smallest item."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        self.parent[max(ri, rj)] = min(ri, rj)


def _typo_variants(word: str) -> set[str]:
    """The word and what deleting one letter (two, for a word of `TYPO_LONG` letters or
    more) leaves: two words one typo apart (`typo_apart`) share one of these."""
    out, edge = {word}, {word}
    for _ in range(2 if len(word) >= TYPO_LONG else 1):
        edge = {w[:i] + w[i + 1:] for w in edge for i in range(len(w))}
        out |= edge
    return out


def subject_families(subjects: Sequence[str | None], cap: float) -> list[str | None]:
    """For each item's subject key (`subject_key`), the key of its family: subjects that
    are one subject written differently (`shortcuts_triage.near_subjects`: a typo in one
    word, one word more) are one family, named by its smallest key. A subject on more than
    `cap` items is generic and joins nothing (None); a family that would hold more than
    `cap` items falls apart into its own subjects. Linear in the items: candidate pairs
    come from shared keys (the subject with one word replaced by each of its typo
    variants, or one word left out), never from comparing every pair."""
    counts = Counter(s for s in subjects if s)
    keys = sorted(k for k, n in counts.items() if n <= cap)
    sets = _Sets(len(keys))
    find, union = sets.find, sets.union

    words = [k.removeprefix("subject:").split() for k in keys]
    whole = {tuple(w): i for i, w in enumerate(words)}
    blocks: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for i, ws in enumerate(words):
        for at, word in enumerate(ws):
            rest = ws[:at] + ws[at + 1:]
            if len(word) >= TYPO_MIN:
                around = f"{at} {' '.join(rest)}"
                for variant in _typo_variants(word):
                    blocks[(around, variant)].append(i)
            j = whole.get(tuple(rest)) if len(ws) >= 3 else None
            if j is not None:
                union(i, j)
    for members in blocks.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                if find(i) != find(j) and near_subjects(words[i], words[j]):
                    union(i, j)
    size: Counter = Counter()
    for i, k in enumerate(keys):
        size[find(i)] += counts[k]
    name = {k: keys[find(i)] if size[find(i)] <= cap else k for i, k in enumerate(keys)}
    return [name.get(s) if s else None for s in subjects]


def near_duplicate_groups(keys: Sequence[str], texts: Sequence[str],
                          related: Sequence[Sequence[str]] | None = None,
                          subjects: Sequence[str | None] | None = None) -> list[str]:
    """For each item, the representative key of its group (min key): items sharing a key
    (their own, or one of `related`, e.g. the ticket a repair task shows), a subject key
    (`subjects`, from `subject_key`, or one of its family, `subject_families`; one on more
    than `MAX_SUBJECT_SHARE` of the items, and more than `MAX_SUBJECT_FLOOR`, joins none)
    or a near-duplicate text are one group."""
    # A redaction placeholder is a keyed hash (`PLACEHOLDER`): groups read its kind alone.
    texts = [PLACEHOLDER.sub(r"<\1>", t) for t in texts]
    sets = _Sets(len(keys))
    find, union = sets.find, sets.union

    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        for k in (key, *(related[i] if related else ())):
            union(i, first.setdefault(k, i))
    families = subject_families(subjects or (), max(MAX_SUBJECT_SHARE * len(keys), MAX_SUBJECT_FLOOR))
    shared = Counter(f for f in families if f)
    for i, family in enumerate(families):
        if family and shared[family] > 1:
            union(i, first.setdefault(family, i))
    sigs = [minhash(t) for t in texts]
    rows = NUM_PERM // BANDS
    for b in range(BANDS):
        buckets: dict[tuple, int] = {}
        for i, sig in enumerate(sigs):
            band = sig[b * rows:(b + 1) * rows]
            j = buckets.setdefault(band, i)
            if j != i and find(i) != find(j):
                agree = sum(x == y for x, y in zip(sigs[i], sigs[j])) / NUM_PERM
                if agree >= THRESHOLD:
                    union(i, j)
    rep: dict[int, str] = {}
    for i in range(len(keys)):
        r = find(i)
        rep[r] = min(rep.get(r, keys[i]), keys[i])
    return [rep[find(i)] for i in range(len(keys))]


def hash_split(group: str, ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> str:
    """A stable split for a group key."""
    x = int.from_bytes(hashlib.sha256(group.encode()).digest()[:8], "big") / 2 ** 64
    if x < ratios[0]:
        return "train"
    return "val" if x < ratios[0] + ratios[1] else "test"


def time_split(when: dt.datetime | None, cutoff: dt.datetime) -> str:
    """`test` from `cutoff` on; a time without a zone (a `--cutoff` date, a ticket export's
    local stamp) is read as UTC, so zoned and unzoned times compare."""
    if when is None:
        return "train"
    return "train" if _utc(when) < _utc(cutoff) else "test"


def _utc(when: dt.datetime) -> dt.datetime:
    return when.replace(tzinfo=dt.timezone.utc) if when.tzinfo is None else when


def exact_key(text: str, reference: dict) -> str:
    norm = " ".join(re.findall(r"\w+", text.casefold()))
    return hashlib.sha256((norm + "\0" + json.dumps(reference, sort_keys=True, default=str)).encode()).hexdigest()
