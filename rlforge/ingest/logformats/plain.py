"""`plain`: anything else, one record per line (a leading ISO time and a level word are
picked up when present)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from rlforge.ingest.logformats.base import CONTINUATION, LogFormat, finish_frame
from rlforge.ingest.logformats.timestamps import share

_PLAIN = (r"^(?P<ts_text>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?"
          r"[ \t]*(?P<message>.*)$")
# After a leading time: LEVEL [thread] logger: message (log4j, logback, Python logging).
_PLAIN_LAYOUT = (r"^(?P<_level>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)"
                 r"[ \t]+(?:\[(?P<thread>[^\]]*)\][ \t]+)?(?:(?P<component>[\w$.-]+):[ \t]+)?"
                 r"(?P<message>.*)$")


class PlainFormat(LogFormat):
    """Any text. When most lines start with an ISO time, a record is a timestamped line
    and the lines after it that have none (stack traces, wrapped text); the common
    `LEVEL [thread] logger: message` layout after the time is split up. Otherwise every
    line is a record, with a level word picked up when one starts it."""

    def __init__(self):
        super().__init__()
        self.name = "plain"
        self.timestamped = False

    def prepare(self, sample: pl.Series, year_hint: dt.datetime) -> None:
        stamped = sample.str.extract(_PLAIN, 1).is_not_null()
        trace = ~stamped & sample.str.contains(CONTINUATION)
        self.timestamped = bool(sample.len() and stamped[0]
                                and share(stamped | trace) >= 0.8)
        super().prepare(sample, year_hint)

    def continuation(self, lines: pl.Series) -> pl.Series:
        return pl.Series([self.timestamped] * len(lines))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        f = lines.str.extract_groups(_PLAIN).struct.unnest()
        layout = f["message"].str.extract_groups(_PLAIN_LAYOUT).struct.unnest()
        has = layout["message"].is_not_null() & f["ts_text"].is_not_null()
        f = f.with_columns(
            pl.when(has).then(layout["message"]).otherwise(f["message"]).alias("message"),
            pl.when(has).then(layout["component"]).alias("component"),
            pl.when(has).then(layout["_level"]).alias("_level"),
            pl.when(has).then(layout["thread"]).alias("thread"))
        ok = f["ts_text"].is_not_null() if self.timestamped else pl.lit(True)
        return finish_frame(f, ok, ["thread"], "_level")
