"""Reading a log file as lines: in blocks of about CHUNK_BYTES (gzip, UTF-16/32 and CR
line endings handled, invalid UTF-8 and NUL bytes replaced and remembered, a line over
MAX_LINE_BYTES kept whole up to that size), and its first lines for detection."""

from __future__ import annotations

import array
import sys
import zlib
from pathlib import Path
from typing import Iterator, NamedTuple

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from rlforge.errors import InputFileError
from rlforge.ingest.textfile import (NUL_REPLACEMENT, check_not_binary, is_gzip,
                                     line_endings, open_bytes, unreadable)

CHUNK_BYTES = 16 << 20      # text read per chunk
MAX_LINE_BYTES = 64 << 20   # a line longer than this is kept to here, whole, flagged truncated
SAMPLE_LINES = 1000         # lines looked at to detect the format and its time layout


def _open(path: Path):
    """A binary reader of the file's content as UTF-8 (gzip decompressed, UTF-16/32 with a
    byte-order mark transcoded)."""
    return open_bytes(path)


_CR_TO_LF = bytes.maketrans(b"\r", b"\n")


def _split(data, start: int, end: int) -> tuple[pl.Series, bool, pl.Series | None]:
    """The lines of data[start:end] (which ends at a newline, or at the end of the file),
    with the text copied once (by the split); whether invalid UTF-8 had to be replaced; and
    which lines held NUL bytes (None when none did), which are replaced by U+FFFD."""
    if end <= start:
        return pl.Series("line", [], dtype=pl.String), False, None
    view = memoryview(data)[start:end]
    arr = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 1, [None, pa.py_buffer(array.array("q", [0, end - start])),
                               pa.py_buffer(view)])
    parts = pc.split_pattern(arr, b"\n").flatten()
    if data[end - 1:end] == b"\n":
        parts = parts.slice(0, len(parts) - 1)
    lines: pl.Series
    try:  # Arrow's string views, which polars takes as they are; the cast validates UTF-8
        from_arrow = pl.from_arrow(parts.cast(pa.string_view()))
        assert isinstance(from_arrow, pl.Series), "an Arrow array comes back as a Series"
        lines, bad = from_arrow, False
    except pa.ArrowInvalid:
        text = bytes(view).decode("utf-8", errors="replace")
        lines, bad = pl.Series(text.split("\n")[: len(parts)], dtype=pl.String), True
    if data.find(b"\r", start, end) >= 0:
        lines = lines.str.strip_suffix("\r")
    nul = None
    if data.find(b"\x00", start, end) >= 0:
        nul = lines.str.contains("\x00", literal=True)
        lines = lines.str.replace_all("\x00", NUL_REPLACEMENT, literal=True)
    return lines.alias("line"), bad, nul


class _BufferPool:
    """Read buffers, each used again once nothing refers to it any more.

    Reading a block into new memory faults in every page of it: 4,096 page faults and
    ~9 ms for 16 MB here. A buffer is handed out again only when this pool holds the only
    reference to it: anything still reading a block (the background hash; a parse, for
    the moment it turns the bytes into lines) holds a memoryview, which holds the buffer."""

    def __init__(self, size: int, keep: int = 4):
        self.size, self.keep = size, keep
        self.buffers: list[bytearray] = []

    def take(self) -> bytearray:
        for buf in self.buffers:
            if sys.getrefcount(buf) == 3:  # the list, `buf` and getrefcount's argument
                return buf
        buf = bytearray(self.size)
        if len(self.buffers) < self.keep:
            self.buffers.append(buf)
        return buf


class LineBlock(NamedTuple):
    """Lines of a file read together: the text of each, whether invalid UTF-8 was replaced
    in any, which held NUL bytes (a Boolean per line, None when none did), and the lines
    cut at MAX_LINE_BYTES (position in the block -> the line's full length in bytes)."""

    lines: pl.Series
    bad_utf8: bool
    nul: pl.Series | None = None
    cut: dict[int, int] | None = None


def _joined(head: LineBlock, body: LineBlock) -> LineBlock:
    if not head.lines.len():
        return body
    lines = pl.concat([head.lines, body.lines], rechunk=False)
    nul = None
    if head.nul is not None or body.nul is not None:
        nul = pl.concat([m if m is not None else pl.repeat(False, part.len(), eager=True)
                         for m, part in ((head.nul, head.lines), (body.nul, body.lines))])
    return LineBlock(lines, head.bad_utf8 or body.bad_utf8, nul, head.cut)


def _cut_line(kept: bytes, length: int) -> LineBlock:
    """A line longer than MAX_LINE_BYTES: its first MAX_LINE_BYTES (to a whole UTF-8
    character), as one record that remembers the full length."""
    end = i = len(kept)
    while i > 0 and end - i < 4 and 0x80 <= kept[i - 1] < 0xC0:
        i -= 1  # back over the continuation bytes of the last character
    if i > 0 and kept[i - 1] >= 0xC0:  # its lead byte: is the character whole?
        lead = kept[i - 1]
        if end - (i - 1) < (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4):
            end = i - 1
    lines, bad, nul = _split(kept, 0, end)
    return LineBlock(lines.head(1), bad, nul.head(1) if nul is not None else None, {0: length})


def iter_line_blocks(path: str | Path, chunk_bytes: int | None = None, hasher=None,
                     newline: str = "LF") -> Iterator[LineBlock]:
    """The lines of a file in blocks of about `chunk_bytes` (see `LineBlock`). `hasher`
    (hashlib) is fed the bytes of a plain file as they are read (so the file is read once).

    `newline` is how the file's lines end (`textfile.line_endings`): LF and CRLF lines are
    split at LF (a CR before it dropped), CR-only lines at CR. A line longer than
    MAX_LINE_BYTES is kept up to that size, whole as one record, and the rest of it up to
    its newline is skipped (its length is kept in the block's `cut`): a line is never
    split into several."""
    path = Path(path)
    gz = is_gzip(path)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    pool = _BufferPool(chunk_bytes)
    cr_only = newline == "CR"
    try:
        with _open(path) as fh:
            carry, first = b"", True
            cut: list | None = None  # [kept bytes, full length] of a line over the limit
            while True:
                if first:
                    # The first block is small, so the first records reach the miner and
                    # the database writer while the next block is parsed.
                    data = fh.read(max(chunk_bytes // 16, 1))
                    n = len(data)
                else:
                    data = pool.take()
                    n = fh.readinto(memoryview(data)) or 0
                if hasher is not None and not gz:
                    hasher.update(memoryview(data)[:n])
                if not n:
                    if cut is not None:
                        yield _cut_line(*cut)
                    elif carry:
                        yield LineBlock(*_split(carry, 0, len(carry)))
                    return
                if first and (carry + data).startswith(b"\xef\xbb\xbf"):
                    data, carry = (carry + data)[3:], b""
                    n = len(data)
                first = first and len(carry) + n < 3
                if cr_only:
                    data = bytes(memoryview(data)[:n]).translate(_CR_TO_LF)
                start = 0
                if cut is not None:  # skipping the rest of a line over the limit
                    nl = data.find(b"\n", 0, n)
                    if nl < 0:
                        cut[1] += n
                        continue
                    cut[1] += nl
                    yield _cut_line(*cut)
                    cut, start = None, nl + 1
                nl = data.find(b"\n", start, n)
                if nl < 0:
                    carry += data[start:n]
                    if len(carry) >= MAX_LINE_BYTES:
                        cut, carry = [carry[:MAX_LINE_BYTES], len(carry)], b""
                    continue
                last = data.rfind(b"\n", 0, n)
                if len(carry) + nl - start >= MAX_LINE_BYTES:  # the line ends here, too long
                    line = carry + data[start:nl]
                    head = _cut_line(line[:MAX_LINE_BYTES], len(line))
                else:
                    head = LineBlock(*_split(carry + data[start:nl + 1], 0,
                                             len(carry) + nl + 1 - start))
                body = LineBlock(*_split(data, nl + 1, last + 1))
                carry = bytes(data[last + 1:n])
                yield _joined(head, body)
    except EOFError:
        raise InputFileError(str(path), "truncated gzip stream (the file ends before the "
                             "compressed data does); re-copy it") from None
    except (OSError, zlib.error) as exc:
        raise unreadable(path, exc) from None


def split_lines(block: bytes) -> tuple[pl.Series, bool]:
    """The lines of a block of text (a trailing newline ends the last line)."""
    lines, bad, _ = _split(block, 0, len(block))
    return lines, bad


def sample_lines(path: str | Path, n: int = SAMPLE_LINES) -> pl.Series:
    """The first n non-blank lines of a file (for detection)."""
    size = 1 << 20
    try:
        with _open(Path(path)) as fh:
            head = fh.read(size)
    except EOFError:
        raise InputFileError(str(path), "truncated gzip stream (the file ends before the "
                             "compressed data does); re-copy it") from None
    except (OSError, zlib.error) as exc:
        raise unreadable(path, exc) from None
    check_not_binary(path, head)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if line_endings(head) == "CR":
        head = head.translate(_CR_TO_LF)
    if len(head) >= size - 3:  # a part of the file: its last line may be cut
        head = head[: head.rfind(b"\n") + 1] or head
    lines, _ = split_lines(head)
    return lines.filter(lines.str.strip_chars().str.len_chars() > 0).head(n)
