"""`syslog`: RFC 5424, and RFC 3164 with or without `<PRI>`, tag and pid."""

from __future__ import annotations

import polars as pl

from rlforge.ingest.logformats.base import LogFormat, finish_frame

_SYSLOG_SEVERITY = ["fatal", "fatal", "fatal", "error", "warn", "notice", "info", "debug"]

_RFC5424 = (r"^<(?P<pri>\d{1,3})>(?P<version>\d{1,2}) (?P<ts_text>\S+) (?P<host>\S+) "
            r"(?P<component>\S+) (?P<procid>\S+) (?P<msgid>\S+) "
            r"(?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<message>.*))?$")
_RFC3164 = (r"^(?:<(?P<pri>\d{1,3})>)?(?P<ts_text>\p{L}{3,5}\.? +\d{1,2} \d{1,2}:\d\d:\d\d"
            r"(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
            r"\s+(?P<host>\S+)\s+(?:(?P<component>[^\s:\[\]]+)(?:\[(?P<procid>[^\]\s]*)\])?: ?)?"
            r"(?P<message>.*)$")


class SyslogFormat(LogFormat):
    def __init__(self):
        super().__init__()
        self.name = "syslog"

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        a = lines.str.extract_groups(_RFC5424).struct.unnest()
        b = lines.str.extract_groups(_RFC3164).struct.unnest()
        is_a = a["ts_text"].is_not_null()
        cols = {}
        for c in ("pri", "ts_text", "host", "component", "procid", "message"):
            cols[c] = pl.select(pl.when(is_a).then(a[c]).otherwise(b[c])).to_series().alias(c)
        frame = pl.DataFrame(cols).with_columns(
            pl.when(is_a).then(a["message"].fill_null("")).otherwise(b["message"]).alias("message"),
            a["version"], a["msgid"], a["sd"])
        pri = frame["pri"].cast(pl.Int64, strict=False)
        sev = (pri % 8).replace_strict(dict(enumerate(_SYSLOG_SEVERITY)), default=None,
                                       return_dtype=pl.String)
        frame = frame.with_columns(sev.alias("_level"), (pri // 8).alias("facility"))
        ok = is_a | b["ts_text"].is_not_null()
        return finish_frame(frame, ok, ["facility", "procid", "version", "msgid", "sd"], "_level")
