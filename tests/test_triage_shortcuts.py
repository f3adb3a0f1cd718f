"""`tickets.triage` asks no ticket whose label a shortcut gives (`shortcuts_triage`).

The sample help desk's tickets are ingested into a real DuckDB and the generator builds
its tasks; the battery is then run over the emitted tasks the way a policy trained on
them would meet them (each task against all the others): the label whose words the
ticket holds, the majority label, the label of a near copy.
"""

from __future__ import annotations

from rlforge import db
from rlforge.ingest import tickets
from rlforge.tasks.generators.tickets_triage import TicketTriage
from rlforge.tasks.spec import BuildContext
from rlforge.verify import shortcuts_triage as st
from paths import SAMPLE_DATA


def _battery(specs) -> dict[str, int]:
    texts = [f"{s.context['subject']}\n{s.context['body']}" for s in specs]
    solved: dict[str, int] = {}
    for i, s in enumerate(specs):
        seen = st.Seen(texts)
        for j, other in enumerate(specs):
            if j != i:
                seen.add(texts[j], other.reference["answer"])
        for name in st.solved(st.TriageView(texts[i], s.reference["labels"], seen), s.reference["answer"]):
            solved[name] = solved.get(name, 0) + 1
    return solved


def test_strategies_read_the_ticket_and_the_seen_tickets():
    seen = st.Seen(["refund my invoice please", "cannot log in to my account", "app is slow today"])
    seen.add("refund my invoice please", "billing")
    seen.add("app is slow today", "performance")
    seen.add("app is slow today", "performance")
    v = st.TriageView("Billing: refund my invoice please", ["billing", "login_access", "performance"], seen)
    assert st.label_in_text(v) == "billing"
    assert st.majority_label(v) == "performance"
    assert st.near_copy_label(v) == "billing"  # 2 of 3 words shared
    far = st.TriageView("the printer jams", ["billing", "performance"], seen)
    assert st.near_copy_label(far) is None and st.label_in_text(far) is None
    assert st.balance_labels(["a", "a", "a", "b", "b", "c"]) == {"a": 2, "b": 2, "c": 1}


def test_triage_emits_no_ticket_a_shortcut_labels(tmp_path):
    con = db.connect(tmp_path / "t.duckdb")
    for name in ("tickets.csv", "zendesk_export.json", "jira_export.csv"):
        tickets.ingest_file(con, SAMPLE_DATA / "tickets" / name)
    before = list(TicketTriage(screen_shortcuts=False).specs(BuildContext(con, seed=0)))
    gen = TicketTriage()
    after = list(gen.specs(BuildContext(con, seed=0)))
    con.close()
    unscreened = _battery(before)
    # The sample desk is full of cues: the battery labels a share of it unscreened.
    assert unscreened.get("label_in_text", 0) > 0.05 * len(before)
    assert unscreened.get("majority_label", 0) > 0.05 * len(before)
    screened = _battery(after)
    assert screened.get("label_in_text", 0) == 0 and screened.get("majority_label", 0) == 0
    assert sum(screened.values()) <= 0.02 * len(after)  # near copies among later tickets
    assert 0.5 * len(before) < len(after) < len(before)
    reasons = [r["reason"] for r in gen.rejections if r["reason"].startswith("shortcut ")]
    assert len(reasons) == len(before) - len(after) == sum(gen.shortcuts.values())
    assert {r.split()[1].rstrip(":") for r in reasons} == {"label_in_text", "majority_label", "near_copy_label"}
