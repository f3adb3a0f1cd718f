"""The shortcut battery: the cheap strategies a policy learns first, tried on a question.

A task teaches little when a strategy that does not do what the question asks still gets
its answer: a literal `grep -c` of the pattern's longest fixed piece, the first or last
error, the line just before the first failure, the most frequent option, the only
candidate, an option whose matches include another's. Each strategy here reads only what
the policy sees -- the question (with its listed options) and the window of log lines as
the instruction shows it -- and guesses an answer. A task whose reference any guess gets
is trivial: the log generators do not emit it (they ask another question of the window,
and record the reason), and `rlforge validate` scores every guess with the task's own
verifier, where it must score 0 like the adversarial submissions.

Some rules are not wrong as a guess but must not be right more often than a blind pick:
the component (or host) with the most failing records, the one with the fewest, the one
of the last failing record, the alphabetically first or last of those failing, the
first or last option listed, the option the fewest records match (`CHANCE_RULES`). Each
applies to nearly every question of its family, so screening them all to zero would make
the answer the one candidate no rule names (drop the most-failing, and the least-failing
becomes the answer; drop the last failing, and "never the last one to fail" is the cue). They are bounded instead: over a build's tasks of a family, each
rule answers at most as many as chance would, rounded to the nearest task (`chance`: one over the
candidates a blind pick chooses from, summed over the tasks); `logs.diagnose` keeps that count as it builds.
They are not run by `rlforge validate`, which sees one task and no build.

The builder calls `guesses` with the question it is about to ask; `rlforge validate`
calls it with the question read back from the rendered instruction (`view_of_task`): one
battery for both.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rlforge.verify.shortcuts_script import in_order as _in_order
from rlforge.verify.shortcuts_script import longest_piece

#: A record line as a window shows it: `TIMESTAMP HOST LEVEL COMPONENT: MESSAGE`.
LINE = re.compile(r"^(\S+) +(\S+) +(\S+) +(\S+?): (.*)$")
SECTION_HEAD = re.compile(r"^==> \S+ <==$")
OPTION = re.compile(r"^- `(.*)`$")
QUOTED = re.compile(r"`([^`]+)`")
SET_KINDS = ("anomalous_ids", "new_patterns")  # families whose answer is a set
ID = re.compile(r"\b(?:blk_-?\d{6,}|[A-Za-z]{2,12}[_-][0-9a-fA-F]{6,}|[A-Za-z]{2,12}_\d{4,})\b")


def pattern_regex(pattern: str) -> re.Pattern:
    """The regular expression a stated pattern means, for `fullmatch` on a message's first
    line: `<*>` is any run of characters, a space one or more spaces or tabs, every other
    character itself (`logs_common.PATTERN_RULE` words it for the policy)."""
    pieces = []
    for i, literal in enumerate(pattern.split("<*>")):
        if i:
            pieces.append(".*?")
        pieces.append("[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", literal)))
    return re.compile("".join(pieces))


@dataclass(frozen=True)
class Line:
    time: dt.datetime | None
    host: str
    level: str
    component: str
    message: str


@dataclass
class QuestionView:
    """A question as the policy sees it: its family, its text, the options it lists and the
    record lines of its window, in the order they are shown."""

    kind: str
    question: str
    lines: list[Line]
    options: list[str] = field(default_factory=list)
    _matched: dict = field(default_factory=dict, repr=False)  # (pattern, naive) -> matches

    @property
    def failing_levels(self) -> tuple[str, ...]:
        """The levels the question calls failures, read from its own words."""
        if "WARN, ERROR or FATAL" in self.question:
            return ("WARN", "ERROR", "FATAL")
        return ("ERROR", "FATAL")

    def failures(self) -> list[int]:
        return [i for i, r in enumerate(self.lines) if r.level in self.failing_levels]


def _time(text: str) -> dt.datetime | None:
    try:
        return None if text == "-" else dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def read_lines(window: str) -> list[Line]:
    """The record lines of a shown window, in the order shown (continuation lines, section
    heads and anything else that is not a record line are skipped: a shortcut is naive)."""
    out = []
    for raw in window.splitlines():
        if raw.startswith("\t") or SECTION_HEAD.match(raw):
            continue
        m = LINE.match(raw)
        if m:
            t, host, level, comp, msg = m.groups()
            out.append(Line(_time(t), host, level.upper(), comp, msg))
    return out


def view(kind: str, question: str, window: str) -> QuestionView:
    """The view of a question: its options are the `` - `option` `` lines of its text."""
    options = [m.group(1) for line in question.splitlines() if (m := OPTION.match(line))]
    return QuestionView(kind, question, read_lines(window), options)


def view_of_task(task_dir: Path, kind: str) -> QuestionView | None:
    """The view of a rendered answer task from its instruction (the `**Question:**`
    paragraph, options included, and the window in its `~~~text` block); None when the
    instruction holds no such question."""
    text = (Path(task_dir) / "instruction.md").read_text(encoding="utf-8", errors="replace")
    q = re.search(r"\*\*Question:\*\* (.*?)\n\n~~~text\n(.*?)~~~", text, re.S)
    if q is None:
        return None
    return view(kind, q.group(1), q.group(2))


# --- the strategies --------------------------------------------------------------------

def _stamp(question: str, t: dt.datetime | None) -> str | None:
    """A time in the format the question asks for (a minute or a second)."""
    if t is None:
        return None
    if "`YYYY-MM-DD HH:MM`" in question:
        return t.strftime("%Y-%m-%d %H:%M")
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _top(counts: Counter) -> str | None:
    top = counts.most_common(2)
    if not top or top[0][1] == 0 or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def _asked_pattern(v: QuestionView) -> str | None:
    m = re.search(r"match the pattern `([^`]+)`", v.question)
    return m.group(1) if m else None


def grep_piece_count(v: QuestionView) -> str | None:
    """`grep -c` of the asked pattern's longest fixed piece over the lines."""
    pattern = _asked_pattern(v)
    if pattern is None or not longest_piece(pattern):
        return None
    piece = longest_piece(pattern)
    return str(sum(piece in r.message for r in v.lines))


def grep_pattern_count(v: QuestionView) -> str | None:
    """`grep -cE` of the asked pattern (`<*>` as `.*`) over whole record lines: a match
    anywhere in the line, not the whole message."""
    pattern = _asked_pattern(v)
    if pattern is None:
        return None
    pieces = [p for p in pattern.split("<*>") if p]
    return str(sum(_in_order(pieces, f"{r.component}: {r.message}") for r in v.lines))


def grep_first_piece_count(v: QuestionView) -> str | None:
    """`grep -c ': PIECE'`: the records whose message starts with the pattern's first fixed
    piece (what a pattern that starts with text begins with)."""
    pattern = _asked_pattern(v)
    piece = pattern.split("<*>")[0].strip() if pattern else ""
    return str(sum(r.message.startswith(piece) for r in v.lines)) if piece else None


def grep_word_count(v: QuestionView) -> str | None:
    """`grep -c` of the asked pattern's longest word: the question's own words."""
    pattern = _asked_pattern(v)
    words = re.findall(r"[A-Za-z_][\w.$-]*", (pattern or "").replace("<*>", " "))
    if not words:
        return None
    word = max(words, key=len)
    return str(sum(word in r.message for r in v.lines))


def _field_question(v: QuestionView) -> str | None:
    m = re.match(r"Which (component|host) failed first", v.question)
    return m.group(1) if m else None


def only_failing_candidate(v: QuestionView) -> str | None:
    """The only component (or host) with any failing record."""
    name = _field_question(v)
    if name is None:
        return None
    values = {getattr(v.lines[i], name) for i in v.failures()} - {"-"}
    return values.pop() if len(values) == 1 else None


def most_failing_candidate(v: QuestionView) -> str | None:
    """The component (or host) with the most failing records."""
    counts = _failing_counts(v)
    return _top(counts) if counts else None


def _failing_counts(v: QuestionView) -> Counter | None:
    """Failing records per component (or host) for a which-failed-first question."""
    name = _field_question(v)
    if name is None:
        return None
    return Counter(getattr(v.lines[i], name) for i in v.failures()) - Counter({"-": 10**9})


def least_failing_candidate(v: QuestionView) -> str | None:
    """The component (or host) with the fewest failing records, among those with any."""
    counts = _failing_counts(v)
    if not counts or len(counts) < 2:
        return None
    low = min(counts.values())
    least = [c for c, n in counts.items() if n == low]
    return least[0] if len(least) == 1 else None


def last_failing_candidate(v: QuestionView) -> str | None:
    """The component (or host) of the last failing record."""
    name = _field_question(v)
    fails = v.failures()
    return getattr(v.lines[fails[-1]], name) if name and fails else None


def first_candidate_by_name(v: QuestionView) -> str | None:
    """The alphabetically first of the components (or hosts) with a failing record."""
    counts = _failing_counts(v)
    return min(counts) if counts and len(counts) > 1 else None


def last_candidate_by_name(v: QuestionView) -> str | None:
    """The alphabetically last of the components (or hosts) with a failing record."""
    counts = _failing_counts(v)
    return max(counts) if counts and len(counts) > 1 else None


def _asks_time(v: QuestionView) -> bool:
    return "`YYYY-MM-DD HH:MM" in v.question


def first_failure_time(v: QuestionView) -> str | None:
    """The time of the first failing record."""
    fails = v.failures()
    return _stamp(v.question, v.lines[fails[0]].time) if _asks_time(v) and fails else None


def last_failure_time(v: QuestionView) -> str | None:
    fails = v.failures()
    return _stamp(v.question, v.lines[fails[-1]].time) if _asks_time(v) and fails else None


def record_before_first_failure_time(v: QuestionView) -> str | None:
    """The time of the record just before the first failure (a stall before it)."""
    fails = v.failures()
    if not _asks_time(v) or not fails or fails[0] == 0:
        return None
    return _stamp(v.question, v.lines[fails[0] - 1].time)


def first_record_time(v: QuestionView) -> str | None:
    return _stamp(v.question, v.lines[0].time) if _asks_time(v) and v.lines else None


def busiest_minute(v: QuestionView) -> str | None:
    """The minute with the most records at any level (for a question about failures)."""
    if "`YYYY-MM-DD HH:MM`" not in v.question:
        return None
    return _top(Counter(r.time.strftime("%Y-%m-%d %H:%M") for r in v.lines if r.time))


def _matches(v: QuestionView, pattern: str, naive: bool) -> list[bool]:
    """Which lines a pattern matches (by the stated rule, or `naive`ly: its longest fixed
    piece anywhere in the message); computed once per view."""
    key = (pattern, naive)
    if key not in v._matched:
        if naive:
            piece = longest_piece(pattern)
            v._matched[key] = [bool(piece) and piece in r.message for r in v.lines]
        else:
            rx = pattern_regex(pattern)
            v._matched[key] = [rx.fullmatch(r.message) is not None for r in v.lines]
    return v._matched[key]


def _option_counts(v: QuestionView, naive: bool, failing_only: bool) -> Counter:
    fails = set(v.failures())
    return Counter({o: sum(m and (not failing_only or i in fails)
                           for i, m in enumerate(_matches(v, o, naive))) for o in v.options})


def most_frequent_option(v: QuestionView) -> str | None:
    """The option the most records match, at any level."""
    return _top(_option_counts(v, False, False)) if len(v.options) > 1 else None


def grep_piece_top_option(v: QuestionView) -> str | None:
    """The option whose longest fixed piece the most failing lines contain."""
    return _top(_option_counts(v, True, True)) if len(v.options) > 1 else None


def _one_of_options(v: QuestionView) -> bool:
    """Whether the question asks for one of its listed options (not a set of them)."""
    return len(v.options) > 1 and v.kind not in SET_KINDS


def first_option(v: QuestionView) -> str | None:
    return v.options[0] if _one_of_options(v) else None


def last_option(v: QuestionView) -> str | None:
    return v.options[-1] if _one_of_options(v) else None


def least_frequent_option(v: QuestionView) -> str | None:
    """The option the fewest records match, at any level (when one is fewest)."""
    if not _one_of_options(v):
        return None
    counts = _option_counts(v, False, False)
    low = min(counts.values())
    least = [o for o in v.options if counts[o] == low]
    return least[0] if len(least) == 1 else None


def only_option(v: QuestionView) -> str | None:
    return v.options[0] if len(v.options) == 1 else None


def dominating_option(v: QuestionView) -> str | None:
    """An option whose matches include every match of another option (it can only win a
    'most' question, and is a safe bet for the others); the widest such."""
    sets = {o: {i for i, m in enumerate(_matches(v, o, False)) if m} for o in v.options}
    wide = [o for o in v.options if sets[o] and any(
        p != o and sets[p] and sets[p] < sets[o] for p in v.options)]
    return max(wide, key=lambda o: (len(sets[o]), o)) if wide else None


def option_before_first_failure(v: QuestionView) -> str | None:
    """The option the record just before the first failure matches."""
    fails = v.failures()
    if not v.options or not fails or fails[0] == 0:
        return None
    hits = [o for o in v.options if _matches(v, o, False)[fails[0] - 1]]
    return hits[0] if len(hits) == 1 else None


def grep_piece_new_options(v: QuestionView) -> str | None:
    """The options whose longest fixed piece appears in part 2 and not in part 1."""
    m = re.search(r"part 1 is records 1-(\d+)", v.question)
    if m is None or not v.options:
        return None
    half = int(m.group(1))
    got = [o for o in v.options if (hits := _matches(v, o, True)) and any(hits[half:])
           and not any(hits[:half])]
    return "\n".join(got) if got else None


def ids_on_error_lines(v: QuestionView) -> str | None:
    """The ids on ERROR/FATAL lines only (WARN left out): a grep for ERROR."""
    if "Follow each id" not in v.question:
        return None
    bad = sorted({i for r in v.lines if r.level in ("ERROR", "FATAL")
                  for i in ID.findall(r.message)})
    return ", ".join(bad) if bad else None


#: Every strategy, by name. Each returns a guess or None where it does not apply.
STRATEGIES: dict[str, Callable[[QuestionView], str | None]] = {
    "grep_piece_count": grep_piece_count,
    "grep_pattern_count": grep_pattern_count,
    "grep_first_piece_count": grep_first_piece_count,
    "grep_word_count": grep_word_count,
    "only_failing_candidate": only_failing_candidate,
    "first_failure_time": first_failure_time,
    "last_failure_time": last_failure_time,
    "record_before_first_failure_time": record_before_first_failure_time,
    "first_record_time": first_record_time,
    "busiest_minute": busiest_minute,
    "most_frequent_option": most_frequent_option,
    "grep_piece_top_option": grep_piece_top_option,
    "only_option": only_option,
    "dominating_option": dominating_option,
    "option_before_first_failure": option_before_first_failure,
    "grep_piece_new_options": grep_piece_new_options,
    "ids_on_error_lines": ids_on_error_lines,
}


#: Rules bounded to chance over a build (see the module docstring), by name.
CHANCE_RULES: dict[str, Callable[[QuestionView], str | None]] = {
    "most_failing_candidate": most_failing_candidate,
    "least_failing_candidate": least_failing_candidate,
    "last_failing_candidate": last_failing_candidate,
    "first_candidate_by_name": first_candidate_by_name,
    "last_candidate_by_name": last_candidate_by_name,
    "first_option": first_option,
    "last_option": last_option,
    "least_frequent_option": least_frequent_option,
}


def chance(v: QuestionView) -> float:
    """How often a blind pick answers the question: one over its listed options, or over
    the components (hosts) with a failing record for a which-failed-first question; 0
    where neither applies."""
    counts = _failing_counts(v)
    if counts is not None:
        return 1 / len(counts) if counts else 0.0
    return 1 / len(v.options) if _one_of_options(v) else 0.0


def rules_solving(v: QuestionView, reference: dict) -> dict[str, str]:
    """The chance-bounded rules whose guess the answer verifier scores above 0."""
    return scored({name: guess for name, rule in CHANCE_RULES.items() if (guess := rule(v))},
                  reference)


def guesses(v: QuestionView) -> dict[str, str]:
    """Every strategy's guess for the question (those that apply), by strategy name."""
    out = {}
    for name, strategy in STRATEGIES.items():
        guess = strategy(v)
        if guess:
            out[name] = guess
    return out


def solved_by(v: QuestionView, reference: dict) -> dict[str, str]:
    """The strategies whose guess the answer verifier scores correct, with the guess."""
    return scored(guesses(v), reference)


def scored(named_guesses: dict[str, str], reference: dict) -> dict[str, str]:
    """Those of the guesses (by strategy name) the task's answer verifier scores above 0."""
    from rlforge.verify.standalone.answers import score_answer

    return {name: guess for name, guess in named_guesses.items()
            if score_answer(reference, guess)["total"] > 1e-9}


#: The generators whose questions the battery screens when it builds them; `rlforge
#: validate` runs it on their tasks.
SCREENED = ("logs.diagnose",)


def submissions(task_dir: Path, meta: dict) -> list[dict]:
    """The battery as submissions for `rlforge validate`: one `answer.txt` per guess, for
    a task of a screened generator whose metadata names its question family
    (`question_kind`) and whose instruction shows its question; none for other tasks."""
    rl = meta.get("metadata", {}).get("rlforge", {})
    kind = rl.get("question_kind")
    if str(rl.get("generator", "")).partition("@")[0] not in SCREENED or not kind:
        return []
    v = view_of_task(task_dir, str(kind))
    if v is None:
        return []
    return [{"name": f"shortcut_{name}", "files": {"answer.txt": guess}}
            for name, guess in guesses(v).items()]
