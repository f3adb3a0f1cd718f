"""Log times: which layout(s) a file's time texts are written in, chosen from a sample,
and every chunk's times parsed with them (epoch numbers, zones, years left out)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import polars as pl

def share(flags: pl.Series) -> float:
    """The mean of a boolean (or numeric) Series as a float: the share of true values
    (0.0 for an empty or all-null Series)."""
    mean = flags.mean()
    return float(mean) if isinstance(mean, (int, float)) else 0.0


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
    without a year (classic syslog, `[10.30 16:49:06]`) get `year` when it is given; else,
    in a file that also writes times with a year (a syslog file mixing RFC 3164 and RFC
    5424 lines), the year (that of its dated times' latest, one before or one after) that
    puts each time nearest the span of the dated ones, so one file's records agree; else
    the year of `year_hint` (the file's modification time), one less when that would put
    the time more than a day after the hint. `year_source` says which one a file used.
    """

    year_hint: dt.datetime
    chosen: list[tuple[str, bool, bool]] | None = None
    epoch: bool = False
    retries: int = 3  # chunks that may still add a format
    year: int | None = None  # the user's --year for layouts without one
    dated: tuple[dt.datetime, dt.datetime] | None = None  # span of the sample's dated times

    @property
    def year_source(self) -> str | None:
        """How times without a year got one: `--year`, `mtime`, or None (they have one)."""
        if not any(needs for _, needs, _ in self.chosen or ()):
            return None
        if self.year is not None:
            return "--year"
        return "dated records" if self.dated is not None else "mtime"

    @staticmethod
    def _clean(texts: pl.Series) -> pl.Series:
        # A decimal fraction after a comma is one after a dot (`22:15:29,6` is 0.6 s).
        out = texts.str.strip_chars().str.replace(r"(\d:\d{1,2}:\d{1,2}),(\d)", "${1}.${2}")
        # H:M:S:m, milliseconds after a colon, written without leading zeros like the other
        # fields (`20171223-22:15:35:98` comes before `...:35:104`): `:98` is 0.098 s.
        hms = r"(\d:\d{1,2}:\d{1,2}):"
        out = out.str.replace(hms + r"(\d{3})$", "${1}.${2}") \
            .str.replace(hms + r"(\d{2})$", "${1}.0${2}") \
            .str.replace(hms + r"(\d)$", "${1}.00${2}")
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
            if self.dated is not None:
                return self._nearest_dated(texts, pattern)
            late = out > pl.lit(self.year_hint + dt.timedelta(days=1))
            fixed = (f"{year - 1} " + texts).str.strptime(pl.Datetime("us"), "%Y " + pattern,
                                                         strict=False)
            return pl.select(pl.when(late).then(fixed).otherwise(out)).to_series()
        if zoned:
            return texts.str.strptime(pl.Datetime("us", "UTC"), pattern, strict=False) \
                .dt.replace_time_zone(None)
        return texts.str.strptime(pl.Datetime("us"), pattern, strict=False)

    def _nearest_dated(self, texts: pl.Series, pattern: str) -> pl.Series:
        """Year-less times in the year (of the dated times' latest, one before or after)
        that puts each nearest the span of the file's dated times."""
        assert self.dated is not None
        lo, hi = (pl.lit(t) for t in self.dated)
        frame = pl.DataFrame({
            f"y{k}": (f"{self.dated[1].year + k} " + texts).str.strptime(
                pl.Datetime("us"), "%Y " + pattern, strict=False) for k in (-1, 0, 1)})
        off = {c: pl.max_horizontal(lo - pl.col(c), pl.col(c) - hi, pl.duration(seconds=0))
               for c in frame.columns}
        best = pl.when(off["y0"] <= pl.min_horizontal(off["y-1"], off["y1"])).then(pl.col("y0")) \
            .when(off["y-1"] <= off["y1"]).then(pl.col("y-1")).otherwise(pl.col("y1"))
        return frame.select(best.alias("ts"))["ts"]

    def _learn_dated(self, sample: pl.Series) -> None:
        """The span of the sample's times written with a year, when a chosen format lacks
        one (a file mixing both)."""
        if self.year is not None or not any(needs for _, needs, _ in self.chosen or ()):
            return
        times = [self._one(sample, fmt) for fmt in self.chosen or () if not fmt[1]]
        dated = pl.concat(times).drop_nulls() if times else pl.Series([], dtype=pl.Datetime("us"))
        dated = dated.filter(dated.dt.year().is_between(1971, 2100))
        if dated.len():
            self.dated = (dated.min(), dated.max())  # type: ignore[assignment]

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
        self._learn_dated(sample)

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
                    if self.dated is None:
                        self._learn_dated(missed)
                    out = out.fill_null(self._one(clean, fmt))
        return out.alias("ts")
