"""JavaScript/TypeScript tests run as policy code: one process per test file, per-test results.

    python3 -I rlforge_noderun.py SPEC OUT

SPEC is a JSON file: `tree` (the project, the tests' working directory), `framework`
(`node` for `node --test`, `jest`, `vitest` or `mocha`), `env` (the prepared environment,
whose `node_modules` the tests resolve packages from), `paths` (test files to run; None:
every test file of the tree), `ids` (only these tests' outcomes are wanted; None: all),
`per_test_timeout`, `collect_timeout`, `budget_sec`, `env_vars`. The raw result (the
`RunResult` shape of `rlforge.tasks.generators.repair.runners.base`) is written to OUT.

How a run is kept honest, as far as one process of JavaScript can be:

- the runner is started by its path in the prepared environment (`node_modules/jest/bin/
  jest.js`...), never through the tree: a `jest` or `node_modules/.bin` in the workspace
  is not used. Every `node_modules` in the tree is removed before each file's run and the
  root one made anew of links to the prepared environment's packages (mounted
  read-only), so nothing the workspace holds can stand in for an installed package;
- `NODE_OPTIONS` and every `npm_*` variable are cleared (no `--require` of a planted
  file), npm is never run (no `pretest`/`posttest` scripts), Jest runs with `--no-cache`;
- each test file runs in a process (tree) of its own, started through the policy-code
  launcher (`policy_code.LocalPolicy`: another uid when the verifier is root), killed as a
  session at its deadline; what one file's code does cannot change another file's
  results, except through the files it leaves behind;
- results come from the runner's own report (node's and Mocha's from a reporter written
  here under a random name, Jest's and Vitest's JSON), written into a directory the code
  may write but not list, under a random file name; they are cross-checked with the
  runner's exit status: a file whose runner exits non-zero with no failing test
  reported counts every test of it as failed (a `process.exit` during the run, or a report
  written by someone else), and one that exits 0 while a failure was reported keeps it;
- a file whose run outlives `collect_timeout + per_test_timeout` is killed: its tests
  that reported nothing are `timeout`, the file is `hung`.
- checked asserts (`jsasserts`) append their values to a file named by
  `RLFORGE_JS_CHECKS` beside the report; they come back as `checks` ({file: {index:
  [values]}}) for the verifier to compare with literals this process never holds.

What does not hold: the tested code runs in the same process as the runner and its
reporter (Jest and Mocha in band, node's test runner in a child whose reports the parent
parses from its stdout). Code that patches the runner's internals, or learns the report's
path (from the runner's argv, readable in /proc by the same uid) and writes a passing
report before calling `process.exit(0)`, forges its own file's outcomes, and code that
reads its test file can tell a canary from the real test it copies by its literal
where it knows the real one (`jscanaries`); checked asserts (compared by the verifier,
`noderepair`) are what catch that.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.noderun
    from .jsasserts import ENV as CHECKS_ENV
    from .jsasserts import read_sent
    from .policy_code import LocalPolicy, regular_file
else:  # tests/rlforge_noderun.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_jsasserts import ENV as CHECKS_ENV
    from rlforge_jsasserts import read_sent
    from rlforge_policy_code import LocalPolicy, regular_file

FRAMEWORKS = ("node", "jest", "vitest", "mocha")
#: where each framework's command-line entry lives in the prepared environment
ENTRY = {"jest": "jest/bin/jest.js", "vitest": "vitest/vitest.mjs", "mocha": "mocha/bin/mocha.js"}
SCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
TYPESCRIPT_SUFFIXES = (".ts", ".mts", ".cts", ".tsx")
#: test files by name: foo.test.js, foo.spec.ts, foo-test.mjs, foo_test.js, test-foo.js, test.js
TEST_NAME = re.compile(r"(^|/)([^/]+[.\-_](test|spec)|test-[^/]+|test)\.[cm]?[jt]sx?$")
#: test files by place: anything under test/, tests/, __tests__/ or spec/
TEST_DIR = re.compile(r"(^|/)(test|tests|__tests__|spec)/")
#: what Vitest and Jest say of a file that declares no test (a helper or data file that
#: matches a test pattern): not a test file, no collect error
NO_TESTS = re.compile(r"No test suite found in file|Your test suite must contain at least one test")
SEP = " > "  # between a test's ancestor titles and its own in a test id
REPORT_LIMIT = 50 * 1024 * 1024

# node --test's reporter: one JSON line per finished test, with its titles.
NODE_REPORTER = r"""
export default async function* rlforgeReporter(source) {
  const titles = [];
  for await (const event of source) {
    const data = event.data || {};
    if (event.type === "test:start") {
      titles.length = data.nesting || 0;
      titles.push(String(data.name));
    } else if (event.type === "test:pass" || event.type === "test:fail") {
      const details = data.details || {};
      const path = titles.slice(0, data.nesting || 0).concat([String(data.name)]);
      let outcome = event.type === "test:pass" ? "passed" : "failed";
      if (data.skip !== undefined || data.todo !== undefined) outcome = "skipped";
      yield JSON.stringify({titles: path, outcome, kind: details.type || "test",
                            file: data.file || null,
                            failure: (details.error && details.error.failureType) || "",
                            error: outcome === "failed" ? String(details.error || "").slice(0, 500) : ""}) + "\n";
    }
  }
}
"""

# Mocha's reporter: the same lines, from the runner's events.
MOCHA_REPORTER = r"""
"use strict";
const fs = require("fs");
function RlforgeReporter(runner, options) {
  const out = ((options || {}).reporterOptions || {}).output;
  const fd = fs.openSync(out, "wx");
  const line = (test, outcome, error) => fs.writeSync(fd, JSON.stringify({
    titles: test.titlePath(), outcome, kind: "test", file: test.file || null,
    error: error ? String(error.message || error).slice(0, 500) : ""}) + "\n");
  runner.on("pass", (test) => line(test, "passed"));
  runner.on("fail", (test, err) => line(test, "failed", err));
  runner.on("pending", (test) => line(test, "skipped"));
}
module.exports = RlforgeReporter;
"""


def is_test_file(path):
    """A JavaScript/TypeScript test file by its name or place (never under node_modules)."""
    if not path.endswith(SCRIPT_SUFFIXES) or "node_modules/" in f"/{path}":
        return False
    return bool(TEST_NAME.search(path) or TEST_DIR.search(path))


def test_files(tree):
    """Every test file of the tree, sorted (node_modules and dot-directories left out)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d != "node_modules" and not d.startswith("."))
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), tree).replace(os.sep, "/")
            if is_test_file(rel) and regular_file(os.path.join(dirpath, name)):
                found.append(rel)
    return sorted(found)


def isolate_packages(tree, env):
    """Remove every node_modules of the tree; make the root one a directory of links to
    the environment's packages (a directory of the tree's, so tools that keep temporary
    files there, like Vite's bundled configuration in `.vite-temp`, can; the packages
    themselves stay read-only)."""
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in list(dirnames) + list(filenames):
            if name == "node_modules":
                path = os.path.join(dirpath, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        dirnames[:] = [d for d in dirnames if d != "node_modules"]
    modules = os.path.join(env, "node_modules")
    if os.path.isdir(modules):
        root = os.path.join(tree, "node_modules")
        os.mkdir(root)
        os.chmod(root, 0o777)
        for name in sorted(os.listdir(modules)):
            os.symlink(os.path.join(modules, name), os.path.join(root, name))


def entry_of(modules, framework):
    """The framework's command-line script in the environment's `modules`: the `bin` its
    package.json names (Mocha's moved from bin/mocha to bin/mocha.js in version 10),
    else the one of current versions (`ENTRY`)."""
    try:
        with open(os.path.join(modules, framework, "package.json"), encoding="utf-8") as fh:
            bin_ = json.load(fh).get("bin")
        rel = bin_.get(framework) if isinstance(bin_, dict) else bin_
        if isinstance(rel, str) and os.path.isfile(os.path.join(modules, framework, rel)):
            return os.path.normpath(os.path.join(modules, framework, rel))
    except (OSError, ValueError, AttributeError):
        pass
    return os.path.join(modules, ENTRY[framework])


def command(framework, env, rel, report, reporter):
    """argv of one framework's run of the test file `rel`, its report going to `report`."""
    modules = os.path.join(env, "node_modules")
    if framework == "node":
        return ["node", "--test", f"--test-reporter={reporter}",
                f"--test-reporter-destination={report}", rel]
    entry = entry_of(modules, framework)
    if framework == "jest":
        return ["node", entry, "--ci", "--no-cache", "--colors=false", "--watchman=false",
                "--json", f"--outputFile={report}", "--runTestsByPath", rel]
    if framework == "vitest":
        # forks: a thread's isolate reserves more address space than RLIMIT_AS leaves
        return ["node", entry, "run", "--pool=forks", "--no-cache", "--reporter=json",
                f"--outputFile={report}", "--no-color", "--watch=false", rel]
    return ["node", entry, "--reporter", reporter, "--reporter-option", f"output={report}",
            "--no-color", "--exit", rel]


def _read(path, limit=REPORT_LIMIT):
    try:
        if not regular_file(path):
            return None
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def parse_lines(text, rel):
    """Results of node's or Mocha's reporter: ([(test name, outcome)], file errors, whether
    the file declares no test)."""
    results, errors = [], []
    for line in (text or "").splitlines():
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(ev, dict) or not isinstance(ev.get("titles"), list):
            continue
        titles = [str(t) for t in ev["titles"]]
        if ev.get("kind") == "suite":
            if ev.get("outcome") == "failed" and ev.get("failure") != "subtestsFailed":
                # a describe() that threw while declaring its tests
                errors.append(f"{rel}: {SEP.join(titles)}: {ev.get('error', '')}"[:300])
            continue
        if len(titles) == 1 and titles[0].replace(os.sep, "/").endswith("/" + rel):
            if ev.get("outcome") == "failed":  # the file itself failed (to load, or to exit 0)
                errors.append(f"{rel}: {ev.get('error', '')}"[:300])
            continue  # node's entry for the whole file, not a test
        results.append((SEP.join(titles), str(ev.get("outcome"))))
    return results, errors, False


JEST_OUTCOMES = {"passed": "passed", "failed": "failed", "pending": "skipped", "skipped": "skipped",
                 "todo": "skipped", "disabled": "skipped"}


def parse_json(text, rel):
    """Results of a Jest-shaped JSON report (Jest's `--json`, Vitest's json reporter), as
    `parse_lines` gives them."""
    try:
        data = json.loads(text or "")
    except (ValueError, RecursionError):
        return [], [], False
    results, errors = [], []
    suites = data.get("testResults") if isinstance(data, dict) else None
    for suite in suites if isinstance(suites, list) else []:
        if not isinstance(suite, dict):
            continue
        name = str(suite.get("name", "")).replace(os.sep, "/")
        if not (name == rel or name.endswith("/" + rel)):
            continue  # another file the runner's filter or configuration matched
        tests = [a for a in suite.get("assertionResults") or [] if isinstance(a, dict)]
        if suite.get("status") == "failed" and not tests:
            message = str(suite.get("message", ""))
            if NO_TESTS.search(message):
                return [], [], True
            errors.append(f"{rel}: {message[:300]}")
        for a in tests:
            titles = [str(t) for t in a.get("ancestorTitles") or [] if t != ""]  # Vitest's file
            titles.append(str(a.get("title", "")))
            results.append((SEP.join(titles), JEST_OUTCOMES.get(str(a.get("status")), "failed")))
    return results, errors, False


def _private_dir(parent, mode):
    path = tempfile.mkdtemp(prefix="r", dir=parent)
    os.chmod(path, mode)
    return path


def node_options():
    """Flags every node process of a run gets (NODE_OPTIONS, so the runners' workers too):
    WebAssembly without the trap handler's guard regions, which reserve gigabytes of
    address space that RLIMIT_AS refuses (Vitest's wasm parsers), where node has the flag."""
    try:
        proc = subprocess.run(["node", "--help"], capture_output=True, text=True, timeout=30,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--disable-wasm-trap-handler"] if "--disable-wasm-trap-handler" in proc.stdout else []


def run_file(policy, tree, framework, env, rel, timeout, work, env_vars, node_flags=()):
    """One test file's run: ([(test id, outcome)], [errors], hung, log tail, {index:
    [values]} its checked asserts sent (`jsasserts`))."""
    reports = _private_dir(work, 0o733)  # the code may write here, not list it
    report = os.path.join(reports, os.urandom(12).hex())
    reporter = None
    if framework in ("node", "mocha"):
        code = _private_dir(work, 0o755)
        reporter = os.path.join(code, os.urandom(6).hex() + (".mjs" if framework == "node" else ".cjs"))
        with open(reporter, "w", encoding="utf-8") as fh:
            fh.write(NODE_REPORTER if framework == "node" else MOCHA_REPORTER)
        os.chmod(reporter, 0o644)
    # MALLOC_ARENA_MAX: glibc reserves 64 MB of address space per thread's arena, and a
    # sandbox holds each process to its memory in address space too (RLIMIT_AS): Jest's
    # threads would otherwise abort node at start-up well under the memory limit.
    run_env = {"CI": "1", "NODE_ENV": "test", "NO_COLOR": "1", "FORCE_COLOR": "0", "TZ": "UTC",
               "MALLOC_ARENA_MAX": "2"}
    run_env.update(env_vars or {})
    for key in list(run_env):
        if key == "NODE_OPTIONS" or key.lower().startswith("npm_"):
            del run_env[key]
    if node_flags:
        run_env["NODE_OPTIONS"] = " ".join(node_flags)
    run_env[CHECKS_ENV] = report + ".checks"
    handle = policy.start(command(framework, env, rel, report, reporter), tree, {}, run_env,
                          timeout=timeout)
    while not handle.poll():
        time.sleep(0.05)
    ran = handle.result()
    text = _read(report)
    sent = read_sent(_read(report + ".checks"))
    parse = parse_lines if framework in ("node", "mocha") else parse_json
    results, errors, no_tests = parse(text, rel)
    log = ((ran.stdout or "") + (ran.stderr or ""))[-4000:]
    if no_tests or (text is None and NO_TESTS.search(log)):
        return [], [], False, log, {}
    if ran.timed_out:
        return [(f"{rel}::{n}", o) for n, o in results], errors, True, log, sent
    failed = any(o == "failed" for _, o in results)
    if ran.code != 0 and not failed:
        why = f"exit {ran.code}" if ran.code is not None else "killed by a signal"
        if results:  # passes the runner's own exit status contradicts
            errors.append(f"{rel}: {why} with no failing test reported")
            results = [(n, "failed" if o == "passed" else o) for n, o in results]
        elif not errors and (TEST_NAME.search(rel) or text is None):
            errors.append(f"{rel}: {why}, no test ran: {log.strip()[-200:]}")
    return [(f"{rel}::{n}", o) for n, o in results], errors, False, log, sent


def run_tests(tree, framework, env, ids=None, *, paths=None, per_test_timeout=15.0,
              collect_timeout=120.0, budget_sec=600.0, env_vars=None, policy=None):
    """Run the test files of `tree` (those of `ids`, else `paths`, else all) one process
    each; the RunResult dict (see the module docstring). Canaries are the verifier's: it
    plants them in the files and asks for them among `ids` (`jscanaries`), so nothing
    here knows which they are."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown test framework {framework!r}; valid: {', '.join(FRAMEWORKS)}")
    policy = policy or LocalPolicy()
    started_at = time.monotonic()
    deadline = started_at + budget_sec
    wanted = None if ids is None else list(dict.fromkeys(ids))
    if wanted is not None:
        files = sorted({i.split("::", 1)[0] for i in wanted})
    elif paths is not None:
        files = sorted(p for p in paths if is_test_file(p))
    else:
        files = test_files(tree)
    if framework == "node":  # node 20 runs no TypeScript (type stripping came in node 22)
        files = [f for f in files if not f.endswith(TYPESCRIPT_SUFFIXES)]
    files = [f for f in files if regular_file(os.path.join(tree, f))]
    flags = node_options()
    work = tempfile.mkdtemp(prefix="rlforge-node-")
    os.chmod(work, 0o711)
    outcomes, started, hung, errors, tail, checks = {}, [], [], [], "", {}
    result = {"collection_hang": False, "budget_exhausted": False, "sessions": 0}
    try:
        for rel in files:
            left = deadline - time.monotonic()
            if left <= 1:
                result["budget_exhausted"] = True
                break
            result["sessions"] += 1
            isolate_packages(tree, env)  # again: the last file's code may have changed it
            found, errs, timed_out, tail, sent = run_file(
                policy, tree, framework, env, rel, min(left, collect_timeout + per_test_timeout),
                work, env_vars, flags)
            errors += errs
            if sent:
                checks[rel] = sent
            for test_id, outcome in found:
                if test_id not in outcomes:  # the first report of a test wins
                    started.append(test_id)
                    outcomes[test_id] = outcome
            if timed_out:
                hung.append(rel)
                if not found:
                    result["collection_hang"] = True
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if hasattr(policy, "sweep"):
            policy.sweep()
    started = [i for i in started if i in outcomes]
    if wanted is not None:
        lost = "timeout" if result["budget_exhausted"] else "missing"
        outcomes = {i: outcomes.get(i, "timeout" if i.split("::", 1)[0] in hung else lost)
                    for i in wanted}
        started = [i for i in started if i in outcomes]
    result.update(outcomes=outcomes, started=started, hung=hung, checks=checks,
                  collect_errors=sorted(set(errors)), log_tail=tail,
                  seconds=round(time.monotonic() - started_at, 3))
    return result


def run_only(spec_path, out_path):
    """Run the tests a SPEC file names and write the raw result to `out_path`."""
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    result = run_tests(spec["tree"], spec["framework"], spec["env"], spec.get("ids"),
                       paths=spec.get("paths"), per_test_timeout=spec["per_test_timeout"],
                       collect_timeout=spec["collect_timeout"], budget_sec=spec["budget_sec"],
                       env_vars=spec.get("env_vars"))
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, sort_keys=True)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2:
        print("usage: rlforge_noderun.py SPEC OUT", file=sys.stderr)
        return 2
    return run_only(argv[0], argv[1])


if __name__ == "__main__":
    sys.exit(main())
