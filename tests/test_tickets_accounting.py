"""Every ticket a triage build could use ends as a task or as a counted drop with a reason
(a Deep-SE-like export: a label field whose rare values have too few tickets to be a
label, which the generator used to skip without a word)."""

from __future__ import annotations

import json

from rlforge import db
from rlforge.ingest import tickets
from rlforge.tasks.generators.tickets_triage import TicketTriage
from rlforge.tasks.spec import BuildContext


def _export(tmp_path):
    rows = ["id,subject,body,category"]
    for i in range(6):
        rows.append(f"B{i},invoice wrong,my invoice {i} shows a double charge on the card,billing")
        rows.append(f"S{i},parcel late,the parcel {i} has not arrived at my address yet,shipping")
    rows += ["R1,money back,I want my money back for order 7,refund",
             "R2,money back,I want my money back for order 9,refund",
             "N1,no label,the app crashes when I open settings,",
             "E1,empty,,billing"]
    path = tmp_path / "export.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_every_candidate_is_a_spec_or_a_counted_drop(tmp_path):
    con = db.connect(tmp_path / "x.duckdb")
    assert tickets.ingest_file(con, _export(tmp_path), redactor=None).status == "ok"
    gen = TicketTriage(fields=("category",))
    specs = list(gen.specs(BuildContext(con, seed=0)))
    ids = [t for (t,) in con.execute("SELECT ticket_id FROM tickets ORDER BY 1").fetchall()]
    emitted = {s.source.keys[0] for s in specs}
    dropped = {r["source"]: r["reason"] for r in gen.rejections}
    assert len(specs) + len(gen.rejections) == len(ids) == 16
    assert sorted(emitted | set(dropped)) == ids and not emitted & set(dropped)
    assert "fewer than 3 tickets" in dropped["csv:R1"] and "'refund'" in dropped["csv:R1"]
    assert dropped["csv:N1"] == "no category value"


def test_the_build_summary_adds_up(cli, tmp_path):
    """Through the CLI: candidates = emitted + dropped, and the rare label's drop is printed."""
    assert cli("ingest", "tickets", _export(tmp_path)).exit_code == 0
    out = tmp_path / "tasks"
    result = cli("build-tasks", "--generators", "tickets.triage", "--out", out, "--no-validate",
                 "--json")
    assert result.exit_code == 0, result.output
    text = result.output
    report = json.loads(text[text.index("{"): text.rindex("}") + 1])
    g = report["per_generator"]["tickets.triage"]
    assert g["candidates"] == 16 == g["emitted"] + g["dropped"]
    assert g["unaccounted"] == 0
    assert any("'refund' is on fewer than 3 tickets" in d["reason"] for d in report["drops"])
    shown = cli("build-tasks", "--generators", "tickets.triage", "--out", out, "--no-validate",
                "--force")
    assert shown.exit_code == 0 and "candidates" in shown.output
    assert "fewer than 3 tickets" in shown.output
