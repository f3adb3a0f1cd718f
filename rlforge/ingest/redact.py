"""Redact personal data and secrets before anything is written to the store.

Every ingest passes its free text through a `Redactor`. A found value is replaced by a
pseudonym such as ``<EMAIL_3f9a1c>``: the kind and the first 6 hex digits of an
HMAC-SHA256 of the (normalised) value, keyed by the database's own key, so the same value
always becomes the same placeholder and a re-ingest maps identically. Placeholders are
never redacted again: ``redact(redact(x)) == redact(x)``.

How it works, and why it is fast: one regular expression, written so that Rust's `regex`
(polars) and Python's `re` read it the same way (ASCII classes, no lookaround, no ``\\b``,
no ``(?i)``), finds *candidates*. Every alternative consumes the character before its
token (a text is prefixed with ``"\\n"`` so that there always is one), which stands in for
a lookbehind, and takes its token greedily to its natural end, which stands in for a
lookahead. Whether a candidate is really a secret (Luhn, mod-97, `ipaddress`, entropy,
hard-negative rules) is then decided in Python by `Redactor._spans`, a function of the
candidate text alone. `redact_text` applies it match by match with `re`; `redact_series`
wraps every match in NUL sentinels and splits on them in one vectorised pass, judges
only the *unique* candidates, and maps them back with a hash replace, so both give the
same result by construction. Where a validator keeps part of a match (what follows an
IBAN of its country's length, ``DB_PASSWORD=`` before a value) and that part could hold
a finding of its own, the text is passed again, so a second `redact_text` changes nothing.

Decisions (hard negatives): a digit run is a card only if Luhn-valid *and* of a known
network prefix and length (a 15-digit order number starting with 1 is not a card);
phone numbers need a ``+country`` code, the North-American ``(555) 201-4567`` shapes or
a ``phone:``/``tel``/``mobile`` label (bare digit runs are ids and timestamps); digits
glued to ``_``, ``-`` or ``.`` (``blk_-1608999687919862906``, ``2005-06-03-15.42.50``) and
``v1.2.3.4`` are never numbers of interest; hex-only strings (git shas, hashes, UUIDs)
are never generic secrets; loopback/unspecified addresses and netmasks are kept.
"""

from __future__ import annotations

import base64
import binascii
import collections
import functools
import hmac
import ipaddress
import math
import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:  # polars is imported where it is used: a commit ingest loads it while git runs
    import polars as pl

from rlforge.errors import UnknownName
from rlforge.ingest.redaction import numbers, people
from rlforge.ingest.redaction.words import (CARD_WORDS, CHANGE_VERBS, DOB_WORDS, ID_WORDS, KEY_WORDS,
                                            ORDER_WORDS, PASSWORD_LINKS, PASSWORD_WORDS,
                                            PHONE_WORDS, VERSION_WORDS, phrases_rx)

KINDS: tuple[str, ...] = (
    "PRIVATE_KEY", "JWT", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "GCP_API_KEY", "GITHUB_TOKEN",
    "GITLAB_TOKEN", "SLACK_TOKEN", "STRIPE_KEY", "OPENAI_KEY", "API_KEY", "PASSWORD",
    "SECRET", "EMAIL", "PHONE", "CARD", "IBAN", "IPV4", "IPV6", "TOKEN", "PERSON", "ADDRESS",
    "SSN", "NATIONAL_ID", "PASSPORT", "DOB", "MAC", "ACCOUNT",
)
# Kinds found in runs of capitalised words (the second stage, after every other kind).
RUN_KINDS = frozenset({"PERSON", "ADDRESS"})

PLACEHOLDER = r"<[A-Z][A-Z0-9_]*_[0-9a-f]{6}>"
_SENT = "\x00"
_CACHE_LIMIT = 500_000
_MAX_PASSES = 4


def _ci(word: str) -> str:
    """A case-insensitive literal that Rust and Python read alike (no ``(?i)``)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


def _any(*words: str) -> str:
    return "(?:" + "|".join(_ci(w) for w in words) + ")"


# What may stand before a token (the consumed "lookbehind"), per family.
_P_WORD = r"[^A-Za-z0-9_]"
_P_TOK = r"[^A-Za-z0-9_-]"
_P_KEY = r"[^A-Za-z0-9_.-]"
_P_NUM = r"[^A-Za-z0-9_./\\-]"
_P_PHONE = r"[^A-Za-z0-9_./:+\\-]"  # not after ":" (a time: 16:14:04.307 28601)
_P_V4 = r"[^A-Za-z0-9_.~-]"
_P_V6 = r"[^A-Za-z0-9_:.-]"
_P_GEN = r"[^A-Za-z0-9+/_-]"

_KEYTAG = r"(?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?"
_PEM = (rf"-----BEGIN {_KEYTAG}-----(?:[A-Za-z0-9+/=:,. \t\r\n\\-]*?-----END {_KEYTAG}-----"
        r"|(?:(?:\r?\n|\\n)[A-Za-z0-9+/=]+)*|(?:[ \t]+[A-Za-z0-9+/=]{20,})+)")
_URL_CRED = r"[A-Za-z][A-Za-z0-9+.-]*://[^ \t\r\n/?#@:'\"<>]*:[^ \t\r\n/?#'\"<>]+@"
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "pwd")
_SECRET_WORDS = ("secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key",
                 "access-key", "accountkey", "credential", "credentials", "privatekey",
                 "private_key")
_KEY = (rf"(?:[A-Za-z0-9_.-]*{_any(*_PASSWORD_WORDS, *_SECRET_WORDS)}(?:[_.-]?{_ci('key')})?"
        rf"|(?:[A-Za-z0-9_.-]*[_.-])?{_ci('pass')})")
_SEP = r"[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*"
_VALUE = (r"\"[^\"\r\n]+\"|'[^'\r\n]+'"
          r"|[^ \t\r\n\"'<>,;&=:(){}\[\]`][^ \t\r\n\"'<>,;&(){}\[\]`]*")
_AUTH = rf"(?:{_ci('bearer')}|Basic|Token)[ \t]+[A-Za-z0-9._~+/-]+=*"
_G = r"[0-9A-Fa-f]{1,4}"
_IPV6 = rf"(?:{_G}(?::{_G}){{7}}|(?:{_G}(?::{_G}){{0,6}})?::(?:{_G}(?::{_G}){{0,6}})?)[0-9A-Za-z_.:]*"
# A dotted quad after a version word ("fixed in 6.13.10.180", "SDK 4.2.1.7", "v1.2.3.4") is
# taken with the word, and so judged a version; so is one followed by "/" (a path segment).
_IPV4 = (rf"(?:{phrases_rx(*VERSION_WORDS)}\.?[ :]*)?[0-9]+(?:\.[0-9]+){{3,}}/?")
_PHONE_GROUP = r"(?:[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,5}))"
_PHONE = (rf"(?:\+|00)[1-9][0-9]{{0,2}}(?:[ ]?\(0\))?{_PHONE_GROUP}{{1,6}}"
          r"|(?:1[ .-]?)?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[ .-])[0-9]{3}[ .-][0-9]{4,}"
          rf"|\(0[0-9]{{1,4}}\){_PHONE_GROUP}{{1,5}}|0[1-9][0-9]{{0,4}}{_PHONE_GROUP}{{1,5}}"
          r"|[1-9][0-9]{9,10}")
# an extension, and what else is glued on (a number glued to letters is an id, not a phone)
_PHONE = f"(?:{_PHONE})(?:[ ]?(?:x|ext\\.?|extension)[ ]?[0-9]{{1,6}})?[A-Za-z0-9_]*"
_PHONE_LINKS = phrases_rx("me", "us", "on", "at", "is", "ist", "au", "op", "al", "unter", "via",
                        "oder", "or", "ou", "of", "oppure", "mobil", "mobile")
_PHONE_NUM = (rf"\+?(?:\([0-9]{{1,5}}\)|[0-9]{{1,5}}){_PHONE_GROUP}{{1,6}}"
              r"(?:[ ]?(?:x|ext\.?|extension)[ ]?[0-9]{1,6})?")
# A labelled number, or a labelled list of two: "call me on X or Y", "unter X oder mobil Y".
_PHONE_CTX = (rf"{phrases_rx(*PHONE_WORDS)}\.?(?:[ ]?(?:{_ci('number')}|{_ci('nummer')}|[Nn]o\.?|#))?"
              rf"(?:[ \t]+{_PHONE_LINKS})*[ \t]*(?:[:=][ \t]*)?[ \t]*{_PHONE_NUM}"
              rf"(?:,?[ \t]+{phrases_rx('or', 'oder', 'ou', 'of', 'oppure', 'o', 'and', 'und', 'et', 'en', 'e')}"
              rf"(?:[ \t]+{_PHONE_LINKS})*[ \t]+{_PHONE_NUM})?")
_CARD = (r"[0-9]{4}(?:[ -][0-9]{4}){2,3}(?:[ -][0-9]{1,4})?|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5}"
         r"|[0-9]{12,}")
_GAP = r"(?:[ \t]+[A-Za-zÀ-ÖØ-öø-ÿ'’]+){0,%d}?"  # a few plain words between a cue and a value
_CARD_CTX = rf"{phrases_rx(*CARD_WORDS)}{_GAP % 6}[ \t]*[:#]?[ \t]*(?:{_CARD})"
_NUMBER_WORD = rf"(?:[ \t]*{phrases_rx('number', 'nummer', 'numéro', 'numero', 'no', 'nr', 'n°', 'id', '#')}\.?)?"
_ORDER_CTX = (rf"{phrases_rx(*ORDER_WORDS)}{_GAP % 3}{_NUMBER_WORD}"
              r"[ \t]*[:#]?[ \t]*[0-9]{6,}")
_PW_VALUE = r"[^ \t\r\n]+"
_KEY_VALUE = r"[A-Za-z0-9_+/=.][A-Za-z0-9_+/=.-]*"  # never "-----BEGIN": a PEM block is its own
_ID_VALUE = r"[A-Za-z0-9]+(?:[ .-][A-Za-z0-9]+){0,6}"
_LINK = rf"(?:[ \t]*[:=]|[ \t]+{phrases_rx(*PASSWORD_LINKS)})"  # ":", "is", "ist", "est", "è"...


def _cued(words: Iterable[str], gap: int, link: str, value: str, after: str = "") -> str:
    """A cue word, up to `gap` plain words, a link and the value: "my password is now X"."""
    return rf"{phrases_rx(*words)}{after}{_GAP % gap}{link}[ \t]+{value}"


_PW_PROSE = _cued(PASSWORD_WORDS, 4, _LINK, _PW_VALUE)
_PW_CHANGE = _cued(CHANGE_VERBS, 3, rf"[ \t]+{phrases_rx('to', 'in', 'auf', 'en', 'pour', 'naar', 'a')}",
                   _PW_VALUE)
_KEY_PROSE = _cued(KEY_WORDS, 5, _LINK + "?", _KEY_VALUE)
_ID_CTX = _cued(ID_WORDS, 3, _LINK + "?", _ID_VALUE, after=_NUMBER_WORD)
_DATE = (r"[0-9]{1,4}[./-][0-9]{1,2}[./-][0-9]+|[0-9]{1,2}\.?[ ][A-Za-zäéû]+\.?[ ][0-9]+"
         r"|[A-Za-z]+\.?[ ][0-9]{1,2}(?:st|nd|rd|th)?,?[ ][0-9]+")
_DOB_CTX = (rf"{phrases_rx(*DOB_WORDS)}{_GAP % 3}(?:[ \t]*[:=]|[ \t]+{phrases_rx('is', 'ist', 'am', 'le', 'op', 'il', 'on', 'est', 'è')})?"
            rf"[ \t]*(?:{_DATE})")
_MAC = (r"[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}[0-9A-Za-z:.-]*"
        r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}[0-9A-Za-z.]*")
_NATID = (r"[0-9]{3}-[0-9]{2}-[0-9]{4}[0-9-]*"
          r"|[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z][A-Za-z0-9]*"
          r"|[A-Z]{2}(?: ?[0-9]{2}){3} ?[A-Z][A-Za-z0-9]*|[A-Z]{2} [0-9]{6} [A-Z][A-Za-z0-9]*"
          r"|[0-9]{2} ?[0-9]{6} ?[A-Z] ?[0-9]{3}[0-9A-Za-z]*")
_URL_TOKEN = r"[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9_.~%-]{16,}@"
# A whole run holding an upper-case letter and a digit; each part's class excludes what
# follows it, so Python's backtracking stays linear on long runs.
_GENERIC = (r"(?:[a-z0-9+/_-]*[A-Z][A-Za-z+/_-]*[0-9]|[a-z+/_-]*[0-9][a-z0-9+/_-]*[A-Z])"
            r"[A-Za-z0-9+/_-]*=*")


@dataclass(frozen=True)
class _Rule:
    name: str
    kinds: tuple[str, ...]
    prefix: str | None  # class of the consumed character before the token, or None
    token: str


# Priority order: at one start position the first rule that matches wins.
_RULES: tuple[_Rule, ...] = (
    _Rule("placeholder", (), None, PLACEHOLDER),
    _Rule("private_key", ("PRIVATE_KEY",), None, _PEM),
    _Rule("url_cred", ("PASSWORD",), r"[^A-Za-z0-9+.-]", _URL_CRED),
    _Rule("url_token", ("TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "API_KEY"), r"[^A-Za-z0-9+.-]",
          _URL_TOKEN),
    _Rule("assign", ("PASSWORD", "SECRET", "AWS_SECRET_KEY"), _P_KEY, _KEY + _SEP + f"(?:{_VALUE})"),
    _Rule("auth", ("SECRET", "PASSWORD"), _P_WORD, _AUTH),
    _Rule("pw_prose", ("PASSWORD",), _P_WORD, _PW_PROSE),
    _Rule("pw_change", ("PASSWORD",), _P_WORD, _PW_CHANGE),
    _Rule("key_prose", ("API_KEY",), _P_WORD, _KEY_PROSE),
    _Rule("id_ctx", ("SSN", "NATIONAL_ID", "PASSPORT", "ACCOUNT"), _P_WORD, _ID_CTX),
    _Rule("dob_ctx", ("DOB",), _P_WORD, _DOB_CTX),
    _Rule("order_ctx", ("CARD",), _P_WORD, _ORDER_CTX),
    _Rule("card_ctx", ("CARD",), _P_WORD, _CARD_CTX),
    _Rule("slack_hook", ("SLACK_TOKEN",), None, r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    _Rule("jwt", ("JWT",), _P_TOK, r"eyJ[A-Za-z0-9_-]+\.ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),
    _Rule("github", ("GITHUB_TOKEN",), _P_TOK, r"gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+"),
    _Rule("gitlab", ("GITLAB_TOKEN",), _P_TOK,
          r"gl(?:pat|dt|rt|cbt|ptt|soat|ft|imt|oas|agent)-[A-Za-z0-9_-]+"),
    _Rule("slack", ("SLACK_TOKEN",), _P_TOK, r"xox[abposre]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+"),
    _Rule("stripe", ("STRIPE_KEY",), _P_TOK, r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]+|whsec_[A-Za-z0-9]+"),
    _Rule("openai", ("OPENAI_KEY", "API_KEY"), _P_TOK, r"sk-[A-Za-z0-9_-]+"),
    _Rule("aws_id", ("AWS_ACCESS_KEY",), _P_TOK,
          r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]+"),
    _Rule("gcp", ("GCP_API_KEY",), _P_TOK, r"AIza[A-Za-z0-9_-]+"),
    _Rule("api_key", ("API_KEY",), _P_TOK,
          r"hf_[A-Za-z0-9]+|npm_[A-Za-z0-9]+|pypi-[A-Za-z0-9_-]+|SG\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"
          r"|ya29\.[A-Za-z0-9_-]+|shp(?:at|ca|pa|ss)_[A-Fa-f0-9]+|dop_v1_[a-f0-9]+"
          r"|sq0(?:atp|csp)-[A-Za-z0-9_-]+|SK[0-9a-fA-F]+|key-[A-Za-z0-9]+"),
    _Rule("email", ("EMAIL",), r"[^A-Za-z0-9._%+-]",
          r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    _Rule("iban", ("IBAN",), r"[^A-Za-z0-9]", r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,32}"),
    _Rule("natid", ("SSN", "NATIONAL_ID"), _P_TOK, _NATID),
    _Rule("mac", ("MAC",), r"[^A-Za-z0-9_:.-]", _MAC),
    _Rule("card", ("CARD",), _P_NUM, _CARD),
    _Rule("phone_ctx", ("PHONE",), _P_WORD, _PHONE_CTX),
    _Rule("phone", ("PHONE",), _P_PHONE, _PHONE),
    _Rule("ipv6", ("IPV6",), _P_V6, _IPV6),
    _Rule("ipv4", ("IPV4",), _P_V4, _IPV4),
    _Rule("generic", ("TOKEN",), _P_GEN, _GENERIC),
)

# --- validators ---------------------------------------------------------------------------

_IBAN_LENGTHS = dict(
    AD=24, AE=23, AL=28, AT=20, AZ=28, BA=20, BE=16, BG=22, BH=22, BR=29, BY=28, CH=21,
    CR=22, CY=28, CZ=24, DE=22, DK=18, DO=28, EE=20, EG=29, ES=24, FI=18, FO=18, FR=27,
    GB=22, GE=22, GI=23, GL=18, GR=27, GT=28, HR=21, HU=28, IE=22, IL=23, IQ=23, IS=26,
    IT=27, JO=30, KW=30, KZ=20, LB=28, LC=32, LI=21, LT=20, LU=20, LV=21, MC=27, MD=24,
    ME=22, MK=19, MR=27, MT=31, MU=30, NL=18, NO=15, PK=24, PL=28, PS=29, PT=25, QA=29,
    RO=24, RS=22, SA=24, SC=31, SE=24, SI=19, SK=24, SM=27, ST=25, SV=28, TL=23, TN=24,
    TR=26, UA=29, VA=22, VG=24, XK=20,
)
_HEXISH = re.compile(r"[0-9A-Fa-f-]+")
_WORDY = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}")
_VOWEL, _CONSONANTS5 = re.compile(r"[aeiouyAEIOUY]"), re.compile(r"[^aeiouyAEIOUY]{5}")
_WORD_PART = re.compile(r"[A-Z]?[a-z]{2,}|[a-z]{3,}")
_SPLIT_ID, _SPLIT_CARD, _SPLIT_PHONE = re.compile(r"[/_-]"), re.compile(r"[ -]"), re.compile(r"[ .-]")
_SIX_DIGITS, _RETINA = re.compile(r"[0-9]{6}"), re.compile(r"[0-9]+x")
_PHONE_PART = re.compile(r"[ .-]?(?:\([0-9]{1,5}\)|[0-9]+)")  # whole groups: never half a run
_PUNCT_OUT = str.maketrans("", "", " .-()+")  # phone punctuation out, digits stay
_NOT_A_VALUE = {"null", "none", "nil", "true", "false", "undefined", "empty", "n/a", "na",
                "redacted", "hidden", "masked", "required", "optional", "string", "str",
                "int", "bool", "yes", "no", "on", "off"}
_VENDOR_MIN = {  # token prefix -> minimal length of what follows it
    "github_pat_": 40, "ghp_": 30, "gho_": 30, "ghu_": 30, "ghs_": 30, "ghr_": 30,
    "hf_": 30, "npm_": 36, "pypi-": 50, "ya29.": 30, "shpat_": 32, "shpca_": 32,
    "shppa_": 32, "shpss_": 32, "dop_v1_": 64, "sq0atp-": 22, "sq0csp-": 22, "SK": 32,
    "key-": 32, "whsec_": 24,
}


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


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in collections.Counter(s).values())


def _pronounceable(run: str) -> bool:
    """A letter run that could be a word: a vowel in it and no five consonants in a row
    ("Abstract" could, "LPLTVMO" could not; random text is full of such runs)."""
    return bool(_VOWEL.search(run)) and not _CONSONANTS5.search(run)


def _looks_random(tok: str, min_len: int = 20) -> bool:
    """Random-looking: long, mixed classes, not hex, not made of words."""
    t = tok.rstrip("=")
    n = len(t)
    if n < min_len or _HEXISH.fullmatch(t):
        return False
    up = sum("A" <= c <= "Z" for c in t)
    lo = sum("a" <= c <= "z" for c in t)
    dg = sum("0" <= c <= "9" for c in t)
    if not (up and lo and (dg or n >= 24)):
        return False
    if sum(len(w) for w in _WORDY.findall(t) if _pronounceable(w)) > 0.65 * n:
        return False
    if sum(bool(_WORD_PART.fullmatch(p)) for p in _SPLIT_ID.split(t)) >= 2:
        return False  # a path or an identifier: src/main/App2, Package_for_KB3149090
    if t.startswith("/") and t.count("/") >= 2:
        return False  # a file path: /p/gb1/stella/UMT2K/1372
    if _SIX_DIGITS.search(t):
        return False  # a number inside an id; 6 digits in a row are rare in random text
    cls = ["u" if "A" <= c <= "Z" else "l" if "a" <= c <= "z" else "d" if c.isdigit() else "s"
           for c in t]
    switches = sum(a != b for a, b in zip(cls, cls[1:]))
    return switches >= 0.3 * (n - 1) and _entropy(t) >= 3.3


def _b64json(part: str) -> bool:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).lstrip()[:1] == b"{"
    except (binascii.Error, ValueError):
        return False


Span = tuple[int, int, str, str]  # start, end (in the token), kind, normalised value


def _whole(tok: str, kind: str) -> list[Span]:  # noqa: D103
    return [(0, len(tok), kind, tok)]


_PLACEHOLDER_RX = re.compile(PLACEHOLDER)
_ECHO_MIN = 6
# Kinds found by their context (a label, a cue word, a card word, a greeting), which the
# same value may lack where it is written again; self-evident kinds (e-mails, IPs, vendor
# keys) are found at every occurrence anyway.
_ECHOED = {"PHONE", "CARD", "SSN", "NATIONAL_ID", "PASSPORT", "ACCOUNT", "DOB", "PASSWORD",
           "API_KEY", "SECRET", "PERSON", "ADDRESS"}


def _echo_forms(kind: str, raw: str) -> list[str]:
    """How a redacted value may be written again in the same text: as it was, and for
    numbers, without separators. Short values (under 6 characters) are not echoed."""
    if kind not in _ECHOED:
        return []
    forms = [raw] if len(raw) >= _ECHO_MIN else []
    if kind in ("PHONE", "CARD", "IBAN", "SSN", "NATIONAL_ID"):
        bare = re.sub(r"[ .()/-]", "", raw)
        if bare != raw and len(bare) >= _ECHO_MIN:
            forms.append(bare)
    return forms


# A phone written with its country code and again without it in one text ("+1 433 255
# 8414" ... "4332558414") is one number, even where the bare digits read as another
# country's: these echo entries carry the digits, and `_unify` merges the placeholders.
_INTL, _NATIONAL = "PHONE+", "PHONE0"


def _phone_forms(raw: str, e164: str) -> list[tuple[str, str]]:
    """(role, digits) entries of one redacted phone for `_unify`: a number written with
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


def _unify(echo: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Placeholder renames in one text: a nationally written phone's placeholder becomes
    that of the one international number whose national digits it is."""
    intl: dict[str, set[str]] = collections.defaultdict(set)
    for digits, ph, role in echo:
        if role == _INTL:
            intl[digits].add(ph)
    return {ph: next(iter(intl[digits])) for digits, ph, role in echo
            if role == _NATIONAL and len(intl.get(digits, ())) == 1 and ph not in intl[digits]}


def _echo_rx(echo: Iterable[tuple[str, str, str]]) -> tuple[re.Pattern | None, dict]:
    where: dict[str, tuple[str, str]] = {}
    for raw, ph, kind in sorted(echo):
        if kind in (_INTL, _NATIONAL):
            continue
        where.setdefault(raw, (ph, kind))
    if not where:
        return None, where
    alts = "|".join(re.escape(r) for r in sorted(where, key=lambda r: (-len(r), r)))
    return re.compile(rf"(?<![\w<])(?:{alts})(?![\w>])"), where


def _h_user(tok: str, kind: str) -> list[Span]:
    """A user pattern's match, less any placeholder inside it (never redacted again)."""
    spans, pos = [], 0
    for m in [*_PLACEHOLDER_RX.finditer(tok), None]:
        end = m.start() if m else len(tok)
        if tok[pos:end].strip():
            spans.append((pos, end, kind, tok[pos:end]))
        pos = m.end() if m else pos
    return spans


def _h_placeholder(tok: str) -> list[Span]:
    return []


def _h_private_key(tok: str) -> list[Span]:
    """A key block however its line breaks were mangled: real ones, escaped ``\\n``,
    spaces or none at all, with its END line or a body long enough to be one."""
    body = tok.split("-----", 2)[-1]
    ok = "\\n" in tok or "\n" in tok or "-----END" in tok or len(body.replace(" ", "")) >= 60
    return _whole(tok, "PRIVATE_KEY") if ok else []


def _h_url_token(tok: str) -> list[Span]:
    """A token as a URL's whole userinfo: ``https://ghp_...@github.com``."""
    start = tok.index("://") + 3
    val = tok[start:-1]
    kind = _classify_value(val)
    if kind is None:
        hexy = _HEXISH.fullmatch(val) and len(val) >= 32
        kind = "TOKEN" if hexy or _looks_random(val, 20) else None
    return [(start, len(tok) - 1, kind, val)] if kind else []


_TRAILING = ".,;:!?)]}'\""


def _prose_value(tok: str) -> tuple[int, str]:
    """Where the last blank-separated word of a match starts, and that word without
    sentence punctuation after it."""
    start = max(tok.rfind(" "), tok.rfind("\t")) + 1
    val = tok[start:]
    while len(val) > 1 and val[-1] in ".,;:?" and not val[:-1].endswith(("\\", "%")):
        val = val[:-1]
    return start, val


# a template or environment variable, not a value: ${DB_PASS}, $DB_PASS, %(pw)s, {{ pw }}
_TEMPLATE_VAR = re.compile(r"\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%\(?[A-Za-z_]*\)?[sdr]|\{\{.*\}\}|<[^>]*>")


# where something was sent, not what the secret is: "password reset sent to ann@example.com"
# (a value holding an address is redacted as that address either way)
_ADDRESS_VALUE = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}|[a-z][a-z0-9+.-]*://\S+")


def _password_like(val: str, strict: bool) -> bool:
    """A value that reads as a password rather than a word of the sentence."""
    if (val.lower() in _NOT_A_VALUE or set(val) <= set("*xX.#-_") or _TEMPLATE_VAR.fullmatch(val)
            or re.fullmatch(PLACEHOLDER, val) or len(val) < 4 or _ADDRESS_VALUE.search(val)):
        return False
    has_digit = any(c.isdigit() for c in val)
    has_alpha = any(c.isalpha() for c in val)
    has_other = any(not c.isalnum() for c in val)
    if strict:  # after "changed it to": letters with digits or symbols, 8 or more
        return len(val) >= 8 and has_alpha and (has_digit or has_other) and not re.fullmatch(
            r"v?[0-9.]+[a-z]*|[A-Za-z]+[0-9]{1,2}|https?:.*|.*@.*\..*", val)
    if val.isalpha():
        return not val.islower() and not val.istitle() and not val.isupper()
    return has_alpha or has_digit and len(val) >= 4 and has_other or len(val) >= 6


def _h_pw_prose(tok: str) -> list[Span]:
    start, val = _prose_value(tok)
    return [(start, start + len(val), "PASSWORD", val)] if _password_like(val, False) else []


def _h_pw_change(tok: str) -> list[Span]:
    start, val = _prose_value(tok)
    return [(start, start + len(val), "PASSWORD", val)] if _password_like(val, True) else []


def _h_key_prose(tok: str) -> list[Span]:
    start, val = _prose_value(tok)
    kind = _classify_value(val)
    if kind is None:
        body = val.rstrip("=")
        if len(body) >= 32 and _HEXISH.fullmatch(body) and sum(c.isdigit() for c in body) >= 4:
            kind = "API_KEY"  # 32+ hex digits after a key word
        elif len(body) >= 16 and re.fullmatch(r"[A-Za-z0-9_+/-]+", body) and (
                sum(c.isdigit() for c in body) >= 2 or len(body) >= 20) and (
                sum(c.isupper() for c in body) >= 2 and sum(c.islower() for c in body) >= 2) \
                and _entropy(body) >= 3.5 and not _SIX_DIGITS.search(body):
            kind = "API_KEY"  # base62 after a key word: mixed case, varied
    return [(start, start + len(val), kind, val)] if kind else []


_ID_KIND = {w.replace("'", ""): k for w, k in ID_WORDS.items()}
_ID_CTX_RX = re.compile(_ID_CTX.replace(f"[ \\t]+{_ID_VALUE}", f"[ \\t]+(?P<v>{_ID_VALUE})"))
assert "(?P<v>" in _ID_CTX_RX.pattern


def _h_id_ctx(tok: str) -> list[Span]:
    low = tok.lower()
    hint = next((k for w, k in sorted(_ID_KIND.items(), key=lambda x: -len(x[0]))
                 if low.startswith(w)), None)
    m = _ID_CTX_RX.fullmatch(tok)
    if m is None:  # cannot happen: the rule's own expression
        return []
    value, start = m["v"], m.start("v")
    # the value may have taken words after the id: try the longest group prefix first
    groups = re.split(r"(?<=[A-Za-z0-9])(?=[ .-])", value)
    # groups after the first hold digits or are one letter (a NINO's suffix): never words
    ok = 1
    while ok < len(groups) and (any(c.isdigit() for c in groups[ok])
                                or re.fullmatch(r"[ .-][A-Za-z]", groups[ok])):
        ok += 1
    for n in range(ok, 0, -1):
        cand = "".join(groups[:n])
        found = numbers.national_id(cand, hint)
        if found is not None:
            kind, norm = found
            return [(start, start + len(cand), kind, norm)]
    return []


def _h_dob_ctx(tok: str) -> list[Span]:
    m = re.search(rf"(?:{_DATE})$", tok)
    if m is None:
        return []
    for date in (m.group(), re.sub(r"[0-9]+$", lambda d: d.group()[:4], m.group())):
        iso = numbers.birth_date(date, month_first="/" in date and "born" in tok.lower())
        if iso is not None:
            return [(m.start(), m.start() + len(date), "DOB", iso)]
    return []


def _h_order_ctx(tok: str) -> list[Span]:
    return []  # an order, invoice or ticket number: kept even when Luhn-valid


def _h_card_ctx(tok: str) -> list[Span]:
    m = re.search(rf"(?:{_CARD})$", tok)
    if m is None:
        return []
    spans = _h_card(m.group(), context=True)
    return [(m.start() + s, m.start() + e, k, v) for s, e, k, v in spans]


def _h_natid(tok: str) -> list[Span]:
    found = numbers.national_id(tok)
    return [(0, len(tok), found[0], found[1])] if found else []


def _h_mac(tok: str) -> list[Span]:
    t = tok.rstrip(".")
    norm = numbers.mac_address(t) if re.fullmatch(
        r"[0-9A-Fa-f]{2}(?:([:-])[0-9A-Fa-f]{2})(?:\1[0-9A-Fa-f]{2}){4}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2}",
        t) else None
    if norm is None:
        return _h_ipv6(tok) if ":" in tok else []
    return [(0, len(t), "MAC", norm)]


def _h_url_cred(tok: str) -> list[Span]:
    rest = tok.index("://") + 3
    colon = tok.index(":", rest)
    pw = tok[colon + 1:-1]
    if _placeholder_like(pw):
        return []
    return [(colon + 1, len(tok) - 1, "PASSWORD", pw)]


def _placeholder_like(v: str) -> bool:
    low = v.lower()
    return (low in _NOT_A_VALUE or v[:1] in "$%<{" or set(v) <= set("*xX.#-_")
            or low.startswith(("{{", "%(")))


_ASSIGN = re.compile(rf"(?P<key>{_KEY})(?P<sep>{_SEP})(?P<val>{_VALUE})")


#: PAM's management groups, which follow a service name after ":" in PAM's log lines
_PAM_TYPES = frozenset({"auth", "account", "password", "session", "chauthtok", "setcred",
                        "authenticate", "acct_mgmt", "open_session", "close_session"})


def _h_assign(tok: str, logs: bool = False) -> list[Span]:
    m = _ASSIGN.fullmatch(tok)
    if m is None:
        return []
    key, sep, val = m["key"], m["sep"], m["val"]
    start = m.start("val")
    if val[:1] in "\"'":
        val, start = re.sub(r"(?:\\[nr])+$", "", val[1:-1]), start + 1  # JSON "...\n"
    if not val or _placeholder_like(val) or re.fullmatch(PLACEHOLDER, val):
        return []
    if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$.]*@[0-9a-f]{4,}", val):
        return []  # a Java object reference: android.os.BinderProxy@2bd79ce
    inner = _classify_value(val)
    if inner is not None:
        return [(start, start + len(val), inner, val)]
    low = key.lower()
    if low in ("pwd", "oldpwd") and val[:1] in "/~":
        return []  # the shell's working directory (sudo logs PWD=/home/ubuntu)
    if ":" in sep and val.lower() in _PAM_TYPES:
        return []  # PAM's service:type, as in pam_unix(chpasswd:chauthtok)
    if any(w in low for w in _PASSWORD_WORDS) or re.search(r"(?:^|[_.-])pass$", low):
        kind = "PASSWORD"
        # "password: required" (and in logs "chpasswd: pam_unix(...)"): a lower-case word
        # after a label is prose
        word = r"[a-z]+(?:_[a-z]+)*" if logs else r"[a-z]+"
        ok = len(val) >= 3 and not (":" in sep and sep.endswith(" ") and re.fullmatch(word, val))
    else:
        kind = "AWS_SECRET_KEY" if "aws" in low and "secret" in low else "SECRET"
        ok = len(val) >= 8 and not val.isalpha() and not (val.isdigit() and len(val) < 12)
    return [(start, start + len(val), kind, val)] if ok else []


def _h_auth(tok: str) -> list[Span]:
    scheme, _, val = tok.partition(" ") if " " in tok else tok.partition("\t")
    val = val.lstrip(" \t")
    start = len(tok) - len(val)
    if scheme == "Basic":
        try:
            raw = base64.b64decode(val, validate=True)
        except (binascii.Error, ValueError):
            return []
        return [(start, len(tok), "PASSWORD", val)] if b":" in raw and len(val) >= 8 else []
    inner = _classify_value(val)
    if inner is not None:
        return [(start, len(tok), inner, val)]
    ok = len(val) >= 16 and any(c.isdigit() for c in val) and any(c.isalpha() for c in val)
    return [(start, len(tok), "SECRET", val)] if ok else []


def _h_slack_hook(tok: str) -> list[Span]:
    start = len("https://hooks.slack.com/services/")
    return [(start, len(tok), "SLACK_TOKEN", tok[start:])] if len(tok) - start >= 20 else []


def _h_jwt(tok: str) -> list[Span]:
    head, body, _ = tok.split(".", 2)
    return _whole(tok, "JWT") if _b64json(head) and _b64json(body) else _h_generic(tok)


def _vendor(kind: str) -> Callable[[str], list[Span]]:
    def handler(tok: str) -> list[Span]:
        for prefix, need in _VENDOR_MIN.items():
            if tok.startswith(prefix):
                ok = len(tok) - len(prefix) >= need
                if prefix == "SK":
                    ok = len(tok) == 34
                return _whole(tok, kind) if ok else _h_generic(tok)
        return _whole(tok, kind) if len(tok) >= 24 else _h_generic(tok)
    return handler


def _h_gitlab(tok: str) -> list[Span]:
    return _whole(tok, "GITLAB_TOKEN") if len(tok.split("-", 1)[1]) >= 20 else []


def _h_slack(tok: str) -> list[Span]:
    ok = len(tok) >= 24 and any(c.isdigit() for c in tok)
    return _whole(tok, "SLACK_TOKEN") if ok else []


def _h_stripe(tok: str) -> list[Span]:
    return _whole(tok, "STRIPE_KEY") if len(tok.rsplit("_", 1)[1]) >= 16 else []


def _h_openai(tok: str) -> list[Span]:
    rest = tok[3:]
    if rest.startswith("ant-"):
        return _whole(tok, "API_KEY") if len(rest) >= 40 else []
    body = re.sub(r"^(?:proj|svcacct|admin)-", "", rest)
    ok = len(body) >= 20 and _looks_random(body.replace("-", "").replace("_", ""), 20)
    return _whole(tok, "OPENAI_KEY") if ok else []


def _h_aws_id(tok: str) -> list[Span]:
    return _whole(tok, "AWS_ACCESS_KEY") if len(tok) == 20 else []


def _h_gcp(tok: str) -> list[Span]:
    return _whole(tok, "GCP_API_KEY") if len(tok) == 39 else _h_generic(tok)


def _h_email(tok: str) -> list[Span]:
    local, _, domain = tok.rpartition("@")
    labels = domain.lower().split(".")
    if local == "git" or _RETINA.fullmatch(labels[0]) or labels[-1] in {
            "png", "jpg", "jpeg", "gif", "svg", "webp", "css", "js", "ts", "py", "java"}:
        return []
    return [(0, len(tok), "EMAIL", tok.lower())] if local.strip(".") else []


def _h_iban(tok: str) -> list[Span]:
    need = _IBAN_LENGTHS.get(tok[:2])
    if need is None:
        return _h_generic(tok)
    taken, end = 0, 0
    for end, c in enumerate(tok, 1):
        taken += c != " "
        if taken == need:
            break
    compact = tok[:end].replace(" ", "")
    if taken == need and _iban_ok(compact):
        return [(0, end, "IBAN", compact)]
    return _h_generic(tok)


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
                regions: tuple[str, ...] = numbers.DEFAULT_REGIONS) -> list[Span]:
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
        e164 = numbers.phone_e164(num, regions, labelled or bool(_NANP.fullmatch(num)))
        if e164 is not None:
            return [(start, start + len(num), "PHONE", e164)]
        if len(num.translate(_PUNCT_OUT)) < 7:
            return []
        parts.pop()
    return []


_PHONE_NUM_RX = re.compile(rf"(?:^|(?<=[ \t:=]))(?:{_PHONE_NUM})(?=$|[ ,\t])")


def _h_phone_ctx(tok: str, regions: tuple[str, ...] = numbers.DEFAULT_REGIONS) -> list[Span]:
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


def _h_phone(tok: str, regions: tuple[str, ...] = numbers.DEFAULT_REGIONS,
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


def _h_ipv6(tok: str) -> list[Span]:
    try:
        ip = ipaddress.IPv6Address(tok)
    except ValueError:
        if tok.endswith(".") and len(tok) > 2:  # an address closing a sentence
            return _h_ipv6(tok[:-1])
        return []
    groups = tok.split(":")
    if ip.is_unspecified or ip.is_loopback or sum(bool(g) for g in groups) < 2:
        return []
    if all(len(g) == 2 for g in groups):
        return []  # a MAC/WWN-like byte list, not an address
    return [(0, len(tok), "IPV6", ip.compressed)]


def _h_ipv4(tok: str) -> list[Span]:
    if tok.endswith("/") or not tok[:1].isdigit():
        return []  # a version (taken with its word) or a path segment
    parts = tok.split(".")
    if len(parts) != 4 or not all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts):
        return []
    ip = ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
    n = int(ip)
    netmask = parts[0] == "255" and (n | (n - 1)) & 0xFFFFFFFF == 0xFFFFFFFF
    if ip.is_unspecified or ip.is_loopback or netmask:
        return []
    return [(0, len(tok), "IPV4", str(ip))]


def _h_generic(tok: str) -> list[Span]:
    # leading path words ("com/", "services/") are kept when the rest is the secret
    start = 0
    while True:
        m = re.match(r"[a-z0-9_-]{1,15}/", tok[start:])
        if m is None or not _looks_random(tok[start + m.end():]):
            break
        start += m.end()
    if re.fullmatch(r"[0-9A-Fa-f]{8}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{12}"
                    r"|[0-9a-f]{16}-[A-Z]{3}", tok[start:]):
        return []  # a UUID; a CDN ray id (16 hex digits and the data centre's code)
    return [(start, len(tok), "TOKEN", tok[start:])] if _looks_random(tok[start:]) else []


_HANDLERS: dict[str, Callable[[str], list[Span]]] = {
    "placeholder": _h_placeholder, "private_key": _h_private_key, "url_cred": _h_url_cred,
    "assign": _h_assign, "auth": _h_auth, "slack_hook": _h_slack_hook, "jwt": _h_jwt,
    "github": _vendor("GITHUB_TOKEN"), "gitlab": _h_gitlab, "slack": _h_slack,
    "stripe": _h_stripe, "openai": _h_openai, "aws_id": _h_aws_id, "gcp": _h_gcp,
    "api_key": _vendor("API_KEY"), "email": _h_email, "iban": _h_iban, "card": _h_card,
    "phone_ctx": _h_phone_ctx, "phone": _h_phone, "ipv6": _h_ipv6, "ipv4": _h_ipv4,
    "generic": _h_generic, "url_token": _h_url_token, "pw_prose": _h_pw_prose,
    "pw_change": _h_pw_change, "key_prose": _h_key_prose, "id_ctx": _h_id_ctx,
    "dob_ctx": _h_dob_ctx, "order_ctx": _h_order_ctx, "card_ctx": _h_card_ctx,
    "natid": _h_natid, "mac": _h_mac,
}
_RULE_BY_NAME = {r.name: r for r in _RULES}
_TRIMMING = {"iban", "card", "phone", "phone_ctx", "id_ctx", "card_ctx", "dob_ctx", "mac"}
# Rules that take a cue word with their value: when the value is rejected, what they
# matched is scanned again without them, so that a cue never hides another finding.
_CONTEXTUAL = {"pw_prose", "pw_change", "key_prose", "id_ctx", "dob_ctx", "card_ctx"}
_VALUE_RULES = ("private_key", "jwt", "github", "gitlab", "slack", "stripe", "openai",
                "aws_id", "gcp", "api_key")
_VALUE_RX = re.compile("|".join(f"(?P<{n}>(?:{_RULE_BY_NAME[n].token}))" for n in _VALUE_RULES))


def _classify_value(val: str) -> str | None:
    """The vendor kind of an assignment's value (``token=ghp_...`` is a GitHub token)."""
    m = _VALUE_RX.fullmatch(val)
    if m is None or m.lastgroup is None:
        return None
    spans = _HANDLERS[m.lastgroup](val)
    return spans[0][2] if spans and spans[0][:2] == (0, len(val)) else None


# --- the engine ---------------------------------------------------------------------------

class _Stage:
    """One regex pass over the text: its rules in priority order, the same expression for
    Python's `re` and for Rust's `regex` (polars), and a cache of judged candidates."""

    def __init__(self, rules: list[_Rule]):
        # A literal "\n", "\r" or "\t" (JSON-escaped text) also ends a word before a token.
        py = "|".join(f"(?P<{r.name}>" + (f"(?P<{r.name}_p>\\\\[nrt]|{r.prefix})" if r.prefix else "")
                      + f"(?:{r.token}))" for r in rules)
        self.py = re.compile(py)
        self.rust = re.sub(r"\(\?P<[a-z_0-9]+>", "(?:", py)
        self.prefixed = {r.name: r.prefix is not None for r in rules}
        self.cache: dict[str, tuple[str, tuple[str, ...], bool, tuple]] = {}


def _normalise(kind: str, value: str) -> str:
    """What the keyed hash of a pseudonym is taken of: names and e-mails case-folded."""
    if kind in ("PERSON", "EMAIL"):
        return " ".join(value.split()).casefold()
    return value


class Redactor:
    """Finds personal data and secrets in text and replaces them with keyed pseudonyms.

    Two regex passes: the first finds secrets, numbers and contact details; the second
    finds person names and addresses in runs of capitalised words (see
    `rlforge.ingest.redaction.people`) in what the first left.

    Args:
        key: the per-database HMAC key (the store keeps it, so re-ingest maps identically).
        kinds: the kinds to redact (see `KINDS`); None means all.
        patterns: extra user patterns, kind name -> regular expression (written so that
            Python's `re` and Rust's `regex` read it alike); each match becomes a
            placeholder of that kind. They take priority over the built-in rules.
        regions: phone regions tried, in order, for numbers written without ``+country``.

    Attributes:
        counts: redactions per kind, accumulated across calls (occurrences, not values).
    """

    def __init__(self, key: bytes, kinds: Iterable[str] | None = None,
                 patterns: dict[str, str] | None = None, regions: Iterable[str] | None = None,
                 logs: bool = False):
        """`logs`: the text is ops logs, where a run of 10-11 digits with no separator and
        no label is a counter, a sequence number or a Unix time, not a phone number."""
        self._key = bytes(key)
        self.kinds = frozenset(KINDS if kinds is None else kinds)
        for k in self.kinds - set(KINDS):
            raise UnknownName("redaction kind", k, list(KINDS))
        self._regions = tuple(r.upper() for r in regions) if regions else numbers.DEFAULT_REGIONS
        self._handlers = dict(_HANDLERS)
        if self._regions != numbers.DEFAULT_REGIONS:
            for name, fn in (("phone", _h_phone), ("phone_ctx", _h_phone_ctx)):
                self._handlers[name] = functools.partial(fn, regions=self._regions)
        if logs:
            self._handlers["phone"] = functools.partial(_h_phone, regions=self._regions,
                                                        bare_digits=False)
            self._handlers["assign"] = functools.partial(_h_assign, logs=True)
            self._handlers["card"] = functools.partial(_h_card, logs=True)
        extra = []
        for i, (kind, pattern) in enumerate((patterns or {}).items()):
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", kind):
                raise ValueError(f"pattern kind must be upper-case letters, digits and _, got {kind!r}")
            re.compile(pattern)
            # any character may stand before it: it competes at the same place as the
            # built-in rules (which take the character before their token) and wins
            extra.append(_Rule(f"user{i}", (kind,), r"[\s\S]", f"(?:{pattern})"))
            self._handlers[f"user{i}"] = functools.partial(_h_user, kind=kind)
        self.kinds |= {r.kinds[0] for r in extra}
        self.counts: collections.Counter[str] = collections.Counter()
        rules = [r for r in _RULES[:1] + tuple(extra) + _RULES[1:]
                 if not r.kinds or set(r.kinds) & self.kinds]
        self._stages = [_Stage(rules)] if len(rules) > 1 else []
        self._base = _Stage([r for r in rules if r.name not in _CONTEXTUAL])
        if self.kinds & RUN_KINDS:
            people_on, places_on = "PERSON" in self.kinds, "ADDRESS" in self.kinds
            self._handlers["run"] = functools.partial(people.judge, people=people_on,
                                                      places=places_on, regions=self._regions)
            self._stages.append(_Stage([_RULES[0], _Rule("run", (*RUN_KINDS, "PHONE"),
                                                         people.RUN_PREFIX, people.RUN)]))
        self._active = bool(self._stages)
        self._pseudonyms: dict[tuple[str, str], str] = {}  # authors recur: one HMAC each

    @classmethod
    def configured(cls, key: bytes, off: Iterable[str] = (), patterns: dict[str, str] | None = None,
                   regions: Iterable[str] | None = None, logs: bool = False) -> "Redactor":
        """A redactor from the ``[redaction]`` settings of rlforge.toml: every kind but
        those `off`, the user's extra `patterns`, the phone `regions`."""
        off = {k.upper() for k in off}
        for k in off - set(KINDS):
            raise UnknownName("redaction kind", k, list(KINDS))
        return cls(key, kinds=set(KINDS) - off, patterns=patterns, regions=regions, logs=logs)

    def _placeholder(self, kind: str, value: str) -> str:
        mac = hmac.digest(self._key, f"{kind}\x00{value}".encode(), "sha256")
        return f"<{kind}_{mac[:3].hex()}>"

    def pseudonym(self, kind: str, value: str) -> str:
        """The placeholder ``<KIND_xxxxxx>`` for a value, e.g. ``pseudonym("PERSON", name)``.

        Counts one redaction of that kind. The same (kind, value) always gives the same
        placeholder under the same key; a person's name or an e-mail is case-folded first,
        as in text, so an author and the same name in a message share one placeholder.
        """
        hit = self._pseudonyms.get((kind, value))
        if hit is None:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", kind):
                raise ValueError(f"kind must be upper-case letters, digits and _, got {kind!r}")
            if len(self._pseudonyms) >= _CACHE_LIMIT:
                self._pseudonyms.clear()
            hit = self._pseudonyms[(kind, value)] = self._placeholder(kind, _normalise(kind, value))
        self.counts[kind] += 1
        return hit

    def _spans(self, cand: str, stage: _Stage) -> tuple[list[Span], bool]:
        """Redacted spans of one regex match (positions within `cand`), and whether the
        text must be scanned again (a validator kept a tail of the match unredacted)."""
        m = stage.py.match(cand)
        if m is None or m.end() != len(cand) or m.lastgroup is None:  # both engines agree
            raise AssertionError(f"candidate not re-matched: {cand!r}")
        name = m.lastgroup
        off = m.end(name + "_p") if stage.prefixed[name] else 0
        spans = [(s + off, e + off, k, _normalise(k, v)) for s, e, k, v in self._handlers[name](cand[off:])
                 if k in self.kinds]
        again = name in _TRIMMING and bool(spans) and spans[-1][1] < len(cand)
        if not spans and name in _CONTEXTUAL:
            # the cue's value was rejected: what it matched is read by the other rules
            for x in self._base.py.finditer(cand):
                sub, more = self._spans(x.group(), self._base)
                spans += [(s + x.start(), e + x.start(), k, v) for s, e, k, v in sub]
                again |= more
            return spans, again
        if spans and not again and spans[0][0] > off:
            # A kept head (``DB_PASSWORD=``, ``https://user:``) is scanned again if it
            # holds a finding of its own, so that a second pass would change nothing.
            head = cand[:spans[0][0]]
            again = any(self._spans(x.group(), stage)[0] for x in stage.py.finditer(head))
        return spans, again

    def _apply(self, cand: str, stage: _Stage) -> tuple[str, tuple[str, ...], bool, tuple]:
        """A candidate's replacement, the kinds redacted, whether to pass again, and the
        (written value, placeholder, kind) triples to redact wherever else they occur."""
        hit = stage.cache.get(cand)
        if hit is None:
            out, pos, kinds, echo = [], 0, [], []
            spans, again = self._spans(cand, stage)
            for s, e, kind, value in spans:
                ph = self._placeholder(kind, value)
                out += [cand[pos:s], ph]
                kinds.append(kind)
                echo += [(raw, ph, kind) for raw in _echo_forms(kind, cand[s:e])]
                if kind == "PHONE":
                    echo += [(digits, ph, role) for role, digits in _phone_forms(cand[s:e], value)]
                pos = e
            hit = ("".join(out) + cand[pos:], tuple(kinds), again, tuple(echo))
            if len(stage.cache) >= _CACHE_LIMIT:
                stage.cache.clear()
            stage.cache[cand] = hit
        return hit

    def _echo(self, text: str, echo: Iterable[tuple[str, str, str]]) -> str:
        """`text` with the other occurrences of values redacted elsewhere in it replaced
        by the same placeholder ("card 4111 1111 1111 1111 ... (4111111111111111)")."""
        for old, new in _unify(echo).items():
            text = text.replace(old, new)
        echo = [e for e in echo if e[0] in text]  # mostly none: the value was its only copy
        if not echo:
            return text
        rx, where = _echo_rx(echo)
        if rx is None:
            return text
        assert rx is not None

        def sub(m: re.Match) -> str:
            ph, kind = where[m.group()]
            self.counts[kind] += 1
            return ph
        return rx.sub(sub, text)

    def redact_text(self, text: str | None) -> str | None:
        """One text with every finding replaced by its placeholder (None stays None)."""
        if text is None or not self._active:
            return text
        echo: set[tuple[str, str, str]] = set()
        for _ in range(_MAX_PASSES):
            again = False
            for stage in self._stages:
                def sub(m: re.Match, stage: _Stage = stage) -> str:
                    nonlocal again
                    out, kinds, more, found = self._apply(m.group(), stage)
                    self.counts.update(kinds)
                    again |= more
                    echo.update(found)
                    return out
                text = stage.py.sub(sub, "\n" + text)[1:]
            if not again:
                break
        return self._echo(text, echo) if echo else text

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Where `redact_text` redacts: (start, end, kind) in `text`, in order, over every
        stage and pass (a span that swallowed an earlier placeholder covers its text)."""
        return [(s, e, kind) for s, e, kind, _ in self.findings(text)]

    def findings(self, text: str) -> list[tuple[int, int, str, str]]:
        """As `find`, with each span's placeholder: (start, end, kind, placeholder)."""
        found: list[tuple[int, int, str, str]] = []
        if not self._active:
            return found
        origin = list(range(len(text) + 1))  # current position -> position in `text`
        echo: set[tuple[str, str, str]] = set()
        for _ in range(_MAX_PASSES):
            again = False
            for stage in self._stages:
                parts, where, pos = [], [], 0
                for m in stage.py.finditer("\n" + text):
                    spans, more = self._spans(m.group(), stage)
                    again |= more
                    echo.update(self._apply(m.group(), stage)[3])
                    for s, e, kind, value in spans:
                        s, e = m.start() + s - 1, m.start() + e - 1
                        ph = self._placeholder(kind, value)
                        found.append((origin[s], origin[e - 1] + 1, kind, ph))
                        parts.append(text[pos:s])
                        where += origin[pos:s]
                        parts.append(ph)
                        where += [origin[s]] * (len(ph) - 1) + [origin[e - 1]]
                        pos = e
                parts.append(text[pos:])
                where += origin[pos:]
                text, origin = "".join(parts), where
            if not again:
                break
        rx, echo_at = _echo_rx(echo)
        if rx is not None:
            for m in rx.finditer(text):
                ph, kind = echo_at[m.group()]
                found.append((origin[m.start()], origin[m.end() - 1] + 1, kind, ph))
        renamed = _unify(echo)
        return sorted((s, e, kind, renamed.get(ph, ph)) for s, e, kind, ph in found)

    def redact_series(self, s: pl.Series) -> pl.Series:
        """Vectorised `redact_text` over a string column (same result per element).

        Per stage, one regex pass wraps every candidate in NUL sentinels and splits the
        text on them, so odd list items are exactly the regex matches; only the unique
        ones are judged in Python, and a hash replace maps them back. Rows holding NUL go
        through `redact_text`; rows where a validator kept a tail of a match are passed
        again, as `redact_text` does.
        """
        import polars as pl

        if s.dtype != pl.String:
            s = s.cast(pl.String)
        if not self._active or s.len() == 0:
            return s
        echo: dict[int, set] = collections.defaultdict(set)  # row -> values to echo
        out, again = self._all_stages(s, echo, None)
        for _ in range(_MAX_PASSES - 1):
            if again is None:
                break
            idx = again.arg_true()
            redone, again_sub = self._all_stages(out.gather(idx), echo, idx.to_list())
            out = out.scatter(idx, redone)
            again = None if again_sub is None else pl.Series(idx).filter(again_sub)
            again = None if again is None else pl.Series([False] * out.len()).scatter(again, True)
        if echo:  # only rows where a redacted value is still written somewhere
            rows = sorted(echo)
            texts = out.gather(rows).to_list()
            again_rows = [(i, t) for i, t in zip(rows, texts)
                          if any(e[0] in t for e in echo[i]) or _unify(echo[i])]
            if again_rows:
                out = out.scatter([i for i, _ in again_rows],
                                  [self._echo(t, echo[i]) for i, t in again_rows])
        nul = s.str.contains(_SENT, literal=True)
        if nul.any():
            idx = nul.arg_true()
            out = out.scatter(idx, [self.redact_text(t) for t in s.gather(idx)])
        return out

    def _all_stages(self, s: pl.Series, echo: dict[int, set],
                    rows: list[int] | None) -> tuple[pl.Series, pl.Series | None]:
        """Every stage once over `s` (rows `rows` of the whole series, or all of it);
        the values to echo are added to `echo` by row of the whole series."""
        again = None
        for stage in self._stages:
            s, more = self._series_pass(s, stage, echo, rows)
            if more is not None:
                again = more if again is None else again | more
        return s, again

    def _series_pass(self, s: pl.Series, stage: _Stage, echo: dict[int, set],
                     rows: list[int] | None) -> tuple[pl.Series, pl.Series | None]:
        """One pass: the redacted series, and the rows to pass again (None if none)."""
        import polars as pl

        frame = pl.DataFrame({"t": s}).lazy().select(
            pl.concat_str([pl.lit("\n"), pl.col("t")])
            .str.replace_all(stage.rust, f"{_SENT}${{0}}{_SENT}").str.split(_SENT).alias("w"),
            pl.col("t").str.contains(_SENT, literal=True).alias("nul"),
        ).collect()
        found = frame.lazy().filter(~pl.col("nul")).select(
            pl.col("w").list.gather_every(2, 1).explode().drop_nulls().value_counts(sort=False)
        ).collect()
        keys, values, again, echoing = [], [], [], {}
        for cand, n in found.to_series().struct.unnest().iter_rows():
            replaced, kinds, more, forms = self._apply(cand, stage)
            for kind in kinds:
                self.counts[kind] += n
            if kinds:
                keys.append(cand)
                values.append(replaced)
            if more:
                again.append(cand)
            if forms:
                echoing[cand] = forms
        if not keys:
            return s, None
        if echoing:  # the rows holding a value to echo, and which values
            hits = frame.lazy().with_row_index("row").filter(~pl.col("nul")).select(
                "row", pl.col("w").list.gather_every(2, 1)).explode("w").filter(
                pl.col("w").is_in(list(echoing))).collect()
            for i, cand in hits.iter_rows():
                echo[rows[i] if rows is not None else i].update(echoing[cand])
        # Even items (text between matches) never equal a match: the regex would have
        # matched there. So a plain hash replace touches only the matches.
        w = pl.col("w")
        out = frame.lazy().select(
            w.list.eval(pl.element().replace(keys, values)).list.join("").str.slice(1).alias("o"),
            (w.list.eval(pl.element().is_in(again)).list.any() & ~pl.col("nul")).alias("a")
            if again else pl.lit(False).alias("a"),
        ).collect()
        flags = out["a"]
        return out["o"].alias(s.name), (flags if again and flags.any() else None)
