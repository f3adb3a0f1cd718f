"""Detectors of addresses on a network: e-mail addresses (not image or asset names, not
``git@``), IPv4 and IPv6 addresses (not loopback, unspecified or netmasks; a dotted quad
after a version word is a version) and MAC addresses."""

from __future__ import annotations

import ipaddress
import re

from rlforge.ingest.redaction.rules import AT, DOT, Detector, Span

_RETINA = re.compile(r"[0-9]+x")


def mac_address(text: str) -> str | None:
    """Six bytes as ``aa:bb:cc:dd:ee:ff``, ``AA-BB-..`` or ``aabb.ccdd.eeff``: the 12 hex
    digits, lower-case; None for the all-zero and broadcast addresses."""
    h = re.sub(r"[:.-]", "", text).lower()
    if len(h) != 12 or h in ("000000000000", "ffffffffffff"):
        return None
    return h


def _h_mac(tok: str) -> list[Span]:
    t = tok.rstrip(".")
    norm = mac_address(t) if re.fullmatch(
        r"[0-9A-Fa-f]{2}(?:([:-])[0-9A-Fa-f]{2})(?:\1[0-9A-Fa-f]{2}){4}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2}",
        t) else None
    if norm is None:
        return _h_ipv6(tok) if ":" in tok else []
    return [(0, len(t), "MAC", norm)]


def _h_email(tok: str) -> list[Span]:
    local, _, domain = tok.rpartition("@")
    labels = domain.lower().split(".")
    if local == "git" or _RETINA.fullmatch(labels[0]) or labels[-1] in {
            "png", "jpg", "jpeg", "gif", "svg", "webp", "css", "js", "ts", "py", "java"}:
        return []
    return [(0, len(tok), "EMAIL", tok.lower())] if local.strip(".") else []


_AT_RX, _DOT_RX = re.compile(AT), re.compile(DOT)
_PLAIN_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# top-level domains an obfuscated address may end in (a word after " dot " must be one)
_TLDS = frozenset("com net org edu gov info biz io co me eu uk de fr es it nl pt pl be se at ch "
                  "dk no fi ie lu cz sk hu ro gr us ca au br mx ar in jp cn ru tr".split())


def _h_email_obf(tok: str) -> list[Span]:
    """``maria dot rossi at gmail dot com``, ``maria [at] gmail [dot] com``: the words
    after the last-but-one "at" and the domain after the last, read as an address. A
    plain address at the end ("me at jane.doe@example.com") is read as one."""
    if "@" in tok:
        plain = _PLAIN_EMAIL.search(tok)
        return [(plain.start() + s, plain.start() + e, kind, value)
                for s, e, kind, value in _h_email(plain.group())] if plain else []
    ats = list(_AT_RX.finditer(tok))
    last = ats[-1]
    start = ats[-2].end() if len(ats) > 1 else 0
    local = _DOT_RX.sub(".", tok[start:last.start()])
    domain = _DOT_RX.sub(".", tok[last.end():]).lower()
    labels = domain.split(".")
    if labels[-1] not in _TLDS or len(labels) < 2 or not all(labels) or not local.strip("."):
        return []
    if last.group().strip() == "at" and "dot" not in tok[last.end():].lower():
        return []  # "Service at host.example.com": prose; the spelled style spells "dot" too
    return [(start, len(tok), "EMAIL", f"{local}@{domain}".lower())]


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



def _h_mention(tok: str) -> list[Span]:
    """A Jira mention "[~name]": the name is a person's account (case-folded as a name)."""
    return [(2, len(tok) - 1, "PERSON", tok[2:-1].casefold())]


DETECTORS: dict[str, Detector] = {"mention": _h_mention, "email": _h_email, "email_obf": _h_email_obf, "mac": _h_mac, "ipv6": _h_ipv6,
                                  "ipv4": _h_ipv4}
