"""What every log format is: a `LogFormat` turns a chunk of lines into one row per line
with the record columns (`ok` false where a line is not in the format), and
`finish_frame` is the common tail of every parser, built-in or plug-in."""

from __future__ import annotations

import datetime as dt
from typing import Sequence

import polars as pl

from rlforge.ingest.logformats.levels import normalise_level, sniff_missing
from rlforge.ingest.logformats.timestamps import TimeParser

CONTINUATION = (r"^(?:\s|at\s|Caused by|Suppressed:|Traceback|During handling|The above "
                 r"exception|\.\.\. ?\d+ (?:more|common)|[A-Za-z_$][\w$]*(?:\.[\w$]+)+"
                 r"(?:Exception|Error|Throwable)\b|[A-Z]\w*(?:Error|Exception):|goroutine \d|"
                 r"[}\]])")


class LogFormat:
    """A parser of one format.

    `prepare` looks at a sample of the file once (which keys, which time fields and time
    format); `parse` then turns a chunk of lines into one row per line with the columns
    ok, ts, ts_text, host, component, level, message, fields, continues.
    """

    name = "?"

    def __init__(self) -> None:
        self.times: TimeParser | None = None
        self.time_fields: set[str] = set()  # other fields that only hold times (not redacted)
        self.year: int | None = None  # the year of times written without one (else mtime's)
        self.level_warning: str | None = None  # set by prepare: a level field without levels
        self.host_note: str | None = None  # set by prepare: a field recognised as the host

    def prepare(self, sample: pl.Series, year_hint: dt.datetime) -> None:
        self.times = TimeParser(year_hint, year=self.year)
        frame = self._parse(sample)
        self.times.choose(frame.filter(pl.col("ok"))["ts_text"])
        self.check_levels(sample)

    def raw_levels(self, sample: pl.Series) -> tuple[str, pl.Series] | None:
        """The name of the format's level field and its raw values on a sample (None: the
        format has no level field, or its levels are not words, as syslog's PRI)."""
        return None

    def check_levels(self, sample: pl.Series) -> None:
        """Warn (`level_warning`) when most values of the level field are not level words:
        the field holds something else (a host, a thread), so levels come only from a level
        word at the start of the message."""
        found = self.raw_levels(sample)
        if found is None:
            return
        name, raw = found
        raw = raw.drop_nulls()
        raw = raw.filter(raw.str.strip_chars() != "")
        if raw.len() == 0:
            return
        bad = raw.filter(normalise_level(raw).is_null())
        if bad.len() > raw.len() / 2:
            examples = ", ".join(repr(v) for v in bad.unique(maintain_order=True).head(3).to_list())
            self.level_warning = (f"the level field {name} holds words that are not levels "
                                  f"in {bad.len():,} of {raw.len():,} sampled records (e.g. "
                                  f"{examples}): levels come only from a level word at the "
                                  "start of a message")

    def parse(self, lines: pl.Series) -> pl.DataFrame:
        if self.times is None:
            self.prepare(lines.head(1000), dt.datetime.now())
        assert self.times is not None
        frame = self._parse(lines)
        return frame.with_columns(self.times.parse(frame["ts_text"]).alias("ts"))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    def continuation(self, lines: pl.Series) -> pl.Series:
        """Lines that may continue the record before them (stack traces and the like)."""
        return lines.str.contains(CONTINUATION)

    def describe(self) -> str:
        return self.name


def finish_frame(frame: pl.DataFrame, ok: pl.Expr | pl.Series, extra: Sequence[str],
                 level_raw: str | None) -> pl.DataFrame:
    """The common tail of every parser (plug-ins' too): from a frame of extracted columns
    (ts_text, host, component, message where the format has them), `ok` (the lines in the
    format), the `extra` columns kept as the record's fields and the column holding the
    raw level, the standard columns with the level normalised."""
    out = frame.with_columns(ok.alias("ok") if isinstance(ok, pl.Expr) else ok.alias("ok"))
    for col in ("ts_text", "host", "component", "message"):
        if col not in out.columns:
            out = out.with_columns(pl.lit(None, dtype=pl.String).alias(col))
    level = normalise_level(out[level_raw]) if level_raw else pl.Series(
        "level", [None] * out.height, dtype=pl.String)
    level = sniff_missing(level, out["message"])
    names = [c for c in extra if c in out.columns]
    fields = (out.select(pl.struct(names).alias("fields"))["fields"] if names else
              pl.Series("fields", [None] * out.height, dtype=pl.String))
    return out.select("ok", "ts_text", "host", "component", "message").with_columns(
        level.alias("level"), fields.alias("fields"),
        pl.lit(False).alias("continues"))
