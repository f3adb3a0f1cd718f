"""A value redacted once is redacted wherever else the same text writes it, so one value
has one placeholder: the forms a redacted value may be written again in ("4111 1111 1111
1111" and "4111111111111111"; a name's given name or surname alone), and a phone written
with its ``+country`` code and again without it."""

from __future__ import annotations

import collections
import re
from typing import Iterable

from rlforge.ingest.redaction import numbers
from rlforge.ingest.redaction.name_evidence import name_parts, sentence_word

_ECHO_MIN = 6
# Kinds found by their context (a label, a cue word, a card word, a greeting), which the
# same value may lack where it is written again; self-evident kinds (e-mails, IPs, vendor
# keys) are found at every occurrence anyway.
_ECHOED = {"PHONE", "CARD", "SSN", "NATIONAL_ID", "PASSPORT", "ACCOUNT", "DOB", "PASSWORD",
           "API_KEY", "SECRET", "PERSON", "ADDRESS"}


def echo_forms(kind: str, raw: str) -> list[str]:
    """How a redacted value may be written again in the same text: as it was, for
    numbers without separators, and for a name its words alone (`name_parts`: "Thanks
    Kasun" after "Kasun Perera"). Short values (under 6 characters) are not echoed whole."""
    if kind not in _ECHOED:
        return []
    forms = [raw] if len(raw) >= _ECHO_MIN else []
    if kind == "PERSON":
        forms += name_parts(raw)
    if kind in ("PHONE", "CARD", "IBAN", "SSN", "NATIONAL_ID"):
        bare = re.sub(r"[ .()/-]", "", raw)
        if bare != raw and len(bare) >= _ECHO_MIN:
            forms.append(bare)
    return forms


# A phone written with its country code and again without it in one text ("+1 433 255
# 8414" ... "4332558414") is one number, even where the bare digits read as another
# country's: these echo entries carry the digits, and `unify` merges the placeholders.
_INTL, _NATIONAL = "PHONE+", "PHONE0"


def phone_forms(raw: str, e164: str) -> list[tuple[str, str]]:
    """(role, digits) entries of one redacted phone for `unify`: a number written with
    ``+CC``/``00CC`` gives its national significant number (with and without a trunk 0);
    one written nationally gives the digits as written (extension cut)."""
    body = re.split(r"[ ]?(?:x|ext\.?|extension)[ ]?[0-9]", raw)[0]
    if not body.lstrip("( ").startswith(("+", "00")):
        return [(_NATIONAL, re.sub(r"[^0-9]", "", body))]
    pn = numbers._pn()
    try:
        nsn = pn.national_significant_number(pn.parse(e164, None))
    except pn.NumberParseException:
        return []
    return [(_INTL, nsn), (_INTL, "0" + nsn.lstrip("0"))]


def unify(echo: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Placeholder renames in one text: a nationally written phone's placeholder becomes
    that of the one international number whose national digits it is."""
    intl: dict[str, set[str]] = collections.defaultdict(set)
    for digits, ph, role in echo:
        if role == _INTL:
            intl[digits].add(ph)
    return {ph: next(iter(intl[digits])) for digits, ph, role in echo
            if role == _NATIONAL and len(intl.get(digits, ())) == 1 and ph not in intl[digits]}


# Where a word opens a sentence before a lower-case word ("Will confirm", "\nGrace period").
_OPENS = re.compile(r"(?:^|[\n.!?])[ \t\"'(>*-]*$")
_LOWER_NEXT = re.compile(r"[ \t]+[a-zß-öø-ÿ]")


def echo_keeps(text: str, start: int, end: int, fragile: bool) -> bool:
    """Whether an echo of a name's word at `start`:`end` of `text` is kept: a word that is
    a common word too (`fragile`, `name_evidence.sentence_word`) where it opens a sentence
    and a lower-case word follows ("Will confirm tomorrow" in a text about Will Hunter)."""
    return fragile and bool(_OPENS.search(text, max(0, start - 8), start)) \
        and bool(_LOWER_NEXT.match(text, end))


def echo_rx(echo: Iterable[tuple[str, str, str]]) -> tuple[re.Pattern | None, dict]:
    """One expression over every value to echo, and for each written value its
    placeholder, its kind and whether it may be a common word (`echo_keeps`)."""
    where: dict[str, tuple[str, str, bool]] = {}
    for raw, ph, kind in sorted(echo):
        if kind in (_INTL, _NATIONAL):
            continue
        where.setdefault(raw, (ph, kind, kind == "PERSON" and sentence_word(raw)))
    if not where:
        return None, where
    alts = "|".join(re.escape(r) for r in sorted(where, key=lambda r: (-len(r), r)))
    return re.compile(rf"(?<![\w<])(?:{alts})(?![\w>])"), where
