"""Person names and postal addresses in a run of capitalised words.

The engine hands over a *run*: capitalised words and numbers joined by spaces, commas or
one line break, with lower-case particles and street words between them ("Hans-Otto
Klemm", "46, avenue Leroy\\n49543 Ledoux-sur-Gosselin", "Dear Mrs. Bradford"). `judge`
returns the spans in it that are a person's name or an address.

Names: a given name from the `gender-guesser` package's name dictionary (about 15,000
given names of the six locales' countries; an independent list, not the generator's)
followed by surname words; a given name and a surname that the large lists of
`name_lists` know, in either order and in Title or upper case ("Xiaoming Wang", "ROSSI
Mario", "Duan, Jing"), unless a common word or after "in" (a place), or one of them listed
and the other a rare word no list holds ("Edwin Schmiedt", "Tintzmann, Leonardo"); initials
before a surname ("M. Rossi", "B. da Conceição"); any capitalised word after a title
("Herr", "Mme", "Sig.ra"), a closing line or a cue ("my colleague"), or before an e-mail
placeholder; a listed word after a greeting, a weak cue or a closing line of a few words
("Hi Anna,", "this is Wang", "Thanks for your help!\nIsaque"), a chat mention or time
stamp ("@Ana Souza", "[09:14] Ana Souza:", an exported chat's "12/03/2025, 21:07 - Ana
Souza:") or a mail header's sender ("Von: Ana Souza"); a speaker's turn, a given name the
lists hold alone before a colon at the start of a line ("Tuomas: …"); a listed name or a
word no list knows after a title that is a word too ("Sr. Balogun", not "Sr. Developer");
a name of several parts with particles ("Rosângela Teixeira de Barros"). Not names: a
street named without a house number ("on Jackson Street", `addresses.street_names`) and a
brand with its town on a signature line ("Acme Berlin"). `CASED_RUN`, the other rule,
reads words of any letter case after those leads ("hi maria,", "regards,\nanna
kowalska"), or two to four lower-case words a cue word leads ("placed by ping liang",
"placed by łukasz lisak": a given name that is a frequent word too before a word no
language knows, `LOWER_CUES`) for `judge_cased`. Names in the airline style
("NGATA/AROHA MS") are the `airline` module's. A Chinese name in pinyin is a listed one-syllable surname
and a given name of pinyin syllables (`pinyin`). Addresses: a street (a street word
with a house number: "12 Oak Street", "Lindenstraße 5", "Via Roma 12", "12 rue Victor
Hugo") or a postcode of a supported country, taken with the unit, town, state and
postcode lines around it (module `addresses`; the words of a run are `run_words`; what the
lists say of a word or a pair of words is `name_evidence`).
"""

from __future__ import annotations

import re

from rlforge.ingest.redaction import korean, numbers
from rlforge.ingest.redaction.addresses import addresses, street_names
from rlforge.ingest.redaction.name_evidence import (_GAELIC_O, _LEAD_WORDS, _NAME_WORD, _PLACE_BEFORE, _Evidence, _evidence,
                                                    _is_given, _is_name_word, _listed, _lower_pair,
                                                    _name_shaped, _named, _pair, _pinyin_pair, _place_name, common_comma_pair, place_names, rare_lower_pair,
                                                    _two_capitals, given_names)
from rlforge.ingest.redaction.rules import Span
from rlforge.ingest.redaction.run_words import INITIAL, L, U, Tok, tokens
from rlforge.ingest.redaction.words import (BUSINESS_WORDS, CLOSINGS, EVIDENCED_TITLES, FLOOR_SIDES, GREETINGS,
                                            HOUSE_NUMBER_SIGNS, LOWER_CUES, MAIL_HEADERS, NOT_NAMES,
                                            PARTICLES, PERSON_CUES, SAINTS, SIGN_OFFS, STREET_WORDS_BEFORE,
                                            TITLES, WEAK_PERSON_CUES, phrases_rx)

# One token of a run, to its natural end (a run never cuts another finding's token).
TOKEN_CHARS = f"A-Za-z0-9{U}{L}_'’./:@+%=ºª°-"
_RUN_TOKEN = rf"(?:[A-Z0-9{U}][{TOKEN_CHARS}]*|\([A-Z]{{2}}\))"
_RUN_SEP = r"(?:,?[ ]{1,2}|,?[ ]*\r?\n[ ]*|,)"
_JOINERS = sorted(PARTICLES | STREET_WORDS_BEFORE | {t for t in TITLES if t.isalpha()}
                  | HOUSE_NUMBER_SIGNS | FLOOR_SIDES | {"int", "m", "lok", "piso", "esc", "apt", "app"}
                  | {"sur", "sous", "lès", "les", "en", "am", "an", "im", "bei", "aan", "upon",
                     "on", "in", "di", "e", "et", "und"},
                  key=lambda w: (-len(w), w))
_JOIN = "(?:" + "|".join(re.escape(w) for w in _JOINERS if "'" not in w) + "|['’][st])"
# A closing line ("Kind regards,", "Met vriendelijke groet,") and the line after it, or
# two or more capitalised words.
# A word that introduces a person ("my colleague", "Contactpersoon is") and the words after.
_LINKS = ("is", "ist", "est", "è", "bei uns ist", "bij ons is", "chez nous est", "du dossier est",
          "was", "war", "heißt", "named", "called")
# (a blank line may stand between a closing and its comma and the name: "Met vriendelijke
# groet,\n\nWanjiru"; not after a full stop, "grazie.\n\nGrazie mille,")
_CLOSED = r"(?:[ ]*[,!.]?[ ]*\r?\n[ ]*|[ ]*,[ ]*\r?\n[ ]*\r?\n[ ]*)"
_LEAD = (rf"(?:{phrases_rx(*CLOSINGS)}{_CLOSED}|{phrases_rx(*SIGN_OFFS)}[ ]*,[ ]*"
         rf"|{phrases_rx(*PERSON_CUES)}(?:[ ]+{phrases_rx(*_LINKS)})?[ ]*[:,]?[ ]+)")
# Leads after which a word is a name only when the name lists know it: a closing with the
# name on its line ("Un saludo, Marta"), a closing line of a few more words ("Thanks for
# your help!\nIsaque", "Merci d'avance,\nLei"), "this is", "my name is", a greeting.
# ("-- " alone on a line opens an e-mail signature: "Sent from my iPhone" may follow it)
_WEAK_LEAD = (rf"(?:{phrases_rx(*CLOSINGS)}(?:[ ]*,[ ]*|[ ][^\n.!?,:;]{{1,40}}[.!,][ ]*\r?\n[ ]*)|(?m:^)--[ ]?\r?\n[ ]*"
              rf"|{phrases_rx(*WEAK_PERSON_CUES)}[ ]*[:,]?[ ]+|{phrases_rx(*GREETINGS)}[ ]*,?[ ]+)")
# (a lead may stand inside a run: "… €874,85. Un saludo, Eulalia Cruz")
_MORE = (rf"(?:{_RUN_SEP}(?:{_LEAD}|{_WEAK_LEAD})?(?:{_JOIN}\.?,?[ ])*{_RUN_TOKEN}"
         rf"|[ ]+{phrases_rx(*_LINKS)}[ ]*[:,]?[ ]+{_RUN_TOKEN})")  # "Contactpersoon is Kick"
# a run: after a lead, one or more tokens; else two or more, possibly led by particles or a
# street word ("van der Dussenstr. 5", "rue de Neveu, 11426 Hamon")
# The e-mail address after a name, already a placeholder: "Tao Liang <EMAIL_…>", "(<EMAIL_…>)".
_EMAIL_AFTER = r"[ ]*[(<]?<EMAIL_[0-9a-f]{6}>"
# An @-mention in chat ("@Ana Souza can you…") or a chat log's time stamp leads a name as a
# greeting does: "[09:14] Ana Souza: …", and the stamps of exported chats, a date before
# the time and a dash or a bracket after it ("12/03/2025, 21:07 - Ana Souza: …",
# "[3/14/25, 8:02:11 AM] Ana Souza: …").
_STAMP_DATE = r"(?:[0-9]{1,4}[./-][0-9]{1,2}[./-][0-9]{1,4},?[ ])"
_STAMP_TIME = r"[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:[ ]?[AaPp][Mm])?"
_CHAT_LEAD = (rf"(?:@|\[{_STAMP_DATE}?{_STAMP_TIME}\][ ]{{1,2}}"
              rf"|{_STAMP_DATE}{_STAMP_TIME}[ ][-–][ ])")
_CHAT_LEAD_RX = re.compile(_CHAT_LEAD)
# A speaker's turn in a transcript or a chat: one capitalised word alone before a colon at
# the start of a line ("Tuomas: my card was charged twice"), a name when it is a given name.
# Five letters or more: a mail header's field ("Van:", "From:", "Para:") is left to the
# rules that read the name after it.
_SPEAKER_WORD = rf"[{U}][{L}]{{4,}}(?:-[{U}][{L}]+)?:[ ]"
_SPEAKER = rf"(?m:^){_SPEAKER_WORD}"
_SPEAKER_RX = re.compile(_SPEAKER_WORD)
RUN = (rf"(?:(?:{_LEAD}|{_CHAT_LEAD}){_RUN_TOKEN}{_MORE}*|(?:{_JOIN}\.?[ ])*{_RUN_TOKEN}{_MORE}+"
       rf"|(?:{_JOIN}\.?[ ])+{_RUN_TOKEN})(?:{_EMAIL_AFTER}|,)?"  # "Hi Anna,"
       rf"|{_SPEAKER}")
_LEAD_RX = re.compile(rf"(?<![^\s,(]){_LEAD}")
# A sender or recipient field of a mail header at the start of a line: "Von: Rosângela Teixeira".
_HEADER_LEAD = rf"(?m:^)[ \t]*{phrases_rx(*MAIL_HEADERS)}[ \t]?:[ \t]*"
_HEADER_RX = re.compile(_HEADER_LEAD)
_WEAK_LEAD_RX = re.compile(rf"(?<![^\s,(]){_WEAK_LEAD}")
# Words of any case after a lead ("hi maria,", "regards,\nanna kowalska"): the other rule.
_ANY_WORD = f"[A-Za-z{U}{L}][A-Za-z{U}{L}'’-]*"
_LOWER_WORD = f"[a-z{L}][a-z{L}'’-]+"
# Lower-case words after a cue ("placed by ping liang"). (Words before "here", "ana moreira
# here", would need an alternative that may start at every word: it cost a third of the
# redaction time.)
_LOWER_LEAD = rf"{phrases_rx(*LOWER_CUES)}[ ]+"
# A particle between the words of a name in any case ("ana carolina dos santos filho").
_PARTICLE = "(?:" + "|".join(re.escape(w) for w in sorted(PARTICLES, key=lambda w: (-len(w), w))
                             if w.isalpha()) + ")"
# (then any capitalised words, so that a window of three words never cuts a name in two:
# "Merci de rappeler KHOURY Hamza"; "aqui é Antoniou, Stavros," up to the comma after it, so
# that a name after a greeting's comma is left whole to the other rule: "Hoi allemaal, Marieke
# van Dijk"; with the particles between them: "I am covering for Luiz Fernando Ribeiro dos Passos")
# A title or initials between a lead and a name ("sono Dott. Kravchuk", "aqui é J. Kang"):
# without them the word before the full stop would end the candidate ("sono K"), and the
# name after it, one capitalised word, would make no run of its own.
_TITLE_OR_INITIALS = rf"(?:{phrases_rx(*(t for t in TITLES | EVIDENCED_TITLES if ' ' not in t))}\.?[ ]|[{U}]\.(?:[ ]?[{U}]\.)?[ ])?"
# (after a chat time stamp, a mail header or a closing line, up to seven words and the
# speaker's colon: the whole of a long lower-case name, "[16:40] maria das graças pires de
# almeida:", "Bien cordialement,\njoana darc dos reis pacheco": `_speaker`, `_lower_signature`)
_CLOSING_LINE = rf"{phrases_rx(*CLOSINGS)}{_CLOSED}"
CASED_RUN = (rf"(?:(?:{_CHAT_LEAD}|{_HEADER_LEAD}|{_CLOSING_LINE}){_ANY_WORD}(?:[ ](?:{_PARTICLE}[ ]){{0,2}}{_ANY_WORD}){{0,4}}[ ]?:?"
             rf"|(?:{_LEAD}|{_WEAK_LEAD}){_TITLE_OR_INITIALS}{_ANY_WORD}(?:[ ](?:{_PARTICLE}[ ]){{0,2}}(?:[{U}]\.|{_ANY_WORD})){{0,2}}(?:[ ](?:{_JOIN}[ ])*{_RUN_TOKEN})*(?:,[ ]{_RUN_TOKEN}(?:[ ]{_RUN_TOKEN})?,)?"
             rf"|{_LOWER_LEAD}{_LOWER_WORD}(?:[ ]{_LOWER_WORD}){{1,3}})")
_LOWER_LEAD_RX = re.compile(rf"(?<![^\s,(]){_LOWER_LEAD}")
RUN_PREFIX = rf"[^<>\\{TOKEN_CHARS}]"

_TOKEN = re.compile(rf"(?<![^\s,(])(?:{_RUN_TOKEN}|{_JOIN}\.?(?=[ ]))")
_ANY_TOKEN = re.compile(rf"(?<![^\s,(]){_ANY_WORD}[.,:;!?]?")


def _tokens(run: str, rx: re.Pattern = _TOKEN) -> list[Tok]:
    return tokens(run, rx)




def _sentence_start(toks: list[Tok], k: int, ev: _Evidence) -> bool:
    """Whether the third or later word of a name after a lead rather starts the next
    sentence: no list knows it as a name, or it is a common word that is no given name."""
    t = toks[k]
    if toks[k - 1].low in PARTICLES:
        return False
    listed = _listed(t.low, ev.lists.surnames) or _listed(t.low, ev.lists.given)
    return not listed or (t.low in ev.lists.common and t.low not in ev.strong)


def _initials_then_surname(toks: list[Tok], i: int, ev: _Evidence) -> bool:
    """ "M. Rossi", "J. R. Smith": initials, then a listed surname or given name."""
    k = i
    while k < len(toks) and INITIAL.fullmatch(toks[k].text) and (k == i or not toks[k].line):
        k += 1
    while k > i and k + 1 < len(toks) and toks[k].low in PARTICLES and not toks[k + 1].line:
        k += 1  # "B. da Conceição", "D. ter Waarbeek"
    return k > i and k < len(toks) and not toks[k].line and _is_name_word(toks[k]) and (
        ev.surname_like(toks[k], common_ok=True) or ev.given(toks[k]))


def _family_before(toks: list[Tok], start: int, skip: set[int], ev: _Evidence) -> int:
    """Where a name whose family name comes first begins, when that family name has more
    words than the rules took: the surname words and particles before `start`, in its
    letter case ("DA COSTA LIMA Maria", "das Neves Barbosa, Maria Clara", "Albuquerque
    Nogueira, Ana"). `start` is a surname written in capitals or one before a comma."""
    upper = toks[start].word.isupper()
    k = start
    while k > 0 and k - 1 not in skip and not toks[k].line and not toks[k - 1].stop:
        p = toks[k - 1]
        if p.low in PARTICLES and (p.word.islower() or p.word.isupper() == upper) and k < start + 1 + 4:
            k -= 1
        elif _name_shaped(p) and not p.word.islower() and p.word.isupper() == upper \
                and p.low not in _LEAD_WORDS and p.low not in NOT_NAMES and (
                    ev.surname(p) or ev.unknown(p)
                    or p.low in ev.lists.prominent and _listed(p.low, ev.lists.surnames)):
            k -= 1
        else:
            break
    while k < start and toks[k].low in PARTICLES and toks[k].word.islower() and k == 0:
        k += 1  # a particle that opens the run may be a preposition ("do Nogueira, Ana")
    return k


def _given_after_comma(toks: list[Tok], k: int, skip: set[int], ev: _Evidence) -> bool:
    """Whether the word after `k` and a comma is a given name the lists hold that is no
    common word ("Kovalenko, Oksana"; not "Smith, Support")."""
    if k + 1 >= len(toks) or k + 1 in skip or toks[k].stop or toks[k].end + 2 != toks[k + 1].start:
        return False
    t = toks[k + 1]
    return _is_name_word(t) and t.low not in ev.lists.common and (
        _listed(t.low, ev.lists.given) or ev.given(t))


def _surname_after_particle(toks: list[Tok], k: int, ev: _Evidence) -> bool:
    """Whether the word `k` after a particle, a common word too ("Almeida", "Costa", "Legal"),
    goes on a surname rather than saying where the person works: a listed surname with
    another listed surname word after it ("Maria Clara da Costa Lima"; not "Farkas de Legal
    y"), or written in capitals, or a prominent surname (ranked high in some country) that
    ends the name ("Teixeira de Barros", "Ribeiro dos Passos"; "Legal" is only in the long
    tail, and "Ingrid Sandoval de Data Engineering" goes on with a word no surname)."""
    t = toks[k]
    if not ev.surname(t, common_ok=True):
        return False
    ends = k + 1 >= len(toks) or t.stop or toks[k + 1].line
    nxt = toks[k + 1] if not ends else None
    return toks[k - 1].word.isupper() or t.low in ev.lists.prominent and ends or (
        nxt is not None and (_is_name_word(nxt) or t.word.islower() and nxt.word.islower() and _name_shaped(nxt))
        and ev.surname(nxt, common_ok=True))


def _particle_chain(toks: list[Tok], i: int, names: frozenset[str], ev: _Evidence, led: bool = False) -> bool:
    """Whether a name of several parts starts at `i`: a given name (a curated one, or one of the
    large lists that is no common word; after a lead, `led`, any listed one), up to two more
    given names or prominent surnames, a particle and a surname after it that is no place
    ("Heloísa Ribeiro de Andrade", "Rosângela dos Passos", "@João dos Santos"; not a shop and
    its town, "Nordwind de Lisboa")."""
    t, n = toks[i], len(toks)
    if t.stop or not _is_name_word(t) or t.low in _LEAD_WORDS \
            or not (ev.given(t) or _is_given(t, names) or led and _listed(t.low, ev.lists.given)) \
            or i > 0 and (toks[i - 1].low.rstrip(".") in SAINTS or toks[i - 1].low in _PLACE_BEFORE):
        return False
    k = i + 1  # then given names or prominent surnames, not any listed word
    while k < n and k - i < 3 and not toks[k].line and not toks[k - 1].stop and _is_name_word(toks[k]) \
            and (_listed(toks[k].low, ev.lists.given) and toks[k].low not in ev.lists.common
                 or toks[k].low in ev.lists.prominent and _listed(toks[k].low, ev.lists.surnames)):
        k += 1
    if k >= n - 1 or toks[k].line or toks[k - 1].stop or toks[k].low not in PARTICLES \
            or not toks[k].word.islower():
        return False
    m = k
    while m < n - 1 and toks[m].low in PARTICLES and not toks[m].stop:
        m += 1
    if toks[m].line or not _is_name_word(toks[m]) or toks[m].low in place_names() or not (
            ev.surname(toks[m]) or _surname_after_particle(toks, m, ev)):
        return False
    return True


def _given_before(toks: list[Tok], start: int, taken: int, skip: set[int], ev: _Evidence) -> int:
    """Where a name found at `start` begins when a given name the lists hold, common word or
    not, stands right before it, or before a particle that opens it ("Luiz Fernando Ribeiro
    dos Passos", "Rogério de Souza Lemos"): the large lists count many Portuguese given names
    ("João", "Luiz") among the most frequent Portuguese words. `taken`: the last token of the
    name found before, which this one may not reach back into."""
    k = start - 1
    if k > taken and toks[k].low in PARTICLES and toks[k].word.islower() and not toks[start].line:
        k -= 1  # "Rogério de Souza Lemos": the particle, then the given name
    if k <= taken or k in skip or k + 1 in skip:
        return start
    p = toks[k]
    if p.stop or toks[k + 1].line or not _is_name_word(p) or not _listed(p.low, ev.lists.given) \
            or p.low in _LEAD_WORDS or k > 0 and (toks[k - 1].low.rstrip(".") in TITLES | SAINTS
                                                  or toks[k - 1].low in _PLACE_BEFORE):
        return start
    return k


def _brand_and_place(toks: list[Tok], start: int, end: int, ev: _Evidence) -> bool:
    """Whether the words `start` to `end` are a brand and the town of its branch, as a
    signature's company line writes them ("Acme Berlin", "Nordwind Hamburg"): two or more
    words on one line, the last a country or region, none before it a name any list holds
    ("Anna Berlin", "Ana Braga" are people: a place is a surname too)."""
    return end > start and toks[end].low in place_names() and not any(t.line for t in toks[start + 1:end + 1]) \
        and not any(_listed(t.low, ev.lists.given) or _listed(t.low, ev.lists.surnames)
                    or INITIAL.fullmatch(t.text) or t.low in PARTICLES for t in toks[start:end])


def _continues(t: Tok, first: Tok, ev: _Evidence) -> bool:
    """Whether `t` may continue a name that began with `first`: a capitalised name word, an
    initial, or a listed word in the first word's letter case ("ANNA KOWALSKA", "anna
    kowalska"), or in capitals a word of four or more letters that no list knows."""
    if _is_name_word(t) or INITIAL.fullmatch(t.text):
        return True
    return _name_shaped(t) and t.word.isupper() == first.word.isupper() \
        and t.word.islower() == first.word.islower() and (  # not "Karamanlis na loja"
        _listed(t.low, ev.lists.surnames) or _listed(t.low, ev.lists.given)
        or _listed(t.low, ev.strong) or bool(_GAELIC_O.fullmatch(t.word))
        # "TAMATI TAWHIRI": in capitals, a word of four or more letters no list knows
        or t.word.isupper() and len(t.low) > 3 and ev.unknown(t))


def _before_company(toks: list[Tok], start: int, end: int) -> int:
    """Where a name that ran on over a particle into a company's name ends: before the
    particle ("Ifeoma Okonkwo van Brightwell Logistics GmbH", "Bjørn Dahl de Acme S.A."),
    when two words or more stand before it; else `end` (the span is then no name)."""
    firm = next((k for k in range(start, end + 1) if toks[k].low in BUSINESS_WORDS), None)
    if firm is None:
        return end
    cut = next((k for k in range(start + 2, firm) if toks[k].low in PARTICLES and toks[k].word.islower()
                and not toks[k].line), None)
    return cut - 1 if cut is not None else end


def _names(run: str, toks: list[Tok], skip: set[int], names: frozenset[str],
           leads: set[int], weak: set[int] = frozenset(),  # type: ignore[assignment]
           whole: set[int] = frozenset()) -> list[tuple[int, int]]:  # type: ignore[assignment]
    """Token ranges of names; `leads` are the tokens after a closing line or a cue word,
    `weak` those after a word a name may follow (a greeting, "this is"), `whole` those of
    `weak` whose name runs to its last name word (after "@" or a mail header's "From:", no
    sentence goes on in capitals)."""
    ev = _evidence()
    line_leads = {i for i in leads if i > 0 and "\n" in run[toks[i - 1].end:toks[i].start]} | whole
    out: list[tuple[int, int]] = []
    n = len(toks)
    i = 0
    while i < n:
        t = toks[i]
        if i in skip:
            i += 1
            continue
        start = None
        titled = False  # one surname after a title goes on past a particle only to a surname
        opens = i == 0 or toks[i - 1].stop and not t.line  # the first word of the run or of a clause
        low = t.low.rstrip(".")
        nxt = toks[i + 1] if i + 1 < n else None
        if INITIAL.fullmatch(t.text) and _initials_then_surname(toks, i, ev) and not (
                i > 0 and toks[i - 1].low.rstrip(".") in TITLES and not toks[i - 1].stop):
            start = i  # "M. Rossi" (also "M." for Monsieur: the whole is redacted)
        elif (low in TITLES or t.low in TITLES) and (len(low) > 2 or t.word[:1].isupper()) \
                and nxt is not None and (
                _is_name_word(nxt) or nxt.low in PARTICLES
                or (_name_shaped(nxt) and ev.any(nxt))) and not t.stop:
            start, titled = i + 1, True
        elif low in EVIDENCED_TITLES and t.word[:1].isupper() and nxt is not None and not t.stop \
                and _is_name_word(nxt) and (ev.any(nxt) or ev.unknown(nxt)) and not _pinyin_pair(t, nxt, ev):
            start, titled = i + 1, True  # "Sr. Balogun" (not "Sr. Developer"; "Pan Dongmei" is a name)
        elif t.low in GREETINGS and nxt is not None and _name_shaped(nxt) and not t.stop and (
                (_is_name_word(nxt) and (run[nxt.end:nxt.end + 1] in (",", "\n", "!", ":")
                                         or (i + 2 < n and _is_name_word(toks[i + 2])
                                             and not toks[i + 2].line)))
                or nxt.low in names or ev.given(nxt) or ev.surname(nxt)):
            start = i + 1  # "Hi Anna,", "Dear Kowalski," (not "Hi Tallybird team")
        elif i in leads and _NAME_WORD.fullmatch(t.word) and (t.low in names
                                                                 or t.low not in NOT_NAMES):
            start = i
        elif (i in leads or i in weak) and _name_shaped(t) and (
                (t.low in names or ev.given(t) or ev.surname(t)) and not t.word.islower()
                or t.word.islower() and t.low in ev.strong and (
                    i in leads or t.low not in ev.lists.common)
                or (nxt is not None and (_pair(t, nxt, ev) or _two_capitals(t, nxt, ev)
                                         or _lower_pair(t, nxt, ev)))
                or _particle_chain(toks, i, names, ev, led=True)):
            start = i  # "regards,\nanna", "this is Wang", "Un saludo, Marta"
        elif (_is_given(t, names) and nxt is not None and not t.stop and not nxt.line and (
                _is_name_word(nxt) and (t.low not in ev.lists.common or _named(nxt, ev))
                or nxt.low in PARTICLES or INITIAL.fullmatch(nxt.text))
                or nxt is not None and _pair(t, nxt, ev) and not (i > 0 and toks[i - 1].low in _PLACE_BEFORE)) \
                and not (i > 0 and toks[i - 1].low.rstrip(".") in SAINTS):
            start = i
        elif _particle_chain(toks, i, names, ev):
            start = i  # "Heloísa Ribeiro de Andrade", "Rosângela dos Passos"
        elif opens and nxt is not None and i + 1 not in skip and common_comma_pair(t, nxt, ev):
            start = i  # "Attendees: Montero, Mariana and me"
        if start is None or start in skip:
            i += 1
            continue
        comma_pair = start == i and nxt is not None and nxt.line and i + 1 not in skip and (
            _pair(t, nxt, ev) or opens and common_comma_pair(t, nxt, ev))
        end = start
        initial = bool(INITIAL.fullmatch(toks[start].text))  # "Y. Sato": "y" is no particle here
        while toks[end].low in PARTICLES and end + 1 < n and not initial:
            end += 1
        first = toks[end]
        while end + 1 < n and end - start < 7 and not toks[end].stop and end + 1 not in skip \
                and not toks[end + 1].line:
            nxt_word = end + 1
            while nxt_word < n - 1 and toks[nxt_word].low in PARTICLES and not toks[nxt_word].stop:
                nxt_word += 1  # "van der", "de la"
            if not _continues(toks[nxt_word], first, ev) \
                    or nxt_word in skip or (nxt_word > end + 1 and toks[nxt_word].line):
                break
            if nxt_word > end + 1 and (end > start or titled) and not (
                    ev.surname(toks[nxt_word]) or ev.unknown(toks[nxt_word])
                    or _surname_after_particle(toks, nxt_word, ev)):
                break  # "Iryna Lysenko van Platform Team", "Bence Farkas de Legal", "Sra. Dang de Facilities"
            if nxt_word == end + 2 and end == start and toks[nxt_word].low in ev.lists.common \
                    and not _listed(toks[nxt_word].low, ev.lists.surnames) and nxt_word + 1 < n \
                    and not toks[nxt_word + 1].line and toks[nxt_word + 1].word[:1].isupper():
                break  # "Marieke van Platform Team" (not "Sven van Westfalen", "Amelie van der Wegen")

            end = nxt_word
        while (start in leads or start in weak) and start not in line_leads and end - start >= 2 \
                and not INITIAL.fullmatch(toks[end - 1].text) and _sentence_start(toks, end, ev):
            end -= 1  # "Cordiali saluti, Anna Rossi Ho dimenticato": "Ho" starts a sentence
        if (start in leads or start in weak) and end == start and not comma_pair \
                and _given_after_comma(toks, end, skip, ev):
            comma_pair = True  # "aqui é Antoniou, Stavros, da área": surname, comma, given name
        if comma_pair:
            end = start + 1  # "Duan, Jing", "Cardoso, Vitor Gabriel", "van Oostendorp, Maartje"
            while end + 1 < n and end + 1 not in skip and not toks[end].stop and not toks[end + 1].line \
                    and _is_name_word(toks[end + 1]) and _listed(toks[end + 1].low, ev.lists.given):
                end += 1
            while start > 0 and start - 1 not in skip and toks[start - 1].low in PARTICLES \
                    and not toks[start].line and not toks[start - 1].stop:
                start -= 1
        if comma_pair or start == i and end > start and toks[start].word.isupper() \
                and len(toks[start].word) > 1 and not toks[end].word.isupper():  # "LIMA Maria"
            start = _family_before(toks, start, skip, ev)
        if start == i and end > start and not comma_pair and not initial:
            start = _given_before(toks, start, out[-1][1] if out else -1, skip, ev)
        end = _before_company(toks, start, end)
        if _name_shaped(toks[end]) and (toks[start].low not in PARTICLES or start == i + 1 or initial
                                        or comma_pair or start < i) \
                and not any(toks[k].low in BUSINESS_WORDS for k in range(start, end + 1)) \
                and not _place_name(toks, start, end) and not _brand_and_place(toks, start, end, ev):
            out.append((start, end))
        i = end + 1
    return out


def _streets(toks: list[Tok], names: frozenset[str]) -> set[int]:
    """The tokens of the streets named without a house number (`addresses.street_names`),
    which are no person's name, less those a person's name may be: one word a list holds as
    a surname although it ends like a street ("Verlaan", "Hellweg") or one after a given name
    ("Thom Oversteeg"), a street word that is a curated given name ("Ronda Jansen") or a
    surname after a given name ("Juan Estrada Ruiz"; not "die Filiale Rue de Rivoli")."""
    ev = _evidence()
    out: set[int] = set()
    for a, b in street_names(toks):
        first = toks[a]
        before = toks[a - 1] if a > 0 and not first.line and not toks[a - 1].stop else None
        after_given = before is not None and _is_name_word(before) and (before.low in names or ev.given(before))
        if a == b and (_listed(first.low, ev.lists.surnames) or _listed(first.low, ev.lists.given) or after_given) \
                or a < b and first.low in STREET_WORDS_BEFORE and (first.low in names or after_given):
            continue
        out |= set(range(a, b + 1))
    return out


def _signature_lines(run: str, toks: list[Tok], found: list[tuple[int, int]],
                     led: set[int]) -> list[tuple[int, int]]:
    """`found` less the names on the lines under a signature's name: once a name stands on
    the line after a closing line ("Cordialement,\nAna Souza"), the lines under it hold a
    job title, a company and its branch, an address ("Head of Sales, Acme Lisboa"), not
    another person, unless a lead says so ("CC: Rui Lopes")."""
    signed = next((b for a, b in found if a in led and a > 0
                   and "\n" in run[toks[a - 1].end:toks[a].start]), None)
    if signed is None:
        return found
    return [(a, b) for a, b in found
            if a <= signed or a in led or "\n" not in run[toks[signed].end:toks[a].start]]


def _signature_phones(run: str, toks: list[Tok], found: list[tuple[int, int]], leads: set[int],
                      regions: tuple[str, ...]) -> list[Span]:
    """A digit run alone on the line under a name that follows a closing line
    ("Best,\nRobert Ayala\n4813595016"): the signature's phone number."""
    out = []
    for a, b in found:
        if a not in leads or b + 1 >= len(toks) or not toks[b + 1].line:
            continue
        k = b + 1
        while k + 1 < len(toks) and not toks[k + 1].line and toks[k + 1].word.isdigit():
            k += 1  # "05391 039986": the groups of one number
        start, end = toks[b + 1].start, toks[k].end
        number = run[start:end]
        if re.fullmatch(r"[0-9][0-9 .-]{7,18}[0-9]", number) and (
                k + 1 >= len(toks) or toks[k + 1].line):
            e164 = numbers.phone_e164(number, regions, labelled=True)
            if e164:
                out.append((start, end, "PHONE", e164))
    return out


def _after(rx: re.Pattern, run: str, toks: list[Tok]) -> set[int]:
    """The indexes of the tokens that follow a match of `rx` (a lead)."""
    out = set()
    for lead in rx.finditer(run):
        out.add(next((i for i, t in enumerate(toks) if t.start >= lead.end()), -1))
    return out


def _lower_names(toks: list[Tok], starts: list[int]) -> list[tuple[int, int]]:
    """A name in lower case after a cue word (`LOWER_CUES`) or another lead: two to four
    words, with particles between, that the lists make a given name and a surname
    (`_lower_pair` on the first two): a Chinese name in pinyin, or a last word that is no
    common word after a curated given name or a word no more common ("placed by ping
    liang", "ask michael babu"; not "by credit card", "with noline payment")."""
    ev = _evidence()
    start = next((i for i in starts if 0 <= i < len(toks) - 1 and _lower_pair(toks[i], toks[i + 1], ev)), -1)
    if start < 0:  # then a frequent given name before a word no language knows, never a cue word
        start = next((i for i in starts if 0 <= i < len(toks) - 1 and toks[i].low not in LOWER_CUES
                      and rare_lower_pair(toks[i], toks[i + 1], ev)), -1)
    if start < 0:
        return []
    end = start + 1
    while end + 1 < len(toks) and end - start < 3 and not toks[end].stop and not toks[end + 1].line:
        k = end + 1
        while k + 1 < len(toks) and toks[k].low in PARTICLES:
            k += 1
        t = toks[k]
        if not (t.word.islower() and _name_shaped(t) and t.low not in ev.lists.common
                and (_listed(t.low, ev.lists.surnames) or _listed(t.low, ev.lists.given))):
            break
        end = k
    first, last = toks[start], toks[end]
    if first.low == last.low:  # a word said twice is no name ("for job job_1445…")
        return []
    if _pinyin_pair(first, toks[start + 1], ev, led=True) or rare_lower_pair(first, toks[start + 1], ev) \
            and end == start + 1 or last.low not in ev.lists.common and (
            first.low not in ev.lists.common or first.low in ev.strong) \
            or (first.low in ev.strong or _listed(first.low, ev.lists.given) and first.low not in ev.lists.common) \
            and last.low in ev.lists.prominent and _listed(last.low, ev.lists.surnames):
        return [(start, end)]  # "spoke to camila silva": a given name no common word, a prominent surname
    return []  # "with noline payment": a typo and a common word


def _lower_signature(run: str, toks: list[Tok], leads: set[int]) -> list[tuple[int, int]]:
    """A line of two to four lower-case words (and particles) alone under a closing line
    ("Pozdrawiam,\nsiobhán ó briain", "Cordiali saluti,\ndivina pangilinan"): a signature's
    name when it has a name's shape (`_given_and_family`), or when its first and last words
    are no common words and the lists know one of its words."""
    ev = _evidence()
    for i in sorted(leads):
        if i <= 0 or i >= len(toks) or "\n" not in run[toks[i - 1].end:toks[i].start]:
            continue
        j = i
        while j + 1 < len(toks) and not toks[j + 1].line and j - i < 6:
            j += 1
        words = toks[i:j + 1]
        if j + 1 < len(toks) and not toks[j + 1].line or len(words) < 2 \
                or len([t for t in words if t.low not in PARTICLES]) > 4 \
                or not all(t.word.islower() and (_name_shaped(t) or t.low in PARTICLES) for t in words):
            continue
        first, last = words[0], words[-1]
        if _given_and_family(words, ev):
            return [(i, j)]  # "joana darc dos reis pacheco": common words, but a name's shape
        if first.low in PARTICLES or first.low in ev.lists.common or last.low in ev.lists.common:
            continue
        if any(ev.any(t) or _listed(t.low, ev.lists.given) or korean.given(t.low, ev.lists.common)
               for t in words if t.low not in PARTICLES):
            return [(i, j)]
    return []


def _given_and_family(words: list[Tok], ev: _Evidence) -> bool:
    """Whether lower-case words that stand alone (a speaker, a sender, a signature line) are
    a name by its shape: two to seven name-shaped words and particles, none a word that
    names no person, the first a given name and the last a surname the lists hold, common
    words or not ("carlos ... vieira")."""
    if not 2 <= len(words) <= 7 or any(t.line for t in words[1:]) or any(t.stop for t in words[:-1]) \
            or words[0].low in PARTICLES or words[-1].low in PARTICLES \
            or not all(t.word.islower() and (t.low in PARTICLES or _name_shaped(t) and t.low not in NOT_NAMES)
                       for t in words):
        return False
    given, family = words[0], words[-1]
    return (_listed(given.low, ev.lists.given) or korean.given(given.low, ev.lists.common)) \
        and (_listed(family.low, ev.lists.surnames) or bool(_GAELIC_O.fullmatch(family.word.title())))


def _speaker(run: str, toks: list[Tok], chat: re.Match | None, headed: set[int]) -> list[tuple[int, int]]:
    """The whole of a chat line's speaker ("[16:40] tadhg ní mhaoláin: …") or of a mail
    header's sender ("De: maria das graças pires de almeida"), in lower case: two to seven
    words up to the colon after a time stamp, or to the end of the header's line, every one
    a name-shaped word or a particle, none a word that names no person, the first a given
    name and the last a surname the lists hold (common words or not: "carlos", "vieira")."""
    if not toks:
        return []
    timed = chat is not None and chat.group() != "@"
    if timed and not run.rstrip().endswith(":"):
        return []
    first = 0 if timed else next((i for i in sorted(headed) if 0 <= i < len(toks)), -1)
    if first < 0 or (not timed and toks[-1].stop):
        return []
    return [(first, len(toks) - 1)] if _given_and_family(toks[first:], _evidence()) else []


def judge_cased(run: str, regions: tuple[str, ...] = numbers.DEFAULT_REGIONS) -> list[Span]:
    """The PERSON spans in words of any letter case after a lead (`CASED_RUN`: "hi maria,",
    "regards,\nanna kowalska", "This is Wang from support")."""
    chat = _CHAT_LEAD_RX.match(run)  # "@ana souza", "[09:14] ana souza:"
    toks = _tokens(" " * chat.end() + run[chat.end():] if chat else run, _ANY_TOKEN)
    names = given_names()
    leads, weak = _after(_LEAD_RX, run, toks), _after(_WEAK_LEAD_RX, run, toks)
    headed = _after(_HEADER_RX, run, toks) | ({0} if chat else set())
    weak |= headed
    found = _names(run, toks, set(), names, leads, weak, headed)
    speaker = _speaker(run, toks, chat, headed)
    if speaker:  # the whole line's name, in place of the parts the lists found of it
        found = [(a, b) for a, b in found if b < speaker[0][0] or a > speaker[0][1]] + speaker
    signature = _lower_signature(run, toks, leads)
    if signature and not any(a <= signature[0][1] and b >= signature[0][0] for a, b in found):
        found += signature
    if toks and toks[-1].word.islower():
        lower = _lower_names(toks, sorted({0} | leads | weak | _after(_LOWER_LEAD_RX, run, toks)))
        if lower and not any(a <= lower[0][0] and b >= lower[0][1] for a, b in found):
            found = [(a, b) for a, b in found if b < lower[0][0] or a > lower[0][1]] + lower
    spans: list[Span] = []
    for a, b in found:
        s, e = toks[a].start, toks[b].end
        spans.append((s, e, "PERSON", " ".join(run[s:e].split()).casefold()))
    return spans


def _speaker_turn(toks: list[Tok]) -> list[Span]:
    """The speaker of a turn ("Tuomas: …"), when the word is a given name the lists hold
    that is no common word or particle ("Agent:", "Note:", "Status:" are kept)."""
    t = toks[0]
    if not _is_name_word(t) or t.low in _LEAD_WORDS or t.low in PARTICLES \
            or not _evidence().given(t):
        return []
    return [(t.start, t.end, "PERSON", t.low)]


def judge(run: str, people: bool = True, places: bool = True,
          regions: tuple[str, ...] = numbers.DEFAULT_REGIONS) -> list[Span]:
    """The PERSON and ADDRESS spans of one run, in order (and PHONE: a number on the line
    under a signature's name)."""
    chat = _CHAT_LEAD_RX.match(run)  # "@Ana Souza", "[09:14] Ana Souza:": the first word is led
    toks = _tokens(" " * chat.end() + run[chat.end():] if chat else run)
    spans: list[Span] = []
    skip: set[int] = set()
    if places:
        for a, b in addresses(toks):
            s, e = toks[a].start, toks[b].end
            value = " ".join(re.findall(rf"[0-9A-Za-z{U}{L}]+", run[s:e])).casefold()
            spans.append((s, e, "ADDRESS", value))
            skip |= set(range(a, b + 1))
    if people and _SPEAKER_RX.fullmatch(run):
        return _speaker_turn(toks)
    if people:
        names = given_names()
        skip |= _streets(toks, names)
        leads, weak = _after(_LEAD_RX, run, toks), _after(_WEAK_LEAD_RX, run, toks)
        headed = _after(_HEADER_RX, run, toks) | ({0} if chat else set())
        weak |= headed
        before_email: int | None = None
        if run.endswith(">") and toks:  # capitalised words right before an e-mail: a name
            k = len(toks) - 1
            while k > 0 and len(toks) - k < 3 and _is_name_word(toks[k - 1]) and not toks[k].line \
                    and not toks[k - 1].stop:
                k -= 1
            before_email = k if _is_name_word(toks[k]) and toks[-1].end >= len(run) - 24 else None
            if before_email is not None:
                leads.add(before_email)
        found = _names(run, toks, skip, names, leads, weak, headed)
        if before_email is not None:
            # the whole name up to the e-mail ("Luiz Miguel Carvalho <…>": no sentence starts)
            found = [(a, len(toks) - 1) if a == before_email else (a, b) for a, b in found]
        found = _signature_lines(run, toks, found, leads | weak)
        for a, b in found:
            s, e = toks[a].start, toks[b].end
            value = " ".join(run[s:e].split()).casefold()
            spans.append((s, e, "PERSON", value))
        spans += _signature_phones(run, toks, found, leads, regions)
    spans.sort()
    return spans
