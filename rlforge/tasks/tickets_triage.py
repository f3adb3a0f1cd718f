"""`tickets.triage`: read a support request, name its category (or intent, or priority).

The label set is every value the field takes among tickets of the same origin (one help
desk), listed in the instruction; the answer is the ticket's own label, compared after
normalisation (case, spaces, underscores). A field is used only where it is a real label
set: 2 to 60 values, each seen on at least `min_per_label` tickets.
"""

from __future__ import annotations

from collections import defaultdict

from rlforge.tasks.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.registry import register
from rlforge.tasks.spec import BuildContext, SourceRef, TaskSpec, stable_sample

FIELDS = ("category", "intent", "priority")
DEFAULT_FIELDS = ("category", "intent")
MAX_BODY_CHARS = 6000


def _label_sets(con, fields, min_per_label: int) -> dict[tuple[str, str], list[str]]:
    sets: dict[tuple[str, str], list[str]] = {}
    for field in fields:
        rows = con.execute(f"""
            SELECT origin, {field}, count(*) FROM tickets
            WHERE {field} IS NOT NULL AND trim({field}) <> '' AND body IS NOT NULL
            GROUP BY ALL ORDER BY ALL""").fetchall()
        by_origin: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for origin, label, n in rows:
            by_origin[origin].append((label, n))
        for origin, labels in by_origin.items():
            kept = [label for label, n in labels if n >= min_per_label]
            if 2 <= len(kept) <= 60:
                sets[(origin, field)] = sorted(kept)
    return sets


@register("tickets.triage", 1, "Classify a support request into its category, intent or "
          "priority (labels offered; normalised exact match).", verifier="answer")
class TicketTriage:
    def __init__(self, fields=DEFAULT_FIELDS, min_per_label: int = 3):
        self.fields = tuple(f for f in fields if f in FIELDS)
        self.min_per_label = min_per_label

    def available(self, con) -> int:
        sets = _label_sets(con, self.fields, self.min_per_label)
        total = 0
        for (origin, field), labels in sets.items():
            total += con.execute(
                f"SELECT count(*) FROM tickets WHERE origin = ? AND body IS NOT NULL "
                f"AND {field} IN (SELECT unnest(?::VARCHAR[]))", [origin, labels]).fetchall()[0][0]
        return total

    def specs(self, ctx: BuildContext):
        con = ctx.con
        sets = _label_sets(con, self.fields, self.min_per_label)
        candidates = []
        for (origin, field), labels in sorted(sets.items()):
            rows = con.execute(f"""
                SELECT ticket_id, content_hash, subject, body, {field}, created_at
                FROM tickets WHERE origin = ? AND body IS NOT NULL
                  AND {field} IN (SELECT unnest(?::VARCHAR[]))
                ORDER BY ticket_id""", [origin, labels]).fetchall()
            candidates += [(field, labels, r) for r in rows]
        for field, labels, row in stable_sample(candidates, ctx.limit, ctx.seed,
                                                key=lambda c: f"{c[0]}:{c[2][0]}"):
            yield self._spec(field, labels, row)

    def _spec(self, field: str, labels: list[str], row) -> TaskSpec:
        ticket_id, content_hash, subject, body, label, created_at = row
        body = body if len(body) <= MAX_BODY_CHARS else body[:MAX_BODY_CHARS] + "\n[...]"
        noun = {"category": "category", "intent": "intent", "priority": "priority"}[field]
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("tickets", [ticket_id], [content_hash]),
            instruction_template="instruction.md",
            context={"title": f"Triage a support ticket: choose its {noun}", "field": noun,
                     "subject": subject or "", "body": body, "labels": labels},
            reference={"verifier": "answer", "answer_kind": "label", "answer": label,
                       "labels": labels, "submission": "/app/answer.txt", "max_chars": 200},
            solution_files={"solve.sh": solve_script(label)},
            verifier="answer", group_key=ticket_id,
            dedup_text=f"{subject or ''}\n{body}", time=created_at,
            null=null_submission(),
            adversarial=adversarial_answers(options=labels, candidates=labels),
            category="support-triage", difficulty="easy",
            keywords=["tickets", "classification", field],
            secret_strings=[label],
            leak_allowed=[body, subject or "", *(f"- `{x}`" for x in labels)],
            agent_timeout_sec=60.0, verifier_timeout_sec=30.0, memory_mb=512,
            extra_metadata={"label_field": field, "n_labels": len(labels)},
        )
