"""What the name lists say of a word, and of two words side by side: a given name, a surname,
a word no list knows, a Chinese or Korean name, a place.

Why a module of its own: `people` finds where a name may stand (after a title, a greeting,
a closing line, a cue) and how far it runs; whether the words there are a name is a
question of evidence from the lists (`name_lists`, the given names of `gender-guesser`,
the places of `pycountry`) and of the shapes of names (pinyin, romanised Korean, O'), which
this module answers.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from rlforge.ingest.redaction import korean, name_lists, pinyin
from rlforge.ingest.redaction.run_words import L, U, Tok
from rlforge.ingest.redaction.words import (CLOSINGS, GREETINGS, GROUP_WORDS, NOT_NAMES, PARTICLES, PERSON_CUES,
                                            SIGN_OFFS, TITLES, WEAK_PERSON_CUES)

_NAME_WORD = re.compile(rf"[{U}](?:[{L}]+|['’][{U}][{L}]+)(?:[{U}][{L}]+)?(?:-[{U}][{L}]+)*")


@functools.lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    """Case-folded given names common (frequency class >= 2) in any of the six locales'
    countries, from the gender-guesser package's nam_dict.txt, less `NOT_NAMES` (derived
    once into the cache directory: reading the dictionary costs every process 40 ms)."""
    return frozenset(name_lists.cached_lines("given-common", "gender-guesser", _derive_given)) - NOT_NAMES


def _derive_given() -> set[str]:
    import gender_guesser

    path = Path(gender_guesser.__file__).parent / "data" / "nam_dict.txt"
    # Frequency columns start at offset 30, one hex digit per country: great_britain
    # ireland usa italy (30-33), then malta portugal spain (skipped), france belgium
    # luxembourg the_netherlands east_frisia germany austria swiss (37-44). A name is kept
    # when one of those digits is 2 or more: what is left of them without blanks and 1s.
    below_two = str.maketrans("", "", " 1\n")
    out = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line[0] in "#=" or not (line[30:34] + line[37:45]).translate(below_two):
                continue
            name = line.split(None, 2)[1]
            out.add(name.replace("+", "-").casefold())
            out.add(name.replace("+", " ").casefold())
    return out

# An Irish family name by its prefix: "O'Donoghue", "O'NEILL" (the lists miss most).
_GAELIC_O = re.compile(rf"O['’](?:[{U}][{L}]+|[{U}]{{2,}})")


def _is_name_word(t: Tok) -> bool:
    return (bool(_NAME_WORD.fullmatch(t.word)) or _korean_word(t) and not t.word.isupper()
            and not t.word.islower()) and t.low not in NOT_NAMES and t.low not in TITLES \
        and not _group_compound(t)


def _group_compound(t: Tok) -> bool:
    """A compound whose last part names a group: "Support-Team", "IT-Helpdesk"."""
    return "-" in t.low and t.low.rsplit("-", 1)[1] in GROUP_WORDS


def _korean_word(t: Tok) -> bool:
    """A hyphenated Korean given name as people write it ("Seo-yeon", "JI-HOON")."""
    return korean.written(t.word) and korean.given_shape(t.low)


def _name_shaped(t: Tok) -> bool:
    """A name word in any letter case: "Anna", "ANNA", "anna", "Hans-Otto"."""
    w = t.word
    return (bool(_NAME_WORD.fullmatch(w)) or ((w.isupper() or w.islower()) and len(w) > 1
                                             and bool(_NAME_WORD.fullmatch(w.title()))) or _korean_word(t)) \
        and t.low not in NOT_NAMES and t.low not in TITLES and not _group_compound(t)


def _is_given(t: Tok, names: frozenset[str]) -> bool:
    if not _is_name_word(t):
        return False
    return t.low in names or t.low.split("-")[0] in names


def _listed(low: str, words: name_lists.Words) -> bool:
    return low in words or any(part in words for part in low.split("-"))


# The words of greetings, closings and cues ("Cumprimentos, Irina" is no "Surname, Given").
_CAMEL = re.compile(r"[a-z][A-Z]")
_LEAD_WORDS = frozenset(w for phrase in (*CLOSINGS, *SIGN_OFFS, *GREETINGS, *PERSON_CUES, *WEAK_PERSON_CUES)
                        for w in phrase.split())


class _Evidence:
    """What the name lists say of a word: a given name (the curated list, or the large one
    and not a common word), a surname (the large list, not a common word)."""

    def __init__(self, strong: name_lists.Words, lists: name_lists.NameLists):
        self.strong, self.lists = strong, lists

    def given(self, t: Tok) -> bool:
        return _listed(t.low, self.strong) or (
            _listed(t.low, self.lists.given) and t.low not in self.lists.common and not self.plural(t.low)) \
            or korean.given(t.low, self.lists.common)

    def surname(self, t: Tok, common_ok: bool = False) -> bool:
        return _listed(t.low, self.lists.surnames) and (
            common_ok or t.low not in self.lists.common and not self.plural(t.low)) \
            or bool(_GAELIC_O.fullmatch(t.word))

    def plural(self, low: str) -> bool:
        """A plural of a common word that the large lists hold as a name too ("Buds",
        "Chips"), which is no more evidence than the word itself; not a prominent surname
        or a curated given name ("Rivers", "Brooks", "Charles")."""
        return len(low) > 3 and low[-1] == "s" and (
            low[:-1] in self.lists.common or low[-2] == "e" and low[:-2] in self.lists.common) \
            and low not in self.lists.prominent and low not in self.strong

    def any(self, t: Tok) -> bool:
        return self.given(t) or self.surname(t)

    def unknown(self, t: Tok) -> bool:
        """A word no list knows, not even as a word of a language: an unlisted name
        ("Hredhaan"), or a brand."""
        low = t.low
        return len(low) > 2 and low not in self.lists.known and low not in _LEAD_WORDS \
            and not _CAMEL.search(t.word) and not (  # "DevOps", "ChargingSpeed"
            _listed(low, self.lists.given) or _listed(low, self.lists.surnames)
            or _listed(low, self.strong))

    def rare(self, t: Tok) -> bool:
        """Not one of a language's known words ("Xia", "Pieszak"; not "Kernel", "Module")."""
        return t.low not in self.lists.known

    def surname_like(self, t: Tok, common_ok: bool = False) -> bool:
        """A listed surname, or a word no list knows (the lists miss rare surnames)."""
        return self.surname(t, common_ok) or self.unknown(t)


@functools.lru_cache(maxsize=1)
def _evidence() -> _Evidence:
    return _Evidence(given_names(), name_lists.load())


@functools.lru_cache(maxsize=1)
def place_names() -> frozenset[str]:
    """Case-folded names of countries and their regions (`pycountry`: "france", "georgia",
    "victoria"), derived once into the cache directory."""
    return frozenset(name_lists.cached_lines("places", "pycountry", _derive_places))


def _derive_places() -> set[str]:
    import pycountry

    out = {c.name.casefold() for c in pycountry.countries}
    out |= {c.common_name.casefold() for c in pycountry.countries if hasattr(c, "common_name")}
    return out | {s.name.casefold() for s in pycountry.subdivisions}


def _place_name(toks: list[Tok], start: int, end: int) -> bool:
    """Whether the words `start` to `end`, two or more, are the name of a country or region
    or part of one with a word or two either side, written with spaces or hyphens ("Monte
    Carlo", "Santa Catarina", "Grande do Sul" of "Rio Grande do Sul")."""
    if end <= start:
        return False
    places = place_names()
    for a in range(max(0, start - 2), start + 1):
        for b in range(end, min(len(toks) - 1, end + 2) + 1):
            lows = [t.low for t in toks[a:b + 1]]
            if " ".join(lows) in places or "-".join(lows) in places:
                return True
    return False


def _chinese_surname(t: Tok, ev: _Evidence) -> bool:
    """A one-syllable pinyin word the lists hold as a surname ("Wang", "Xia")."""
    return pinyin.syllables(t.low) == 1 and t.low in ev.lists.surnames


def _pinyin_pair(a: Tok, b: Tok, ev: _Evidence, led: bool = False) -> bool:
    """A Chinese name in pinyin, in either order: a listed one-syllable surname and a given
    name of one or two syllables ("Wang Xiuying", "Jianguo Li", "WANG Fang"). A given name
    of two syllables is no common word ("China", "Change"); a pair of one-syllable words
    needs one that is no known word ("Min Xia", not "Hong Kong" or "Yin Yang"), or, in
    capitals or after a lead (`led`: "placed by ping liang"), no common word ("FANG
    ZHANG"), unless the surname is written in capitals before the given name ("DAI Ping")."""
    for surname, given in ((a, b), (b, a)):
        if not _chinese_surname(surname, ev):
            continue
        n = pinyin.syllables(given.low)
        if n == 2 and given.low not in ev.lists.common:
            return True
        shouted = a.word.isupper() and b.word.isupper()
        words = ev.lists.common if shouted or led else ev.lists.known
        if n == 1 and (a.low not in words or b.low not in words
                       or surname is a and a.word.isupper() and not b.word.isupper()):
            return True
    return False


def _korean_pair(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """A hyphenated Korean given name and a listed one-syllable surname, in either order
    ("Min-jun Kim", "KIM Min-jun", "Jung, Soo-ah"), common words or not."""
    surnames = ev.lists.surnames
    return korean.given_shape(a.low) and korean.surname(b.low, surnames) and b.low not in NOT_NAMES \
        or korean.surname(a.low, surnames) and a.low not in NOT_NAMES and korean.given_shape(b.low)


def _pair(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """Two words that the lists make a name in either order, in Title or upper case:
    "Xiaoming Wang", "WANG Xiaoming", "Rossi Mario", "Oluwaseun Adeyemi"."""
    if a.stop or not (_name_shaped(a) and _name_shaped(b)) or a.word.islower() or b.word.islower():
        return False
    if _korean_pair(a, b, ev) and (not b.line or a.end + 2 == b.start):
        return True
    if b.line and b.word.isupper():  # "TKACHENKO, DMYTRO" in an export's name column
        return a.word.isupper() and a.end + 2 == b.start \
            and (ev.surname(a, common_ok=True) or ev.unknown(a) and len(a.low) > 3) \
            and (ev.given(b) or b.low in ev.strong) and b.low not in place_names()  # not "RICHMOND, VIRGINIA"
    if b.line:  # "Duan, Jing", "Rajagopalan, Aadhya": surname, comma, given name
        return not b.word.isupper() and a.end + 2 == b.start and (
            ev.surname(a) and (b.low in ev.strong or ev.given(b) or _listed(b.low, ev.lists.given))
            or ev.surname_like(a) and ev.given(b) and b.low not in ev.lists.common
            or ev.unknown(a) and b.low in ev.strong  # "Tintzmann, Leonardo"
            # a prominent surname, common as a word too, and a curated given name that names
            # no country or region ("Taylor, Daniel"; not "Paris, France", "Atlanta,
            # Georgia"); a rare listed surname and a word no list holds ("Tarhan, Erdursun")
            or a.low in ev.lists.prominent and ev.surname(a, common_ok=True) and b.low in ev.strong
            and (b.low not in ev.lists.common or b.low not in place_names())
            or ev.surname(a) and ev.rare(a) and ev.unknown(b) and not b.word.isupper()
            or _pinyin_pair(a, b, ev))
    if a.word.isupper() != b.word.isupper():  # "KIMURA Kaori", not "LSI Logic"
        return a.word.isupper() and ((ev.surname(a, common_ok=True) or ev.unknown(a) and len(a.word) > 3)
                                     and (b.low in ev.strong or ev.given(b))
                                     # a surname that is no common word and no acronym ("LSI
                                     # Logic"): any listed given name ("CAVALCANTE Caio")
                                     or ev.surname(a) and len(a.word) > 3 and _listed(b.low, ev.lists.given)
                                     # a rare surname and a word no list holds ("DUMANLI
                                     # Sırriye"; not "GOLD Member", "SALE Price")
                                     or ev.surname(a) and ev.rare(a) and ev.unknown(b)
                                     or _pinyin_pair(a, b, ev))
    # one word a name the lists know and no common word, the other listed too ("Min Xia",
    # "Pratyush Chakrabarti"), one of them rare (not "Kernel Module"; in upper case, where a
    # log line shouts "RAS KERNEL", both names); a curated given name before a word in no
    # list ("Edwin Schmiedt", not "Cisco Webex")
    # a common surname after a curated or rare given name: a prominent one ("David Miller",
    # "Rufino Chávez"; not "Hope Valley", "Lael Printer")
    return (ev.given(a) and (ev.surname(b) or (a.low in ev.strong or ev.rare(a)) and (
        b.low in ev.lists.prominent and b.low in ev.lists.surnames))) or (
        a.low in ev.strong and a.low not in ev.lists.common and ev.unknown(b)) or (
        _listed(a.low, ev.lists.given) and ev.surname(b) and ev.rare(b) and not a.word.isupper()) or (
        ev.unknown(a) and ev.surname(b) and ev.rare(b)) or (  # not "Brightside Optics"
        ev.surname(a, common_ok=a.word.isupper()) and b.low in ev.strong
        and (b.low not in ev.lists.common or a.word.isupper())) or (ev.surname(a) and ev.given(b)) \
        or _pinyin_pair(a, b, ev)


def common_comma_pair(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """A prominent surname, a comma and a listed given name, common words or not ("Montero,
    Mariana", "Castro, Lucía": the word lists count many names among a language's most
    frequent words), neither a country or region nor a word of a lead ("Lima, Peru",
    "Thanks, Anna"). Evidence only where the pair opens its words (`people`): a brand and
    its town on a signature line ("Mango, Nairobi") or a job and a company ("Officer,
    Orange") have capitalised words before them."""
    return b.line and a.end + 2 == b.start and _name_shaped(a) and _name_shaped(b) \
        and a.word.istitle() and b.word.istitle() \
        and a.low in ev.lists.prominent and ev.surname(a, common_ok=True) and _listed(b.low, ev.lists.given) \
        and a.low not in _LEAD_WORDS and a.low not in place_names() and b.low not in place_names()


# Before a place rather than a person: "per seat in Lake Troy" (a pair the lists alone make a
# name is not taken after one of these).
_PLACE_BEFORE = frozenset({"in", "im", "en", "am", "aan", "bei", "near", "nach", "à", "w", "em"})


def _named(t: Tok, ev: _Evidence) -> bool:
    """Whether a word after a given name that is also a common word ("Hope", "Will") may be a
    surname: a listed name that is no common word, or a word in no list ("Will Kowalczyk",
    not "Hope Valley")."""
    return ev.surname(t) or ev.given(t) or ev.unknown(t)


def _lower_pair(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """Two lower-case words after a lead that the lists make a given name and a surname
    ("this is xiaoming wang"); a typo ("i'm caling") is in the lists alone, not paired."""
    return a.word.islower() and b.word.islower() and not a.stop and not b.line and (
        ev.given(a) and ev.surname(b, common_ok=True) or ev.surname(a) and ev.given(b)
        or _pinyin_pair(a, b, ev, led=True) or _korean_pair(a, b, ev))


def rare_lower_pair(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """Two lower-case words after a cue, a given name the lists hold (a common word too:
    the languages' frequent words hold many given names, "łukasz", "omar") and a word that
    no language knows, a listed surname or none ("placed by łukasz lisak"): a rare word
    after a given name is a surname far more often than a word of the sentence."""
    return a.word.islower() and b.word.islower() and not a.stop and not b.line \
        and a.low not in PARTICLES and a.low not in NOT_NAMES and a.low not in _LEAD_WORDS \
        and _listed(a.low, ev.lists.given) and _name_shaped(b) and len(b.low) > 2 \
        and b.low not in ev.lists.known and b.low not in NOT_NAMES and not _listed(b.low, ev.lists.given) \
        or a.word.islower() and _lower_pair(a, b, ev) and b.low not in ev.lists.known


def _two_capitals(a: Tok, b: Tok, ev: _Evidence) -> bool:
    """Two capitalised words after a lead, one of them a name the lists know: "This is
    Forest Larson", "Cumprimentos, Esméria Monteiro" (not "This is Visual Studio")."""
    return _is_name_word(a) and _is_name_word(b) and not a.stop and not b.line and (
        ev.given(a) or ev.surname(a) or ev.given(b) or ev.surname(b, common_ok=True))


_PART = re.compile(rf"[{U}{L}]+(?:['’-][{U}{L}]+)*")
_PASSENGER_TITLES = frozenset({"mr", "mrs", "ms", "mstr", "miss", "mx", "chd", "inf"})


def name_parts(name: str) -> list[str]:
    """The words of a redacted name of two or more words that the same text may write
    alone ("Thanks Kasun" after "Kasun Perera", "Okonjo" after "Dr Okonjo"), in the
    letter cases they are written in: as found, capitalised and in capitals, and in lower
    case when no language knows the word ("kasun"). Not a word of three letters or fewer,
    a particle, a title or a lead word, which name no one alone; a word that is also one
    of a language's common words ("Will", "Grace", "Omar") is one too, but `echo` keeps it
    where it opens a sentence (`sentence_word`).

    Args:
        name: the text of a PERSON span, as written.

    Returns:
        The forms to redact wherever else the text writes them.
    """
    words = _PART.findall(name)
    if len(words) < 2:
        return []
    ev = _evidence()
    out: list[str] = []
    for word in words:
        low = word.casefold()
        if len(low) < 4 or low in PARTICLES or low in TITLES or low in _PASSENGER_TITLES \
                or low in _LEAD_WORDS or low in NOT_NAMES:
            continue
        title = "-".join(p[:1].upper() + p[1:].lower() for p in word.split("-"))
        out += [word, title, word.upper()]
        if low not in ev.lists.known:
            out.append(low)
    return sorted(set(out))


def sentence_word(word: str) -> bool:
    """Whether one word of a name is also one of a language's common words ("Will",
    "Grace", "Mark", and many given names: "Omar", "Marcelo"), which, written alone at
    the start of a sentence before a lower-case word, is that word ("Will confirm",
    "Grace period") rather than the name."""
    return " " not in word and word.casefold() in _evidence().lists.common
