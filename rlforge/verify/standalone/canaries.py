"""Canary tests planted among the real ones: each must fail, or the results cannot be trusted."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.canaries
    from .asserts import compared, is_tolerant, keys_by_file, literal_value, test_functions
    from .plugin import parse_source
else:  # tests/rlforge_canaries.py: its siblings by their copied names
    from rlforge_asserts import compared, is_tolerant, keys_by_file, literal_value, test_functions
    from rlforge_plugin import parse_source

CANARIES = 3


def _test_names(tree_text):
    return re.findall(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", tree_text, re.M)


def _value_literals(node):
    """The literals of an expected value that each change it when changed: the value itself,
    the elements of a list, tuple, set or dict, a negated number; never a literal inside a
    call or another expression."""
    import ast

    if isinstance(node, ast.Constant):
        return [node]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _value_literals(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [c for e in node.elts for c in _value_literals(e)]
    if isinstance(node, ast.Dict):
        return [c for e in node.values if e is not None for c in _value_literals(e)]
    return []  # a call (approx tolerates small changes), a name, an expression


def _mutant(raw, node, rng, methods=frozenset()):
    """The source of test function `node` with one literal of one of its top-level
    equality checks changed (`assert X == Y`, or a unittest `self.assertEqual(X, Y)` of
    `methods`), in the expected side where it has one (Y, or the side that is a whole
    literal), so it fails where the original passes; None when it has no such check."""
    import ast

    sites = []
    for stmt in node.body:
        found = compared(stmt, node, methods)
        if found is None or found[0] != "Eq":
            continue
        _, left, right, check = found
        if is_tolerant(check):
            continue  # approx(1e9) == 1000000003.5 still holds
        # The expected value: never the inputs on the left, whose change may not change the
        # result (percent(0, 5) == 0.0 holds for any 5), and only literals that are the value
        # itself or an element of it: one inside a call may not count (max(3, 10), round(x, 2)).
        # unittest's expected value is as often first (`assertEqual(6, area(2, 3))`).
        expected = left if isinstance(check, ast.Call) and literal_value(left)[0] and not literal_value(right)[0] \
            else right
        found = _value_literals(expected)
        sites.extend(n for n in found if type(n.value) in (int, float, str)
                     and n.lineno == n.end_lineno)
    lines = raw.splitlines(keepends=True)
    rng.shuffle(sites)
    for const in sites:
        line = lines[const.lineno - 1]
        old = line[const.col_offset:const.end_col_offset].decode("utf-8", "surrogateescape")
        if isinstance(const.value, bool) or not old:
            continue
        # Mutants scatter on both sides of the original (longer and shorter, larger and
        # smaller), so the original is not the extreme one among its copies.
        if type(const.value) is float and re.fullmatch(r"\d+\.\d*", old):
            new = repr(round(const.value + rng.choice((-1, 1)) * rng.randrange(1, 10) + 0.5, 6))
            new = new if not new.startswith("-") else repr(const.value + 1.5)
        elif type(const.value) is int and old.isdigit():
            step = rng.randrange(1, max(10, const.value))
            value = const.value + rng.choice((-1, 1)) * step
            new = str(value if value >= 0 else const.value + step)
        elif type(const.value) is str and old[0] in "'\"" and len(old) >= 2 and old[-1] == old[0] \
                and old[-2:-1] != old[0] and "\\" not in old:
            inner, letters = old[1:-1], "abcdefghijklmnopqrstuvwxyz"
            if inner and rng.random() < 0.5:
                i = rng.randrange(len(inner))
                inner = inner[:i] + inner[i + 1:] if rng.random() < 0.5 else \
                    inner[:i] + rng.choice([c for c in letters if c != inner[i]]) + inner[i + 1:]
            else:
                inner += "".join(rng.choice(letters) for _ in range(rng.randrange(1, 4)))
            new = old[0] + inner + old[-1]
        else:
            continue
        if ast.literal_eval(new) == const.value:  # a float too large to move by a few units
            continue
        body = lines[node.lineno - 1:node.end_lineno]
        at = const.lineno - node.lineno
        body[at] = line[:const.col_offset] + new.encode() + line[const.end_col_offset:]
        return b"".join(body).decode("utf-8", "surrogateescape")
    return None


def insert_definition(text, body, source, rng, owner=None):
    """`text` (a module whose parsed `body` is given) with the definition `source` inserted
    before one of its top-level definitions or at its end, chosen by `rng`, with the blank
    lines a definition has around it; with `owner` (a class of `body`; `source` indented as
    its methods are), before one of the class's methods or after its last line."""
    import ast

    defs = (ast.FunctionDef, ast.AsyncFunctionDef) if owner is not None else \
        (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    starts = [min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
              for n in (owner.body if owner is not None else body) if isinstance(n, defs)]
    lines = text.splitlines(keepends=True)
    end = owner.end_lineno + 1 if owner is not None else len(lines) + 1
    at = rng.choice(starts + [end]) if starts else end
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    blank = 1 if owner is not None else 2  # between methods, between top-level definitions
    if at == end:  # after the last definition: the blank lines a definition has before it
        source = "\n" * blank + source.rstrip("\n") + "\n"
    else:  # before a definition, which keeps the blank lines it had
        source = source.rstrip("\n") + "\n" * (blank + 1)
    lines.insert(at - 1, source)
    return "".join(lines)


def add_canaries(tree, fail_to_pass, count=CANARIES, rng=None):
    """Plant `count` tests that must fail among the tests of the fail-to-pass files.

    A canary is a copy of one of the file's own tests with one literal of one `assert
    X == Y` (or unittest `self.assertEqual(X, Y)`) changed, so it reads like the tests
    around it; it goes before a random top-level definition of the file (not always at its
    end), or a method's copy before a random method of its class or after its last, and is
    named with words of the file's test names. Code that reports every test passed, or spares the last or
    the odd-named test of a file, reports a canary passed. Code that reads the tests can
    still spare both a canary and its original (a near-copy tells them apart, and the
    original's checked values can be echoed), so canaries stop forgers that do not read
    the tests, not one that does (README: the pass-to-pass bound). Files without such a
    test get a small synthetic canary. Returns their ids (empty when no file fits).
    """
    import ast
    import random as _random

    rng = rng or _random.SystemRandom()
    files = sorted({i.split("::", 1)[0] for i in fail_to_pass
                    if i.split("::", 1)[0].endswith(".py")})
    files = [f for f in files if os.path.isfile(os.path.join(tree, f))
             and not os.path.islink(os.path.join(tree, f))]
    ids = []
    for _ in range(count if files else 0):
        rel = rng.choice(files)
        path = os.path.join(tree, rel)
        with open(path, "rb") as fh:
            raw = fh.read()
        text = raw.decode("utf-8", "surrogateescape")
        try:
            body = parse_source(raw).body
        except (SyntaxError, ValueError):
            body = []
        existing = set(_test_names(text))
        words = sorted({w for n in existing for w in n.split("_")[1:] if w.isidentifier()}) or \
            ["value", "result", "case", "check", "input", "output"]
        planted = {i.split("::", 1)[1] for i in ids if i.split("::", 1)[0] == rel}
        for _attempt in range(50):
            name = "test_" + "_".join(rng.sample(words, min(len(words), rng.choice((1, 2, 2, 3)))))
            if name not in existing | {k.rsplit("::", 1)[-1] for k in planted}:
                break
        else:
            name = "test_" + "_".join(rng.sample(words, 1)) + f"_{rng.randrange(2, 99)}"
        # Never a canary planted before (mutating one can give back its original's literal),
        # and never a fail-to-pass test: its copy would show the literals its checked
        # asserts hold back, all but the one changed. A method's copy goes into its class.
        checked = keys_by_file(fail_to_pass).get(rel, set())
        originals = [(key, n, methods) for key, n, methods in test_functions(body)
                     if isinstance(n, ast.FunctionDef) and key not in planted | checked
                     and not n.decorator_list and n.lineno > 0]
        rng.shuffle(originals)
        source, owner = None, None
        for key, node, methods in originals:
            clone = _mutant(raw, node, rng, methods)
            if clone is not None:
                source = re.sub(rf"^(\s*def\s+){re.escape(node.name)}\b", rf"\g<1>{name}", clone, count=1)
                owner = next((n for n in body if isinstance(n, ast.ClassDef)
                              and n.name == key.rpartition("::")[0]), None)
                break
        if source is None:
            a = rng.randrange(2, 10_000)
            var = rng.choice(("expected", "want", "result", "value", "got"))
            source = f"def {name}():\n    {var} = {a}\n    assert {var} == {a + rng.randrange(1, 1000)}\n"
        with open(path, "wb") as fh:
            fh.write(insert_definition(text, body, source, rng, owner).encode("utf-8", "surrogateescape"))
        ids.append(f"{rel}::{owner.name}::{name}" if owner is not None else f"{rel}::{name}")
    return ids
