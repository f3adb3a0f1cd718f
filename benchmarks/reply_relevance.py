"""Does a tickets.reply task tell a reply to *this* ticket from one that is not?

For reply tasks built from a ticket export, scores with the task's own verifier
(`score_reply`, as every path does):

- **gold**: the ticket's real resolution (must pass: the build proves it);
- **held-out real replies**: the resolutions of *other* tickets of the export that hold
  every required fact of the task (real replies to the same issue, written for another
  customer; none is in the task's knowledge base's place of the target): the share that
  passes is the verifier's false-reject side (goal >= 95%);
- **knowledge-base walk**: a walk over the word pairs of the knowledge base's replies
  holding every fact they hold, never reading the ticket (`kb_walk`, the attack the
  `focused` gate is for; goal: 0% pass);
- **a knowledge-base reply + the facts**: each reply the knowledge base holds (another
  customer's ticket, which the policy can copy) with this task's required facts appended
  (goal 0%), and apart from those a precedent's: one sharing much of the real reply's
  wording, as a help desk's macros do (the real reply itself shares 89-100% of its
  4-grams with one in sample_data), so sending it again is the answer, not a copy;
- **a knowledge-base reply with every fourth word dropped + the facts** (a red team's
  attack: no 4-gram is copied, most word pairs are kept; goal 0%);
- **a generic template + the facts**: one fixed, fluent support reply with the task's
  required facts put in, never reading the ticket (goal 0%).

Each figure is printed with the `focused` gate (distractor facts) and without it (the
verifier before it), on the same tasks.

    python benchmarks/reply_relevance.py [--source sample|bitext|both] [--limit 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the gate measured here adds to a task's reference (`focused`).
GATED = ("distractors", "max_distractors")
SOURCES = {
    "sample": (ROOT / "sample_data" / "tickets" / "tickets.csv", {}),
    "bitext": (ROOT.parent / "shared" / "data" / "tickets" / "bitext" /
               "bitext_customer_support_sample.csv", {"body": "instruction", "resolution": "response"}),
}


def _tasks(source: str, limit: int, work: Path) -> tuple[list[tuple[Path, dict]], list[tuple]]:
    """(task dir, reference) of up to `limit` reply tasks built from `source`, and the rows
    (ticket_id, category, resolution) of every ticket of the export."""
    import json

    from rlforge import db
    from rlforge.ingest import tickets
    from rlforge.tasks.build import BuildOptions, build_tasks

    path, mapping = SOURCES[source]
    con = db.connect(work / f"{source}.duckdb")
    tickets.ingest_file(con, path, mapping=mapping)
    out = work / f"{source}-tasks"
    build_tasks(con, BuildOptions(out=out, generators=["tickets.reply"], limit=limit, seed=0,
                                  validate=False))
    rows = con.execute("SELECT ticket_id, category, resolution FROM tickets "
                       "WHERE resolution IS NOT NULL").fetchall()
    con.close()
    found = []
    for d in sorted(p for p in out.iterdir() if (p / "task.toml").is_file()):
        found.append((d, json.loads((d / "tests" / "reference.json").read_text())))
    return found, rows


#: A reply any ticket could get, with the facts put in (`{facts}`).
TEMPLATE = ("Thanks for the details. I've checked your account and made the change on our "
            "side. Please sign in, then go to {facts} and set it up again from there. You'll "
            "get an e-mail when it is done, and you can follow it from your account. Thanks "
            "again,\nSupport")


def _drop_every(text: str, n: int) -> str:
    return " ".join(w for i, w in enumerate(text.split()) if i % n != n - 1)


def _kb_replies(task: Path) -> list[str]:
    out = []
    for f in sorted((task / "environment" / "app" / "kb" / "tickets").glob("*.md")):
        text = f.read_text()
        out.append(text.split("## Resolution sent", 1)[-1].strip())
    return out


def _gold(task: Path) -> str:
    script = (task / "solution" / "solve.sh").read_text()
    return script.split("<<'RLFORGE_ANSWER_EOF'\n", 1)[1].rsplit("\nRLFORGE_ANSWER_EOF", 1)[0]


def measure(source: str, limit: int) -> dict:
    import tomllib

    from rlforge.tasks.tickets_reply import kb_walk
    from rlforge.verify.standalone import COPY_N, COPY_SHARE, _ngrams, contains, score_reply, words

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        tasks, rows = _tasks(source, limit, Path(tmp))
        build_sec = time.perf_counter() - started
        kinds = ("gold", "held_out", "kb_walk", "kb_reply", "kb_precedent", "kb_dropped",
                 "template")
        counts = {k: [0, 0, 0] for k in kinds}  # n, pass with the gate, pass without
        for task, ref in tasks:
            meta = tomllib.loads((task / "task.toml").read_text())["metadata"]["rlforge"]
            target = meta["source_keys"][0]
            old = {k: v for k, v in ref.items() if k not in GATED}

            def tally(kind: str, text: str) -> None:
                counts[kind][0] += 1
                counts[kind][1] += score_reply(ref, text)["outcome"] == "pass"
                counts[kind][2] += score_reply(old, text)["outcome"] == "pass"

            gold = _gold(task)
            tally("gold", gold)
            same = [r for t, c, r in rows if t != target and r.strip() != gold.strip()
                    and all(contains(r, f) for f in ref["required"])]
            for reply in same[:5]:
                tally("held_out", reply)
            kb = _kb_replies(task)
            tally("kb_walk", kb_walk(kb, ref["max_words"]))
            mine = _ngrams(words(gold), COPY_N)
            for reply in kb:  # a precedent shares much of the real reply's wording
                precedent = len(mine & _ngrams(words(reply), COPY_N)) > COPY_SHARE / 2 * len(mine)
                tally("kb_precedent" if precedent else "kb_reply",
                      reply + "\n\n" + " ".join(ref["required"]))
                tally("kb_dropped", _drop_every(reply, 4) + " " + " ".join(ref["required"]))
            tally("template", TEMPLATE.format(facts=" and ".join(ref["required"])))
    return {"source": source, "tasks": len(tasks), "build_sec": round(build_sec, 1),
            **{k: {"n": n, "pass_with_focused": p / n if n else None,
                   "pass_without": q / n if n else None} for k, (n, p, q) in counts.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=["sample", "bitext", "both"], default="both")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    for source in (["sample", "bitext"] if args.source == "both" else [args.source]):
        result = measure(source, args.limit)
        print(f"{source}: {result['tasks']} tasks (built in {result['build_sec']} s)")
        for kind in ("gold", "held_out", "kb_walk", "kb_reply", "kb_precedent", "kb_dropped",
                     "template"):
            r = result[kind]
            if r["n"]:
                print(f"  {kind:12s} n={r['n']:5d}  pass with focused {r['pass_with_focused']:.1%}"
                      f"  without {r['pass_without']:.1%}")


if __name__ == "__main__":
    main()
