"""Log template mining: which part of each log message is the constant text of its logging
statement, and which parts are parameters.

Why a miner of our own: Drain (and drain3) reads messages one by one and clusters them in
arrival order, so a template depends on the order lines came in, and it costs Python time
per line. Ingest sees lines in large chunks and most lines repeat a message already seen,
so rlforge mines *distinct normalised messages in batches*, with statistics over the whole
batch, and maps every line to its template by a join.

The method, per batch:

1. **Normalise** (vectorised, polars): redaction placeholders (`<EMAIL_3f9a1c>`) and the
   user's masks become `<*>`; then built-in rules
   turn what is a parameter in any system into `<*>`: words that start with a digit or hold
   two or more digits (numbers, hex ids, `blk_123`), booleans and null, file paths, URLs,
   host names, MAC/IPv6-like groups, month and weekday names. Runs of parameters inside a
   token collapse (`10.0.0.1:80` -> `<*>`), a token that is only parameters and punctuation
   becomes `<*>`, and consecutive `<*>` tokens collapse into one (lists of values).
2. **Group by token count**, then inside each group by the *most common frequency*: every
   token position of a message has a frequency (how many distinct messages of that length
   carry the same token there); the constant words of one logging statement share the
   frequency of that statement, so the frequency shared by most positions of a message
   picks out its constant skeleton, and messages with the same skeleton start together.
3. **Split** each start group column by column: a column with one value is constant; the
   first column is always split on (log statements start with a constant word); otherwise
   the column with the fewest values is split on if it has fewer than `SPLIT_MAX_VALUES`
   values, and is a parameter otherwise (so are all remaining columns), unless its values
   are `key=value` fields of two or more keys: then it is split on the key. A template
   always keeps at least one constant token.
4. **Subsume**: a template that another, more general template of the same length matches
   (equal token or `<*>` at every position) joins the general one; where the general
   one's `<*>` was the same masked token in all its messages (a path, a number), it only
   takes in a token that holds parameters too, not a plain word. Templates that differ
   only in how many `<*>` stand in a row are one (normalisation joins adjacent
   parameters, so a parameter beside a list vanishes into it on some calls).

Across batches and ingests the miner keeps its templates (stored in `log_templates`): a
message that an existing template matches gets that template's id (ids are hashes of the
template text, so they are stable); the rest are mined together with the existing
templates of their lengths, and when a template generalises (a constant becomes `<*>`) the
old id is recorded as merged into the new one.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import polars as pl

from rlforge.errors import UserError
from rlforge.ingest.redaction.rules import PLACEHOLDER

WILDCARD = "<*>"


@dataclass(frozen=True)
class Settings:
    """The miner's choices, one set for every system (none is tuned per system).

    `benchmarks/loghub_accuracy.py --leave-out` picks among values of these on one half
    of its systems and reports on the other half (`--ablate`: each one changed alone).
    The defaults lean to fewer splits: what fails on unseen systems is over-splitting
    (a parameter kept as a constant), so a larger `split_max_values`, which gains 0.003
    mean GA on the 11 Loghub samples, is not the default."""

    split_max_values: int = 4  # a column with this many distinct values (or more) is a parameter
    # a column that is the only one varying in its group is a parameter when the constant
    # tokens left are at least this share of the message (above 1: never)
    alone_min_constants: float = 2.0
    first_column_splits: bool = True  # the first column is always a constant
    variable_keys: bool = True  # key=value: a key seen with several values takes parameters
    empty_brackets: bool = True  # (), [], "" ... are an empty parameter value
    # a column whose words are one name with a short varying part (CPU0 CPU1, LNKD LNKE) is
    # a parameter
    indexed_names: bool = True


SETTINGS = Settings()


@contextlib.contextmanager
def using(**changes):
    """Mine with some settings changed (benchmarks and tests)."""
    global SETTINGS
    before = SETTINGS
    SETTINGS = replace(before, **changes)
    try:
        yield SETTINGS
    finally:
        SETTINGS = before


MAX_TOKENS = 128  # tokens past this are folded into one trailing <*>
MEMO_LIMIT = 1_000_000  # normalised texts remembered with their template id

_W = re.escape(WILDCARD)
# Word pieces (ASCII letters, digits, underscore) that are parameters in any system.
_VAR_PIECE = (r"(?-u:\b)(?:[0-9][A-Za-z0-9_]*|[A-Za-z_]*[0-9][A-Za-z_]*[0-9][A-Za-z0-9_]*"
              r"|(?i:true|false|null))(?-u:\b)")
# Whole tokens that are parameters: paths, URLs, host names, MAC/IPv6-like hex groups,
# month and weekday names.
_OPEN = r"""^[(\[{'"<]*"""
_VAR_TOKEN = "|".join([
    _OPEN + r"(?:/[^/\s]|\./|\.\./|~/|[A-Za-z]:\\|[A-Za-z][A-Za-z0-9+.-]*://)",
    _OPEN + r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\.(?i:com|net|org|edu|gov|mil|int|io|info|biz"
            r"|local|localdomain|internal|lan|corp|home|arpa|cloud)(?:[^A-Za-z0-9.-]|$)",
    _OPEN + r"(?i:[0-9a-f]{1,4}[:.-]){3,}[0-9a-f]{1,4}",
    r"^(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april"
    r"|june|july|august|september|october|november|december|mon|tue|wed|thu|fri|sat|sun"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)[.,;:]?$",
])
# A whole token that is an empty value: brackets or quotes with nothing between them.
_EMPTY = r"""^[(\[{'"]*(?:\(\)|\[\]|\{\}|""|'')[)\]}'",;:.]*$"""
_SIGN = r"(^|[^A-Za-z0-9])[-+]" + _W
_RUN = _W + r"(?:[^A-Za-z0-9\s]*" + _W + ")+"
_ONLY_VARS = r"^(?:" + _W + r"|[^A-Za-z0-9])*$"


def template_id(tokens: Sequence[str]) -> str:
    """Stable id of a template: a hash of its text."""
    return hashlib.sha1(" ".join(tokens).encode("utf-8")).hexdigest()[:16]


def template_text(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


# --- normalisation (vectorised) --------------------------------------------------------

def _rust_regex_ok(pattern: str) -> bool:
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
        return True
    except Exception:  # polars raises ComputeError for syntax its regex engine lacks
        return False


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


# A pattern's last item when it matches whitespace (`\s`, `\s+`, ` *?`, `\s{1,3}`).
_TRAILING_SPACE = re.compile(r"(?:\\s|\\t| )(?:[+*?]|\{\d*,?\d*\})?\??$")


def _top_level_or(pattern: str) -> bool:
    """Whether a regex has a `|` outside any group or class (`a|b\\s`)."""
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


def _mask_sub(mask: str) -> tuple[str, str, str]:
    """(pattern, polars replacement, Python replacement) of a mask. A mask that ends by
    matching whitespace (`0x.*?\\s`) keeps that whitespace: it masks a value, it does not
    join the value's token to the next one."""
    # a mask of the value after a key (`=\d+`) leaves the key=value shape in place
    sub = "=" + WILDCARD if re.match(r"\\?=", mask) else WILDCARD
    m = _TRAILING_SPACE.search(mask)
    if m is None or m.start() == 0 or _top_level_or(mask):
        return mask, sub, sub
    slashes = len(mask[:m.start()]) - len(mask[:m.start()].rstrip("\\"))
    if slashes % 2:  # `\\s`: a backslash, then an s
        return mask, sub, sub
    group = re.compile(mask).groups + 1
    return (f"(?:{mask[:m.start()]})({mask[m.start():]})", f"{sub}${{{group}}}",
            f"{sub}\\g<{group}>")


def apply_masks(contents: pl.Series, masks: Sequence[str]) -> pl.Series:
    """Replace every match of each mask regex with `<*>` (in order)."""
    out = contents
    for mask in masks:
        pattern, sub, py_sub = _mask_sub(mask)
        if _rust_regex_ok(pattern):
            out = out.str.replace_all(pattern, sub, literal=False)
        else:  # look-around or back-references: Python's engine, per distinct value
            rx = re.compile(pattern)
            out = out.map_elements(functools.partial(rx.sub, py_sub), return_dtype=pl.String)
    return out


_MONTH = (r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march"
          r"|april|june|july|august|september|october|november|december)")
_CLOCK = r"[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:[.,][0-9]+)?"
# Parts of human-readable time stamps that the word rules would keep as text: a month name
# between digits inside a token (`03/Jul/2005:10:05:25`), AM/PM after a clock time, and a
# time zone name after one (`10:05:25 UTC`, `10:05 PM CEST`).
_STAMP_MONTH = r"([0-9][/.-])" + _MONTH + r"([/.-][0-9])"
_STAMP_MERIDIEM = r"(?-u:\b)" + _CLOCK + r" ?(?i:[ap]\.?m\.?)(?-u:\b)"
_STAMP_ZONE = (r"(?-u:\b)(" + _CLOCK + r"(?: ?(?i:[ap]\.?m\.?))?) (?:UTC|GMT|Z|[A-Z]{1,4}T)"
               r"(?-u:\b)")


def _stamps(text: pl.Series) -> pl.Series:
    return (text.str.replace_all(_STAMP_MONTH, "${1}" + WILDCARD + "${2}")
            .str.replace_all(_STAMP_ZONE, "${1}")
            .str.replace_all(_STAMP_MERIDIEM, WILDCARD))


def normalise(contents: pl.Series, masks: Sequence[str] = ()) -> pl.Series:
    """Masked, normalised token text of each message (first line only), tokens joined by
    one space. This is what the miner groups on.

    Whitespace runs become one space before the masks run, so that a mask sees the same
    text however a message was padded; lists of like values become one token
    (`collapse_lists`)."""
    first = contents.fill_null("").str.splitn("\n", 2).struct.field("field_0")
    spaced = first.str.replace_all(r"\s+", " ").str.strip_chars(" ")
    masked = apply_masks(_stamps(spaced.str.replace_all(PLACEHOLDER, WILDCARD)), masks)
    tokens = masked.str.replace_all(r"\s+", " ").str.strip_chars(" ").str.split(" ")
    e = pl.element()
    var_token = _VAR_TOKEN + ("|" + _EMPTY if SETTINGS.empty_brackets else "")
    norm = (
        pl.when(e.str.contains(var_token)).then(pl.lit(WILDCARD))
        .otherwise(e.str.replace_all(_VAR_PIECE, WILDCARD)
                   .str.replace_all(_SIGN, "${1}" + WILDCARD)
                   .str.replace_all(_RUN, WILDCARD))
    )
    norm = pl.when(norm.str.contains(_W) & norm.str.contains(_ONLY_VARS)).then(
        pl.lit(WILDCARD)).otherwise(norm)
    frame = pl.DataFrame({"t": tokens}).select(
        pl.col("t").list.eval(norm).list.join(" ").str.replace_all(_W + "(?: " + _W + ")+",
                                                                    WILDCARD))
    text = frame["t"]
    distinct = text.unique()
    return text.replace_strict(distinct, [collapse_lists(t) for t in distinct.to_list()],
                               return_dtype=pl.String)


_OPENERS = "([{"
_CLOSERS = ")]},;"


def _core(token: str) -> tuple[str, str, str]:
    """(opening brackets, core, closing brackets and separators) of a token."""
    start = len(token) - len(token.lstrip(_OPENERS))
    end = len(token.rstrip(_CLOSERS))
    if end <= start:
        return token, "", ""
    return token[:start], token[start:end], token[end:]


def _collapse_joined(token: str) -> str:
    """A list written without spaces (`id-<*>,id-<*>`) as its first item."""
    parts = token.split(",")
    out = [parts[0]]
    for part in parts[1:]:
        if part == out[-1] and WILDCARD in part:
            continue
        out.append(part)
    return ",".join(out)


def collapse_lists(text: str) -> str:
    """A list of like values (`id-<*>, id-<*>, id-<*>`, `[n<*> n<*>]`) as one token: a run of
    tokens with one core holding a parameter, each but the last ending in a separator, or
    none of them, becomes the first one's opening, the core and the last one's closing.
    A list's length is data, not text of the logging statement."""
    if text.count(WILDCARD) < 2:
        return text
    toks = [_collapse_joined(t) if "," in t and t.count(WILDCARD) > 1 else t
            for t in text.split(" ")]
    out: list[str] = []
    i = 0
    while i < len(toks):
        head, core, _ = _core(toks[i])
        j = i + 1
        if WILDCARD in core:
            seps = toks[i][len(head) + len(core):] != ""
            while j < len(toks):
                h, c, tail = _core(toks[j - 1])
                nh, nc, ntail = _core(toks[j])
                if nc != core or nh or (h and j - 1 != i):
                    break
                if seps != (tail[-1:] in (",", ";")) or (tail and not seps):
                    break
                j += 1
        if j - i > 1:
            out.append(head + core + _core(toks[j - 1])[2])
        else:
            out.append(toks[i])
        i = j
    return " ".join(out)


def split_tokens(text: str) -> tuple[str, ...]:
    """Tokens of a normalised text, long messages folded after MAX_TOKENS."""
    if not text:
        return ()
    toks = text.split(" ")
    if len(toks) > MAX_TOKENS:
        toks = toks[:MAX_TOKENS]
        if toks[-1] != WILDCARD:
            toks.append(WILDCARD)
    return tuple(toks)


# --- batch clustering ------------------------------------------------------------------

Msg = tuple[str, ...]


def _start_groups(msgs: list[Msg]) -> dict[tuple, list[Msg]]:
    """Group same-length messages by the skeleton their most common frequency picks."""
    freq = collections.Counter((p, t) for m in msgs for p, t in enumerate(m))
    groups: dict[tuple, list[Msg]] = collections.defaultdict(list)
    for m in msgs:
        fs = [freq[(p, t)] for p, t in enumerate(m)]
        by_f = collections.Counter(fs)
        fstar = max(by_f.items(), key=lambda kv: (kv[1], kv[0]))[0]
        key = tuple(t if f >= fstar else None for t, f in zip(m, fs))
        groups[key].append(m)
    return groups


def _indexed(vals: Iterable[str]) -> bool:
    """Whether words are one name with a varying part of one or two characters in each
    (`CPU0 CPU3`, `eadmin1 badmin1`, `LNKD LNKE`): an enumerated identifier, data."""
    words = list(vals)
    if len(words) < 2 or any(WILDCARD in w for w in words):
        return False
    pre = len(os.path.commonprefix(words))
    suf = len(os.path.commonprefix([w[::-1] for w in words]))
    suf = min(suf, min(len(w) for w in words) - pre)
    if pre + suf < 2 or not any(c.isalpha() for c in words[0][:pre] + words[0][len(words[0]) - suf:]):
        return False
    return all(1 <= len(w) - pre - suf <= 2 for w in words)


def _split(msgs: list[Msg], const: frozenset[int]) -> list[list[Msg]]:
    """Split a group into clusters, column by column (see the module docstring)."""
    st = SETTINGS
    out: list[list[Msg]] = []
    stack = [(msgs, const)]
    while stack:
        group, fixed = stack.pop()
        n = len(group[0])
        cols: dict[int, set[str]] = {}
        fixed_now = set(fixed)
        for p in range(n):
            if p in fixed_now:
                continue
            vals = {m[p] for m in group}
            if len(vals) == 1:
                fixed_now.add(p)
                continue
            cols[p] = vals
            if p == 0 and st.first_column_splits:
                break
        if not cols:
            out.append(group)
            continue
        first = 0 in cols and st.first_column_splits
        if not first and st.indexed_names:  # an indexed name is data: never split on it
            cols = {q: v for q, v in cols.items() if not _indexed(v)}
            if not cols:
                out.append(group)
                continue
        p = 0 if first else min(cols, key=lambda q: (len(cols[q]), q))
        constants = sum(1 for q in fixed_now if group[0][q] != WILDCARD)
        if first or len(cols[p]) < st.split_max_values or constants == 0:
            by: dict[str, list[Msg]] = collections.defaultdict(list)
            for m in group:
                by[m[p]].append(m)
            frozen = frozenset(fixed_now | {p})
            for value in sorted(by):
                stack.append((by[value], frozen))
            continue
        # a column of key=value fields with different keys: the key is text of the
        # statement even where the values make the column a parameter
        keyed = next((q for q in sorted(cols) if _keys_of(cols[q]) is not None), None)
        if keyed is None:
            out.append(group)
            continue
        by = collections.defaultdict(list)
        for m in group:
            by[_field(m[keyed])[0]].append(m)  # type: ignore[index]
        for key in sorted(by):
            stack.append((by[key], frozenset(fixed_now)))
    return out


def _keys_of(vals: set[str]) -> set[str] | None:
    """The keys of a column of key=value fields, when there are two or more of them."""
    keys = set()
    for v in vals:
        f = _field(v)
        if f is None:
            return None
        keys.add(f[0])
    return keys if len(keys) > 1 else None


# key=value in one token (`user=root`, `tag="x",`): the key is text of the statement, the
# value is data; a key seen with two values, or with a parameter, takes parameters.
_KEY = re.compile(r"""[(\[{'"]*[A-Za-z_][\w.-]*=["']?""")
_CLOSE = {")": "(", "]": "[", "}": "{"}


def _kv(token: str) -> tuple[str, str, str] | None:
    """(key with its `=` and opening quote, value, closing text) of a key=value token; a
    closing bracket belongs to the value when the value opened it."""
    if "=" not in token:
        return None
    m = _KEY.match(token)
    if m is None:
        return None
    head, rest = m.group(), token[m.end():]
    end = len(rest)
    while end and rest[end - 1] in ",;:\"'" or (
            end and rest[end - 1] in _CLOSE
            and rest.count(_CLOSE[rest[end - 1]], 0, end) < rest.count(rest[end - 1], 0, end)):
        end -= 1
    return head, rest[:end], rest[end:]


def variable_keys(msgs: Iterable[Msg]) -> tuple[set[str], set[str]]:
    """Keys (the text up to the value) that carry two or more values, or a parameter; and
    the plain values those keys carry."""
    seen: dict[str, set[str]] = collections.defaultdict(set)
    for m in msgs:
        for t in m:
            kv = _kv(t)
            if kv is not None:
                seen[kv[0]].add(kv[1])
    keys = {k for k, v in seen.items() if len(v) > 1 or any(WILDCARD in x for x in v)}
    return keys, {x for k in keys for x in seen[k] if x and WILDCARD not in x}


def mask_values(msg: Msg, keys: set[str] | frozenset[str]) -> Msg:
    """The message with the values of variable keys as `<*>`."""
    if not keys:
        return msg
    out = []
    for t in msg:
        kv = _kv(t)
        if kv is not None and kv[0] in keys and kv[1] != WILDCARD:
            t = kv[0] + WILDCARD + kv[2]
        out.append(t)
    return tuple(out)


# --- fields: their order, and fields present on some calls only -----------------------

MAX_OPTIONAL = 3  # trailing key=value fields a message may carry beyond its template's


def _field(token: str) -> tuple[str, str, str] | None:
    """(key, key=value text, separator after it) of a plain key=value token: one that
    opens with its key and closes with nothing but a `,` or `;`."""
    kv = _kv(token)
    if kv is None or not token[:1].isalpha() and token[:1] != "_" or kv[2] not in ("", ",", ";"):
        return None
    return kv[0], token[:len(token) - len(kv[2])], kv[2]


def _field_runs(msg: Msg) -> list[tuple[int, int]]:
    """(start, end) of each run of two or more consecutive key=value tokens."""
    runs, i = [], 0
    while i < len(msg):
        j = i
        while j < len(msg) and _field(msg[j]) is not None:
            j += 1
        if j - i > 1:
            runs.append((i, j))
        i = max(j, i + 1)
    return runs


def field_order(msg: Msg) -> Msg:
    """The message with each run of key=value fields in key order (separators stay where
    they were): the order a statement writes its fields in is not its text, when the same
    statement can write them in any order (a map's iteration order)."""
    runs = _field_runs(msg)
    if not runs:
        return msg
    out = list(msg)
    for i, j in runs:
        fields = [_field(t) for t in msg[i:j]]
        ordered = sorted(fields, key=lambda f: f[0])  # type: ignore[index]
        for k, (f, pos) in enumerate(zip(ordered, fields)):
            out[i + k] = f[1] + pos[2]  # type: ignore[index]
    return tuple(out)


def _order_like(tpl: Msg, like: Msg) -> Msg:
    """A template mined in key order (`field_order`) with its fields put back in the order
    of `like`, one of its messages as it was written."""
    out = list(tpl)
    for i, j in _field_runs(like):
        fields = [_field(t) for t in like[i:j]]
        mined = [_field(t) for t in tpl[i:j]]
        if any(f is None for f in mined):
            continue
        order = sorted(range(j - i), key=lambda k: fields[k][0])  # type: ignore[index]
        for r, k in enumerate(order):
            out[i + k] = mined[r][1] + fields[k][2]  # type: ignore[index]
    return tuple(out)


class FieldValues:
    """How often each key (as `_kv` gives it) was seen with a plain word as its value
    (`user=root`) and with data (`retry=<*>`, a number or id by its shape), over distinct
    messages as normalisation leaves them (before variable keys are masked)."""

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        self._named: set[str] | None = None

    def add(self, msgs: Iterable[Msg]) -> FieldValues:
        for m in msgs:
            for t in m:
                if "=" in t:
                    kv = _kv(t)
                    if kv is not None and kv[1]:
                        self.counts[kv[0]][WILDCARD in kv[1]] += 1
                        self._named = None
        return self

    def named(self) -> set[str]:
        """Keys of fields that name something: words are most of their values."""
        if self._named is None:
            self._named = {k for k, (words, data) in self.counts.items() if words > data}
        return self._named


def extends(general: Msg, specific: Msg, named: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether `specific` is a message of `general` with 1..MAX_OPTIONAL more key=value
    fields whose values are parameters at its end (both in key order): a field a statement
    appends on some calls only. When `general` itself ends in two or more fields, the
    message writes a list of fields, and a further field that names something (a key in
    `named`, seen mostly with words as values: `ruser= rhost=<*> user=root`) makes another
    set of keys, another statement (as another order of the same keys does not, see
    `field_order`); a further field whose values are mostly data by their shape (numbers,
    ids: `retry=3`, `elapsed_ms=12.5`) is one appended on some calls. Without a list of
    fields, a template needs a word of text before its fields."""
    extra = len(specific) - len(general)
    if not 0 < extra <= MAX_OPTIONAL:
        return False
    start = len(specific)
    while start and _field(specific[start - 1]) is not None:
        start -= 1
    if len(specific) - start < extra or _join(general[:start], specific[:start]) is None:
        return False
    if start and all(g == WILDCARD for g in general[:start]) and len(general) < start + 2:
        return False  # no text but one key: too little to say it is the same statement
    have = collections.Counter(_field(t)[1] for t in specific[start:])  # type: ignore[index]
    for t in general[start:]:
        f = _field(t)
        if f is None or have[f[1]] == 0:
            return False
        have[f[1]] -= 1
    left = [_kv(t) for t in have.elements()]
    if len(general) > start + 1 and any(kv[0] in named for kv in left):  # type: ignore[index]
        return False  # a list of fields and one that names something: another set of fields
    return all(kv[1] == WILDCARD for kv in left)  # type: ignore[index]


def _join(general: Msg, specific: Msg) -> Msg | None:
    """The template two texts of one length both are, position by position: a token they
    share, or <*> where either has <*> or the two are one indexed name (`eth0`, `eth1`,
    see `_indexed`); None where they differ otherwise. A text that only some calls of a
    statement make with an optional field can be mined apart from the rest (`root1_local`
    alone without the field, `<*>` in the many with it): the join is the statement's."""
    out = []
    for g, s in zip(general, specific):
        if g == s:
            out.append(g)
        elif g == WILDCARD or s == WILDCARD or _indexed((g, s)):
            out.append(WILDCARD)
        else:
            return None
    if all(t == WILDCARD for t in out) and not all(g == WILDCARD for g in general):
        return None  # texts that share no word are not one statement's
    return tuple(out)


def _optional_homes(templates: Iterable[Msg], named: set[str]) -> dict[Msg, Msg]:
    """Each template that another one `extends` into (the most specific such, following
    chains): the template of the same statement without its optional fields. Where the
    two texts differ (`extends` joins them, see `_join`), both go to their join."""
    by_len: dict[int, list[tuple[Msg, Msg]]] = collections.defaultdict(list)
    for t in templates:
        by_len[len(t)].append((field_order(t), t))
    home: dict[Msg, Msg] = {}
    for length in sorted(by_len):
        for ordered, t in by_len[length]:
            if not t or _field(t[-1]) is None:
                continue
            best = None
            for k in range(1, MAX_OPTIONAL + 1):
                for g_ordered, g in by_len.get(length - k, ()):
                    if extends(g_ordered, ordered, named):
                        cand = (g.count(WILDCARD), g)
                        best = cand if best is None or cand < best else best
                if best is not None:
                    break
            if best is not None:
                g = home.get(best[1], best[1])
                start = len(t)
                while start and _field(t[start - 1]) is not None:
                    start -= 1
                prefix = _join(g[:start], t[:start]) if len(g) >= start else None
                if prefix is not None and prefix != g[:start]:
                    joined = prefix + g[start:]
                    home[best[1]] = home[g] = joined
                    g = joined
                home[t] = g
    for t in home:  # a home that was joined later: its templates follow it
        seen = {t}
        while home[t] in home and home[t] not in seen:
            seen.add(home[t])
            home[t] = home[home[t]]
    return home


def _collapse_runs(tpl: Msg) -> Msg:
    return tuple(t for i, t in enumerate(tpl) if not (t == WILDCARD and i and tpl[i - 1] == WILDCARD))


def _same_but_runs(templates: Iterable[Msg]) -> dict[Msg, Msg]:
    """Templates that differ only in how many `<*>` stand in a row, each to one of them
    (the longest): normalisation writes adjacent parameters as one `<*>`, so a parameter
    beside a list of values (`user ids <*> webmaster from`) vanishes into the list on the
    calls where it is one by its shape (`user ids <*> from`)."""
    by: dict[Msg, list[Msg]] = collections.defaultdict(list)
    for t in templates:
        if any(tok != WILDCARD for tok in t):
            by[_collapse_runs(t)].append(t)
    out: dict[Msg, Msg] = {}
    for group in by.values():
        if len(group) > 1:
            head = max(group, key=lambda t: (len(t), t))
            out.update((t, head) for t in group if t != head)
    return out


def _values_seen(final: list[tuple[Msg, list[Msg]]]) -> set[str]:
    """Plain words that filled a parameter position (one with `split_max_values` or more
    values) of a mined template: words known to be data."""
    out: set[str] = set()
    for tpl, members in final:
        for p, t in enumerate(tpl):
            if t == WILDCARD:
                vals = {m[p] for m in members if WILDCARD not in m[p]}
                if len(vals) >= SETTINGS.split_max_values:
                    out |= vals
    return out


def _merge_alone(final: list[tuple[Msg, list[Msg]]], values: set[str]
                 ) -> list[tuple[Msg, list[Msg]]]:
    """Join templates of one length that differ in one position only, where each has a
    constant, when that position is a parameter: one of those constants is a word known
    to be data (`values`), or (`alone_min_constants`) the constants left are at least that
    share of the message. The first position is exempt while `first_column_splits`
    holds."""
    st = SETTINGS
    if not final:
        return final
    length = len(final[0][0])
    for p in range(1 if st.first_column_splits else 0, length):
        buckets: dict[Msg, list[int]] = collections.defaultdict(list)
        for i, (tpl, _) in enumerate(final):
            if tpl[p] != WILDCARD:
                buckets[tpl[:p] + (WILDCARD,) + tpl[p + 1:]].append(i)
        gone: set[int] = set()
        joined: list[tuple[Msg, list[Msg]]] = []
        for general, idx in buckets.items():
            if len(idx) < 2:
                continue
            constants = sum(1 for t in general if t != WILDCARD)
            known = any(final[i][0][p] in values for i in idx) or (
                st.indexed_names and _indexed({final[i][0][p] for i in idx}))
            if constants == 0 or not (known or constants >= st.alone_min_constants * length):
                continue
            gone.update(idx)
            joined.append((general, [m for i in idx for m in final[i][1]]))
        if gone:
            final = [c for i, c in enumerate(final) if i not in gone] + joined
    return final


def _template_of(group: list[Msg]) -> Msg:
    first = group[0]
    return tuple(t if all(m[p] == t for m in group) else WILDCARD for p, t in enumerate(first))


def _subsumes(general: Msg, specific: Msg) -> bool:
    """Whether `general` matches `specific` (a template of parameters only matches only
    messages of parameters only: it says nothing about text)."""
    if len(general) != len(specific):
        return False
    if all(g == WILDCARD for g in general):
        return all(s == WILDCARD for s in specific)
    return all(g == WILDCARD or g == s for g, s in zip(general, specific))


def cluster(msgs: Iterable[Msg], keys: set[str] | None = None,
            values: set[str] | None = None, named: set[str] | None = None) -> dict[Msg, Msg]:
    """Batch-mine distinct normalised messages: map each to its template tokens.

    `keys` and `values`, when given, are the variable keys and data words known from
    earlier batches; what this batch teaches is added to them. `named`: the keys of fields
    that name something (`FieldValues.named`), from these messages when not given."""
    msgs = list(msgs)
    keys = set() if keys is None else keys
    values = set() if values is None else values
    if named is None:
        named = FieldValues().add(msgs).named()
    if SETTINGS.variable_keys:
        new_keys, kv_values = variable_keys(msgs)
        keys |= new_keys
        values |= kv_values
    masked = {m: mask_values(m, keys) for m in msgs}
    # mined with fields in key order; a template is written back in the order of the most
    # general message written that way (an existing template, when one is among them)
    seen: dict[Msg, Msg] = {m: field_order(v) for m, v in masked.items()}
    written: dict[Msg, Msg] = {}
    for m, v in masked.items():
        o = seen[m]
        if o not in written or (v.count(WILDCARD), written[o]) > (written[o].count(WILDCARD), v):
            written[o] = v
    by_len: dict[int, set[Msg]] = collections.defaultdict(set)
    for m in seen.values():
        by_len[len(m)].add(m)
    result: dict[Msg, Msg] = {}
    like: dict[Msg, Msg] = {}
    mined: list[list[tuple[Msg, list[Msg]]]] = []
    for length, group in by_len.items():
        if length == 0:
            for m in group:
                result[m] = m
            continue
        mined.append(_cluster_length(sorted(group)))
    for final in mined:
        values |= _values_seen(final)
    for final in mined:
        for tpl, part in _merge_alone(final, values):
            real = _template_of(part) if len(part) > 1 else tpl
            like.setdefault(real, written[max(part, key=lambda m: (m.count(WILDCARD), m))])
            for m in part:
                result[m] = real
    runs = _same_but_runs(set(result.values()))
    home = _optional_homes({runs.get(t, t) for t in result.values()}, named)
    out = {}
    for m, o in seen.items():
        tpl = runs.get(result[o], result[o])
        tpl = home.get(tpl, tpl)
        out[m] = _order_like(tpl, like[tpl]) if tpl in like else tpl
    return out


def _cluster_length(ordered: list[Msg]) -> list[tuple[Msg, list[Msg]]]:
    """Templates (with their messages) of messages of one length."""
    clusters: list[tuple[Msg, list[Msg]]] = []
    for key, members in _start_groups(ordered).items():
        fixed = frozenset(p for p, t in enumerate(key) if t is not None)
        for part in _split(members, fixed):
            clusters.append((_template_of(part), part))
    # Subsume: most general first; a template matched by a more general one joins it.
    # A <*> that every member carried as a token (a masked path, a number) stands for
    # values of that kind only: it takes in a token holding parameters, not a word.
    clusters.sort(key=lambda c: (-c[0].count(WILDCARD), c[0]))
    final: list[tuple[Msg, list[Msg]]] = []
    for tpl, part in clusters:
        for host_tpl, host_members in final:
            if _subsumes(host_tpl, tpl) and all(
                    WILDCARD in t or any(m[p] != WILDCARD for m in host_members)
                    for p, t in enumerate(tpl)):
                host_members.extend(part)
                break
        else:
            final.append((tpl, list(part)))
    return final


# --- the stateful miner ----------------------------------------------------------------

@dataclass
class MinerUpdate:
    """What one `assign` call changed: new templates and merges (old id -> new id)."""

    new: dict[str, Msg] = field(default_factory=dict)
    merges: list[tuple[str, str]] = field(default_factory=list)


class TemplateMiner:
    """Templates known so far, and the batch mining of messages none of them matches."""

    def __init__(self, templates: Iterable[Msg] = ()):
        self.templates: dict[str, Msg] = {}
        self.retired: dict[str, Msg] = {}  # merged into a more general template
        self._index: dict[tuple[int, str], set[str]] = collections.defaultdict(set)
        self._by_len: dict[int, set[str]] = collections.defaultdict(set)
        self._memo: dict[str, str] = {}
        self.keys: set[str] = set()  # keys whose values are parameters (key=value)
        self.values: set[str] = set()  # words seen as data
        self.fields = FieldValues()  # what values each key of a field was seen with
        for tokens in templates:
            self._add(tuple(tokens))
        for tokens in self.templates.values():
            for t in tokens:
                kv = _kv(t)
                if kv is not None and kv[1] == WILDCARD:
                    self.keys.add(kv[0])

    def _add(self, tokens: Msg) -> str:
        tid = template_id(tokens)
        if tid not in self.templates:
            self.templates[tid] = tokens
            first = tokens[0] if tokens else ""
            self._index[(len(tokens), first)].add(tid)
            self._by_len[len(tokens)].add(tid)
        return tid

    def _remove(self, tid: str) -> None:
        tokens = self.templates.pop(tid)
        self.retired[tid] = tokens
        first = tokens[0] if tokens else ""
        self._index[(len(tokens), first)].discard(tid)
        self._by_len[len(tokens)].discard(tid)

    def match(self, msg: Msg) -> str | None:
        """The most specific known template matching a normalised message, if any."""
        best: tuple[int, str] | None = None  # (wildcards, template id): the fewest, then the id
        first = msg[0] if msg else ""
        for key in ((len(msg), first), (len(msg), WILDCARD)):
            for tid in self._index.get(key, ()):
                tpl = self.templates[tid]
                if _subsumes(tpl, msg):
                    candidate = (tpl.count(WILDCARD), tid)
                    if best is None or candidate < best:
                        best = candidate
        if best is None and msg and _field(msg[-1]) is not None:
            return self._match_fields(msg)
        return best[1] if best is not None else None

    def _match_fields(self, msg: Msg) -> str | None:
        """A template of the message's statement written with its fields in another order,
        or without optional trailing fields (see `cluster`); the most specific."""
        ordered = field_order(msg)
        for extra in range(0, MAX_OPTIONAL + 1):
            found = []
            for tid in self._by_len.get(len(msg) - extra, ()):
                tpl = field_order(self.templates[tid])
                if (_subsumes(tpl, ordered) if extra == 0
                        else extends(tpl, ordered, self.fields.named())):
                    found.append((tpl.count(WILDCARD), tid))
            if found:
                return min(found)[1]
        return None

    def assign(self, texts: Sequence[str]) -> tuple[list[str], MinerUpdate]:
        """Template id for each distinct normalised text; mines what nothing matches."""
        update = MinerUpdate()
        if len(self._memo) > MEMO_LIMIT:  # a cache of matches: bounded, rebuilt as needed
            self._memo.clear()
        ids: list[str | None] = []
        unmatched: dict[Msg, list[int]] = collections.defaultdict(list)
        for i, text in enumerate(texts):
            tid = self._memo.get(text)
            if tid is not None and tid in self.templates:
                ids.append(tid)
                continue
            raw = split_tokens(text)
            if "=" in text:
                self.fields.add((raw,))
            msg = mask_values(raw, self.keys)
            tid = self.match(msg)
            ids.append(tid)
            if tid is None:
                unmatched[msg].append(i)
            else:
                self._memo[text] = tid
        if unmatched:
            self._mine(unmatched, ids, texts, update)
        return ids, update  # type: ignore[return-value]

    def _mine(self, unmatched: dict[Msg, list[int]], ids: list, texts: Sequence[str],
              update: MinerUpdate) -> None:
        # templates with optional fields the new messages lack may join theirs
        lengths = {len(m) + k for m in unmatched for k in range(MAX_OPTIONAL + 1)}
        existing = {tokens: tid for tid, tokens in self.templates.items() if len(tokens) in lengths}
        mapping = cluster(list(unmatched) + list(existing), self.keys, self.values,
                          self.fields.named())
        # Existing templates whose cluster template differs have generalised: merge them
        # (following chains, so that no merged template comes back).
        targets = {template_id(mapping[t]): mapping[t] for t in existing if mapping[t] != t}
        final = resolve_merges((old, template_id(mapping[t])) for t, old in existing.items()
                               if mapping[t] != t)
        for old, new_id in final.items():
            if new_id not in self.templates:
                self._add(targets[new_id])
                update.new[new_id] = targets[new_id]
        for old, new_id in final.items():
            if old in self.templates:
                self._remove(old)
            update.new.pop(old, None)
            update.merges.append((old, new_id))
        for msg, positions in unmatched.items():
            tokens = mapping[msg]
            tid = template_id(tokens)
            if tid not in self.templates:
                self._add(tokens)
                update.new[tid] = tokens
            for i in positions:
                ids[i] = tid
                self._memo[texts[i]] = tid
        if update.merges:
            final = resolve_merges(update.merges)
            for i, tid in enumerate(ids):
                ids[i] = final.get(tid, tid)
            self._memo = {k: final.get(v, v) for k, v in self._memo.items()}


def resolve_merges(merges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """old id -> final id, following chains (a -> b, b -> c gives a -> c)."""
    step = dict(merges)
    final = {}
    for old in step:
        seen = {old}
        new = step[old]
        while new in step and new not in seen:
            seen.add(new)
            new = step[new]
        final[old] = new
    return final


# --- parameters ------------------------------------------------------------------------

def _param_regex(tokens: Msg) -> str:
    parts = []
    for tok in tokens:
        pieces = tok.split(WILDCARD)
        parts.append("(.*?)".join(re.escape(p) for p in pieces))
    return r"^\s*" + r"\s+".join(parts) + r"\s*$"


# Whitespace other than the plain space, as polars' regex engine counts it (Unicode
# White_Space) plus U+001C..U+001F, which Python counts: a message holding any of these,
# two spaces in a row, or a space at either end is left to the regex.
_ODD_SPACE = re.compile("[\t-\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029"
                        "\u202f\u205f\u3000]|  |^ | $")
# A template with at least this many of a batch's messages is matched by polars at once (a
# plan costs ~0.3 ms however few rows it has); fewer are aligned token by token in Python.
BULK_PARAM_ROWS = 32


def _aligned_params(text: str, pieces: Sequence[Sequence[str]]) -> list[str] | None:
    """The `<*>` values of a message whose words are separated by single spaces, when its
    words line up one to one with the template's (`pieces`: each token's text around its
    `<*>`, one piece for a constant); None when they do not, or when a token has two
    `<*>`. Then the regex of `_param_regex` gives the same values: with single spaces and
    as many words as tokens, each token can only match its own word."""
    words = text.split(" ")
    if len(words) != len(pieces) or _ODD_SPACE.search(text):
        return None
    params = []
    for word, piece in zip(words, pieces):
        if len(piece) == 1:
            if word != piece[0]:
                return None
        elif len(piece) == 2 and len(word) >= len(piece[0]) + len(piece[1]) \
                and word.startswith(piece[0]) and word.endswith(piece[1]):
            params.append(word[len(piece[0]):len(word) - len(piece[1])])
        else:
            return None
    return params


def _align_few(first: pl.Series, keys: list[str | None]
               ) -> tuple[list[int], list[list[str]], dict[str, pl.Expr]]:
    """Parameters of the messages (rows of `first`, with their template texts `keys`) that
    line up plainly with a template of few messages in the batch: their rows and values,
    and for the rest, per template, the rows its regex must run on."""
    rows: dict[str, list[int]] = collections.defaultdict(list)
    for i, key in enumerate(keys):
        if key is not None and WILDCARD in key:
            rows[key].append(i)
    aligned_i: list[int] = []
    aligned_p: list[list[str]] = []
    by_regex = {key: pl.col("k") == key for key, idx in rows.items()
                if len(idx) >= BULK_PARAM_ROWS}
    few = [(key, idx) for key, idx in rows.items() if len(idx) < BULK_PARAM_ROWS]
    # one gather for all of them (one per template cost 2.5 of BGL's first 14 ms)
    texts = iter(first.gather([i for _, idx in few for i in idx]).to_list())
    for key, idx in few:
        pieces = [tok.split(WILDCARD) for tok in split_tokens(key)]
        left = []
        for i in idx:
            got = _aligned_params(next(texts), pieces)
            if got is None:
                left.append(i)
            else:
                aligned_i.append(i)
                aligned_p.append(got)
        if left:
            by_regex[key] = pl.col("i").is_in(left)
    return aligned_i, aligned_p, by_regex


def extract_params(messages: pl.Series, tokens: Sequence[Msg | None]) -> pl.Series:
    """The values at the `<*>` positions of each message's template (first line only);
    null where the template's text cannot be aligned with the message.

    The values are what `_param_regex` captures. A template with many messages in the
    batch runs that regex over them in polars; one with few aligns a message's words with
    its tokens in Python, and leaves to the regex only the messages that do not line up
    plainly (odd whitespace, a different word count, two `<*>` in a token)."""
    first = messages.fill_null("").str.splitn("\n", 2).struct.field("field_0")
    keys = [template_text(t) if t is not None else None for t in tokens]
    aligned_i, aligned_p, by_regex = _align_few(first, keys)
    df = pl.DataFrame({"i": pl.int_range(0, len(first), eager=True), "m": first,
                       "k": pl.Series(keys, dtype=pl.String)})  # typed even when all null
    frame = df.lazy()
    plans = [frame.filter(pl.col("k").is_null() | ~pl.col("k").str.contains(WILDCARD, literal=True))
             .select("i", pl.when(pl.col("k").is_null()).then(pl.lit(None, pl.List(pl.String)))
                     .otherwise(pl.lit([], pl.List(pl.String))).alias("p")),
             pl.LazyFrame({"i": aligned_i, "p": aligned_p},
                          schema={"i": pl.Int64, "p": pl.List(pl.String)})]
    for key, where in by_regex.items():
        g = pl.col("m").str.extract_groups(_param_regex(split_tokens(key)))
        n = key.count(WILDCARD)  # one group per <*>
        plans.append(frame.filter(where).select(
            "i", pl.when(g.struct[0].is_null()).then(None)
            .otherwise(pl.concat_list([g.struct[f] for f in range(n)])).alias("p")))
    # one call runs every template's plan (in parallel), not three eager calls per template
    return pl.concat(pl.collect_all(plans)).sort("i")["p"].alias("params")


# --- browsing --------------------------------------------------------------------------

def list_templates(con, top: int | None = 20, level: str | None = None) -> list[dict]:
    """Mined templates, most frequent first, for a person to read.

    Args:
        top: how many (None for all).
        level: only templates with records at this normalised level (trace, debug, info,
            notice, warn, error, fatal); `count` is then the number of such records.

    Returns:
        dicts with template_id, template, count, first_seen, last_seen, example.
    """
    limit = "" if top is None else f"LIMIT {int(top)}"
    if level is None:
        rows = con.execute(f"""
            SELECT template_id, template, count, first_seen, last_seen, example
            FROM log_templates ORDER BY count DESC, template_id {limit}""").fetchall()
    else:
        rows = con.execute(f"""
            WITH n AS (
                SELECT m.template_id, count(*) AS count, min(r.ts) AS first_seen,
                       max(r.ts) AS last_seen
                FROM log_records r JOIN log_messages m USING (message_id)
                WHERE r.level = ? GROUP BY m.template_id)
            SELECT t.template_id, t.template, n.count, n.first_seen, n.last_seen, t.example
            FROM n JOIN log_templates t USING (template_id)
            ORDER BY n.count DESC, t.template_id {limit}""", [level]).fetchall()
    cols = ["template_id", "template", "count", "first_seen", "last_seen", "example"]
    return [dict(zip(cols, r)) for r in rows]
