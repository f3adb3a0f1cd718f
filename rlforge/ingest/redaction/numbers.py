"""Numbers that identify a person: phones (via `phonenumbers`), cards, IBANs, national
ids with their checksums, dates of birth, passports and bank accounts.

The value functions (`phone_e164`, `national_id`, `birth_date`) judge one candidate
string and return the normalised value (the text the placeholder's keyed hash is taken
of) or None: phones become E.164, ids lose their separators and are upper-cased, dates
become ISO ``YYYY-MM-DD``. The detectors after them (`DETECTORS`) find these numbers in
a rule's token: a digit run is a card only if Luhn-valid *and* of a known network prefix
and length (a 15-digit order number starting with 1 is not a card); phone numbers need a
``+country`` code, the North-American ``(555) 201-4567`` shapes or a ``phone:``/``tel``/
``mobile`` label (bare digit runs are ids and timestamps); digits glued to ``_``, ``-``
or ``.`` (``blk_-1608999687919862906``, ``2005-06-03-15.42.50``) are never numbers of
interest.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import string

from rlforge.ingest.redaction.rules import (CARD, DATE, EMAIL_TAIL, ID_CTX, ID_VALUE, PHONE_NUM,
                                            Detector, Span)
from rlforge.ingest.redaction.secrets import generic_token
from rlforge.ingest.redaction.words import ID_WORDS, MONTHS

DEFAULT_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "NL", "IT", "ES", "PT", "PL")


@functools.lru_cache(maxsize=None)
def _pn():
    import phonenumbers

    return phonenumbers


_PERSONAL = (0, 1, 2)  # fixed line, mobile, either: a bare unlabelled number must be one


@functools.lru_cache(maxsize=None)
def _no_trunk_zero(region: str) -> bool:
    """A region whose national numbers are not written with a leading trunk 0 (US, IT):
    there a bare digit run may be a whole national number."""
    meta = _pn().PhoneMetadata.metadata_for_region(region)
    return meta is not None and meta.national_prefix != "0"


def phone_e164(text: str, regions: tuple[str, ...] = DEFAULT_REGIONS,
               labelled: bool = False) -> str | None:
    """The E.164 form of a written phone number, or None if it is not one.

    ``+CC`` and ``00CC`` numbers need a possible length for their country; a national
    number with a trunk 0 needs to be valid in one of `regions` (or of possible length,
    when `labelled` by a word such as "phone", or written in groups with 9+ digits); a digit run without a 0 only counts in a
    region without trunk prefix 0 (US, IT).
    """
    pn = _pn()
    s = text.replace("(0)", " ").strip()
    digits = re.sub(r"[^0-9]", "", s)
    if not 7 <= len(digits) <= 15:
        return None
    if s.startswith("+") or s.startswith("00"):
        plain = "+" + (digits[2:] if s.startswith("00") else digits)
        try:
            n = pn.parse(plain, None)
        except pn.NumberParseException:
            return plain if labelled else None
        ok = pn.is_valid_number(n) or (pn.is_possible_number(n) and len(digits) >= 9)
        if ok:
            return pn.format_number(n, pn.PhoneNumberFormat.E164)
        return plain if labelled else None  # a number a label vouches for, even if unknown
    candidates = []
    # an area code in brackets is a phone's own shape: "(0161) 496 0000", "(030) 1234567"
    separated = bool(re.match(r"\(0[0-9]{1,5}\)", s))
    if not (labelled or separated) and len(digits) < 9:
        return None  # a short bare number is an id more often than a phone
    first = s.lstrip("(")[:len(s.lstrip("(")) - len(s.lstrip("(").lstrip("0123456789"))]
    if not labelled and len(first) >= 6 and len(first) < len(digits):
        return None  # "081109 203615": a log's date and time, not an area code
    for region in regions:
        if digits[0] != "0" and not _no_trunk_zero(region):
            continue
        if digits[0] == "0" and region == "US":
            continue
        try:
            n = pn.parse(digits, region)
        except pn.NumberParseException:
            continue
        if pn.is_valid_number(n) and (labelled or separated or pn.number_type(n) in _PERSONAL):
            return pn.format_number(n, pn.PhoneNumberFormat.E164)
        if (labelled or (separated and len(digits) >= 9)) and pn.is_possible_number(n):
            candidates.append(n)
    if candidates:
        return pn.format_number(candidates[0], pn.PhoneNumberFormat.E164)
    return None


# --- national ids ------------------------------------------------------------------------

_CF_ODD = dict(zip("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                   [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4,
                    18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23]))


def codice_fiscale_ok(cf: str) -> bool:
    """The Italian tax code's check letter (the 16th character)."""
    if not re.fullmatch(r"[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-EHLMPRST][0-9LMNPQRSTUV]{2}[A-Z]"
                        r"[0-9LMNPQRSTUV]{3}[A-Z]", cf):
        return False
    total = 0
    for i, c in enumerate(cf[:15]):
        total += _CF_ODD[c] if i % 2 == 0 else (int(c) if c.isdigit() else ord(c) - 65)
    return chr(65 + total % 26) == cf[15]


def nir_ok(nir: str) -> bool:
    """The French social security number (NIR): 13 characters and a mod-97 key."""
    if not re.fullmatch(r"[12378][0-9]{2}(?:0[1-9]|1[0-2]|[2-9][0-9])(?:[0-9]{2}|2[AB])[0-9]{8}", nir):
        return False
    body = nir[:13].replace("2A", "19").replace("2B", "18")
    return 97 - int(body) % 97 == int(nir[13:])


def bsn_ok(bsn: str) -> bool:
    """The Dutch citizen service number's eleven test."""
    if not re.fullmatch(r"[0-9]{8,9}", bsn):
        return False
    bsn = bsn.zfill(9)
    total = sum(int(c) * w for c, w in zip(bsn, (9, 8, 7, 6, 5, 4, 3, 2, -1)))
    return total % 11 == 0 and total > 0


def steuer_id_ok(tin: str) -> bool:
    """The German tax id (Steuer-IdNr): 11 digits, ISO 7064 MOD 11,10 check digit."""
    if not re.fullmatch(r"[1-9][0-9]{10}", tin):
        return False
    product = 10
    for c in tin[:10]:
        total = (int(c) + product) % 10 or 10
        product = (total * 2) % 11
    return (11 - product) % 10 == int(tin[10])


def ssn_ok(ssn: str) -> bool:
    """A US SSN the SSA could issue: area not 000, 666 or 9xx, group and serial not 0."""
    return (len(ssn) == 9 and ssn.isdigit() and ssn[:3] not in ("000", "666")
            and ssn[0] != "9" and ssn[3:5] != "00" and ssn[5:] != "0000")


_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def dni_ok(dni: str) -> bool:
    """The Spanish DNI (8 digits) or NIE (X, Y or Z and 7 digits) and its check letter."""
    m = re.fullmatch(r"([XYZ]?)([0-9]{7,8})([A-Z])", dni)
    if m is None or len(m[1] + m[2]) != 8:
        return False
    number = int(str("XYZ".index(m[1])) + m[2] if m[1] else m[2])
    return _DNI_LETTERS[number % 23] == m[3]


def _valid_date(y: int, m: int, d: int) -> bool:
    try:
        dt.date(y, m, d)
    except ValueError:
        return False
    return True


def pesel_ok(pesel: str) -> bool:
    """The Polish PESEL: a birth date (the century in the month), a serial and a weighted
    check digit."""
    if not re.fullmatch(r"[0-9]{11}", pesel):
        return False
    total = sum(int(c) * w for c, w in zip(pesel, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)))
    if (10 - total % 10) % 10 != int(pesel[10]):
        return False
    month = int(pesel[2:4])
    century = {0: 1900, 20: 2000, 40: 2100, 60: 2200, 80: 1800}[month // 20 * 20]
    return _valid_date(century + int(pesel[:2]), month % 20, int(pesel[4:6]))


def nif_pt_ok(nif: str) -> bool:
    """The Portuguese tax number (NIF): 9 digits, a mod-11 check digit."""
    if not re.fullmatch(r"[1235689][0-9]{8}", nif):
        return False
    rest = sum(int(c) * w for c, w in zip(nif, range(9, 1, -1))) % 11
    return (0 if rest < 2 else 11 - rest) == int(nif[8])


def be_number_ok(number: str) -> bool:
    """The Belgian national number: a birth date, a serial, and 97 less the rest mod 97
    (with a 2 in front for people born from 2000)."""
    if not re.fullmatch(r"[0-9]{11}", number):
        return False
    body, check = number[:9], int(number[9:])
    return check in (97 - int(body) % 97, 97 - int("2" + body) % 97)


def personnummer_ok(number: str) -> bool:
    """The Swedish personnummer (YYMMDD and 4 digits, Luhn over the 10) with a real date
    (a samordningsnummer adds 60 to the day)."""
    digits = number[-10:]
    if not re.fullmatch(r"(?:[0-9]{2})?[0-9]{10}", number) or not _luhn(digits):
        return False
    day = int(digits[4:6])
    return _valid_date(2000, int(digits[2:4]), day - 60 if day > 60 else day)


_NINO = re.compile(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z][0-9]{6}[A-Z]")
_SVNR = re.compile(r"[0-9]{2}(?:0[1-9]|[12][0-9]|3[01])(?:0[1-9]|1[0-2])[0-9]{2}[A-Z][0-9]{3}")


def national_id(text: str, hint: str | None = None) -> tuple[str, str] | None:
    """(kind, normalised value) of a national id, or None. `hint` is the kind a context
    word asked for (SSN, NATIONAL_ID, PASSPORT, ACCOUNT): without one, only shapes that
    cannot be mistaken (dashed SSN, codice fiscale, NIR and NINO shapes) are taken."""
    compact = re.sub(r"[ .\-/]", "", text).upper()
    if re.fullmatch(r"[0-9]{3}-[0-9]{2}-[0-9]{4}", text) and ssn_ok(compact):
        return "SSN", compact
    if codice_fiscale_ok(compact):
        return "NATIONAL_ID", compact
    if _NINO.fullmatch(compact) and compact[:2] not in ("BG", "GB", "NK", "KN", "TN", "NT"):
        return "NATIONAL_ID", compact
    if _SVNR.fullmatch(compact):
        return "NATIONAL_ID", compact
    if dni_ok(compact):
        return "NATIONAL_ID", compact
    if re.fullmatch(r"[0-9]{2}\.[0-9]{2}\.[0-9]{2}-[0-9]{3}\.[0-9]{2}", text) and be_number_ok(compact):
        return "NATIONAL_ID", compact
    if re.fullmatch(r"[12](?: [0-9]{2}){2} (?:[0-9]{2}|2[AB])(?: [0-9]{3}){2} [0-9]{2}", text) and nir_ok(compact):
        return "NATIONAL_ID", compact
    if re.fullmatch(r"(?:[0-9]{2})?[0-9]{6}[-+][0-9]{4}", text) and personnummer_ok(compact.replace("+", "")):
        return "NATIONAL_ID", compact.replace("+", "")
    if hint is None:
        return None
    if hint == "SSN":
        return ("SSN", compact) if ssn_ok(compact) else None
    if hint == "PASSPORT":
        ok = bool(re.fullmatch(r"[A-Z0-9]{6,10}", compact) and re.search(r"[0-9]{4}", compact))
        return ("PASSPORT", compact) if ok else None
    if hint == "ACCOUNT":
        ok = bool(re.fullmatch(r"[A-Z0-9]{6,34}", compact)) and sum(c.isdigit() for c in compact) >= 6
        return ("ACCOUNT", compact) if ok else None
    if any(ok(compact) for ok in (nir_ok, bsn_ok, steuer_id_ok, ssn_ok, pesel_ok, nif_pt_ok,
                                  be_number_ok, personnummer_ok)):
        return "NATIONAL_ID", compact
    if re.fullmatch(r"[A-Z0-9]{8,20}", compact) and sum(c.isdigit() for c in compact) >= 6:
        return "NATIONAL_ID", compact  # an id number the context names, of no known shape
    return None


# --- dates of birth ----------------------------------------------------------------------

_MONTH_NO = {}
for _i, _m in enumerate("january february march april may june july august september "
                        "october november december".split()):
    _MONTH_NO[_m] = _MONTH_NO[_m[:3]] = _i + 1
_LOCAL_MONTHS = [
    "januar februar märz april mai juni juli august september oktober november dezember",
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "januari februari maart april mei juni juli augustus september oktober november december",
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre "
    "dicembre",
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    # Polish: the genitive of a date ("3 marca 1985") and the nominative
    "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października "
    "listopada grudnia",
    "styczeń luty marzec kwiecień maj czerwiec lipiec sierpień wrzesień październik listopad "
    "grudzień",
    # abbreviations of the other languages
    "janv févr mars avr mai juin juil août sept oct nov déc",
    "ene feb mar abr may jun jul ago sep oct nov dic",
    "gen feb mar apr mag giu lug ago set ott nov dic",
    "jan fev mar abr mai jun jul ago set out nov dez",
    "jan feb mrt apr mei jun jul aug sep okt nov dec",
    "jan feb mär apr mai jun jul aug sep okt nov dez",
    "sty lut mar kwi maj cze lip sie wrz paź lis gru",
]
for _line in _LOCAL_MONTHS:
    for _i, _m in enumerate(_line.split()):
        _MONTH_NO.setdefault(_m, _i + 1)
_MONTH_NO.update({"sept": 9, "maerz": 3, "jänner": 1, "fevrier": 2, "aout": 8, "decembre": 12})
assert set(MONTHS) <= set(_MONTH_NO), set(MONTHS) - set(_MONTH_NO)


def birth_date(text: str, month_first: bool = False) -> str | None:
    """ISO date of a written date (``12.03.1985``, ``03/12/1985``, ``12 March 1985``,
    ``March 12, 1985``, ``1985-03-12``), or None. Day-first unless the day cannot be."""
    t = text.strip().rstrip(".,").lower()
    m = re.fullmatch(r"([0-9]{4})[-/.]([0-9]{1,2})[-/.]([0-9]{1,2})", t)
    if m:
        y, mo, d = int(m[1]), int(m[2]), int(m[3])
    elif m2 := re.fullmatch(r"([0-9]{1,2})[-/. ]([0-9]{1,2})[-/. ]([0-9]{2,4})", t):
        m = m2
        a, b, y = int(m[1]), int(m[2]), int(m[3])
        d, mo = (b, a) if month_first and a <= 12 else (a, b)
        if mo > 12 and d <= 12:
            d, mo = mo, d
        if y < 100:
            y += 1900 if y > 30 else 2000
    elif m := re.fullmatch(r"([0-9]{1,2})(?:st|nd|rd|th|er|º|°)?\.? (?:de )?([^\W\d_]+)\.?,? (?:de )?([0-9]{4})"
                           r"|([0-9]{1,2})-([^\W\d_]+)-([0-9]{2}|[0-9]{4})", t):
        d, mo, y = (int(m[1]), _MONTH_NO.get(m[2], 0), int(m[3])) if m[1] else (
            int(m[4]), _MONTH_NO.get(m[5], 0), int(m[6]))
        if y < 100:
            y += 1900 if y > 30 else 2000
    elif m := re.fullmatch(r"([^\W\d_]+)\.? ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4})", t):
        d, mo, y = int(m[2]), _MONTH_NO.get(m[1], 0), int(m[3])
    else:
        return None
    try:
        return dt.date(y, mo, d).isoformat() if 1900 <= y <= 2030 else None
    except ValueError:
        return None


# --- detectors: the findings in a rule's token ------------------------------------------

_IBAN_LENGTHS = dict(
    AD=24, AE=23, AL=28, AT=20, AZ=28, BA=20, BE=16, BG=22, BH=22, BR=29, BY=28, CH=21,
    CR=22, CY=28, CZ=24, DE=22, DK=18, DO=28, EE=20, EG=29, ES=24, FI=18, FO=18, FR=27,
    GB=22, GE=22, GI=23, GL=18, GR=27, GT=28, HR=21, HU=28, IE=22, IL=23, IQ=23, IS=26,
    IT=27, JO=30, KW=30, KZ=20, LB=28, LC=32, LI=21, LT=20, LU=20, LV=21, MC=27, MD=24,
    ME=22, MK=19, MR=27, MT=31, MU=30, NL=18, NO=15, PK=24, PL=28, PS=29, PT=25, QA=29,
    RO=24, RS=22, SA=24, SC=31, SE=24, SI=19, SK=24, SM=27, ST=25, SV=28, TL=23, TN=24,
    TR=26, UA=29, VA=22, VG=24, XK=20,
)
_SPLIT_CARD = re.compile(r"[ -]")
_PHONE_PART = re.compile(r"(?:[ .-]?|[ ]?/[ ]?)(?:\([0-9]{1,5}\)|[0-9]+)")  # whole groups: never half a run
_PUNCT_OUT = str.maketrans("", "", " .-()+/")  # phone punctuation out, digits stay


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_network(d: str) -> bool:
    """A known card network's prefix (IIN) and length; order numbers rarely have both."""
    n, p2, p3, p4 = len(d), int(d[:2]), int(d[:3]), int(d[:4])
    if d[0] == "4":
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16
    if p2 in (34, 37):
        return n == 15
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or p2 == 62 or 3528 <= p4 <= 3589:
        return 16 <= n <= 19
    if 300 <= p3 <= 305 or p2 in (36, 38, 39):
        return 14 <= n <= 19
    if p4 in (2131, 1800):
        return n == 15  # JCB's older 15-digit numbers
    if p2 == 50 or 56 <= p2 <= 58 or p4 in (6304, 6759, 6761, 6762, 6763):
        return 12 <= n <= 19  # Maestro
    return False


def _iban_ok(compact: str) -> bool:
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1



_ID_KIND = {w.replace("'", ""): k for w, k in ID_WORDS.items()}
_ID_CTX_RX = re.compile(ID_CTX.replace(f"[ \\t]+{ID_VALUE}", f"[ \\t]+(?P<v>{ID_VALUE})")
                        + f"(?P<mail>{EMAIL_TAIL})?")
assert "(?P<v>" in _ID_CTX_RX.pattern


def _h_id_ctx(tok: str) -> list[Span]:
    low = tok.lower()
    hint = next((k for w, k in sorted(_ID_KIND.items(), key=lambda x: -len(x[0]))
                 if low.startswith(w)), None)
    m = _ID_CTX_RX.fullmatch(tok)
    if m is None or m["mail"]:  # an e-mail address: left to the e-mail rules
        return []
    value, start = m["v"], m.start("v")
    # the value may have taken words after the id: try the longest group prefix first
    groups = re.split(r"(?<=[A-Za-z0-9])(?=[ .-])", value)
    if len(groups) > 1 and groups[0].isalpha() and groups[0].islower() and groups[1][:1] == " ":
        # a lower-case word the cue's gap left before the id ("numéro national est le ...")
        start += len(groups[0]) + 1
        groups = [groups[1][1:], *groups[2:]]
    # groups after the first hold digits or are one letter (a NINO's suffix): never words
    ok = 1
    while ok < len(groups) and (any(c.isdigit() for c in groups[ok])
                                or re.fullmatch(r"[ .-][A-Za-z]", groups[ok])):
        ok += 1
    for n in range(ok, 0, -1):
        cand = "".join(groups[:n])
        found = national_id(cand, hint)
        if found is not None:
            kind, norm = found
            return [(start, start + len(cand), kind, norm)]
    return []


def _h_dob_ctx(tok: str) -> list[Span]:
    m = re.search(rf"(?:{DATE})$", tok)
    if m is None:
        return []
    for date in (m.group(), re.sub(r"[0-9]+$", lambda d: d.group()[:4], m.group())):
        iso = birth_date(date, month_first="/" in date and "born" in tok.lower())
        if iso is not None:
            return [(m.start(), m.start() + len(date), "DOB", iso)]
    return []


def _h_dob_after(tok: str) -> list[Span]:
    """A date followed by a word saying it is one's birth: "am 27.10.1949 geboren"."""
    m = re.match(rf"(?:{DATE})", tok)
    iso = birth_date(m.group()) if m else None
    return [(0, m.end(), "DOB", iso)] if m and iso else []


def _h_order_ctx(tok: str) -> list[Span]:
    return []  # an order, invoice or ticket number: kept even when Luhn-valid


def _h_card_ctx(tok: str) -> list[Span]:
    m = re.search(rf"(?:{CARD})$", tok)
    if m is None:
        return []
    spans = _h_card(m.group(), context=True)
    return [(m.start() + s, m.start() + e, k, v) for s, e, k, v in spans]


def _h_natid(tok: str) -> list[Span]:
    found = national_id(tok)
    return [(0, len(tok), found[0], found[1])] if found else []


def _h_iban(tok: str) -> list[Span]:
    need = _IBAN_LENGTHS.get(tok[:2])
    if need is None:
        return generic_token(tok)
    taken, end = 0, 0
    for end, c in enumerate(tok, 1):
        taken += c != " "
        if taken == need:
            break
    compact = tok[:end].replace(" ", "")
    if taken == need and _iban_ok(compact):
        return [(0, end, "IBAN", compact)]
    return generic_token(tok)


def _h_card(tok: str, context: bool = False, logs: bool = False) -> list[Span]:
    """A Luhn-valid number of 12 to 19 digits with a network's prefix and length, or of
    any prefix after a card word ("card", "Karte", "carte", "kaart", "carta"). In `logs`,
    an unlabelled run of digits alone is a card only at 14-16 digits: 13 starting with 1
    are a time in milliseconds, 17-19 a request or span id (one in ten passes Luhn)."""
    if logs and tok.isdigit() and not 14 <= len(tok) <= 16:
        return []
    groups = _SPLIT_CARD.split(tok)
    options = [tok]
    if len(groups) > 3:
        options.append(tok[: len(tok) - len(groups[-1]) - 1])
    for opt in options:
        d = opt.replace(" ", "").replace("-", "")
        if 12 <= len(d) <= 19 and (context or _card_network(d)) and _luhn(d):
            return [(0, len(opt), "CARD", d)]
    return _h_phone(tok) if tok.startswith("00") and tok.isdigit() else []  # 00 + country


def _phone_span(tok: str, start: int, labelled: bool,
                regions: tuple[str, ...] = DEFAULT_REGIONS) -> list[Span]:
    """The longest prefix of the number (whole groups) that `phonenumbers` reads as a
    phone number, as its E.164 form (so every way of writing it hashes alike)."""
    plus = tok[start] == "+"
    parts: list[str] = []
    digits = 0
    for part in _PHONE_PART.finditer(tok, start + plus):  # at most 15 digits: E.164's limit
        digits += len(part.group().translate(_PUNCT_OUT))
        if digits > 15 or part.start() != start + plus + sum(len(x) for x in parts):
            break
        parts.append(part.group())
    while parts:
        num = ("+" if plus else "") + "".join(parts)
        e164 = phone_e164(num, regions, labelled or bool(_NANP.fullmatch(num)))
        if e164 is not None:
            return [(start, start + len(num), "PHONE", e164)]
        if len(num.translate(_PUNCT_OUT)) < 7:
            return []
        parts.pop()
    return []


_PHONE_NUM_RX = re.compile(rf"(?:^|(?<=[ \t:=]))(?:{PHONE_NUM})(?=$|[ ,\t])")


def _h_phone_ctx(tok: str, regions: tuple[str, ...] = DEFAULT_REGIONS) -> list[Span]:
    spans = []
    for m in _PHONE_NUM_RX.finditer(tok):
        number = m.group()
        ext = re.search(r"[ ]?(?:x|ext\.?|extension)[ ]?[0-9]{1,6}$", number)
        body = number[:ext.start()] if ext else number
        found = _phone_span(body, 0, True, regions)
        if found and ext and found[-1][1] == len(body):
            found[-1] = (0, len(number), "PHONE", found[-1][3])
        spans += [(m.start() + s, m.start() + e, k, v) for s, e, k, v in found]
    return spans


_EXTENSION = re.compile(r"(?:[ ]?(?:x|ext\.?|extension)[ ]?[0-9]{1,6})?")


def _h_phone(tok: str, regions: tuple[str, ...] = DEFAULT_REGIONS,
             bare_digits: bool = True) -> list[Span]:
    body = tok.rstrip("0123456789_" + string.ascii_letters)
    tail = tok[len(body):]
    lead = len(tail) - len(tail.lstrip("0123456789"))
    body, tail = body + tail[:lead], tail[lead:]
    if tail and not _EXTENSION.fullmatch(tail) and not _EXTENSION.fullmatch(tail.lstrip("0123456789")):
        return []  # glued to letters: an id or a hash
    if not bare_digits and body.isdigit():
        return []  # digits alone, unlabelled (in logs: a counter, not a phone)
    spans = _phone_span(body, 0, False, regions)
    if spans and spans[-1][1] == len(body) and tail:
        s, _, k, v = spans[-1]
        spans[-1] = (s, len(tok), k, v)  # the extension goes with the number
    return spans


_NANP = re.compile(r"(?:1[ .-]?)?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[ .-])[0-9]{3}[ .-][0-9]{4}")


DETECTORS: dict[str, Detector] = {
    "id_ctx": _h_id_ctx, "dob_ctx": _h_dob_ctx, "dob_after": _h_dob_after, "order_ctx": _h_order_ctx,
    "card_ctx": _h_card_ctx, "natid": _h_natid, "iban": _h_iban, "card": _h_card,
    "phone_ctx": _h_phone_ctx, "phone": _h_phone,
}


def detectors(regions: tuple[str, ...] = DEFAULT_REGIONS, logs: bool = False) -> dict[str, Detector]:
    """The detectors, with phone numbers read for `regions`. In `logs` mode (ops logs) a
    run of digits alone is a counter, a sequence number or a Unix time, never a phone,
    and a card only at 14-16 digits."""
    found = dict(DETECTORS)
    if regions != DEFAULT_REGIONS:
        for name, fn in (("phone", _h_phone), ("phone_ctx", _h_phone_ctx)):
            found[name] = functools.partial(fn, regions=regions)
    if logs:
        found["phone"] = functools.partial(_h_phone, regions=regions, bare_digits=False)
        found["card"] = functools.partial(_h_card, logs=True)
    return found
