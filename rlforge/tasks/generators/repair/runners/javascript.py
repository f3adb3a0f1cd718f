"""npm packages tested with node's test runner, Jest, Vitest or Mocha.

Detection: a `package.json` at the root. Which framework runs the tests is read from the
tree (`framework`): the `test` script first, then the frameworks' configuration files
(and `package.json` keys), then the devDependencies; node's built-in `node --test` when
none says. TypeScript: Vitest natively; Jest through the project's own transform (ts-jest
or babel-jest with a TypeScript preset, installed from its devDependencies); Mocha through
the project's `.mocharc` `require` (ts-node, tsx); node 20's test runner runs none (type
stripping came in node 22), so `.ts` test files are not run under `node --test`.

Tests: `*.test.*`/`*.spec.*`/`*-test.*`/`test-*` scripts and scripts under `test/`,
`tests/`, `__tests__/` or `spec/` (`rlforge.verify.standalone.noderun`), with the
frameworks' configuration files, babel/TypeScript configuration and `package.json`
(scripts, the `jest`/`mocha` keys) protected alongside, as is anything under a
`node_modules` directory.

The environment: the direct dependencies of `package.json` (dependencies and
devDependencies), each at the version its lockfile (`package-lock.json`) holds, else at
its range, installed outside the sandbox (`rlforge.sandbox.node_envs`) and mounted
read-only at /opt/venv; the exact versions installed are the task's pinned requirements. Local
(`file:`, `link:`, `workspace:`) dependencies are left out.

A run is `rlforge_noderun.py` in the sandbox: each test file in a process of its own,
the framework started from the environment, per-test results from its report (see that
module for what holds against tested code that forges results, and what does not).

Tasks are scored by the `repair-js` verifier (`rlforge/verify/standalone/noderepair.py`)
with checked asserts (`jsasserts`): a build's runs report the values of every literal
assert, and a fail-to-pass test is kept only when nothing but its checked asserts can
decide its verdict (its file read as statements: `js_statements`), the fix's values
passed all of them in every run and one of them discriminates (`checked_tests`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlforge.errors import UserError
from rlforge.sandbox import node_envs
from rlforge.sandbox.node_envs import tool_versions
from rlforge.tasks.generators.repair.runners.base import Dependencies, TestRun, TestRunner
from rlforge.tasks.generators.repair.runners import js_modules, js_statements
from rlforge.tasks.generators.repair.runners.js_adversarial import js_adversarials
from rlforge.verify.standalone import copied_name, files_of, jsasserts, jstitles, noderun

if TYPE_CHECKING:
    from rlforge.tasks.generators.repair.options import RepoSettings

MANIFEST, LOCKFILE = "package.json", "package-lock.json"
_CONFIG_EXTS = ("js", "cjs", "mjs", "ts", "cts", "mts", "json")
CONFIG_FILES = {
    "jest": tuple(f"jest.config.{e}" for e in _CONFIG_EXTS),
    "vitest": tuple(f"{n}.config.{e}" for n in ("vitest", "vitest.workspace", "vite")
                    for e in _CONFIG_EXTS),
    "mocha": (".mocharc", ".mocharc.js", ".mocharc.cjs", ".mocharc.mjs", ".mocharc.json", ".mocharc.jsonc",
              ".mocharc.yaml", ".mocharc.yml"),
}
#: configuration the frameworks (or their transforms) read: never the policy's to change
RUNNER_CONFIG = (MANIFEST, LOCKFILE, "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
                 ".npmrc", ".babelrc", ".babelrc.json", ".babelrc.js", ".babelrc.cjs",
                 *(f"babel.config.{e}" for e in _CONFIG_EXTS), "tsconfig.json",
                 *(n for names in CONFIG_FILES.values() for n in names))
RULES: dict[str, Any] = {
    "patterns": [noderun.TEST_NAME.pattern, noderun.TEST_DIR.pattern, r"(^|/)node_modules/",
                 r"(^|/)__mocks__/", r"(^|/)__snapshots__/", r"(^|/)tsconfig[^/]*\.json$"],
    "names": sorted(set(RUNNER_CONFIG)),
    "suffixes": [".snap"],
}
#: the package each framework needs in the environment (node's runner is built in)
FRAMEWORK_PACKAGE = {"jest": "jest", "vitest": "vitest", "mocha": "mocha"}
_LOCAL_SPEC = ("file:", "link:", "workspace:", "portal:", "./", "../", "/", "~/")


def _manifest(files: Mapping[str, bytes]) -> dict:
    try:
        data = json.loads(files.get(MANIFEST, b"{}").decode("utf-8", "replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _table(data: dict, key: str) -> dict[str, str]:
    value = data.get(key)
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def framework(files: Mapping[str, bytes]) -> str:
    """The framework the tree's tests run with: `node`, `jest`, `vitest` or `mocha`."""
    data = _manifest(files)
    script = _table(data, "scripts").get("test", "")
    found = {name: m.start() for name in ("vitest", "jest", "mocha")
             if (m := re.search(rf"(^|[\s/&;|]){name}(\s|$)", script))}
    node = re.search(r"(^|[\s&;|])node\s+(--[\w-]+(=\S+)?\s+)*--test\b", script)
    if node:
        found["node"] = node.start()
    if found:
        return min(found, key=lambda name: found[name])
    for name in ("vitest", "jest", "mocha"):
        if any(f in files for f in CONFIG_FILES[name]) or (name in ("jest", "mocha") and name in data):
            return name
    deps = {**_table(data, "dependencies"), **_table(data, "devDependencies")}
    for name in ("vitest", "jest", "mocha"):
        if name in deps:
            return name
    return "node"


def _locked_versions(files: Mapping[str, bytes]) -> dict[str, str]:
    """{package: version} of the direct dependencies a package-lock.json holds."""
    try:
        lock = json.loads(files.get(LOCKFILE, b"{}").decode("utf-8", "replace"))
    except ValueError:
        return {}
    if not isinstance(lock, dict):
        return {}
    out = {}
    packages = lock.get("packages")
    if isinstance(packages, dict):  # lockfileVersion 2 and 3
        for key, entry in packages.items():
            if key.startswith("node_modules/") and "/node_modules/" not in key[13:] \
                    and isinstance(entry, dict) and isinstance(entry.get("version"), str):
                out[key[13:]] = entry["version"]
    deps = lock.get("dependencies")
    if not out and isinstance(deps, dict):  # lockfileVersion 1
        out = {k: v["version"] for k, v in deps.items()
               if isinstance(v, dict) and isinstance(v.get("version"), str)}
    return out


#: what a Mocha configuration may `require` before the tests: transpilers, which add no hook
TRANSPILERS = {"ts-node/register", "ts-node/register/transpile-only", "ts-node/esm", "tsx",
               "tsx/cjs", "tsx/esm", "@babel/register", "@babel/polyfill", "esm",
               "source-map-support/register", "@swc/register", "@swc-node/register",
               "esbuild-register", "esbuild-register/dist/node"}
_SETUP_KEYS = re.compile(r"""["']?\b(setupFiles|setupFilesAfterEnv|globalSetup|globalTeardown|file)\b["']?\s*[:=]""")
_REQUIRE = re.compile(r"""["']?\brequire["']?\s*[:=]\s*(\[[^\]]*\]|(?:\s*-\s*[^\n]+\n?)+|[^\n,}]+)""")


def setup_code(files: Mapping[str, bytes]) -> str | None:
    """Which configuration loads code of its own into every test file (Jest's or Vitest's
    setup files, Mocha's `file` or a `require` that is not a transpiler), or None: such
    code may add hooks or matchers that decide any test's verdict."""
    data = _manifest(files)
    texts = {name: files[name].decode("utf-8", "replace") for names in CONFIG_FILES.values()
             for name in names if name in files}
    for key in ("jest", "mocha"):
        if key in data:
            texts[f"package.json {key}"] = json.dumps(data[key])
    for name, text in sorted(texts.items()):
        if _SETUP_KEYS.search(text):
            return name
        for m in _REQUIRE.finditer(text):
            if set(re.findall(r"[@\w][@\w./:-]*", m.group(1))) - TRANSPILERS:
                return name
    return None


def refusals(hidden: Mapping[str, bytes], fail_to_pass: list[str],
             workspace: Mapping[str, bytes]) -> dict[str, str]:
    """{fail-to-pass id: why something besides checked asserts can decide its verdict, or
    "" when nothing can} (`js_statements.explain`); every test is refused where the
    configuration loads setup code (`setup_code`)."""
    setup = setup_code({**workspace, **hidden})
    own = js_statements.own_names(workspace)
    support = js_modules.support_modules({**workspace, **hidden})
    read = {rel: js_statements.explain(hidden[rel], rel, own, support)
            for rel in sorted({i.split("::", 1)[0] for i in fail_to_pass} & set(hidden))}
    out = {}
    readable = None
    for test_id in fail_to_pass:
        rel, _, test = test_id.partition("::")
        if setup is not None:
            out[test_id] = f"{setup} loads setup code into every test file"
        elif rel not in read:
            out[test_id] = "not a hidden test file"
        else:
            out[test_id] = read[rel].get(test, read[rel].get("") or "not a plainly named test")
            if not out[test_id]:
                readable = readable or readable_text(hidden, workspace, support)
                out[test_id] = literal_elsewhere(readable, rel, test)
    return out


#: literals every file holds: a check of one is refused only when its call text repeats
_COMMON_LITERALS = frozenset({"true", "false", "null", "undefined"})
#: the largest file of the package read for a checked call's text (bytes)
_READ_LIMIT = 2 << 20


Readable = tuple[dict[str, str], dict[str, str], dict[str, dict[str, str]]]


def readable_text(hidden: Mapping[str, bytes], workspace: Mapping[str, bytes],
                  support: frozenset[str] = frozenset()) -> Readable:
    """What code in the sandbox can read, for `literal_elsewhere`: ({path: text} of the
    test code: test files, the test tree's other files, the `support` modules, the hidden
    test files as the verifier writes them there (`jstitles.neutralize`: neutral titles,
    no comments)), ({path: text without white space} of those and of every other file of
    the package, node_modules aside, up to `_READ_LIMIT` bytes each), ({hidden test file:
    {neutral test name: real name}})."""
    names: dict[str, dict[str, str]] = {}
    neutral = dict(hidden)
    for p, d in hidden.items():
        if p.endswith(noderun.SCRIPT_SUFFIXES):
            neutral[p], names[p], _ = jstitles.neutralize(d, titles=noderun.is_test_file(p))
    files = {p: d for p, d in workspace.items()
             if noderun.is_test_file(p) or js_modules.in_test_tree(p) or p in support} | neutral
    texts = {p: d.decode("utf-8", "surrogateescape") for p, d in sorted(files.items())}
    squeezed = {p: re.sub(r"\s+", "", d.decode("utf-8", "surrogateescape"))
                for p, d in sorted(workspace.items()) if p not in files
                and "node_modules/" not in f"/{p}" and len(d) <= _READ_LIMIT}
    squeezed |= {p: re.sub(r"\s+", "", t) for p, t in texts.items()}
    return texts, squeezed, names


def _strings_of(value: list) -> list[str]:
    """The strings of a tagged literal (`jsvalues`): itself, or an array's or object's
    string values at any depth (not the object's keys, which name fields code spells)."""
    if value[0] == "s":
        return [value[1]]
    if value[0] == "a":
        return [s for item in value[1] for s in _strings_of(item)]
    if value[0] == "o":
        return [s for _, item in value[1] for s in _strings_of(item)]
    return []


def literal_elsewhere(readable: Readable, rel: str, test: str) -> str:
    """Where a checked literal of a test, or the call text it checks, also appears in what
    code in the sandbox can read (`readable_text`; "" when nowhere). The verifier hides a
    counted test's literals, but code running beside it can read every other byte of the
    test code (a sibling test, a data table, an unchecked assert, a fixture, a helper
    module, the titles and comments of the files it does not hide) and find the same call
    or the value: such a test does not count. The hidden files are read as the sandbox
    gets them, titles neutral and comments gone (`jstitles`): a value a title implies
    without spelling it could not be found here, so no title of theirs is left to read.
    A string's text of 3 or more characters is looked for anywhere, quoted or not
    and in any case (`'... into rock-roll'` in a visible title), and so is each such string of an
    array or object literal (at any depth), whose whole text is also looked for with white
    space ignored; a shorter string, quoted; a number or other literal, as a word; the call text also in the package's other files
    (a README's example). Refusing is sound where rewriting every checked assert is not:
    a literal also sits in asserts that are not checked, constants, tables and titles."""
    texts, squeezed, names = readable
    folded: dict[str, str] = {}
    called = {new for new, real in names.get(rel, {}).items() if real == test} or {test}
    for c in jsasserts.find_checks(texts[rel], rel):
        if c["test"] not in called:
            continue
        src = c["literal_src"]
        needles = sorted({s.casefold() for s in _strings_of(c["literal"]) if len(s) >= 3})
        if src[:1] in "'\"`" and len(src) >= 2:
            pattern = "|".join(q + re.escape(src[1:-1]) + q for q in "'\"`")
        elif src not in _COMMON_LITERALS:
            pattern = r"(?<![\w$.])" + re.escape(src) + r"(?![\w$])"
        else:
            pattern = ""
        whole = re.sub(r"\s+", "", src) if c["literal"][0] in ("a", "o") else ""
        call = re.sub(r"\s+", "", texts[rel][c["expr_start"]:c["expr_end"]])
        for path, text in texts.items():
            own = (c["start"], c["end"]) if path == rel else (0, 0)
            if pattern and any(not own[0] <= m.start() < own[1] for m in re.finditer(pattern, text)):
                return f"its checked literal {src[:40]} also appears in {path}"
            if whole and squeezed[path].count(whole) > (1 if path == rel else 0):
                return f"its checked literal {src[:40]} also appears in {path}"
            rest = folded.setdefault(f"{path}\0{own}", (text[:own[0]] + text[own[1]:]).casefold()
                                     ) if needles else ""
            for needle in needles:
                if needle in rest:
                    return f"the text of its checked literal {src[:40]} also appears in {path}" + (
                        f" (its element {needle[:40]!r})" if c["literal"][0] != "s" else "")
            if squeezed[path].count(call) > (1 if path == rel else 0):
                return f"the call it checks ({call[:40]}) also appears in {path}"
        for path, text in squeezed.items():
            if path not in texts and call in text:
                return f"the call it checks ({call[:40]}) also appears in {path}"
    return ""


def counting(hidden: Mapping[str, bytes], fail_to_pass: list[str],
             workspace: Mapping[str, bytes]) -> dict[str, set[str]]:
    """{test file: names of its fail-to-pass tests that nothing but checked asserts
    decides} (`refusals`)."""
    out: dict[str, set[str]] = {}
    for test_id, why in refusals(hidden, fail_to_pass, workspace).items():
        rel, _, test = test_id.partition("::")
        if not why:
            out.setdefault(rel, set()).add(test)
    return out


class NodeTests(TestRunner):
    name = "javascript"
    version = 1
    language = "javascript"
    description = ("npm packages tested with node --test, Jest, Vitest or Mocha "
                   "(one process per test file, the framework's own report)")
    manifests = (MANIFEST,)
    verifier = "repair-js"
    result_format = "node-json"
    language_name = "JavaScript"
    source_suffixes = noderun.SCRIPT_SUFFIXES
    # Tests are read as statements (`js_statements`), but no red team has yet re-checked
    # that reading after the s49 fixes, and a pass-to-pass gate can still be forged (see
    # `noderepair`): JavaScript tasks are opt-in until one finds nothing.
    forgeable = ("the tests a JavaScript task counts are read as statements, but the reading "
                 "is not yet re-checked by a red team and pass-to-pass outcomes come from the "
                 "submission's own process")

    def test_rules(self) -> dict:
        return RULES

    def is_test_file(self, path: str) -> bool:
        return noderun.is_test_file(path)

    def dependencies(self, files: Mapping[str, bytes]) -> Dependencies:
        data = _manifest(files)
        wanted = {**_table(data, "dependencies"), **_table(data, "devDependencies")}
        locked = _locked_versions(files)
        reqs = {}
        for name, spec in wanted.items():
            if spec.startswith(_LOCAL_SPEC) or not name:
                continue
            reqs[name] = f"{name}@{locked.get(name) or spec}"
        package = FRAMEWORK_PACKAGE.get(framework(files))
        if package and package not in reqs:
            reqs[package] = package
        sources = [p for p in (MANIFEST, LOCKFILE) if p in files]
        h = hashlib.sha256()
        for path in sources:
            h.update(path.encode() + b"\0" + files[path] + b"\0")
        return Dependencies(tuple(sorted(reqs.values())), tuple(sources), h.hexdigest()[:16])

    def settings_for(self, files: Mapping[str, bytes], settings: "RepoSettings") -> "RepoSettings":
        """The framework goes in `test_command` unless the repository's settings name one."""
        if settings.test_command and settings.test_command[0] in noderun.FRAMEWORKS:
            return settings
        return replace(settings, test_command=(framework(files),))

    def env_key(self, requirements: list[str], settings: "RepoSettings") -> str:
        return node_envs.env_key(requirements)

    def prepare(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> Path:
        """`npm install` of the requirements outside the sandbox, on first use
        (`rlforge.sandbox.node_envs`)."""
        return node_envs.prepare_node_env(requirements, cache_dir)

    def pinned(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> list[str]:
        """`name@version` of each direct dependency as installed in the environment."""
        try:
            return node_envs.pinned(self.prepare(requirements, settings, cache_dir), requirements)
        except (UserError, OSError, ValueError, KeyError):
            return list(requirements)

    def runtime_version(self) -> str:
        return tool_versions()["node"]

    def check_identity(self) -> dict[str, str]:
        return {"runner": self.id, "runtime": f"node {self.runtime_version()}",
                "npm": tool_versions()["npm"], "checked_asserts": "1"}

    def test_run(self, *, tree: str, tests: str, out: str, env: str, settings: "RepoSettings",
                 paths: list[str] | None, budget_sec: float, check_name: str | None,
                 ids: list[str] | None = None) -> TestRun:
        chosen = settings.test_command[0] if settings.test_command else "node"
        if chosen not in noderun.FRAMEWORKS:
            raise UserError(f"the javascript runner runs {', '.join(noderun.FRAMEWORKS)}, not "
                            f"{' '.join(settings.test_command)!r} (tasks.repair.repos.*.test_command)")
        spec = {"tree": tree, "framework": chosen, "env": env, "ids": ids, "paths": paths,
                "per_test_timeout": settings.per_test_timeout,
                "collect_timeout": settings.collect_timeout, "budget_sec": budget_sec,
                "env_vars": dict(settings.env)}
        files = {**files_of("noderun", "siblings"), "run.json": json.dumps(spec).encode()}
        return TestRun(["/usr/bin/python3", "-I", f"{tests}/{copied_name('noderun')}",
                        f"{tests}/run.json", f"{out}/results.json"], files)

    def report_checks(self, tree: Path, files: Mapping[str, bytes]) -> tuple[str | None, dict]:
        """Every checked assert of the test `files` (path -> bytes in `tree`) also sends
        its value (the assertion kept: nothing is hidden in a build's runs)."""
        name = "__rlforge_check_" + os.urandom(6).hex()
        plan: dict[int, dict] = {}
        for rel in sorted(p for p in files if noderun.is_test_file(p)):
            tests = {c["test"] for c in jsasserts.find_checks(files[rel])}
            text, found = jsasserts.externalize(files[rel], rel, tests, name, start=len(plan), keep=True)
            if found:
                (tree / rel).write_bytes(text)
                plan.update(found)
        return name, plan

    def held_lines(self, plan: dict, checks: dict, ids: list[str]) -> dict[str, list[int]]:
        return jsasserts.held_lines(plan, checks, ids)

    def checked_tests(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                      workspace: Mapping[str, bytes], held_at_parent: dict,
                      held_with_fix: dict) -> list[str]:
        """The fail-to-pass tests that nothing but checked asserts decides (`counting`), with
        a checked assert that discriminates, all of whose checked asserts the fix's values
        passed, as the verifier compares them (`jsasserts.checked_tests`)."""
        return jsasserts.checked_tests(dict(hidden), fail_to_pass, dict(workspace),
                                       held_at_parent, held_with_fix,
                                       counting(hidden, fail_to_pass, workspace))

    def unchecked_why(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                      workspace: Mapping[str, bytes]) -> str:
        """How many fail-to-pass tests more than checked asserts decide, and the first's why."""
        refused = {i: w for i, w in refusals(hidden, fail_to_pass, workspace).items() if w}
        if not refused:
            return ""
        first = min(refused)
        return (f"{len(refused)} of {len(fail_to_pass)} fail-to-pass tests are decided by more than "
                f"checked asserts ({first}: {refused[first]})")

    def reference_fields(self, settings: "RepoSettings", workspace: Mapping[str, bytes]) -> dict:
        return {"framework": settings.test_command[0] if settings.test_command else "node",
                "node_env": "/opt/venv"}

    def task_metadata(self, requirements: list[str], settings: "RepoSettings") -> dict:
        """The environment's requirement lines (`rlforge.verify.runner` prepares it again
        from them), and its key."""
        return {"env_key": self.env_key(requirements, settings), "node_requirements": list(requirements),
                "node_version": self.runtime_version()}

    def template_context(self, requirements: list[str], settings: "RepoSettings",
                         cache_dir: Path) -> dict:
        return {**super().template_context(requirements, settings, cache_dir),
                "node_major": self.runtime_version().split(".")[0] or "20"}

    def adversarials(self, **task) -> list:
        return js_adversarials(**task)


class TypeScriptTests(NodeTests):
    """The same runner for repositories whose commits `commit_files` calls TypeScript."""

    name = "typescript"
    language = "typescript"
    language_name = "TypeScript"
    description = "TypeScript npm packages: the javascript runner (Vitest, Jest with a transform, Mocha)"
