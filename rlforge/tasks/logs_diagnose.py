"""`logs.diagnose`: a window of log lines and one question whose answer DuckDB computed.

Questions, each used only where the window supports it:
- which component logged the first error (exact match);
- when the first error happened (timestamp, 1 s tolerance);
- which host logged the first failure (exact match);
- how many records match a given template (numeric, exact);
- which ids (requests, blocks, ...) have an anomalous trace — a warning or an error among
  their records (set, exact).
The window is shown in the instruction and written to `/app/logs/<service>.log`, so the
task works single-turn and for agents with a shell alike.
"""

from __future__ import annotations

import hashlib
from collections import Counter

from rlforge.tasks.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.logs_common import (ERROR_LEVELS, FAILURE_LEVELS, Record, WindowStats,
                                       fmt_time, ids_in, incident_group, render, service_name, templates_of,
                                       window_records, window_stats)
from rlforge.tasks.registry import register
from rlforge.tasks.spec import BuildContext, SourceRef, TaskSpec, stable_sample

KINDS = ("first_error_component", "first_error_time", "first_failure_host", "template_count",
         "anomalous_ids")


def _first(records: list[Record], levels) -> Record | None:
    return next((r for r in records if r.level in levels), None)


def q_first_error_component(records, con):
    first = _first(records, ERROR_LEVELS)
    comps = sorted({r.component for r in records if r.component})
    if first is None or not first.component or len(comps) < 2:
        return None
    return ("Which component logged the first record at level ERROR or FATAL?",
            {"answer_kind": "exact", "answer": first.component}, first.component, comps)


def q_first_error_time(records, con):
    first = _first(records, ERROR_LEVELS)
    if first is None or first.ts is None:
        return None
    when = first.ts.strftime("%Y-%m-%d %H:%M:%S")
    times = sorted({r.ts.strftime("%Y-%m-%d %H:%M:%S") for r in records if r.ts is not None})
    return ("When was the first record at level ERROR or FATAL logged? Answer in UTC as "
            "`YYYY-MM-DD HH:MM:SS`.",
            {"answer_kind": "timestamp", "answer": when, "tolerance_sec": 1}, when, times)


def q_first_failure_host(records, con):
    first = _first(records, FAILURE_LEVELS)
    hosts = sorted({r.host for r in records if r.host})
    if first is None or not first.host or len(hosts) < 2:
        return None
    return ("Which host logged the first failure (the first record at level WARN, ERROR or "
            "FATAL)?", {"answer_kind": "exact", "answer": first.host}, first.host, hosts)


def q_template_count(records, con, rng):
    counts = Counter(r.template_id for r in records if r.template_id)
    choices = sorted(t for t, n in counts.items() if 2 <= n < len(records))
    if len(counts) < 2 or not choices:
        return None
    tid = rng.choice(choices)
    template = templates_of(con, {tid}).get(tid)
    if not template or template.strip() in ("", "<*>"):
        return None
    n = counts[tid]
    return (f"How many records in this window match the message template "
            f"`{template}`? (`<*>` stands for any value; count records, not lines.)",
            {"answer_kind": "numeric", "answer": n, "abs_tol": 0}, str(n),
            [str(x) for x in range(max(0, n - 5), n + 6)])


def q_anomalous_ids(records, con):
    seen: dict[str, bool] = {}
    for r in records:
        for i in ids_in(r.message):
            seen[i] = seen.get(i, False) or r.level in FAILURE_LEVELS
    bad = sorted(i for i, b in seen.items() if b)
    if len(seen) < 3 or not 1 <= len(bad) <= 3 or len(bad) == len(seen):
        return None
    return ("Which ids (request, block or similar ids appearing in the messages) have an "
            "anomalous trace, that is, at least one record at level WARN, ERROR or FATAL? List "
            "every such id, separated by commas.",
            {"answer_kind": "set", "answer": bad}, ", ".join(bad), sorted(seen))


@register("logs.diagnose", 1, "Answer a question about a window of log lines (first error, "
          "counts, failing host, anomalous ids); answers computed in DuckDB.", verifier="answer")
class LogsDiagnose:
    def __init__(self, window: int = 80, kinds=KINDS):
        self.window = int(window)
        self.kinds = tuple(k for k in kinds if k in KINDS)

    def _candidates(self, con) -> list[WindowStats]:
        return [w for w in window_stats(con, self.window)
                if w.n_failures > 0 or w.n_templates >= 3]

    def available(self, con) -> int:
        return len(self._candidates(con))

    def specs(self, ctx: BuildContext):
        made = 0
        for w in stable_sample(self._candidates(ctx.con), None, ctx.seed, key=lambda w: w.key):
            if ctx.limit is not None and made >= ctx.limit:
                return
            spec = self._spec(ctx, w)
            if spec is not None:
                made += 1
                yield spec

    def _spec(self, ctx: BuildContext, w: WindowStats) -> TaskSpec | None:
        records = window_records(ctx.con, w)
        rng = ctx.rng(self.name, w.key)
        kinds = list(self.kinds)
        rng.shuffle(kinds)
        # A template count fits almost every window; try it last most of the time so the
        # other questions, which need errors, hosts or ids, are asked where they fit.
        if "template_count" in kinds and rng.random() < 0.7:
            kinds.remove("template_count")
            kinds.append("template_count")
        for kind in kinds:
            fn = globals()[f"q_{kind}"]
            found = fn(records, ctx.con, rng) if kind == "template_count" else fn(records, ctx.con)
            if found is not None:
                break
        else:
            return None
        question, answer_ref, answer_text, candidates = found
        service = service_name(w.file)
        text = render(records)
        span = f"{fmt_time(records[0].ts)} … {fmt_time(records[-1].ts)}"
        reference = {"verifier": "answer", "submission": "/app/answer.txt", "max_chars": 300,
                     **answer_ref}
        secret = [answer_text] if answer_ref["answer_kind"] in ("exact", "set") and len(answer_text) >= 3 else []
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("log_lines", [f"{w.file}:{w.first_line}-{w.last_line}"],
                             [hashlib.sha256(text.encode()).hexdigest()[:32]]),
            instruction_template="instruction.md",
            context={"title": f"Diagnose {service} logs: {kind.replace('_', ' ')}",
                     "service": service, "question": question, "window": text,
                     "n_records": len(records), "span": span,
                     "set_answer": answer_ref["answer_kind"] == "set"},
            reference=reference, solution_files={"solve.sh": solve_script(answer_text)},
            verifier="answer", group_key=incident_group(w, records),
            dedup_text=text[:4000], time=records[0].ts,
            workspace={f"logs/{service}.log": text.encode()},
            null=null_submission(),
            adversarial=adversarial_answers(options=candidates[:200], candidates=candidates),
            category="ops-logs", difficulty="medium", keywords=["logs", "diagnosis", kind],
            secret_strings=secret, leak_allowed=[text, *(f"`{c}`" for c in candidates)],
            evidence_in_workspace=True, agent_timeout_sec=120.0, verifier_timeout_sec=30.0,
            memory_mb=512, extra_metadata={"question_kind": kind, "window_records": len(records),
                                           "service": service})
