"""`plain`: anything else, one record per line (a leading time and a level word are picked
up when present).

The header forms loggers write by default are read generically, with no format string:
a leading ISO-like time, bare or in square brackets (`2024-02-03 04:05:06,789`,
`[2024-02-03T04:05:06.789Z]`); after it a level word, bare or bracketed (`ERROR`,
`[error]`), a `[thread]` before or after it, and the logger either before the message
(`logger: ` or, for a dotted name, `logger - `) or after it in parentheses, as log4j's
`%m (%c)` writes it (Kafka, ZooKeeper). The logger is stored as the component."""

from __future__ import annotations

import datetime as dt

import polars as pl

from rlforge.ingest.logformats.base import CONTINUATION, LogFormat, finish_frame
from rlforge.ingest.logformats.timestamps import share

_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_PLAIN = (rf"^(?:\[(?P<ts_bracketed>{_ISO})\]|(?P<ts_text>{_ISO}))?"
          r"[ \t]*(?P<message>.*)$")
_LEVELS = r"TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|SEVERE|FATAL"
_THREAD = r"\[(?P<{name}>[^\]]*)\][ \t]+"
# After a leading time: [thread] LEVEL [thread] logger: message (log4j, logback, Python
# logging), the level bare or in brackets, upper or lower case.
_PLAIN_LAYOUT = (rf"^(?:{_THREAD.format(name='thread_before')})?"
                 rf"(?:(?P<_level>(?i:{_LEVELS}))|\[(?P<_level_bracketed>(?i:{_LEVELS}))\])"
                 rf"[ \t]+(?:{_THREAD.format(name='thread')})?"
                 r"(?:(?P<component>[\w$.-]+):[ \t]+|(?P<dotted>[\w$-]+(?:\.[\w$-]+)+)[ \t]+-[ \t]+)?"
                 r"(?P<message>.*)$")
# A logger named at the end of the message, in parentheses: `... (kafka.server.KafkaServer)`.
_TRAILING_LOGGER = r"^(?P<message>.*?)[ \t]+\((?P<logger>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)\)$"


class PlainFormat(LogFormat):
    """Any text. When most lines start with a time (bare or bracketed), a record is a
    timestamped line and the lines after it that have none (stack traces, wrapped text);
    the common layouts after the time are split up (see the module docstring). Otherwise
    every line is a record, with a level word picked up when one starts it."""

    def __init__(self):
        super().__init__()
        self.name = "plain"
        self.timestamped = False

    def prepare(self, sample: pl.Series, year_hint: dt.datetime) -> None:
        heads = sample.str.extract_groups(_PLAIN).struct.unnest()
        stamped = heads["ts_text"].is_not_null() | heads["ts_bracketed"].is_not_null()
        trace = ~stamped & sample.str.contains(CONTINUATION)
        self.timestamped = bool(sample.len() and stamped[0]
                                and share(stamped | trace) >= 0.8)
        super().prepare(sample, year_hint)

    def continuation(self, lines: pl.Series) -> pl.Series:
        return pl.Series([self.timestamped] * len(lines))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        f = lines.str.extract_groups(_PLAIN).struct.unnest()
        f = f.with_columns(pl.coalesce("ts_text", "ts_bracketed").alias("ts_text"))
        layout = f["message"].str.extract_groups(_PLAIN_LAYOUT).struct.unnest()
        has = layout["message"].is_not_null() & f["ts_text"].is_not_null()
        trailing = layout["message"].str.extract_groups(_TRAILING_LOGGER).struct.unnest()
        component = pl.coalesce(layout["component"], layout["dotted"])
        by_tail = has & component.is_null() & trailing["logger"].is_not_null()
        message = pl.when(by_tail).then(trailing["message"]).when(has) \
            .then(layout["message"]).otherwise(f["message"])
        f = f.with_columns(
            message.alias("message"),
            pl.when(by_tail).then(trailing["logger"]).when(has).then(component)
            .alias("component"),
            pl.when(has).then(pl.coalesce(layout["_level"], layout["_level_bracketed"]))
            .alias("_level"),
            pl.when(has).then(pl.coalesce(layout["thread"], layout["thread_before"]))
            .alias("thread"))
        ok = f["ts_text"].is_not_null() if self.timestamped else pl.lit(True)
        return finish_frame(f, ok, ["thread"], "_level")
