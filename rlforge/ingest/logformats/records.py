"""Lines into records: a chunk of lines parsed by a format, each record a parsed line
with the continuation lines after it (stack traces, Docker/CRI partial lines), flagged
where its bytes were cut, held NULs or were not UTF-8; and a file's chunks in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import polars as pl

from rlforge.ingest.logformats.base import LogFormat
from rlforge.ingest.logformats.reader import iter_line_blocks

MAX_RECORD_LINES = 100_000  # a multi-line record longer than this is cut
TIME_UNPARSED = "time_unparsed"  # flag: the record has a time field no layout parses
RECORD_COLUMNS = ["line_no", "n_lines", "ts", "ts_text", "host", "component", "level",
                  "message", "fields", "flag"]


@dataclass
class Chunk:
    """The records of one chunk, and the unparsed records set aside."""

    records: pl.DataFrame
    unparsed: pl.DataFrame  # line_no, n_lines, raw, flag, length
    lines: int
    ends_long: bool = False  # its last record was ended at MAX_RECORD_LINES
    skipped: int = 0         # continuation lines of such a record from the chunk before


def assemble(fmt: LogFormat, lines: pl.Series, first_no: int, bad_utf8: bool,
             final: bool, nul_lines: pl.Series | None = None,
             cut_lines: dict[int, int] | None = None,
             after_long: bool = False) -> tuple[Chunk, int]:
    """Parse a chunk of lines into records.

    A record starts at a parsed line (unless the line before said it continues, as
    Docker/CRI partial lines do), or at an unparsed line that does not look like a
    continuation; continuation lines join the record before them (joined with a newline;
    partial lines with nothing). Blank lines are not records. Returns the chunk, and how
    many trailing lines to carry into the next chunk, since the last record may continue
    there (nothing is carried from the final chunk).

    Flags: `truncated` for a record with a line cut at MAX_LINE_BYTES (`cut_lines`: line
    number -> full length; an unparsed one keeps its length for the quarantine reason),
    else `nul_bytes` for one with a NUL byte (`nul_lines`: their line numbers), else
    `invalid_utf8` where bytes had to be replaced.
    """
    n = len(lines)
    parsed = fmt.parse(lines)
    # not strip_chars: it copies every line (3.5k page faults per 16 MB chunk, 8 ms vs 3)
    blank = ~lines.str.contains(r"\S")
    ok = parsed["ok"] & ~blank
    line_no = pl.int_range(first_no, first_no + n, eager=True).alias("line_no")
    frame = parsed.with_columns(pl.Series("raw", lines), line_no, ok.alias("ok"))
    marks = []
    if nul_lines is not None and nul_lines.len():
        here = nul_lines.filter(nul_lines.is_between(first_no, first_no + n - 1))
        if here.len():
            marks.append(line_no.is_in(here.implode()).alias("nul"))
    if cut_lines:
        cut_here = {k: v for k, v in cut_lines.items() if first_no <= k < first_no + n}
        if cut_here:
            marks.append(line_no.replace_strict(pl.Series(list(cut_here), dtype=pl.Int64),
                                                pl.Series(list(cut_here.values()), dtype=pl.Int64),
                                                default=None).alias("length"))
    if marks:
        frame = frame.with_columns(marks)
    if blank.any():
        frame = frame.filter(~blank)
    simple = bool(frame["ok"].all()) and not bool(frame["continues"].any())
    carry, ends_long, skipped = 0, False, 0
    if simple:  # the common case: every line is a whole record
        if not final and frame.height:
            last = frame["line_no"][-1]
            carry = first_no + n - last
            frame = frame.head(frame.height - 1)
        frame = frame.with_columns(pl.lit(1, pl.Int32).alias("n_lines"))
    else:
        frame, carry, ends_long, skipped = _join_continuations(fmt, frame, first_no, n, final,
                                                               after_long)
    flag = pl.lit(None, dtype=pl.String)
    if bad_utf8:
        flag = pl.when(pl.col("raw").str.contains("\ufffd", literal=True)).then(
            pl.lit("invalid_utf8")).otherwise(None)
    if "nul" in frame.columns:
        flag = pl.when(pl.col("nul")).then(pl.lit("nul_bytes")).otherwise(flag)
    if "length" in frame.columns:
        flag = pl.when(pl.col("length").is_not_null()).then(pl.lit("truncated")).otherwise(flag)
    else:
        frame = frame.with_columns(pl.lit(None, pl.Int64).alias("length"))
    if ends_long:
        flag = pl.when(pl.int_range(pl.len()) == pl.len() - 1).then(pl.lit("truncated")) \
            .otherwise(flag)
    frame = frame.with_columns(flag.alias("flag"))
    # A time field that is there but parses to no time is flagged, never a silent null.
    frame = frame.with_columns(pl.when(
        pl.col("flag").is_null() & pl.col("ts").is_null()
        & pl.col("ts_text").str.contains(r"\S").fill_null(False))
        .then(pl.lit(TIME_UNPARSED)).otherwise(pl.col("flag")).alias("flag"))
    records = frame.filter(pl.col("ok")).select(RECORD_COLUMNS)
    unparsed = frame.filter(~pl.col("ok")).select("line_no", "n_lines", "raw", "flag", "length")
    return Chunk(records, unparsed, n - carry, ends_long, skipped), carry


def _join_continuations(fmt: LogFormat, frame: pl.DataFrame, first_no: int, n: int,
                        final: bool, after_long: bool) -> tuple[pl.DataFrame, int, bool, int]:
    """Records of a chunk with continuation lines joined; the lines to carry; whether the
    last record was ended at MAX_RECORD_LINES; and how many leading continuation lines of
    such a record (from the chunk before) were skipped."""
    cont_like = ~frame["ok"] & fmt.continuation(frame["raw"])
    prev_cont = frame["continues"].shift(1, fill_value=False) & frame["ok"].shift(1, fill_value=False)
    joins_partial = frame["ok"] & prev_cont
    starts = (frame["ok"] & ~joins_partial) | (~frame["ok"] & ~cont_like)
    rid = starts.cast(pl.Int64).cum_sum()
    frame = frame.with_columns(
        rid.alias("rid"), joins_partial.alias("partial"), starts.alias("start"),
        pl.when(frame["ok"]).then(frame["message"]).otherwise(frame["raw"]).alias("piece"))
    carry, ends_long, skipped = 0, False, 0
    if after_long:  # the continuation of the record the chunk before ended: skip it
        skipped = int((frame["rid"] == 0).sum())
        frame = frame.filter(pl.col("rid") > 0)
        ends_long = frame.height == 0 and not final  # it goes on past this chunk too
    if not final and frame.height:
        last_start = frame.filter(pl.col("start"))["line_no"].tail(1)
        # Carry the last record into the next chunk (it may go on there), unless it is
        # already longer than MAX_RECORD_LINES: then it ends here, flagged truncated, and
        # the next chunk skips the rest of it.
        if last_start.len() and first_no + n - last_start[0] <= MAX_RECORD_LINES:
            carry = first_no + n - last_start[0]
            frame = frame.filter(pl.col("line_no") < last_start[0])
        elif last_start.len():
            ends_long = True
    orphan = frame["rid"] == 0  # continuation lines with no record before them
    if orphan.any():
        frame = frame.with_columns(
            pl.when(orphan).then(-pl.col("line_no")).otherwise(pl.col("rid")).alias("rid"))
    single = frame["rid"].is_unique() if frame.height else pl.Series([], dtype=pl.Boolean)
    one = frame.filter(single).with_columns(pl.lit(1, pl.Int32).alias("n_lines"))
    multi = frame.filter(~single)
    if not multi.height:
        return one, carry, ends_long, skipped
    multi = multi.with_columns(
        pl.when(pl.col("partial")).then(pl.col("piece"))
        .otherwise(pl.concat_str([pl.lit("\n"), pl.col("piece")])).alias("glued"))
    marks = [c for c in ("nul", "length") if c in multi.columns]  # of any line of the record
    agg = multi.group_by("rid", maintain_order=True).agg(
        pl.all().exclude("glued", "piece", "message", "raw", "start", *marks).first(),
        *[pl.col(c).max() for c in marks],
        pl.len().cast(pl.Int32).alias("n_lines"),
        (pl.col("piece").first() + pl.col("glued").slice(1).str.join("")).alias("message"),
        pl.col("raw").str.join("\n").alias("raw"))
    one = one.with_columns(pl.col("piece").alias("message"))
    return pl.concat([one.select(agg.columns), agg]).sort("line_no"), carry, ends_long, skipped


def iter_chunks(path: str | Path, fmt: LogFormat, chunk_bytes: int | None = None,
                hasher=None, newline: str = "LF") -> Iterator[Chunk]:
    """Chunks of records of a file, in line order (see `assemble`; `newline` as in
    `iter_line_blocks`)."""
    pending: pl.Series | None = None
    pending_bad = False
    next_no = 1
    after_long = False
    nul_lines: list[pl.Series] = []   # line numbers with NUL bytes not yet assembled
    cut_lines: dict[int, int] = {}    # line number -> full length, of lines cut
    blocks = iter_line_blocks(path, chunk_bytes, hasher, newline)
    block = next(blocks, None)
    while block is not None:
        following = next(blocks, None)
        lines, bad = block.lines, block.bad_utf8
        offset = next_no + (pending.len() if pending is not None else 0)
        if block.nul is not None:
            nul_lines.append(block.nul.arg_true().cast(pl.Int64) + offset)
        if block.cut:
            cut_lines.update({offset + i: length for i, length in block.cut.items()})
        if pending is not None:
            lines = pl.concat([pending, lines], rechunk=False)
            bad = bad or pending_bad
        nul = pl.concat(nul_lines) if nul_lines else None
        chunk, carry = assemble(fmt, lines, next_no, bad, final=following is None,
                                nul_lines=nul, cut_lines=cut_lines or None,
                                after_long=after_long)
        after_long = chunk.ends_long
        yield chunk
        next_no += chunk.lines
        pending = lines.tail(carry) if carry else None
        pending_bad = bad
        if nul is not None:
            nul = nul.filter(nul >= next_no)
            nul_lines = [nul] if nul.len() else []
        cut_lines = {k: v for k, v in cut_lines.items() if k >= next_no}
        block = following
