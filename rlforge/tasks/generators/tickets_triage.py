"""`tickets.triage`: read a support request, name the value of one of its label fields.

The label set is every value the field takes among tickets of the same origin (one help
desk), listed in the instruction; the answer is the ticket's own label, compared after
normalisation (case, spaces, underscores). A field is used only where it is a real label
set (2 to 60 values, each seen on at least `min_per_label` tickets) and only where it can
be learned: before any of its tasks is emitted, `rlforge.tasks.generators.learnability` cross-validates
a text classifier on the field against the majority-label and shuffled-label baselines, and
every candidate of a field that does not beat them by `min_lift` is dropped with a reason
that carries the figures (the figures of an emitted field go into each task's metadata).

Field-aware: the instruction names the field (`field_names` renames a mapped field, e.g.
`{"category": "story points"}`) and what its values mean where the user says
(`label_meanings`, by field then label). Ordinal fields — `priority`, or a field whose
values are all numbers (story points) — are refused: exact-match scoring would give a near
miss no credit, and rlforge has no documented partial-credit rule for them yet. A
candidate whose text is empty, `NULL`-like, a placeholder, or a template with unfilled
`{variables}` is dropped with its reason.

No shortcut labels a task (`rlforge.verify.shortcuts_triage`): a ticket whose label its
own words or a near copy of an earlier ticket give is dropped, and the most frequent label
is cut to the next one's count (`screen_shortcuts`; each drop names its shortcut).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict

from rlforge.tasks.generators.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.generators.learnability import MIN_LIFT, Learnability, measure
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.spec import BuildContext, SourceRef, TaskSpec, stable_sample
from rlforge.tasks.splits import subject_key
from rlforge.verify import shortcuts_triage as triage_shortcuts

FIELDS = ("category", "intent", "priority")
DEFAULT_FIELDS = ("category", "intent")
ORDINAL_FIELDS = ("priority",)
MAX_BODY_CHARS = 6000
PLACEHOLDER_WORDS = {"", "null", "none", "nil", "nan", "n/a", "na", "-", "--", "tbd", "todo",
                     "placeholder", "test", "(no description)", "no description", "undefined",
                     "lorem ipsum"}
UNFILLED = re.compile(r"\{\{?\s*[A-Za-z_][\w .-]{0,40}\s*\}\}?|\$\{[\w.]+\}|%\([\w]+\)s")
NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")


def text_problem(subject: str | None, body: str | None) -> str | None:
    """Why a ticket's text cannot be a task (None: it can)."""
    text = (body or "").strip()
    if not text:
        return "empty body"
    if text.casefold().strip(".!? ") in PLACEHOLDER_WORDS:
        return f"placeholder body {text[:20]!r}"
    for part in (subject or "", text):
        m = UNFILLED.search(part)
        if m:
            return f"unfilled template variable {m.group(0)[:40]}"
    return None


def is_ordinal(field: str, labels: list[str]) -> bool:
    return field in ORDINAL_FIELDS or all(NUMBER.match(x.strip()) for x in labels)


def _label_sets(con, fields, min_per_label: int, refused: dict | None = None
                ) -> dict[tuple[str, str], list[str]]:
    """The label set of each (origin, field) that has one; `refused` (if given) gets why
    each other (origin, field) with values has none."""
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
            elif refused is not None:
                refused[(origin, field)] = (
                    f"{field} of {origin} is no label set: {len(kept)} values on at least "
                    f"{min_per_label} tickets each, need 2 to 60")
    return sets


@register("tickets.triage", 1, "Classify a support request into its category, intent or "
          "priority (labels offered; normalised exact match; only fields whose labels a "
          "classifier learns from the text).", verifier="answer")
class TicketTriage(Generator):
    sources = ("tickets",)

    def __init__(self, fields=DEFAULT_FIELDS, min_per_label: int = 3, min_lift: float = MIN_LIFT,
                 field_names: dict[str, str] | None = None,
                 label_meanings: dict[str, dict[str, str]] | None = None,
                 screen_shortcuts: bool = True):
        self.fields = tuple(f for f in fields if f in FIELDS)
        self.min_per_label = min_per_label
        self.min_lift = float(min_lift)
        self.field_names = dict(field_names or {})
        self.label_meanings = {k: dict(v) for k, v in (label_meanings or {}).items()}
        self.screen_shortcuts = bool(screen_shortcuts)  # off: to measure the battery
        self.rejections: list[dict[str, str]] = []
        self.learnability: dict[str, dict] = {}  # "origin:field" -> figures, once measured
        self.shortcuts: Counter = Counter()  # tickets each shortcut answered (not emitted)

    def available(self, con) -> int:
        sets = _label_sets(con, self.fields, self.min_per_label)
        total = 0
        for (origin, field), labels in sets.items():
            total += con.execute(
                f"SELECT count(*) FROM tickets WHERE origin = ? AND body IS NOT NULL "
                f"AND {field} IN (SELECT unnest(?::VARCHAR[]))", [origin, labels]).fetchall()[0][0]
        return total

    def _reject(self, ticket_id: str, reason: str) -> None:
        self.rejections.append({"source": ticket_id, "reason": reason})

    def specs(self, ctx: BuildContext):
        con = ctx.con
        self.rejections, self.learnability, self.shortcuts = [], {}, Counter()
        refused: dict[tuple[str, str], str] = {}
        sets = _label_sets(con, self.fields, self.min_per_label, refused)
        for (origin, field), reason in sorted(refused.items()):
            for (ticket_id,) in con.execute(
                    f"SELECT ticket_id FROM tickets WHERE origin = ? AND {field} IS NOT NULL "
                    f"AND body IS NOT NULL ORDER BY ticket_id", [origin]).fetchall():
                self._reject(ticket_id, reason)
        fields = " or ".join(self.fields)
        no_value = " AND ".join(f"nullif(trim({f}), '') IS NULL" for f in self.fields)
        for ticket_id, has_body in con.execute(
                f"SELECT ticket_id, body IS NOT NULL FROM tickets "
                f"WHERE body IS NULL OR ({no_value}) ORDER BY ticket_id").fetchall():
            self._reject(ticket_id, f"no {fields} value" if has_body else "no customer message")
        candidates = []
        for (origin, field), labels in sorted(sets.items()):
            rows = con.execute(f"""
                SELECT ticket_id, content_hash, subject, body, {field}, created_at
                FROM tickets WHERE origin = ? AND body IS NOT NULL
                  AND {field} IN (SELECT unnest(?::VARCHAR[]))
                ORDER BY ticket_id""", [origin, labels]).fetchall()
            name = self.field_names.get(field, field.replace("_", " "))
            for ticket_id, label in con.execute(f"""
                    SELECT ticket_id, {field} FROM tickets
                    WHERE origin = ? AND body IS NOT NULL AND trim({field}) <> ''
                      AND {field} NOT IN (SELECT unnest(?::VARCHAR[]))
                    ORDER BY ticket_id""", [origin, labels]).fetchall():
                self._reject(ticket_id, f"{name} {label[:40]!r} is on fewer than "
                                        f"{self.min_per_label} tickets of {origin}: no label")
            if is_ordinal(field, labels):
                reason = (f"{name} is ordinal: exact-match scoring gives a near miss no credit "
                          f"and no partial-credit rule is defined; refused")
                for r in rows:
                    self._reject(r[0], reason)
                continue
            usable = []
            for r in rows:
                problem = text_problem(r[2], r[3])
                if problem:
                    self._reject(r[0], f"{name}: {problem}")
                else:
                    usable.append(r)
            if len({r[4] for r in usable}) < 2:
                reason = (f"{name} of {origin}: fewer than two labels left once the tickets "
                          "without a usable text are set aside")
                for r in usable:
                    self._reject(r[0], reason)
                continue
            figures = measure([f"{r[2] or ''}\n{r[3]}" for r in usable], [r[4] for r in usable],
                              ctx.seed)
            self.learnability[f"{origin}:{field}"] = {**figures.to_dict(),
                                                     "min_lift": self.min_lift,
                                                     "emitted": figures.passes(self.min_lift)}
            if not figures.passes(self.min_lift):
                reason = (f"{name} labels of {origin} are not learnable from the text: "
                          f"{figures.summary()}; need lift >= {self.min_lift:.2f}")
                for r in usable:
                    self._reject(r[0], reason)
                continue
            candidates += [(field, labels, figures, r)
                           for r in self._screen(name, labels, usable, ctx.seed)]
        for field, labels, figures, row in stable_sample(candidates, ctx.limit, ctx.seed,
                                                         key=lambda c: f"{c[0]}:{c[3][0]}"):
            yield self._spec(field, labels, figures, row)

    def _screen(self, name: str, labels: list[str], rows: list, seed: int) -> list:
        """The rows of one field no shortcut of `shortcuts_triage` labels: in ticket order, a
        row whose label its own words or a near copy among the rows kept before it give is
        rejected; then the most frequent label is cut to the next one's count (a stable
        sample by seed), so a majority-label guess has no majority to learn."""
        if not self.screen_shortcuts:
            return rows
        texts = [f"{r[2] or ''}\n{r[3]}" for r in rows]
        seen = triage_shortcuts.Seen(texts)
        kept = []
        for r, text in zip(rows, texts):
            got = triage_shortcuts.solved(triage_shortcuts.TriageView(text, labels, seen), r[4])
            got.pop("majority_label", None)  # the balance below takes care of it
            if got:
                strategy, guess = next(iter(got.items()))
                self.shortcuts[strategy] += 1
                self._reject(r[0], f"shortcut {strategy} answers the {name} (it guesses {guess[:40]!r})")
                continue
            kept.append(r)
            seen.add(text, r[4])
        keep = triage_shortcuts.balance_labels([r[4] for r in kept])
        order = sorted(kept, key=lambda r: hashlib.sha256(f"{seed}:{r[0]}".encode()).hexdigest())
        taken: Counter = Counter()
        out = []
        for r in order:
            taken[r[4]] += 1
            if taken[r[4]] > keep[r[4]]:
                self.shortcuts["majority_label"] += 1
                self._reject(r[0], f"shortcut majority_label: {name} {r[4][:40]!r} is cut to "
                                   f"{keep[r[4]]} tickets (the next label's count), so no "
                                   "label is the majority")
            else:
                out.append(r)
        return sorted(out, key=lambda r: r[0])

    def _spec(self, field: str, labels: list[str], figures: Learnability, row) -> TaskSpec:
        ticket_id, content_hash, subject, body, label, created_at = row
        body = body if len(body) <= MAX_BODY_CHARS else body[:MAX_BODY_CHARS] + "\n[...]"
        noun = self.field_names.get(field, field.replace("_", " "))
        meanings = self.label_meanings.get(field, {})
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("tickets", [ticket_id], [content_hash]),
            instruction_template="instruction.md",
            context={"title": f"Triage a support ticket: choose its {noun}", "field": noun,
                     "subject": subject or "", "body": body, "labels": labels,
                     "meanings": {x: meanings[x] for x in labels if meanings.get(x)}},
            reference={"verifier": "answer", "answer_kind": "label", "answer": label,
                       "labels": labels, "submission": "/app/answer.txt", "max_chars": 200},
            solution_files={"solve.sh": solve_script(label)},
            verifier="answer", group_key=ticket_id, subject_key=subject_key(subject),
            dedup_text=f"{subject or ''}\n{body}", time=created_at,
            null=null_submission(),
            adversarial=adversarial_answers(options=labels, candidates=labels),
            category="support-triage", difficulty="easy",
            keywords=["tickets", "classification", field],
            secret_strings=[label],
            leak_allowed=[body, subject or "", *(f"- `{x}`" for x in labels),
                          *(f"- `{x}`: {m}" for x, m in meanings.items())],
            agent_timeout_sec=60.0, verifier_timeout_sec=30.0, memory_mb=512,
            extra_metadata={"label_field": field, "n_labels": len(labels), **figures.metadata()},
        )
