"""Text git hands over as bytes: a readable form to store, and the exact bytes beside it.

git stores messages, names and paths as bytes, and nothing makes them UTF-8: a history
converted from another tool, or written on a Latin-1 machine, holds messages and paths
that are not. rlforge reads git's output with `surrogateescape`, so each byte that is not
part of valid UTF-8 becomes a lone surrogate (U+DC80..U+DCFF) that neither polars nor
DuckDB will store. Such a string is stored twice: as text anyone can read (each stray byte
read as its Windows-1252 character, the usual encoding of such histories, or U+FFFD where
that has none) and as its exact bytes. A string without stray bytes is stored as it is,
with no bytes beside it.
"""

from __future__ import annotations

import re

_STRAY = re.compile("[\udc80-\udcff]")


def _cp1252(byte: int) -> str:
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D have no character
        return "\ufffd"


# surrogate of a stray byte -> the character it reads as
_READABLE = {0xDC00 + b: _cp1252(b) for b in range(0x80, 0x100)}


def has_stray_bytes(text: str) -> bool:
    """Whether `text` (decoded with surrogateescape) holds bytes that were not UTF-8."""
    return not text.isascii() and _STRAY.search(text) is not None


def readable(text: str) -> str:
    """`text` with each stray byte replaced by the character it most likely meant."""
    return text.translate(_READABLE)


def exact_bytes(text: str | None) -> bytes | None:
    """The bytes git gave for `text`, when they are not plain UTF-8; None when `text`
    itself is exact (then storing it loses nothing)."""
    if text is None or not has_stray_bytes(text):
        return None
    return text.encode("utf-8", "surrogateescape")


def split(text: str | None) -> tuple[str | None, bytes | None]:
    """(readable text, exact bytes or None) of a string decoded with surrogateescape."""
    raw = exact_bytes(text)
    return (text if raw is None else readable(text or "")), raw
