"""Checked asserts: a fail-to-pass test's literals stay with the verifier, its values come out.

Code that the tests import runs in the test process and can make pytest report anything,
so a verdict computed there can be forged. What it cannot forge is a value it does not
know: each top-level `assert <expression> <op> <literal>` of a fail-to-pass test becomes a
call that sends the expression's value out, the literal stays with the verifier, and the
comparison is made here. A fail-to-pass test passes only when pytest says so *and* every
checked assert ran and holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.asserts
    from .plugin import decode_value
else:  # tests/rlforge_asserts.py: its siblings by their copied names
    from rlforge_plugin import decode_value

TOLERANT = ("approx", "ANY", "isclose", "allclose")  # equal to values near or other than theirs


def keys_by_file(ids):
    """{file: {test key without parameters}} of pytest ids (`file::Class::name[param]`)."""
    out = {}
    for i in ids:
        rel, _, rest = i.partition("::")
        if rest:
            out.setdefault(rel, set()).add(rest.split("[", 1)[0])
    return out


def is_tolerant(test):
    """Whether an assert names something equal to values other than its own (approx, ANY)."""
    import ast

    return any(getattr(n, "attr", None) in TOLERANT or getattr(n, "id", None) in TOLERANT
               for n in ast.walk(test))


CHECK_OPS = {"Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b,
             "Lt": lambda a, b: a < b, "LtE": lambda a, b: a <= b,
             "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
             "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}
# Values a policy could send without knowing the expected one: a check that one of them
# passes (`== 0`, `in [None, 3]`, `in "0123"`, which "" passes) is not counted as checked.
TRIVIAL: tuple[object, ...] = (None, True, False, 0, 1, -1, 0.0, 1.0, "", b"", (), [], {}, set())


def trivially_holds(op, literal, literal_left=False):
    """Whether a check `<value> <op> <literal>` can be passed without knowing the literal:
    any op but == and `in` (!= holds for NaN, < and > for infinities, `not in` for an empty
    value), `<literal> in value` (a value listing every candidate holds it), or a value of
    `TRIVIAL` that passes it: for `in` a string or bytes literal always (the empty one is
    in each), a container holding one of them."""
    if op not in ("Eq", "In") or literal_left:
        return True
    if op == "Eq":
        return any(type(literal) is type(t) and literal == t for t in TRIVIAL)
    if isinstance(literal, (str, bytes)):
        return True
    for t in TRIVIAL:
        try:
            if t in literal:
                return True
        except TypeError:  # an unhashable probe in a set or dict cannot be in it
            continue
    return False


def _literal(node):
    import ast

    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _test_functions(body, prefix=""):
    """(key, FunctionDef) of the test functions of a module body: `name` or `Class::name`."""
    import ast

    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef) and not prefix and node.name.startswith("Test"):
            yield from _test_functions(node.body, node.name + "::")


def _leaves_early(func):
    """Whether a function can return or yield before its last statement (or is async)."""
    import ast

    if isinstance(func, ast.AsyncFunctionDef):
        return True
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def externalize_checks(source, keys, name, start=0, keep_assert=False):
    """Rewrite the top-level literal asserts of the test functions named in `keys` (see above).

    Returns (new source bytes, plan {index: {"test", "line" (counted from the test's
    `def`, so canaries planted between tests move nothing), "op", "literal",
    "literal_left", "trivial"}}), indexes from `start`; (source, {}) when nothing could be
    rewritten. Line numbers are kept; an assert sharing a line with other code is left as
    it is. `keep_assert` (True, or the keys it holds for): the assert stays, with only its
    expression wrapped in the call, so the test runs exactly as written and the value is
    reported too (a build's runs, where nothing is hidden, and pass-to-pass tests, whose
    literals the policy has seen).
    """
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return source, {}
    lines = source.splitlines(keepends=True)
    edits, plan, index = [], {}, start
    for key, func in _test_functions(tree.body):
        if key not in keys or _leaves_early(func):
            continue
        for stmt in func.body:
            test = stmt.test if isinstance(stmt, ast.Assert) else None
            if not isinstance(test, ast.Compare) or len(test.ops) != 1:
                continue
            op = type(test.ops[0]).__name__
            left, right = test.left, test.comparators[0]
            (lit_l, val_l), (lit_r, val_r) = _literal(left), _literal(right)
            if op not in CHECK_OPS or lit_l == lit_r:
                continue
            if is_tolerant(test):
                continue
            expr = right if lit_l else left
            first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]
            if first[:stmt.col_offset].strip() or last[stmt.end_col_offset:].strip()[:1] not in (b"", b"#"):
                continue
            seg = ast.get_source_segment(source.decode("utf-8", "surrogateescape"), expr)
            if seg is None:
                continue
            literal = val_l if lit_l else val_r
            plan[index] = {"test": key, "line": stmt.lineno - func.lineno, "op": op, "literal": repr(literal),
                           "literal_left": lit_l, "trivial": trivially_holds(op, literal, lit_l)}
            call = f"{name}({index}, ({seg}))".encode("utf-8", "surrogateescape")
            kept = keep_assert if isinstance(keep_assert, bool) else key in keep_assert
            edits.append((expr if kept else stmt, call))
            index += 1
    for node, call in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        gap = (node.end_lineno - node.lineno) - call.count(b"\n")
        call += b"\n" * max(gap, 0)
        head = lines[node.lineno - 1][:node.col_offset]  # (ast's offsets count bytes)
        tail = lines[node.end_lineno - 1][node.end_col_offset:]
        lines[node.lineno - 1:node.end_lineno] = [head + call + tail]
    return b"".join(lines), plan


def apply_checks(outcomes, sent, plan):
    """Outcomes with every reported pass that a failed, missing or unreadable checked assert
    contradicts turned into `failed`; and {id: why} for each one turned."""

    by_test = {}
    for index, item in plan.items():
        by_test.setdefault(item["file"] + "::" + item["test"], []).append((index, item))
    out, why = dict(outcomes), {}
    for nodeid, outcome in outcomes.items():
        wanted = [(i, item) for i, item in by_test.get(nodeid.split("[", 1)[0], [])
                  if "only" not in item or nodeid in item["only"]]
        if outcome != "passed" or not wanted:
            continue
        got = sent.get(nodeid, {})
        for index, item in wanted:
            if index not in got:
                why[nodeid] = "a checked assert did not run"
                break
            if not check_holds(item, got[index]):
                why[nodeid] = "a checked assert does not hold"
                break
        if nodeid in why:
            out[nodeid] = "failed"
    return out, why


def check_holds(item, encoded):
    """Whether the value a checked assert sent (encoded) passes it; False for anything
    that cannot be read or compared (the value is the policy's: anything may go wrong)."""
    import ast

    try:
        value = decode_value(encoded)
        literal = ast.literal_eval(item["literal"])
        a, b = (literal, value) if item["literal_left"] else (value, literal)
        return bool(CHECK_OPS[item["op"]](a, b))
    except Exception:
        return False


def test_keys(source):
    """The keys (`name`, `Class::name`) of a test file's test functions."""
    import ast

    try:
        return {key for key, _ in _test_functions(ast.parse(source).body)}
    except (SyntaxError, ValueError, RecursionError):
        return set()


def checked_fail_to_pass(hidden, fail_to_pass, workspace=None, held_at_parent=None):
    """The fail-to-pass ids whose verdict code under test cannot forge (what a build keeps):
    tests of the hidden files with a checked assert that discriminates: an `==` or `in`
    that no trivial value passes (`trivially_holds`), whose literal appears nowhere in the
    policy's own copy of that file (`workspace`: {path: bytes} of the starting workspace),
    so the policy has not seen it, and which the parent's code did not already pass
    (`held_at_parent`: {test id: [lines of the checks that held in the build's run at the
    parent]}), so only the fix can pass it."""
    held = held_at_parent or {}
    keep = []
    for rel, keys in keys_by_file(fail_to_pass).items():
        if rel in hidden and rel.endswith(".py"):
            _, plan = externalize_checks(hidden[rel], keys, "_check")
            seen = _literals_in((workspace or {}).get(rel, b""))
            lines = {}
            for item in plan.values():
                if not item["trivial"] and not seen(item["literal"]):
                    lines.setdefault(rel + "::" + item["test"], set()).add(item["line"])
            keep += [i for i in fail_to_pass if i.split("[", 1)[0] in lines
                     and lines[i.split("[", 1)[0]] - set(held.get(i, ()))]
    return [i for i in fail_to_pass if i in set(keep)]


def held_lines(plan, checks, ids):
    """{test id: [lines]}: of the checked asserts a build's run reported (`checks`, as
    `run_tests` returns them, for the plan of `externalize_checks`), those whose value
    passed them, for each of `ids`."""
    out = {}
    for nodeid in ids:
        lines = sorted({plan[int(index)]["line"] for index, value in checks.get(nodeid, {}).items()
                        if int(index) in plan and check_holds(plan[int(index)], value)})
        if lines:
            out[nodeid] = lines
    return out


def _literals_in(source):
    """A test whether a literal (its repr) is written in a Python source: among its
    constants and literal lists, tuples, sets and dicts; when the source does not parse,
    whether its text appears anywhere in it."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        text = source.decode("utf-8", "replace")
        return lambda literal: literal.strip("'\"") in text
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)):
            ok, value = _literal(node)
            if ok:
                out.add(repr(value))
    return out.__contains__
