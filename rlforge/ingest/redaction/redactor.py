"""The `Redactor`: what ingest calls to replace personal data and secrets in text by
keyed pseudonyms, over one text (`redact_text`, `find`, `findings`) or a polars column
(`redact_series`, the same result per element); `logs=True` reads ops logs."""

from __future__ import annotations

import collections
import functools
import hmac
import re
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # polars is imported where it is used: a commit ingest loads it while git runs
    import polars as pl

    from rlforge.ingest.redaction.recognizers import Recognizer

from rlforge.errors import UnknownName
from rlforge.ingest.redaction import addresses, airline, network, numbers, people, secrets
from rlforge.ingest.redaction.echo import echo_forms, echo_keeps, echo_rx, phone_forms, unify
from rlforge.ingest.redaction.rules import LATE_RULES, PLACEHOLDER, RULES, Detector, Rule, Span

KINDS: tuple[str, ...] = (
    "PRIVATE_KEY", "JWT", "AWS_ACCESS_KEY", "AWS_SECRET_KEY", "GCP_API_KEY", "GITHUB_TOKEN",
    "GITLAB_TOKEN", "SLACK_TOKEN", "STRIPE_KEY", "OPENAI_KEY", "API_KEY", "PASSWORD",
    "SECRET", "EMAIL", "PHONE", "CARD", "IBAN", "IPV4", "IPV6", "TOKEN", "PERSON", "ADDRESS",
    "SSN", "NATIONAL_ID", "PASSPORT", "DOB", "MAC", "ACCOUNT",
)
# Kinds found in runs of capitalised words (the second stage, after every other kind).
RUN_KINDS = frozenset({"PERSON", "ADDRESS"})

_SENT = "\x00"
_CACHE_LIMIT = 500_000
_MAX_PASSES = 4
_PLACEHOLDER_RX = re.compile(PLACEHOLDER)


def _h_user(tok: str, kind: str) -> list[Span]:
    """A user pattern's match, less any placeholder inside it (never redacted again)."""
    spans, pos = [], 0
    for m in [*_PLACEHOLDER_RX.finditer(tok), None]:
        end = m.start() if m else len(tok)
        if tok[pos:end].strip():
            spans.append((pos, end, kind, tok[pos:end]))
        pos = m.end() if m else pos
    return spans


def _h_placeholder(tok: str) -> list[Span]:
    return []


_TRIMMING = {"iban", "card", "phone", "phone_ctx", "id_ctx", "card_ctx", "dob_ctx", "mac"}
# Rules that take a cue word with their value: when the value is rejected, what they
# matched is scanned again without them, so that a cue never hides another finding.
_CONTEXTUAL = {"pin_prose", "code_prose", "pw_bare", "credentials", "street_lower", "email_obf", "pw_prose", "pw_change", "key_prose", "id_ctx", "dob_ctx",
               "card_ctx"}


class _Stage:
    """One regex pass over the text: its rules in priority order, the same expression for
    Python's `re` and for Rust's `regex` (polars), and a cache of judged candidates."""

    def __init__(self, rules: list[Rule]):
        # A literal "\n", "\r" or "\t" (JSON-escaped text) also ends a word before a token.
        self.source = "|".join(f"(?P<{r.name}>" + (f"(?P<{r.name}_p>\\\\[nrt]|{r.prefix})" if r.prefix else "")
                               + f"(?:{r.token}))" for r in rules)
        self.rust = re.sub(r"\(\?P<[a-z_0-9]+>", "(?:", self.source)
        self.names = [r.name for r in rules]
        self.prefixed = {r.name: r.prefix is not None for r in rules}
        self.cache: dict[str, tuple[str, tuple[str, ...], bool, tuple]] = {}

    @functools.cached_property
    def py(self) -> re.Pattern:
        """The stage's expression for Python's `re`, compiled on first use: compiling it
        costs more than a log file's whole redaction, and a column goes through Rust."""
        return re.compile(self.source)

    def rules_of(self, cands: list[str]) -> list[tuple[str, int] | None]:
        """For each candidate (a whole match of `rust`), the rule that matched it and the
        length of the character before its token that the rule consumed, read by Rust's
        `regex` (the same expression with its groups named); None where that match does
        not span the whole candidate (`_spans` then reads it with `re`, and says why)."""
        import polars as pl

        groups = pl.Series(cands, dtype=pl.String).str.extract_groups(self.source).struct
        which = pl.lit(None, dtype=pl.String)
        off = pl.lit(0, dtype=pl.UInt32)
        size = pl.lit(None, dtype=pl.UInt32)
        for name in reversed(self.names):  # the first rule that took part wins
            took = pl.col(name).is_not_null()
            which = pl.when(took).then(pl.lit(name)).otherwise(which)
            size = pl.when(took).then(pl.col(name).str.len_chars()).otherwise(size)
            if self.prefixed[name]:
                off = pl.when(took).then(pl.col(f"{name}_p").str.len_chars()).otherwise(off)
        frame = groups.unnest().select(which.alias("rule"), off.alias("off"), size.alias("size"))
        names, offsets, lengths = frame["rule"].to_list(), frame["off"].to_list(), frame["size"].to_list()
        return [(name, o) if name is not None and n == len(c) else None
                for c, name, o, n in zip(cands, names, offsets, lengths)]


def _normalise(kind: str, value: str) -> str:
    """What the keyed hash of a pseudonym is taken of: names and e-mails case-folded."""
    if kind in ("PERSON", "EMAIL"):
        return " ".join(value.split()).casefold()
    return value


class Redactor:
    """Finds personal data and secrets in text and replaces them with keyed pseudonyms.

    Two regex passes: the first finds secrets, numbers and contact details; the second
    finds person names and addresses in runs of capitalised words (see
    `rlforge.ingest.redaction.people`) in what the first left.

    Args:
        key: the per-database HMAC key (the store keeps it, so re-ingest maps identically).
        kinds: the kinds to redact (see `KINDS`); None means all.
        patterns: extra user patterns, kind name -> regular expression (written so that
            Python's `re` and Rust's `regex` read it alike); each match becomes a
            placeholder of that kind. They take priority over the built-in rules.
        regions: phone regions tried, in order, for numbers written without ``+country``.
        recognizer: a model-based name recognizer (`recognizers`) run over what the rules
            left, when PERSON is on; its names become PERSON placeholders.

    Attributes:
        counts: redactions per kind, accumulated across calls (occurrences, not values).
    """

    def __init__(self, key: bytes, kinds: Iterable[str] | None = None,
                 patterns: dict[str, str] | None = None, regions: Iterable[str] | None = None,
                 logs: bool = False, recognizer: Recognizer | None = None):
        """`logs`: the text is ops logs, where a run of 10-11 digits with no separator and
        no label is a counter, a sequence number or a Unix time, not a phone number (the
        log mode of the detectors: `numbers.detectors`, `secrets.detectors`)."""
        self._key = bytes(key)
        self.kinds = frozenset(KINDS if kinds is None else kinds)
        for k in self.kinds - set(KINDS):
            raise UnknownName("redaction kind", k, list(KINDS))
        self._regions = tuple(r.upper() for r in regions) if regions else numbers.DEFAULT_REGIONS
        self._handlers: dict[str, Detector] = {
            "placeholder": _h_placeholder, **secrets.detectors(logs),
            **numbers.detectors(self._regions, logs), **network.DETECTORS,
            "street_lower": addresses.lower_case_street, "airline": airline.judge}
        extra = []
        for i, (kind, pattern) in enumerate((patterns or {}).items()):
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", kind):
                raise ValueError(f"pattern kind must be upper-case letters, digits and _, got {kind!r}")
            re.compile(pattern)
            # any character may stand before it: it competes at the same place as the
            # built-in rules (which take the character before their token) and wins
            extra.append(Rule(f"user{i}", (kind,), r"[\s\S]", f"(?:{pattern})"))
            self._handlers[f"user{i}"] = functools.partial(_h_user, kind=kind)
        self.kinds |= {r.kinds[0] for r in extra}
        self.counts: collections.Counter[str] = collections.Counter()
        rules = [r for r in RULES[:1] + tuple(extra) + RULES[1:]
                 if not r.kinds or set(r.kinds) & self.kinds]
        self._stages = [_Stage(rules)] if len(rules) > 1 else []
        late = [r for r in LATE_RULES if not r.kinds or set(r.kinds) & self.kinds]
        if len(late) > 1:
            self._stages.append(_Stage(late))
        self._rules = rules
        if self.kinds & RUN_KINDS:
            people_on, places_on = "PERSON" in self.kinds, "ADDRESS" in self.kinds
            self._handlers["run"] = functools.partial(people.judge, people=people_on,
                                                      places=places_on, regions=self._regions)
            second = [RULES[0], Rule("run", (*RUN_KINDS, "PHONE"), people.RUN_PREFIX, people.RUN)]
            if people_on:  # a name in any letter case after a lead: "hi maria,"
                self._handlers["cased"] = functools.partial(people.judge_cased, regions=self._regions)
                second.append(Rule("cased", ("PERSON",), people.RUN_PREFIX, people.CASED_RUN))
            self._stages.append(_Stage(second))
        self._recognizer = recognizer if "PERSON" in self.kinds else None
        self._active = bool(self._stages) or self._recognizer is not None
        self._pseudonyms: dict[tuple[str, str], str] = {}  # authors recur: one HMAC each

    @classmethod
    def configured(cls, key: bytes, off: Iterable[str] = (), patterns: dict[str, str] | None = None,
                   regions: Iterable[str] | None = None, logs: bool = False,
                   recognizer: Recognizer | None = None) -> "Redactor":
        """A redactor from the ``[redaction]`` settings of rlforge.toml: every kind but
        those `off`, the user's extra `patterns`, the phone `regions`, the model-based
        name `recognizer` (or none)."""
        off = {k.upper() for k in off}
        for k in off - set(KINDS):
            raise UnknownName("redaction kind", k, list(KINDS))
        return cls(key, kinds=set(KINDS) - off, patterns=patterns, regions=regions, logs=logs,
                   recognizer=recognizer)

    def _model_spans(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        """Per text, the recognizer's names outside placeholders: (start, end, placeholder),
        in order and not overlapping."""
        assert self._recognizer is not None
        out = []
        for text, spans in zip(texts, self._recognizer.find(texts)):
            taken = [(m.start(), m.end()) for m in _PLACEHOLDER_RX.finditer(text)]
            kept: list[tuple[int, int, str]] = []
            for a, b in sorted(spans):
                while a < b and text[a].isspace():
                    a += 1
                while b > a and text[b - 1].isspace():
                    b -= 1
                if a >= b or any(a < e and b > s for s, e in taken) or (kept and a < kept[-1][1]):
                    continue
                kept.append((a, b, self._placeholder("PERSON", _normalise("PERSON", text[a:b]))))
            out.append(kept)
        return out

    def _recognise(self, texts: list[str]) -> list[str]:
        """`texts` with the recognizer's names replaced by PERSON placeholders."""
        out = []
        for text, spans in zip(texts, self._model_spans(texts)):
            parts, pos = [], 0
            for a, b, ph in spans:
                parts += [text[pos:a], ph]
                pos = b
                self.counts["PERSON"] += 1
            out.append("".join(parts) + text[pos:])
        return out

    def _placeholder(self, kind: str, value: str) -> str:
        # surrogateescape: a value read from git may hold bytes that are not UTF-8
        mac = hmac.digest(self._key, f"{kind}\x00{value}".encode("utf-8", "surrogateescape"),
                          "sha256")
        return f"<{kind}_{mac[:3].hex()}>"

    def pseudonym(self, kind: str, value: str) -> str:
        """The placeholder ``<KIND_xxxxxx>`` for a value, e.g. ``pseudonym("PERSON", name)``.

        Counts one redaction of that kind. The same (kind, value) always gives the same
        placeholder under the same key; a person's name or an e-mail is case-folded first,
        as in text, so an author and the same name in a message share one placeholder.
        """
        hit = self._pseudonyms.get((kind, value))
        if hit is None:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", kind):
                raise ValueError(f"kind must be upper-case letters, digits and _, got {kind!r}")
            if len(self._pseudonyms) >= _CACHE_LIMIT:
                self._pseudonyms.clear()
            hit = self._pseudonyms[(kind, value)] = self._placeholder(kind, _normalise(kind, value))
        self.counts[kind] += 1
        return hit

    @functools.cached_property
    def _base(self) -> _Stage:
        """The rules less those that take a cue word: what a rejected cue's match is read
        by again (built on first need)."""
        return _Stage([r for r in self._rules if r.name not in _CONTEXTUAL])

    def _spans(self, cand: str, stage: _Stage,
               rule: tuple[str, int] | None = None) -> tuple[list[Span], bool]:
        """Redacted spans of one regex match (positions within `cand`), and whether the
        text must be scanned again (a validator kept a tail of the match unredacted).
        `rule`: the rule that matched and the length of its consumed prefix, when known
        (`_Stage.rules_of`); else `cand` is matched again with `re`."""
        if rule is None:
            m = stage.py.match(cand)
            if m is None or m.end() != len(cand) or m.lastgroup is None:  # both engines agree
                raise AssertionError(f"candidate not re-matched: {cand!r}")
            name = m.lastgroup
            off = m.end(name + "_p") if stage.prefixed[name] else 0
        else:
            name, off = rule
        spans = [(s + off, e + off, k, _normalise(k, v)) for s, e, k, v in self._handlers[name](cand[off:])
                 if k in self.kinds]
        again = name in _TRIMMING and bool(spans) and spans[-1][1] < len(cand)
        if not spans and name in _CONTEXTUAL:
            # the cue's value was rejected: what it matched is read by the other rules
            for x in self._base.py.finditer(cand):
                sub, more = self._spans(x.group(), self._base)
                spans += [(s + x.start(), e + x.start(), k, v) for s, e, k, v in sub]
                again |= more
            return spans, again
        if spans and not again and spans[0][0] > off:
            # A kept head (``DB_PASSWORD=``, ``https://user:``) is scanned again if it
            # holds a finding of its own, so that a second pass would change nothing.
            head = cand[:spans[0][0]]
            again = any(self._spans(x.group(), stage)[0] for x in stage.py.finditer(head))
        return spans, again

    def _apply(self, cand: str, stage: _Stage,
               rule: tuple[str, int] | None = None) -> tuple[str, tuple[str, ...], bool, tuple]:
        """A candidate's replacement, the kinds redacted, whether to pass again, and the
        (written value, placeholder, kind) triples to redact wherever else they occur."""
        hit = stage.cache.get(cand)
        if hit is None:
            out, pos, kinds, echo = [], 0, [], []
            spans, again = self._spans(cand, stage, rule)
            for s, e, kind, value in spans:
                ph = self._placeholder(kind, value)
                out += [cand[pos:s], ph]
                kinds.append(kind)
                echo += [(raw, ph, kind) for raw in echo_forms(kind, cand[s:e])]
                if kind == "PHONE":
                    echo += [(digits, ph, role) for role, digits in phone_forms(cand[s:e], value)]
                pos = e
            hit = ("".join(out) + cand[pos:], tuple(kinds), again, tuple(echo))
            if len(stage.cache) >= _CACHE_LIMIT:
                stage.cache.clear()
            stage.cache[cand] = hit
        return hit

    def _echo(self, text: str, echo: Iterable[tuple[str, str, str]]) -> str:
        """`text` with the other occurrences of values redacted elsewhere in it replaced
        by the same placeholder ("card 4111 1111 1111 1111 ... (4111111111111111)")."""
        for old, new in unify(echo).items():
            text = text.replace(old, new)
        echo = [e for e in echo if e[0] in text]  # mostly none: the value was its only copy
        if not echo:
            return text
        rx, where = echo_rx(echo)
        if rx is None:
            return text
        assert rx is not None

        def sub(m: re.Match) -> str:
            ph, kind, fragile = where[m.group()]
            if echo_keeps(text, m.start(), m.end(), fragile):
                return m.group()
            self.counts[kind] += 1
            return ph
        return rx.sub(sub, text)

    def redact_text(self, text: str | None) -> str | None:
        """One text with every finding replaced by its placeholder (None stays None)."""
        if text is None or not self._active:
            return text
        echo: set[tuple[str, str, str]] = set()
        for _ in range(_MAX_PASSES):
            again = False
            for stage in self._stages:
                def sub(m: re.Match, stage: _Stage = stage) -> str:
                    nonlocal again
                    out, kinds, more, found = self._apply(m.group(), stage)
                    self.counts.update(kinds)
                    again |= more
                    echo.update(found)
                    return out
                text = stage.py.sub(sub, "\n" + text)[1:]
            if not again:
                break
        text = self._echo(text, echo) if echo else text
        return self._recognise([text])[0] if self._recognizer is not None else text

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Where `redact_text` redacts: (start, end, kind) in `text`, in order, over every
        stage and pass (a span that swallowed an earlier placeholder covers its text)."""
        return [(s, e, kind) for s, e, kind, _ in self.findings(text)]

    def findings(self, text: str) -> list[tuple[int, int, str, str]]:
        """As `find`, with each span's placeholder: (start, end, kind, placeholder)."""
        found: list[tuple[int, int, str, str]] = []
        if not self._active:
            return found
        origin = list(range(len(text) + 1))  # current position -> position in `text`
        echo: set[tuple[str, str, str]] = set()
        for _ in range(_MAX_PASSES):
            again = False
            for stage in self._stages:
                parts, where, pos = [], [], 0
                for m in stage.py.finditer("\n" + text):
                    spans, more = self._spans(m.group(), stage)
                    again |= more
                    echo.update(self._apply(m.group(), stage)[3])
                    for s, e, kind, value in spans:
                        s, e = m.start() + s - 1, m.start() + e - 1
                        ph = self._placeholder(kind, value)
                        found.append((origin[s], origin[e - 1] + 1, kind, ph))
                        parts.append(text[pos:s])
                        where += origin[pos:s]
                        parts.append(ph)
                        where += [origin[s]] * (len(ph) - 1) + [origin[e - 1]]
                        pos = e
                parts.append(text[pos:])
                where += origin[pos:]
                text, origin = "".join(parts), where
            if not again:
                break
        rx, echo_at = echo_rx(echo)
        if rx is not None:
            for m in rx.finditer(text):
                ph, kind, fragile = echo_at[m.group()]
                if echo_keeps(text, m.start(), m.end(), fragile):
                    continue
                found.append((origin[m.start()], origin[m.end() - 1] + 1, kind, ph))
        if self._recognizer is not None:
            for a, b, ph in self._model_spans([text])[0]:
                found.append((origin[a], origin[b - 1] + 1, "PERSON", ph))
        renamed = unify(echo)
        return sorted((s, e, kind, renamed.get(ph, ph)) for s, e, kind, ph in found)

    def redact_series(self, s: pl.Series) -> pl.Series:
        """Vectorised `redact_text` over a string column (same result per element).

        Per stage, one regex pass wraps every candidate in NUL sentinels and splits the
        text on them, so odd list items are exactly the regex matches; only the unique
        ones are judged in Python, and a hash replace maps them back. Rows holding NUL go
        through `redact_text`; rows where a validator kept a tail of a match are passed
        again, as `redact_text` does.
        """
        import polars as pl

        if s.dtype != pl.String:
            s = s.cast(pl.String)
        if not self._active or s.len() == 0:
            return s
        echo: dict[int, set] = collections.defaultdict(set)  # row -> values to echo
        out, again = self._all_stages(s, echo, None)
        for _ in range(_MAX_PASSES - 1):
            if again is None:
                break
            idx = again.arg_true()
            redone, again_sub = self._all_stages(out.gather(idx), echo, idx.to_list())
            out = out.scatter(idx, redone)
            again = None if again_sub is None else pl.Series(idx).filter(again_sub)
            again = None if again is None else pl.Series([False] * out.len()).scatter(again, True)
        if echo:  # only rows where a redacted value is still written somewhere
            rows = sorted(echo)
            texts = out.gather(rows).to_list()
            again_rows = [(i, t) for i, t in zip(rows, texts)
                          if any(e[0] in t for e in echo[i]) or unify(echo[i])]
            if again_rows:
                out = out.scatter([i for i, _ in again_rows],
                                  [self._echo(t, echo[i]) for i, t in again_rows])
        nul = s.str.contains(_SENT, literal=True)
        if self._recognizer is not None:  # rows with NUL get it from redact_text below
            todo = (s.is_not_null() & ~nul.fill_null(False)).arg_true()
            if todo.len():
                out = out.scatter(todo, self._recognise(out.gather(todo).to_list()))
        if nul.any():
            idx = nul.arg_true()
            out = out.scatter(idx, [self.redact_text(t) for t in s.gather(idx)])
        return out

    def _all_stages(self, s: pl.Series, echo: dict[int, set],
                    rows: list[int] | None) -> tuple[pl.Series, pl.Series | None]:
        """Every stage once over `s` (rows `rows` of the whole series, or all of it);
        the values to echo are added to `echo` by row of the whole series."""
        again = None
        for stage in self._stages:
            s, more = self._series_pass(s, stage, echo, rows)
            if more is not None:
                again = more if again is None else again | more
        return s, again

    def _series_pass(self, s: pl.Series, stage: _Stage, echo: dict[int, set],
                     rows: list[int] | None) -> tuple[pl.Series, pl.Series | None]:
        """One pass: the redacted series, and the rows to pass again (None if none)."""
        import polars as pl

        frame = pl.DataFrame({"t": s}).lazy().select(
            pl.concat_str([pl.lit("\n"), pl.col("t")])
            .str.replace_all(stage.rust, f"{_SENT}${{0}}{_SENT}").str.split(_SENT).alias("w"),
            pl.col("t").str.contains(_SENT, literal=True).alias("nul"),
        ).collect()
        found = frame.lazy().filter(~pl.col("nul")).select(
            pl.col("w").list.gather_every(2, 1).explode().drop_nulls().value_counts(sort=False)
        ).collect()
        keys, values, again, echoing = [], [], [], {}
        counted = list(found.to_series().struct.unnest().iter_rows())
        todo = [cand for cand, _ in counted if cand not in stage.cache]
        if todo:  # the rule of each new candidate, read by Rust: `re` is not compiled
            for cand, rule in zip(todo, stage.rules_of(todo)):
                self._apply(cand, stage, rule)
        for cand, n in counted:
            replaced, kinds, more, forms = self._apply(cand, stage)
            for kind in kinds:
                self.counts[kind] += n
            if kinds:
                keys.append(cand)
                values.append(replaced)
            if more:
                again.append(cand)
            if forms:
                echoing[cand] = forms
        if not keys:
            return s, None
        if echoing:  # the rows holding a value to echo, and which values
            hits = frame.lazy().with_row_index("row").filter(~pl.col("nul")).select(
                "row", pl.col("w").list.gather_every(2, 1)).explode("w").filter(
                pl.col("w").is_in(list(echoing))).collect()
            for i, cand in hits.iter_rows():
                echo[rows[i] if rows is not None else i].update(echoing[cand])
        # Even items (text between matches) never equal a match: the regex would have
        # matched there. So a plain hash replace touches only the matches.
        w = pl.col("w")
        out = frame.lazy().select(
            w.list.eval(pl.element().replace(keys, values)).list.join("").str.slice(1).alias("o"),
            (w.list.eval(pl.element().is_in(again)).list.any() & ~pl.col("nul")).alias("a")
            if again else pl.lit(False).alias("a"),
        ).collect()
        flags = out["a"]
        return out["o"].alias(s.name), (flags if again and flags.any() else None)
