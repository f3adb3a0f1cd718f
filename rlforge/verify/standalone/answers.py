"""One short answer (a label, number, time, set or exact text) against the reference."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.answers
    from .rewards import component, reward
else:  # tests/rlforge_answers.py: its siblings by their copied names
    from rlforge_rewards import component, reward

MAX_ANSWER_CHARS = 400
# Spaces and tabs only around the keyword: with re.M, \s* would also take newlines and
# backtrack quadratically over a reply of many blank lines.
ANSWER_LINE = re.compile(r"^[ \t]*(?:final[ \t]+)?answer[ \t]*[:=][ \t]*(.*)$", re.I | re.M)


def extract_answer(text):
    """The answer in a reply: the last `ANSWER: ...` line if there is one, else all of it."""
    if text is None:
        return ""
    found = ANSWER_LINE.findall(text)
    answer = found[-1] if found else text
    return answer.strip().strip("`").strip()


def unmarked(text):
    """A one-line answer without the Markdown around it: a list item's marker, then
    emphasis or code marks (a dash, then billing in backticks; billing in bold), as a label
    is shown in the instruction's list of options. Several lines are left as they are."""
    if "\n" in text.strip():
        return text
    text = re.sub(r"^[ \t]*[-*+\u2022][ \t]+", "", text)
    return text.strip().strip("*_`").strip()


def normalize(text):
    """Case-, space- and punctuation-insensitive form used for exact comparison."""
    text = text.casefold().strip().strip("\"'`.,;:!?()[]{}<>").strip()
    text = re.sub(r"[\s_\-/]+", " ", text)
    return text.strip()


def parse_number(text):
    cleaned = text.strip().rstrip(".").replace(",", "")
    cleaned = re.sub(r"\s*(lines?|events?|entries|requests?|seconds?|s|ms|%)$", "", cleaned, flags=re.I)
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


TS_FORMATS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f",
              "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M")


def parse_timestamp(text):
    """A written time as a naive datetime, or None. A `Z` or `+00:00` suffix is dropped;
    any other UTC offset names another instant than the same digits in the logs' own
    time, so such a time is not read (never silently shifted or ignored)."""
    t = text.strip()
    if t[-1:] in "Zz":
        t = t[:-1]
    offset = re.search(r"([+-])(\d\d):?(\d\d)$", t) if re.search(r"\d[T ]\d", t) else None
    if offset:
        if offset.group(2) != "00" or offset.group(3) != "00":
            return None
        t = t[:offset.start()]
    for fmt in TS_FORMATS:
        try:
            return dt.datetime.strptime(t.strip(), fmt)
        except ValueError:
            continue
    return None


def _minute_precision(text):
    """Whether a reference time is written to the minute (`YYYY-MM-DD HH:MM`)."""
    return re.fullmatch(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d", text.strip()) is not None


def split_items(text):
    return [i for i in (x.strip() for x in re.split(r"[,\n;]+", text)) if i]


def score_answer(ref, submitted):
    """Score one answer against the reference; see `reward` for the shape of the result."""
    kind = ref["answer_kind"]
    answer = extract_answer(submitted)
    comps = {}
    if len({normalize(a) for a in ANSWER_LINE.findall(submitted or "")}) > 1:
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail="several different ANSWER lines")
        comps["correct"] = component(0)
        return reward(comps, detail="ambiguous answer")
    if not answer:
        comps["valid_format"] = component(0, 0, "medium", gate=True, detail="empty answer")
        comps["correct"] = component(0)
        return reward(comps, detail="no answer")
    if len(answer) > ref.get("max_chars", MAX_ANSWER_CHARS):
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail=f"answer longer than {ref.get('max_chars', MAX_ANSWER_CHARS)} characters")
        comps["correct"] = component(0)
        return reward(comps, detail="answer too long")
    ok_format, correct, detail = True, False, ""
    expected = ref["answer"]
    if kind == "label":
        labels = {normalize(x): x for x in ref["labels"]}
        got = normalize(unmarked(answer))
        ok_format = got in labels
        correct = ok_format and got == normalize(expected)
        detail = "not one of the offered labels" if not ok_format else ""
    elif kind == "exact":
        correct = normalize(answer) == normalize(expected)
    elif kind == "numeric":
        value = parse_number(answer)
        ok_format = value is not None
        if ok_format:
            tol = max(float(ref.get("abs_tol", 0)), abs(float(expected)) * float(ref.get("rel_tol", 0)))
            correct = abs(value - float(expected)) <= tol + 1e-12
        detail = "" if ok_format else "not a single number"
    elif kind == "timestamp":
        value = parse_timestamp(answer)
        ok_format = value is not None
        if ok_format:
            want = parse_timestamp(expected)
            if _minute_precision(expected):  # a minute asked: its seconds do not matter
                value = value.replace(second=0, microsecond=0)
            correct = abs((value - want).total_seconds()) <= float(ref.get("tolerance_sec", 0))
        detail = "" if ok_format else ("not a timestamp as the logs write it (YYYY-MM-DD "
                                       "HH:MM:SS, no UTC offset)")
    elif kind == "set":
        got = {normalize(x) for x in split_items(answer)}
        want = {normalize(x) for x in expected}
        ok_format = bool(got)
        correct = got == want
        inter = len(got & want)
        f1 = 0.0 if not got or not want else 2 * inter / (len(got) + len(want))
        comps["overlap_f1"] = component(f1, 0, "fine", detail="informational")
    else:
        raise ValueError(f"unknown answer kind {kind!r}")
    comps["valid_format"] = component(1 if ok_format else 0, 0, "medium", gate=True, detail=detail)
    comps["correct"] = component(1 if correct else 0, 1.0, "coarse")
    return reward(comps)
