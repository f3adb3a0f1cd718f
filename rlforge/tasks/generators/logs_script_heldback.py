"""The held-back directory of a `logs.script` task, written the ways real log directories
differ (rotated and gzip-compressed files, fields padded to fixed widths), and the readers
of part of a directory a fact must defeat (`PARTIAL_READERS`)."""

from __future__ import annotations

import gzip
import re
from collections import Counter

from rlforge.tasks.generators.logs_common import ERROR_LEVELS, parse_shown, pattern_regex, render, shown_time
from rlforge.tasks.generators.logs_script_facts import (BY_PAIR, BY_TEMPLATE, directory_text,
                                                        slot_regex, slot_values, stated_fact)


def turns_on(fact: str, template: str | None, answer=None, other: tuple[str, int] | None = None,
             slot: int = 1, sections=()):
    """Whether a record is one the fact depends on (where a rotation must cut after; for a
    join, `sections` are the records it is asked of)."""
    if fact == "longest_gap":  # the record the gap follows
        return lambda r: r.ts is not None and r.ts.strftime("%Y-%m-%d %H:%M:%S") == answer
    if fact == "busiest_minute":  # the records of that minute
        return lambda r: r.ts is not None and r.ts.strftime("%Y-%m-%d %H:%M") == answer
    if fact == "top_host":
        return lambda r: bool(r.host)
    if fact in BY_PAIR:
        # the first pattern's records whose id the second names too: a cut after one parts
        # it from its partner, so a reader of one file alone miscounts
        assert template is not None and other is not None, "a join names two patterns"
        named = slot_values(other[0], [r.message.split("\n", 1)[0] for _, recs in sections
                                       for r in recs])[other[1] - 1]
        capture = slot_regex(template, slot)

        def partnered(r) -> bool:
            hit = capture.fullmatch(r.message.split("\n", 1)[0])
            return hit is not None and hit.group(1) in named
        return partnered
    if fact in BY_TEMPLATE:
        rx = pattern_regex(template or "")
        return lambda r: rx.fullmatch(r.message.split("\n", 1)[0]) is not None
    if fact == "top_component":
        return lambda r: bool(r.component)
    return lambda r: r.level in ERROR_LEVELS


def held_back_variants(fact: str, template: str | None, sections, answer=None,
                       other: tuple[str, int] | None = None, slot: int = 1):
    """Ways to write the held-back sections as a real logs directory holds them, each
    (files, what differs): host and level fields padded to fixed widths, and every file
    rotated at one moment (as a nightly logrotate does): its records before that moment in
    `NAME.2.gz` (gzip) and `NAME.1`, the rest in `NAME`. Rotation moments are tried just
    after the first, the middle and the last record the fact turns on (to the second). Logs
    without times are rotated by size instead: each file just after its own first, middle
    or last such record."""
    import datetime as dt

    turns = turns_on(fact, template, answer, other, slot, sections)
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


def _service_of(name: str) -> str:
    """The service a file of a logs directory belongs to (`NAME.log.2.gz` -> `NAME.log`)."""
    return re.sub(r"(?:\.\d+)?(?:\.gz)?$", "", name)


def _biggest_file(fact, files, template, slot, other=None):
    name = max(files, key=lambda n: (len(files[n]), n))
    return stated_fact(fact, directory_text({name: files[name]}), template, slot, other), \
        len(files) > 1


def _biggest_service(fact, files, template, slot, other=None):
    size: Counter = Counter()
    for n, data in files.items():
        size[_service_of(n)] += len(data)
    top = max(size, key=lambda n: (size[n], n))
    text = directory_text({n: d for n, d in files.items() if _service_of(n) == top})
    return stated_fact(fact, text, template, slot, other), len(size) > 1


def _first_error_in_name_order(fact, files, template, slot, other=None):
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

