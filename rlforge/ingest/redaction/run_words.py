"""The words of a run of capitalised words, as people and address detection read them.

Why a module of its own: `people` (names) and `addresses` (streets, postcodes) both walk
the same tokens of a run: where each word starts and ends, its case-folded form, whether
a sentence ends after it and whether a line break or a comma stands before it.
"""

from __future__ import annotations

import re

from rlforge.ingest.redaction.words import (EVIDENCED_TITLES, FLOOR_SIDES, HOUSE_NUMBER_SIGNS, STREET_WORDS_AFTER,
                                            STREET_WORDS_BEFORE, TITLES, UNIT_WORDS)

# Latin-1 and Latin Extended-A/B letters (Polish "ł", Turkish "ş", Czech "ř"); the
# extended blocks mix cases, so they count as both.
U, L = "A-ZÀ-ÖØ-ÞĀ-ɏḀ-ỿ", "a-zß-öø-ÿĀ-ɏḀ-ỿ"
INITIAL = re.compile(rf"[{U}]\.")
_END_PUNCT = ".,:;!?"
_ABBREVIATIONS = TITLES | EVIDENCED_TITLES | UNIT_WORDS | FLOOR_SIDES | HOUSE_NUMBER_SIGNS | {w for w in STREET_WORDS_AFTER | STREET_WORDS_BEFORE if len(w) <= 4}


class Tok:
    """One word of a run and what stands around it."""

    __slots__ = ("start", "end", "text", "word", "low", "stop", "line")

    def __init__(self, m: re.Match, prev_end: int, run: str):
        self.start, self.text = m.start(), m.group()
        self.word = self.text.rstrip(_END_PUNCT)
        self.end = self.start + len(self.word)
        self.low = self.word.casefold()
        # a full stop after a word ends the sentence (not after a title or an initial)
        self.stop = self.text != self.word and self.text[len(self.word):][:1] in ".!?:;" and not (
            self.text.rstrip(",").endswith(".") and (self.low in _ABBREVIATIONS or len(self.word) <= 2
                                         or self.low.endswith("str"))
            or INITIAL.fullmatch(self.text))
        self.line = "\n" in run[prev_end:self.start] or "," in run[prev_end:self.start]


def tokens(run: str, rx: re.Pattern) -> list[Tok]:
    """The tokens of `run` that `rx` matches, in order.

    Args:
        run: the text of one run.
        rx: the pattern of one token.

    Returns:
        One `Tok` per match.
    """
    out, prev = [], 0
    for m in rx.finditer(run):
        out.append(Tok(m, prev, run))
        prev = m.end()
    return out
