"""Log levels: the seven levels every record's level is mapped onto, from the words and
numbers loggers write (syslog severities, bunyan/pino numbers, log4j names), and a level
word at the start of a message for formats without a level field."""

from __future__ import annotations

import polars as pl

LEVELS = ("trace", "debug", "info", "notice", "warn", "error", "fatal")
#: The levels of a record that failed, and of one that warned of failure or failed.
ERROR_LEVELS = ("error", "fatal")
FAILURE_LEVELS = ("warn", "error", "fatal")
_LEVEL_WORDS = {
    "trace": "trace", "trc": "trace", "vrb": "trace", "verbose": "trace", "v": "trace",
    "finest": "trace", "finer": "trace",
    "debug": "debug", "dbg": "debug", "d": "debug", "fine": "debug", "config": "debug",
    "info": "info", "inf": "info", "information": "info", "informational": "info", "i": "info",
    "success": "info",
    "notice": "notice", "note": "notice", "n": "notice",
    "warn": "warn", "warning": "warn", "wrn": "warn", "w": "warn",
    "error": "error", "err": "error", "e": "error", "severe": "error", "failure": "error",
    "fatal": "fatal", "ftl": "fatal", "f": "fatal", "critical": "fatal", "crit": "fatal",
    "alert": "fatal", "emerg": "fatal", "emergency": "fatal", "panic": "fatal", "c": "fatal",
}


def normalise_level(raw: pl.Series) -> pl.Series:
    """Map level names and numbers (syslog, bunyan/pino, log4j) onto LEVELS; else null."""
    raw = raw.cast(pl.String)
    distinct = raw.drop_nulls().unique()
    if distinct.len() < raw.len() // 4:  # few distinct values: map those, then look up
        mapped = _normalise_level(distinct)
        return raw.replace_strict(distinct, mapped, default=None,
                                  return_dtype=pl.String).alias("level")
    return _normalise_level(raw)


def _normalise_level(raw: pl.Series) -> pl.Series:
    text = raw.str.strip_chars(" []<>:").str.to_lowercase()
    named = text.replace_strict(_LEVEL_WORDS, default=None, return_dtype=pl.String)
    num = text.cast(pl.Int64, strict=False)
    numeric = (
        pl.select(
            pl.when(num.is_null()).then(None)
            .when(num >= 60).then(pl.lit("fatal"))
            .when(num >= 50).then(pl.lit("error"))
            .when(num >= 40).then(pl.lit("warn"))
            .when(num >= 30).then(pl.lit("info"))
            .when(num >= 20).then(pl.lit("debug"))
            .when(num >= 10).then(pl.lit("trace"))
            .otherwise(None)
        ).to_series()
    )
    return named.fill_null(numeric).alias("level")


_LEVEL_SNIFF = (r"(?i)^[\[(]?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|CRIT"
                r"|FATAL|SEVERE|PANIC)[\])]?(?:\s|:|$)")


def sniff_level(message: pl.Series) -> pl.Series:
    """A level word at the start of a message (formats without a level field)."""
    word = message.str.slice(0, 12)  # the word is at the start: look at distinct starts
    distinct = word.drop_nulls().unique()
    if distinct.len() < word.len() // 4:
        levels = normalise_level(distinct.str.extract(_LEVEL_SNIFF, 1))
        return word.replace_strict(distinct, levels, default=None,
                                   return_dtype=pl.String).alias("level")
    return normalise_level(word.str.extract(_LEVEL_SNIFF, 1))



def sniff_missing(level: pl.Series, message: pl.Series) -> pl.Series:
    """Fill a missing level from a level word at the start of the message."""
    missing = level.is_null()
    if not missing.any():
        return level
    if missing.all():
        return sniff_level(message.fill_null(""))
    idx = missing.arg_true()
    return level.scatter(idx, sniff_level(message.gather(idx).fill_null("")))
