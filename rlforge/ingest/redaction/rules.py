"""The candidate rules: one regular expression per rule, in priority order, that finds
what may be a finding; its detector (`secrets`, `numbers`, `network`) then judges it.

Every expression is written so that Rust's `regex` (polars) and Python's `re` read it the
same way (ASCII classes, no lookaround, no ``\\b``, no ``(?i)``). A rule consumes the
character before its token (its `prefix`, standing in for a lookbehind) and takes its
token greedily to its natural end (standing in for a lookahead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from rlforge.ingest.redaction.run_words import L, U
from rlforge.ingest.redaction.words import (CARD_WORDS, CHANGE_VERBS, CODE_LINKS, CODE_WORDS,
                                            CREDENTIAL_WORDS,
                                            DOB_AFTER, DOB_WORDS,
                                            ID_WORDS, KEY_WORDS, ORDER_WORDS, PASSWORD_LINKS,
                                            PASSWORD_WORDS, PHONE_WORDS, PIN_WORDS,
                                            VERSION_WORDS, phrases_rx)

PLACEHOLDER = r"<[A-Z][A-Z0-9_]*_[0-9a-f]{6}>"


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
PASSWORD_KEYS = ("password", "passwd", "passphrase", "pwd")
_SECRET_WORDS = ("secret", "token", "apikey", "api_key", "api-key", "accesskey", "access_key",
                 "access-key", "accountkey", "credential", "credentials", "privatekey",
                 "private_key")
ASSIGN_KEY = (rf"(?:[A-Za-z0-9_.-]*{_any(*PASSWORD_KEYS, *_SECRET_WORDS)}(?:[_.-]?{_ci('key')})?"
        rf"|(?:[A-Za-z0-9_.-]*[_.-])?{_ci('pass')})")
ASSIGN_SEP = r"[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*"
ASSIGN_VALUE = (r"\"[^\"\r\n]+\"|'[^'\r\n]+'"
          r"|[^ \t\r\n\"'<>,;&=:(){}\[\]`][^ \t\r\n\"'<>,;&(){}\[\]`]*")
_AUTH = rf"(?:{_ci('bearer')}|Basic|Token)[ \t]+[A-Za-z0-9._~+/-]+=*"
_G = r"[0-9A-Fa-f]{1,4}"
_IPV6 = rf"(?:{_G}(?::{_G}){{7}}|(?:{_G}(?::{_G}){{0,6}})?::(?:{_G}(?::{_G}){{0,6}})?)[0-9A-Za-z_.:]*"
# A dotted quad after a version word ("fixed in 6.13.10.180", "SDK 4.2.1.7", "v1.2.3.4") is
# taken with the word, and so judged a version; so is one followed by "/" (a path segment).
_IPV4 = (rf"(?:{phrases_rx(*VERSION_WORDS)}\.?[ :]*)?[0-9]+(?:\.[0-9]+){{3,}}/?")
_PHONE_GROUP = r"(?:[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,5}))"
_TRUNK_GROUP = r"(?:(?:[ .-]?|[ ]?/[ ]?)(?:\([0-9]{1,4}\)|[0-9]{1,5}))"  # "030 / 6246 8152"
_PHONE = (rf"(?:\+|00)[1-9][0-9]{{0,2}}(?:[ ]?\(0\))?{_PHONE_GROUP}{{1,6}}"
          r"|(?:1[ .-]?)?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[ .-])[0-9]{3}[ .-][0-9]{4,}"
          rf"|\(0[0-9]{{1,4}}\){_PHONE_GROUP}{{1,5}}|0[1-9][0-9]{{0,4}}{_TRUNK_GROUP}{{1,5}}"
          r"|[1-9][0-9]{9,10}"
          # a national number in the groups of countries without a trunk 0 (ES, PT, PL):
          # "612 34 56 78", "912 345 678", "512-345-678"
          r"|[1-9][0-9]{2}(?:[ ][0-9]{2}[ ][0-9]{2}[ ][0-9]{2}|[ ][0-9]{3}[ ][0-9]{3}|-[0-9]{3}-[0-9]{3})")
# an extension, and what else is glued on (a number glued to letters is an id, not a phone)
_PHONE = f"(?:{_PHONE})(?:[ ]?(?:x|ext\\.?|extension)[ ]?[0-9]{{1,6}})?[A-Za-z0-9_]*"
_PHONE_LINKS = phrases_rx("me", "us", "on", "at", "is", "ist", "au", "op", "al", "unter", "via",
                        "oder", "or", "ou", "of", "oppure", "mobil", "mobile", "es", "el",
                        "é", "o", "to", "pod", "no", "numer")
PHONE_NUM = (rf"\+?(?:\([0-9]{{1,5}}\)|[0-9]{{1,5}}){_TRUNK_GROUP}{{1,6}}"
              r"(?:[ ]?(?:x|ext\.?|extension)[ ]?[0-9]{1,6})?")
# A labelled number, or a labelled list of two: "call me on X or Y", "unter X oder mobil Y".
_PHONE_CTX = (rf"{phrases_rx(*PHONE_WORDS)}\.?(?:[ ]?(?:{_ci('number')}|{_ci('nummer')}|[Nn]o\.?|#))?"
              rf"(?:[ \t]+{_PHONE_LINKS})*[ \t]*(?:[:=][ \t]*)?[ \t]*{PHONE_NUM}"
              rf"(?:,?[ \t]+{phrases_rx('or', 'oder', 'ou', 'of', 'oppure', 'o', 'and', 'und', 'et', 'en', 'e')}"
              rf"(?:[ \t]+{_PHONE_LINKS})*[ \t]+{PHONE_NUM})?")
CARD = (r"[0-9]{4}(?:[ -][0-9]{4}){2,3}(?:[ -][0-9]{1,4})?|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5}"
         r"|[0-9]{12,}")
_GAP = r"(?:[ \t]+[A-Za-zÀ-ÖØ-öø-ÿ'’]+){0,%d}?"  # a few plain words between a cue and a value
_CARD_CTX = rf"{phrases_rx(*CARD_WORDS)}{_GAP % 6}[ \t]*[:#]?[ \t]*(?:{CARD})"
_NUMBER_WORD = rf"(?:[ \t]*{phrases_rx('number', 'nummer', 'numéro', 'numero', 'no', 'nr', 'n°', 'id', '#')}\.?)?"
_ORDER_CTX = (rf"{phrases_rx(*ORDER_WORDS)}{_GAP % 3}{_NUMBER_WORD}"
              r"[ \t]*[:#]?[ \t]*[0-9]{6,}")
# not a quoted value ("password: \"a b\"", read by `assign`); to the next blank, whatever
# it holds ("Password: C*)L)a@!4Z@D": `assign` would stop at the first bracket)
# A value holds something other than lower-case letters (and sentence punctuation at its
# end): "password was reset to X" reads past "reset" to X (a lower-case word alone is
# never taken as a password).
_LOWER = "a-zß-öø-ÿ"
_PW_VALUE = (rf"(?:(?:[^ \t\r\n\"'{_LOWER}.,;:?]|[{_LOWER}]+[^ \t\r\n{_LOWER}.,;:?]"
             rf"|[{_LOWER}]*[.,;:?][^ \t\r\n])[^ \t\r\n]*"
             r"|\"[^\" \t\r\n]+\"|'[^' \t\r\n]+')")  # or quoted: the password is "Tulip!88"
_KEY_VALUE = r"[A-Za-z0-9_+/=.][A-Za-z0-9_+/=.-]*"  # never "-----BEGIN": a PEM block is its own
ID_VALUE = r"[A-Za-z0-9]+(?:[ .-][A-Za-z0-9]+){0,6}"
_LINK = rf"(?:[ \t]*[:=]|[ \t]+(?:->|→|=>|-|–)|[ \t]+{phrases_rx(*PASSWORD_LINKS)})"  # ":", "is", "ist", "est", "è"...


def _cued(words: Iterable[str], gap: int, link: str, value: str, after: str = "") -> str:
    """A cue word, up to `gap` plain words, a link and the value: "my password is now X"."""
    return rf"{phrases_rx(*words)}{after}{_GAP % gap}{link}[ \t]+{value}"


_PW_PROSE = _cued(PASSWORD_WORDS, 4, _LINK, _PW_VALUE)
# "PIN 4821", "PIN: 4821", "the PIN for the card is 4821", "code de vérification 482193"
_PIN_PROSE = _cued(PIN_WORDS, 4, _LINK + "?", r"[^ \t\r\n]*[0-9][^ \t\r\n]*")
_PW_CHANGE = _cued(CHANGE_VERBS, 3, rf"[ \t]+{phrases_rx('to', 'in', 'auf', 'en', 'pour', 'naar', 'a', 'par', 'para', 'na', 'por')}",
                   r"[^ \t\r\n]*[^A-Za-z \t\r\n][^ \t\r\n]*")  # a new password holds a non-letter
# A password word and the value right after it, with no link ("temp pw Kx7#pq2", "new
# password Tulip!88"): judged strictly, as after "changed it to".
_PW_BARE = rf"{phrases_rx(*PASSWORD_WORDS)}[ \t]+{_PW_VALUE}"
# A bare "code" and a link ("the code is 558120", "Code: 847261", "o código é 773401"): 4
# to 8 digits, unless the word before names another kind of code ("error code: 5003",
# "zip code is 90210"; that word is taken with the match for the detector to read).
_CODE_PROSE = (rf"(?:[A-Za-zÀ-ÖØ-öø-ÿ]+[ \t]+)?{phrases_rx(*CODE_WORDS)}"
               rf"(?:[ \t]*[:=]|[ \t]+{phrases_rx(*CODE_LINKS)})[ \t]*[0-9]{{4,8}}")
# A user name and a password as a pair after a credentials word: "login: anna.k / Sommer2021!"
_CREDENTIALS = (rf"{phrases_rx(*CREDENTIAL_WORDS)}[ \t]*[:=][ \t]*[^ \t\r\n/()]+[ \t]*/[ \t]*"
                r"[^ \t\r\n\"':]*[0-9!#$%&*+?@^~_-][^ \t\r\n]*")  # a digit or a symbol in it
_KEY_PROSE = _cued(KEY_WORDS, 5, _LINK + "?", _KEY_VALUE)
ID_CTX = _cued(ID_WORDS, 3, _LINK + "?", ID_VALUE, after=_NUMBER_WORD)
# What an e-mail address adds after a value the id rule took ("Konto: m.schmitz@gmail.com"):
# taken with it, so that the id is rejected and the address read by the e-mail rules.
AT = (r"(?:[ \t]*(?:\[[Aa][Tt]\]|\([Aa][Tt]\)|\{[Aa][Tt]\}|<[Aa][Tt]>)[ \t]*"
       r"|[ \t]+(?:at|AT)[ \t]+)")
DOT = r"(?:\.|[ \t]*(?:\[[Dd][Oo][Tt]\]|\([Dd][Oo][Tt]\)|\{[Dd][Oo][Tt]\})[ \t]*|[ \t]+(?:dot|DOT)[ \t]+)"
EMAIL_TAIL = rf"(?:[A-Za-z0-9._%+-]*@[A-Za-z0-9.-]*|{AT}[A-Za-z0-9-]+{DOT}[A-Za-z0-9-]*)"
_LABEL = r"[A-Za-z0-9_%+-]+"
# An e-mail written to dodge scrapers: "maria dot rossi at gmail dot com", "maria [at]
# gmail [dot] com", "maria(at)gmail.com"; words joined by " at " before the last one are
# taken too, and the detector keeps what stands after the last-but-one " at ".
# An address written plainly right after prose ("mail me at jane.doe@example.com") is
# taken whole too, so that the detector can hand it to the plain e-mail rule.
_EMAIL_OBF = (rf"{_LABEL}(?:{DOT}{_LABEL})*(?:{AT}{_LABEL}(?:{DOT}{_LABEL})*)*"
              rf"{AT}[A-Za-z0-9-]+(?:{DOT}[A-Za-z0-9-]+)+(?:[A-Za-z0-9._%+-]*@[A-Za-z0-9.-]+)?")
# A date in digits, or with its month in words: "3 March 1985", "3rd March 1985", "1er mars
# 1985", "3. März 1985", "3 de marzo de 1985", "3 marca 1985", "March 3, 1985", "12-Feb-1979".
_MONTH_WORD = r"[A-Za-zß-öø-ÿąćęłńóśźżĄĆĘŁŃÓŚŹŻ]+"
DATE = (r"[0-9]{1,4}[./-][0-9]{1,2}[./-][0-9]+"
        rf"|[0-9]{{1,2}}(?:st|nd|rd|th|er|º|°)?\.?[ ](?:de[ ])?{_MONTH_WORD}\.?,?[ ](?:de[ ])?[0-9]+"
        rf"|[0-9]{{1,2}}-{_MONTH_WORD}-[0-9]{{2,4}}"
        rf"|{_MONTH_WORD}\.?[ ][0-9]{{1,2}}(?:st|nd|rd|th)?,?[ ][0-9]+")
_DOB_AFTER = rf"(?:{DATE})[ \t]+{phrases_rx(*DOB_AFTER)}"
_DOB_CTX = (rf"{phrases_rx(*DOB_WORDS)}\.?(?:[ \t]*\([^()\r\n]{{1,24}}\))?{_GAP % 3}(?:[ \t]*[:=]|[ \t]+[-–]|[ \t]+{phrases_rx('is', 'ist', 'am', 'le', 'op', 'il', 'on', 'est', 'è')})?"
            rf"[ \t]*(?:{DATE})")
# A street written all in lower case, which the runs of capitalised words never see: a
# street word before its name and a house number ("calle mayor 12", "ul. długa 5", "rua
# augusta 120, 1100-053 lisboa"), a number before a French street word ("12 rue de la
# paix") or a compound ("hauptstraße 5", "kerkstraat 12"), with the postcode and town after
# it. Words that are also plain words in lower case ("via", "place", "weg", "platz") and
# English streets ("2 more lanes", "2 blocks down the road") are left to the capitalised form.
_LW = "[a-zß-öø-ÿąćęłńóśźż]+"
_LOWER_POSTCODE = rf"(?:,?[ ]+(?:[0-9]{{5}}|[1-9][0-9]{{3}}-[0-9]{{3}}|[0-9]{{2}}-[0-9]{{3}}|[1-9][0-9]{{3}}[ ]?[a-z]{{2}})(?:[ ]+{_LW})?)?"
_STREET_LOWER = (
    rf"(?:(?:calle|c/|avenida|avda\.|rua|travessa|praça|ul\.|ulica|al\.|aleja|rue|boulevard|piazza"
    rf"|viale|corso|paseo)[ ]+(?:{_LW}[ ]+){{0,3}}{_LW},?[ ]+(?:n\.?[º°][ ]*)?[0-9]{{1,4}}[a-z]?"
    rf"|[0-9]{{1,4}}(?:bis|ter)?,?[ ]+(?:rue|avenue|boulevard|allée|chemin|impasse|quai)[ ]+(?:{_LW}[ ]+){{0,3}}{_LW}"
    r"(?:[ ]+[A-ZÀ-Þ])?"  # a capital after it: "12 rue de la Paix", left to the runs
    rf"|[a-zß-öø-ÿ]{{3,}}(?:straße|strasse|str\.|gasse|allee|straat|laan|gracht|kade|singel|dijk|steeg)[ ]+[0-9]{{1,4}}[a-z]?)"
    rf"{_LOWER_POSTCODE}")
_MAC = (r"[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}[0-9A-Za-z:.-]*"
        r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}[0-9A-Za-z.]*")
_NATID = (r"[0-9]{3}-[0-9]{2}-[0-9]{4}[0-9-]*"
          r"|[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z][A-Za-z0-9]*"
          r"|[A-Z]{2}(?: ?[0-9]{2}){3} ?[A-Z][A-Za-z0-9]*|[A-Z]{2} [0-9]{6} [A-Z][A-Za-z0-9]*"
          r"|[0-9]{2} ?[0-9]{6} ?[A-Z] ?[0-9]{3}[0-9A-Za-z]*"
          # ES DNI and NIE, BE national number, SE personnummer (checked by their checksums)
          r"|[0-9]{8}-?[A-Z][A-Za-z0-9]*|[XYZ]-?[0-9]{7}-?[A-Z][A-Za-z0-9]*"
          r"|[0-9]{2}\.[0-9]{2}\.[0-9]{2}-[0-9]{3}\.[0-9]{2}[0-9]*"
          r"|(?:19|20)?[0-9]{6}[-+][0-9]{4}[0-9]*"
          # FR NIR in its printed groups, with its key (checked by `numbers.nir_ok`)
          r"|[12] [0-9]{2} [0-9]{2} (?:[0-9]{2}|2[AB]) [0-9]{3} [0-9]{3} [0-9]{2}[0-9]*")
_URL_TOKEN = r"[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9_.~%-]{16,}@"
# A whole run holding an upper-case letter and a digit; each part's class excludes what
# follows it, so Python's backtracking stays linear on long runs.
_GENERIC = (r"(?:[a-z0-9+/_-]*[A-Z][A-Za-z+/_-]*[0-9]|[a-z+/_-]*[0-9][a-z0-9+/_-]*[A-Z])"
            r"[A-Za-z0-9+/_-]*=*")


@dataclass(frozen=True)
class Rule:
    name: str
    kinds: tuple[str, ...]
    prefix: str | None  # class of the consumed character before the token, or None
    token: str


# Priority order: at one start position the first rule that matches wins.
RULES: tuple[Rule, ...] = (
    Rule("placeholder", (), None, PLACEHOLDER),
    Rule("private_key", ("PRIVATE_KEY",), None, _PEM),
    Rule("url_cred", ("PASSWORD",), r"[^A-Za-z0-9+.-]", _URL_CRED),
    Rule("url_token", ("TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "API_KEY"), r"[^A-Za-z0-9+.-]",
          _URL_TOKEN),
    # before `assign`: a password after a label and a blank is the whole word that follows
    Rule("pin_prose", ("PASSWORD",), _P_WORD, _PIN_PROSE),
    Rule("pw_prose", ("PASSWORD",), _P_WORD, _PW_PROSE),
    Rule("assign", ("PASSWORD", "SECRET", "AWS_SECRET_KEY"), _P_KEY,
         ASSIGN_KEY + ASSIGN_SEP + f"(?:{ASSIGN_VALUE})"),
    Rule("auth", ("SECRET", "PASSWORD"), _P_WORD, _AUTH),
    Rule("pw_change", ("PASSWORD",), _P_WORD, _PW_CHANGE),
    Rule("key_prose", ("API_KEY",), _P_WORD, _KEY_PROSE),
    Rule("id_ctx", ("SSN", "NATIONAL_ID", "PASSPORT", "ACCOUNT"), _P_WORD,
         f"{ID_CTX}(?:{EMAIL_TAIL})?"),
    Rule("dob_ctx", ("DOB",), _P_WORD, _DOB_CTX),
    Rule("dob_after", ("DOB",), _P_NUM, _DOB_AFTER),
    Rule("order_ctx", ("CARD",), _P_WORD, _ORDER_CTX),
    Rule("card_ctx", ("CARD",), _P_WORD, _CARD_CTX),
    # a Jira user mention, "[~leo.papadopoulos]": the account name of a person
    Rule("mention", ("PERSON",), None, r"\[~[A-Za-z0-9._@+-]+\]"),
    Rule("slack_hook", ("SLACK_TOKEN",), None, r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    Rule("jwt", ("JWT",), _P_TOK, r"eyJ[A-Za-z0-9_-]+\.ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),
    Rule("github", ("GITHUB_TOKEN",), _P_TOK, r"gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+"),
    Rule("gitlab", ("GITLAB_TOKEN",), _P_TOK,
          r"gl(?:pat|dt|rt|cbt|ptt|soat|ft|imt|oas|agent)-[A-Za-z0-9_-]+"),
    Rule("slack", ("SLACK_TOKEN",), _P_TOK, r"xox[abposre]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+"),
    Rule("stripe", ("STRIPE_KEY",), _P_TOK, r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]+|whsec_[A-Za-z0-9]+"),
    Rule("openai", ("OPENAI_KEY", "API_KEY"), _P_TOK, r"sk-[A-Za-z0-9_-]+"),
    Rule("aws_id", ("AWS_ACCESS_KEY",), _P_TOK,
          r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]+"),
    Rule("gcp", ("GCP_API_KEY",), _P_TOK, r"AIza[A-Za-z0-9_-]+"),
    Rule("api_key", ("API_KEY",), _P_TOK,
          r"hf_[A-Za-z0-9]+|npm_[A-Za-z0-9]+|pypi-[A-Za-z0-9_-]+|SG\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"
          r"|ya29\.[A-Za-z0-9_-]+|shp(?:at|ca|pa|ss)_[A-Fa-f0-9]+|dop_v1_[a-f0-9]+"
          r"|sq0(?:atp|csp)-[A-Za-z0-9_-]+|SK[0-9a-fA-F]+|key-[A-Za-z0-9]+"),
    Rule("email", ("EMAIL",), r"[^A-Za-z0-9._%+-]",
          r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    Rule("email_obf", ("EMAIL",), r"[^A-Za-z0-9._%+-]", _EMAIL_OBF),
    Rule("iban", ("IBAN",), r"[^A-Za-z0-9]", r"[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,32}"),
    Rule("natid", ("SSN", "NATIONAL_ID"), _P_TOK, _NATID),
    Rule("mac", ("MAC",), r"[^A-Za-z0-9_:.-]", _MAC),
    Rule("card", ("CARD",), _P_NUM, CARD),
    Rule("phone_ctx", ("PHONE",), _P_WORD, _PHONE_CTX),
    Rule("phone", ("PHONE",), _P_PHONE, _PHONE),
    Rule("ipv6", ("IPV6",), _P_V6, _IPV6),
    Rule("ipv4", ("IPV4",), _P_V4, _IPV4),
    Rule("generic", ("TOKEN",), _P_GEN, _GENERIC),
)


# A name in a passenger list's style, "NGATA/AROHA MS": the two parts and up to two words
# in capitals after them (a second given name, a title), which `airline.judge` reads (no
# look-around: the same expression runs in Rust's regex).
AIRLINE = r"[A-Z][A-Z'-]*[A-Z]/[A-Za-z0-9]+(?:[ ][A-Z]+){0,2}"


# A second pass, over the text the first one redacted: prose forms whose cue words and
# letter classes, in the first pass's one expression, made it too large for Rust's lazy
# DFA (a tenth of the speed). They stand lower than every rule above: a rule above that
# took their text first wins.
LATE_RULES: tuple[Rule, ...] = (
    RULES[0],
    Rule("code_prose", ("PASSWORD",), _P_WORD, _CODE_PROSE),
    Rule("credentials", ("PASSWORD",), _P_WORD, _CREDENTIALS),
    Rule("pw_bare", ("PASSWORD",), _P_WORD, _PW_BARE),
    Rule("street_lower", ("ADDRESS",), rf"[^A-Za-z0-9_{U}{L}]", _STREET_LOWER),
    Rule("airline", ("PERSON",), r"[^A-Za-z0-9_/'.-]", AIRLINE),
)


Span = tuple[int, int, str, str]  # start, end (in the token), kind, normalised value


def whole(tok: str, kind: str) -> list[Span]:
    return [(0, len(tok), kind, tok)]



Detector = Callable[[str], list[Span]]  # a rule's judge: the findings in its token
