"""`rlforge build-tasks` and `rlforge validate`: Harbor layout, determinism, splits, proofs."""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from paths import SAMPLE_DATA
from rlforge import db
from rlforge.ingest import tickets
from rlforge.tasks import registry
from rlforge.tasks.build import parse_mix, quotas
from rlforge.tasks.render import builtin_templates
from rlforge.tasks.splits import (MAX_SUBJECT_FLOOR, MAX_SUBJECT_SHARE, hash_split,
                                  near_duplicate_groups, subject_key)
from rlforge.verify import shortcuts_triage

TICKETS = SAMPLE_DATA / "tickets"


@pytest.fixture
def ticket_db(db_path):
    con = db.connect(db_path)
    tickets.ingest_file(con, TICKETS / "tickets.csv")
    tickets.ingest_file(con, TICKETS / "zendesk_export.json",
                        mapping={"category": "custom_fields.360041872211"})
    tickets.ingest_file(con, TICKETS / "jira_export.csv", mapping={"category": "Component/s"})
    con.close()
    return db_path


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def build(cli, out: Path, *args: str):
    result = cli("build-tasks", "--out", out, "--json", *args)
    return result, (json.loads(result.output) if result.output.lstrip().startswith("{") else None)


def test_list_shows_every_generator_with_usable_rows(cli, ticket_db):
    result = cli("build-tasks", "--list", "--json")
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) == set(registry.registry())
    # Every ticket whose category is a label seen at least 3 times in its help desk.
    assert 280 <= rows["tickets.triage"]["usable_rows"] <= 300
    assert rows["tickets.reply"]["usable_rows"] > 100
    # A generator with nothing to read says why.
    assert rows["tickets.reply"]["why_none"] is None
    assert rows["commits.repair"]["why_none"] == "no commits yet: rlforge ingest commits"
    assert rows["logs.script"]["why_none"] == "no log records yet: rlforge ingest logs"


def test_unknown_generator_lists_the_valid_ones(cli, ticket_db, tmp_path):
    result = cli("build-tasks", "--out", tmp_path / "o", "--generators", "tickets.triag")
    assert result.exit_code == 1
    assert "unknown generator 'tickets.triag'" in result.output
    assert "tickets.triage@1" in result.output


def test_harbor_layout_and_lineage(cli, ticket_db, tmp_path, query):
    out = tmp_path / "tasks"
    result, report = build(cli, out, "--generators", "tickets.triage,tickets.reply", "--limit", "8")
    assert result.exit_code == 0, result.output
    assert report["emitted"] == 8
    dirs = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(dirs) == 8
    for d in dirs:
        for rel in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh",
                    "solution/solve.sh", "tests/reference.json", "tests/rlforge_verify.py"):
            assert (d / rel).is_file(), f"{d.name} lacks {rel}"
        meta = tomllib.loads((d / "task.toml").read_text())
        assert meta["task"]["name"] == f"rlforge/{d.name}"
        assert meta["verifier"]["timeout_sec"] > 0 and meta["agent"]["timeout_sec"] > 0
        env = meta["environment"]
        assert env["network_mode"] == "no-network" and env["cpus"] >= 1 and env["memory_mb"] > 0
        rl = meta["metadata"]["rlforge"]
        assert rl["task_id"] == d.name and rl["split"] in ("train", "val", "test")
        assert rl["generator"] in ("tickets.triage@1", "tickets.reply@2")
        assert rl["source_table"] == "tickets" and len(rl["source_keys"]) == len(rl["source_content_hashes"])
        assert len(rl["template_hash"]) == 16
        assert "/logs/verifier" in (d / "tests" / "test.sh").read_text()
        assert (d / "tests" / "test.sh").stat().st_mode & 0o111
    manifest = pl.read_parquet(out / "manifest.parquet")
    assert sorted(manifest["task_id"].to_list()) == [d.name for d in dirs]
    assert query("SELECT count(*), count(DISTINCT split) > 0 FROM tasks") == [(8, True)]


def test_same_database_seed_and_templates_give_byte_identical_trees(cli, ticket_db, tmp_path):
    """Determinism over the whole registry: build twice, compare every byte."""
    names = ",".join(registry.registry())
    a, b = tmp_path / "a", tmp_path / "b"
    ra, _ = build(cli, a, "--generators", names, "--limit", "12", "--seed", "7", "--no-validate")
    rb, _ = build(cli, b, "--generators", names, "--limit", "12", "--seed", "7", "--no-validate")
    assert ra.exit_code == rb.exit_code == 0, ra.output
    assert tree_digest(a) == tree_digest(b)
    c = tmp_path / "c"
    build(cli, c, "--generators", names, "--limit", "12", "--seed", "8", "--no-validate")
    assert tree_digest(a) != tree_digest(c)


def test_validate_proves_gold_null_and_every_adversarial(cli, ticket_db, tmp_path):
    out = tmp_path / "tasks"
    build(cli, out, "--generators", "tickets.triage,tickets.reply", "--limit", "6", "--no-validate")
    result = cli("validate", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["failed"] == 0 and data["tasks"] == 6
    expected = {"tickets.triage@1": {"leak", "oracle", "null", "empty", "undecodable_bytes", "every_option",
                                     "every_option_lines", "long_candidate_list", "echo_instruction"},
                "tickets.reply@2": {"leak", "oracle", "null", "empty", "facts_only", "padded",
                                    "copies_other_ticket", "echo_instruction", "facts_repeated",
                                    "lorem_and_facts", "customer_message_and_facts",
                                    "knowledge_base_walk", "answers_another_issue",
                                    "walk_with_the_facts"}}
    # Made only where the ticket has what they need (a forbidden value; a desk that labels
    # its issues and a KB reply to another issue; a label the shortcut battery can guess
    # from the ticket's own words).
    optional = {"tickets.triage@1": {"shortcut_label_in_text"},
                "tickets.reply@2": {"forbidden_with_zero_width", "likeliest_other_issue_reply",
                                    "likeliest_other_issue_reworded", "refusal_naming_the_issue",
                                    "refusal_naming_the_customers_words",
                                    "template_naming_the_issue",
                                    "other_issues_phrases_naming_the_issue"}}
    for r in data["results"]:
        checks = {c["name"]: c for c in r["checks"]}
        assert expected[r["generator"]] <= set(checks) <= expected[r["generator"]] | optional[r["generator"]]
        assert checks["oracle"]["got"] == 1.0
        assert all(c["got"] == 0 for n, c in checks.items() if n not in ("oracle", "leak"))


def test_validate_fails_a_broken_task_with_the_reason(cli, ticket_db, tmp_path):
    out = tmp_path / "tasks"
    build(cli, out, "--generators", "tickets.triage", "--limit", "2", "--no-validate")
    task = sorted(p for p in out.iterdir() if p.is_dir())[0]
    # A verifier that accepts anything: the null submission now scores 1.
    ref = json.loads((task / "tests" / "reference.json").read_text())
    ref["labels"] = ref["labels"] + [""]
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho 'not a label' > /app/answer.txt\n")
    (task / "tests" / "reference.json").write_text(json.dumps(ref))
    result = cli("validate", out)
    assert result.exit_code == 1
    assert f"FAIL {task.name}: oracle scored 0" in result.output


def test_validate_rejects_a_leaky_instruction(cli, ticket_db, tmp_path):
    out = tmp_path / "tasks"
    build(cli, out, "--generators", "tickets.triage", "--limit", "1", "--no-validate")
    task = next(p for p in out.iterdir() if p.is_dir())
    answer = json.loads((task / "tests" / "reference.json").read_text())["answer"]
    with open(task / "instruction.md", "a") as fh:
        fh.write(f"\nHint: the {answer.replace('_', ' ')} team owns this one, so say {answer}.\n")
    result = cli("validate", out, "--json")
    assert result.exit_code == 1
    assert "leak: the reference answer" in result.output


def test_mix_quotas_and_limit():
    assert parse_mix("a=3,b=1") == {"a": 3.0, "b": 1.0}
    assert quotas(["a", "b"], {"a": 3, "b": 1}, 10) == {"a": 8, "b": 2}
    assert quotas(["a", "b", "c"], {}, 10) == {"a": 4, "b": 3, "c": 3}
    assert quotas(["a", "b"], {"a": 1}, 5) == {"a": 5}
    assert quotas(["a", "b"], {}, None) == {"a": None, "b": None}
    # Usable rows cap a quota; what one cannot take goes to the others.
    assert quotas(["a", "b", "c"], {}, 12, {"a": 0, "b": 2, "c": 50}) == {"a": 0, "b": 2, "c": 10}
    assert quotas(["a", "b"], {"a": 3, "b": 1}, 10, {"a": 5, "b": 50}) == {"a": 5, "b": 5}
    assert quotas(["a", "b"], {}, 10, {"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_limit_goes_to_generators_that_can_emit(cli, ticket_db, tmp_path):
    """A tickets-only database: the limit is not split over the five generators with
    nothing to read (nor given to tickets.reply, which is opt-in), and what tickets.reply
    rejects goes to tickets.triage."""
    result, report = build(cli, tmp_path / "o", "--limit", "12", "--no-validate")
    assert result.exit_code == 0, result.output
    assert report["emitted"] == 12
    made = {g: s["emitted"] for g, s in report["per_generator"].items()}
    assert made["tickets.triage"] == 12 and "tickets.reply" not in made, made
    assert report["usable"]["commits.repair"] == 0
    assert report["opt_in"]["tickets.reply"]["built"] is False
    assert "tickets.reply: not built (opt-in" in " ".join(
        cli("build-tasks", "--out", tmp_path / "o2", "--limit", "2", "--no-validate").output.split())
    # Reply cannot make 125 (most tickets' facts are not in their knowledge base): the
    # shortfall is triage's (which leaves out the tickets a shortcut labels).
    result, report = build(cli, tmp_path / "p", "--limit", "250", "--no-validate",
                           "--generators", "tickets.reply,tickets.triage")
    made = {g: s["emitted"] for g, s in report["per_generator"].items()}
    assert made["tickets.reply"] < 125 and report["emitted"] == 250, made
    assert report["opt_in"] == {"tickets.reply": {"built": True,
                                                  "why": registry.get("tickets.reply").opt_in}}
    result = cli("build-tasks", "--out", tmp_path / "m", "--mix", "tickets.reply=1")
    assert result.exit_code != 0 and "only when --generators names it" in result.output
    # Asked for more than there is: built what there is, and said so.
    result = cli("build-tasks", "--out", tmp_path / "q", "--limit", "5000", "--no-validate",
                 "--generators", "tickets.triage")
    assert result.exit_code == 0 and "--limit 5,000: built" in result.output


def test_mix_through_the_cli(cli, ticket_db, tmp_path):
    result, report = build(cli, tmp_path / "o", "--generators", "tickets.triage,tickets.reply",
                           "--mix", "tickets.triage=3,tickets.reply=1", "--limit", "8", "--no-validate")
    assert result.exit_code == 0
    assert report["per_generator"]["tickets.triage"]["emitted"] == 6
    assert report["per_generator"]["tickets.reply"]["emitted"] == 2


def test_near_duplicates_share_a_group_and_so_a_split():
    base = ("My invoice for March shows the Growth plan twice and I was charged 98 dollars "
            "instead of 49, please refund the second charge to the card on file")
    texts = [base, base.replace("March", "April").replace("98", "96"),
             "The barcode scanner stopped pairing with the iPad after the update yesterday"]
    groups = near_duplicate_groups(["t1", "t2", "t3"], texts)
    assert groups[0] == groups[1] == "t1" and groups[2] == "t3"
    # a shared key joins whatever else either item is joined to; a related key joins too
    four = near_duplicate_groups(["t2", "t1", "t2", "c9", "t4"], [texts[0], texts[1], texts[2],
                                                                  "fix the parser", "x y z"],
                                 [[], [], [], ["t2"], []])
    assert four == ["c9", "c9", "c9", "c9", "t4"]  # the smallest key names the group
    assert hash_split("x") == hash_split("x")
    counts = {s: 0 for s in ("train", "val", "test")}
    for i in range(2000):
        counts[hash_split(f"group-{i}")] += 1
    assert 1450 < counts["train"] < 1750 and counts["val"] > 100 and counts["test"] > 100


def test_one_ticket_lands_in_one_split_whichever_generators_use_it(cli, ticket_db, tmp_path):
    """A ticket's triage and reply tasks share its group, so its split: a model trained
    on one must not be tested on the other (the hash does not include the generator)."""
    result, _ = build(cli, tmp_path / "o", "--generators", "tickets.triage,tickets.reply",
                      "--no-validate")
    assert result.exit_code == 0, result.output
    splits: dict[str, set[str]] = {}
    for toml in (tmp_path / "o").glob("*/task.toml"):
        meta = tomllib.loads(toml.read_text())["metadata"]["rlforge"]
        splits.setdefault(meta["group_key"], set()).add(meta["split"])
    assert len(splits) > 50 and all(len(s) == 1 for s in splits.values())
    both = sum(1 for toml in (tmp_path / "o").glob("tickets-reply-*/task.toml"))
    assert both > 10  # reply tasks exist beside the triage tasks of the same tickets


def test_tickets_of_one_subject_share_a_split_unless_the_subject_is_generic():
    assert subject_key("RE[2]: AW: Charged twice!!") == subject_key("charged   TWICE") is not None
    assert subject_key("Fwd: Order 5521 missing") == subject_key("order #77 missing")
    assert subject_key("Help") is None and subject_key("Re: question?") is None
    bodies = ["I was billed for March and for April on one day", "refund the second payment",
              "where is my parcel", "the app will not open", "the label printer came cracked",
              "export my data please", "two invoices arrived for one order"]
    keys = [f"t{i}" for i in range(len(bodies))]
    subjects = [subject_key(s) for s in ("Charged twice", "re: charged twice", "Help", "Help",
                                         "Printer arrived broken", None, "charged twice")]
    assert near_duplicate_groups(keys, bodies) == keys  # the bodies alone join nothing
    groups = near_duplicate_groups(keys, bodies, None, subjects)
    assert groups == ["t0", "t0", "t2", "t3", "t4", "t5", "t0"]
    # a subject on more than MAX_SUBJECT_SHARE of the items (and MAX_SUBJECT_FLOOR) is
    # generic there: it joins none
    n = 10 * int(1 / MAX_SUBJECT_SHARE)
    keys, bodies = [f"k{i:04}" for i in range(n)], [f"ticket {i}" for i in range(n)]
    for shared, joined in ((MAX_SUBJECT_FLOOR, True), (int(MAX_SUBJECT_SHARE * n), True),
                           (int(MAX_SUBJECT_SHARE * n) + 1, False)):
        crowd = [subject_key("Order status")] * shared + [None] * (n - shared)
        got = near_duplicate_groups(keys, bodies, None, crowd)
        assert (len(set(got[:shared])) == 1) is joined and got[shared:] == keys[shared:]


def test_a_subject_written_with_a_typo_or_a_word_more_shares_the_split():
    """Typo variants ("renewal", "rnewal"; a placeholder of another database's key) and
    a subject with one word more are one subject; other words, short words one letter
    apart and a family over the generic share are not."""
    subjects = ["Annual renewal charged twice", "annual rnewal charged twice",
                "Annual renewal charged twice again", "Cannot import products",
                "Cannot export products", "Card declined at the till",
                "Cart declined at the till", "Renewal for <PERSON_3f2a1b> failed",
                "Renewl for <PERSON_99aa00> failed", "Webhooks stopped firing",
                "Webhooks stoped firing"]
    keys = [f"t{i:02}" for i in range(len(subjects))]
    bodies = [f"ticket body {i}" for i in range(len(subjects))]
    got = near_duplicate_groups(keys, bodies, None, [subject_key(s) for s in subjects])
    assert got[:3] == ["t00"] * 3
    assert len(set(got[3:7])) == 4
    assert got[7:9] == ["t07"] * 2 and got[9:] == ["t09"] * 2
    assert shortcuts_triage.same_subject_label(
        "Annual rnewal charged twice", [("annual renewal charged twice", "billing")],
        near=True) == "billing"
    # A family over the generic share falls apart into its own subjects: no group of
    # near-identical subjects swallows a split.
    n = 200
    cap = int(MAX_SUBJECT_SHARE * n)
    crowd = ["Order status changed"] * cap + ["Order staus changed"] * cap
    keys = [f"k{i:04}" for i in range(n)]
    got = near_duplicate_groups(keys, [f"ticket {i}" for i in range(n)], None,
                                [subject_key(s) for s in crowd] + [None] * (n - 2 * cap))
    assert got[:cap] == ["k0000"] * cap and got[cap:2 * cap] == [keys[cap]] * cap


def _subject(task: Path) -> str:
    text = (task / "instruction.md").read_text()
    return text.split("**Subject:** ", 1)[1].split("\n", 1)[0] if "**Subject:** " in text else ""


def test_no_triage_label_is_read_off_the_same_subject_in_another_split(cli, ticket_db, tmp_path):
    """The sample desk's subjects are templated: a ticket of the test split whose subject a
    train ticket shares would be labelled by copying that ticket's label."""
    result, _ = build(cli, tmp_path / "o", "--generators", "tickets.triage", "--no-validate")
    assert result.exit_code == 0, result.output
    tasks = []
    for toml in sorted((tmp_path / "o").glob("*/task.toml")):
        meta = tomllib.loads(toml.read_text())["metadata"]["rlforge"]
        answer = json.loads((toml.parent / "tests" / "reference.json").read_text())["answer"]
        tasks.append((meta["split"], _subject(toml.parent), answer))
    assert len(tasks) > 100 and {s for s, _, _ in tasks} == {"train", "val", "test"}
    splits_of: dict[str, set[str]] = {}
    for split, subject, _ in tasks:
        if subject_key(subject):
            splits_of.setdefault(shortcuts_triage.normal_subject(subject), set()).add(split)
    assert sum(len(s) > 1 for s in splits_of.values()) == 0
    assert max(Counter(shortcuts_triage.normal_subject(s) for _, s, _ in tasks).values()) > 3
    copied = sum(shortcuts_triage.same_subject_label(
        subject, [(o, a) for sp, o, a in tasks if sp != split]) == answer
        for split, subject, answer in tasks)
    assert copied == 0
    # nor off a near-identical subject (a typo, a word more) in another split
    near = sum(shortcuts_triage.same_subject_label(
        subject, [(o, a) for sp, o, a in tasks if sp != split], near=True) == answer
        for split, subject, answer in tasks)
    assert near == 0


def test_split_by_time_needs_a_cutoff_and_cuts_there(cli, ticket_db, tmp_path, query):
    bad = cli("build-tasks", "--out", tmp_path / "x", "--split-by", "time", "--no-validate",
              "--generators", "tickets.triage", "--limit", "3")
    assert bad.exit_code == 1 and "--cutoff" in bad.output
    result, report = build(cli, tmp_path / "t", "--generators", "tickets.triage", "--split-by",
                           "time", "--cutoff", "2024-06-01", "--no-validate")
    assert result.exit_code == 0
    rows = query("""SELECT t.split, min(k.created_at), max(k.created_at) FROM tasks t
                    JOIN tickets k ON k.ticket_id = t.source_keys[1] GROUP BY ALL ORDER BY 1""")
    by = {r[0]: r for r in rows}
    assert str(by["train"][2]) < "2024-06-01" <= str(by["test"][1])


def test_a_cutoff_without_a_zone_splits_times_with_one():
    # commits carry their zone, a --cutoff date has none: comparing them raised TypeError
    # after every check of a build had run
    import datetime as dt

    from rlforge.tasks.splits import time_split

    cutoff = dt.datetime.fromisoformat("2024-06-01")
    zoned = dt.timezone(dt.timedelta(hours=2))
    assert time_split(dt.datetime(2024, 6, 1, 1, 0, tzinfo=zoned), cutoff) == "train"
    assert time_split(dt.datetime(2024, 6, 1, 3, 0, tzinfo=zoned), cutoff) == "test"
    assert time_split(dt.datetime(2024, 5, 31), cutoff) == "train"


def test_user_templates_override_the_builtin_ones(cli, ticket_db, tmp_path):
    custom = tmp_path / "tpl" / "tickets.triage"
    custom.mkdir(parents=True)
    builtin = builtin_templates() / "tickets.triage" / "instruction.md.j2"
    (custom / "instruction.md.j2").write_text("ACME HELP DESK\n" + builtin.read_text())
    out = tmp_path / "o"
    result, _ = build(cli, out, "--generators", "tickets.triage", "--limit", "2", "--templates",
                      tmp_path / "tpl", "--no-validate")
    assert result.exit_code == 0
    for d in (p for p in out.iterdir() if p.is_dir()):
        assert (d / "instruction.md").read_text().startswith("ACME HELP DESK")


def test_out_directory_with_foreign_files_is_refused(cli, ticket_db, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("do not delete")
    result = cli("build-tasks", "--out", out, "--generators", "tickets.triage", "--limit", "1")
    assert result.exit_code == 1 and "--force" in result.output
    assert (out / "notes.txt").exists()


def test_reply_never_forbids_what_the_gold_reply_says_in_another_spelling():
    # Bitext-style replies: a placeholder "{{Live Chat}}" and the plain words "live chat"
    # are the same item to the verifier (compared as words), and so are "$3" and a step
    # numbered "3.": a value the gold reply or the customer's message holds in any
    # spelling is never forbidden (the gold reply would fail its own task).
    from rlforge.tasks.generators.tickets_reply import forbiddable

    may_forbid = forbiddable("You can reach us on live chat.\n3. Open the Help page.",
                             "Where can I talk to someone? Ticket INV-2024-00017")
    assert not may_forbid("{{Live Chat}}") and not may_forbid("$3")
    assert not may_forbid("INV-2024-00017")
    assert may_forbid("{{Customer Support Phone Number}}") and may_forbid("INV-2024-00018")
