"""The test-runner seam of repair tasks: detection, the registry, plug-in runners.

Detection reads real project trees written in tmp_path; the build test makes a real git
repository of a JavaScript project, ingests it into a real DuckDB and builds
`commits.repair` from it; the plug-in test installs a runner as a distribution (a
`.dist-info` with an entry point) that a fresh Python process finds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from builds import build_options
from paths import ROOT
from rlforge import db
from rlforge.errors import UnknownName, UserError
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.commits_repair import NO_RUNNER, CommitsRepair
from rlforge.tasks.generators.repair import runners
from rlforge.tasks.generators.repair.runners import TestRunner

PACKAGE_JSON = json.dumps({"name": "left-pad-ish", "version": "1.0.0",
                           "scripts": {"test": "node --test"}}, indent=2) + "\n"
PAD_JS = "exports.pad = (s, n) => String(s).padStart(n, ' ');\n"
PAD_TEST = ("const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const { pad } = require('../pad');\n\n"
            "test('pads', () => { assert.strictEqual(pad('a', 3), '  a'); });\n")


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def paths_of(root: Path) -> set[str]:
    """Every file under root, as the paths of a git tree."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def git(repo: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Ada Example",
           "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada Example",
           "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_AUTHOR_DATE": "2024-03-01T10:00:00+00:00",
           "GIT_COMMITTER_DATE": "2024-03-01T10:00:00+00:00"}
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True,
                   capture_output=True)


# --- detection ---------------------------------------------------------------------------

def test_a_pyproject_project_is_detected_as_python(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "calc"\nversion = "0.1"\n',
                     "src/calc/__init__.py": "", "src/calc/ops.py": "def add(a, b):\n    return a + b\n",
                     "README.md": "calc\n"})
    found = runners.detect(paths_of(tmp_path))
    assert found is not None and (found.name, found.language) == ("python", "python")
    assert runners.detect(paths_of(tmp_path), language="javascript") is None


def test_a_python_project_without_manifest_is_detected_by_its_test_files(tmp_path):
    """pytest needs no manifest: a tree with only `tests/test_*.py` is a Python project."""
    write(tmp_path, {"pkg/m.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    assert 1\n"})
    assert runners.detect(paths_of(tmp_path)).name == "python"
    (tmp_path / "tests" / "test_m.py").unlink()
    assert runners.detect(paths_of(tmp_path)) is None


def test_a_package_json_project_is_detected_as_javascript_and_never_as_python(tmp_path):
    write(tmp_path, {"package.json": PACKAGE_JSON, "pad.js": PAD_JS, "test/pad.test.js": PAD_TEST})
    assert runners.detect(paths_of(tmp_path)).id == "javascript@1"
    assert runners.detect(paths_of(tmp_path), language="python") is None
    why = runners.why_none("python")
    assert "pyproject.toml" in why and "setup.py" in why and "Python test file" in why


def test_the_python_runner_names_its_test_files():
    python = runners.get("python@1")
    assert python.is_test_file("tests/test_ops.py") and python.is_test_file("pkg/ops_test.py")
    assert python.is_test_file("tests/helpers.py")  # a module of the tests/ directory
    assert not python.is_test_file("pkg/ops.py") and not python.is_test_file("tests/conftest.py")
    assert not python.is_test_file("tests/test_ops.js")
    assert python.test_file("tests/test_ops.py::TestOps::test_add[1-2]") == "tests/test_ops.py"


def test_an_unknown_runner_lists_the_valid_ones():
    with pytest.raises(UnknownName, match=r"unknown test runner 'jest'.*python@1"):
        runners.get("jest")
    with pytest.raises(UnknownName, match="python@1"):
        runners.get("python@7")


def test_a_repository_may_name_its_runner_and_a_wrong_name_is_refused(tmp_path):
    gen = CommitsRepair(repo_settings={"calc": {"runner": "python"}})
    assert gen.opts.for_repo("/somewhere/calc").runner == "python"
    with pytest.raises(UserError, match="runner must be a runner's name"):
        CommitsRepair(repo_settings={"calc": {"runner": 3}}).opts.for_repo("calc")
    with pytest.raises(UserError, match="unknown commits.repair language 'cobol'; "
                                        "valid: go, javascript, python, typescript"):
        CommitsRepair(language="cobol")


# --- a build -------------------------------------------------------------------------------

def test_a_javascript_repository_is_dropped_because_no_runner_serves_it(tmp_path):
    """Every commit of a repository no runner detects is dropped with that reason (and not
    with a screening reason that would hide why)."""
    repo = tmp_path / "leftpad"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"package.json": PACKAGE_JSON, "pad.js": PAD_JS, "test/pad.test.js": PAD_TEST})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Start the padding library")
    write(repo, {"pad.js": PAD_JS.replace("padStart(n, ' ')", "padStart(n, ' ').slice(-n)"),
                 "test/pad.test.js": PAD_TEST + "test('cuts', () => { assert.strictEqual(pad('abcd', 2), 'cd'); });\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Cut strings longer than the width to the width")
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, repo)
    report = build_tasks(con, build_options(out=tmp_path / "tasks", generators=["commits.repair"],
                                            validate=False))
    drops = con.execute("SELECT reason FROM task_drops WHERE generator = 'commits.repair'").fetchall()
    con.close()
    assert report.emitted == 0
    reasons = sorted(r[0] for r in drops)
    assert len(reasons) == 2 and all(r.startswith(NO_RUNNER + " (python: none of pyproject.toml")
                                     for r in reasons), reasons


# --- plug-ins ------------------------------------------------------------------------------

PLUGIN = '''
"""A plug-in runner: CoffeeScript's node tests, declared (running it is not needed here)."""

from rlforge.tasks.generators.repair.runners import TestRunner, register_runner


class NodeTest(TestRunner):
    name = "node-test"
    version = 1
    language = "coffeescript"
    manifests = ("Cakefile",)
    result_format = "node-test-events"
    source_suffixes = (".js", ".mjs", ".cjs", ".ts")

    def test_rules(self):
        return {"patterns": [r"(^|/)__tests__/", r"\\.test\\.[cm]?[jt]s$"], "names": ["package.json"],
                "suffixes": []}

    def is_test_file(self, path):
        return path.endswith(self.source_suffixes) and ".test." in path


register_runner(NodeTest())
'''


def test_a_plugin_runner_registers_through_its_entry_point(tmp_path):
    site = tmp_path / "site"
    (site / "demo_node_runner").mkdir(parents=True)
    (site / "demo_node_runner" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "demo_node_runner-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-node-runner\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rlforge.test_runners]\nnode = demo_node_runner\n")
    project = tmp_path / "leftpad"
    write(project, {"Cakefile": "task 'test', -> run 'node --test'\n", "pad.js": PAD_JS,
                    "test/pad.test.js": PAD_TEST})
    script = textwrap.dedent(f"""
        import json, pathlib
        from rlforge.tasks.generators.repair import runners
        from rlforge.tasks.generators.commits_repair import CommitsRepair
        root = pathlib.Path({str(project)!r})
        paths = {{p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}}
        found = runners.detect(paths)
        print(json.dumps({{"runners": list(runners.runners()), "languages": runners.languages(),
                           "detected": found and found.id,
                           "language_ok": CommitsRepair(language="coffeescript").opts.language}}))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLFORGE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    got = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out == {"runners": ["python", "go", "javascript", "typescript", "node-test"],
                   "languages": ["coffeescript", "go", "javascript", "python", "typescript"],
                   "detected": "node-test@1", "language_ok": "coffeescript"}
    env["RLFORGE_NO_PLUGINS"] = "1"
    off = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert off.returncode != 0 and "unknown commits.repair language 'coffeescript'" in off.stderr


def test_the_runner_base_declares_what_a_runner_must_implement():
    """A runner that declares nothing cannot silently pass as one: the parts every runner
    needs raise until it implements them; those a language may lack have safe defaults."""
    class Bare(TestRunner):
        name, language, result_format = "bare", "cobol", "none"

    bare = Bare()
    for call in (lambda: bare.test_rules(), lambda: bare.is_test_file("x"),
                 lambda: bare.dependencies({}), lambda: bare.runtime_version()):
        with pytest.raises(NotImplementedError):
            call()
    assert bare.report_checks(Path("."), {}) == (None, {})
    assert bare.checked_fail_to_pass({}, ["a::b"], {}, {}) == []  # trusts nothing by default
