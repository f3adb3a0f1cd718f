"""Export files read as text: gzip transparently, UTF-16/32 by their byte-order mark,
binary files told apart from text by one rule, and line endings detected per file.

Every ingest (tickets, logs) reads its files through these functions, so a file is text,
binary, compressed or wide in the same way whatever its source.
"""

from __future__ import annotations

import codecs
import gzip
import io
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

from rlforge import db
from rlforge.errors import InputFileError

PERMISSION_DENIED = ("permission denied: cannot read it (check the mode and owner of the file "
                     "and of its directories)")


def unreadable(path: str | Path, exc: BaseException) -> InputFileError:
    """The error for a file whose bytes cannot be read (OSError, zlib.error)."""
    if isinstance(exc, PermissionError):
        return InputFileError(str(path), PERMISSION_DENIED)
    return InputFileError(str(path), f"cannot read: {exc}")


SNIFF_BYTES = 64 * 1024


_HASHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlforge-sha256")


def sha256_in_background(path: str | Path) -> Future:
    """Start hashing a file on another thread (hashlib releases the GIL on large blocks), so
    hashing a large export overlaps with parsing it instead of adding to it."""
    return _HASHER.submit(db.sha256_file, path)


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


# Byte-order marks, longest first (UTF-32 LE starts like UTF-16 LE).
_BOMS = [(codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16")]
BINARY_SNIFF = 8192        # bytes looked at to tell text from binary
BINARY_CONTROL_SHARE = 0.05
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\v\f\r\x1b")
NUL_REPLACEMENT = "\ufffd"  # what a NUL byte in a record becomes (the record is flagged)


def bom_encoding(head: bytes) -> str:
    """The encoding a byte-order mark names ('utf-8' when there is none)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return "utf-8"


def check_not_binary(path: str | Path, head: bytes) -> None:
    """Refuse a file that is not text: NUL and other control bytes are more than 5% of its
    first 8 KB (text in UTF-16/32 is read when it starts with a byte-order mark).

    This is the one rule for NUL bytes: it judges the file by its head, and a text file's
    stray NUL bytes, wherever they are, become U+FFFD in their record, which is flagged
    `nul_bytes` (logs and tickets alike)."""
    if bom_encoding(head) not in ("utf-8", "utf-8-sig"):
        return
    block = head[:BINARY_SNIFF]
    if not block:
        return
    control = len(block) - len(block.translate(None, _CONTROL))
    if control > BINARY_CONTROL_SHARE * len(block):
        hint = (" (UTF-16/32 text is read only when it starts with a byte-order mark)"
                if block.count(b"\x00") * 4 >= len(block) else "")
        raise InputFileError(str(path), f"binary file ({control / len(block):.0%} of its first "
                             f"{len(block):,} bytes are NUL or control bytes), not text{hint}")


class Utf8Reader(io.RawIOBase):
    """A binary reader giving the UTF-8 bytes of a UTF-16/32 stream (its BOM consumed),
    so that every reader after it sees UTF-8 text."""

    def __init__(self, raw, encoding: str):
        self.raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pending = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = len(buffer)
        while len(self._pending) < want and not self._eof:
            block = self.raw.read(max(want, 1 << 16))
            text = self._decoder.decode(block, final=not block)
            self._eof = not block
            self._pending += text.encode("utf-8", errors="surrogatepass")
        n = min(want, len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def open_bytes(path: str | Path):
    """A binary reader of a file's content as UTF-8: gzip decompressed, UTF-16/32 (with a
    byte-order mark) transcoded; the UTF-8 byte-order mark, if any, is left in place."""
    fh = gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")
    try:
        encoding = bom_encoding(fh.peek(4)[:4])
    except BaseException:
        fh.close()
        raise
    if encoding in ("utf-8", "utf-8-sig"):
        return fh
    return io.BufferedReader(Utf8Reader(fh, encoding), 1 << 20)


def file_encoding(path: str | Path) -> str:
    """'utf-8', or the UTF-16/32 its byte-order mark names (gzip read transparently)."""
    opener = gzip.open if is_gzip(path) else open
    try:
        with opener(path, "rb") as fh:
            return bom_encoding(fh.read(4)).replace("utf-8-sig", "utf-8")
    except (OSError, EOFError, zlib.error):
        return "utf-8"  # the reader that follows says what is wrong


def line_endings(head: bytes | str) -> str:
    """How the lines of a file end, from its first bytes (or characters): LF, CRLF, CR (old
    Mac and some devices: no LF at all), or none (a single line)."""
    text = head if isinstance(head, str) else head.decode("latin-1")  # one char per byte
    lf = text.count("\n")
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    if not lf:
        return "CR" if cr else "none"
    return "CRLF" if crlf * 2 > lf else "LF"


def read_head(path: str | Path, n: int = SNIFF_BYTES) -> bytes:
    """The first n bytes of a file's content as UTF-8 (see `open_bytes`)."""
    return _read(path, n)


def read_all(path: str | Path) -> bytes:
    """The whole content as UTF-8 (see `open_bytes`); a truncated or corrupt gzip is an
    InputFileError."""
    return _read(path, -1)


def _read(path: str | Path, n: int) -> bytes:
    try:
        with open_bytes(path) as fh:
            return fh.read(n)
    except EOFError:
        raise InputFileError(str(path), "truncated gzip stream (file ends before the "
                             "compressed data does); re-export or re-download it") from None
    except (OSError, zlib.error) as exc:
        raise unreadable(path, exc) from None


def decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text (BOM stripped) and whether invalid bytes had to be replaced."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def text_lines(text: str, newline: str | None = None) -> Iterator[str]:
    """The lines of a text without their line ends, split the way log files are: at CR in
    a file whose lines end in CR only, else at LF (a CR before it is dropped); `newline`
    as `line_endings` says, detected from the text's start when not given. Never at the
    other characters `str.splitlines()` breaks at (U+2028, U+2029, U+0085, \\v, \\f,
    \\x1c-\\x1e), which stand inside a record: a JSON string holds the first three as they
    are. A final line end ends the last line."""
    if newline is None:
        newline = line_endings(text[:SNIFF_BYTES])
    sep = "\r" if newline == "CR" else "\n"
    start, size = 0, len(text)
    while start < size:
        end = text.find(sep, start)
        end = size if end < 0 else end
        line = text[start:end]
        yield line[:-1] if sep == "\n" and line.endswith("\r") else line
        start = end + 1
