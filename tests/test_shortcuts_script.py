"""The script shortcut battery (`rlforge.verify.shortcuts_script`): logs.script does not
emit a numeric question a cheap program answers on both directories (and says which), asks
distinct-value questions a literal count cannot answer, and `rlforge validate` fails a
task such a program passes, with the typed reason `shortcut`."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import subprocess
import sys

import pytest

from builds import build_options
from rlforge import db
from rlforge.ingest import logs
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.logs_script import LogsScript
from rlforge.tasks.spec import BuildContext
from rlforge.verify import shortcuts_script

START = dt.datetime(2026, 3, 1, 10, 0, 0)


def _kafka_style(tmp_path, messages: list[tuple[str, str, str]]):
    """A log4j-bracketed log (`[date] LEVEL message (logger)`) of (level, logger, message)
    rows, one every 2 seconds; a database holding it (read by the plain format)."""
    lines = [f"[{(START + dt.timedelta(seconds=2 * i)).strftime('%Y-%m-%d %H:%M:%S')},"
             f"{i % 1000:03d}] {level} {msg} ({logger})"
             for i, (level, logger, msg) in enumerate(messages)]
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n")
    con = db.connect(tmp_path / "x.duckdb")
    logs.ingest_file(con, path)
    return con


def _greppable(i: int) -> tuple[str, str, str]:
    """Templates whose counts a literal `grep -c` of their words gets right."""
    return [("INFO", "com.acme.Cache", f"cache refresh took {i * 13 % 89} ms"),
            ("INFO", "com.acme.Beat", f"heartbeat ok seq {i}"),
            ("INFO", "com.acme.Web", f"request served in {i * 7 % 53} ms")][i * i % 11 % 3]


def _sessions(i: int) -> tuple[str, str, str]:
    """Logins by a few users, and near-duplicates by others: logouts (sharing the text
    before the user) and relayed logins (sharing every fixed piece of the login)."""
    if i % 3 == 0:
        users = 4 + i // 60 % 5  # how many users log in differs from window to window
        return ("INFO", "com.acme.Auth", f"user u{i * 7 % users} logged in from gw-{i % 4}")
    if i % 3 == 1:
        return ("INFO", "com.acme.Auth", f"user u{(i * 3) % 17 + 100} logged out after {i} s")
    if i % 6 == 2:  # holds the pattern's every piece, yet does not match it
        return ("INFO", "com.acme.Relay", f"relay for user r{i % 5} logged in from gw-9")
    return ("INFO", "com.acme.Beat", f"heartbeat ok seq {i}")


def test_counts_fold_case_and_read_the_question_words():
    text = ("t h INFO c: Cache refresh took 5 ms\nt h INFO c: cache refresh took 7 ms\n"
            "t h INFO c: cache refresh took 9 ms\n"
            "\tcontinued cache refresh took\nt h ERROR c: no `mounted` volume\n")
    got = shortcuts_script.grep_counts("cache refresh took <*> ms", text,
                                       "how many lines mention `mounted`?")
    assert got["grep_piece_count"] == 2 and got["grep_piece_count_i"] == 3
    assert got["grep_quoted_mounted"] == 1
    assert got["grep_error_words"] == 1 and got["every_line"] == 4  # no continuation line
    assert got["most_frequent_shape"] == 2  # the lower-case refresh lines, numbers aside


def test_a_program_prints_what_the_battery_counts(tmp_path):
    """`program` (what `rlforge validate` submits) counts what the builder's battery does,
    reading every file or only the plain ones."""
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir()
    (logs_dir / "a.log").write_text("t h INFO c: cache refresh took 5 ms\n")
    (logs_dir / "a.log.2.gz").write_bytes(gzip.compress(
        b"t h INFO c: cache refresh took 6 ms\nt h INFO c: cache refresh took 8 ms\n"))
    files = {p.name: p.read_bytes() for p in logs_dir.iterdir()}
    pattern = "cache refresh took <*> ms"
    for mode, want in (("all_files", 3), ("plain_files", 1)):
        strategy = f"grep_piece_count@{mode}"
        source = shortcuts_script.program("template_count", pattern, "q", strategy)
        (tmp_path / "solution.py").write_text(source)
        out = subprocess.run([sys.executable, str(tmp_path / "solution.py"), str(logs_dir)],
                             capture_output=True, text=True, check=True).stdout.split()
        assert out[-1] == str(want)
        text = shortcuts_script.read_files(files, mode)
        assert shortcuts_script.counts("template_count", pattern, "q", text)[
            "grep_piece_count"] == want


def test_logs_script_drops_a_count_a_cheap_program_answers(tmp_path):
    con = _kafka_style(tmp_path, [_greppable(i) for i in range(600)])
    unscreened = LogsScript(facts=("template_count",), max_count_share=1.0,
                            screen_shortcuts=False)
    made = list(unscreened.specs(BuildContext(con, seed=0)))
    assert made  # without the screen, counting tasks are made ...
    solved = [s for s in made if shortcuts_script.solved(
        "template_count", s.extra_metadata["pattern"], s.context["statement"],
        [({k.rpartition("/")[2]: v for k, v in s.workspace.items()},
          s.reference["cases"][0]["answer"]["answer"]),
         ({k.rpartition("/")[2]: v for k, v in s.tests_data.items()},
          s.reference["cases"][1]["answer"]["answer"])])]
    assert solved  # ... and a cheap program passes them
    screened = LogsScript(facts=("template_count",), max_count_share=1.0)
    assert len(list(screened.specs(BuildContext(con, seed=0)))) < len(made)
    assert any(r["reason"].startswith("shortcut grep_") and "answers template_count" in r["reason"]
               for r in screened.rejections)


def test_distinct_values_need_the_pattern_not_a_count(tmp_path):
    """A distinct-values question is answered by its stated rule (checked here with a
    regex of the test's own), differs from every literal count, and the gold program
    prints it."""
    con = _kafka_style(tmp_path, [_sessions(i) for i in range(600)])
    gen = LogsScript(facts=("distinct_values",))
    specs = list(gen.specs(BuildContext(con, seed=0)))
    assert specs, [r["reason"] for r in gen.rejections]
    for s in specs:
        pattern, slot = s.extra_metadata["pattern"], s.extra_metadata["slot"]
        parts = [re.escape(p) for p in pattern.split("<*>")]
        rx = re.compile("".join(p + ("" if i == len(parts) - 1 else "(.*?)")
                                for i, p in enumerate(parts)))
        shown = s.workspace
        messages = [line.split(": ", 1)[1] for data in shown.values()
                    for line in data.decode().splitlines() if not line.startswith("\t")]
        want = len({m.group(slot) for msg in messages if (m := rx.fullmatch(msg))})
        assert s.reference["cases"][0]["answer"]["answer"] == want
        text = shortcuts_script.read_files({k.rpartition("/")[2]: v for k, v in shown.items()},
                                           "all_files")
        literal = shortcuts_script.grep_counts(pattern, text, s.context["statement"])
        assert want not in {literal[k] for k in ("grep_piece_count", "grep_all_words_count")} \
            or s.reference["cases"][1]["answer"]["answer"] != literal["grep_piece_count"]
        logs_dir = tmp_path / s.source.keys[0].replace(":", "_")
        for rel, data in shown.items():
            (logs_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (logs_dir / rel).write_bytes(data)
        solve = s.solution_files["solve.sh"].decode()
        gold = solve.split("<<'RLFORGE_EOF'\n", 1)[1].rsplit("RLFORGE_EOF", 1)[0]
        (tmp_path / "gold.py").write_text(gold)
        out = subprocess.run([sys.executable, str(tmp_path / "gold.py"), str(logs_dir / "logs")],
                             capture_output=True, text=True, check=True).stdout.split()
        assert out[-1] == str(want)


def _opened(i: int) -> tuple[str, str, str]:
    """Sessions opened by a few users (each with one session id; how many differs from
    window to window), and reports opened: a session's id is its whole message's only
    difference from another session's, and the report lines hold part of the pattern."""
    users = 3 + i // 90 % 4
    k = i * 7 % users
    names, ids = ("ann", "bob", "cyd", "dee", "eve", "fay"), ("ka", "kb", "kc", "kd", "ke", "kf")
    return [("INFO", "com.acme.Auth", f"session {names[k]} {ids[k]} opened by admin"),
            ("INFO", "com.acme.Report", f"report {('sales', 'tax')[i // 3 % 2]} opened by admin"),
            ("INFO", "com.acme.Beat", f"heartbeat ok seq {i}")][i % 3]


def _distinct_messages_with_words(pattern: str, files: dict[str, bytes]) -> int:
    """`grep w1 | grep w2 ... | cut -d: -f2- | sort -u | wc -l` over a directory."""
    words = re.findall(r"[A-Za-z_]\w+", pattern.replace("<*>", " "))
    text = shortcuts_script.read_files(files, "all_files")
    return len({line.split(": ", 1)[-1] for line in text.splitlines()
                if not line.startswith("\t") and all(w in line for w in words)})


def test_distinct_values_are_not_the_distinct_messages_holding_the_words(tmp_path):
    """Where each message of a pattern differs only in the asked `<*>`, the distinct
    messages holding every word of the pattern are the answer: no such question is asked,
    and the drop names a program that answers it."""
    text = ("t h INFO a: session s1 opened by admin\nt h INFO a: session s1 opened by admin\n"
            "t h INFO a: session s2 opened by admin\nt h INFO a: report r1 opened by admin\n")
    got = shortcuts_script.distinct_counts("session <*> opened by admin", text)
    assert got["distinct_messages_with_all_words"] == 2
    con = _kafka_style(tmp_path, [_opened(i) for i in range(900)])
    gen = LogsScript(facts=("distinct_values",))
    specs = list(gen.specs(BuildContext(con, seed=0)))
    for s in specs:
        cases = [({k.rpartition("/")[2]: v for k, v in files.items()}, case["answer"]["answer"])
                 for files, case in zip((s.workspace, s.tests_data), s.reference["cases"])]
        assert [_distinct_messages_with_words(s.extra_metadata["pattern"], files)
                for files, _ in cases] != [answer for _, answer in cases]
    assert any(r["reason"].startswith("shortcut ") and "answers distinct_values" in r["reason"]
               for r in gen.rejections)


@pytest.mark.sandbox
def test_validate_fails_a_script_task_a_cheap_program_passes(tmp_path, cli):
    con = _kafka_style(tmp_path, [_greppable(i) for i in range(600)])
    out = tmp_path / "tasks"
    report = build_tasks(con, build_options(
        out=out, generators=["logs.script"], validate=False, limit=2,
        generator_options={"logs.script": {"facts": ["template_count"], "max_count_share": 1.0,
                                           "screen_shortcuts": False}}))
    con.close()
    assert report.emitted >= 1, report.drops
    task = next(p for p in sorted(out.iterdir()) if p.is_dir())
    result = json.loads(cli("validate", task, "--json").output)
    assert result["failed"] == 1
    first = result["results"][0]
    assert first["failure"] == "shortcut", first["reason"]
    assert first["reason"].startswith("shortcut: grep_")
