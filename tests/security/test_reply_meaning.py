"""Class 4: a tickets.reply task passes only a reply that answers this ticket's issue.

Bitext's intents split one product flow finely, and their replies share almost every
content word, so lexical gates let another issue's reply, reworded so that no four words
in a row are copied, pass with this ticket's facts appended (14 of 90 tasks for a best of
N on the parent of this change). The `answers_issue` gate reads the reply with a
classifier the build trains on the desk's own labelled replies. The labels here (Bitext's
intent) are also what the build trains on; the other-issue replies are the knowledge
base's, as a policy would find them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from paths import SHARED_DATA
from rlforge.tasks.generators.tickets_reply import kb_name
from rlforge.verify.standalone.replies import cut_from_kb, kb_sentences, score_reply

BITEXT = SHARED_DATA / "tickets" / "bitext" / "bitext_customer_support_sample.csv"
TASKS = 30


def _reworded(text: str) -> str:
    return " ".join(w for i, w in enumerate(text.split()) if i % 4 != 3)


def _kb_replies(task: Path) -> dict[str, str]:
    out = {}
    for f in sorted((task / "environment" / "app" / "kb" / "tickets").glob("*.md")):
        out[f.name] = f.read_text().split("## Resolution sent", 1)[-1].strip()
    return out


@pytest.fixture(scope="module")
def bitext_tasks(tmp_path_factory):
    """Bitext reply tasks as `build-tasks` emits them (validated: a task whose own
    adversarial set passes is not emitted) and the intent of every ticket by its KB file
    name."""
    from typer.testing import CliRunner

    from rlforge.cli import app

    root = tmp_path_factory.mktemp("bitext-reply")
    env = {"RLFORGE_DB": str(root / "b.duckdb"), "RLFORGE_HOME": str(root / "home")}
    runner = CliRunner(env=env)
    ingest = runner.invoke(app, ["ingest", "tickets", str(BITEXT), "--map", "body=instruction",
                                 "--map", "resolution=response", "-q"])
    assert ingest.exit_code == 0, ingest.output
    out = root / "tasks"
    built = runner.invoke(app, ["build-tasks", "--out", str(out), "--generators", "tickets.reply",
                                "--limit", str(TASKS), "-q"])
    assert built.exit_code == 0, built.output
    import duckdb

    con = duckdb.connect(str(root / "b.duckdb"), read_only=True)
    rows = con.execute("SELECT ticket_id, category, intent, resolution FROM tickets").fetchall()
    con.close()
    intent = {kb_name(t): i for t, _, i, _ in rows}
    tasks = sorted(p for p in out.iterdir() if p.name.startswith("tickets-reply"))
    assert len(tasks) >= TASKS * 0.7
    return tasks, intent, rows


def _target(task: Path) -> str:
    return re.search(r'^source_keys = \["([^"]+)"\]', (task / "task.toml").read_text(), re.M).group(1)


@pytest.mark.slow
def test_no_other_issues_reply_passes_not_even_the_best_of_the_knowledge_base(bitext_tasks):
    tasks, intent, _ = bitext_tasks
    passed, tried = [], 0
    for task in tasks:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        mine = intent[kb_name(_target(task))]
        facts = "\n\n" + " ".join(ref["required"])
        for name, reply in _kb_replies(task).items():
            if intent[name] == mine:
                continue
            for text in (reply + facts, _reworded(reply) + facts):
                tried += 1
                if score_reply(ref, text)["outcome"] == "pass":
                    passed.append((task.name, name, intent[name], mine))
    assert tried > 200
    assert passed == [], f"{len(passed)} of {tried} other-issue replies passed: {passed[:5]}"


@pytest.mark.slow
def test_the_real_reply_and_the_adversarial_set_see_the_gate(bitext_tasks):
    """Every task carries the issue model; its gold passes it and the build's own attacks
    on it (the likeliest other-issue replies) are in the adversarial set `rlforge
    validate` scores, and fail."""
    tasks, _, _ = bitext_tasks
    for task in tasks:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        assert ref["issue"]["label"] in ref["issue"]["classes"]
        gold = (task / "solution" / "solve.sh").read_text()
        gold = gold.split("<<'RLFORGE_ANSWER_EOF'\n", 1)[1].rsplit("\nRLFORGE_ANSWER_EOF", 1)[0]
        result = score_reply(ref, gold)
        assert result["components"]["answers_issue"]["value"] == 1, task.name
        validation = json.loads((task / "tests" / "validation.json").read_text())
        attacks = {a["name"]: a["files"]["answer.txt"] for a in validation["adversarial"]}
        for name in ("likeliest_other_issue_reply", "likeliest_other_issue_reworded"):
            assert score_reply(ref, attacks[name])["outcome"] == "fail", (task.name, name)


def _strongest_words(model, issue: str, k: int) -> list[str]:
    """The attacker's own reading of its model: the words whose weight for `issue` most
    exceeds their weight for any other issue."""
    me = model.classes.index(issue)
    gain = {}
    for feature, table in model.weights.items():
        ws = dict(item.split(":") for item in table.split())
        mine = float(ws.pop(str(me), 0))
        gain[feature] = mine - max([0.0, *map(float, ws.values())])
    return sorted((f for f in gain if gain[f] > 0), key=lambda f: (-gain[f], f))[:k]


@pytest.mark.slow
def test_a_reply_that_names_the_issue_without_answering_it_fails(bitext_tasks):
    """A red team's families (s48): the issue model sums its weights over the whole reply
    and no gate reads negation, so a refusal listing the issue's strongest words, or a
    template with the facts and those words, was read as this issue (31 of 77 Bitext tasks
    passed one). Written here from what a policy has: the knowledge base, the ticket, the
    facts, and an issue model fitted on the desk's train split as the build fits it."""
    from rlforge.tasks.generators.reply_issues import IssueModel, issue_of
    from rlforge.tasks.generators.tickets_reply import key_facts

    tasks, intent, rows = bitext_tasks
    model = IssueModel.fit([(t, issue_of(c, i), r) for t, c, i, r in rows],
                           lambda reply: key_facts(reply, limit=None))
    assert model is not None
    passed, tried = [], 0
    for task in tasks:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        mine = intent[kb_name(_target(task))]
        facts = ref["required"]
        others = [r for name, r in _kb_replies(task).items() if intent[name] != mine]
        message = (task / "instruction.md").read_text().split("~~~text", 1)[1].split("~~~")[0]
        said = list(dict.fromkeys(re.findall(r"[a-z]{4,}", message.lower())))
        lines = [s for r in others for s in re.split(r"(?<=[.!?])\s+", r) if len(s.split()) >= 6]
        for k in (6, 16):
            named = ", ".join(_strongest_words(model, mine, k))
            for lead in (f"We regret that we cannot assist with {named}; we are unable to act "
                         "on this request.",
                         f"We regret that we cannot assist with {', '.join(said[:k])}.",
                         f"Regarding: {named}."):
                body = lead.split()
                for line in lines:
                    if len(body) + len(line.split()) + 2 * len(facts) < ref["max_words"] * 0.5:
                        body += line.split()
                candidates = [" ".join(body) + "\n\n" + ". ".join(facts) + ".",
                              "Thank you for contacting us, we are glad to help with this. "
                              "Please follow these steps: " + ", ".join(facts) + ". Let us know "
                              f"if there is anything else we can do. Regarding: {named}."]
                for text in candidates:
                    tried += 1
                    if score_reply(ref, text)["outcome"] == "pass":
                        passed.append((task.name, lead[:40]))
    assert tried > 100
    assert passed == [], f"{len(passed)} of {tried} unanswering replies passed: {passed[:5]}"


def _cut(replies: list[str], share: float, added: str) -> list[str]:
    """The first `share` of every sentence of eight words or more of `replies` (at least
    four words), each followed by `added`: fragments of the knowledge base."""
    out = []
    for reply in replies:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", reply):
            w = sentence.split()
            if len(w) >= 8:
                out.append(" ".join(w[:max(4, int(len(w) * share))] + added.split()))
    return out


@pytest.mark.slow
def test_a_reply_cut_from_the_knowledge_base_fails(bitext_tasks):
    """A reply strung from runs cut out of the knowledge base's sentences is made of the
    company's own phrasing (the word-pair and phrasing gates pass it), its short runs keep
    the copy gate's share of 4-grams low, and cut from the replies to this issue it is read
    as this issue: on the parent of this change the first half of each sentence, strung,
    passed 26 of 73 Bitext tasks. Here cut from this issue's replies, from other issues'
    and from all, at half or 70% of each sentence, bare or with one to four words added to
    each fragment; none may pass, and every task's real reply still does."""
    tasks, intent, _ = bitext_tasks
    passed, tried = [], 0
    for task in tasks:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        gold = (task / "solution" / "solve.sh").read_text()
        gold = gold.split("<<'RLFORGE_ANSWER_EOF'\n", 1)[1].rsplit("\nRLFORGE_ANSWER_EOF", 1)[0]
        assert score_reply(ref, gold)["outcome"] == "pass", task.name
        mine = intent[kb_name(_target(task))]
        kb = _kb_replies(task)
        sources = ([r for n, r in kb.items() if intent[n] == mine],
                   [r for n, r in kb.items() if intent[n] != mine], list(kb.values()))
        facts = ref["required"]
        budget = (ref["min_words"] + ref["max_words"]) // 2 - 2 * len(facts)
        for replies in sources:
            for share in (0.5, 0.7):
                for added in ("", "now", "for you", "for you now", "for you right now"):
                    body, n = [], 0
                    for part in _cut(replies, share, added):
                        if n + len(part.split()) <= budget:
                            body.append(part[:1].upper() + part[1:].rstrip(".,;:") + ".")
                            n += len(part.split())
                    if not body:
                        continue
                    tried += 1
                    text = " ".join(body) + "\n\n" + " ".join(f"{f}." for f in facts)
                    if score_reply(ref, text)["outcome"] == "pass":
                        passed.append((task.name, share, added))
    assert tried > 500
    assert passed == [], f"{len(passed)} of {tried} replies cut from the KB passed: {passed[:5]}"


def test_a_sentence_mark_glued_or_hidden_still_ends_a_sentence():
    """A red team (s49) strung the same cuts with `.` and a zero-width space, or with `.`
    glued to the next word: the split saw one long sentence of mostly its own words, and
    the cut gate passed 40 of 75 Bitext tasks it fails when the cuts are spaced."""
    kb = ["To update your billing address, log in to your account and open the billing settings page.",
          "Select the payment method you would like to change and follow the steps shown on the screen.",
          "If you have any questions about your invoice, our support team is available around the clock."]
    sentences = kb_sentences(kb)
    pieces = ["To update your billing address, log in", "Select the payment method you would like",
              "If you have any questions about your"]
    assert cut_from_kb(". ".join(pieces) + ".", sentences) is not None
    for joiner in (".\u200b", ".", ".\u2060", "\uff0e", "!\u200d", ";\ufeff"):
        assert cut_from_kb(joiner.join(pieces) + ".", sentences) is not None, repr(joiner)
    # a reply in its own words, with a web address and a price, is not read as cuts
    own = ("Thanks for reaching out. You can change the card on file at www.example.com/account "
           "whenever you like. The new plan costs 3.50 a month and starts on your next invoice.")
    assert cut_from_kb(own, sentences) is None
