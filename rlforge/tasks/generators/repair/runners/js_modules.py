"""Which modules a JavaScript/TypeScript test file may trust: the project's own code, not
its test code, and node built-ins that judge nothing (`js_statements` states the rule).

Test code is known by where it lives (the test tree, a test file's name) and by what it
does (`support_modules`): a module of the package that loads an assertion or test library
(directly or through its own imports), or that the package's public modules (its entry
points, what its `files` list publishes) never reach, is test support wherever it lives (`support/expect.js`, `helpers/expect.js`, `testUtils.js`).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping

from rlforge.verify.standalone import noderun

SAFE_BUILTINS = {"path", "fs", "os", "url", "util", "buffer", "events", "stream", "crypto",
                 "querystring", "zlib", "string_decoder"}
#: directories of test code and its support (helpers, hooks, fixtures, mocks)
_TEST_TREE = re.compile(r"(^|/)(tests?|__tests__|specs?|__mocks__|__fixtures__|fixtures|testing"
                        r"|test[-_]?(utils?|helpers?|support)|e2e)(/|$)")


def in_test_tree(path: str) -> bool:
    """Whether a repository path lies in a directory of test code or its support."""
    return bool(_TEST_TREE.search(posixpath.dirname(path) + "/") or noderun.TEST_DIR.search(path))


def project_path(source: str, importer: str, own_names: frozenset[str] = frozenset()) -> str | None:
    """The repository path a relative or own-name module source names, seen from the test
    file `importer` ("" for a source outside the repository or not the project's)."""
    if source.startswith("."):
        path = posixpath.normpath(posixpath.join(posixpath.dirname(importer), source))
        return "" if path == ".." or path.startswith("../") else path
    if source.startswith("/"):
        return ""
    for name in own_names:
        if source == name:
            return "."
        if source.startswith(name + "/"):
            return posixpath.normpath(source[len(name) + 1:])
    return None


def test_support(source: str, importer: str, own_names: frozenset[str] = frozenset(),
                 support: frozenset[str] = frozenset()) -> bool:
    """Whether a module is the project's test code (a test file, a module under the test
    tree: helpers, hooks, fixtures, or one of `support`, the modules that are test support
    by what they do, `support_modules`): the submission may replace what it exports, and
    its load-time code is not read, so it is no trusted project code."""
    path = project_path(source, importer, own_names)
    if path is None:
        return False
    if not path:
        return True  # outside the repository, or an absolute path: not known code
    if support and any(c in support for c in _candidates(path)):
        return True
    probe = path if path.endswith(noderun.SCRIPT_SUFFIXES) else path + ".js"
    return bool(_TEST_TREE.search(path) or noderun.TEST_NAME.search(probe)
                or noderun.TEST_DIR.search(path + "/"))


def trusted_module(source: str, own_names: frozenset[str] = frozenset(), importer: str = "",
                   support: frozenset[str] = frozenset()) -> bool:
    """Whether a module of this name can only be the project's own code (not its test code,
    `test_support`) or judge nothing."""
    if project_path(source, importer, own_names) is not None:
        return not test_support(source, importer, own_names, support)
    return source.removeprefix("node:") in SAFE_BUILTINS


#: packages that judge: assertion libraries, test frameworks, spies (by package name,
#: with or without `node:`); any package that only `devDependencies` names is one too
JUDGES = frozenset({"assert", "assert/strict", "test", "chai", "expect", "expect.js", "vitest",
                    "jest", "mocha", "sinon", "should", "power-assert", "tap", "tape", "ava",
                    "uvu", "unexpected", "jasmine", "qunit", "node-tap", "testdouble", "nock"})
_JUDGE_SCOPES = ("@jest/", "@vitest/", "@sinonjs/", "@testing-library/", "@playwright/")
_JUDGE_PREFIXES = ("chai-", "jest-", "sinon-", "should-", "vitest-", "mocha-")
#: where a module names another: require(S), import(S), import ... from S, export ... from S
_LOADS = re.compile(r"""(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s+|\bimport\s+)(['"])([^'"\n]+)\1""")
_BUILD_DIRS = re.compile(r"^(dist|lib|build|out|esm|cjs|es)/")


def _candidates(path: str) -> list[str]:
    """The files a module path may name, as node and TypeScript resolve it."""
    if path in (".", ""):
        return [f"index{s}" for s in noderun.SCRIPT_SUFFIXES] + ["."]
    stem = path[:-3] if path.endswith((".js", ".jsx")) else path
    return [path, *(path + s for s in noderun.SCRIPT_SUFFIXES),
            *(f"{path}/index{s}" for s in noderun.SCRIPT_SUFFIXES),
            *(stem + s for s in noderun.TYPESCRIPT_SUFFIXES)]


def _resolve(path: str, files: Mapping[str, bytes]) -> str | None:
    return next((c for c in _candidates(path) if c in files), None)


def _package_name(source: str) -> str:
    """`chai/register-expect` -> `chai`, `@jest/globals/x` -> `@jest/globals`, `node:assert` -> `assert`."""
    source = source.removeprefix("node:")
    parts = source.split("/")
    if source in JUDGES:
        return source
    return "/".join(parts[:2]) if source.startswith("@") else parts[0]


def _judge(source: str, dev_only: frozenset[str]) -> bool:
    name = _package_name(source)
    return (name in JUDGES or name in dev_only or name.startswith(_JUDGE_SCOPES)
            or name.startswith(_JUDGE_PREFIXES))


def _strings(value: object) -> Iterable[str]:
    """Every string in a `package.json` field (`exports` maps nest)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _entries(manifest: dict, files: Mapping[str, bytes]) -> set[str]:
    """The package's public modules: its entry files (`main`, `module`, `browser`,
    `exports`, `bin`; a built path read as its source, `dist/x.js` -> `src/x.ts`) and, with
    no `exports` map, every module the `files` list publishes (a consumer may require any
    of them by its subpath). Empty when that is not known: with neither `exports` nor
    `files`, every module of the package is published."""
    if "exports" not in manifest and not isinstance(manifest.get("files"), list):
        return set()
    named = [s for key in ("main", "module", "browser", "exports", "bin")
             for s in _strings(manifest.get(key)) if "*" not in s]
    out = set()
    for entry in named or ["index"]:
        path = posixpath.normpath(entry)
        if path.startswith(".."):
            continue
        found = _resolve(path, files) or _resolve(_BUILD_DIRS.sub("src/", path), files)
        if found is not None:
            out.add(found)
    if "exports" not in manifest:
        for entry in _strings(manifest.get("files")):
            top = posixpath.normpath(re.sub(r"(/\*\*?)+(/\*\.[\w.]+)?$", "", entry))
            if "*" in top or top.startswith(".."):
                return set()  # a pattern this reading does not follow: publishes what it may
            out |= {p for p in files if p.endswith(noderun.SCRIPT_SUFFIXES)
                    and (p == top or p.startswith(top + "/") or top == ".")}
    return out


def support_modules(files: Mapping[str, bytes]) -> frozenset[str]:
    """The package's modules (repository paths) that are test support by what they do: one
    that loads an assertion or test library (`JUDGES`, or a package only `devDependencies`
    names), directly or through the project modules it loads, or one the package's public
    modules (`_entries`, when the package says what it publishes) never reach. "." is
    among them when an entry point is. Read from each module's text (its `require`,
    `import` and `export ... from` of a plain string), a test file's too."""
    try:
        manifest = json.loads(files.get("package.json", b"{}").decode("utf-8", "replace"))
    except ValueError:
        manifest = {}
    if not isinstance(manifest, dict):
        manifest = {}
    deps = {n for key in ("dependencies", "peerDependencies", "optionalDependencies")
            if isinstance(manifest.get(key), dict) for n in manifest[key]}
    dev = manifest.get("devDependencies")
    dev_only = frozenset(set(dev) - deps) if isinstance(dev, dict) else frozenset()
    scripts = sorted(p for p in files if p.endswith(noderun.SCRIPT_SUFFIXES)
                     and "node_modules/" not in f"/{p}")
    loads: dict[str, set[str]] = {}
    judging: set[str] = set()
    for path in scripts:
        text = files[path].decode("utf-8", "surrogateescape")
        loads[path] = set()
        for _, source in _LOADS.findall(text):
            if source.startswith("."):
                target = _resolve(posixpath.normpath(posixpath.join(posixpath.dirname(path), source)),
                                  files)
                if target is not None:
                    loads[path].add(target)
            elif _judge(source, dev_only):
                judging.add(path)
    changed = True
    while changed:  # what loads a judging module judges
        changed = False
        for path in scripts:
            if path not in judging and loads[path] & judging:
                judging.add(path)
                changed = True
    support = set(judging)
    entries = _entries(manifest, files)
    if entries:
        reached, stack = set(), sorted(entries)
        while stack:
            path = stack.pop()
            if path not in reached:
                reached.add(path)
                stack.extend(loads.get(path, ()))
        support |= set(scripts) - reached
        if entries & support:
            support.add(".")
    return frozenset(support)


def import_names(statement):
    """The identifiers an import statement binds."""
    out = []
    stack = [c for c in statement.named_children if c.type == "import_clause"]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.append(n)
        elif n.type == "import_specifier":
            alias = n.child_by_field_name("alias") or n.child_by_field_name("name")
            if alias is not None:
                out.append(alias)
        else:
            stack.extend(n.named_children)
    return out
