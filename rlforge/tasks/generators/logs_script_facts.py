"""What `logs.script` asks: its facts, how the instruction states each, and each fact's
answer, from the stored records (the reference) and from a logs directory as written (by
the statement's words alone, to check that the two agree)."""

from __future__ import annotations

import gzip
import re
from collections import Counter

from rlforge.tasks.generators.logs_common import (ERROR_LEVELS, PATTERN_RULE, Record,
                                                  minute_of_peak, parse_shown, pattern_regex,
                                                  record_time, shown_time)

FACTS = ("first_error_time", "peak_error_minute", "top_error_component", "top_component",
         "top_host", "busiest_minute", "longest_gap", "error_count", "template_count",
         "distinct_values", "unmatched_ids")
# Facts that need no record at level ERROR or FATAL (a source without errors still has tasks).
ANY_LEVEL = ("top_component", "top_host", "busiest_minute", "longest_gap", "template_count",
             "distinct_values", "unmatched_ids")
TIMED = ("first_error_time", "peak_error_minute", "busiest_minute", "longest_gap")
#: How the gap question orders records: every file's records together, by time (as shown,
#: to the millisecond); a record without a time makes the question unanswerable, so it is
#: never asked of such logs. Sorted, no gap is negative, whatever order the files hold.
GAP_RULE = ("take the records of all the files together and sort them by time (records out "
            "of time order in a file, or across files, are sorted too, so no gap is negative); "
            "the gap after a record is the time to the next record in that order")
COUNTING = ("error_count", "template_count")
#: Facts about a pattern the statement names (a template of both windows).
BY_TEMPLATE = ("template_count", "distinct_values")
#: Facts that join two patterns by a shared value (an id two kinds of record both name):
#: how many of the texts one `<*>` of the first stands for one `<*>` of the second never
#: does (sessions opened and never closed, blocks allocated and never received). A join,
#: not a count: no `grep -c` or `sort -u` of one pattern gives it, and it needs no time,
#: host, component or level (a plain log of bare messages has it).
BY_PAIR = ("unmatched_ids",)
#: Facts answered by a number, screened by the script shortcut battery (`shortcuts_script`).
NUMERIC = COUNTING + ("distinct_values",) + BY_PAIR
#: How the distinct-values question reads a match (regular-expression leftmost, lazy).
ORDINAL = dict(enumerate(("zeroth", "first", "second", "third", "fourth", "fifth", "sixth",
                          "seventh", "eighth", "ninth")))
SLOT_RULE = ("Where a message could match in more than one way, each `<*>` from the left "
             "stands for as few characters as it can")
RECORD_LINE = r"^(\S+) +(\S+) +(\S+) +(\S+?): (.*)$"  # fields: one or more spaces apart


def fact_value(fact: str, records: list[Record], template: str | None = None, slot: int = 1,
               other: tuple[str, int] | None = None):
    """The expected answer for one window, computed from the stored records (`other`: the
    second pattern of a join, and its `<*>`)."""
    if fact == "error_count":
        return sum(1 for r in records if r.level in ERROR_LEVELS)
    if fact in BY_PAIR:
        assert template is not None and other is not None, "a join names two patterns"
        return unmatched([r.message.split("\n", 1)[0] for r in records], (template, slot), other)
    if fact in BY_TEMPLATE:
        assert template is not None, "a template question names its template"
        return _by_template(fact, template, [r.message.split("\n", 1)[0] for r in records], slot)
    if fact in ("first_error_time", "peak_error_minute"):
        times = [r.ts for r in records if r.level in ERROR_LEVELS]
        errors = [t for t in times if t is not None]
        if not errors or len(errors) < len(times):
            return None
        if fact == "first_error_time":
            return min(errors).strftime("%Y-%m-%d %H:%M:%S")
        return minute_of_peak([(r.ts, r.level) for r in records])
    if fact in ("busiest_minute", "longest_gap"):
        return time_fact(fact, [record_time(r) for r in records])
    if fact == "top_host":
        return _top(Counter(_token(r.host) for r in records if r.host and r.host.strip()))
    counts = Counter((r.component or "").replace(" ", "_") for r in records
                     if (fact == "top_component" or r.level in ERROR_LEVELS) and r.component)
    return _top(counts)


def slot_regex(template: str, slot: int) -> re.Pattern:
    """The template's regex with its `slot`-th `<*>` (from 1) captured: `pattern_regex`
    writes each `<*>` as an unescaped `.*?`, which nothing else it writes is."""
    parts = pattern_regex(template).pattern.split(".*?")
    return re.compile(".*?".join(parts[:slot]) + "(.*?)" + ".*?".join(parts[slot:]))


def slot_values(template: str, messages: list[str]) -> list[set[str]]:
    """For each `<*>` of the template (from the first), the distinct texts it stands for
    over the messages that match the template (by `SLOT_RULE`)."""
    parts = pattern_regex(template).pattern.split(".*?")
    capture = re.compile("(.*?)".join(parts))
    out: list[set[str]] = [set() for _ in parts[1:]]
    for message in messages:
        hit = capture.fullmatch(message)
        if hit:
            for values, value in zip(out, hit.groups()):
                values.add(value)
    return out


def unmatched(messages: list[str], first: tuple[str, int], second: tuple[str, int]) -> int:
    """How many distinct texts the `first` (pattern, `<*>` from 1) stands for over the
    messages that match it, that the `second` stands for in none of those matching it."""
    (a, i), (b, j) = first, second
    return len(slot_values(a, messages)[i - 1] - slot_values(b, messages)[j - 1])


def _by_template(fact: str, template: str, messages: list[str], slot: int = 1) -> int:
    """How many messages match the template, or how many distinct texts its `slot`-th
    `<*>` stands for among them."""
    if fact == "template_count":
        rx = pattern_regex(template)
        return sum(1 for m in messages if rx.fullmatch(m))
    capture = slot_regex(template, slot)
    return len({hit.group(1) for m in messages if (hit := capture.fullmatch(m))})


def _token(value: str) -> str:
    return re.sub(r"\s+", "_", value.strip())


def _top(counts: Counter):
    top = counts.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None  # nothing counted, or a tie: no single right answer
    return top[0][0]


def time_fact(fact: str, times: list) -> str | None:
    """`busiest_minute` or `longest_gap` from every record's time (None where a record has
    none): None when a time is missing or the answer is not unique. The gap follows
    GAP_RULE; its answer is the time of the record it follows, to the second."""
    if len(times) < 3 or any(t is None for t in times):
        return None
    if fact == "busiest_minute":
        return minute_of_peak([(t, "error") for t in times])
    stamps = sorted(times)
    gaps = sorted(((b - a).total_seconds(), a) for a, b in zip(stamps, stamps[1:]))
    (second, _), (top, at) = gaps[-2], gaps[-1]
    if top < 5.0 or top == second:
        return None
    return at.strftime("%Y-%m-%d %H:%M:%S")


def stated_fact(fact: str, text: str, template: str | None = None, slot: int = 1,
                other: tuple[str, int] | None = None):
    """The fact by the statement's words alone, from a window as written (single-space
    record lines: `directory_text`)."""
    shown = parse_shown(text)
    errors = [r for r in shown if r.level in ("ERROR", "FATAL")]
    if fact == "error_count":
        return len(errors)
    if fact in BY_PAIR:
        assert template is not None and other is not None, "a join names two patterns"
        return unmatched([r.message for r in shown], (template, slot), other)
    if fact in BY_TEMPLATE:
        assert template is not None, "a template question names its template"
        return _by_template(fact, template, [r.message for r in shown], slot)
    if fact == "first_error_time":
        times = [shown_time(r) for r in errors]
        return min(times).strftime("%Y-%m-%d %H:%M:%S") if times and None not in times else None
    if fact == "peak_error_minute":
        return minute_of_peak([(shown_time(r), r.level.lower()) for r in shown])
    if fact in ("busiest_minute", "longest_gap"):
        return time_fact(fact, [shown_time(r) for r in shown])
    if fact == "top_host":
        return _top(Counter(r.host for r in shown if r.host != "-"))
    among = shown if fact == "top_component" else errors
    top = Counter(r.component for r in among if r.component != "-").most_common(2)
    return None if not top or len(top) == 2 and top[0][1] == top[1][1] else top[0][0]


LENIENT_LINE = re.compile(RECORD_LINE)


def directory_text(files: dict[str, bytes], plain_only: bool = False) -> str:
    """A logs directory (file name -> bytes) as one text of single-space record lines, the
    way the statement reads it: every file, gzip files decompressed. `plain_only`: what
    `cat` or `grep` over the files read as records, compressed files left out."""
    out = []
    for name in sorted(files):
        data = files[name]
        if name.endswith(".gz"):
            if plain_only:
                continue
            data = gzip.decompress(data)
        for line in data.decode("utf-8", "replace").splitlines():
            m = None if line.startswith("\t") else LENIENT_LINE.match(line)
            if m is None and not line.startswith("\t"):
                raise ValueError(f"not a record line: {line[:80]!r}")
            out.append(line if m is None else "{} {} {} {}: {}".format(*m.groups()))
    return "".join(line + "\n" for line in out)


def statement_of(fact: str, template: str | None = None, slot: int = 1,
                 other: tuple[str, int] | None = None) -> str:
    """The fact as the instruction states it (`template`: the pattern a template question
    names; `slot`: which of its `<*>` a distinct-values question asks about, from 1;
    `other`: a join's second pattern and its `<*>`)."""
    if fact in BY_PAIR:
        assert other is not None, "a join names two patterns"
        return (f"the number of distinct texts the {ORDINAL[slot]} `<*>` of the pattern "
                f"`{template}` stands for, over the records that match it, that the "
                f"{ORDINAL[other[1]]} `<*>` of the pattern `{other[0]}` stands for in no "
                f"record that matches that pattern ({PATTERN_RULE} {SLOT_RULE}; two texts "
                "are the same only when they are equal in every character)")
    if fact in BY_TEMPLATE:
        if fact == "template_count":
            return f"the number of records that match the pattern `{template}` ({PATTERN_RULE})"
        return (f"the number of distinct texts the {ORDINAL[slot]} `<*>` of the pattern "
                f"`{template}` "
                f"stands for, over the records that match it ({PATTERN_RULE} {SLOT_RULE}; "
                "two texts are distinct when they differ in any character)")
    return {
        "error_count": "the number of records at level ERROR or FATAL",
        "first_error_time": "the time of the earliest record at level ERROR or FATAL, in "
                            "UTC as `YYYY-MM-DD HH:MM:SS`",
        "peak_error_minute": "the minute with the most records at level ERROR or FATAL, "
                             "in UTC as `YYYY-MM-DD HH:MM`",
        "top_error_component": "the component that logged the most records at level ERROR "
                               "or FATAL",
        "top_component": "the component that logged the most records, at any level",
        "top_host": "the host that logged the most records, at any level",
        "busiest_minute": "the minute with the most records, at any level, in UTC as "
                          "`YYYY-MM-DD HH:MM`",
        "longest_gap": "the time of the record after which the logs fall silent longest, "
                       f"in UTC as `YYYY-MM-DD HH:MM:SS` ({GAP_RULE}; answer the time of "
                       "the record the longest gap follows)",
    }[fact]
