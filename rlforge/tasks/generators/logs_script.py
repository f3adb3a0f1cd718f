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

import hashlib
import re
from collections import Counter

from rlforge.tasks.generators.logs_common import (WindowStats, incident_group, pattern_regex, render,
                                                  service_name, span_sections, templates_of,
                                                  window_stats)
from rlforge.tasks.generators.logs_script_facts import (BY_PAIR, BY_TEMPLATE, COUNTING, FACTS,
                                                        ANY_LEVEL, NUMERIC, ORDINAL, TIMED,
                                                        directory_text, fact_value, slot_regex,
                                                        slot_values, stated_fact, statement_of)
from rlforge.tasks.generators.logs_script_heldback import PARTIAL_READERS, held_back_variants
from rlforge.tasks.generators.logs_script_programs import GOLD, GOLD_HEAD, adversarial
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.spec import BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify import shortcuts_script as script_shortcuts


#: How many candidate joins of a window the script battery screens before one is taken.
JOINS_SCREENED = 20
_SPACE = re.compile(r"\s")


def _shared_templates(con, seen, held) -> dict[str, str]:
    """The parametrised templates (id -> pattern, in id order) both windows' records have,
    each with at least four fixed characters."""
    shared = sorted({r.template_id for r in seen if r.template_id} &
                    {r.template_id for r in held if r.template_id})
    tpl = templates_of(con, set(shared))
    return {t: tpl[t] for t in shared if tpl.get(t) and "<*>" in tpl[t] and
            len(tpl[t].replace("<*>", "").strip()) >= 4}


def _ids_agree(template_id: str, pattern: str, seen, held) -> bool:
    """Whether the stored template ids and the pattern's regex pick the same records in both
    windows: else a task would grade against another count than it states."""
    by_id = [sum(1 for r in rs if r.template_id == template_id) for rs in (seen, held)]
    return [fact_value("template_count", rs, pattern) for rs in (seen, held)] == by_id


@register("logs.script", 5, "Write a script that prints a fact about a logs directory; run "
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
            template, slot, other = None, 1, None
            if fact in BY_TEMPLATE:
                template, slot, why = self._template(ctx, rng, fact, seen, held, visible)
            elif fact in BY_PAIR:
                template, slot, other, why = self._pair(ctx, rng, seen, held, visible)
            if (fact in BY_TEMPLATE + BY_PAIR) and template is None:
                skipped[fact] = why
                continue
            a, b = (fact_value(fact, rs, template, slot, other) for rs in (seen, held))
            if a is None or b is None or a == b or a == 0 and fact not in BY_TEMPLATE + BY_PAIR:
                skipped[fact] = ("no answer in a window" if a is None or b is None else
                                 "the visible and held-back answers are equal" if a == b else
                                 "none in the visible window")
                continue
            cheap: dict = {}
            for files, differs in held_back_variants(fact, template, held_secs, b, other, slot):
                try:
                    stated = [stated_fact(fact, directory_text(d), template, slot, other)
                              for d in (visible, files)]
                    blind = stated_fact(fact, directory_text(files, plain_only=True), template,
                                        slot, other)
                except ValueError as exc:
                    self._reject(f"stated rule: the logs do not read as described ({exc})")
                    break
                if stated != [a, b]:
                    self._reject(f"stated rule disagrees ({fact}): the rule gives {stated!r}, "
                                 f"the reference {[a, b]!r}")
                    break
                if blind == b:
                    continue
                cases = [(visible, a), (files, b)]
                cheap = self._solved(fact, template, slot, cases, other) or \
                    self._partial_reader(fact, template, slot, cases, other)
                if not cheap:
                    # the window is a task: what it could not ask first is no drop
                    del self.rejections[rejected_before:]
                    return fact, template, slot, other, a, b, files, differs
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

    def _solved(self, fact: str, template: str | None, slot: int, cases,
                other: tuple[str, int] | None = None) -> dict:
        """The script shortcuts that print every case's answer (none where not screened)."""
        if fact not in NUMERIC or not self.screen_shortcuts:
            return {}
        return script_shortcuts.solved(fact, template, statement_of(fact, template, slot, other),
                                       cases, slot, other)

    def _partial_reader(self, fact: str, template: str | None, slot: int, cases,
                        other: tuple[str, int] | None = None) -> dict:
        """The readers of part of a directory (`PARTIAL_READERS`) whose answer by the
        stated rule is every case's (none where not screened)."""
        if not self.screen_shortcuts:
            return {}
        out = {}
        for name, reader in PARTIAL_READERS.items():
            try:
                got = [reader(fact, files, template, slot, other) for files, _ in cases]
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
        tpl = _shared_templates(ctx.con, seen, held)
        usable = list(tpl)
        if not usable:
            return None, 0, "no parametrised template in both windows"
        rng.shuffle(usable)
        held_files = {"held.log": render(held).encode()}
        fits = []
        for tid in usable:
            if not _ids_agree(tid, tpl[tid], seen, held):
                continue
            slots = range(1, min(tpl[tid].count("<*>"), len(ORDINAL) - 1) + 1) \
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

    def _pair(self, ctx, rng, seen, held, visible):
        """The two patterns of a join and the `<*>` of each: templates of both windows whose
        stored ids agree with their stated rule, whose `<*>` stands for single tokens (ids,
        not times or phrases), sharing at least one text of four or more characters in each
        window, where the first's texts the second
        never names are at least one and differ in number between the windows; one no script
        shortcut answers on the windows as shown where there is one (else the first, which
        the held-back check then judges). (None, 0, None, why) when there is none."""
        tpl = {t: p for t, p in _shared_templates(ctx.con, seen, held).items()
               if _ids_agree(t, p, seen, held)}
        messages = [[r.message.split("\n", 1)[0] for r in rs] for rs in (seen, held)]
        texts = {}  # (template id, <*>) -> its distinct texts in each window
        for tid, pattern in tpl.items():
            per_window = [slot_values(pattern, m) for m in messages]
            for slot, both in enumerate(zip(*per_window), start=1):
                if slot < len(ORDINAL) and min(map(len, both)) >= 2 and \
                        not any(_SPACE.search(v) for w in both for v in w):  # ids are tokens
                    texts[(tid, slot)] = both
        joins = []
        for (first, i), a in texts.items():
            for (second, j), b in texts.items():
                shared = [a[w] & b[w] for w in (0, 1)]
                answers = [len(a[w] - b[w]) for w in (0, 1)]
                if first != second and all(any(len(v) >= 4 for v in s) for s in shared) and \
                        min(answers) >= 1 and answers[0] != answers[1]:
                    joins.append((first, i, second, j, answers))
        if not joins:
            return None, 0, None, ("no two templates of both windows share an id whose join "
                                   "differs between the windows")
        rng.shuffle(joins)
        held_files = {"held.log": render(held).encode()}
        for first, i, second, j, answers in joins[:JOINS_SCREENED]:
            other = (tpl[second], j)
            if not self._solved("unmatched_ids", tpl[first], i,
                                [(visible, answers[0]), (held_files, answers[1])], other):
                return tpl[first], i, other, ""
        first, i, second, j, _ = joins[0]
        return tpl[first], i, (tpl[second], j), ""

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
        fact, template, slot, other, a, b, held_files, differs = picked
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

        statement = statement_of(fact, template, slot, other)
        regex = None if template is None else slot_regex(template, slot) \
            if fact in ("distinct_values",) + BY_PAIR else pattern_regex(template)
        gold = GOLD_HEAD + (f"TEMPLATE_REGEX = {regex.pattern!r}\n" if regex else "") \
            + (f"OTHER_REGEX = {slot_regex(*other).pattern!r}\n" if other else "") + GOLD[fact]
        reference = {
            "verifier": "script", "workspace": "/app", "programs": ["solution.sh", "solution.py"],
            "timeout_sec": 30,
            "cases": [{"name": "visible", "path": "/app/logs", "answer": ref(a)},
                      {"name": "held-back", "data_dir": "variant/logs", "answer": ref(b)}],
        }
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
            adversarial=adversarial(fact, template, a),
            category="ops-logs", difficulty="medium", keywords=["logs", "scripting", fact],
            agent_timeout_sec=600.0, verifier_timeout_sec=120.0, memory_mb=1024,
            extra_metadata={"fact": fact, "service": service, "files": list(seen_texts),
                            "held_back": differs, **({"pattern": template} if template else {}),
                            **({"slot": slot} if fact in ("distinct_values",) + BY_PAIR else {}),
                            **({"other_pattern": other[0], "other_slot": other[1]}
                               if other else {})},
        )
