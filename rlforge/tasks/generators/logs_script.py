"""`logs.script`: write a program that prints a stated fact about the logs in a directory.

The policy writes `/app/solution.sh` (or `solution.py`) taking a logs directory as its only
argument. The verifier runs it in the sandbox on the visible logs (`/app/logs`) and on a
held-back directory the policy never sees, whose answer differs: a program that prints a
remembered value fails. Expected answers come from DuckDB.

A directory holds the window's file and the files every other service logged in the same
time span (one per service). The held-back directory is the next time span, written the
ways real log directories differ: the file with the first record the fact turns on is
rotated (`NAME.log.2.gz` gzip-compressed, `NAME.log.1`, `NAME.log`), host and level fields
are padded to fixed widths, services or hosts the visible logs lack may appear, records
keep their continuation lines. The build checks that a program blind to the compressed
part (`grep -c` over the files, say) gets the held-back answer wrong; the adversarial
submissions include such `grep` one-liners and a fixed answer.

Facts: when the first record at level ERROR or FATAL was logged; the minute with the most
such records; which component logged the most of them. Facts any log with times, hosts or
components supports, errors or not (access logs, auth logs, container output): which
component, or host, logged the most records; the minute with the most records (the busiest
minute); after which record the logs fall silent longest (`GAP_RULE` states the order, so no
gap is negative). Counting (at most `max_count_share` of the tasks, unless a window allows
nothing else, as a log without times, hosts and components does): how many records are at
level ERROR or FATAL, how many match a pattern (stated by `logs_common.PATTERN_RULE`).
Distinct values: how many distinct texts one `<*>` of a pattern stands for over the records
that match it (a field read by the pattern; no count gives it). Every expected answer is
computed again from the directories as written, by the rule the statement gives; a fact
whose two answers differ is not asked (`rejections`). A numeric fact a cheap program of
`rlforge.verify.shortcuts_script` answers on both directories is not asked either
(`screen_shortcuts`; the drop names the program).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections import Counter

from rlforge.tasks.generators.logs_common import (ERROR_LEVELS, PATTERN_RULE, Record, WindowStats,
                                       incident_group, minute_of_peak, parse_shown, pattern_regex,
                                       record_time,
                                       render, service_name, shown_time, span_sections,
                                       templates_of, window_stats)
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.spec import BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify import shortcuts_script as script_shortcuts

FACTS = ("first_error_time", "peak_error_minute", "top_error_component", "top_component",
         "top_host", "busiest_minute", "longest_gap", "error_count", "template_count",
         "distinct_values")
# Facts that need no record at level ERROR or FATAL (a source without errors still has tasks).
ANY_LEVEL = ("top_component", "top_host", "busiest_minute", "longest_gap", "template_count",
             "distinct_values")
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
#: Facts answered by a number, screened by the script shortcut battery (`shortcuts_script`).
NUMERIC = COUNTING + ("distinct_values",)
#: How the distinct-values question reads a match (regular-expression leftmost, lazy).
_ORDINAL = dict(enumerate(("zeroth", "first", "second", "third", "fourth", "fifth", "sixth",
                          "seventh", "eighth", "ninth")))
SLOT_RULE = ("Where a message could match in more than one way, each `<*>` from the left "
             "stands for as few characters as it can")
RECORD_LINE = r"^(\S+) +(\S+) +(\S+) +(\S+?): (.*)$"  # fields: one or more spaces apart

GOLD = {
    "error_count": '''
count = sum(1 for level, _, _ in records if level in ("ERROR", "FATAL"))
print(count)
''',
    "template_count": '''
pattern = re.compile(TEMPLATE_REGEX, re.S)
print(sum(1 for _, _, message in records if pattern.fullmatch(message)))
''',
    "distinct_values": '''
pattern = re.compile(TEMPLATE_REGEX, re.S)  # the asked `<*>` captured
print(len({m.group(1) for _, _, message in records if (m := pattern.fullmatch(message))}))
''',
    "top_error_component": '''
counts = collections.Counter(c for level, c, _ in records if level in ("ERROR", "FATAL") and c != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "top_component": '''
counts = collections.Counter(c for _, c, _ in records if c != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "top_host": '''
counts = collections.Counter(h for h in hosts if h != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "busiest_minute": '''
counts = collections.Counter(t[:16].replace("T", " ") for t, _ in times if t != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
    "longest_gap": '''
import datetime
stamps = sorted(datetime.datetime.fromisoformat(t) for t, _ in times if t != "-")
gaps = [(b - a, a) for a, b in zip(stamps, stamps[1:])]
print(max(gaps)[1].strftime("%Y-%m-%d %H:%M:%S") if gaps else "")
''',
    "first_error_time": '''
first = min((t for t, level in times if level in ("ERROR", "FATAL") and t != "-"), default="")
print(first[:19].replace("T", " "))
''',
    "peak_error_minute": '''
counts = collections.Counter(t[:16].replace("T", " ") for t, level in times
                             if level in ("ERROR", "FATAL") and t != "-")
print(counts.most_common(1)[0][0] if counts else "")
''',
}

GOLD_HEAD = '''#!/usr/bin/env python3
"""Reference solution: parse every record of every file in the directory given."""
import collections, gzip, os, re, sys

LINE = re.compile(r"%s")
records, times, hosts = [], [], []
root = sys.argv[1] if len(sys.argv) > 1 else "/app/logs"
for name in sorted(os.listdir(root)):
    opener = gzip.open if name.endswith(".gz") else open
    with opener(os.path.join(root, name), "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\\n")
            if line.startswith("\\t"):
                continue  # continuation of the record above
            m = LINE.match(line)
            if m:
                records.append((m.group(3), m.group(4), m.group(5)))
                times.append((m.group(1), m.group(3)))
                hosts.append(m.group(2))
''' % RECORD_LINE


#: Memory held where no RSS shows it, then the sandbox's limit reached from a tiny process:
#: on cgroup v1 the OOM killer once took bubblewrap's monitor, and the lost sandbox was
#: recorded as infrastructure (the rollout `invalid`).
MEMORY_WITHOUT_RSS = ("#!/bin/bash\nhead -c 250M /dev/zero > /tmp/held 2>/dev/null\n"
                      "head -c 250M /dev/zero > /dev/shm/held 2>/dev/null\n"
                      "exec dd if=/dev/zero of=/app/held bs=64k 2>/dev/null\n")

READS_REFERENCE = """import json, sys
target = sys.argv[1] if len(sys.argv) > 1 else "/app/logs"
try:
    with open("/tests/reference.json") as fh:
        cases = json.load(fh)["cases"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
visible = target.rstrip("/").endswith("app/logs")
print(cases[0 if visible else -1]["answer"]["answer"])
"""


def fact_value(fact: str, records: list[Record], template: str | None = None, slot: int = 1):
    """The expected answer for one window, computed from the stored records."""
    if fact == "error_count":
        return sum(1 for r in records if r.level in ERROR_LEVELS)
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


def stated_fact(fact: str, text: str, template: str | None = None, slot: int = 1):
    """The fact by the statement's words alone, from a window as written (single-space
    record lines: `directory_text`)."""
    shown = parse_shown(text)
    errors = [r for r in shown if r.level in ("ERROR", "FATAL")]
    if fact == "error_count":
        return len(errors)
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


def _turns_on(fact: str, template: str | None, answer=None):
    """Whether a record is one the fact depends on (where a rotation must cut after)."""
    if fact == "longest_gap":  # the record the gap follows
        return lambda r: r.ts is not None and r.ts.strftime("%Y-%m-%d %H:%M:%S") == answer
    if fact == "busiest_minute":  # the records of that minute
        return lambda r: r.ts is not None and r.ts.strftime("%Y-%m-%d %H:%M") == answer
    if fact == "top_host":
        return lambda r: bool(r.host)
    if fact in BY_TEMPLATE:
        rx = pattern_regex(template or "")
        return lambda r: rx.fullmatch(r.message.split("\n", 1)[0]) is not None
    if fact == "top_component":
        return lambda r: bool(r.component)
    return lambda r: r.level in ERROR_LEVELS


def held_back_variants(fact: str, template: str | None, sections, answer=None):
    """Ways to write the held-back sections as a real logs directory holds them, each
    (files, what differs): host and level fields padded to fixed widths, and every file
    rotated at one moment (as a nightly logrotate does): its records before that moment in
    `NAME.2.gz` (gzip) and `NAME.1`, the rest in `NAME`. Rotation moments are tried just
    after the first, the middle and the last record the fact turns on (to the second). Logs
    without times are rotated by size instead: each file just after its own first, middle
    or last such record."""
    import datetime as dt

    turns = _turns_on(fact, template, answer)
    hits = sorted(r.ts for _, recs in sections for r in recs if turns(r) and r.ts is not None)
    if hits:
        second = dt.timedelta(seconds=1)
        moments = sorted({t.replace(microsecond=0) + second
                          for t in (hits[0], hits[len(hits) // 2], hits[-1])})
        for moment in moments:
            cuts = []
            for _, recs in sections:
                cut, last = 0, None
                for i, r in enumerate(recs):  # a record without a time goes with the one before
                    last = r.ts if r.ts is not None else last
                    if last is not None and last < moment:
                        cut = i + 1
                cuts.append(cut)
            yield _rotated(sections, cuts, moment.isoformat())
        return
    if any(r.ts is not None for _, recs in sections for r in recs):
        return  # times, but none on a record the fact turns on: nothing to cut after
    at = {name: [i for i, r in enumerate(recs) if turns(r)] for name, recs in sections}
    if not any(at.values()):
        return
    for pick, label in ((0, "first"), (None, "middle"), (-1, "last")):
        cuts = [(idx[len(idx) // 2] if pick is None else idx[pick]) + 1 if idx else 0
                for idx in at.values()]
        yield _rotated(sections, cuts, f"by size, after the {label} record it turns on")


def _rotated(sections, cuts: list[int], when: str):
    """The files of `sections`, each cut at its index in `cuts`: (files, what differs)."""
    files: dict[str, bytes] = {}
    rotated = []
    for (name, recs), cut in zip(sections, cuts):
        mid = cut + (len(recs) - cut) // 2
        files[name] = render(recs[mid:], columns=True).encode() if mid < len(recs) else b""
        if mid > cut:
            files[f"{name}.1"] = render(recs[cut:mid], columns=True).encode()
        if cut:
            files[f"{name}.2.gz"] = gzip.compress(render(recs[:cut], columns=True).encode(),
                                                  mtime=0)
            rotated.append(name)
    return files, {"rotated_at": when, "rotated": rotated}


# The one-liners an answer that does not read the directory properly would be. Each file
# is grepped on its own, binary ones skipped (-I): that is what `directory_text(...,
# plain_only=True)` models. (`cat DIR/* | grep` is not deterministic: grep stops printing
# at the first NUL byte of a gzip file, and where that falls depends on how much of the
# pipe it got per read.)
GREP = {
    "error_count": "grep -hIE '^[^ ]+ [^ ]+ (ERROR|FATAL) ' \"$1\"/* | wc -l",
    "first_error_time": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | head -1 | cut -c1-19 | tr T ' '",
    "peak_error_minute": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | cut -c1-16 | tr T ' ' | sort "
                         "| uniq -c | sort -rn | head -1 | sed -E 's/^ *[0-9]+ //'",
    "top_error_component": "grep -hIE ' (ERROR|FATAL) ' \"$1\"/* | awk '{print $4}' | "
                           "tr -d : | sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "top_component": "grep -hIv '^\t' \"$1\"/* | awk '{print $4}' | tr -d : | grep -vx -- - | "
                     "sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "top_host": "grep -hIv '^\t' \"$1\"/* | awk '{print $2}' | grep -vx -- - | "
                "sort | uniq -c | sort -rn | head -1 | awk '{print $2}'",
    "busiest_minute": "grep -hIv '^\t' \"$1\"/* | cut -c1-16 | tr T ' ' | sort | uniq -c | "
                      "sort -rn | head -1 | sed -E 's/^ *[0-9]+ //'",
    # the gap read file by file, in the order the lines are written, unsorted
    "longest_gap": "grep -hIv '^\t' \"$1\"/* | cut -c1-19 | awk '{gsub(/[-T:]/, \" \"); "
                   "t = mktime($0); if (NR > 1 && t - p > best) {best = t - p; at = prev} "
                   "p = t; prev = $0} END {print at}' | awk '{printf \"%s-%s-%s %s:%s:%s\\n\", "
                   "$1, $2, $3, $4, $5, $6}'",
}


def grep_script(fact: str, template: str | None) -> bytes:
    """A `grep` one-liner for the fact (for counting by pattern: `grep -c` of the pattern's
    longest literal piece)."""
    if fact in BY_TEMPLATE:
        piece = max((template or "").split("<*>"), key=len).strip().replace("'", "'\\''")
        line = f"grep -hIF -- '{piece}' \"$1\"/* | " + ("wc -l" if fact == "template_count"
                                                       else "sort -u | wc -l")
    else:
        line = GREP[fact]
    return f"#!/bin/bash\n{line}\n".encode()


def _service_of(name: str) -> str:
    """The service a file of a logs directory belongs to (`NAME.log.2.gz` -> `NAME.log`)."""
    return re.sub(r"(?:\.\d+)?(?:\.gz)?$", "", name)


def _biggest_file(fact, files, template, slot):
    name = max(files, key=lambda n: (len(files[n]), n))
    return stated_fact(fact, directory_text({name: files[name]}), template, slot), len(files) > 1


def _biggest_service(fact, files, template, slot):
    size: Counter = Counter()
    for n, data in files.items():
        size[_service_of(n)] += len(data)
    top = max(size, key=lambda n: (size[n], n))
    return stated_fact(fact, directory_text({n: d for n, d in files.items()
                                             if _service_of(n) == top}), template, slot), \
        len(size) > 1


def _first_error_in_name_order(fact, files, template, slot):
    if fact != "first_error_time":
        return None, False
    errors = [r for r in parse_shown(directory_text(files)) if r.level in ("ERROR", "FATAL")]
    first = shown_time(errors[0]) if errors else None
    return (first.strftime("%Y-%m-%d %H:%M:%S") if first else None), True


#: Programs that read part of a directory, or read it out of order, and apply the stated
#: rule there: the largest file alone (the one the instruction previews, mostly), the
#: files of the service with the most bytes, the first ERROR line in file-name order. Each
#: gives (answer, whether it skipped or reordered anything); a fact one of them answers on
#: both directories, skipping something in one at least, is not asked.
PARTIAL_READERS = {"biggest_file_only": _biggest_file,
                   "biggest_service_only": _biggest_service,
                   "first_error_in_name_order": _first_error_in_name_order}


def statement_of(fact: str, template: str | None = None, slot: int = 1) -> str:
    """The fact as the instruction states it (`template`: the pattern a template question
    names; `slot`: which of its `<*>` a distinct-values question asks about, from 1)."""
    if fact in BY_TEMPLATE:
        if fact == "template_count":
            return f"the number of records that match the pattern `{template}` ({PATTERN_RULE})"
        return (f"the number of distinct texts the {_ORDINAL[slot]} `<*>` of the pattern "
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


@register("logs.script", 4, "Write a script that prints a fact about a logs directory; run "
          "in the sandbox on the visible logs and on a held-back variant.", verifier="script")
class LogsScript(Generator):
    sources = ("log_records",)

    def __init__(self, window: int = 120, facts=FACTS, max_count_share: float = 0.3,
                 screen_shortcuts: bool = True):
        """`screen_shortcuts`: do not ask a numeric question a script shortcut answers
        (`rlforge.verify.shortcuts_script`; off: to measure the battery)."""
        self.window = int(window)
        self.screen_shortcuts = bool(screen_shortcuts)
        self.shortcuts: Counter = Counter()  # tasks each shortcut answered (not emitted)
        self.facts = tuple(f for f in facts if f in FACTS)
        self.max_count_share = float(max_count_share)
        self.rejections: list[dict[str, str]] = []
        self._source = ""

    def available(self, con) -> int:
        by_run: Counter = Counter(w.ingest_run for w in window_stats(con, self.window))
        return sum(n - 1 for n in by_run.values() if n >= 2)

    def skipped(self, con) -> dict[str, str]:
        """Facts this database cannot support, with the reason (for `--list`)."""
        n_fail, n_comp, n_ts, n_host = con.execute("""
            SELECT count(*) FILTER (WHERE level IN ('error', 'fatal')),
                   count(DISTINCT component), count(ts), count(DISTINCT host)
            FROM log_lines""").fetchall()[0]
        out = {}
        for fact in self.facts:
            if fact not in ANY_LEVEL and not n_fail:
                out[fact] = "no record is at level ERROR or FATAL"
            elif fact in TIMED and not n_ts:
                out[fact] = "no record has a time"
            elif fact in ("top_error_component", "top_component") and n_comp < 2:
                out[fact] = "fewer than two components"
            elif fact == "top_host" and n_host < 2:
                out[fact] = "fewer than two hosts"
        return out

    def specs(self, ctx: BuildContext):
        windows = window_stats(ctx.con, self.window)
        by_run: dict[int, list[WindowStats]] = {}
        for w in windows:
            by_run.setdefault(w.ingest_run, []).append(w)
        pairs = [(ws[i], ws[i + 1]) for ws in by_run.values() for i in range(len(ws) - 1)]
        made: Counter = Counter()
        for visible, hidden in stable_sample(pairs, None, ctx.seed, key=lambda p: p[0].key):
            if ctx.limit is not None and sum(made.values()) >= ctx.limit:
                return
            spec = self._spec(ctx, visible, hidden, made)
            if spec is not None:
                made[spec.extra_metadata["fact"]] += 1
                yield spec

    def _pick(self, ctx, rng, seen_secs, held_secs, made: Counter):
        seen = [r for _, rs in seen_secs for r in rs]
        held = [r for _, rs in held_secs for r in rs]
        total = sum(made.values())
        counting_ok = sum(made[c] for c in COUNTING) + 1 <= self.max_count_share * (total + 1)
        facts = list(self.facts)
        rejected_before = len(self.rejections)
        skipped: dict[str, str] = {}
        # The least asked first; past the count cap, a counting fact only where no other
        # fact can be asked of the window (a log with nothing but counts still has tasks).
        keys = {f: (not counting_ok and f in COUNTING, made[f], rng.random()) for f in facts}
        facts.sort(key=keys.__getitem__)
        visible = {n: render(rs).encode() for n, rs in seen_secs}
        for fact in facts:
            template, slot = None, 1
            if fact in BY_TEMPLATE:
                template, slot, why = self._template(ctx, rng, fact, seen, held, visible)
                if template is None:
                    skipped[fact] = why
                    continue
            a, b = fact_value(fact, seen, template, slot), fact_value(fact, held, template, slot)
            if a is None or b is None or a == b or a == 0 and fact not in BY_TEMPLATE:
                skipped[fact] = ("no answer in a window" if a is None or b is None else
                                 "the visible and held-back answers are equal" if a == b else
                                 "none in the visible window")
                continue
            cheap: dict = {}
            for files, differs in held_back_variants(fact, template, held_secs, b):
                try:
                    stated = [stated_fact(fact, directory_text(d), template, slot)
                              for d in (visible, files)]
                    blind = stated_fact(fact, directory_text(files, plain_only=True), template,
                                        slot)
                except ValueError as exc:
                    self._reject(f"stated rule: the logs do not read as described ({exc})")
                    break
                if stated != [a, b]:
                    self._reject(f"stated rule disagrees ({fact}): the rule gives {stated!r}, "
                                 f"the reference {[a, b]!r}")
                    break
                if blind == b:
                    continue
                cheap = self._solved(fact, template, slot, [(visible, a), (files, b)]) or \
                    self._partial_reader(fact, template, slot, [(visible, a), (files, b)])
                if not cheap:
                    # the window is a task: what it could not ask first is no drop
                    del self.rejections[rejected_before:]
                    return fact, template, slot, a, b, files, differs
            else:
                if cheap:
                    name = sorted(cheap)[0]
                    self.shortcuts[name.partition("@")[0]] += 1
                    self._reject(f"shortcut {name} answers {fact} (it counts {a} and {b}; "
                                 f"{len(cheap)} strategies do)")
                else:
                    self._reject(f"held-back logs ({fact}): no rotation leaves a reader that "
                                 "skips compressed files with a wrong answer")
        if skipped or len(self.rejections) == rejected_before:  # every fact's reason
            self._reject("no question: " + "; ".join(f"{f}: {skipped[f]}" for f in self.facts
                                                     if f in skipped))
        return None

    def _solved(self, fact: str, template: str | None, slot: int, cases) -> dict:
        """The script shortcuts that print every case's answer (none where not screened)."""
        if fact not in NUMERIC or not self.screen_shortcuts:
            return {}
        return script_shortcuts.solved(fact, template, statement_of(fact, template, slot), cases,
                                       slot)

    def _partial_reader(self, fact: str, template: str | None, slot: int, cases) -> dict:
        """The readers of part of a directory (`PARTIAL_READERS`) whose answer by the
        stated rule is every case's (none where not screened)."""
        if not self.screen_shortcuts:
            return {}
        out = {}
        for name, reader in PARTIAL_READERS.items():
            try:
                got = [reader(fact, files, template, slot) for files, _ in cases]
            except ValueError:
                continue
            if [g for g, _ in got] == [answer for _, answer in cases] and \
                    any(partial for _, partial in got):
                out[name] = cases[0][1]
        return out

    def _template(self, ctx, rng, fact: str, seen, held, visible):
        """The pattern a template question names, and for a distinct-values question which
        `<*>` of it: a template of both windows whose stored ids agree with its stated rule
        and whose answer differs between them, one no script shortcut answers on the
        windows as shown where there is one (else the first, which the held-back check
        then judges); (None, 0, why) when there is none."""
        shared = sorted({r.template_id for r in seen if r.template_id} &
                        {r.template_id for r in held if r.template_id})
        tpl = templates_of(ctx.con, set(shared))
        usable = [t for t in shared if tpl.get(t) and "<*>" in tpl[t] and
                  len(tpl[t].replace("<*>", "").strip()) >= 4]
        if not usable:
            return None, 0, "no parametrised template in both windows"
        rng.shuffle(usable)
        held_files = {"held.log": render(held).encode()}
        fits = []
        for tid in usable:
            by_id = [sum(1 for r in rs if r.template_id == tid) for rs in (seen, held)]
            if [fact_value("template_count", rs, tpl[tid]) for rs in (seen, held)] != by_id:
                # the stored template ids and the template's regex must agree, or the task
                # would grade against a different count than it states
                continue
            slots = range(1, min(tpl[tid].count("<*>"), len(_ORDINAL) - 1) + 1) \
                if fact == "distinct_values" else (1,)
            for slot in slots:
                answers = [fact_value(fact, rs, tpl[tid], slot) for rs in (seen, held)]
                if answers[0] == answers[1] or min(answers) < (2 if fact == "distinct_values" else 0):
                    continue
                fits.append((tid, slot))
                if not self._solved(fact, tpl[tid], slot,
                                    [(visible, answers[0]), (held_files, answers[1])]):
                    return tpl[tid], slot, ""
        if not fits:
            return None, 0, ("no template whose stated rule agrees with its ids and whose "
                             "answer differs between the windows")
        return tpl[fits[0][0]], fits[0][1], ""

    def _reject(self, reason: str) -> None:
        self.rejections.append({"source": self._source, "reason": reason})

    def _spec(self, ctx: BuildContext, visible: WindowStats, hidden: WindowStats,
              made: Counter) -> TaskSpec | None:
        seen_secs, held_secs = span_sections(ctx.con, visible), span_sections(ctx.con, hidden)
        # A service the visible directory lacks may appear in the held-back one.
        if len(seen_secs) >= 3 and seen_secs[-1][0] in dict(held_secs):
            seen_secs = seen_secs[:-1]
        rng = ctx.rng(self.name, visible.key)
        self._source = f"{visible.file}:{visible.first_line}-{hidden.last_line}"
        picked = self._pick(ctx, rng, seen_secs, held_secs, made)
        if picked is None:
            return None
        fact, template, slot, a, b, held_files, differs = picked
        service = service_name(visible.file)
        seen_texts = {n: render(rs) for n, rs in seen_secs}
        log_name, seen_text = f"logs/{seen_secs[0][0]}", render(seen_secs[0][1])
        kind = "numeric" if fact in NUMERIC else "exact"
        seen_hosts = {r.host for _, rs in seen_secs for r in rs}
        differs |= {"padded_fields": True,
                    "new_files": sorted(set(dict(held_secs)) - set(seen_texts)),
                    "new_hosts": len({r.host for _, rs in held_secs for r in rs} - seen_hosts),
                    "continuation_lines": sum(r.message.count("\n") for _, rs in held_secs
                                              for r in rs)}

        def ref(value):
            if fact in TIMED:
                return {"answer_kind": "timestamp", "answer": value, "tolerance_sec": 0}
            return ({"answer_kind": "numeric", "answer": value, "abs_tol": 0} if kind == "numeric"
                    else {"answer_kind": "exact", "answer": value})

        statement = statement_of(fact, template, slot)
        regex = None if template is None else slot_regex(template, slot) \
            if fact == "distinct_values" else pattern_regex(template)
        gold = GOLD_HEAD + (f"TEMPLATE_REGEX = {regex.pattern!r}\n" if regex else "") \
            + GOLD[fact]
        reference = {
            "verifier": "script", "workspace": "/app", "programs": ["solution.sh", "solution.py"],
            "timeout_sec": 30,
            "cases": [{"name": "visible", "path": "/app/logs", "answer": ref(a)},
                      {"name": "held-back", "data_dir": "variant/logs", "answer": ref(b)}],
        }
        hard = f"#!/bin/bash\necho {a}\n"
        held_text = directory_text(held_files)
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("log_lines", [f"{visible.file}:{visible.first_line}-{visible.last_line}",
                                           f"{hidden.file}:{hidden.first_line}-{hidden.last_line}"],
                             [hashlib.sha256("".join(seen_texts.values()).encode()).hexdigest()[:32],
                              hashlib.sha256(held_text.encode()).hexdigest()[:32]]),
            instruction_template="instruction.md",
            context={"title": f"Script a log query for {service}: {fact.replace('_', ' ')}",
                     "service": service, "statement": statement, "log_name": log_name,
                     "files": [f"logs/{n}" for n in seen_texts],
                     "n_records": sum(len(rs) for _, rs in seen_secs), "numeric": kind == "numeric",
                     "preview": "".join(seen_text.splitlines(keepends=True)[:8])},
            reference=reference,
            solution_files={"solve.sh": (f"#!/bin/bash\n# Gold solution: a program that computes the "
                                         f"fact from the logs it is given.\ncat > /app/solution.py "
                                         f"<<'RLFORGE_EOF'\n{gold}RLFORGE_EOF\n").encode()},
            verifier="script", kind="terminal", group_key=incident_group(visible, seen_secs[0][1]),
            dedup_text=seen_text[:4000], time=seen_secs[0][1][0].ts if seen_secs[0][1] else None,
            workspace={f"logs/{n}": t.encode() for n, t in seen_texts.items()},
            tests_data={f"variant/logs/{n}": data for n, data in held_files.items()},
            null=Submission("null", {}), evidence_in_workspace=True,
            adversarial=[
                Submission("hard_coded", {"solution.sh": hard.encode()},
                           "prints the visible answer whatever it is given"),
                Submission("grep_one_liner", {"solution.sh": grep_script(fact, template)},
                           "a grep/cut/sort one-liner over the files as plain text"),
                Submission("silent_exit", {"solution.sh": b"#!/bin/bash\nexit 0\n"},
                           "exits 0 and prints nothing"),
                Submission("edits_tests", {"solution.sh": (
                    "#!/bin/bash\n# tamper with the verifier's data, then answer from memory\n"
                    "for f in /tests/reference.json /tests/variant/logs/*; do\n"
                    "  printf '' > \"$f\" 2>/dev/null\ndone\n"
                    "cp \"$1\"/* /tests/variant/logs/ 2>/dev/null\n" + f"echo {a}\n").encode()},
                           "edits /tests, then prints the visible answer"),
                Submission("reads_reference", {"solution.py": READS_REFERENCE.encode()},
                           "prints the answers from /tests/reference.json"),
                Submission("plants_reward_files", {"solution.sh": (
                    "#!/bin/bash\nmkdir -p /logs/verifier/reward.json 2>/dev/null\n"
                    "echo 1 > /logs/verifier/reward.txt 2>/dev/null\n" + f"echo {a}\n").encode()},
                           "writes reward files, then prints the visible answer"),
                Submission("signals_the_verifier", {"solution.sh": (
                    "#!/bin/bash\nkill -INT 1 2>/dev/null\nkill -KILL $PPID 2>/dev/null\n"
                    "kill -TERM -1 2>/dev/null\n" + f"echo {a}\n").encode()},
                           "signals pid 1, its parent and every process it may"),
                Submission("leaves_a_writer_behind", {"solution.sh": (
                    "#!/bin/bash\n(setsid bash -c 'for i in $(seq 50); do mkdir -p /logs/verifier; "
                    "echo 1 > /logs/verifier/reward.txt; sleep 0.1; done' >/dev/null 2>&1 &)\n"
                    + f"echo {a}\n").encode()},
                           "leaves a process rewriting reward.txt, prints the visible answer"),
                Submission("memory_without_rss", {"solution.sh": MEMORY_WITHOUT_RSS.encode()},
                           "fills /tmp and /dev/shm (memory no process's RSS shows), then "
                           "reaches the limit from a process smaller than the sandbox's own"),
            ],
            category="ops-logs", difficulty="medium", keywords=["logs", "scripting", fact],
            agent_timeout_sec=600.0, verifier_timeout_sec=120.0, memory_mb=1024,
            extra_metadata={"fact": fact, "service": service, "files": list(seen_texts),
                            "held_back": differs, **({"pattern": template} if template else {}),
                            **({"slot": slot} if fact == "distinct_values" else {})},
        )
