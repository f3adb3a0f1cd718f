"""A third-party package extends rlforge without editing it: a real package, installed
with pip into a directory of its own, found through its entry points by a real
`rlforge` process (PYTHONPATH adds the directory, as a venv's site-packages would).

The plug-in ships a generator, the templates it renders with, and a verifier kind of its
own (scored on the host by validation and `rlforge run`, and by its own script inside the
task); a second plug-in is broken on import. The built-ins must survive the broken one (a warning), a strict run
must refuse, and RLFORGE_NO_PLUGINS must turn every plug-in off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from paths import SAMPLE_DATA

pytestmark = pytest.mark.slow

GENERATOR = '''
"""A demo generator: count the words of a ticket's subject."""

from rlforge.tasks.generators.answers import adversarial_answers, null_submission, solve_script
from rlforge.tasks.registry import register
from rlforge.tasks.spec import SourceRef, TaskSpec, stable_sample


VERIFY_SCRIPT = b"""import json
ref = json.load(open("/tests/reference.json"))
try:
    got = open("/app/answer.txt", encoding="utf-8", errors="replace").read(100).strip()
except OSError:
    got = ""
print(int(got == str(ref["answer"])), file=open("/logs/verifier/reward.txt", "w"))
"""


@register("demo.words", 1, "Count the words of a ticket's subject.", verifier="demo.count",
          templates="rlforge_demo_plugin/templates")
class SubjectWords:
    def available(self, con):
        return con.execute("SELECT count(*) FROM tickets WHERE subject IS NOT NULL").fetchall()[0][0]

    def specs(self, ctx):
        rows = ctx.con.execute(
            "SELECT ticket_id, content_hash, subject FROM tickets "
            "WHERE subject IS NOT NULL AND NOT regexp_matches(subject, '[0-9]') "
            "ORDER BY ticket_id").fetchall()
        for ticket_id, content_hash, subject in stable_sample(rows, ctx.limit, ctx.seed,
                                                              key=lambda r: r[0]):
            n = len(subject.split())
            wrong = [str(n + 1), str(max(0, n - 1))]
            yield TaskSpec(
                generator=self.name, version=self.version,
                source=SourceRef("tickets", [ticket_id], [content_hash]),
                instruction_template="instruction.md", context={"subject": subject},
                reference={"verifier": "demo.count", "answer": n},
                tests_data={"demo_verify.py": VERIFY_SCRIPT},
                solution_files={"solve.sh": solve_script(str(n))}, verifier="demo.count",
                group_key=ticket_id, dedup_text=subject, null=null_submission(),
                adversarial=adversarial_answers(options=[], candidates=wrong),
                secret_strings=[str(n)], leak_allowed=[subject])
'''

KIND = '''
"""A demo verifier kind: the answer file must hold exactly the reference number."""

import os

from rlforge.verify.kinds import VerifierKind, register_kind
from rlforge.verify.standalone.verify import read_submission


def score_text(ref, text):
    ok = (text or "").strip() == str(ref["answer"])
    value = 1.0 if ok else 0.0
    return {"total": value, "outcome": "pass" if ok else "fail",
            "components": {"count": {"value": value, "weight": 1.0}}}


def score(ref, tests_dir, workspace, policy):
    return score_text(ref, read_submission(os.path.join(workspace, "answer.txt")))


register_kind(VerifierKind("demo.count", 1, "the exact number in answer.txt", score, "text",
                           score_text))
'''

TICKETS = '''
"""A demo ticket format: `#demo-tickets`, then one `id|subject|body|category` per line."""

from rlforge.ingest.ticket_formats import Rejected, TicketFormat, TicketRecord, register_format


def read(text, mapping, newline):
    for no, line in enumerate(text.splitlines()[1:], start=2):
        parts = line.split("|")
        if len(parts) != 4:
            yield Rejected(no, line, f"expected 4 fields, found {len(parts)}")
            continue
        ticket_id, subject, body, category = parts
        yield TicketRecord(no, {"source_id": ticket_id, "subject": subject, "body": body,
                                "category": category}, [], {})


register_format(TicketFormat("demo-lines", 1, "pipe-separated demo tickets", "demo", read,
                             sniff=lambda head: head.startswith("#demo-tickets")))
'''

LOGFMT = '''
\"\"\"A demo log format: `2024-05-01 10:00:00 ~ LEVEL ~ component ~ message`.\"\"\"

import polars as pl

from rlforge.ingest.logformats.base import LogFormat, finish_frame
from rlforge.ingest.logformats.registry import LogFormatInfo, register_log_format

PATTERN = (r"^(?P<ts_text>\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d) ~ (?P<lvl>[A-Z]+) ~ "
           r"(?P<component>[\\w.-]+) ~ (?P<message>.*)$")


class TildeFormat(LogFormat):
    def __init__(self):
        super().__init__()
        self.name = "demo-tilde"

    def _parse(self, lines):
        frame = lines.str.extract_groups(PATTERN).struct.unnest()
        return finish_frame(frame, pl.col("ts_text").is_not_null(), [], "lvl")


register_log_format(LogFormatInfo("demo-tilde", 1, "tilde-separated demo logs",
                                  lambda keys: TildeFormat(), detect_rank=10))
'''

TEST_SH = """\
#!/bin/bash
mkdir -p /logs/verifier
exec python3 -I /tests/demo_verify.py
"""

INSTRUCTION = """\
# Count words (a plug-in's own template)

How many words, separated by spaces, does this subject line have?

~~~text
{{ subject }}
~~~

Write the count to `/app/answer.txt`.
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "rlforge-demo-plugin"
version = "0.1.0"

[project.entry-points."rlforge.generators"]
demo = "rlforge_demo_plugin"
broken = "rlforge_broken_plugin"

[project.entry-points."rlforge.verifiers"]
demo = "rlforge_demo_plugin.kind"

[project.entry-points."rlforge.ticket_formats"]
demo = "rlforge_demo_plugin.tickets"

[project.entry-points."rlforge.log_formats"]
demo = "rlforge_demo_plugin.logfmt"

[tool.setuptools]
packages = ["rlforge_demo_plugin", "rlforge_broken_plugin"]

[tool.setuptools.package-data]
rlforge_demo_plugin = ["templates/*/*.j2"]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The plug-in package, built and installed with pip into a directory of its own."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    (src / "rlforge_demo_plugin" / "templates" / "demo.words").mkdir(parents=True)
    (src / "rlforge_demo_plugin" / "__init__.py").write_text(textwrap.dedent(GENERATOR))
    (src / "rlforge_demo_plugin" / "kind.py").write_text(textwrap.dedent(KIND))
    (src / "rlforge_demo_plugin" / "tickets.py").write_text(textwrap.dedent(TICKETS))
    (src / "rlforge_demo_plugin" / "logfmt.py").write_text(textwrap.dedent(LOGFMT))
    (src / "rlforge_demo_plugin" / "templates" / "demo.words" / "instruction.md.j2").write_text(
        INSTRUCTION)
    (src / "rlforge_demo_plugin" / "templates" / "demo.words" / "test.sh.j2").write_text(TEST_SH)
    (src / "rlforge_broken_plugin").mkdir()
    (src / "rlforge_broken_plugin" / "__init__.py").write_text(
        "import a_module_nobody_installed  # noqa: F401\n")
    (src / "pyproject.toml").write_text(PYPROJECT)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(src)],
                   check=True, capture_output=True, timeout=300)
    assert list(target.glob("rlforge_demo_plugin-0.1.0.dist-info/entry_points.txt"))
    return target


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "rlforge.duckdb"
    subprocess.run([sys.executable, "-m", "rlforge", "--db", str(path), "ingest", "tickets",
                    str(SAMPLE_DATA / "tickets" / "tickets.csv")], check=True, capture_output=True,
                   timeout=300)
    return path


def rlforge(args: list[str], site: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("RLFORGE_NO_PLUGINS", "RLFORGE_PLUGINS_STRICT")}
    environ["PYTHONPATH"] = os.pathsep.join([str(site), environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "rlforge", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=600, env={**environ, **env})


def test_a_plugin_generator_builds_validated_tasks_from_its_own_templates(site, database,
                                                                         tmp_path):
    out = tmp_path / "tasks"
    proc = rlforge(["--db", str(database), "build-tasks", "--generators", "demo.words",
                    "--limit", "3", "--out", str(out), "--json"], site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["emitted"] == 3, report
    instructions = sorted(out.glob("*/instruction.md"))
    assert len(instructions) == 3
    assert all("(a plug-in's own template)" in p.read_text() for p in instructions)
    task = instructions[0].parent
    assert "demo_verify.py" in (task / "tests" / "test.sh").read_text()  # its own in-task verifier
    compile((task / "tests" / "demo_verify.py").read_text(), "demo_verify.py", "exec")
    # the broken plug-in was skipped, loudly, and named
    assert "'broken'" in proc.stderr and "a_module_nobody_installed" in proc.stderr
    # the tasks pass validation in their own right (gold 1, null and tricks 0), scored by
    # the plug-in's verifier kind
    proc = rlforge(["validate", str(out), "--json"], site, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["passed"] == 3
    checks = {c["name"]: c for c in result["results"][0]["checks"]}
    assert checks["oracle"]["got"] == 1.0 and checks["null"]["got"] == 0.0
    assert checks["echo_instruction"]["got"] == 0.0  # a text kind: the echo is tried too
    # without the plug-ins the kind is unknown: the task cannot be scored, not passed
    proc = rlforge(["validate", str(out), "--json"], site, tmp_path, RLFORGE_NO_PLUGINS="1")
    assert proc.returncode == 1
    assert "unknown verifier kind 'demo.count'" in proc.stdout


def test_builtins_are_listed_beside_the_plugin_and_strict_mode_refuses(site, database,
                                                                       tmp_path):
    proc = rlforge(["--db", str(database), "build-tasks", "--list", "--json"], site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = {row["name"] for row in json.loads(proc.stdout)}
    assert {"demo.words", "tickets.triage", "commits.repair"} <= names
    strict = rlforge(["--db", str(database), "build-tasks", "--list"], site, tmp_path,
                     RLFORGE_PLUGINS_STRICT="1")
    assert strict.returncode == 1
    assert "broken" in strict.stderr and "RLFORGE_PLUGINS_STRICT" in strict.stderr


def test_plugins_can_be_turned_off(site, database, tmp_path):
    proc = rlforge(["--db", str(database), "build-tasks", "--list", "--json"], site, tmp_path,
                   RLFORGE_NO_PLUGINS="1")
    assert proc.returncode == 0, proc.stderr
    names = {row["name"] for row in json.loads(proc.stdout)}
    assert "demo.words" not in names and "tickets.triage" in names
    assert "broken" not in proc.stderr


def test_a_plugin_ticket_format_is_detected_and_nothing_is_lost(site, tmp_path):
    export = tmp_path / "desk.txt"
    export.write_text("#demo-tickets\n"
                      "T-1|Printer offline|The office printer shows offline since Monday|hardware\n"
                      "T-2|no separators here\n"
                      "T-3|Refund|Please refund order 1234 charged twice|billing\n")
    db_path = tmp_path / "desk.duckdb"
    proc = rlforge(["--db", str(db_path), "ingest", "tickets", str(export), "--json"], site,
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["files"]
    assert result["format"] == "demo-lines"
    assert (result["n_read"], result["n_loaded"], result["n_quarantined"]) == (3, 2, 1)
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT source_id, origin, category FROM tickets ORDER BY 1").fetchall()
    con.close()
    assert rows == [("T-1", "demo", "hardware"), ("T-3", "demo", "billing")]
    # without plug-ins the format is unknown by name
    off = rlforge(["--db", str(tmp_path / "off.duckdb"), "ingest", "tickets", str(export),
                   "--format", "demo-lines"], site, tmp_path, RLFORGE_NO_PLUGINS="1")
    assert off.returncode == 2 and "unknown ticket format 'demo-lines'" in off.stderr


def test_a_plugin_log_format_is_detected_and_parsed(site, tmp_path):
    log = tmp_path / "svc.log"
    log.write_text("".join(f"2024-05-01 10:00:{i:02d} ~ {'ERROR' if i % 4 == 0 else 'INFO'} ~ "
                           f"billing.api ~ request {i} took {i * 7} ms\n" for i in range(20)))
    db_path = tmp_path / "logs.duckdb"
    proc = rlforge(["--db", str(db_path), "ingest", "logs", str(log)], site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT count(*), count(ts), count(DISTINCT component), "
                       "sum((level = 'error')::INT) FROM log_records").fetchall()
    con.close()
    assert rows == [(20, 20, 1, 5)]  # every line parsed: times, the component, the levels
    # without plug-ins the same file is only plain text: no component, no level field
    off_db = tmp_path / "off.duckdb"
    off = rlforge(["--db", str(off_db), "ingest", "logs", str(log)], site, tmp_path,
                  RLFORGE_NO_PLUGINS="1")
    assert off.returncode == 0, off.stderr
    con = duckdb.connect(str(off_db), read_only=True)
    assert con.execute("SELECT count(component) FROM log_records").fetchall() == [(0,)]
    con.close()
