"""`access`: nginx/Apache common and combined access logs (extra trailing fields
allowed)."""

from __future__ import annotations

import polars as pl

from rlforge.ingest.logformats.base import LogFormat, finish_frame

_ACCESS = (r'^(?P<client>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<ts_text>[^\]]+)\] '
           r'"(?P<request>(?:[^"\\]|\\.)*)" (?P<status>\d{3}|-) (?P<bytes>\d+|-)'
           r'(?: "(?P<referer>(?:[^"\\]|\\.)*)" "(?P<agent>(?:[^"\\]|\\.)*)")?(?P<extra>.*)$')


_HTTP_REASONS = {
    "200": "OK", "201": "Created", "204": "No Content", "206": "Partial Content",
    "301": "Moved Permanently", "302": "Found", "304": "Not Modified",
    "400": "Bad Request", "401": "Unauthorized", "403": "Forbidden", "404": "Not Found",
    "405": "Method Not Allowed", "408": "Request Timeout", "409": "Conflict",
    "413": "Payload Too Large", "429": "Too Many Requests", "499": "Client Closed Request",
    "500": "Internal Server Error", "502": "Bad Gateway", "503": "Service Unavailable",
    "504": "Gateway Timeout"}


class AccessFormat(LogFormat):
    """nginx/Apache access logs: the message is `<request line> <status> <reason>` (the
    reason phrase keeps the outcome in the template, where the status number alone would
    be a parameter)."""

    def __init__(self):
        super().__init__()
        self.name = "access"

    def continuation(self, lines: pl.Series) -> pl.Series:
        return pl.Series([False] * len(lines))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        f = lines.str.extract_groups(_ACCESS).struct.unnest()
        status = f["status"].cast(pl.Int64, strict=False)
        level = pl.select(pl.when(status >= 500).then(pl.lit("error"))
                          .when(status >= 400).then(pl.lit("warn"))
                          .when(status.is_not_null()).then(pl.lit("info"))).to_series()
        reason = f["status"].replace_strict(_HTTP_REASONS, default="", return_dtype=pl.String)
        f = f.with_columns(pl.concat_str([pl.col("request"), pl.col("status"), reason],
                                         separator=" ").str.strip_chars_end()
                           .alias("message"), level.alias("_level"),
                           pl.col("extra").str.strip_chars())
        f = f.with_columns(pl.when(pl.col("extra") == "").then(None).otherwise(pl.col("extra"))
                           .alias("extra"))
        return finish_frame(f, pl.col("ts_text").is_not_null(),
                       ["client", "ident", "user", "request", "status", "bytes", "referer",
                        "agent", "extra"], "_level")
