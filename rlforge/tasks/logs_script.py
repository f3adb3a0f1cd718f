"""`logs.script`: write a program that prints a stated fact about the logs in a directory.

The policy writes `/app/solution.sh` (or `solution.py`) taking a logs directory as its only
argument. The verifier runs it in the sandbox on the visible window (`/app/logs`) and on a
held-back window of the same file that the policy never sees, whose answer differs: a
program that prints a remembered number fails. Expected answers come from DuckDB.

Facts: when the first record at level ERROR or FATAL was logged; the minute with the most
such records; which component logged the most of them; and, counting (at most
`max_count_share` of the tasks): how many records are at level ERROR or FATAL, how many
match a pattern (stated by `logs_common.PATTERN_RULE`). Every expected answer is computed
again from the windows as written, by the rule the statement gives; a fact whose two
answers differ is not asked (`rejections`).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from rlforge.tasks.logs_common import (ERROR_LEVELS, PATTERN_RULE, Record, WindowStats,
                                       incident_group, minute_of_peak, parse_shown, pattern_regex,
                                       render, service_name, shown_time, templates_of,
                                       window_records, window_stats)
from rlforge.tasks.registry import register
from rlforge.tasks.spec import BuildContext, SourceRef, Submission, TaskSpec, stable_sample

FACTS = ("first_error_time", "peak_error_minute", "top_error_component", "error_count",
         "template_count")
COUNTING = ("error_count", "template_count")
RECORD_LINE = r"^(\S+) (\S+) (\S+) (\S+?): (.*)$"

GOLD = {
    "error_count": '''
count = sum(1 for level, _, _ in records if level in ("ERROR", "FATAL"))
print(count)
''',
    "template_count": '''
pattern = re.compile(TEMPLATE_REGEX, re.S)
print(sum(1 for _, _, message in records if pattern.fullmatch(message)))
''',
    "top_error_component": '''
counts = collections.Counter(c for level, c, _ in records if level in ("ERROR", "FATAL") and c != "-")
print(counts.most_common(1)[0][0] if counts else "")
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
import collections, os, re, sys

LINE = re.compile(r"%s")
records, times = [], []
root = sys.argv[1] if len(sys.argv) > 1 else "/app/logs"
for name in sorted(os.listdir(root)):
    with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\\n")
            if line.startswith("\\t"):
                continue  # continuation of the record above
            m = LINE.match(line)
            if m:
                records.append((m.group(3), m.group(4), m.group(5)))
                times.append((m.group(1), m.group(3)))
''' % RECORD_LINE


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


def fact_value(fact: str, records: list[Record], template: str | None = None):
    """The expected answer for one window, computed from the stored records."""
    if fact == "error_count":
        return sum(1 for r in records if r.level in ERROR_LEVELS)
    if fact == "template_count":
        rx = pattern_regex(template)
        return sum(1 for r in records if rx.fullmatch(r.message.split("\n", 1)[0]))
    if fact in ("first_error_time", "peak_error_minute"):
        errors = [r.ts for r in records if r.level in ERROR_LEVELS]
        if not errors or any(t is None for t in errors):
            return None
        if fact == "first_error_time":
            return min(errors).strftime("%Y-%m-%d %H:%M:%S")
        return minute_of_peak([(r.ts, r.level) for r in records])
    counts = Counter((r.component or "").replace(" ", "_") for r in records
                     if r.level in ERROR_LEVELS and r.component)
    top = counts.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None  # no errors, or a tie: no single right answer
    return top[0][0]


def stated_fact(fact: str, text: str, template: str | None = None):
    """The fact by the statement's words alone, from a window as written."""
    shown = parse_shown(text)
    errors = [r for r in shown if r.level in ("ERROR", "FATAL")]
    if fact == "error_count":
        return len(errors)
    if fact == "template_count":
        rx = pattern_regex(template)
        return sum(1 for r in shown if rx.fullmatch(r.message))
    if fact == "first_error_time":
        times = [shown_time(r) for r in errors]
        return min(times).strftime("%Y-%m-%d %H:%M:%S") if times and None not in times else None
    if fact == "peak_error_minute":
        return minute_of_peak([(shown_time(r), r.level.lower()) for r in shown])
    top = Counter(r.component for r in errors if r.component != "-").most_common(2)
    return None if not top or len(top) == 2 and top[0][1] == top[1][1] else top[0][0]


@register("logs.script", 2, "Write a script that prints a fact about a logs directory; run "
          "in the sandbox on the visible logs and on a held-back variant.", verifier="script")
class LogsScript:
    def __init__(self, window: int = 120, facts=FACTS, max_count_share: float = 0.3):
        self.window = int(window)
        self.facts = tuple(f for f in facts if f in FACTS)
        self.max_count_share = float(max_count_share)
        self.rejections: list[dict[str, str]] = []
        self._source = ""

    def available(self, con) -> int:
        by_run: Counter = Counter(w.ingest_run for w in window_stats(con, self.window))
        return sum(n - 1 for n in by_run.values() if n >= 2)

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

    def _pick(self, ctx, rng, seen: list[Record], held: list[Record], made: Counter):
        total = sum(made.values())
        counting_ok = sum(made[c] for c in COUNTING) + 1 <= self.max_count_share * (total + 1)
        facts = [f for f in self.facts if counting_ok or f not in COUNTING]
        keys = {f: (made[f], rng.random()) for f in facts}  # the least asked first
        facts.sort(key=keys.get)
        texts = (render(seen), render(held))
        for fact in facts:
            template = None
            if fact == "template_count":
                shared = sorted({r.template_id for r in seen if r.template_id} &
                                {r.template_id for r in held if r.template_id})
                tpl = templates_of(ctx.con, set(shared))
                usable = [t for t in shared if tpl.get(t) and "<*>" in tpl[t] and
                          len(tpl[t].replace("<*>", "").strip()) >= 4]
                if not usable:
                    continue
                tid = rng.choice(usable)
                template = tpl[tid]
                # The stored template ids and the template's regex must agree on both
                # windows, or the task would grade against a different count than it states.
                by_id = [sum(1 for r in rs if r.template_id == tid) for rs in (seen, held)]
                by_rule = [fact_value(fact, rs, template) for rs in (seen, held)]
                if by_id != by_rule:
                    self.rejections.append({"source": self._source, "reason": (
                        f"stated rule disagrees ({fact}): the rule gives {by_rule!r}, the "
                        f"template ids {by_id!r}")})
                    continue
            a, b = fact_value(fact, seen, template), fact_value(fact, held, template)
            if a is None or b is None or a == b or a == 0 and fact != "template_count":
                continue
            stated = [stated_fact(fact, t, template) for t in texts]
            if stated != [a, b]:
                self.rejections.append({"source": self._source,
                                        "reason": f"stated rule disagrees ({fact}): the rule "
                                                  f"gives {stated!r}, the reference {[a, b]!r}"})
                continue
            return fact, template, a, b
        return None

    def _spec(self, ctx: BuildContext, visible: WindowStats, hidden: WindowStats,
              made: Counter) -> TaskSpec | None:
        seen, held = window_records(ctx.con, visible), window_records(ctx.con, hidden)
        rng = ctx.rng(self.name, visible.key)
        self._source = f"{visible.file}:{visible.first_line}-{hidden.last_line}"
        picked = self._pick(ctx, rng, seen, held, made)
        if picked is None:
            return None
        fact, template, a, b = picked
        service = service_name(visible.file)
        seen_text, held_text = render(seen), render(held)
        kind = "numeric" if fact in COUNTING else "exact"

        def ref(value):
            if fact in ("first_error_time", "peak_error_minute"):
                return {"answer_kind": "timestamp", "answer": value, "tolerance_sec": 0}
            return ({"answer_kind": "numeric", "answer": value, "abs_tol": 0} if kind == "numeric"
                    else {"answer_kind": "exact", "answer": value})

        statement = {
            "error_count": "the number of records at level ERROR or FATAL",
            "template_count": f"the number of records that match the pattern `{template}` "
                              f"({PATTERN_RULE})",
            "first_error_time": "the time of the earliest record at level ERROR or FATAL, in "
                                "UTC as `YYYY-MM-DD HH:MM:SS`",
            "peak_error_minute": "the minute with the most records at level ERROR or FATAL, "
                                 "in UTC as `YYYY-MM-DD HH:MM`",
            "top_error_component": "the component that logged the most records at level ERROR "
                                   "or FATAL",
        }[fact]
        gold = GOLD_HEAD + (f"TEMPLATE_REGEX = {pattern_regex(template).pattern!r}\n" if template else "") \
            + GOLD[fact]
        log_name = f"logs/{service}.log"
        reference = {
            "verifier": "script", "workspace": "/app", "programs": ["solution.sh", "solution.py"],
            "timeout_sec": 30,
            "cases": [{"name": "visible", "path": "/app/logs", "answer": ref(a)},
                      {"name": "held-back", "data_dir": "variant/logs", "answer": ref(b)}],
        }
        hard = f"#!/bin/bash\necho {a}\n"
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("log_lines", [f"{visible.file}:{visible.first_line}-{visible.last_line}",
                                           f"{hidden.file}:{hidden.first_line}-{hidden.last_line}"],
                             [hashlib.sha256(seen_text.encode()).hexdigest()[:32],
                              hashlib.sha256(held_text.encode()).hexdigest()[:32]]),
            instruction_template="instruction.md",
            context={"title": f"Script a log query for {service}: {fact.replace('_', ' ')}",
                     "service": service, "statement": statement, "log_name": log_name,
                     "n_records": len(seen), "numeric": kind == "numeric",
                     "preview": "".join(seen_text.splitlines(keepends=True)[:8])},
            reference=reference,
            solution_files={"solve.sh": (f"#!/bin/bash\n# Gold solution: a program that computes the "
                                         f"fact from the logs it is given.\ncat > /app/solution.py "
                                         f"<<'RLFORGE_EOF'\n{gold}RLFORGE_EOF\n").encode()},
            verifier="script", kind="terminal", group_key=incident_group(visible, seen),
            dedup_text=seen_text[:4000], time=seen[0].ts if seen else None,
            workspace={log_name: seen_text.encode()},
            tests_data={f"variant/{log_name}": held_text.encode()},
            null=Submission("null", {}), evidence_in_workspace=True,
            adversarial=[
                Submission("hard_coded", {"solution.sh": hard.encode()},
                           "prints the visible answer whatever it is given"),
                Submission("silent_exit", {"solution.sh": b"#!/bin/bash\nexit 0\n"},
                           "exits 0 and prints nothing"),
                Submission("edits_tests", {"solution.sh": (
                    "#!/bin/bash\n# tamper with the verifier's data, then answer from memory\n"
                    "for f in /tests/reference.json /tests/variant/" + log_name + "; do\n"
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
            ],
            category="ops-logs", difficulty="medium", keywords=["logs", "scripting", fact],
            agent_timeout_sec=600.0, verifier_timeout_sec=120.0, memory_mb=1024,
            extra_metadata={"fact": fact, "service": service},
        )
