"""Numbers that identify a person: phones (via `phonenumbers`), national ids with their
checksums, dates of birth, MAC addresses, passports and bank accounts.

Each function judges one candidate string and returns the normalised value (the text
the placeholder's keyed hash is taken of) or None: phones become E.164, ids lose their
separators and are upper-cased, dates become ISO ``YYYY-MM-DD``.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

from rlforge.ingest.redaction.words import MONTHS

DEFAULT_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "NL", "IT")


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
    if nir_ok(compact) or bsn_ok(compact) or steuer_id_ok(compact) or ssn_ok(compact):
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
    elif m := re.fullmatch(r"([0-9]{1,2})\.? ([a-zäéû]+)\.? ([0-9]{4})", t):
        d, mo, y = int(m[1]), _MONTH_NO.get(m[2], 0), int(m[3])
    elif m := re.fullmatch(r"([a-zäéû]+)\.? ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4})", t):
        d, mo, y = int(m[2]), _MONTH_NO.get(m[1], 0), int(m[3])
    else:
        return None
    try:
        return dt.date(y, mo, d).isoformat() if 1900 <= y <= 2030 else None
    except ValueError:
        return None


def mac_address(text: str) -> str | None:
    """Six bytes as ``aa:bb:cc:dd:ee:ff``, ``AA-BB-..`` or ``aabb.ccdd.eeff``: the 12 hex
    digits, lower-case; None for the all-zero and broadcast addresses."""
    h = re.sub(r"[:.-]", "", text).lower()
    if len(h) != 12 or h in ("000000000000", "ffffffffffff"):
        return None
    return h
