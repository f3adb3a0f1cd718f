"""Postal addresses in a run of capitalised words and numbers.

Why a module of its own: `people` judges each run for names and addresses; streets,
house numbers, postcodes and towns are a concern of their own ("12 Oak Street",
"Lindenstraße 5", "Via Roma 12", "12 rue Victor Hugo", "SW1A 1AA", "10115 Berlin").
"""

from __future__ import annotations

import functools
import re

from rlforge.ingest.redaction.run_words import L, U, Tok
from rlforge.ingest.redaction.words import (FLOOR_SIDES, GREETINGS, HOUSE_NUMBER_SIGNS, PARTICLES, STREET_ENDINGS, STREET_WORDS_AFTER,
                                            STREET_WORDS_BEFORE, STREET_WORDS_NAMING, TITLES, TOWN_JOINERS,
                                            UNIT_WORDS)

_NUMBER = re.compile(r"[0-9]{1,5}[A-Za-z]?(?:[-/][0-9]{1,4}[A-Za-z]?)?")
_ZIP5 = re.compile(r"[0-9]{5}")
_US_ZIP = re.compile(r"[0-9]{5}(?:-[0-9]{4})?")
_STATE = re.compile(r"[A-Z]{2}")
_GB_OUT = re.compile(r"[A-Z]{1,2}[0-9][A-Z0-9]?")
_GB_IN = re.compile(r"[0-9][A-Z]{2}")
_NL_PC = re.compile(r"[1-9][0-9]{3}(?:[A-Z]{2})?")
_PT_PL_PC = re.compile(r"[1-9][0-9]{3}-[0-9]{3}|[0-9]{2}-[0-9]{3}")  # "1100-053 Lisboa", "00-590 Warszawa"
_NL_LETTERS = re.compile(r"[A-Z]{2}")
_PROVINCE = re.compile(r"\([A-Z]{2}\)")
_FLOOR = re.compile(r"[0-9]{1,3}[ºª°][A-Za-z]?")  # "3º", "2ºB", "1ª"
_TOWN = re.compile(rf"[{U}][{L}]+(?:['’ -]?[{U}{L}][{L}]+)*")


def street_word(low: str) -> bool:
    """Whether `low` is a street word that follows the street's name ("street", "road")."""
    return low in STREET_WORDS_AFTER or low.rstrip(".") in STREET_WORDS_AFTER


def street_word_before(t: Tok) -> bool:
    """Whether `t` is a street word that precedes the street's name ("rue", "Via"), or an
    abbreviation of one that must be written with its full stop ("ul.", "al.", "pl.")."""
    return t.low in STREET_WORDS_BEFORE or (t.text[len(t.word):len(t.word) + 1] == "."
                                            and t.low + "." in STREET_WORDS_BEFORE)


_STRONG_ENDINGS = ("straße", "strasse", "str", "weg", "gasse", "allee", "platz", "straat", "laan",
                   "plein", "gracht", "kade", "singel", "dijk", "steeg", "dreef")


_STRONG_RX = re.compile("(?:" + "|".join(_STRONG_ENDINGS) + ")$")
_WEAK_RX = re.compile("(?:" + "|".join(e.rstrip(".") for e in STREET_ENDINGS) + ")$")


@functools.lru_cache(maxsize=65536)
def _compound_street(low: str) -> int:
    """2 for a word ending in a street word ("Lindenstraße", "Kerkstraat"), 1 for a weaker
    ending that other words share ("Lindenring", "Rosenhof": a postcode must follow)."""
    part = low.rsplit("-", 1)[-1].rstrip(".")
    if not part.isalpha():
        return 0
    for strong, rx in ((2, _STRONG_RX), (1, _WEAK_RX)):
        m = rx.search(part)
        if m and (m.start() >= 3 or ("-" in low and m.start() == 0)):
            return strong
    return 0


def _number(t: Tok) -> bool:
    return bool(_NUMBER.fullmatch(t.word))


def _streets(toks: list[Tok]) -> list[tuple[int, int]]:
    """Token index ranges [i, j] of street lines (with their house number)."""
    found = []
    n = len(toks)
    for i, t in enumerate(toks):
        low = t.low
        strength = _compound_street(low) if _is_capital(t) else 0
        if strength and i + 1 < n and _number(toks[i + 1]) and not t.stop and (
                strength == 2 or any(_postcode(toks, k) is not None
                                     for k in range(i + 2, min(n, i + 5)))):
            start = i  # "Lindenstraße 5", "van der Dussenstr. 2"
            while start > 0 and toks[start - 1].low in PARTICLES:
                start -= 1
            found.append((start, i + 1))
        if street_word_before(t) and not t.stop:
            j = i
            while j + 1 < n and j - i < 5 and not toks[j].stop and (
                    toks[j + 1].low in PARTICLES or _is_capital(toks[j + 1])):
                j += 1
            if j == i:
                continue
            if i > 0 and _number(toks[i - 1]):  # "12, rue de la Paix"
                found.append((i - 1, j))
            elif j + 1 < n and toks[j + 1].line and _postcode(toks, j + 1) is not None:
                found.append((i, j))  # "rue de Neveu, 11426 Hamon": a postcode, no number
            elif j + 1 < n and _number(toks[j + 1]) and not toks[j].stop:  # "Via Roma 12"
                found.append((i, j + 1))
            elif j + 2 < n and toks[j + 1].low in HOUSE_NUMBER_SIGNS and _number(toks[j + 2]):
                found.append((i, j + 2))  # "Rua do Ouro, n.º 45"
        if street_word(low) and i >= 2 and _is_capital(t):  # "12 Oak Street"
            k = i - 1
            while k > 0 and i - k < 4 and _is_capital(toks[k]) and not _number(toks[k]) \
                    and not toks[k].stop:
                k -= 1
            if k < i - 1 + 1 and _number(toks[k]) and k < i - 1 and not toks[k].stop:
                found.append((k, i))
    return found


def _is_capital(t: Tok) -> bool:
    return t.word[:1].isupper() or t.word[:1] == "("


def _postcode(toks: list[Tok], i: int) -> int | None:
    """If a postcode starts at token i, the index of its last token (with what belongs
    after it: the town after a continental postcode, the province in brackets)."""
    n = len(toks)
    w = toks[i].word
    nxt = toks[i + 1].word if i + 1 < n else ""
    if _STATE.fullmatch(w) and i + 1 < n and _US_ZIP.fullmatch(nxt):
        return i + 1
    if _GB_OUT.fullmatch(w) and _GB_IN.fullmatch(nxt) and not toks[i].stop:
        return i + 1
    if _NL_PC.fullmatch(w) and (len(w) == 6 or (_NL_LETTERS.fullmatch(nxt) and not toks[i].stop)):
        j = i if len(w) == 6 else i + 1
        return _town_after(toks, j)
    if (_ZIP5.fullmatch(w) or _PT_PL_PC.fullmatch(w)) and not toks[i].stop and i + 1 < n \
            and _TOWN.fullmatch(toks[i + 1].word):
        return _town_after(toks, i)
    return None


def _town_after(toks: list[Tok], j: int) -> int:
    n = len(toks)
    k = j
    while k + 1 < n and k - j < 5 and not toks[k].stop and (
            _is_capital(toks[k + 1]) or toks[k + 1].low in TOWN_JOINERS) \
            and not (k > j and toks[k + 1].line):
        k += 1
        if _PROVINCE.fullmatch(toks[k].word):
            break
    while k > j and toks[k].low in TOWN_JOINERS:
        k -= 1
    return k


def addresses(toks: list[Tok]) -> list[tuple[int, int]]:
    """Token index ranges [i, j] of the addresses in a run's tokens: a street (a street word
    with a house number) or a postcode of a supported country, with the unit, town, state
    and postcode lines around it."""
    n = len(toks)
    out: list[tuple[int, int]] = []
    for i, j in _streets(toks):
        if any(a <= i <= b for a, b in out):
            continue
        if i >= 1 and toks[i - 1].low.rstrip(".") in UNIT_WORDS:
            i -= 1  # "Flat 3, 12 High Street"
        elif i >= 2 and toks[i - 2].low.rstrip(".") in UNIT_WORDS and _number(toks[i - 1]):
            i -= 2  # "Flat 35X, Valerie Hollow"
        # units, town and postcode lines that follow the street
        k, end = j, j
        while k + 1 < n and k - j < 9 and not toks[k].stop:
            k += 1
            pc = _postcode(toks, k)
            if pc is not None:
                end = pc
                break
            if toks[k].low.rstrip(".") in UNIT_WORDS and k + 1 < n and _number(toks[k + 1]):
                end = k = k + 1
                continue
            if _FLOOR.fullmatch(toks[k].word) or toks[k].low in FLOOR_SIDES:
                continue  # "3º izq.", "2ºB": taken if a postcode follows
            if not (_is_capital(toks[k]) or toks[k].low in PARTICLES):
                break
        out.append((i, end))
    taken = {x for a, b in out for x in range(a, b + 1)}
    for i in range(n):
        if i in taken:
            continue
        pc = _postcode(toks, i)
        if pc is None or ((_ZIP5.fullmatch(toks[i].word) or _PT_PL_PC.fullmatch(toks[i].word))
                          and not _house_before(toks, i)):
            continue
        # the lines before the postcode: town, street, unit (not across a sentence end)
        k = i
        while k > 0 and i - k < 7 and not toks[k - 1].stop and (k - 1) not in taken and (
                _is_capital(toks[k - 1]) or _number(toks[k - 1]) or toks[k - 1].low in PARTICLES) \
                and toks[k - 1].low not in GREETINGS and toks[k - 1].low not in TITLES:
            k -= 1
        while k < i and toks[k].low in PARTICLES:
            k += 1
        out.append((k, pc))
        taken |= set(range(k, pc + 1))
    return out


def _house_before(toks: list[Tok], i: int) -> bool:
    """Whether a house number stands in the few tokens before a postcode at `i`: a number
    with a word beside it ("Lindenstraße 5, 10115 Berlin"). Numbers with only numbers
    around them up to the postcode are a list of values ("ids 75428, 64748, 97777
    SendWorker"), not a house number and a postcode."""
    lo = max(0, i - 5)
    return any(_number(toks[k]) and any(not _number(toks[x]) for x in range(max(lo, k - 1), i)
                                        if x != k)
               for k in range(lo, i))


def street_names(toks: list[Tok]) -> list[tuple[int, int]]:
    """Token index ranges [i, j] of streets named without a house number, which are no
    address and no person either ("the branch on Jackson Street", "a loja da Rua Maria
    Antônia", "Bremen, Goetheplatz"): a compound with a street ending ("Lindenstraße",
    "Keizersgracht"), a capitalised street word and the capitalised words after it ("Avenida
    Carlos Haya"), or up to two capitalised words before a street word that is no surname
    (`STREET_WORDS_NAMING`: "Dawson Street", "Charles Square").

    Args:
        toks: the tokens of a run.

    Returns:
        The ranges, in order, not overlapping.
    """
    out: list[tuple[int, int]] = []
    n = len(toks)
    for i, t in enumerate(toks):
        if not _is_capital(t) or any(a <= i <= b for a, b in out):
            continue
        if _compound_street(t.low) == 2:
            out.append((i, i))
            continue
        if street_word_before(t) and not t.stop:
            j = i
            while j + 1 < n and j - i < 4 and not toks[j].stop and not toks[j + 1].line and (
                    toks[j + 1].low in PARTICLES or _is_capital(toks[j + 1])) and not _number(toks[j + 1]):
                j += 1
            while j > i and toks[j].low in PARTICLES:
                j -= 1
            if j > i:
                out.append((i, j))
                continue
        if t.low.rstrip(".") in STREET_WORDS_NAMING and i > 0 and not toks[i].line:
            k = i
            while k > 0 and i - k < 2 and not toks[k].line and not toks[k - 1].stop \
                    and _is_capital(toks[k - 1]) and not _number(toks[k - 1]):
                k -= 1
            if k < i:
                out = [(a, b) for a, b in out if b < k]
                out.append((k, i))
    return out


def lower_case_street(tok: str) -> list[tuple[int, int, str, str]]:
    """The detector of the rule `street_lower` (a street written in lower case, taken by
    its shape): the whole match, less a full stop after it; nothing where a capitalised
    word follows (the rule then took its first letter)."""
    if tok[-1:].isupper():
        return []  # the street's name goes on in capitals: the runs read it whole
    end = len(tok.rstrip(".,"))
    return [(0, end, "ADDRESS", tok[:end])]
