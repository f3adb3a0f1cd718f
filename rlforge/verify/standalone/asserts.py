"""Checked asserts: a fail-to-pass test's literals stay with the verifier, its values come out.

Code that the tests import runs in the test process and can make pytest report anything,
so a verdict computed there can be forged. What it cannot forge is a value it does not
know: each top-level `assert <expression> <op> <literal>` of a fail-to-pass test, and each
top-level unittest comparison `self.assertEqual(<expression>, <literal>)` (`UNITTEST_OPS`,
either order) of a `unittest.TestCase` subclass, becomes a call that sends the expression's
value out, the literal stays with the verifier, and the comparison is made here. A
fail-to-pass test passes only when pytest says so *and* every checked assert ran and holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.asserts
    from .plugin import decode_value, parse_source
else:  # tests/rlforge_asserts.py: its siblings by their copied names
    from rlforge_plugin import decode_value, parse_source

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
             "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
             "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b}
BARE_OPS = ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn")  # of `assert a <op> b`
# unittest's assert methods that compare two arguments as an op of CHECK_OPS does
# (`assertIn(a, b)` is `a in b`; the typed equalities add a type check that a plain value
# of another type fails under == as well). assertSequenceEqual and assertCountEqual accept
# values == does not (a tuple for a list, any order): they stay unchecked, as do the
# tolerant ones (assertAlmostEqual) and truthiness (assertTrue).
UNITTEST_OPS = {"assertEqual": "Eq", "assertEquals": "Eq", "assertListEqual": "Eq",
                "assertTupleEqual": "Eq", "assertDictEqual": "Eq", "assertSetEqual": "Eq",
                "assertMultiLineEqual": "Eq", "assertNotEqual": "NotEq", "assertNotEquals": "NotEq",
                "assertLess": "Lt", "assertLessEqual": "LtE", "assertGreater": "Gt",
                "assertGreaterEqual": "GtE", "assertIn": "In", "assertNotIn": "NotIn",
                "assertIs": "Is", "assertIsNot": "IsNot"}
UNITTEST_NONE = {"assertIsNone": "Is", "assertIsNotNone": "IsNot"}  # one argument, against None
SINGLETONS = (None, True, False)  # the only literals `is` compares reliably
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


def literal_value(node):
    """(True, value) of a node that is a literal (`ast.literal_eval`), else (False, None)."""
    import ast

    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _is_testcase(base, classes):
    """Whether a class base is `TestCase`, `unittest.TestCase` or a class of the module that
    is one (`classes`: {name: whether it is one})."""
    import ast

    if isinstance(base, ast.Name):
        return base.id == "TestCase" or classes.get(base.id, False)
    return isinstance(base, ast.Attribute) and base.attr == "TestCase" \
        and isinstance(base.value, ast.Name) and base.value.id == "unittest"


def test_functions(body):
    """(key, FunctionDef, unittest methods) of the test functions of a module body: `name`,
    or `Class::name` in a class pytest collects (named `Test*`, or a `unittest.TestCase`
    subclass whatever its name). The unittest methods are the names of `UNITTEST_OPS` and
    `UNITTEST_NONE` whose asserts are read in it: none unless every base of the class is
    `TestCase`, `unittest.TestCase`, `object` or a class of the module that is so too
    (a base imported from elsewhere could redefine `assertEqual`), and none that the class
    or its bases of this module define."""
    import ast

    known = set(UNITTEST_OPS) | set(UNITTEST_NONE)
    classes, plain, defines = {}, {}, {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield node.name, node, frozenset()
        if not isinstance(node, ast.ClassDef):
            continue
        here = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        here |= {t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        local = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in classes]
        defines[node.name] = here.union(*(defines[b] for b in local))
        plain[node.name] = not node.keywords and all(
            plain[b.id] if isinstance(b, ast.Name) and b.id in classes else
            _is_testcase(b, {}) or (isinstance(b, ast.Name) and b.id == "object") for b in node.bases)
        classes[node.name] = any(_is_testcase(b, classes) for b in node.bases)
        if not (classes[node.name] or node.name.startswith("Test")):
            continue
        methods = frozenset(known - defines[node.name]) if classes[node.name] and plain[node.name] \
            else frozenset()
        for func in node.body:
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name.startswith("test"):
                yield node.name + "::" + func.name, func, methods


def compared(stmt, func, methods=frozenset()):
    """(op, left, right, node) of a top-level statement of test function `func` that
    compares: `assert left <op> right`, or a call `self.<method>(left, right[, msg])` of
    `methods` (see `UNITTEST_OPS`) on the test's own first argument, with `node` the Compare
    or Call; None for anything else."""
    import ast

    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]).__name__ in BARE_OPS:
            return type(test.ops[0]).__name__, test.left, test.comparators[0], test
        return None
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (methods and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in methods and isinstance(call.func.value, ast.Name)
            and func.args.args and call.func.value.id == func.args.args[0].arg):
        return None
    if any(kw.arg != "msg" for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    name, args = call.func.attr, call.args
    if name in UNITTEST_NONE:
        if not 1 <= len(args) <= 2:
            return None
        return UNITTEST_NONE[name], args[0], ast.copy_location(ast.Constant(None), args[0]), call
    if not 2 <= len(args) <= 3:
        return None
    return UNITTEST_OPS[name], args[0], args[1], call


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
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError):
        return source, {}
    lines = source.splitlines(keepends=True)
    edits, plan, index = [], {}, start
    for key, func, methods in test_functions(tree.body):
        if key not in keys or _leaves_early(func):
            continue
        for stmt in func.body:
            found = compared(stmt, func, methods)
            if found is None:
                continue
            op, left, right, node = found
            (lit_l, val_l), (lit_r, val_r) = literal_value(left), literal_value(right)
            if lit_l == lit_r or is_tolerant(node):
                continue
            literal, expr = (val_l, right) if lit_l else (val_r, left)
            if op in ("Is", "IsNot") and not any(literal is v for v in SINGLETONS):
                continue
            # unittest's `assertEqual(6, x)`: plain values compare alike either way round
            literal_left = lit_l and not (isinstance(node, ast.Call) and op in ("Eq", "NotEq"))
            first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]
            if first[:stmt.col_offset].strip() or last[stmt.end_col_offset:].strip()[:1] not in (b"", b"#"):
                continue
            seg = _segment(lines, expr)
            plan[index] = {"test": key, "line": stmt.lineno - func.lineno, "op": op, "literal": repr(literal),
                           "literal_left": literal_left, "trivial": trivially_holds(op, literal, literal_left)}
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


def _segment(lines, node):
    """The source text of a node, from the file's lines (bytes; ast's offsets count bytes):
    `ast.get_source_segment` splits the whole file again on every call, which made a file
    of 300 checks take minutes."""
    if node.lineno == node.end_lineno:
        text = lines[node.lineno - 1][node.col_offset:node.end_col_offset]
    else:
        text = b"".join([lines[node.lineno - 1][node.col_offset:], *lines[node.lineno:node.end_lineno - 1],
                         lines[node.end_lineno - 1][:node.end_col_offset]])
    return text.decode("utf-8", "surrogateescape")


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

    try:
        return {key for key, _, _ in test_functions(parse_source(source).body)}
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
        tree = parse_source(source)
    except (SyntaxError, ValueError, RecursionError):
        text = source.decode("utf-8", "replace")
        return lambda literal: literal.strip("'\"") in text
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)):
            ok, value = literal_value(node)
            if ok:
                out.add(repr(value))
    return out.__contains__
