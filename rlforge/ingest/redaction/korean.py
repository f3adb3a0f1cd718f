"""Korean names written in Latin letters: which words are romanised Korean syllables.

Why a module of its own: the name lists (`name_lists`) know Korean surnames ("Kim",
"Jang", "Kwon"), most of them common words too, but few Korean given names, which are two
syllables written with a hyphen ("Seo-yeon", "Ji-Hoon") or run together ("Jiwon") and
are too many to list. A syllable is a closed shape, given by the romanisation rules
(Revised Romanization, with the older spellings people still write: "oo", "ee", "ou",
"w" and "y" before a vowel): an initial consonant or none, a vowel, a final consonant or
none. `people` reads a hyphenated pair of such syllables as a given name, unless both
halves are common words ("Check-in", "Pop-up", "Top-up"), and a listed one-syllable
surname beside it as the family name ("Kim Min-jun", "Seo-yeon Park", "JANG Jae-won").
"""

from __future__ import annotations

import functools
import re

from rlforge.ingest.redaction.name_lists import Words

_INITIAL = "(?:kk|tt|pp|ss|jj|ch|[gkndtrlmbpsjhwy])?"
_VOWEL = "(?:yae|yeo|wae|ae|ya|eo|ye|wa|oe|yo|wo|we|wi|yu|eu|ui|oo|ee|ou|a|e|o|u|i)"
_FINAL = "(?:ng|ck|[nmlkpbgrth])?"
_SYLLABLE = re.compile(f"{_INITIAL}{_VOWEL}{_FINAL}")


@functools.lru_cache(maxsize=65536)
def syllable(low: str) -> bool:
    """Whether the case-folded word `low` is one romanised Korean syllable ("seo", "yeon",
    "hwang")."""
    return len(low) <= 6 and bool(_SYLLABLE.fullmatch(low))


def given_shape(low: str) -> bool:
    """Two syllables joined by a hyphen ("seo-yeon", "ji-hoon", "check-in")."""
    head, sep, tail = low.partition("-")
    return bool(sep) and syllable(head) and syllable(tail)


def given(low: str, common: Words) -> bool:
    """A hyphenated Korean given name: two syllables, not both of them common words of a
    language (`common`: "check-in", "set-up", "pop-up" are no names)."""
    if not given_shape(low):
        return False
    head, _, tail = low.partition("-")
    return not (head in common and tail in common)


def surname(low: str, surnames: Words) -> bool:
    """A one-syllable word the name lists hold as a surname ("kim", "jang", "kwon")."""
    return "-" not in low and syllable(low) and low in surnames


def written(word: str) -> bool:
    """A hyphenated given name in a way people write it: "Seo-yeon", "Seo-Yeon", "SEO-YEON",
    "seo-yeon" (one case for each half, the first letter capital or not)."""
    head, sep, tail = word.partition("-")
    if not sep or not head or not tail:
        return False
    if word.isupper() or word.islower():
        return True
    return head[0].isupper() and head[1:].islower() and (tail.islower() or tail[0].isupper() and tail[1:].islower())
