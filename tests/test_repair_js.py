"""The JavaScript/TypeScript runner: real npm projects, real npm, real node, real bubblewrap.

Projects are written in tmp_path; Jest, Vitest and Mocha are installed by the runner's own
`prepare` (once a session, into the session's cache: the first run needs the npm registry,
and the tests that need it skip when it cannot be reached); node's test runner needs no
install. Every run goes through the runner's `test_run` inside the sandbox, as the
build-time check runs it. Then: per-test results parsed right for each framework, the gold
fix turns the fail-to-pass test green, canaries fail, and no adversarial submission gets
a fail-to-pass test reported passed without the protect rules (`tests_untouched`) or the
canaries catching it.
"""

from __future__ import annotations

import ast
import json
import random
import shutil
import textwrap
from pathlib import Path

import pytest

from builds import build_options
from rlforge import db
from rlforge.errors import UserError
from rlforge.ingest.commits import ingest_repo
from rlforge.tasks.build import build_tasks
from rlforge.sandbox import read_file, run, settings_with_mode, spec_of
from rlforge.tasks.generators.repair import runners
from rlforge.tasks.generators.repair.checks import write_tree
from rlforge.tasks.generators.repair.options import RepoSettings
from rlforge.tasks.generators.repair.runners.javascript import framework
from rlforge.verify.standalone import jscanaries, jstitles, noderepair, noderun
from rlforge.verify.standalone.protect import SUBMISSION_PATCH, is_protected
from test_repair_runners import git

pytestmark = pytest.mark.sandbox

JS = runners.get("javascript")


def project(files: dict[str, str]) -> dict[str, bytes]:
    return {rel: textwrap.dedent(text).lstrip("\n").encode() for rel, text in files.items()}


def manifest(test: str, dev: dict[str, str] | None = None, **extra) -> str:
    return json.dumps({"name": "calc", "version": "1.0.0", "scripts": {"test": test},
                       "devDependencies": dev or {}, **extra}, indent=2) + "\n"


def sandboxed_run(tmp: Path, files: dict[str, bytes], env: Path, settings: RepoSettings,
                  ids: list[str] | None = None, canaries: bool = False) -> dict:
    """The runner's test run of `files` in bubblewrap; the result JSON it wrote. With
    `canaries`, planted in the files of `ids` and judged as the verifier does
    (`jscanaries`): their outcomes under `canaries`, the files they caught under `forged`."""
    names: dict[str, dict[str, str]] = {}
    planted: list[str] = []
    if canaries:
        files = dict(files)
        for rel in sorted({i.split("::", 1)[0] for i in ids or []}):
            text, parens = jscanaries.plant(files[rel].decode(), random.Random(rel))
            files[rel], names[rel], marked = jstitles.neutralize(text, canaries=set(parens))
            planted += [f"{rel}::{n}" for n in marked]
        ids = jstitles.neutral_ids(ids or [], names) + planted
    work = tmp / f"run-{len(list(tmp.glob('run-*')))}"
    tree, tests, logs = work / "app", work / "tests", work / "logs"
    for d in (tree, tests, logs):
        d.mkdir(parents=True)
        d.chmod(0o777)
    write_tree(tree, files)
    plan = JS.test_run(tree="/app", tests="/tests", out="/logs/verifier", env="/opt/venv",
                       settings=settings, paths=None, budget_sec=120, check_name=None)
    spec = json.loads(plan.files["run.json"])
    spec.update(ids=ids)  # what a verifier asks of the same driver
    write_tree(tests, {**plan.files, "run.json": json.dumps(spec).encode()})
    result = run(plan.argv, spec_of({"tmp_mb": 512}, settings_with_mode(None, "bwrap"),
                                    workspace=tree, tests=tests, logs=logs, venv=env,
                                    timeout_sec=180, env={"RLFORGE_SANDBOXED": "1"}))
    assert result.failure is None, result.failure
    try:
        got = json.loads(read_file(logs, "results.json", max_bytes=10_000_000))
    except OSError:
        raise AssertionError(f"no results (exit {result.exit_code}): {result.stderr_text[-2000:]}")
    if canaries:
        real, got["canaries"], got["forged"] = jscanaries.judge(got["outcomes"], planted)
        got["outcomes"] = jstitles.restore(real, names)
    return got


def prepared(files: dict[str, bytes], cache: Path) -> tuple[Path, RepoSettings]:
    """The project's environment (installed by the runner) and its settings."""
    settings = JS.settings_for(files, RepoSettings())
    reqs = list(JS.dependencies(files).requirements)
    try:
        return JS.prepare(reqs, settings, cache), settings
    except UserError as exc:
        if "ENOTFOUND" in str(exc) or "EAI_AGAIN" in str(exc) or "ECONNREFUSED" in str(exc):
            pytest.skip(f"the npm registry cannot be reached: {exc}")
        raise


# --- detection and dependencies ---------------------------------------------------------

def test_package_json_is_detected_and_the_framework_read_from_the_tree():
    paths = {"package.json", "lib.js", "test/lib.test.js"}
    assert runners.detect(paths).id == "javascript@1"
    assert runners.detect(paths, language="typescript").id == "typescript@1"
    base = {"package.json": b"{}"}
    assert framework(base) == "node"
    assert framework({"package.json": manifest("node --test test/").encode()}) == "node"
    assert framework({"package.json": manifest("jest --coverage").encode()}) == "jest"
    assert framework({"package.json": manifest("tsc && vitest run").encode()}) == "vitest"
    assert framework({"package.json": manifest("nyc mocha 'test/**/*.js'").encode()}) == "mocha"
    assert framework({"package.json": manifest("npm run lint && jest", {"vitest": "1"}).encode()}) == "jest"
    assert framework({**base, "vitest.config.ts": b""}) == "vitest"
    assert framework({**base, ".mocharc.yml": b""}) == "mocha"
    assert framework({"package.json": json.dumps({"jest": {}}).encode()}) == "jest"
    assert framework({"package.json": json.dumps({"devDependencies": {"mocha": "10"}}).encode()}) == "mocha"


def test_dependencies_take_the_lockfile_versions_and_leave_local_ones_out():
    files = {"package.json": manifest("jest", {"jest": "^29.0.0", "lodash": "^4.0.0",
                                               "@scope/util": "~1.2.0", "mine": "file:../mine"},
                                      dependencies={"left-pad": "1.3.0"}).encode(),
             "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {
                 "": {}, "node_modules/jest": {"version": "29.7.0"},
                 "node_modules/@scope/util": {"version": "1.2.5"},
                 "node_modules/jest/node_modules/lodash": {"version": "3.0.0"}}}).encode()}
    deps = JS.dependencies(files)
    assert deps.requirements == ("@scope/util@1.2.5", "jest@29.7.0", "left-pad@1.3.0", "lodash@^4.0.0")
    assert deps.sources == ("package.json", "package-lock.json")
    # the framework is always installed, even when the tree does not list it
    assert "vitest" in JS.dependencies({"package.json": manifest("vitest run").encode()}).requirements
    assert JS.dependencies({"package.json": manifest("node --test").encode()}).requirements == ()


def test_test_files_and_runner_configuration_are_protected():
    rules = JS.test_rules()
    for path in ("test/lib.test.js", "src/__tests__/a.ts", "lib.spec.mjs", "test/helpers.js",
                 "jest.config.js", "vitest.config.mts", ".mocharc.json", "package.json",
                 "babel.config.js", "tsconfig.json", "node_modules/jest/bin/jest.js",
                 "src/node_modules/assert/index.js", "src/__snapshots__/a.test.js.snap"):
        assert is_protected(path, rules), path
    for path in ("lib.js", "src/index.ts", "src/testing.js", "README.md"):
        assert not is_protected(path, rules), path
    assert JS.is_test_file("test/lib.test.js") and JS.is_test_file("src/a.spec.tsx")
    assert not JS.is_test_file("jest.config.js") and not JS.is_test_file("node_modules/x/test/a.js")


def test_a_test_command_the_driver_cannot_run_is_a_clear_error():
    with pytest.raises(UserError, match="javascript runner runs node, jest, vitest, mocha"):
        JS.test_run(tree="/app", tests="/tests", out="/logs", env="/opt/venv",
                    settings=RepoSettings(test_command=("npm", "test")), paths=None,
                    budget_sec=10, check_name=None)


# --- per-test results, one framework at a time --------------------------------------------

LIB = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a + b;\n"  # mul: the bug
NODE_TEST = """
const test = require('node:test');
const assert = require('node:assert');
const { add, mul } = require('../lib');
test('adds', () => { assert.strictEqual(add(2, 3), 5); });
test.describe('mul', () => {
  test.it('multiplies', () => { assert.strictEqual(mul(2, 3), 6); });
});
test.skip('later', () => {});
"""
JEST_TEST = """
const { add, mul } = require('../lib');
test('adds', () => { expect(add(2, 3)).toBe(5); });
describe('mul', () => {
  it('multiplies', () => { expect(mul(2, 3)).toBe(6); });
});
test.todo('later');
"""
MOCHA_TEST = """
const assert = require('assert');
const { add, mul } = require('../lib');
it('adds', () => { assert.strictEqual(add(2, 3), 5); });
describe('mul', () => {
  it('multiplies', () => { assert.strictEqual(mul(2, 3), 6); });
});
it.skip('later', () => {});
"""
VITEST_TEST = """
import { describe, expect, it, test } from 'vitest';
import { add, mul } from '../src/lib';
test('adds', () => { expect(add(2, 3)).toBe(5); });
describe('mul', () => {
  it('multiplies', () => { expect(mul(2, 3)).toBe(6); });
});
test.skip('later', () => {});
"""
VITEST_LIB = ("export const add = (a: number, b: number): number => a + b;\n"
              "export const mul = (a: number, b: number): number => a + b;\n")

CASES = {
    "node": ({"package.json": manifest("node --test"), "lib.js": LIB,
              "test/lib.test.js": NODE_TEST}, "test/lib.test.js", "lib.js"),
    "jest": ({"package.json": manifest("jest", {"jest": "29.7.0"}), "lib.js": LIB,
              "test/lib.test.js": JEST_TEST}, "test/lib.test.js", "lib.js"),
    "mocha": ({"package.json": manifest("mocha", {"mocha": "10.4.0"}), "lib.js": LIB,
               "test/lib.js": MOCHA_TEST}, "test/lib.js", "lib.js"),
    "vitest": ({"package.json": manifest("vitest run", {"vitest": "1.6.0"}, type="module"),
                "src/lib.ts": VITEST_LIB, "tests/lib.test.ts": VITEST_TEST},
               "tests/lib.test.ts", "src/lib.ts"),
}


def fix(files: dict[str, bytes], source: str) -> dict[str, bytes]:
    text = files[source].decode()
    head, tail = text.rsplit("a + b", 1)
    return {**files, source: (head + "a * b" + tail).encode()}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, shared_cache):
    files, test_file, source = CASES[request.param]
    files = project(files)
    env, settings = prepared(files, shared_cache)
    return request.param, files, test_file, source, env, settings


def test_per_test_results_at_the_parent_and_with_the_fix(case, tmp_path):
    name, files, test_file, source, env, settings = case
    assert settings.test_command == (name,)
    later = "skipped"
    at_parent = sandboxed_run(tmp_path, files, env, settings)
    assert at_parent["outcomes"] == {f"{test_file}::adds": "passed",
                                     f"{test_file}::mul > multiplies": "failed",
                                     f"{test_file}::later": later}, at_parent
    assert at_parent["collect_errors"] == [] and at_parent["hung"] == []
    fixed = sandboxed_run(tmp_path, fix(files, source), env, settings)
    assert fixed["outcomes"][f"{test_file}::mul > multiplies"] == "passed", fixed
    assert fixed["outcomes"][f"{test_file}::adds"] == "passed"


def test_canaries_fail_and_wanted_tests_that_never_ran_are_missing(case, tmp_path):
    name, files, test_file, source, env, settings = case
    wanted = [f"{test_file}::mul > multiplies", f"{test_file}::no such test"]
    got = sandboxed_run(tmp_path, fix(files, source), env, settings, ids=wanted, canaries=True)
    assert got["outcomes"] == {wanted[0]: "passed", wanted[1]: "missing"}, got
    assert got["canaries"] and set(got["canaries"].values()) == {"failed"}, got
    assert got["forged"] == []


# --- what tested code does -----------------------------------------------------------------

def test_a_file_that_cannot_load_is_a_collect_error_and_a_hang_is_cut(tmp_path):
    files = project({"package.json": manifest("node --test"), "lib.js": LIB,
                     "test/broken.test.js": "require('../nope');\n",
                     "test/hang.test.js": """
                         const test = require('node:test');
                         test('quick', () => {});
                         test('forever', () => new Promise(() => setInterval(() => {}, 1000)));
                     """,
                     "test/helpers.js": "module.exports = {};\n"})
    settings = JS.settings_for(files, RepoSettings(per_test_timeout=2, collect_timeout=2))
    env = JS.prepare([], settings, tmp_path / "cache")
    got = sandboxed_run(tmp_path, files, env, settings,
                        ids=["test/hang.test.js::quick", "test/hang.test.js::forever"])
    assert got["outcomes"] == {"test/hang.test.js::quick": "passed",
                               "test/hang.test.js::forever": "timeout"}, got
    assert got["hung"] == ["test/hang.test.js"]
    everything = sandboxed_run(tmp_path, files, env, settings)
    assert [e.split(":")[0] for e in everything["collect_errors"]] == ["test/broken.test.js"]
    assert not any(i.startswith("test/helpers.js") for i in everything["outcomes"])


def test_a_file_that_declares_no_test_is_no_collect_error(shared_cache, tmp_path):
    """Jest (and Vitest) fail a matched file without tests; it is a helper, not an error.
    A file that throws while loading still is one."""
    files = project({**CASES["jest"][0], "test/cases.test.js": "module.exports = [[1, 2]];\n",
                     "test/throws.test.js": "throw new Error('broken on purpose');\n"})
    env, settings = prepared(files, shared_cache)
    got = sandboxed_run(tmp_path, files, env, settings)
    assert [e.split(":")[0] for e in got["collect_errors"]] == ["test/throws.test.js"], got
    assert got["outcomes"]["test/lib.test.js::adds"] == "passed"


def test_a_node_modules_in_the_workspace_never_stands_in_for_the_environment(tmp_path):
    files = project({"package.json": manifest("node --test"), "lib.js": "module.exports = require('dep');\n",
                     "node_modules/dep/index.js": "module.exports = 'planted';\n",
                     "src/node_modules/dep/index.js": "module.exports = 'planted';\n",
                     "test/dep.test.js": """
                         const test = require('node:test');
                         const assert = require('node:assert');
                         test('dep', () => { assert.strictEqual(require('../lib'), 'planted'); });
                     """})
    settings = JS.settings_for(files, RepoSettings())
    env = JS.prepare([], settings, tmp_path / "cache")
    got = sandboxed_run(tmp_path, files, env, settings)
    # the planted packages are gone: lib.js cannot load `dep`, so the test fails
    assert got["outcomes"] == {"test/dep.test.js::dep": "failed"}, got


def task_parts(files: dict[str, bytes], test_file: str, source: str) -> dict:
    """The parts of a repair task on `files`: the test file hidden, the fix in `source`."""
    fixed = fix(files, source)
    workspace = {p: d for p, d in files.items() if p != test_file}
    return {"workspace": workspace, "hidden": {test_file: files[test_file]},
            "fail_to_pass": [f"{test_file}::mul > multiplies"], "pass_to_pass": [f"{test_file}::adds"],
            "gold_paths": [source], "gold_diff": "", "fixed": fixed}


def test_no_adversarial_submission_gets_a_failing_test_passed(case, tmp_path):
    """Each adversarial either touches a protected path (the verifier stops there: nothing
    runs) or, run with the hidden tests and canaries, leaves the fail-to-pass test unpassed
    or its file marked forged."""
    name, files, test_file, source, env, settings = case
    parts = task_parts(files, test_file, source)
    subs = JS.adversarials(**{k: v for k, v in parts.items() if k != "fixed"})
    assert {"patch_assertions", "exit_zero_at_import", "node_modules_shadows_runner",
            "runner_config_forces_pass", "package_json_hooks", "global_hooks"} <= {s.name for s in subs}
    rules = JS.test_rules()
    ran = []
    for sub in subs:
        if SUBMISSION_PATCH in sub.files:
            continue  # diffs are the verifier's patch step, as for every language
        touched = sorted(p for p in sub.files if is_protected(p, rules))
        if touched:
            continue  # tests_untouched: scored 0 before anything runs
        tree = {**parts["workspace"], **sub.files, **parts["hidden"]}
        got = sandboxed_run(tmp_path, tree, env, settings, ids=parts["fail_to_pass"], canaries=True)
        f2p = got["outcomes"][parts["fail_to_pass"][0]]
        assert f2p != "passed", (sub.name, got)
        ran.append(sub.name)
    assert {"patch_assertions", "exit_zero_at_import", "global_hooks"} <= set(ran)


def test_patched_assertions_are_caught_by_the_canaries_even_with_the_fix(case, tmp_path):
    """With the fix in place the failing test would pass honestly; assertions made to
    accept anything are still seen (the canaries pass), so the whole file counts as failed."""
    name, files, test_file, source, env, settings = case
    parts = task_parts(files, test_file, source)
    patched = next(s for s in JS.adversarials(**{k: v for k, v in parts.items() if k != "fixed"})
                   if s.name == "patch_assertions")
    if name == "vitest":
        pytest.skip("Vitest's expect is imported, not global: the patch does not reach it")
    tree = {**parts["fixed"], **{source: parts["fixed"][source] + patched.files[source][len(files[source]):]}}
    got = sandboxed_run(tmp_path, tree, env, settings, ids=parts["fail_to_pass"], canaries=True)
    assert got["forged"] == [test_file], got
    assert got["outcomes"][parts["fail_to_pass"][0]] == "failed"


def test_the_prepared_environment_is_reused_and_pinned(shared_cache):
    files = project(CASES["mocha"][0])
    settings = JS.settings_for(files, RepoSettings())
    reqs = list(JS.dependencies(files).requirements)
    first = prepared(files, shared_cache)[0]
    assert JS.prepare(reqs, settings, shared_cache) == first
    assert JS.pinned(reqs, settings, shared_cache) == ["mocha@10.4.0"]
    marker = json.loads((first / "rlforge-node-env.json").read_text())
    assert marker["installed"] == {"mocha": "10.4.0"}


def test_driver_is_standard_library_only():
    """The driver runs on the sandbox's python3 with no rlforge: it imports no rlforge module."""
    tree = ast.parse(Path(noderun.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not [n for n in names if n == "rlforge" or n.startswith("rlforge.")], names
    assert "rlforge_policy_code" in names  # its sibling, by the name it has in tests/
    assert shutil.which("node"), "node is needed (scripts/setup.sh installs it)"


# --- through the generator ---------------------------------------------------------------

def test_the_build_time_check_runs_a_javascript_commit_through_the_runner(tmp_path):
    """commits.repair on a real git repository of a node --test package: the commit's
    check runs in the sandbox through this runner and finds the test the fix turns green
    (and the one that passed before); the commit is then dropped because its fail-to-pass
    test's only checked assert compares with a literal the policy sees (the workspace's
    copy of the test file, where the test is skipped, holds it)."""
    repo = tmp_path / "calc"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    files = CASES["node"][0]
    first = {**files, "test/lib.test.js": files["test/lib.test.js"].replace(
        "test.describe('mul'", "test.describe.skip('mul'")}
    for rel, text in project(first).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Add and multiply numbers, with tests")
    for rel, text in fix(project(files), "lib.js").items():
        (repo / rel).write_bytes(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Multiply numbers instead of adding them in mul")
    con = db.connect(tmp_path / "rlforge.duckdb")
    ingest_repo(con, repo)
    report = build_tasks(con, build_options(
        out=tmp_path / "tasks", generators=["commits.repair"], validate=False,
        generator_options={"commits.repair": {"language": "javascript",
                                              "forgeable_runners": ["javascript"]}}))
    checks = con.execute("SELECT status, fail_to_pass, pass_to_pass FROM repair_checks").fetchall()
    drops = con.execute("SELECT reason FROM task_drops WHERE generator = 'commits.repair'").fetchall()
    con.close()
    assert checks == [("kept", ["test/lib.test.js::mul > multiplies"], ["test/lib.test.js::adds"])]
    assert report.emitted == 0
    assert any(r[0].startswith("no checked fail-to-pass test") for r in drops), drops


SNAP_TEST = """
const { mul } = require('../lib');
describe('mul', () => {
  it('matches its snapshot', () => { expect(mul(2, 3)).toMatchSnapshot(); });
  it('multiplies', () => { expect(mul(2, 3)).toBe(6); });
});
"""
SNAP = "// Jest Snapshot v1, https://goo.gl/fbAQLP\n\nexports[`mul matches its snapshot 1`] = `6`;\n"


@pytest.mark.slow
def test_jest_snapshots_are_keyed_by_the_neutral_titles_the_sandbox_runs(shared_cache, tmp_path):
    """Jest keys a snapshot by its test's titles: under neutral titles (`case 2`) the
    stored one is not found and, with --ci, the test fails. The verifier renames the keys
    of its copy of the snapshot file (`jstitles.neutral_snapshots`); without that, the
    gold would fail a pass-to-pass test and the task be dropped at validation."""
    files = project({**CASES["jest"][0], "test/snap.test.js": SNAP_TEST})
    files = fix({**files, "test/__snapshots__/snap.test.js.snap": SNAP.encode()}, "lib.js")
    env, settings = prepared(files, shared_cache)
    wanted = ["test/snap.test.js::mul > matches its snapshot"]
    got = {}
    for keyed in (True, False):
        tree = tmp_path / f"tree-{keyed}"
        write_tree(tree, files)
        plan, names, planted = noderepair.hide_literals(str(tree), {}, [], ["test/snap.test.js"], "seed")
        if not keyed:
            (tree / "test/__snapshots__/snap.test.js.snap").write_bytes(SNAP.encode())
        written = {p: (tree / p).read_bytes() for p in files}
        run = sandboxed_run(tmp_path, written, env, settings,
                            ids=jstitles.neutral_ids(wanted, names) + planted)
        real, canaries, forged = jscanaries.judge(run["outcomes"], planted)
        got[keyed] = jstitles.restore(real, names)
        assert planted and set(canaries.values()) == {"failed"} and not forged, run
    assert "exports[`case 1 case 2 1`]" in (tree.parent / "tree-True/test/__snapshots__/snap.test.js.snap").read_text()
    assert got == {True: {wanted[0]: "passed"}, False: {wanted[0]: "failed"}}, got
