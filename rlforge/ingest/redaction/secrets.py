"""Detectors of secrets: private keys, credentials in URLs, ``password=``/``token:``
values, auth headers, passwords and keys written in prose, vendors' keys and tokens, and
random-looking tokens. Hex-only strings (git shas, hashes, UUIDs) are never generic
secrets."""

from __future__ import annotations

import base64
import binascii
import collections
import functools
import math
import re

from rlforge.ingest.redaction.words import OTHER_CODES
from rlforge.ingest.redaction.rules import (ASSIGN_KEY, ASSIGN_SEP, ASSIGN_VALUE, PASSWORD_KEYS,
                                            PLACEHOLDER, RULES, Detector, Span, whole)

_HEXISH = re.compile(r"[0-9A-Fa-f-]+")
_WORDY = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}")
_VOWEL, _CONSONANTS5 = re.compile(r"[aeiouyAEIOUY]"), re.compile(r"[^aeiouyAEIOUY]{5}")
_WORD_PART = re.compile(r"[A-Z]?[a-z]{2,}|[a-z]{3,}")
_SPLIT_ID = re.compile(r"[/_-]")
_SIX_DIGITS = re.compile(r"[0-9]{6}")
_NOT_A_VALUE = {"null", "none", "nil", "true", "false", "undefined", "empty", "n/a", "na",
                "redacted", "hidden", "masked", "required", "optional", "string", "str",
                "int", "bool", "yes", "no", "on", "off"}
_VENDOR_MIN = {  # token prefix -> minimal length of what follows it
    "github_pat_": 40, "ghp_": 30, "gho_": 30, "ghu_": 30, "ghs_": 30, "ghr_": 30,
    "hf_": 30, "npm_": 36, "pypi-": 50, "ya29.": 30, "shpat_": 32, "shpca_": 32,
    "shppa_": 32, "shpss_": 32, "dop_v1_": 64, "sq0atp-": 22, "sq0csp-": 22, "SK": 32,
    "key-": 32, "whsec_": 24,
}


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



def _h_private_key(tok: str) -> list[Span]:
    """A key block however its line breaks were mangled: real ones, escaped ``\\n``,
    spaces or none at all, with its END line or a body long enough to be one."""
    body = tok.split("-----", 2)[-1]
    ok = "\\n" in tok or "\n" in tok or "-----END" in tok or len(body.replace(" ", "")) >= 60
    return whole(tok, "PRIVATE_KEY") if ok else []


def _h_url_token(tok: str) -> list[Span]:
    """A token as a URL's whole userinfo: ``https://ghp_...@github.com``."""
    start = tok.index("://") + 3
    val = tok[start:-1]
    kind = _classify_value(val)
    if kind is None:
        hexy = _HEXISH.fullmatch(val) and len(val) >= 32
        kind = "TOKEN" if hexy or _looks_random(val, 20) else None
    return [(start, len(tok) - 1, kind, val)] if kind else []



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
    if strict:  # after "changed it to": letters with digits or symbols, 8 or more, or 6
        # or more of three classes ("Paz1983", "/mZTyxy": a name or a version has fewer)
        classes = sum((any(c.isupper() for c in val), any(c.islower() for c in val), has_digit,
                       has_other))
        return (len(val) >= 8 or len(val) >= 6 and classes >= 3) and has_alpha and (
            has_digit or has_other) and not re.fullmatch(
            r"v?[0-9.]+[a-z]*|[A-Za-z]+[0-9]{1,2}|https?:.*|.*@.*\..*|[0-9]+[xX×][0-9]+", val)
    if val.isalpha():
        return not val.islower() and not val.istitle() and not val.isupper()
    return has_alpha or has_digit and len(val) >= 4 and has_other or len(val) >= 6


# a call in a log line, not a value: "passwd: pam_unix(passwd:chauthtok): password changed"
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\(.*")


# the links after which digits alone are a password ("password: 123456", "clave es 1234"),
# not a year or a count ("password expired in 2024")
_IS_LINK = re.compile(r"(?:[:=]|\s(?:is|ist|lautet|est|es|é|è|jest|to|was|war|era|fue|foi))\s*$",
                      re.IGNORECASE)


def _h_pw_prose(tok: str) -> list[Span]:
    start, val = _prose_value(tok)
    if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'":
        start, val = start + 1, val[1:-1]  # a quoted value: the quotes stay
    inner = _classify_value(val)  # "password: ghp_…" is the token it is
    if inner is not None:
        return [(start, start + len(val), inner, val)]
    digits = bool(re.fullmatch(r"[0-9]{4,12}", val)) and bool(_IS_LINK.search(tok[:start]))
    ok = (_password_like(val, False) or digits) and not _CALL.fullmatch(val)
    return [(start, start + len(val), "PASSWORD", val)] if ok else []


def _h_credentials(tok: str) -> list[Span]:
    """The password of a "user / password" pair after a credentials word, judged
    strictly ("login: anna.k / Sommer2021!", not "login: Settings / Security")."""
    start = tok.rindex("/") + 1
    start += len(tok[start:]) - len(tok[start:].lstrip(" \t"))
    _, val = _prose_value(tok[start:])
    return [(start, start + len(val), "PASSWORD", val)] if _password_like(val, True) else []


def _h_pw_change(tok: str) -> list[Span]:
    start, val = _prose_value(tok)
    return [(start, start + len(val), "PASSWORD", val)] if _password_like(val, True) else []


def _h_code_prose(tok: str) -> list[Span]:
    """Digits after a bare "code" and a link, unless the word before the code names
    another kind of code ("zip code is 90210", "error code: 5003")."""
    first = tok.split(None, 1)[0].lower()
    if first in OTHER_CODES:
        return []
    start = len(tok.rstrip("0123456789"))
    if re.fullmatch(r"(?:19|20)[0-9]{2}", tok[start:]):
        return []  # a year: "the code was 2024 compliant"
    return [(start, len(tok), "PASSWORD", tok[start:])]


def _h_pw_bare(tok: str) -> list[Span]:
    """The word right after a password word, with no link: a password only when it holds
    letters and digits and passes the strict test ("pw Kx7#pq2", not "password v2.3")."""
    start, val = _prose_value(tok)
    if len(val) > 2 and val[0] == "(" and val[-1] == ")":
        start, val = start + 1, val[1:-1]  # "my password (Tulip!88)": the brackets stay
    ok = (any(c.isdigit() for c in val) and any(c.isalpha() for c in val)
          and _password_like(val, True) and val[:1] not in "([{" and val[-1:] not in ")]}")
    return [(start, start + len(val), "PASSWORD", val)] if ok else []


def _h_pin_prose(tok: str) -> list[Span]:
    """The value after a PIN or one-time-code word: 4 to 8 digits, or a password."""
    start, val = _prose_value(tok)
    ok = bool(re.fullmatch(r"[0-9]{4,8}", val)) or _password_like(val, False)
    return [(start, start + len(val), "PASSWORD", val)] if ok else []


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


_ASSIGN = re.compile(rf"(?P<key>{ASSIGN_KEY})(?P<sep>{ASSIGN_SEP})(?P<val>{ASSIGN_VALUE})")


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
    if any(w in low for w in PASSWORD_KEYS) or re.search(r"(?:^|[_.-])pass$", low):
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
    return whole(tok, "JWT") if _b64json(head) and _b64json(body) else generic_token(tok)


def _vendor(kind: str) -> Detector:
    def handler(tok: str) -> list[Span]:
        for prefix, need in _VENDOR_MIN.items():
            if tok.startswith(prefix):
                ok = len(tok) - len(prefix) >= need
                if prefix == "SK":
                    ok = len(tok) == 34
                return whole(tok, kind) if ok else generic_token(tok)
        return whole(tok, kind) if len(tok) >= 24 else generic_token(tok)
    return handler


def _h_gitlab(tok: str) -> list[Span]:
    return whole(tok, "GITLAB_TOKEN") if len(tok.split("-", 1)[1]) >= 20 else []


def _h_slack(tok: str) -> list[Span]:
    ok = len(tok) >= 24 and any(c.isdigit() for c in tok)
    return whole(tok, "SLACK_TOKEN") if ok else []


def _h_stripe(tok: str) -> list[Span]:
    return whole(tok, "STRIPE_KEY") if len(tok.rsplit("_", 1)[1]) >= 16 else []


def _h_openai(tok: str) -> list[Span]:
    rest = tok[3:]
    if rest.startswith("ant-"):
        return whole(tok, "API_KEY") if len(rest) >= 40 else []
    body = re.sub(r"^(?:proj|svcacct|admin)-", "", rest)
    ok = len(body) >= 20 and _looks_random(body.replace("-", "").replace("_", ""), 20)
    return whole(tok, "OPENAI_KEY") if ok else []


def _h_aws_id(tok: str) -> list[Span]:
    return whole(tok, "AWS_ACCESS_KEY") if len(tok) == 20 else []


def _h_gcp(tok: str) -> list[Span]:
    return whole(tok, "GCP_API_KEY") if len(tok) == 39 else generic_token(tok)


def generic_token(tok: str) -> list[Span]:
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


DETECTORS: dict[str, Detector] = {
    "private_key": _h_private_key, "url_cred": _h_url_cred, "url_token": _h_url_token,
    "assign": _h_assign, "auth": _h_auth, "pin_prose": _h_pin_prose, "pw_prose": _h_pw_prose, "pw_change": _h_pw_change,
    "code_prose": _h_code_prose, "credentials": _h_credentials, "pw_bare": _h_pw_bare, "key_prose": _h_key_prose, "slack_hook": _h_slack_hook, "jwt": _h_jwt,
    "github": _vendor("GITHUB_TOKEN"), "gitlab": _h_gitlab, "slack": _h_slack,
    "stripe": _h_stripe, "openai": _h_openai, "aws_id": _h_aws_id, "gcp": _h_gcp,
    "api_key": _vendor("API_KEY"), "generic": generic_token,
}


def detectors(logs: bool = False) -> dict[str, Detector]:
    """The detectors. In `logs` mode (ops logs) ``PWD=/home/ubuntu`` is a working
    directory and PAM's ``service:type`` (``chpasswd:chauthtok``) is not a password."""
    found = dict(DETECTORS)
    if logs:
        found["assign"] = functools.partial(_h_assign, logs=True)
    return found


_RULE_BY_NAME = {r.name: r for r in RULES}
_VALUE_RULES = ("private_key", "jwt", "github", "gitlab", "slack", "stripe", "openai",
                "aws_id", "gcp", "api_key")
_VALUE_RX = re.compile("|".join(f"(?P<{n}>(?:{_RULE_BY_NAME[n].token}))" for n in _VALUE_RULES))


def _classify_value(val: str) -> str | None:
    """The vendor kind of an assignment's value (``token=ghp_...`` is a GitHub token)."""
    m = _VALUE_RX.fullmatch(val)
    if m is None or m.lastgroup is None:
        return None
    spans = DETECTORS[m.lastgroup](val)
    return spans[0][2] if spans and spans[0][:2] == (0, len(val)) else None
