"""How many log tasks a shortcut answers: the shortcut battery's solve rate per family.

Each log file given is ingested into a fresh database (the same library function `rlforge
ingest logs` calls), then the log generators make every task they can of it (seed 0, no
limit, not rendered or validated). For each `logs.diagnose` task, every strategy of the
shortcut battery (`rlforge/verify/shortcuts.py`) guesses from the question and the window
as the policy sees them, and the task's own answer checker scores the guess: a task any
guess gets right is trivial. For each `logs.script` task, the shortcut is the visible
answer printed for the held-back case (a program that remembers it), and every cheap
program of the script battery (`rlforge/verify/shortcuts_script.py`) run on the visible and
the held-back directory: a task one program passes on both is trivial.

The rules the battery bounds to chance (`CHANCE_RULES`: the most- or least-failing
candidate, the last one to fail, the alphabetically first or last failing one, the first
or last option, the least frequent option) are reported per rule:
the tasks it answers against the number a blind pick would (one over the candidates,
summed); a rule above chance is a shortcut.

Beside it, a few strategies the battery does not hold (`held_out` below: the count of
records whose message ends with the pattern's last fixed piece, the last record's time,
the first WARN-or-worse record's time, the alphabetically first of every candidate, failing
or not (the battery bounds the first of the failing ones); for
logs.script, `grep -c` of the pattern's last piece or of its two longest words, the
distinct words after the piece before the asked `<*>`, the distinct messages holding every
word of the pattern, split as `: ` splits them (the battery holds its own reading of it))
are scored the same way and reported in their own columns: the builder never screened
against them, so their rate is not zero by construction.

With `--tickets FILE[::FIELD=PATH,...]` (a ticket export and its `--map`), the tickets
are ingested into one database, `tickets.triage` makes every task it can (seed 0), and the
tasks are split as `rlforge build-tasks` splits them (hash split, near-duplicate, related
and subject groups). Each task is then guessed from what a policy trained on the other
splits saw: the label of a ticket of another split with the same normalised subject
(`same_subject_label`), or a near-identical one (`near_subject_label`: a typo in one word,
one word more), and the triage battery's strategies with the other splits'
tickets as the seen ones; held out, the label of the other-split ticket whose subject's
word set is most similar (Jaccard at least 0.6). Printed per split, with the largest split
group's share of the tasks.

The battery is always this checkout's file; the generators are those of the rlforge found
first on the path, so `--rlforge DIR` (another checkout, e.g. a worktree of main) measures
what an older generator emits ("before") against the same battery:

    .venv/bin/python benchmarks/shortcuts.py [--rlforge DIR] [--seed 0] \\
        [--tickets FILE[::FIELD=PATH,...]] ... [FILE[::FORMAT] ...]

FORMAT is any `rlforge ingest logs --format` value (default: auto). Prints, per source,
the tasks each generator made, and per family the tasks, the trivial ones and the
shortcuts that got them; the last line is the share of trivial tasks over all.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_battery():
    """This checkout's shortcut batteries (the log window's, then the script one's),
    whichever rlforge is imported: the script battery is stdlib-only, and is put where the
    window battery imports it from."""
    script = _load("rlforge.verify.shortcuts_script", ROOT / "rlforge/verify/shortcuts_script.py")
    battery = _load("shortcut_battery", ROOT / "rlforge/verify/shortcuts.py")
    battery.script = script
    return battery


def held_out_script(script) -> dict:
    """Cheap programs for logs.script the script battery does not hold: name -> f(fact,
    pattern, slot, text) -> count or None."""
    import re

    def lines(text):
        return [line for line in text.splitlines() if line and not line.startswith("\t")]

    def last_piece(fact, pattern, slot, text):
        piece = pattern.split("<*>")[-1].strip() if pattern else ""
        return sum(piece in line for line in lines(text)) if piece else None

    def two_words(fact, pattern, slot, text):
        words = sorted(re.findall(r"[A-Za-z_]\w+", (pattern or "").replace("<*>", " ")),
                       key=len)[-2:]
        return sum(all(w in line for w in words) for line in lines(text)) if words else None

    def words_after(fact, pattern, slot, text):
        if fact != "distinct_values" or not pattern:
            return None
        before = pattern.split("<*>")[slot - 1].split()
        if not before:
            return None
        key = before[-1]
        return len({m.group(1) for line in lines(text)
                    for m in [re.search(re.escape(key) + r"(\w*)", line)] if m})

    def distinct_all_words(fact, pattern, slot, text):
        if fact != "distinct_values" or not pattern:
            return None
        words = re.findall(r"[A-Za-z_]\w+", pattern.replace("<*>", " "))
        hits = {line.split(": ", 1)[-1] for line in lines(text) if all(w in line for w in words)}
        return len(hits) if words else None

    return {"grep_last_piece": last_piece, "grep_two_words": two_words,
            "distinct_word_after_piece": words_after,
            "distinct_messages_all_words": distinct_all_words}


def held_out_script_files(script) -> dict:
    """Cheap programs for logs.script's other facts that read the files one by one (never
    merged by time): name -> f(fact, files) -> answer or None."""
    import datetime as dt
    import gzip as gz
    from collections import Counter

    def records(data: bytes, name: str):
        text = (gz.decompress(data) if name.endswith(".gz") else data).decode("utf-8", "replace")
        return [m.groups() for line in text.splitlines() if (m := script.LINE.match(line))]

    def biggest_file(fact, files):
        """The fact over the largest file alone (the one the instruction previews)."""
        name = max(files, key=lambda n: len(files[n]))
        recs = records(files[name], name)
        if fact == "busiest_minute":
            top = Counter(r[0][:16].replace("T", " ") for r in recs).most_common(1)
            return top[0][0] if top else None
        if fact == "top_component":
            top = Counter(r[3] for r in recs if r[3] != "-").most_common(1)
            return top[0][0] if top else None
        if fact == "top_host":
            top = Counter(r[1] for r in recs if r[1] != "-").most_common(1)
            return top[0][0] if top else None
        return None

    def gap_per_file(fact, files):
        """The longest gap within one file (rotated parts and services not merged)."""
        if fact != "longest_gap":
            return None
        best = None
        for name, data in files.items():
            stamps = [dt.datetime.fromisoformat(r[0]) for r in records(data, name)]
            for a, b in zip(stamps, stamps[1:]):
                if best is None or b - a > best[0]:
                    best = (b - a, a)
        return best[1].strftime("%Y-%m-%d %H:%M:%S") if best else None

    def first_error_in_order(fact, files):
        """The first ERROR/FATAL line in file-name order (not the earliest by time)."""
        if fact != "first_error_time":
            return None
        for name in sorted(files):
            for r in records(files[name], name):
                if r[2] in ("ERROR", "FATAL"):
                    return r[0][:19].replace("T", " ")
        return None

    return {"fact_of_biggest_file": biggest_file, "gap_per_file": gap_per_file,
            "first_error_in_name_order": first_error_in_order}


def held_out(battery) -> dict:
    """Strategies the battery does not hold, over its view of a question."""
    import re

    def stamp(v, t):
        return None if t is None else t.strftime(
            "%Y-%m-%d %H:%M" if "`YYYY-MM-DD HH:MM`" in v.question else "%Y-%m-%d %H:%M:%S")

    def grep_last_piece(v):
        m = re.search(r"match the pattern `([^`]+)`", v.question)
        piece = m.group(1).split("<*>")[-1].strip() if m else ""
        return str(sum(1 for r in v.lines if r.message.endswith(piece))) if piece else None

    def first_warn_time(v):
        hit = next((r for r in v.lines if r.level in ("WARN", "ERROR", "FATAL")), None)
        return stamp(v, hit.time) if hit and "`YYYY-MM-DD HH:MM" in v.question else None

    def first_candidate(v):
        m = re.match(r"Which (component|host) failed first", v.question)
        values = sorted({getattr(r, m.group(1)) for r in v.lines} - {"-"}) if m else []
        return values[0] if values else None

    return {
        "grep_last_piece": grep_last_piece,
        "last_record_time": lambda v: stamp(v, v.lines[-1].time)
        if v.lines and "`YYYY-MM-DD HH:MM" in v.question else None,
        "first_warn_time": first_warn_time,
        "first_candidate": first_candidate,
    }


def measure(path: Path, fmt: str, seed: int, battery) -> dict:
    """Tasks of one log file, and for each its family and the shortcuts that answer it."""
    from rlforge import db
    from rlforge.ingest import logs
    from rlforge.tasks.generators.logs_diagnose import LogsDiagnose
    from rlforge.tasks.generators.logs_script import LogsScript
    from rlforge.tasks.spec import BuildContext

    with tempfile.TemporaryDirectory() as tmp:
        con = db.connect(Path(tmp) / "bench.duckdb")
        logs.ingest_file(con, path, fmt=fmt)
        rows, extra = [], held_out(battery)
        rules: list[tuple[str, list[str], float, set[str]]] = []
        from rlforge.verify.standalone.answers import score_answer

        diagnose = LogsDiagnose()
        for spec in diagnose.specs(BuildContext(con, seed)):
            kind = spec.extra_metadata["question_kind"]
            view = battery.view(kind, spec.context["question"], spec.context["window"])
            solved = battery.solved_by(view, spec.reference)
            other = sorted(name for name, f in extra.items() if (guess := f(view))
                           and score_answer(spec.reference, guess)["total"] > 1e-9)
            rows.append(("logs.diagnose", kind, sorted(solved), other))
            applies = {name for name, rule in battery.CHANCE_RULES.items() if rule(view)}
            rules.append((kind, sorted(battery.rules_solving(view, spec.reference)),
                          battery.chance(view), applies))
        script = LogsScript()
        unseen = held_out_script(battery.script)
        unseen_files = held_out_script_files(battery.script)
        for spec in script.specs(BuildContext(con, seed)):
            answers = [c["answer"]["answer"] for c in spec.reference["cases"]]
            meta = spec.extra_metadata
            fact, pattern, slot = meta["fact"], meta.get("pattern"), int(meta.get("slot", 1))
            other = (meta["other_pattern"], int(meta.get("other_slot", 1))) \
                if meta.get("other_pattern") else None
            cases = [({k.rpartition("/")[2]: v for k, v in spec.workspace.items()}, answers[0]),
                     ({k.rpartition("/")[2]: v for k, v in spec.tests_data.items()}, answers[1])]
            solved = ["visible_answer"] if answers[0] == answers[1] else []
            other = []
            if isinstance(answers[0], int):  # a numeric fact: the cheap programs
                solved += sorted(battery.script.solved(fact, pattern, spec.context["statement"],
                                                       cases, slot, other))
                texts = {mode: [battery.script.read_files(f, mode) for f, _ in cases]
                         for mode in battery.script.MODES}
                other = sorted({name for name, f in unseen.items() for ts in texts.values()
                                if all(f(fact, pattern, slot, t) == a
                                       for t, a in zip(ts, answers))})
            else:
                other = sorted(name for name, f in unseen_files.items()
                               if all(f(fact, files) == a for files, a in cases))
            rows.append(("logs.script", fact, solved, other))
        dropped = Counter(r["reason"].split(" (")[0] for r in script.rejections)
        con.close()
    return {"rows": rows, "script_drops": dropped, "rules": rules}


def print_rules(rules: list[tuple[str, list[str], float, set[str]]], battery) -> None:
    """Per chance-bounded rule: the logs.diagnose tasks it applies to, those it answers,
    and those a blind pick would answer (over the same tasks)."""
    print(f"\n{'rule (bounded to chance)':<26} {'applies':>7} {'answers':>7} {'chance':>6}  per family")
    for name in battery.CHANCE_RULES:
        mine = [r for r in rules if name in r[3]]
        if not mine:
            continue
        hits = sum(name in r[1] for r in mine)
        odds = sum(r[2] for r in mine)
        fams = Counter(r[0] for r in mine if name in r[1])
        print(f"{name:<26} {len(mine):>7} {hits:>7} {odds:>6.1f}  "
              + ", ".join(f"{k} {v}/{sum(1 for r in mine if r[0] == k)}" for k, v in fams.most_common()))


def load_triage_battery():
    """This checkout's triage battery (standard library only)."""
    return _load("triage_battery", ROOT / "rlforge/verify/shortcuts_triage.py")


def measure_tickets(items: list[str], seed: int, triage) -> dict:
    """`tickets.triage` tasks of the ticket exports, split as a build splits them, and the
    strategies that label each from the other splits' tickets."""
    import re
    import types

    from rlforge import db
    from rlforge.ingest import tickets
    from rlforge.tasks import build
    from rlforge.tasks.generators.tickets_triage import TicketTriage
    from rlforge.tasks.spec import BuildContext

    def first_words(subject):
        return {w for w in re.findall(r"[a-z0-9]+", (subject or "").lower()) if len(w) >= 2}

    def similar_subject(subject, others):
        mine = first_words(subject)
        best = max(((len(mine & first_words(t)) / len(mine | first_words(t)), label)
                    for t, label in others if mine | first_words(t)),
                   default=(0.0, None), key=lambda x: x[0])
        return best[1] if best[0] >= 0.6 else None

    with tempfile.TemporaryDirectory() as tmp:
        con = db.connect(Path(tmp) / "bench.duckdb")
        for item in items:
            name, _, maps = item.partition("::")
            mapping = dict(m.split("=", 1) for m in maps.split(",") if m)
            tickets.ingest_file(con, Path(name), mapping=mapping)
        specs = list(TicketTriage().specs(BuildContext(con, seed)))
        con.close()
    opts = types.SimpleNamespace(split_by="hash", cutoff=None, ratios=(0.8, 0.1, 0.1))
    splits = build._assign_splits(specs, opts)
    groups = Counter(build.near_duplicate_groups(
        [s.group_key for s in specs], [s.dedup_text for s in specs],
        [s.related_groups for s in specs],
        *([[s.subject_key for s in specs]] if hasattr(specs[0], "subject_key") else [])))
    rows = []
    for i, spec in enumerate(specs):
        subject, text = spec.context["subject"], f"{spec.context['subject']}\n{spec.context['body']}"
        others = [(o.context["subject"], o.reference["answer"]) for j, o in enumerate(specs)
                  if splits[j] != splits[i]]
        seen = triage.Seen([f"{o.context['subject']}\n{o.context['body']}" for o in specs])
        for j, o in enumerate(specs):
            if splits[j] != splits[i]:
                seen.add(f"{o.context['subject']}\n{o.context['body']}", o.reference["answer"])
        view = triage.TriageView(text, spec.reference["labels"], seen)
        solved = sorted(triage.solved(view, spec.reference["answer"]))
        guess = triage.same_subject_label(subject, others)
        if guess and triage.solved(view, spec.reference["answer"], {"x": lambda v: guess}):
            solved.append("same_subject_label")
        near = triage.same_subject_label(subject, others, near=True)
        if near and triage.solved(view, spec.reference["answer"], {"x": lambda v: near}):
            solved.append("near_subject_label")
        guess = similar_subject(subject, others)
        other = ["similar_subject_label"] if guess and triage.solved(
            view, spec.reference["answer"], {"x": lambda v: guess}) else []
        rows.append((splits[i], solved, other))
    return {"rows": rows, "largest_group": max(groups.values(), default=0), "tasks": len(specs)}


def print_tickets(got: dict) -> None:
    rows = got["rows"]
    print(f"tickets.triage: {got['tasks']} tasks; largest split group {got['largest_group']} "
          f"tasks ({got['largest_group'] / max(1, got['tasks']):.1%})")
    print(f"{'split':<6} {'tasks':>5} {'trivial':>7} {'share':>6} {'held-out':>8} {'share':>6}  shortcuts")
    for split in ("train", "val", "test", "all"):
        mine = [r for r in rows if split in ("all", r[0])]
        if not mine:
            continue
        t = sum(1 for _, s, _ in mine if s)
        u = sum(1 for _, _, o in mine if o)
        names = Counter(x for _, s, o in mine for x in s + o)
        print(f"{split:<6} {len(mine):>5} {t:>7} {t / len(mine):>6.0%} {u:>8} "
              f"{u / len(mine):>6.0%}  " + ", ".join(f"{k} {v}" for k, v in names.most_common()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="FILE or FILE::FORMAT")
    parser.add_argument("--tickets", action="append", default=[],
                        help="a ticket export, FILE or FILE::FIELD=PATH,... (its --map)")
    parser.add_argument("--rlforge", type=Path, default=ROOT,
                        help="the rlforge checkout whose generators make the tasks")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.rlforge.resolve()))
    battery = load_battery()
    import rlforge

    print(f"generators: {Path(rlforge.__file__).parent.parent}; battery: "
          f"{ROOT / 'rlforge/verify/shortcuts.py'} ({len(battery.STRATEGIES)} strategies)")
    if args.tickets:
        print_tickets(measure_tickets(args.tickets, args.seed, load_triage_battery()))
    families: dict[tuple[str, str], list[tuple[list[str], list[str]]]] = defaultdict(list)
    rules: list[tuple[str, list[str], float, set[str]]] = []
    for item in args.files:
        name, _, fmt = item.partition("::")
        started = time.perf_counter()
        got = measure(Path(name), fmt or "auto", args.seed, battery)
        per_gen = Counter(row[0] for row in got["rows"])
        print(f"{Path(name).name}: logs.diagnose {per_gen['logs.diagnose']} tasks, logs.script "
              f"{per_gen['logs.script']} tasks ({time.perf_counter() - started:.1f}s)")
        for reason, n in got["script_drops"].most_common():
            print(f"    logs.script dropped {n} × {reason}")
        for gen, family, solved, other in got["rows"]:
            families[(gen, family)].append((solved, other))
        rules += got["rules"]
    print(f"\n{'generator':<14} {'family':<24} {'tasks':>5} {'trivial':>7} {'share':>6} "
          f"{'held-out':>8} {'share':>6} {'either':>6}  shortcuts")
    total = trivial = unseen = either = 0
    for (gen, family), got_rows in sorted(families.items()):
        n = len(got_rows)
        t = sum(1 for s, _ in got_rows if s)
        u = sum(1 for _, o in got_rows if o)
        e = sum(1 for s, o in got_rows if s or o)
        names = Counter(x for s, o in got_rows for x in s + o)
        total, trivial, unseen, either = total + n, trivial + t, unseen + u, either + e
        print(f"{gen:<14} {family:<24} {n:>5} {t:>7} {t / n:>6.0%} {u:>8} {u / n:>6.0%} "
              f"{e / n:>6.0%}  " + ", ".join(f"{k} {v}" for k, v in names.most_common(4)))
    if total:
        print(f"{'all':<39} {total:>5} {trivial:>7} {trivial / total:>6.0%} {unseen:>8} "
              f"{unseen / total:>6.0%} {either / total:>6.0%}")
    if rules:
        print_rules(rules, battery)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
