"""Which modules a JavaScript/TypeScript test file may trust: the project's own code, not
its test code, and node built-ins that judge nothing (`js_statements` states the rule).
"""

from __future__ import annotations

import posixpath
import re

from rlforge.verify.standalone import noderun

SAFE_BUILTINS = {"path", "fs", "os", "url", "util", "buffer", "events", "stream", "crypto",
                 "querystring", "zlib", "string_decoder"}
#: directories of test code and its support (helpers, hooks, fixtures, mocks)
_TEST_TREE = re.compile(r"(^|/)(tests?|__tests__|specs?|__mocks__|__fixtures__|fixtures|testing"
                        r"|test[-_]?(utils?|helpers?|support)|e2e)(/|$)")


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


def test_support(source: str, importer: str, own_names: frozenset[str] = frozenset()) -> bool:
    """Whether a module is the project's test code (a test file, or a module under the test
    tree: helpers, hooks, fixtures): the submission may replace what it exports, and its
    load-time code is not read, so it is no trusted project code."""
    path = project_path(source, importer, own_names)
    if path is None:
        return False
    if not path:
        return True  # outside the repository, or an absolute path: not known code
    probe = path if path.endswith(noderun.SCRIPT_SUFFIXES) else path + ".js"
    return bool(_TEST_TREE.search(path) or noderun.TEST_NAME.search(probe)
                or noderun.TEST_DIR.search(path + "/"))


def trusted_module(source: str, own_names: frozenset[str] = frozenset(), importer: str = "") -> bool:
    """Whether a module of this name can only be the project's own code (not its test code,
    `test_support`) or judge nothing."""
    if project_path(source, importer, own_names) is not None:
        return not test_support(source, importer, own_names)
    return source.removeprefix("node:") in SAFE_BUILTINS


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
