"""The messages a hidden pytest test checks word for word, and which the policy cannot know.

A test that checks an error message, a log line or printed text word for word (`"Command
not found: x" in result.stderr`, `pytest.raises(E, match="no such key")`,
`debug.assert_called_once_with("loading disabled")`) fails a correct solution
that words it differently. Such a check is fair only when the policy can know the words:
the request quotes them, the project's source at the parent already holds them (an
existing message reused), or they are the test's own inputs echoed back (a key the test
writes). `unstated_wordings` returns the pieces of a test's checked messages between its
inputs, as written, that the workspace does not hold; `spec.specify` drops a commit whose
request does not state one of them as written (case and punctuation count, as they do for
the check; the text is a literal the verifier holds back, so no description may show it).
A piece of one word (`"missing" in str(err)`) is left alone: a keyword, not a wording.
"""

from __future__ import annotations

import ast
import re

# What a message is read from: `result.output`, `err` of `capsys.readouterr()`, `str(exc)`.
TEXT_ATTRS = frozenset({"output", "stdout", "stderr", "out", "err", "text", "message", "msg"})
TEXT_CALLS = frozenset({"str", "repr", "format"})
MATCH_CALLS = frozenset({"raises", "warns", "assertRaisesRegex", "assertWarnsRegex",
                         "assertRaisesRegexp", "assertRegex"})
MOCK_CALLS = frozenset({"assert_called_with", "assert_called_once_with", "assert_any_call", "call"})
MIN_WORDS = 2  # words of two letters or more: fewer is a keyword, not a wording
REGEX_SYNTAX = re.compile(r"\\[AbBdDsSwWZ]|[\^$.*+?()\[\]{}|]")


def _text_of(node: ast.AST) -> bool:
    """Whether an expression is the text a message is read from (see TEXT_ATTRS)."""
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        return name in TEXT_CALLS
    if isinstance(node, ast.Attribute):
        return node.attr in TEXT_ATTRS
    return isinstance(node, ast.Name) and node.id in TEXT_ATTRS


def _string(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return None


def _pattern_text(pattern: str) -> str:
    """A `match=` regular expression as the text it requires literally: its syntax
    becomes a break between pieces (NUL), an escaped character itself."""
    return re.sub(r"\\(.)", r"\1", REGEX_SYNTAX.sub("\0", pattern))


def checked_messages(func: ast.AST) -> list[ast.expr]:
    """The string literals a test checks as a message: contained in a text (`"x" in out`),
    equal to one (`str(err) == "x"`), a `match=` pattern, unittest's `assertIn`, the
    arguments a mock must have been called with (`debug.assert_called_once_with("x")`)."""
    found: list[ast.expr] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right, op = node.left, node.comparators[0], node.ops[0]
            if isinstance(op, ast.In) and _string(left) is not None:
                found.append(left)
            elif isinstance(op, ast.Eq):
                for lit, other in ((left, right), (right, left)):
                    if _string(lit) is not None and _text_of(other):
                        found.append(lit)
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            found += [kw.value for kw in node.keywords
                      if kw.arg == "match" and _string(kw.value) is not None]
            if name in MATCH_CALLS and name != "raises" and name != "warns" and len(node.args) >= 2 \
                    and _string(node.args[1]) is not None:
                found.append(node.args[1])
            if name == "assertIn" and node.args and _string(node.args[0]) is not None:
                found.append(node.args[0])
            if name in MOCK_CALLS:  # a mock's recorded arguments: a logger's, print's
                found += [a for a in node.args if _string(a) is not None]
    return found


def own_inputs(tree: ast.Module, func: ast.AST, checked: list[ast.expr]) -> list[str]:
    """The test's string literals but `checked` (its own, its parameters', the module's
    constants), longest first: what a message may echo."""
    held = {id(c) for c in checked}
    module_level = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                              ast.ClassDef))]
    out = {s for root in [func, *module_level] for n in ast.walk(root)
           if id(n) not in held and (s := _string(n)) is not None and len(s.strip()) >= 2}
    return sorted(out, key=lambda s: (-len(s), s))


def _words(text: str) -> int:
    """How many words of two letters or more a text holds."""
    return len(re.findall(r"[A-Za-z][A-Za-z0-9_']+", text))


def unstated_wordings(tree: ast.Module, func: ast.AST, visible: str) -> list[str]:
    """The wordings a test checks that the policy cannot know: each piece of a checked
    message between the test's inputs (and line breaks), stripped, of `MIN_WORDS` words or
    more, that the text of the workspace (`visible`, runs of white space as one space)
    does not hold as written."""
    checked = checked_messages(func)
    inputs = own_inputs(tree, func, checked)
    matches = {id(kw.value) for c in ast.walk(func) if isinstance(c, ast.Call)
               for kw in c.keywords if kw.arg == "match"}
    out: list[str] = []
    for node in checked:
        text = _string(node) or ""
        if id(node) in matches:
            text = _pattern_text(text)
        for piece in inputs:
            text = text.replace(piece, "\0")
        for part in re.split(r"[\0\n]", text):
            part = " ".join(part.split())
            if _words(part) >= MIN_WORDS and part not in visible and part not in out:
                out.append(part)
    return out
