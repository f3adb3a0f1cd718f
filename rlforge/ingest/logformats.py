"""Log formats: detect one from a file's first lines, and parse chunks of lines into the
columns every log record has (time, host, component, level, message, other fields).

Every parser is vectorised (polars, Rust regex): a chunk of lines goes in as a Series and
comes out as a frame with one row per line and `ok` false where the line is not in the
format. Formats:

- a **header format string** (`--format '<Date> <Time> <Level> <Component>: <Content>'`):
  fields in angle brackets, a space matches one or more spaces or tabs, any other text
  between fields is a regular-expression fragment (the Loghub benchmark convention, so
  `\\[<Time>\\]` and optional parts such as `(\\[<PID>\\])?` work). `<Content>` (or
  `<Message>`) is the message;
- `syslog`: RFC 5424, and RFC 3164 with or without `<PRI>`, tag and pid;
- `access`: nginx/Apache common and combined access logs (extra trailing fields allowed);
- `jsonl`: JSON objects from structured loggers (common keys found by themselves, or a key
  mapping);
- `docker`: Docker json-file container logs (`log`, `stream`, `time`); `cri`: Kubernetes
  containerd/CRI-O logs (`<time> stdout F <message>`);
- `plain`: anything else, one record per line (a leading ISO time and a level word are
  picked up when present).

Named formats are `LogFormatInfo`s in the registry below; third parties add theirs (a
`LogFormat` subclass with its `_parse`) through the `rlforge.log_formats` entry-point
group, calling `register_log_format`.
"""

from __future__ import annotations

import array
import datetime as dt
import json
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Sequence

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from rlforge import plugins
from rlforge.errors import InputFileError, UserError
from rlforge.ingest.textfile import (NUL_REPLACEMENT, check_not_binary, is_gzip,
                                     line_endings, open_bytes, unreadable)

CHUNK_BYTES = 16 << 20      # text read per chunk
MAX_LINE_BYTES = 64 << 20   # a line longer than this is kept to here, whole, flagged truncated
SAMPLE_LINES = 1000         # lines looked at to detect the format and its time layout
MAX_RECORD_LINES = 100_000  # a multi-line record longer than this is cut
TIME_UNPARSED = "time_unparsed"  # flag: the record has a time field no layout parses
RECORD_COLUMNS = ["line_no", "n_lines", "ts", "ts_text", "host", "component", "level",
                  "message", "fields", "flag"]

# --- levels ------------------------------------------------------------------------------

LEVELS = ("trace", "debug", "info", "notice", "warn", "error", "fatal")
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
_SYSLOG_SEVERITY = ["fatal", "fatal", "fatal", "error", "warn", "notice", "info", "debug"]


def share(flags: pl.Series) -> float:
    """The mean of a boolean (or numeric) Series as a float: the share of true values
    (0.0 for an empty or all-null Series)."""
    mean = flags.mean()
    return float(mean) if isinstance(mean, (int, float)) else 0.0


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


# --- timestamps --------------------------------------------------------------------------

# (chrono format, needs a year prepended, carries a zone)
_TS_FORMATS: list[tuple[str, bool, bool]] = [
    ("%Y-%m-%dT%H:%M:%S%.f%#z", False, True),
    ("%Y-%m-%dT%H:%M:%S%.f", False, False),
    ("%Y-%m-%d %H:%M:%S%.f%#z", False, True),
    ("%Y-%m-%d %H:%M:%S%.f %#z", False, True),
    ("%Y-%m-%d %H:%M:%S%.f", False, False),
    ("%Y/%m/%d %H:%M:%S%.f", False, False),
    ("%Y-%m-%d-%H.%M.%S%.f", False, False),
    ("%y/%m/%d %H:%M:%S%.f", False, False),
    ("%y%m%d %H%M%S", False, False),
    ("%Y%m%d-%H:%M:%S%.f", False, False),
    ("%d/%b/%Y:%H:%M:%S %z", False, True),
    ("%a %b %d %H:%M:%S %Y", False, False),
    ("%a %b %d %H:%M:%S%.f %Y", False, False),
    ("%d.%m.%Y %H:%M:%S%.f", False, False),
    ("%m/%d/%Y %H:%M:%S%.f", False, False),
    ("%d/%m/%Y %H:%M:%S%.f", False, False),
    ("%b %d %H:%M:%S%.f", True, False),
    ("%b %d %Y %H:%M:%S%.f", False, False),
    ("%m-%d %H:%M:%S%.f", True, False),
    ("%m.%d %H:%M:%S%.f", True, False),
    ("%Y-%m-%d", False, False),
    ("%Y.%m.%d", False, False),
]
_MONTHS_LOCAL = {  # month names of common non-English locales -> English abbreviations
    "janv.": "Jan", "janv": "Jan", "févr.": "Feb", "févr": "Feb", "mars": "Mar", "avr.": "Apr",
    "avr": "Apr", "mai": "May", "juin": "Jun", "juil.": "Jul", "juil": "Jul", "août": "Aug",
    "sept.": "Sep", "sept": "Sep", "oct.": "Oct", "nov.": "Nov", "déc.": "Dec", "déc": "Dec",
    "mär": "Mar", "mrz": "Mar", "okt": "Oct", "dez": "Dec", "ene": "Jan", "abr": "Apr",
    "ago": "Aug", "dic": "Dec",
}


@dataclass
class TimeParser:
    """Picks, from a sample, the format(s) a file's time texts are in; then parses chunks.

    Times with a zone are stored in UTC; times without one are stored as written. Formats
    without a year (classic syslog, `[10.30 16:49:06]`) get `year` when it is given, else
    the year of `year_hint` (the file's modification time), one less when that would put
    the time more than a day after the hint. `year_source` says which one a file used.
    """

    year_hint: dt.datetime
    chosen: list[tuple[str, bool, bool]] | None = None
    epoch: bool = False
    retries: int = 3  # chunks that may still add a format
    year: int | None = None  # the user's --year for layouts without one

    @property
    def year_source(self) -> str | None:
        """How times without a year got one: `--year`, `mtime`, or None (they have one)."""
        if not any(needs for _, needs, _ in self.chosen or ()):
            return None
        return "--year" if self.year is not None else "mtime"

    @staticmethod
    def _clean(texts: pl.Series) -> pl.Series:
        out = texts.str.strip_chars().str.replace(r"(\d\d:\d\d:\d\d),(\d)", "${1}.${2}")
        # HH:MM:SS:mmm (milliseconds after a colon, e.g. `20171223-22:15:29:606`)
        out = out.str.replace(r"(\d:\d\d:\d\d):(\d{3})$", "${1}.${2}")
        out = out.str.replace_all(r"\s+", " ")
        if out.str.contains(r"(?i)^\p{L}{3,5}\.? ").any():
            for local, eng in _MONTHS_LOCAL.items():
                out = out.str.replace(r"(?i)^" + re.escape(local) + " ", eng + " ")
        return out

    def _one(self, texts: pl.Series, fmt: tuple[str, bool, bool]) -> pl.Series:
        pattern, needs_year, zoned = fmt
        if needs_year:
            year = self.year if self.year is not None else self.year_hint.year
            out = (f"{year} " + texts).str.strptime(pl.Datetime("us"), "%Y " + pattern,
                                                    strict=False)
            if self.year is not None:
                return out
            late = out > pl.lit(self.year_hint + dt.timedelta(days=1))
            fixed = (f"{year - 1} " + texts).str.strptime(pl.Datetime("us"), "%Y " + pattern,
                                                         strict=False)
            return pl.select(pl.when(late).then(fixed).otherwise(out)).to_series()
        if zoned:
            return texts.str.strptime(pl.Datetime("us", "UTC"), pattern, strict=False) \
                .dt.replace_time_zone(None)
        return texts.str.strptime(pl.Datetime("us"), pattern, strict=False)

    def _epoch(self, texts: pl.Series) -> pl.Series:
        num = texts.cast(pl.Float64, strict=False)
        mag = num.abs()
        us = pl.select(
            pl.when(mag < 1e11).then(num * 1e6)        # seconds
            .when(mag < 1e14).then(num * 1e3)          # milliseconds
            .when(mag < 1e17).then(num)                # microseconds
            .otherwise(num / 1e3)                      # nanoseconds
        ).to_series()
        ok = texts.str.contains(r"^\d{9,19}(\.\d+)?$")
        return pl.select(pl.when(ok).then(us.cast(pl.Int64, strict=False))).to_series() \
            .cast(pl.Datetime("us"))

    def choose(self, sample: pl.Series) -> None:
        sample = self._clean(sample.drop_nulls().unique().head(500))
        if sample.len() == 0:
            self.chosen = []
            return
        if share(sample.str.contains(r"^\d{9,19}(\.\d+)?$")) > 0.5:
            self.epoch = True
            self.chosen = []
            return
        self.chosen = self._rank(sample)[:2]

    def _rank(self, sample: pl.Series) -> list[tuple[str, bool, bool]]:
        """Formats that parse some of the (clean) sample, most hits first."""
        scores = []
        for i, fmt in enumerate(_TS_FORMATS):
            parsed = self._one(sample, fmt)
            hits = parsed.dt.year().is_between(1971, 2100).sum()  # "17/06/09" is not year 17
            if hits:
                scores.append((-hits, i, fmt))
        scores.sort()
        return [fmt for _, _, fmt in scores]

    def parse(self, texts: pl.Series) -> pl.Series:
        """Times of the texts; a chunk's repeated texts (same second) are parsed once."""
        if self.chosen is None:
            self.choose(texts)
        if texts.len() > 1000:
            distinct = texts.drop_nulls().unique()
            if distinct.len() < texts.len() // 2:
                times = self._parse(distinct)
                return pl.DataFrame({"t": texts}).join(
                    pl.DataFrame({"t": distinct, "ts": times}), on="t", how="left",
                    maintain_order="left")["ts"]
        return self._parse(texts)

    def _parse(self, texts: pl.Series) -> pl.Series:
        if self.epoch:
            return self._epoch(texts.str.strip_chars()).alias("ts")
        if not self.chosen:
            return pl.Series("ts", [None] * len(texts), dtype=pl.Datetime("us"))
        clean = self._clean(texts)
        out = self._one(clean, self.chosen[0])
        for fmt in self.chosen[1:]:
            if out.null_count() > texts.null_count():
                out = out.fill_null(self._one(clean, fmt))
        if out.null_count() > texts.null_count() and self.retries > 0:
            # A layout the sample did not show (a file that mixes two): learn it.
            self.retries -= 1
            missed = clean.filter(out.is_null() & texts.is_not_null()).unique().head(200)
            for fmt in self._rank(missed)[:2]:
                if fmt not in self.chosen:
                    self.chosen.append(fmt)
                    out = out.fill_null(self._one(clean, fmt))
        return out.alias("ts")


# --- the formats -------------------------------------------------------------------------

_FIELD = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
_TS_FIELDS = ("timestamp", "datetime", "ts", "date", "day", "month", "year", "time")
_ROLE = {
    "level": ("level", "severity", "loglevel", "lvl", "priority"),
    "component": ("component", "logger", "module", "class", "category", "program", "tag",
                  "source"),
    "host": ("host", "hostname", "node", "server", "machine"),
    "message": ("content", "message", "msg"),
}
_CONTINUATION = (r"^(?:\s|at\s|Caused by|Suppressed:|Traceback|During handling|The above "
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
        return lines.str.contains(_CONTINUATION)

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
    level = _sniff_missing(level, out["message"])
    names = [c for c in extra if c in out.columns]
    fields = (out.select(pl.struct(names).alias("fields"))["fields"] if names else
              pl.Series("fields", [None] * out.height, dtype=pl.String))
    return out.select("ok", "ts_text", "host", "component", "message").with_columns(
        level.alias("level"), fields.alias("fields"),
        pl.lit(False).alias("continues"))


def _sniff_missing(level: pl.Series, message: pl.Series) -> pl.Series:
    """Fill a missing level from a level word at the start of the message."""
    missing = level.is_null()
    if not missing.any():
        return level
    if missing.all():
        return sniff_level(message.fill_null(""))
    idx = missing.arg_true()
    return level.scatter(idx, sniff_level(message.gather(idx).fill_null("")))


_PLAIN_TEXT = re.compile(r"(?:[^\\.^$*+?()\[\]{}|]|\\[^A-Za-z0-9])*")


def _unescape(fragment: str) -> str | None:
    """A regex fragment as plain text, or None when it is more than plain text."""
    if not _PLAIN_TEXT.fullmatch(fragment):
        return None
    return re.sub(r"\\(.)", r"\1", fragment)


@dataclass
class _Token:
    fields: list[str]
    prefix: str | None = None   # plain text around a single field
    suffix: str | None = None
    pattern: str | None = None  # otherwise an anchored regex for the token


class _TokenPlan:
    """A header format cut at its spaces: the line is split at single spaces into as many
    parts, each part checked and cut by plain string operations (or, for a part with
    optional groups and the like, a short anchored regex). When every part fits, the
    fields equal what the whole-line pattern gives: each lazy field of the pattern ends
    at the first blank after it where the rest can match, and here the rest matches."""

    def __init__(self, tokens: list[_Token], content: str):
        self.tokens, self.content = tokens, content

    def apply(self, lines: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
        k = len(self.tokens)
        names = [f"_p{i}" for i in range(k)] + [self.content]
        parts = lines.str.splitn(" ", k + 1).struct.rename_fields(names).struct.unnest()
        good = ~lines.str.contains("\t", literal=True) & parts[self.content].is_not_null() \
            & ~parts[self.content].str.starts_with(" ")
        cols = [parts[self.content]]
        for i, tok in enumerate(self.tokens):
            part = parts[f"_p{i}"]
            if tok.pattern is not None:  # matched once per distinct part
                distinct = part.drop_nulls().unique()
                if not tok.fields:
                    ok = part.is_in(distinct.filter(distinct.str.contains(tok.pattern)).implode())
                    good = good & ok
                    continue
                got = distinct.str.extract_groups(tok.pattern).struct.unnest()
                got = got.with_columns(distinct.alias("_part"), got[got.columns[0]].is_not_null()
                                       .alias("_ok"))
                got = pl.DataFrame({"_part": part}).join(got, on="_part", how="left",
                                                          maintain_order="left")
                good = good & got["_ok"]
                cols.extend(got[f].alias(f) for f in tok.fields)
                continue
            pre, suf = tok.prefix or "", tok.suffix or ""
            good = good & (part.str.len_bytes() > len(pre.encode()) + len(suf.encode()))
            if pre:
                good = good & part.str.starts_with(pre)
            if suf:
                good = good & part.str.ends_with(suf)
            if tok.fields and (pre or suf):
                part = part.str.slice(len(pre), part.str.len_chars() - len(pre) - len(suf))
            if tok.fields:
                cols.append(part.alias(tok.fields[0]))
        good = good.fill_null(False)
        return pl.DataFrame(cols), good


def _token_plan(spec: str, content: str | None) -> _TokenPlan | None:
    """The token plan of a header format, or None when it has none (the message is not
    the last field, a space sits inside a regex construct, ...)."""
    if content is None or spec != spec.strip(" "):
        return None
    pieces = re.split(r" +", spec)
    if pieces[-1] != f"<{content}>":
        return None
    tokens = []
    for piece in pieces[:-1]:
        parts = _FIELD.split(piece)
        lits, fields = parts[0::2], parts[1::2]
        plain = [_unescape(lit) for lit in lits]
        if len(fields) == 1 and all(p is not None for p in plain):
            tokens.append(_Token(fields, prefix=plain[0], suffix=plain[1]))
            continue
        if not fields and plain[0] is not None:
            tokens.append(_Token([], prefix=plain[0], suffix=""))
            continue
        rx = "^" + "".join(lit + (f"(?P<{fields[i]}>.*?)" if i < len(fields) else "")
                           for i, lit in enumerate(lits)) + "$"
        try:
            re.compile(rx)
            pl.Series([""], dtype=pl.String).str.extract_groups(rx)
        except Exception:  # a regex construct spans a space: no plan
            return None
        tokens.append(_Token(fields, pattern=rx))
    return _TokenPlan(tokens, content)


class HeaderFormat(LogFormat):
    """A header format string such as `<Date> <Time> <Level> <Component>: <Content>`."""

    def __init__(self, spec: str):
        super().__init__()
        self.name = "header"
        self.spec = spec
        parts = _FIELD.split(spec)
        literals, names = parts[0::2], parts[1::2]
        if not names:
            raise UserError(f"format {spec!r} has no <Field>; write e.g. "
                            "'<Date> <Time> <Level> <Component>: <Content>'")
        if len(set(names)) != len(names):
            raise UserError(f"format {spec!r} names a field twice")
        lower = [n.lower() for n in names]
        msg = [n for n, lo in zip(names, lower) if lo in _ROLE["message"]]
        if not msg:
            raise UserError(f"format {spec!r} has no <Content> field (the message); "
                            "add one, e.g. '... <Component>: <Content>'")
        self.names = names
        self.message_field = msg[0]
        exact, fast = ["^"], ["^"]
        for i, lit in enumerate(literals):
            piece = re.sub(r" +", "[ \\t]+", lit)
            exact.append(piece)
            fast.append(piece)
            if i < len(names):
                name = names[i]
                nxt = literals[i + 1] if i + 1 < len(literals) else ""
                last = i == len(names) - 1 and not nxt.strip()
                exact.append(f"(?P<{name}>.*)" if last else f"(?P<{name}>.*?)")
                # The fast pattern matches a subset of lines, with the same fields: a field
                # followed by a space holds no blank and is not empty (the space before it
                # was taken greedily), which makes the pattern one-pass for Rust's regex.
                if last:
                    fast.append(f"(?P<{name}>[^ \\t].*)" if lit.endswith(" ") else
                                f"(?P<{name}>.*)")
                elif nxt.startswith(" "):
                    fast.append(f"(?P<{name}>[^ \\t]+)")
                else:
                    fast.append(f"(?P<{name}>[^ \\t]*?)")
        self.exact = "".join(exact) + "$"
        self.fast = "".join(fast) + "$"
        self.plan = _token_plan(spec, names[-1] if names[-1] == msg[0] else None)
        for rx in (self.exact, self.fast):
            try:
                pl.Series([""], dtype=pl.String).str.extract_groups(rx)
            except Exception as exc:
                raise UserError(f"format {spec!r} is not a valid pattern: "
                                f"{str(exc).strip().splitlines()[-1]}") from None
        roles: dict[str, str] = {}
        for role in ("level", "component", "host"):
            for n, lo in zip(names, lower):
                if lo in _ROLE[role] and role not in roles:
                    roles[role] = n
        self.roles = roles
        self.ts_fields = [n for n, lo in zip(names, lower) if lo in _TS_FIELDS]
        self.ts_chosen: list[str] | None = None
        self.time_fields = set(self.ts_fields)
        used = set(roles.values()) | {self.message_field}
        self.extra = [n for n in names if n not in used]

    def describe(self) -> str:
        return self.spec

    def raw_levels(self, sample: pl.Series) -> tuple[str, pl.Series] | None:
        name = self.roles.get("level")
        if name is None or sample.len() == 0:
            return None
        return f"<{name}>", self._fields(sample)[name]

    def _fields(self, lines: pl.Series) -> pl.DataFrame:
        """Every field of every line (null where the line is not in the format).

        Lines whose header is single-space separated go through the token plan (a split
        and per-token string checks, exact same fields as the pattern); the rest, and any
        line the plan cannot vouch for, through the pattern."""
        if self.plan is None:
            return self._match(lines)
        frame, good = self.plan.apply(lines)
        if good.all():
            return frame.select(self.names)
        bad = ~good
        rest = self._match(lines.filter(bad))
        idx = pl.int_range(0, len(lines), eager=True).filter(bad)
        frame = frame.select(self.names).with_columns(
            [pl.when(bad).then(None).otherwise(pl.col(n)).alias(n) for n in self.names])
        return frame.with_row_index("_i").update(
            rest.with_columns(idx.alias("_i")), on="_i").drop("_i")

    def _match(self, lines: pl.Series) -> pl.DataFrame:
        frame = lines.str.extract_groups(self.fast).struct.unnest()
        miss = frame[self.message_field].is_null()
        if miss.any():
            exact = lines.filter(miss).str.extract_groups(self.exact).struct.unnest()
            idx = pl.int_range(0, len(lines), eager=True).filter(miss)
            frame = frame.with_row_index("_i").update(
                exact.with_columns(idx.alias("_i")), on="_i").drop("_i")
        return frame

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        frame = self._fields(lines)
        frame = frame.with_columns(pl.col(self.message_field).alias("message"))
        for role, name in self.roles.items():
            frame = frame.with_columns(pl.col(name).alias(role if role != "level" else "_level"))
        # ts_text is the text the time is parsed from: the chosen time field(s), joined
        # in the order of the format; other time fields stay among the fields.
        chosen = self.ts_chosen if self.ts_chosen is not None else self.ts_fields
        if len(chosen) == 1:
            frame = frame.with_columns(pl.col(chosen[0]).alias("ts_text"))
        elif chosen:
            frame = frame.with_columns(pl.concat_str([pl.col(c) for c in chosen], separator=" ",
                                                     ignore_nulls=True).alias("ts_text"))
        extra = [n for n in self.extra if n not in chosen]
        return finish_frame(frame, pl.col("message").is_not_null(), extra,
                       "_level" if "level" in self.roles else None)

    def prepare(self, sample: pl.Series, year_hint: dt.datetime) -> None:
        """Choose the time fields: a single full timestamp field if one parses, else all
        time-like fields together in the order of the format."""
        single = [[n] for n in self.ts_fields if n.lower() in ("timestamp", "datetime", "ts")]
        candidates = single + ([self.ts_fields] if self.ts_fields else [])
        best: tuple[float, list[str], TimeParser] | None = None
        self.check_levels(sample)
        for cand in candidates:
            if best is not None and best[0] >= 0.8:
                break  # no candidate can beat it by 0.2
            self.ts_chosen = cand
            frame = self._parse(sample).filter(pl.col("ok"))
            times = TimeParser(year_hint, year=self.year)
            times.choose(frame["ts_text"])
            rate = share(times.parse(frame["ts_text"]).is_not_null())
            if best is None or rate > best[0] + 0.2:
                best = (rate, cand, times)
        if best is None:
            self.ts_chosen = []
            self.times = TimeParser(year_hint, chosen=[], year=self.year)
        else:
            self.ts_chosen, self.times = best[1], best[2]


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


# JSON keys tried, in order, for each role (a dotted name reaches into nested objects).
JSON_KEYS = {
    "ts_text": ("@timestamp", "timestamp", "time", "ts", "@t", "Time", "datetime", "date", "t",
                "Timestamp", "eventTime"),
    "level": ("level", "severity", "@l", "lvl", "loglevel", "log.level", "Level.Name", "Level",
              "levelname", "level_name", "Severity", "severity_text"),
    "message": ("msg", "message", "@m", "Message", "text", "log", "event", "MessageTemplate",
                "@mt", "body"),
    "component": ("logger", "loggerName", "logger_name", "component", "module", "caller",
                  "context", "Function", "source", "category", "name", "log.logger"),
    "host": ("host", "hostname", "MachineName", "host.name", "Host", "node", "server"),
}
_DOCKER_KEYS = {"log", "stream", "time"}


def _json_path(key: str) -> str:
    return "$" + "".join(f"[{json.dumps(part)}]" for part in key.split("."))


def _has_key(obj: dict, key: str) -> bool:
    node = obj
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return not isinstance(node, (dict, list)) or key in ("message", "msg")


class JsonFormat(LogFormat):
    """One JSON object per line; `keys` maps roles (ts, level, message, component, host)
    to keys, the rest is found from a sample of lines."""

    def __init__(self, keys: dict[str, str] | None = None, name: str = "jsonl"):
        super().__init__()
        self.name = name
        self.user_keys = {("ts_text" if k in ("ts", "time", "timestamp") else k): v
                          for k, v in (keys or {}).items()}
        unknown = set(self.user_keys) - set(JSON_KEYS)
        if unknown:
            raise UserError(f"unknown log key role(s) {', '.join(sorted(unknown))}; valid: "
                            "ts, level, message, component, host")
        self.keys: dict[str, str] | None = None

    def choose_keys(self, sample: Sequence[str]) -> None:
        objs = []
        for line in sample:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                objs.append(obj)
        keys = {}
        for role, candidates in JSON_KEYS.items():
            if role in self.user_keys:
                keys[role] = self.user_keys[role]
                continue
            best = max(candidates, key=lambda k: (sum(_has_key(o, k) for o in objs),
                                                  -candidates.index(k)), default=None)
            if best and any(_has_key(o, best) for o in objs):
                keys[role] = best
        self.keys = keys

    def continuation(self, lines: pl.Series) -> pl.Series:
        return lines.str.contains(_CONTINUATION) & ~lines.str.starts_with("{")

    def raw_levels(self, sample: pl.Series) -> tuple[str, pl.Series] | None:
        if self.keys is None:
            self.choose_keys(sample.head(200).to_list())
        key = (self.keys or {}).get("level")
        if key is None or sample.len() == 0:
            return None
        return f"key {key!r}", sample.str.json_path_match(_json_path(key))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        if self.keys is None:
            self.choose_keys(lines.head(200).to_list())
        assert self.keys is not None
        is_obj = lines.str.contains(r"^\s*\{.*\}\s*$")
        valid = is_obj & lines.str.json_path_match("$").is_not_null()
        cols = {"fields": pl.select(pl.when(valid).then(lines)).to_series()}
        for role in ("ts_text", "level", "message", "component", "host"):
            key = self.keys.get(role)
            cols[role] = (lines.str.json_path_match(_json_path(key)) if key else
                          pl.Series([None] * len(lines), dtype=pl.String))
        frame = pl.DataFrame(cols)
        level = _sniff_missing(normalise_level(frame["level"]), frame["message"])
        return frame.select(
            pl.lit(valid).alias("ok"), "ts_text", "host", "component",
            pl.col("message").fill_null(pl.lit(lines)),  # no message key: the whole object
        ).with_columns(level.alias("level"), frame["fields"], pl.lit(False).alias("continues"))


_ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"


class DockerFormat(JsonFormat):
    """Docker json-file logs; a `log` without a trailing newline continues in the next
    line (Docker splits long lines)."""

    def __init__(self):
        super().__init__({"ts": "time", "message": "log"}, name="docker")

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        self.keys = {"ts_text": "time", "message": "log"}
        out = super()._parse(lines)
        msg = out["message"]
        stream = lines.str.json_path_match("$.stream")
        continues = out["ok"] & ~msg.str.ends_with("\n") & (msg != "")
        clean = msg.str.strip_suffix("\n").str.strip_suffix("\r")
        fields = pl.select(pl.when(stream.is_not_null()).then(
            pl.struct(stream.alias("stream")).struct.json_encode())).to_series()
        return out.with_columns(clean.alias("message"), continues.alias("continues"),
                                fields.alias("fields"),
                                sniff_level(clean.str.replace_all(_ANSI, "")).alias("level"))


_CRI = r"^(?P<ts_text>\d{4}-\d\d-\d\dT\S+) (?P<stream>stdout|stderr) (?P<tag>[PF])(?: (?P<message>.*))?$"


class CriFormat(LogFormat):
    """Kubernetes CRI (containerd, CRI-O) container logs; `P` lines continue."""

    def __init__(self):
        super().__init__()
        self.name = "cri"

    def continuation(self, lines: pl.Series) -> pl.Series:
        return pl.Series([False] * len(lines))

    def _parse(self, lines: pl.Series) -> pl.DataFrame:
        f = lines.str.extract_groups(_CRI).struct.unnest()
        f = f.with_columns(pl.col("message").fill_null(""))
        out = finish_frame(f, pl.col("ts_text").is_not_null(), ["stream"], None)
        return out.with_columns((f["tag"] == "P").fill_null(False).alias("continues"))


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
        trace = ~stamped & sample.str.contains(_CONTINUATION)
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


# --- detection -------------------------------------------------------------------------

# --- the registry ----------------------------------------------------------------------

ENTRY_POINT_GROUP = "rlforge.log_formats"


@dataclass(frozen=True)
class LogFormatInfo:
    """A named log format: `factory(keys)` makes its parser (`keys`: the user's field
    mapping, for formats that take one). A format with a `detect_rank` is tried by
    `detect`, lowest rank first: it wins when it parses more of the sample lines than
    those tried before it (and at least half)."""

    name: str
    version: int
    description: str
    factory: Callable[[dict[str, str] | None], LogFormat]
    aliases: tuple[str, ...] = ()
    detect_rank: int | None = None  # None: only used when named


_REGISTRY: dict[str, LogFormatInfo] = {}


def register_log_format(info: LogFormatInfo) -> LogFormatInfo:
    """Add a log format (a higher version of a name replaces a lower one)."""
    return plugins.add_versioned(_REGISTRY, info, "log format")


for _info in (
    LogFormatInfo("jsonl", 1, "JSON objects from structured loggers", JsonFormat, ("json",)),
    LogFormatInfo("syslog", 1, "RFC 5424 and RFC 3164 syslog", lambda keys: SyslogFormat(),
                  detect_rank=2),
    LogFormatInfo("access", 1, "nginx/Apache common and combined access logs",
                  lambda keys: AccessFormat(), ("nginx", "apache", "combined"), detect_rank=3),
    LogFormatInfo("docker", 1, "Docker json-file container logs", lambda keys: DockerFormat()),
    LogFormatInfo("cri", 1, "Kubernetes containerd/CRI-O container logs",
                  lambda keys: CriFormat(), detect_rank=1),
    LogFormatInfo("plain", 1, "anything else, one record per line", lambda keys: PlainFormat()),
):
    register_log_format(_info)

NAMED_FORMATS = tuple(_REGISTRY)  # the built-in names


def log_formats() -> dict[str, LogFormatInfo]:
    """Every log format by name (built-ins and plug-ins)."""
    plugins.load(ENTRY_POINT_GROUP)
    return dict(_REGISTRY)


def make_format(spec: str, keys: dict[str, str] | None = None) -> LogFormat:
    """A format from its name (or an alias) or a header format string."""
    for info in log_formats().values():
        if spec == info.name or spec in info.aliases:
            return info.factory(keys)
    if "<" in spec:
        return HeaderFormat(spec)
    raise UserError(f"unknown log format {spec!r}; valid: auto, {', '.join(log_formats())}, "
                    "or a header format string such as '<Date> <Time> <Level> <Component>: "
                    "<Content>'")


def detect(sample: Sequence[str], keys: dict[str, str] | None = None) -> LogFormat:
    """The format most of the sample lines parse in (`plain` when none fits half)."""
    lines = pl.Series([s for s in sample if s.strip()], dtype=pl.String)
    if lines.len() == 0:
        return PlainFormat()
    objs = []
    for s in lines.head(50).to_list():
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            objs.append(obj)
    if objs and len(objs) >= 0.5 * min(lines.len(), 50):
        if sum(_DOCKER_KEYS <= set(o) for o in objs) >= 0.8 * len(objs):
            return DockerFormat()
        return JsonFormat(keys)
    best: LogFormat = PlainFormat()
    best_score = 0.5
    ranked = sorted((i for i in log_formats().values() if i.detect_rank is not None),
                    key=lambda i: i.detect_rank or 0)
    for info in ranked:
        fmt = info.factory(keys)
        score = share(fmt._parse(lines)["ok"])
        if score > best_score:
            best, best_score = fmt, score
    return best


# --- reading: lines, records, chunks -------------------------------------------------

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


@dataclass
class Masks:
    """The masking regexes applied to messages before mining (from flags or config)."""

    patterns: list[str] = field(default_factory=list)

    def __post_init__(self):
        for p in self.patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise UserError(f"mask {p!r} is not a valid regular expression: {exc}") from None
