"""Does a tickets.reply task tell a reply to *this* ticket from one that is not?

For reply tasks built from a ticket export, scores with the task's own verifier
(`score_reply`, as every path does). Which tickets raise the same issue is read from labels
the product never sees (the sample's scenario tags, Bitext's intent), only to grade:

- **gold**: the ticket's real resolution (must pass: the build proves it);
- **same issue, held out**: the real reply of another ticket raising the same issue, one
  the task's knowledge base does not hold, with this task's required facts appended (a
  reply a person could have written for this customer): the share that passes is the
  verifier's false-reject side (goal >= 95%);
- **the same, its customer's values removed**: that reply with the values specific to its
  own ticket (what `distinctive` finds: pseudonyms, ids, amounts) taken out, as a person
  writing to this customer would; another customer's order number is forbidden content,
  rightly, so the raw row counts some fair rejections as false ones;
- **another issue's reply**: each knowledge-base reply written for another issue, with the
  facts appended (goal 0%), and the same with every fourth word dropped so that no 4-gram
  is copied (a red team's attack; goal 0%);
- **a same issue's KB reply** reworded that way (reported, not a goal: adapting the reply
  to the same issue is what research should find);
- **knowledge-base walk**: a walk over the word pairs of the knowledge base's replies
  holding every fact they hold, never reading the ticket (`kb_walk`; goal 0%);
- **a generic template + the facts**: one fixed, fluent support reply with the task's
  required facts put in, never reading the ticket (goal 0%).

- **a walk with the facts**: the task's own required facts strung on the knowledge
  base's word pairs (no four words in a row copied), never a sentence (goal 0%);
- **a cut stitch**: the first half of every sentence of the knowledge base's replies,
  strung, with the facts (`whole_sentences`; goal 0%);
- **held-out gold**: the real reply of a task whose ticket is not in the train split, so
  the issue classifier (`answers_issue`) never saw it (goal >= 95%); same-issue replies
  are drawn from held-out tickets too;
- **best of N**: per task, whether any of the knowledge base's replies to another issue,
  with the facts, passes (verbatim; and reworded, every fourth word dropped): one count
  per task (goal 0%);
- **a refusal prefix**: a sentence saying the opposite ("we cannot help") before the
  knowledge-base reply nearest the customer's message, with the facts (reported: no
  lexical or bag-of-words gate reads negation).

Each figure is printed with every gate, without `answers_issue` (the verifier before it),
and without it, `on_topic` and `phrased`, on the same tasks. Sources: the sample's
tickets, Bitext, and 48 tickets written by hand for this benchmark
(`benchmarks/data/lumen_tickets.csv`, never used to tune the gates).

    python benchmarks/reply_relevance.py [--source sample|bitext|lumen|both] [--limit 200]
                                         [--work DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the gate measured here adds to a task's reference (`focused`).
GATED = ("topic", "common_trigrams", "issue")
PLANS = {"starter", "growth", "scale", "enterprise", "vip"}
SOURCES = {
    "sample": (ROOT / "sample_data" / "tickets" / "tickets.csv", {}),
    "bitext": (ROOT.parent / "shared" / "data" / "tickets" / "bitext" /
               "bitext_customer_support_sample.csv", {"body": "instruction", "resolution": "response"}),
    # 48 tickets written by hand for this benchmark (a card app; six issues that share most
    # of their words), never used to tune the gates
    "lumen": (ROOT / "benchmarks" / "data" / "lumen_tickets.csv", {}),
}


def _issues(source: str, rows: list[tuple]) -> dict[str, tuple]:
    """The grading label of each ticket: the issue it raises."""
    import csv

    if source == "bitext":
        return {t: (intent,) for t, intent, _ in rows}
    if source != "sample":
        return {t: (category,) for t, _, category in rows}
    path = SOURCES[source][0]
    with path.open(newline="") as f:
        tags = {r["id"]: tuple(x for x in r["tags"].split(", ") if x not in PLANS)
                for r in csv.DictReader(f)}
    return {t: tags.get(t.rsplit(":", 1)[-1], (category,)) for t, _, category in rows}


def _tasks(source: str, limit: int, work: Path) -> tuple[list[tuple[Path, dict]], list[tuple], dict]:
    """(task dir, reference) of up to `limit` reply tasks built from `source`, the rows
    (ticket_id, resolution) of every ticket of the export, and each ticket's issue."""
    import json

    from rlforge import db
    from rlforge.config import Config
    from rlforge.execution.local import LocalBackend
    from rlforge.ingest import tickets
    from rlforge.tasks.build import BuildOptions, build_tasks

    path, mapping = SOURCES[source]
    con = db.connect(work / f"{source}.duckdb")
    tickets.ingest_file(con, path, mapping=mapping)
    out = work / f"{source}-tasks"
    cfg = Config.load()
    build_tasks(con, BuildOptions(out=out, generators=["tickets.reply"], limit=limit, seed=0,
                                  validate=False, config=cfg,
                                  backend=LocalBackend.from_config(cfg)))
    rows = con.execute("SELECT ticket_id, resolution, intent, category FROM tickets "
                       "WHERE resolution IS NOT NULL ORDER BY ticket_id").fetchall()
    con.close()
    issues = _issues(source, [(t, i, c) for t, _, i, c in rows])
    found = []
    for d in sorted(p for p in out.iterdir() if (p / "task.toml").is_file()):
        found.append((d, json.loads((d / "tests" / "reference.json").read_text())))
    return found, [(t, r) for t, r, _, _ in rows], issues


#: A reply any ticket could get, with the facts put in (`{facts}`).
TEMPLATE = ("Thanks for the details. I've checked your account and made the change on our "
            "side. Please sign in, then go to {facts} and set it up again from there. You'll "
            "get an e-mail when it is done, and you can follow it from your account. Thanks "
            "again,\nSupport")


def _drop_every(text: str, n: int) -> str:
    return " ".join(w for i, w in enumerate(text.split()) if i % n != n - 1)


def _kb_tickets(task: Path) -> list[tuple[str, str]]:
    """(file name, reply) of each knowledge-base ticket of a task."""
    out = []
    for f in sorted((task / "environment" / "app" / "kb" / "tickets").glob("*.md")):
        out.append((f.name, f.read_text().split("## Resolution sent", 1)[-1].strip()))
    return out


def _gold(task: Path) -> str:
    script = (task / "solution" / "solve.sh").read_text()
    return script.split("<<'RLFORGE_ANSWER_EOF'\n", 1)[1].rsplit("\nRLFORGE_ANSWER_EOF", 1)[0]


def _cut_stitch(replies: list[str], facts: list[str], budget: int) -> str:
    """The first half of every sentence of eight words or more of `replies`, strung until
    `budget` words, then the facts."""
    import re

    body, n = [], 0
    for reply in replies:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", reply):
            w = sentence.split()
            part = w[:max(4, len(w) // 2)]
            if len(w) >= 8 and n + len(part) <= budget:
                body.append(" ".join(part).rstrip(".,;:") + ".")
                n += len(part)
    return " ".join(body) + "\n\n" + " ".join(f"{f}." for f in facts)


def _cleaned(reply: str) -> str:
    """A reply without the values specific to its own ticket."""
    from rlforge.tasks.generators.tickets_reply import distinctive

    for value in sorted(distinctive(reply), key=len, reverse=True):
        reply = reply.replace(value, "")
    return reply


KINDS = ("gold", "gold_heldout", "same_issue", "same_cleaned", "other_issue", "other_reworded",
         "best_of_n_other", "best_of_n_reworded", "refusal_prefix", "same_kb_reworded",
         "kb_walk", "walk_facts", "cut_stitch", "template")
#: Pasted before the knowledge base's reply nearest the customer's message (a red team's
#: attack: the reply now says the opposite).
REFUSAL = ("Unfortunately none of the following applies to you and we cannot help with this "
           "request. ")


def measure(source: str, limit: int, work: Path | None = None) -> dict:
    import pickle
    import random
    import tomllib

    from rlforge.tasks.generators import kb_search
    from rlforge.tasks.generators.tickets_reply import kb_name, kb_walk
    from rlforge.tasks.splits import hash_split
    from rlforge.verify.standalone.replies import score_reply

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        cache = work / "cache.pkl" if work else None
        if cache and cache.is_file():  # a build kept by an earlier --work run
            tasks, rows, issues = pickle.loads(cache.read_bytes())
        else:
            tasks, rows, issues = _tasks(source, limit, work or Path(tmp))
            if cache:
                cache.write_bytes(pickle.dumps((tasks, rows, issues)))
        build_sec = time.perf_counter() - started
        by_name = {kb_name(t): t for t, _ in rows}
        rng = random.Random(0)
        counts = {k: [0, 0, 0, 0] for k in KINDS}  # n, pass: every gate, no issue gate, neither
        for task, ref in tasks:
            meta = tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]
            target = meta["source_keys"][0]
            variants = (ref, {k: v for k, v in ref.items() if k != "issue"},
                        {k: v for k, v in ref.items() if k not in GATED})
            facts = " ".join(ref["required"])

            def best_of(kind: str, texts: list[str]) -> None:
                """One count per task: whether any of `texts` passes (best of N), under
                each variant of the reference."""
                if texts:
                    counts[kind][0] += 1
                    for v, variant in enumerate(variants, 1):
                        counts[kind][v] += any(score_reply(variant, t)["outcome"] == "pass"
                                               for t in texts)

            def tally(kind: str, text: str) -> None:
                best_of(kind, [text])

            tally("gold", _gold(task))
            if hash_split(target) != "train":  # a reply the issue model never saw
                tally("gold_heldout", _gold(task))
            kb = _kb_tickets(task)
            held = {by_name[name] for name, _ in kb}
            same = [r for t, r in rows if t != target and t not in held
                    and issues[t] == issues[target] and hash_split(t) != "train"]
            rng.shuffle(same)
            for reply in same[:3]:
                tally("same_issue", reply + "\n\n" + facts)
                tally("same_cleaned", _cleaned(reply) + "\n\n" + facts)
            others = [reply for name, reply in kb if issues[by_name[name]] != issues[target]]
            best_of("best_of_n_other", [r + "\n\n" + facts for r in others])
            best_of("best_of_n_reworded", [_drop_every(r, 4) + "\n\n" + facts for r in others])
            docs = [(task / "environment" / "app" / "kb" / "tickets" / name).read_text()
                    for name, _ in kb]
            index = kb_search.Index([kb_search.tokens(d) for d in docs])
            scores = index.scores(kb_search.tokens((task / "instruction.md").read_text()))
            nearest = max(range(len(kb)), key=lambda i: (scores.get(i, 0), -i)) if kb else None
            if nearest is not None:
                tally("refusal_prefix", REFUSAL + kb[nearest][1] + "\n\n" + facts)
            for name, reply in kb:
                if issues[by_name[name]] == issues[target]:
                    tally("same_kb_reworded", _drop_every(reply, 4) + "\n\n" + facts)
                else:
                    tally("other_issue", reply + "\n\n" + facts)
                    tally("other_reworded", _drop_every(reply, 4) + "\n\n" + facts)
            tally("kb_walk", kb_walk([r for _, r in kb], ref["max_words"]))
            tally("walk_facts", kb_walk([r for _, r in kb], max(ref["min_words"] + 10, 40),
                                        ref["required"]))
            tally("cut_stitch", _cut_stitch([r for _, r in kb], ref["required"],
                                            (ref["min_words"] + ref["max_words"]) // 2))
            tally("template", TEMPLATE.format(facts=" and ".join(ref["required"])))
    return {"source": source, "tasks": len(tasks), "build_sec": round(build_sec, 1),
            **{k: {"n": n, "pass": a / n if n else None, "pass_without_issue": b / n if n else None,
                   "pass_without_meaning": c / n if n else None}
               for k, (n, a, b, c) in counts.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=[*SOURCES, "both"], default="both")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--work", type=Path, help="keep the build here (per source) and reuse it")
    args = parser.parse_args()
    for source in (["sample", "bitext"] if args.source == "both" else [args.source]):
        work = args.work / source if args.work else None
        if work:
            work.mkdir(parents=True, exist_ok=True)
        result = measure(source, args.limit, work)
        print(f"{source}: {result['tasks']} tasks (built in {result['build_sec']} s)")
        for kind in KINDS:
            r = result[kind]
            if r["n"]:
                print(f"  {kind:18s} n={r['n']:5d}  pass {r['pass']:6.1%}  without answers_issue "
                      f"{r['pass_without_issue']:6.1%}  without it, on_topic, phrased "
                      f"{r['pass_without_meaning']:6.1%}")


if __name__ == "__main__":
    main()
