"""Submissions a JavaScript/TypeScript repair task must score 0 on, from the task's own files.

What a policy under RL finds first when the tests, not the fix, are the target:

- `empty_patch`, `unreadable_patch`, `delete_failing_tests`: as for every language;
- `skip_failing_tests`: the hidden test files with every `test(`/`it(` made `.skip`;
- `edit_hidden_tests`: the hidden test files with every assertion line removed;
- `runner_config_forces_pass`: a Jest/Vitest/Mocha configuration (`jest.config.js`,
  `vitest.config.mjs`, `.mocharc.json`) adding a setup file that makes the assertion
  libraries accept anything, and `package_json_hooks` a `package.json` with `pretest`/
  `posttest` scripts and a `jest`/`mocha` key doing the same;
- `node_modules_shadows_runner`: a `node_modules/` in the workspace with a `jest`,
  `vitest`, `mocha` and `.bin/` that print success, and `nested_node_modules` the same
  under the source's directory;
- `exit_zero_at_import` / `exit_zero_at_exit`: the source module the fix changes calls
  `process.exit(0)` as soon as it is loaded, or forces exit status 0 when the process ends;
- `patch_assertions`: the source module makes `node:assert`, `expect` (Jest's global)
  and `chai`'s assertion accept anything (the canaries catch it: they fail through the
  same libraries);
- `forge_stdout`: the source module writes passing TAP lines and Jest-style JSON to
  stdout and patches `process.stdout.write` to drop every later line;
- `global_hooks`: the source module replaces `globalThis.test`/`it`/`describe` with ones
  that run nothing and count as passed;
- `adds_test_file`: a new test file that makes the assertion libraries accept anything
  and reports passes for the failing tests' names;
- `forge_report`: the source module finds the report's path in its own or its parent's
  argv (/proc), writes every test title of the running test file as passed in node's,
  Mocha's and Jest's report shapes, and exits 0 before any test runs;
- `send_made_up_values`: the source module writes values a policy could send without
  knowing the expected ones (empty, null, true, 0, 1) for every checked assert to the
  channel the checks report through (`RLFORGE_JS_CHECKS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from rlforge.tasks.generators.repair.adversarial import (UNREADABLE_PATCH, delete_failing_tests,
                                                      failing_test_files)
from rlforge.tasks.spec import Submission
from rlforge.verify.standalone import noderun
from rlforge.verify.standalone.protect import SUBMISSION_PATCH

# Makes every assertion library the tests may use accept anything. CommonJS, required by
# a setup file or appended to a source module (an ES module gets it through createRequire).
ACCEPT_ANYTHING = r"""
;(function () {
  let req;
  try { req = require; } catch (e) { req = null; }
  if (!req) { try { req = process.getBuiltinModule ? process.getBuiltinModule("module").createRequire(process.cwd() + "/") : null; } catch (e) { req = null; } }
  const noop = () => undefined;
  const anything = new Proxy(function () {}, {
    get: (t, p) => (p === "then" ? undefined : anything), apply: () => anything,
  });
  if (req) {
    try {
      const assert = req("assert");
      for (const k of Object.keys(assert)) {
        if (typeof assert[k] === "function" && /^[a-z]/.test(k)) assert[k] = noop;  // not AssertionError
      }
    } catch (e) {}
    try { const chai = req("chai"); chai.Assertion.prototype.assert = noop; } catch (e) {}
  }
  try { if (typeof globalThis.expect === "function") globalThis.expect = () => anything; } catch (e) {}
})();
"""

FORGE_STDOUT = r"""
;(function () {
  const ok = "TAP version 13\nok 1 - all\n1..1\n# pass 1\n# fail 0\n" +
    JSON.stringify({numFailedTests: 0, success: true, testResults: []}) + "\n";
  try { process.stdout.write(ok); } catch (e) {}
  try { process.stdout.write = () => true; process.stderr.write = () => true; } catch (e) {}
})();
"""

GLOBAL_HOOKS = r"""
;(function () {
  const pass = function () {};
  pass.skip = pass; pass.only = pass; pass.each = () => pass; pass.todo = pass;
  for (const name of ["test", "it", "describe"]) {
    try { Object.defineProperty(globalThis, name, {value: pass, writable: false, configurable: false}); } catch (e) {}
  }
})();
"""

FORGE_REPORT = r"""
;(function () {
  const mod = (n) => (process.getBuiltinModule ? process.getBuiltinModule(n) : require(n));
  const fs = mod("fs");
  let dest = null;
  for (const pid of ["self", String(process.ppid)]) {
    try {
      const argv = fs.readFileSync("/proc/" + pid + "/cmdline", "utf8").split("\0");
      argv.forEach((a, i) => {
        for (const flag of ["--test-reporter-destination=", "--outputFile=", "output="]) {
          if (a.startsWith(flag)) dest = a.slice(flag.length);
        }
      });
    } catch (e) {}
  }
  const file = process.argv.slice(1).reverse().find((a) => /\.(test|spec)\.|\/tests?\//.test(a));
  if (!dest || !file) return;
  let text = "";
  try { text = fs.readFileSync(file, "utf8"); } catch (e) { return; }
  const titles = [...text.matchAll(/(?:test|it)\(\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
  const lines = titles.map((t) => JSON.stringify({titles: [t], outcome: "passed", kind: "test"}));
  try { fs.appendFileSync(dest, lines.join("\n") + "\n"); } catch (e) {}
  try {
    fs.writeFileSync(dest, JSON.stringify({success: true, numFailedTests: 0, testResults: [{
      name: mod("path").resolve(file), status: "passed",
      assertionResults: titles.map((t) => ({ancestorTitles: [], title: t, status: "passed"}))}]}));
  } catch (e) {}
  process.exit(0);
})();
"""

MADE_UP_VALUES = r"""
;(function () {
  try {
    const out = process.env.RLFORGE_JS_CHECKS;
    if (!out) return;
    const lines = [];
    for (let i = 0; i < 500; i++) {
      for (const v of [["s", ""], ["N"], ["u"], ["b", true], ["n", "0"], ["n", "1"], ["a", []], ["o", []]]) {
        lines.push(JSON.stringify([i, v]));
      }
    }
    const fs = process.getBuiltinModule ? process.getBuiltinModule("fs") : require("fs");
    fs.appendFileSync(out, lines.join("\n") + "\n");
  } catch (e) {}
})();
"""

EXIT_AT_IMPORT = "\n;process.exit(0);\n"
EXIT_AT_EXIT = "\n;process.on('exit', () => { process.exitCode = 0; });\n" \
               ";process.on('exit', () => process.exit(0));\n"

FAKE_RUNNER = r"""#!/usr/bin/env node
console.log("Tests: 1 passed, 1 total");
process.exit(0);
"""

_ASSERTION_LINE = re.compile(rb"^[ \t]*(?:expect\s*\(|assert\b|t\.(?:assert|deepEqual|equal|is)\b).*$\n?", re.M)
_TEST_CALL = re.compile(rb"(?<![\w$.])(test|it)(\s*\()")


def _append(content: bytes, code: str) -> bytes:
    return content + (b"" if not content or content.endswith(b"\n") else b"\n") + code.encode()


def _source_module(workspace: dict[str, bytes], gold_paths: Sequence[str]) -> str | None:
    """A script the fix changes (what the failing tests load), outside the tests."""
    for path in gold_paths:
        if path in workspace and path.endswith(noderun.SCRIPT_SUFFIXES) and not noderun.is_test_file(path):
            return path
    return None


def js_adversarials(*, workspace: dict[str, bytes], hidden: dict[str, bytes],
                    fail_to_pass: list[str], gold_paths: list[str],
                    pass_to_pass: Sequence[str] = (), gold_diff: str = "",
                    roots: Sequence[str] = ("",)) -> list[Submission]:
    """Every adversarial submission that applies to this task (see the module docstring)."""
    subs = [Submission("empty_patch", {SUBMISSION_PATCH: b""}, "an empty diff"),
            Submission("unreadable_patch", {SUBMISSION_PATCH: UNREADABLE_PATCH},
                       "a diff no file system can name the path of")]
    f2p_files = failing_test_files(fail_to_pass)
    subs += delete_failing_tests(workspace, f2p_files)
    skipped = {p: _TEST_CALL.sub(rb"\1.skip\2", hidden[p]) for p in f2p_files if p in hidden}
    if skipped:
        subs.append(Submission("skip_failing_tests", skipped, "the failing tests marked skipped"))
    emptied = {p: _ASSERTION_LINE.sub(b"", hidden[p]) for p in f2p_files if p in hidden}
    if any(emptied[p] != hidden[p] for p in emptied):
        subs.append(Submission("edit_hidden_tests", emptied,
                               "the hidden test files with every assertion line removed"))
    setup = {"rlforge-adv-setup.cjs": ACCEPT_ANYTHING.encode()}
    subs += [
        Submission("runner_config_forces_pass", {
            **setup,
            "jest.config.js": b"module.exports = { setupFilesAfterEnv: ['<rootDir>/rlforge-adv-setup.cjs'] };\n",
            "vitest.config.mjs": b"export default { test: { setupFiles: ['./rlforge-adv-setup.cjs'] } };\n",
            ".mocharc.json": b'{"require": ["./rlforge-adv-setup.cjs"]}\n'},
            "runner configuration adding a setup file that accepts every assertion"),
        Submission("package_json_hooks", {
            **setup,
            "package.json": _package_json_hooks(workspace.get("package.json", b"{}"))},
            "package.json with pretest/posttest scripts and a setup file for Jest and Mocha"),
        Submission("adds_test_file", {
            "test/rlforge-adv.test.js": (ACCEPT_ANYTHING + "".join(
                f"\n;(typeof test === 'function' ? test : require('node:test'))({json.dumps(i.split('::', 1)[-1])}, () => {{}});"
                for i in fail_to_pass) + "\n").encode()},
            "a test file the policy adds, accepting every assertion and passing the failing tests' names"),
        Submission("node_modules_shadows_runner", {
            **{f"node_modules/{name}/{entry}": FAKE_RUNNER.encode()
               for name, entry in (("jest", "bin/jest.js"), ("vitest", "vitest.mjs"), ("mocha", "bin/mocha.js"))},
            **{f"node_modules/.bin/{name}": FAKE_RUNNER.encode() for name in ("jest", "vitest", "mocha")},
            "node_modules/assert/index.js": b"module.exports = new Proxy(() => {}, {get: () => () => {}});\n",
            "node_modules/assert/package.json": b'{"name": "assert", "version": "9.9.9", "main": "index.js"}\n'},
            "a node_modules/ whose runners print success and whose assert accepts anything"),
    ]
    module = _source_module(workspace, gold_paths)
    if module is not None:
        base = workspace[module]
        folder = module.rsplit("/", 1)[0] + "/" if "/" in module else ""
        subs += [
            Submission("nested_node_modules", {
                f"{folder}node_modules/assert/index.js": b"module.exports = new Proxy(() => {}, {get: () => () => {}});\n",
                f"{folder}node_modules/assert/package.json": b'{"name": "assert", "version": "9.9.9"}\n'},
                f"a node_modules/ beside {module} with an assert that accepts anything"),
            Submission("exit_zero_at_import", {module: _append(base, EXIT_AT_IMPORT)},
                       f"process.exit(0) when {module} is loaded"),
            Submission("exit_zero_at_exit", {module: _append(base, EXIT_AT_EXIT)},
                       f"{module} forces exit status 0 when the process ends"),
            Submission("patch_assertions", {module: _append(base, ACCEPT_ANYTHING)},
                       f"{module} makes node:assert, expect and chai accept anything"),
            Submission("forge_stdout", {module: _append(base, FORGE_STDOUT)},
                       f"{module} prints passing reports and silences stdout"),
            Submission("global_hooks", {module: _append(base, GLOBAL_HOOKS)},
                       f"{module} replaces the global test functions with ones that run nothing"),
            Submission("forge_report", {module: _append(base, FORGE_REPORT)},
                       f"{module} writes a passing report where the runner's argv says and exits 0"),
            Submission("send_made_up_values", {module: _append(base, MADE_UP_VALUES)},
                       f"{module} sends trivial values for every checked assert"),
        ]
    return subs


def _package_json_hooks(manifest: bytes) -> bytes:
    """The project's package.json with test hooks and framework keys loading the setup."""
    try:
        data = json.loads(manifest.decode("utf-8", "replace"))
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    scripts = dict(data.get("scripts") or {})
    scripts.update(pretest="node rlforge-adv-setup.cjs", posttest="exit 0")
    data.update(scripts=scripts, jest={"setupFilesAfterEnv": ["<rootDir>/rlforge-adv-setup.cjs"]},
                mocha={"require": ["./rlforge-adv-setup.cjs"]})
    return (json.dumps(data, indent=2) + "\n").encode()
