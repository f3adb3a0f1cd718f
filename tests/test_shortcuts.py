"""The shortcut battery: a log question a cheap strategy answers is not emitted (and says
why), `rlforge validate` refuses one that slipped through, and logs.script asks questions
of every shipped log format, each dropped candidate with its reason."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections import Counter

import pytest

from builds import build_options
from rlforge import db
from rlforge.ingest import logs
from rlforge.tasks.generators.logs_diagnose import LogsDiagnose
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.logs_script import LogsScript
from rlforge.tasks.spec import BuildContext
from rlforge.verify import shortcuts_script

HEADER = "<Date> <Time> <Host> <Level> <Component>: <Content>"
START = dt.datetime(2026, 3, 1, 10, 0, 0)


def _ingest(tmp_path, rows: list[tuple[str, str, str]], name: str = "svc.log",
            db_file=None):
    """A header-format log of (level, component, message) rows, one every 2 seconds, on
    two hosts; a database holding it."""
    lines = [f"{(START + dt.timedelta(seconds=2 * i)).strftime('%Y-%m-%d %H:%M:%S')} "
             f"node-{i % 2} {level} {comp}: {msg}" for i, (level, comp, msg) in enumerate(rows)]
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    con = db.connect(db_file or tmp_path / "x.duckdb")
    logs.ingest_file(con, tmp_path / name, fmt=HEADER)
    return con


def _chatter(i: int) -> tuple[str, str, str]:
    """An INFO record of three templates, each with a fixed piece found only in its own."""
    return [("INFO", "web", f"user {i * 7 % 97} logged in from gateway"),
            ("INFO", "cache", f"cache refresh took {i * 13 % 89} ms"),
            ("INFO", "web", f"heartbeat ok seq {i}")][i % 3]


def _only_one_component_fails():
    return [_chatter(i) if i < 30 or i % 5 else ("ERROR", "db", f"query {i} failed: deadlock")
            for i in range(60)]


def _burst_from_the_first_error():
    return [("ERROR", "db", f"query {i} failed: deadlock") if 30 <= i < 36 else _chatter(i)
            for i in range(60)]


def _precursor_just_before_the_failure():
    rows = [_chatter(i) for i in range(60)]
    rows[39] = ("INFO", "db", "replica lag 412 seconds behind primary")
    rows[40:46] = [("ERROR", "db", f"query {i} failed: deadlock") for i in range(6)]
    return rows


def _one_pattern_dominates_everywhere():
    rows = [_chatter(i) for i in range(60)]
    for i in range(20, 56, 4):
        rows[i] = ("ERROR", "db", f"disk full on volume {i}")
    for i in (22, 34, 46):
        rows[i] = ("ERROR", "db", f"timeout talking to shard {i}")
    return rows


CASES = [
    ("template_count", "grep_piece_count", lambda: [_chatter(i) for i in range(60)]),
    ("first_failing_component", "only_failing_candidate", _only_one_component_fails),
    ("burst_start", "first_failure_time", _burst_from_the_first_error),
    ("precursor_pattern", "option_before_first_failure", _precursor_just_before_the_failure),
    ("dominant_error_pattern", "most_frequent_option", _one_pattern_dominates_everywhere),
]


@pytest.mark.parametrize("kind, shortcut, rows", CASES, ids=[c[0] for c in CASES])
def test_a_question_a_shortcut_answers_is_not_emitted(tmp_path, kind, shortcut, rows):
    con = _ingest(tmp_path, rows())
    gen = LogsDiagnose(families={kind: 1}, max_count_share=1.0)
    specs = list(gen.specs(BuildContext(con, seed=0)))
    assert [s.extra_metadata["question_kind"] for s in specs] == []
    reasons = [r["reason"] for r in gen.rejections]
    assert any(r.startswith(f"shortcut {shortcut} answers {kind}") for r in reasons), reasons
    assert gen.gates[f"shortcut:{shortcut}"] >= 1


def test_every_strategy_guesses_from_the_question_as_shown():
    from rlforge.verify import shortcuts

    window = ("2026-03-01T10:00:00 h1 INFO web: user 5 logged in from gateway\n"
              "2026-03-01T10:00:02 h1 INFO web: replica lag 3 seconds\n"
              "\tcontinued\n"
              "2026-03-01T10:00:04 h2 ERROR db: disk full on volume 7\n"
              "2026-03-01T10:01:06 h2 ERROR db: disk full on volume 8\n"
              "2026-03-01T10:01:08 h1 WARN web: slow request req_4a5b6c7d8e\n")
    count = shortcuts.view("template_count", "How many records in this window match the "
                           "pattern `disk full on volume <*>`?", window)
    assert shortcuts.guesses(count)["grep_piece_count"] == "2"
    who = shortcuts.view("first_failing_component", "Which component failed first, that is, "
                         "logged the first record at level ERROR or FATAL?", window)
    assert shortcuts.guesses(who)["only_failing_candidate"] == "db"
    when = shortcuts.view("burst_start", "When did it start? in UTC as `YYYY-MM-DD HH:MM:SS`.",
                          window)
    got = shortcuts.guesses(when)
    assert got["first_failure_time"] == "2026-03-01 10:00:04"
    assert got["record_before_first_failure_time"] == "2026-03-01 10:00:02"
    options = "Which?\n\n- `disk full on volume <*>`\n- `replica lag <*> seconds`"
    pre = shortcuts.guesses(shortcuts.view("precursor_pattern", options, window))
    assert pre["option_before_first_failure"] == "replica lag <*> seconds"
    assert pre["most_frequent_option"] == "disk full on volume <*>"
    wide = "Which?\n\n- `disk full on volume <*>`\n- `disk full on volume 7`"
    assert shortcuts.guesses(shortcuts.view("dominant_error_pattern", wide, window))[
        "dominating_option"] == "disk full on volume <*>"
    # scored by the answer checker: a wrong guess solves nothing
    ref = {"answer_kind": "numeric", "answer": 2, "abs_tol": 0}
    assert "grep_piece_count" in shortcuts.solved_by(count, ref)
    assert "grep_piece_count" not in shortcuts.solved_by(count, {**ref, "answer": 3})


def test_validate_refuses_a_task_a_shortcut_answers(tmp_path, cli):
    """A task made trivial after the build (its answer turned into a shortcut's guess,
    the gold solution with it) fails `rlforge validate` on that shortcut."""
    from rlforge.verify import shortcuts

    rows = [_chatter(i) for i in range(60)]
    for i in range(0, 60, 6):  # a piece another template also holds: grep miscounts
        rows[i] = ("INFO", "web", f"user {i} logged in from gateway twice from gateway")
    con = _ingest(tmp_path, rows)
    out = tmp_path / "tasks"
    report = build_tasks(con, build_options(
        out=out, generators=["logs.diagnose"], validate=False,
        generator_options={"logs.diagnose": {"families": {"template_count": 1},
                                             "max_count_share": 1.0}}))
    con.close()
    assert report.emitted >= 1, report.drops
    task = next(p for p in out.iterdir() if p.is_dir())
    assert json.loads(cli("validate", task, "--json").output)["failed"] == 0
    view = shortcuts.view_of_task(task, "template_count")
    guess = shortcuts.guesses(view)["grep_piece_count"]
    ref = json.loads((task / "tests" / "reference.json").read_text())
    assert str(ref["answer"]) != guess
    ref["answer"] = int(guess)
    (task / "tests" / "reference.json").write_text(json.dumps(ref))
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\necho {guess} > /app/answer.txt\n")
    checks = json.loads(cli("validate", task, "--json").output)
    assert checks["failed"] == 1
    assert checks["results"][0]["failure"] == "shortcut"
    assert checks["results"][0]["reason"].startswith("shortcut: grep_piece_count solves the task")


# --- logs.script on every shipped format -------------------------------------------------

def _line(fmt: str, t: dt.datetime, rng: random.Random) -> str:
    host, comp = rng.choice(["web-1", "web-2", "db-1"]), rng.choice(["sshd", "cron", "kernel"])
    msg = rng.choice([f"session opened for user u{rng.randint(1, 4)}",
                      f"job {rng.randint(1, 99)} finished in {rng.randint(1, 900)} ms",
                      f"connection from 10.1.0.{rng.randint(1, 9)}"])
    iso = t.isoformat()
    return {
        "syslog": f"{t.strftime('%b %d %H:%M:%S')} {host} {comp}[{rng.randint(100, 999)}]: {msg}",
        "access": f'10.0.0.{rng.randint(1, 20)} - - [{t.strftime("%d/%b/%Y:%H:%M:%S")} +0000] '
                  f'"GET /{rng.choice(["", "api/items", "login", "cart"])} HTTP/1.1" '
                  f'{rng.choice([200] * 8 + [304, 404])} {rng.randint(100, 9000)} "-" "curl/8"',
        "jsonl": json.dumps({"time": iso + "Z", "level": rng.choice(["info", "debug"]),
                             "logger": comp, "host": host, "msg": msg}),
        "docker": json.dumps({"log": msg + "\n", "stream": "stdout", "time": iso + "Z"}),
        "cri": f"{iso}.000000000Z stdout F {msg}",
        "plain": msg,
        "header": f"{t.strftime('%Y-%m-%d %H:%M:%S')} {host} INFO {comp}: {msg}",
    }[fmt]


def _shipped_formats() -> list[str]:
    from rlforge.ingest.logformats.registry import NAMED_FORMATS

    return [*NAMED_FORMATS, "header"]


@pytest.mark.parametrize("fmt", _shipped_formats())
def test_logs_script_emits_on_every_shipped_format_without_errors(tmp_path, fmt):
    rng, t, lines = random.Random(fmt), START, []
    for _ in range(600):  # no record at level ERROR or FATAL
        t += dt.timedelta(seconds=rng.choice([1, 1, 2, 3, 5, 8]) + 90 * (rng.random() < 0.02))
        lines.append(_line(fmt, t, rng))
    path = tmp_path / f"svc-{fmt}.log"
    path.write_text("\n".join(lines) + "\n")
    con = db.connect(tmp_path / "x.duckdb")
    logs.ingest_file(con, path, fmt=HEADER if fmt == "header" else fmt, year=2026)
    assert not con.execute("SELECT count(*) FROM log_lines WHERE level IN ('error', 'fatal')"
                           ).fetchall()[0][0]
    gen = LogsScript()
    specs = list(gen.specs(BuildContext(con, seed=0)))
    bare = not con.execute("SELECT count(ts) + count(host) + count(component) FROM log_lines"
                           ).fetchall()[0][0]
    if bare:
        # Plain text without times, hosts or components, and no near-duplicate messages:
        # only counts and distinct values of a pattern can be asked, and a cheap program
        # (`grep -c` of its words, `grep -o 'job [^ ]*' | sort -u`) answers each: dropped,
        # each window with the shortcut's name.
        assert not specs
        assert all("shortcut " in r["reason"] or r["reason"].startswith("no question")
                   for r in gen.rejections)
        assert any(r["reason"].startswith("shortcut ") for r in gen.rejections)
    else:
        assert specs, [r["reason"] for r in gen.rejections]
    # no silent zero: every candidate is a task or a reason
    assert len(specs) + len({r["source"] for r in gen.rejections}) == gen.available(con)
    for s in specs:
        visible, held = (c["answer"]["answer"] for c in s.reference["cases"])
        assert visible != held


def test_logs_script_build_prints_its_drop_reasons(tmp_path, cli, db_path):
    rows = [("INFO", "web", "heartbeat ok")] * 300  # one message: nothing differs to ask
    _ingest(tmp_path, rows, db_file=db_path).close()
    result = cli("build-tasks", "--out", tmp_path / "t", "--generators", "logs.script",
                 "--no-validate")
    assert result.exit_code == 1  # nothing emitted is an error, and says why
    assert "dropped 2 × logs.script: no question: first_error_time: no answer in a window" \
        in " ".join(result.output.split())


def test_logs_diagnose_balances_its_families(tmp_path):
    """A log whose every window has a stall but only one in four has errors: the gap family
    fits everywhere and would take most tasks; capped at `max_family_share` of the tasks
    (at every point of the build, once other families fit), the windows it alone fits are
    dropped, saying why."""
    rng, rows = random.Random(4), []
    for i in range(1600):
        if (i // 80) % 4 == 1 and rng.random() < 0.25:
            rows.append(("ERROR", rng.choice(["db", "web", "cache"]),
                         rng.choice([f"query {i} failed: deadlock", f"timeout talking to shard {i % 7}",
                                     f"disk full on volume {i % 3}"])))
        else:
            rows.append(_chatter(i))
    _ingest(tmp_path, rows).close()  # writes svc.log: a record every 2 seconds
    stalls = {80 * w + 37 for w in range(20)}  # one long silence in every window
    lines = (tmp_path / "svc.log").read_text().splitlines()
    t = START
    out = []
    for i, line in enumerate(lines):
        t += dt.timedelta(seconds=2 + (60 if i in stalls else 0))
        out.append(t.strftime("%Y-%m-%d %H:%M:%S") + line[19:])
    (tmp_path / "gaps.log").write_text("\n".join(out) + "\n")
    con = db.connect(tmp_path / "gaps.duckdb")
    logs.ingest_file(con, tmp_path / "gaps.log", fmt=HEADER)
    made, order = {}, {}
    for share in (1.0, 0.25):
        gen = LogsDiagnose(max_family_share=share)
        specs = list(gen.specs(BuildContext(con, seed=0)))
        order[share] = [s.extra_metadata["question_kind"] for s in specs]
        made[share] = Counter(order[share])
        if share < 1:
            assert gen.gates["family_cap"] > 0
            assert any(r["reason"].startswith("family mix: longest_gap") for r in gen.rejections)
    con.close()
    uncapped, capped = made[1.0], made[0.25]
    assert uncapped["longest_gap"] > 0.7 * sum(uncapped.values())  # the gap family dominates
    assert len(capped) >= 3
    # Capped once a second family has fitted: the gaps asked before that stay (the floor
    # is an even share of the families seen), and every gap asked after keeps them at most
    # half of the tasks so far.
    assert not _gaps_over_half_once_another_fits(order[0.25])
    assert _gaps_over_half_once_another_fits(order[1.0])


def _gaps_over_half_once_another_fits(kinds: list[str]) -> bool:
    """Whether a gap question asked after another family's first left the gaps over half
    of the tasks asked so far."""
    second = next((i for i, kind in enumerate(kinds) if kind != "longest_gap"), len(kinds))
    return any(kind == "longest_gap" and kinds[:i + 1].count(kind) > 0.5 * (i + 1)
               for i, kind in enumerate(kinds) if i > second)


def test_logs_script_counts_a_template_a_literal_grep_miscounts():
    """`logs.script` prefers, for a count, a template that a literal `grep -c` of its pieces
    miscounts; `grep_counts` is what such a grep counts."""
    text = "a cache refresh took 5 ms\nb\ncache refresh took 7 ms (slow)\nno cache refresh took\n"
    counts = shortcuts_script.grep_counts("cache refresh took <*> ms", text)
    assert (counts["grep_piece_count"], counts["grep_word_count"],
            counts["grep_pattern_count"]) == (3, 3, 2)


def _failing_components(windows: int, seed: int,
                        first_by_name: float = 0.0) -> list[tuple[str, str, str]]:
    """Windows of 80 records in which two or three components fail, each a different
    number of times, the first to fail drawn at random (with odds `first_by_name`, the
    alphabetically first of them)."""
    rng, rows = random.Random(seed), []
    for w in range(windows):
        names = rng.sample(["db", "cache", "queue", "auth"], rng.choice([2, 2, 3]))
        counts = rng.sample([1, 2, 3, 4, 5, 6], len(names))
        failures = [c for c, n in zip(names, counts) for _ in range(n)]
        rng.shuffle(failures)
        if first_by_name and rng.random() < first_by_name:
            failures.remove(min(names))
            failures.insert(0, min(names))
        at = sorted(rng.sample(range(10, 78), len(failures)))
        window = [_chatter(80 * w + i) for i in range(80)]
        for i, comp in zip(at, failures):
            window[i] = ("ERROR", comp, f"request {80 * w + i} failed in {comp}")
        rows += window
    return rows


def test_no_candidate_rule_answers_first_failures_above_chance(tmp_path):
    """Dropping the question whose answer is the most-failing candidate makes the
    least-failing one the answer; held to chance instead, neither rule (nor the only
    failing one) answers more first-failure questions than a blind pick would."""
    from rlforge.verify import shortcuts

    con = _ingest(tmp_path, _failing_components(120, 7))
    gen = LogsDiagnose(families={"first_failing_component": 1})
    specs = list(gen.specs(BuildContext(con, seed=0)))
    con.close()
    assert len(specs) >= 15
    hits, odds = Counter(), 0.0
    for spec in specs:
        v = shortcuts.view(spec.extra_metadata["question_kind"], spec.context["question"],
                           spec.context["window"])
        hits.update(list(shortcuts.rules_solving(v, spec.reference)))
        hits.update(list(shortcuts.solved_by(v, spec.reference)))
        odds += shortcuts.chance(v)
    for rule in ("most_failing_candidate", "least_failing_candidate", "last_failing_candidate",
                 "first_candidate_by_name", "last_candidate_by_name"):
        assert hits[rule] <= math.floor(odds + 0.5), (rule, hits, odds)
    # not screened to none: no "never the most" or "never the last to fail" to learn
    assert hits["most_failing_candidate"] > 0 and hits["last_failing_candidate"] > 0
    assert hits["only_failing_candidate"] == 0
    assert any(g.startswith("chance:") for g in gen.gates)


def test_the_alphabetically_first_candidate_answers_no_more_than_chance(tmp_path):
    """Where the first component to fail is mostly the alphabetically first of those that
    fail, picking that name is a shortcut: it is held to chance like the other candidate
    rules, and the family still asks questions."""
    from rlforge.verify import shortcuts

    con = _ingest(tmp_path, _failing_components(120, 11, first_by_name=0.8))
    gen = LogsDiagnose(families={"first_failing_component": 1})
    specs = list(gen.specs(BuildContext(con, seed=0)))
    con.close()
    hits, odds = 0, 0.0
    for spec in specs:
        v = shortcuts.view(spec.extra_metadata["question_kind"], spec.context["question"],
                           spec.context["window"])
        names = sorted(shortcuts._failing_counts(v) or ())
        hits += bool(names) and spec.reference["answer"] == names[0]
        odds += shortcuts.chance(v)
    assert len(specs) >= 10
    assert hits <= math.floor(odds + 0.5), (hits, odds, len(specs))
    assert gen.gates["chance:first_candidate_by_name"] > 0


def test_option_rules_read_the_listed_options():
    from rlforge.verify import shortcuts

    window = ("2026-03-01T10:00:00 h1 INFO web: replica lag 3 seconds\n"
              "2026-03-01T10:00:02 h1 ERROR db: disk full on volume 7\n"
              "2026-03-01T10:00:04 h1 ERROR db: disk full on volume 8\n"
              "2026-03-01T10:00:06 h2 ERROR cache: evicted 4 keys\n")
    options = "Which?\n\n- `disk full on volume <*>`\n- `replica lag <*> seconds`\n- `evicted <*> keys`"
    v = shortcuts.view("precursor_pattern", options, window)
    got = {name: rule(v) for name, rule in shortcuts.CHANCE_RULES.items()}
    assert got["first_option"] == "disk full on volume <*>"
    assert got["last_option"] == "evicted <*> keys"
    assert got["least_frequent_option"] is None  # two options match one record each
    assert shortcuts.chance(v) == 1 / 3
    assert shortcuts.chance(shortcuts.view("new_patterns", options, window)) == 0.0
    who = shortcuts.view("first_failing_component", "Which component failed first, that is, "
                         "logged the first record at level ERROR or FATAL?", window)
    assert got["most_failing_candidate"] is None
    assert shortcuts.CHANCE_RULES["most_failing_candidate"](who) == "db"
    assert shortcuts.CHANCE_RULES["least_failing_candidate"](who) == "cache"
    assert shortcuts.chance(who) == 1 / 2
    assert "most_failing_candidate" not in shortcuts.guesses(who)  # not per task: per build
