"""A header format string (`--format '<Date> <Time> <Level> <Component>: <Content>'`):
fields in angle brackets, a space matches one or more spaces or tabs, any other text
between fields is a regular-expression fragment (the Loghub benchmark convention, so
`\\[<Time>\\]` and optional parts such as `(\\[<PID>\\])?` work). `<Content>` (or
`<Message>`) is the message."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import polars as pl

from rlforge.errors import UserError
from rlforge.ingest.logformats.base import LogFormat, finish_frame
from rlforge.ingest.logformats.levels import normalise_level
from rlforge.ingest.logformats.timestamps import TimeParser, share

_FIELD = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
_TS_FIELDS = ("timestamp", "datetime", "ts", "date", "day", "month", "year", "time")
_ROLE = {
    "level": ("level", "severity", "loglevel", "lvl", "priority"),
    "component": ("component", "logger", "module", "class", "category", "program", "tag",
                  "source"),
    "host": ("host", "hostname", "node", "server", "machine"),
    "message": ("content", "message", "msg"),
}

# A host name as loggers write it: letters, digits, dots, dashes, underscores, one letter at least.
_HOST_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_HAS_LETTER = r"[A-Za-z]"
# An address as a host field may write it: IPv4 or IPv6, after a `/` and before a `:port`.
_ADDRESS = r"^/?(?:\d{1,3}(?:\.\d{1,3}){3}|\[?[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*\]?)(?::\d{1,5})?$"
# A host as a host field names it: a host name, or a node's location (`R02-M1-N0-C:J12-U11`).
_NODE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
# A word with a lower-case letter before a capital (`SendWorker`, `QuorumPeer`): a class or
# thread name, which host names (case-blind, written in one case) are not.
_CAMEL = r"[a-z][A-Z]"
MIN_HOST_SHARE = 0.9  # of a named host field's values that must look like hosts

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
        self.literals = literals
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
        self._set_extra()

    def _set_extra(self) -> None:
        used = set(self.roles.values()) | {self.message_field}
        self.extra = [n for n in self.names if n not in used]

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
        self._check_host(sample)
        self._find_host(sample)

    def _check_host(self, sample: pl.Series) -> None:
        """Keep a field the format names as the host (`<Node>`, `<Server>`) only when it
        holds hosts: on the sample, at least `MIN_HOST_SHARE` of its values are host or
        node names (`_NODE_NAME`, no lower-case letter before a capital: `SendWorker` is a
        thread) or addresses (`/10.0.0.1:3888`). Else it stays an extra field, and no question
        asks which host did what (a thread name is no host)."""
        name = self.roles.get("host")
        if name is None or sample.len() == 0:
            return
        values = self._fields(sample)[name].drop_nulls()
        values = values.filter(values != "")
        if values.len() == 0:
            return
        hostlike = (values.str.contains(_NODE_NAME) & values.str.contains(_HAS_LETTER)
                    & ~values.str.contains(_CAMEL)) | values.str.contains(_ADDRESS)
        if share(hostlike) >= MIN_HOST_SHARE:
            return
        del self.roles["host"]
        self._set_extra()
        examples = ", ".join(repr(v) for v in values.filter(~hostlike)
                             .unique(maintain_order=True).head(3).to_list())
        self.host_note = (f"the field <{name}> is not stored as the host: "
                          f"{share(~hostlike):.0%} of its values are no host name or address "
                          f"(e.g. {examples})")

    def _find_host(self, sample: pl.Series) -> None:
        """Take as the host the field right after the time, when the format names no host
        and that field holds host names: Loghub formats write syslog's host under other
        names (`<Month> <Date> <Time> <User> <Component>...` on macOS, `<Level>` on Linux,
        `<User>` after the time fields on Thunderbird). The field must follow the time
        (and any other time-like fields) after blanks only, have no role but level, hold
        no level words and, on the sample, mostly single host-like words of which fewer
        than half are distinct."""
        if "host" in self.roles or not self.ts_chosen:
            return
        i = max(self.names.index(n) for n in self.ts_chosen) + 1
        while i < len(self.names) and self.names[i] in self.time_fields:
            i += 1
        if i >= len(self.names) or self.literals[i].strip(" ") or not self.literals[i]:
            return
        name = self.names[i]
        if name == self.message_field or name in (self.roles.get("component"),):
            return
        frame = self._fields(sample)
        values = frame[name].drop_nulls()
        values = values.filter(values != "")
        if values.len() == 0:
            return
        hostlike = values.str.contains(_HOST_NAME) & values.str.contains(_HAS_LETTER) \
            & normalise_level(values).is_null()
        if share(hostlike) < 0.9 or values.n_unique() > max(1, values.len() // 2):
            return
        if self.roles.get("level") == name:
            del self.roles["level"]
            self.level_warning = None
        self.roles["host"] = name
        self._set_extra()
        examples = ", ".join(repr(v) for v in values.unique(maintain_order=True).head(3).to_list())
        self.host_note = (f"the field <{name}> after the time holds host names (e.g. "
                          f"{examples}): stored as the host")
