"""Person names in the airline style of passenger lists, rooming lists and manifests:
``SURNAME/GIVEN`` in capitals, often with a title after it (``NGATA/AROHA MS``).

Why a rule of its own: the run of capitalised words that finds other names never reads
across a slash, and the shape is shared by abbreviations that are no names (``TCP/IP``,
``AND/OR``, ``N/A``, ``I/O``, airport pairs such as ``LHR/JFK``). The title settles it:
with one of the passenger titles after it, any two parts of two or more letters are a
name (the span takes the title too: a title before a line break would lead the next
line's first word into a name). Without one, the part after the slash must be a given
name of the curated list, or one of the large lists that is no known word of a language
(not "DEV/PROD"), of three or more letters; the part before it a surname the lists hold
or a word no list knows; and both must have a vowel (not "LHR/JFK"). The value a
pseudonym is keyed on is the name in the order ``given surname``, so that ``NGATA/AROHA``
and ``Aroha Ngata`` in one text are one person.
"""

from __future__ import annotations

import re

from rlforge.ingest.redaction.name_evidence import _evidence, _listed
from rlforge.ingest.redaction.rules import Span

# The titles a passenger name record writes after the given name.
TITLES = ("MRS", "MR", "MSTR", "MISS", "MS", "DR", "MX", "PROF", "CHD", "INF")
_VOWEL = re.compile("[AEIOUY]")
_SHAPE = re.compile(r"([A-Z][A-Z'-]*[A-Z])/([A-Z]+)((?:[ ][A-Z]+)*)")


def _surname_or_unlisted(low: str) -> bool:
    ev = _evidence()
    return _listed(low, ev.lists.surnames) or low not in ev.lists.known and not _listed(low, ev.lists.given)


def _given(low: str) -> bool:
    ev = _evidence()
    return _listed(low, ev.strong) or _listed(low, ev.lists.given) and low not in ev.lists.known


def judge(tok: str) -> list[Span]:
    """The PERSON span of one airline-style name, or none.

    Args:
        tok: what the rule matched (`rules.AIRLINE`: ``SURNAME/GIVEN``, then up to two
            words in capitals, a second given name or a title).

    Returns:
        One span over the surname, the slash, the given names and the title, or none.
    """
    m = _SHAPE.fullmatch(tok)
    if m is None:
        return []
    surname, given, rest = m.group(1), m.group(2), m.group(3).split()
    titled = bool(rest) and rest[-1] in TITLES
    more = rest[:-1] if titled else []  # "SMITH/JOHN ANDREW MR": a second given name
    if len(given) < 2 or len(surname.replace("'", "").replace("-", "")) < 2:
        return []
    if not titled and not (len(given) > 2 and _VOWEL.search(given) and _VOWEL.search(surname)
                           and _given(given.casefold()) and _surname_or_unlisted(surname.casefold())):
        return []
    end = len(tok) if titled else m.end(2)
    value = " ".join([given, *more, surname]).casefold()
    return [(0, end, "PERSON", value)]
