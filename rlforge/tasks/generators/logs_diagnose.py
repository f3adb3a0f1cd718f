"""`logs.diagnose`: a window of log lines and one incident-diagnosis question whose answer
DuckDB computed.

Question families (`question_kind`), each asked only where the window's fields support it:
- `burst_start`: when the first error burst started (timestamp, 1 s tolerance);
- `first_error_component` / `first_failure_host`: which component or host failed first;
- `dominant_error_pattern`: which of the listed patterns the ERROR/FATAL records match most;
- `peak_error_minute`: the minute with the most ERROR/FATAL records;
- `anomalous_ids`: which request/block/trace ids have a WARN, ERROR or FATAL record (set);
- `precursor_pattern`: which listed pattern first appears last before the first error;
- `new_patterns`: which listed patterns match records in the second part of the window but
  none in the first (set);
- `longest_gap`: where the longest silence between two records begins (a stall);
- `template_count` (counting): how many records match a pattern. Counting is a minority:
  at most `max_count_share` of the tasks a build emits.

The family mix is an option (`families`, e.g. `{burst_start = 2, template_count = 1}`):
each window takes, among the families it supports, the one furthest behind its share, and
no family takes more than `max_family_share` of the tasks (`family_caps`): a family that
fits every window (a stall, `longest_gap`) does not crowd out the rest.

Shortcuts fail by construction and are screened: a first-failure question needs several
failing candidates, a burst must not start at the first failure, a precursor's distractors
are the patterns first seen nearest before the failure, a counted pattern is one a literal
`grep -c` of its pieces miscounts; and every question is tried by the shortcut battery
(`rlforge.verify.shortcuts`: the first or last error, the line before the first failure,
the most frequent or a dominating option, the only candidate, ...) on the window as shown.
A question any shortcut answers is not asked (the window tries another family) and is
recorded in `rejections` and `gates` (`shortcut:<name>`). The rules a blind pick is as good
as (the most- or least-failing candidate, the last one to fail, the alphabetically first
or last failing one, the first or last option, the least frequent option:
`shortcuts.CHANCE_RULES`) are held to chance instead: a question one answers is
asked only while, over the build's tasks of its family so far, that rule answers no more
than chance would, rounded to the nearest whole task, halves up (the sum of one over each
task's candidates: with two candidates, one rule or the other always answers); else
`chance:<name>`.

The stated rule is the reference: every answer is computed again from the window as shown
(`logs_common.parse_shown`) by the rule the instruction states (`PATTERN_RULE` for
patterns), without template ids; a question whose two answers differ is not asked, and the
window is recorded in `rejections` with the reason.

The window is shown in the instruction, rendered one line per record, and written to
`/app/logs/<service>.log` as the service wrote it (every field, redacted; `SourceLines`:
read again from the ingested file when it is unchanged, else the rendered lines), so the
task works single-turn and for agents with a shell alike. `workspace_lines` in task.toml
says which (`as written` or `as shown`).

Long contexts (`context_tokens`, e.g. `8k,32k,128k`): per budget, the window is grown
around the incident window (kept whole) with the real records next to it in its file,
until the instruction reaches the budget (`logs_common.approx_tokens`, within 5%); when the
file is too short, every file whose times overlap it is cut to one widening time span
around the incident (`logs_common.grow_fleet`), shown file by file and written to
`/app/logs/`, and the questions read all the records in the stated time order
(`logs_common.ORDER_RULE`). Windows that cannot come within 5% are dropped and counted in
`gates` and `rejections` (`context_unfit`, `context_budget`).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from rlforge.tasks.generators.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.generators.logs_common import (ERROR_LEVELS, FAILURE_LEVELS, PATTERN_RULE, Record,
                                       ShownRecord, WindowStats, error_burst_start, fmt_time,
                                       ids_in, longest_gap, incident_group, minute_of_peak, parse_shown,
                                       pattern_regex, render, service_name, shown_time,
                                       templates_of, window_records, window_stats,
                                       ORDER_RULE, TOKENIZER_NOTE, SourceLines, approx_tokens,
                                       grow_fleet,
                                       grow_window, parse_token_budgets, record_time,
                                       render_sections, time_order)
from rlforge.tasks.registry import Generator, register
from rlforge.verify import shortcuts
from rlforge.tasks.spec import BuildContext, SourceRef, TaskSpec, stable_sample

KINDS = ("burst_start", "first_failing_component", "first_failing_host",
         "dominant_error_pattern", "peak_error_minute", "anomalous_ids", "precursor_pattern",
         "new_patterns", "longest_gap", "template_count")
COUNTING = ("template_count",)
MAX_OPTIONS = 12
RESERVE_TOKENS = 1200  # prompt around a long window: template, question, options
BURST_SIZES = (3, 4, 5)  # a burst's least records, tried in this order
BURST = "a burst is a run of at least {size} records {sev}, each logged at most 60 seconds after " \
        "the one before (records at other levels in between do not break it; a record " \
        "logged before the one before it, out of time order, is within 60 seconds of it)"


@dataclass
class Question:
    text: str
    answer_ref: dict
    answer_text: str
    candidates: list[str]
    params: dict = field(default_factory=dict)  # what the stated rule needs besides the window


def _severity(records) -> tuple[tuple[str, ...], str]:
    """The levels a window's failure questions are about, and how the instruction names
    them: ERROR/FATAL where the window has at least 3 such records, else WARN and up."""
    if sum(r.level in ERROR_LEVELS for r in records) >= 3:
        return ERROR_LEVELS, "at level ERROR or FATAL"
    return FAILURE_LEVELS, "at level WARN, ERROR or FATAL"


def _first(records: list[Record], levels) -> Record | None:
    return next((r for r in records if r.level in levels), None)


def _levels(records):
    return [(r.ts, r.level) for r in records]


def _patterns(con, records) -> dict[str, str]:
    """template id -> its pattern text, for the records' usable templates."""
    tpl = templates_of(con, {r.template_id for r in records if r.template_id})
    return {t: p for t, p in tpl.items() if p and len(p.replace("<*>", "").strip()) >= 4}


def _distinct_options(options: list[str]) -> bool:
    """Options the answer checker can tell apart (it ignores case, spacing, end punctuation)."""
    from rlforge.verify.standalone.answers import normalize

    return len({normalize(o) for o in options}) == len(options)


def q_burst_start(records, con, rng):
    levels, sev = _severity(records)
    first = next((j for j, r in enumerate(records) if r.level in levels), None)
    # The smallest burst size whose first burst does not start at the first failure (whose
    # time would answer it); failing that, size 3, which the shortcut battery then refuses.
    found = [(size, i) for size in BURST_SIZES
             if (i := error_burst_start(_levels(records), size=size, levels=levels)) is not None]
    if not found:
        return None
    size, i = next(((size, i) for size, i in found if i != first), found[0])
    when = records[i].ts.strftime("%Y-%m-%d %H:%M:%S")
    times = sorted({r.ts.strftime("%Y-%m-%d %H:%M:%S") for r in records if r.ts is not None})
    return Question(f"Here {BURST.format(size=size, sev=sev)}. When did the first burst of "
                    "this window start? Answer with the time of its first record, in UTC as "
                    "`YYYY-MM-DD HH:MM:SS`.",
                    {"answer_kind": "timestamp", "answer": when, "tolerance_sec": 1}, when, times,
                    {"levels": list(levels), "size": size})


def _first_failing(records, attr: str):
    levels, sev = _severity(records)
    failing = {getattr(r, attr) for r in records if r.level in levels and getattr(r, attr)}
    if len(failing) < 2 and levels == ERROR_LEVELS:
        # One candidate fails at ERROR ("the only one that failed" answers it): ask about
        # WARN and up, where several may.
        levels, sev = FAILURE_LEVELS, "at level WARN, ERROR or FATAL"
    first = _first(records, levels)
    values = sorted({getattr(r, attr) for r in records if getattr(r, attr)})
    value = getattr(first, attr) if first is not None else None
    if not value or len(values) < 2 or value != value.strip() or " " in value:
        return None
    return Question(f"Which {attr} failed first, that is, logged the first record {sev}?",
                    {"answer_kind": "exact", "answer": value}, value, values,
                    {"levels": list(levels)})


def q_first_failing_component(records, con, rng):
    return _first_failing(records, "component")


def q_first_failing_host(records, con, rng):
    return _first_failing(records, "host")


def _label(options: list[str], answer: str) -> dict:
    return {"answer_kind": "label", "answer": answer, "labels": options}


def _option_list(options: list[str]) -> str:
    return "\n".join(f"- `{o}`" for o in options)


def q_dominant_error_pattern(records, con, rng):
    levels, sev = _severity(records)
    errors = [r for r in records if r.level in levels and r.template_id]
    pats = _patterns(con, errors)
    counts = Counter(r.template_id for r in errors if r.template_id in pats)
    top = counts.most_common(MAX_OPTIONS)
    if len(top) < 2 or top[0][1] == top[1][1] or top[0][1] < 2:
        return None
    options = sorted(pats[t] for t, _ in top)
    if not _distinct_options(options):
        return None
    answer = pats[top[0][0]]
    return Question(f"Which of these patterns do the most records {sev} match? "
                    f"{PATTERN_RULE} Answer with one pattern exactly as listed.\n\n"
                    + _option_list(options), _label(options, answer), answer, options,
                    {"patterns": options, "levels": list(levels)})


def q_peak_error_minute(records, con, rng):
    levels, sev = _severity(records)
    if any(r.ts is None for r in records if r.level in levels):
        return None
    minute = minute_of_peak(_levels(records), levels=levels)
    if minute is None:
        return None
    minutes = sorted({r.ts.strftime("%Y-%m-%d %H:%M") for r in records if r.ts is not None})
    return Question(f"In which minute were the most records {sev} logged? "
                    "Answer in UTC as `YYYY-MM-DD HH:MM`.",
                    {"answer_kind": "timestamp", "answer": minute, "tolerance_sec": 0},
                    minute, minutes, {"levels": list(levels)})


def q_anomalous_ids(records, con, rng):
    seen: dict[str, bool] = {}
    for r in records:
        for i in ids_in(r.message.split("\n", 1)[0]):
            seen[i] = seen.get(i, False) or r.level in FAILURE_LEVELS
    bad = sorted(i for i, b in seen.items() if b)
    if len(seen) < 3 or not 1 <= len(bad) <= 3 or len(bad) == len(seen):
        return None
    return Question("Follow each id (request, block or similar ids in the first line of the "
                    "messages) through its records: which ids show the failure, that is, have at "
                    "least one record at level WARN, ERROR or FATAL? List every such id, "
                    "separated by commas.", {"answer_kind": "set", "answer": bad},
                    ", ".join(bad), sorted(seen), {"ids": sorted(seen)})


def _first_seen(records, pats) -> dict[str, int]:
    first: dict[str, int] = {}
    for i, r in enumerate(records):
        if r.template_id in pats:
            first.setdefault(r.template_id, i)
    return first


def q_precursor_pattern(records, con, rng):
    levels, sev = _severity(records)
    start = next((i for i, r in enumerate(records) if r.level in levels), None)
    if start is None or start < 10:
        return None
    pats = _patterns(con, records[:start])
    first = {t: i for t, i in _first_seen(records, pats).items() if i < start}
    if len(first) < 3:
        return None
    latest = max(first, key=first.get)
    if first[latest] < len(records) // 10:  # it is there from the start: no precursor
        return None
    # Distractors that look like precursors: the patterns first seen nearest before it.
    others = sorted((t for t in first if t != latest), key=lambda t: (-first[t], t))
    options = sorted([pats[latest]] + [pats[t] for t in others[:MAX_OPTIONS - 1]])
    if not _distinct_options(options):
        return None
    return Question(f"Which of these patterns appeared last before the first record {sev}? "
                    "For each pattern take the first record of the window that matches it; "
                    "among the patterns whose first match comes before that record, name the "
                    f"one whose first match comes latest. {PATTERN_RULE} Answer with one "
                    "pattern exactly as listed.\n\n" + _option_list(options),
                    _label(options, pats[latest]), pats[latest], options,
                    {"patterns": options, "levels": list(levels)})


def q_new_patterns(records, con, rng):
    half = len(records) // 2
    pats = {t: p for t, p in _patterns(con, records).items() if not set(p) & set(",;\n")}
    before = {r.template_id for r in records[:half]}
    after = {r.template_id for r in records[half:]}
    new = sorted(pats[t] for t in after - before if t in pats)
    old = sorted(pats[t] for t in before if t in pats)
    if not 1 <= len(new) <= 4 or len(old) < 2:
        return None
    rng.shuffle(old)
    options = sorted(new + old[:max(2, MAX_OPTIONS - len(new))])
    if not _distinct_options(options):
        return None
    return Question(f"Split the window into two parts: part 1 is records 1-{half}, part 2 is "
                    f"records {half + 1}-{len(records)} (counting records, not lines). Which "
                    "of these patterns match at least one record of part 2 and no record of part "
                    f"1? {PATTERN_RULE} List every such pattern exactly as written, one per "
                    "line.\n\n" + _option_list(options),
                    {"answer_kind": "set", "answer": new}, "\n".join(new), options,
                    {"patterns": options, "half": half})


def q_longest_gap(records, con, rng):
    times = [r.ts for r in records]
    if any(t is None for t in times):
        return None
    i = longest_gap([(t, None) for t in times])
    if i is None:
        return None
    when = times[i].strftime("%Y-%m-%d %H:%M:%S")
    return Question("Where is the longest silence in this window? Find the two consecutive "
                    "records (in the order shown) with the longest time between them and answer "
                    "with the time of the earlier one, in UTC as `YYYY-MM-DD HH:MM:SS`. A record "
                    "logged before the one shown above it (out of time order) makes a negative "
                    "gap, never the longest.",
                    {"answer_kind": "timestamp", "answer": when, "tolerance_sec": 0}, when,
                    sorted({t.strftime("%Y-%m-%d %H:%M:%S") for t in times}))


def q_template_count(records, con, rng):
    pats = _patterns(con, records)
    counts = Counter(r.template_id for r in records if r.template_id in pats)
    choices = sorted(t for t, n in counts.items() if 2 <= n < len(records))
    if len(counts) < 2 or not choices:
        return None
    rng.shuffle(choices)
    shown = render(records)
    asked = []
    for tid in choices:  # a pattern a literal grep of its pieces miscounts, if there is one
        n = counts[tid]
        asked.append(Question(
            f"How many records in this window match the pattern `{pats[tid]}`? "
            f"{PATTERN_RULE} Count records, not lines.",
            {"answer_kind": "numeric", "answer": n, "abs_tol": 0}, str(n),
            [str(x) for x in range(max(0, n - 5), n + 6)], {"patterns": [pats[tid]]}))
        q = asked[-1]
        if not shortcuts.solved_by(shortcuts.view("template_count", q.text, shown), q.answer_ref):
            return q
    return asked[0]  # every one falls to a shortcut: the battery refuses it, with the reason


# --- the stated rule, applied to the window as shown -----------------------------------

def _matches(pattern: str, shown: list[ShownRecord]) -> list[bool]:
    rx = pattern_regex(pattern)
    return [rx.fullmatch(r.message) is not None for r in shown]


def stated_answer(kind: str, shown: list[ShownRecord], params: dict):
    """The answer of a question by the instruction's words alone, from the shown window."""
    levels = [(shown_time(r), r.level.lower()) for r in shown]
    sev = tuple(params.get("levels", ERROR_LEVELS))
    if kind == "burst_start":
        i = error_burst_start(levels, size=params.get("size", 3), levels=sev)
        return None if i is None else levels[i][0].strftime("%Y-%m-%d %H:%M:%S")
    if kind in ("first_failing_component", "first_failing_host"):
        r = next((r for r in shown if r.level.lower() in sev), None)
        return None if r is None else (r.component if kind.endswith("component") else r.host)
    if kind == "peak_error_minute":
        return minute_of_peak(levels, levels=sev)
    if kind == "longest_gap":
        i = longest_gap(levels)
        return None if i is None else levels[i][0].strftime("%Y-%m-%d %H:%M:%S")
    if kind == "anomalous_ids":
        bad = {i for r in shown if r.level.lower() in FAILURE_LEVELS for i in params["ids"]
               if i in ids_in(r.message)}
        return sorted(bad)
    errors = [r.level.lower() in sev for r in shown]
    hits = {p: _matches(p, shown) for p in params["patterns"]}
    if kind == "template_count":
        return sum(hits[params["patterns"][0]])
    if kind == "dominant_error_pattern":
        counts = sorted(((sum(h and e for h, e in zip(m, errors)), p) for p, m in hits.items()),
                        reverse=True)
        return None if counts[0][0] == counts[1][0] else counts[0][1]
    if kind == "precursor_pattern":
        start = errors.index(True)
        first = {p: m.index(True) for p, m in hits.items() if True in m[:start]}
        if not first:
            return None
        latest = max(first.values())
        found = [p for p, i in first.items() if i == latest]
        return found[0] if len(found) == 1 else None
    if kind == "new_patterns":
        half = params["half"]
        return sorted(p for p, m in hits.items() if any(m[half:]) and not any(m[:half]))
    raise ValueError(f"no stated rule for {kind!r}")


def rule_disagreement(kind: str, text: str, q: Question) -> str | None:
    """Why the stated rule's answer differs from the reference (None when they agree)."""
    try:
        got = stated_answer(kind, parse_shown(text), q.params)
    except ValueError as exc:
        return f"stated rule: the window does not read as described ({exc})"
    want = q.answer_ref["answer"]
    if isinstance(want, list):
        want = sorted(want)
    if got != want:
        return f"stated rule disagrees ({kind}): the rule gives {got!r}, the reference {want!r}"
    return None


def parse_families(spec) -> dict[str, float]:
    """Family weights from a dict or `a=2,b=1` text; a family not named gets weight 0 when
    some are named, else every family weighs 1."""
    if spec is None:
        return {k: 1.0 for k in KINDS}
    if isinstance(spec, str):
        named: dict[str, Any] = {}
        for part in (p.strip() for p in spec.split(",")):
            if part:
                name, _, weight = part.partition("=")
                named[name] = weight if weight else 1
        spec = named
    if isinstance(spec, (list, tuple)):
        spec = {k: 1 for k in spec}
    unknown = set(spec) - set(KINDS)
    if unknown:
        from rlforge.errors import UserError

        raise UserError(f"unknown question families {', '.join(sorted(unknown))}; valid: "
                        f"{', '.join(KINDS)}")
    return {k: float(spec.get(k, 0)) for k in KINDS}


def field_support(con) -> dict[str, str]:
    """Families the ingested fields cannot support, with the reason (for `--list`)."""
    n_ts, hosts, comps, n_fail = con.execute("""
        SELECT count(ts), count(DISTINCT host), count(DISTINCT component),
               count(*) FILTER (WHERE level IN ('warn', 'error', 'fatal'))
        FROM log_lines""").fetchall()[0]
    skip = {}
    if not n_fail:
        for k in ("burst_start", "first_failing_component", "first_failing_host",
                  "dominant_error_pattern", "peak_error_minute", "anomalous_ids",
                  "precursor_pattern"):
            skip[k] = "no record is at level WARN, ERROR or FATAL"
    if not n_ts:
        for k in ("burst_start", "peak_error_minute", "longest_gap"):
            skip.setdefault(k, "no record has a time")
    if hosts < 2:
        skip.setdefault("first_failing_host", "fewer than two hosts")
    if comps < 2:
        skip.setdefault("first_failing_component", "fewer than two components")
    return skip


@register("logs.diagnose", 3, "Answer an incident-diagnosis question about a window of log "
          "lines (burst start, first failure, dominant or precursor pattern, peak minute, "
          "failing ids, new patterns, counts); answers computed in DuckDB and re-derived by the "
          "stated rule.", verifier="answer")
class LogsDiagnose(Generator):
    sources = ("log_records",)

    def __init__(self, window: int = 80, kinds=KINDS, families=None,
                 max_count_share: float = 0.3, context_tokens=None,
                 max_family_share: float = 0.25):
        self.window = int(window)
        self.budgets = parse_token_budgets(context_tokens)
        weights = parse_families(families)
        self.weights = {k: w for k, w in weights.items() if w > 0 and k in kinds}
        self.max_count_share = float(max_count_share)
        self.max_family_share = float(max_family_share)
        self._caps: dict[str, float] = {}
        self._fitting: set[str] = set()  # families that fitted a window of this build
        self.rejections: list[dict[str, str]] = []
        self.gates: Counter = Counter()
        self._source: SourceLines | None = None
        # the chance-bounded rules: tasks each answered, per (family, rule), and the tasks
        # a blind pick would have answered, per family, over the tasks emitted so far
        self._rule_hits: Counter = Counter()
        self._chance: defaultdict[str, float] = defaultdict(float)
        self._asked: tuple[str, Question, float, list[str]] | None = None

    def _candidates(self, con) -> list[WindowStats]:
        return [w for w in window_stats(con, self.window)
                if w.n_failures > 0 or w.n_templates >= 3]

    def available(self, con) -> int:
        return len(self._candidates(con))

    @staticmethod
    def _instruction(context: dict) -> str:
        from rlforge.tasks.render import Renderer

        return Renderer().render("logs.diagnose/instruction.md.j2", context)

    def skipped(self, con) -> dict[str, str]:
        """Families this database's fields cannot support, with the reason."""
        return {k: v for k, v in field_support(con).items() if k in self.weights}

    def family_caps(self, con) -> dict[str, float]:
        """The most of the tasks each family may take: `max_family_share`, or its weight's
        share among the families this database supports when that is more (a family alone,
        or weighted up by the user, is not held back); while building, never less than an
        even share of the families that have fitted a window so far."""
        supported = {k: w for k, w in self.weights.items() if k not in self.skipped(con)}
        total = sum(supported.values()) or 1.0
        return {k: max(self.max_family_share, w / total) for k, w in supported.items()}

    def specs(self, ctx: BuildContext):
        made: Counter = Counter()
        self._caps, self._fitting = self.family_caps(ctx.con), set()
        self._rule_hits, self._chance = Counter(), defaultdict(float)
        for w in stable_sample(self._candidates(ctx.con), None, ctx.seed, key=lambda w: w.key):
            budgets: list[int | None] = [*self.budgets] or [None]
            for budget in budgets:  # one task per token budget (long variants)
                if ctx.limit is not None and sum(made.values()) >= ctx.limit:
                    return
                spec = self._spec(ctx, w, made, budget)
                if spec is not None:
                    made[spec.extra_metadata["question_kind"]] += 1
                    if self._asked is not None:
                        kind, _, odds, rules = self._asked
                        self._chance[kind] += odds
                        self._rule_hits.update((kind, r) for r in rules)
                    yield spec

    def _order(self, rng, made: Counter) -> list[str]:
        """Families in the order this window tries them: furthest behind its share first;
        counting only while it stays within `max_count_share` of the tasks, every family
        within its cap (`family_caps`)."""
        total = sum(made.values())
        kinds = [k for k in self.weights if k not in COUNTING or
                 sum(made[c] for c in COUNTING) + 1 <= self.max_count_share * (total + 1)]
        # No family takes more than its cap of the tasks, at every point of the build; a
        # cap is never below an even share of the families that have fitted a window so far
        # (a log that only one family fits is not held to a quarter of its tasks).
        even = 1 / len(self._fitting) if self._fitting else 1.0
        kinds = [k for k in kinds
                 if made[k] + 1 <= max(1.0, max(self._caps.get(k, 1.0), even) * (total + 1))]
        keys = {k: (made[k] / self.weights[k], rng.random()) for k in kinds}
        return sorted(kinds, key=keys.__getitem__)

    def _ask(self, ctx: BuildContext, w: WindowStats, records: list[Record], text: str, rng,
             made: Counter):
        """The window's question: (kind, question), or None. `records` in the order the
        questions read them, `text` the window as shown (the stated rule reads that)."""
        order = self._order(rng, made)
        source = f"{w.file}:{w.first_line}-{w.last_line}"
        self._asked = None
        for kind in order:
            found, why, gate = self._fits(kind, records, ctx.con, rng, text)
            if found is not None:
                self._fitting.add(kind)
                return kind, found
            if why is not None:
                self.gates[gate] += 1
                self.rejections.append({"source": source, "reason": why})
        # A family held back by its cap that would fit: the mix is why nothing is asked.
        held = [k for k in self._caps if k not in order and k not in COUNTING
                and self._fits(k, records, ctx.con, rng, text)[0] is not None]
        self._fitting.update(held)
        if held:
            self.gates["family_cap"] += 1
            self.rejections.append({"source": source, "reason": f"family mix: {', '.join(held)} "
                                    "would fit but is at its share cap, and no other family fits"})
            return None
        self.gates["no_family_fits"] += 1
        return None

    def _fits(self, kind: str, records: list[Record], con, rng, text: str):
        """(question, None, None) when family `kind` asks a question of the window that
        agrees with its stated rule, no shortcut answers and no chance-bounded rule would
        answer more than chance with it; else (None, why, gate), or (None, None, None)
        where the window cannot support the family. A question returned is remembered
        (`_asked`) to be counted once its task is emitted."""
        found = globals()[f"q_{kind}"](records, con, rng)
        if found is None:
            return None, None, None
        why = rule_disagreement(kind, text, found)
        if why is not None:
            return None, why, "stated_rule"
        view = shortcuts.view(kind, found.text, text)
        solved = shortcuts.solved_by(view, found.answer_ref)
        if solved:
            name, guess = next(iter(solved.items()))
            return (None, f"shortcut {name} answers {kind} (it guesses {guess[:60]!r})",
                    f"shortcut:{name}")
        odds = shortcuts.chance(view)
        rules = shortcuts.rules_solving(view, found.answer_ref)
        for name in rules:
            if self._rule_hits[(kind, name)] + 1 > math.floor(self._chance[kind] + odds + 0.5):
                return (None, f"rule {name} would answer more {kind} questions than chance "
                              f"({self._rule_hits[(kind, name)] + 1} of "
                              f"{self._chance[kind] + odds:.1f} expected)", f"chance:{name}")
        self._asked = (kind, found, odds, sorted(rules))
        return found, None, None

    def _sections(self, ctx: BuildContext, w: WindowStats, budget: int | None,
                  fixed: int) -> list[tuple[str, list[Record]]] | None:
        """The files a window shows, (workspace file name, records) each: `w` alone; for a
        token budget, `w`'s file grown around it, or, when that file is too short, every
        file with times grown over a common time span (`grow_fleet`)."""
        name = f"{service_name(w.file)}.log"
        if budget is None:
            return [(name, window_records(ctx.con, w))]
        records = grow_window(ctx.con, w, budget, fixed)
        if records is not None:
            return [(name, records)]
        return grow_fleet(ctx.con, w, budget, fixed)

    def _spec(self, ctx: BuildContext, w: WindowStats, made: Counter,
              budget: int | None = None) -> TaskSpec | None:
        # A long window (token `budget`) is grown around the incident window `w` and the
        # question is asked of all of it; the prompt around it is first guessed, then
        # measured and the window grown again to fit.
        fixed, tokens = RESERVE_TOKENS, None
        for _ in range(3 if budget else 1):
            sections = self._sections(ctx, w, budget, fixed)
            if sections is None:
                self.gates["context_unfit"] += 1
                self.rejections.append({"source": f"{w.file}:{w.first_line}-{w.last_line}",
                                        "reason": f"context unfit: no window around this one "
                                                  f"comes within 5% of {budget} tokens (its own "
                                                  "records exceed it, or all the logs around "
                                                  "it fall short)"})
                return None
            records = time_order([recs for _, recs in sections], record_time)
            text = render_sections(sections)
            # The workspace files hold the records as the services wrote them where the
            # ingested files can be read again (`SourceLines`); else as the instruction shows.
            if self._source is None or self._source.con is not ctx.con:
                self._source = SourceLines(ctx.con)
            written = {n: self._source.text(recs) for n, recs in sections}
            as_written = all(t is not None for t in written.values())
            files_as_written = {n: written[n] or "" if as_written else render(recs)
                                for n, recs in sections}
            asked = self._ask(ctx, w, records, text, ctx.rng(self.name, w.key, budget), made)
            if asked is None:
                return None
            kind, q = asked
            service = service_name(w.file)
            timed = [r.ts for r in records if r.ts is not None]
            span = f"{fmt_time(min(timed, default=None))} … {fmt_time(max(timed, default=None))}"
            files = [n for n, _ in sections]
            context = {"title": f"Diagnose {service} logs: {kind.replace('_', ' ')}",
                       "service": service, "question": q.text, "window": text,
                       "n_records": len(records), "span": span,
                       "files": files if len(files) > 1 else [],
                       "services": [n.removesuffix(".log") for n in files],
                       "order_rule": ORDER_RULE, "as_written": as_written,
                       "where": "/app/logs/" if len(files) > 1 else f"/app/logs/{files[0]}",
                       "answer_hint": {"anomalous_ids": "the ids, comma-separated",
                                       "new_patterns": "the patterns, one per line"}.get(kind, "")}
            if budget is None:
                break
            tokens = approx_tokens(self._instruction(context))
            if 0.95 * budget <= tokens <= 1.05 * budget:
                break
            fixed = tokens - approx_tokens(text) + 16
        else:
            self.gates["context_budget"] += 1
            self.rejections.append({"source": f"{w.file}:{w.first_line}-{w.last_line}",
                                    "reason": f"context budget: {tokens} tokens, not within 5% "
                                              f"of {budget}"})
            return None
        if budget is None:
            group = incident_group(w, records)
        elif len(sections) == 1:
            group = f"logs-file:{w.file}"
        else:  # windows across files overlap each other: one group per day of the fleet
            group = "logs-fleet:" + (min(timed).strftime("%Y-%m-%d") if timed else w.file)
        reference = {"verifier": "answer", "submission": "/app/answer.txt", "max_chars": 1000,
                     **q.answer_ref, "stated_rule": {"kind": kind, **q.params}}
        secret = [q.answer_text] if q.answer_ref["answer_kind"] in ("exact", "set", "label") \
            and len(q.answer_text) >= 3 else []
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("log_lines", [f"{w.file}:{w.first_line}-{w.last_line}"],
                             [hashlib.sha256(text.encode()).hexdigest()[:32]]),
            instruction_template="instruction.md",
            context=context,
            reference=reference, solution_files={"solve.sh": solve_script(q.answer_text)},
            verifier="answer", group_key=group,
            dedup_text=(q.text + "\n" + render(window_records(ctx.con, w)))[:4000],
            time=min(timed, default=None),
            workspace={f"logs/{n}": text.encode() for n, text in files_as_written.items()},
            null=null_submission(),
            adversarial=adversarial_answers(options=q.candidates[:200], candidates=q.candidates),
            category="ops-logs", difficulty="medium", keywords=["logs", "diagnosis", kind],
            secret_strings=secret, leak_allowed=[text, *(f"`{c}`" for c in q.candidates)],
            evidence_in_workspace=True, agent_timeout_sec=120.0, verifier_timeout_sec=30.0,
            memory_mb=512, extra_metadata={
                "question_kind": kind, "window_records": len(records), "service": service,
                "incident_lines": [w.first_line, w.last_line], "files": files,
                "workspace_lines": "as written" if as_written else "as shown",
                **({} if budget is None else {
                    "context_budget": budget, "tokenizer": TOKENIZER_NOTE,
                    "context_tokens": tokens})})
