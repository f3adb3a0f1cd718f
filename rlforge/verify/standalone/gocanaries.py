"""Canary tests planted among a Go package's real tests: each must fail, or the results cannot be trusted.

A red team told the old canaries from the real tests by their failure message (one fixed
shape, `n = 4821, want 5177`), so code in the test process could forge every failure but
theirs. A canary is now a copy of one of the file's own passing tests, the task's
fail-to-pass tests first, with one literal of one check changed: a check is a top-level
`if X != LIT {` (or `if got, want := X, LIT; got != want {`) whose block starts with
`t.Error`, `t.Errorf`, `t.Fatal` or `t.Fatalf`, or a literal row of a table the test
checks in a `for _, tc := range` loop (`if X != tc.want {`). The original passes, so X is
LIT there, and the copy's check fails; the literal is changed in the block's message too
(a table's check prints the row's field itself), so the
copy fails with its original's message shape, after its original's work (the same time),
in the same file and package, named like the file's tests (a word of a real test's name
changed or added). Only when no test of the file has such a check does a small synthetic
canary stand in, with a message format taken from the file where one fits.

What code running inside the test binary can still observe (see `plant_canaries`):
a canary's name is in no file of the starting workspace (as for every new fail-to-pass
test); a copy's code is its original's with one constant changed, so code that reads its
own binary can pair the two (but not tell which is which, unless the original is a
pass-to-pass test, whose source the policy saw); a copy fails at a check its original
passes, so on a submission that fails some checks and passes others, the copy's output is
its original's plus one line; a synthetic canary (no check to copy) is short and quick.
"""

from __future__ import annotations

import os
import random
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.gocanaries
    from .gosource import (closing_brace, code_only, declaration_starts, literal_end,
                           literal_spans, outside_closures, split_top, test_functions)
    from .gotest import TEST_FUNC, package_of
    from .policy_code import regular_file
else:  # tests/rlforge_gocanaries.py
    from rlforge_gosource import (closing_brace, code_only, declaration_starts, literal_end,
                                  literal_spans, outside_closures, split_top, test_functions)
    from rlforge_gotest import TEST_FUNC, package_of
    from rlforge_policy_code import regular_file

CANARIES = 3
IMPORTS_TESTING = re.compile(rb'^\s*(import\s+)?"testing"\s*$', re.M)
LITERAL = re.compile(r'-?(?:[0-9]+\.[0-9]+|0|[1-9][0-9]*)|"[^"\\\n]*"')
# the largest value of each integer type, smallest first: a changed constant stays within
# the smallest that held its original, so it never overflows the type it is compared with
INT_BOUNDS = (127, 255, 32767, 65535, 2**31 - 1, 2**32 - 1, 2**63 - 1)
SYNTHETIC = """func {name}(t *testing.T) {{
\t{var} := {value}
\tif {var} != {other} {{
\t\tt.{call}({message}, {var}, {other})
\t}}
}}

"""


def _checked_literal(header):
    """The span (within `header`, an `if ... {` line without its indent) of the literal a
    check compares with: `if X != LIT {`, `if LIT != X {`, `if a, b := X, LIT; a != b {`;
    None for any other condition."""
    if not header.startswith("if ") or not header.rstrip().endswith("{"):
        return None
    body = header.rstrip()[3:-1]
    clauses = split_top(body, ";")
    if len(clauses) > 2:
        return None
    cond = clauses[-1]
    sides = split_top(cond, "!=")
    if "&&" in cond or "||" in cond or len(sides) != 2:
        return None
    at = 3 + (len(clauses[0]) + 1 if len(clauses) == 2 else 0)
    offsets = [at, at + len(sides[0]) + 2]
    for side, offset in zip(sides, offsets):
        if LITERAL.fullmatch(side.strip()):
            offset += len(side) - len(side.lstrip())
            return offset, offset + len(side.strip())
    if len(clauses) != 2 or ":=" not in clauses[0]:
        return None
    names, _, values = clauses[0].partition(":=")
    names, values = [n.strip() for n in names.split(",")], split_top(values, ",")
    for k, side in enumerate(s.strip() for s in sides):
        if side in names and len(names) == len(values) and \
                not re.search(rf"\b{re.escape(side)}\b", sides[1 - k]):
            i = names.index(side)
            value = values[i]
            if LITERAL.fullmatch(value.strip()):
                offset = 3 + clauses[0].index(":=") + 2 + sum(len(v) + 1 for v in values[:i])
                offset += len(value) - len(value.lstrip())
                return offset, offset + len(value.strip())
    return None


def checks(source, tvar):
    """The checks of a test function's source (`func ... {` to its closing brace) a copy
    can be made to fail at: [(offset of the literal, its end, offset of the closing brace
    of the check's block)]. A check counts only when nothing before it can return or
    skip, so the copy reaches it wherever the original passes."""
    if re.search(r"\.Skip(Now|f)?\(", source):
        return []
    out = []
    stop = re.search(r"\breturn\b|\bgoto\b|os\.Exit|runtime\.Goexit", outside_closures(source))
    stop_at = stop.start() if stop else len(source)
    call = re.compile(rf"{re.escape(tvar)}\.(Error|Errorf|Fatal|Fatalf)\(")
    depth, i, line_start = 0, 0, True
    while i < len(source):
        end = literal_end(source, i) if source[i] in "/`\"'" else i
        if end > i:
            i = end
            continue
        if line_start and depth == 1 and source.startswith("if ", i) and source[i - 1] in "\t ":
            line_end = source.find("\n", i)
            header = source[i:line_end]
            span = _checked_literal(header)
            brace = i + len(header.rstrip()) - 1
            closing = closing_brace(source, brace) if span else None
            if span and closing and i < stop_at:
                block = source[line_end + 1:closing]
                first = next((ln.strip() for ln in block.splitlines() if ln.strip()), "")
                after = source[closing + 1:source.find("\n", closing) if "\n" in source[closing:] else None]
                if call.match(first) and not after.strip():
                    out.append((i + span[0], i + span[1], closing))
        if source[i] == "\n":
            line_start = True
        elif source[i] not in "\t ":
            line_start = False
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        i += 1
    if "Parallel" not in source:  # parallel subtests share the loop variable (Go 1.21 and older)
        out += _table_checks(source, tvar, stop_at)
    return out


def _fields(code):
    """The field names of a struct type's body, in order; None when a field is embedded."""
    names = []
    for decl in re.split(r"[;\n]", code):
        if not decl.strip():
            continue
        m = re.fullmatch(r"\s*(\w+(?:\s*,\s*\w+)*)\s+\S.*", decl)
        if not m:
            return None
        names += [n.strip() for n in m.group(1).split(",")]
    return names


def _table_checks(source, tvar, stop_at):
    """Checks of table-driven tests: `for _, tc := range cases {` (top level, over a slice
    of an anonymous struct written as a literal just before), whose body (or a
    `t.Run(..., func(t *testing.T) {` directly in it) checks `if X != tc.field {` with a
    t.Error/t.Fatal block, and nothing before that check leaves the iteration or reads
    `tc.field` or `tc` whole. Each row whose field is a literal is a site: (its offsets,
    None)."""
    code = code_only(source, literal_spans(source))
    out = []
    for loop in re.finditer(r"^\tfor _, (\w+) := range (\w+) \{\n", code, re.M):
        var, table = loop.group(1), loop.group(2)
        if loop.start() >= stop_at:
            break
        defined = list(re.finditer(rf"^\t{table} := \[\]struct\s*\{{", code[:loop.start()], re.M))
        if not defined:
            continue
        struct_open = defined[-1].end() - 1
        struct_close = closing_brace(code, struct_open)
        if struct_close is None or code[struct_close + 1] != "{":
            continue
        rows_close = closing_brace(code, struct_close + 1)
        fields = _fields(code[struct_open + 1:struct_close])
        if rows_close is None or not fields or re.search(rf"\b{table}\b", code[rows_close:loop.start()]):
            continue
        body_close = closing_brace(code, loop.end() - 2)
        if body_close is None:
            continue
        body = code[loop.end():body_close]
        run = re.match(rf"\t\t{re.escape(tvar)}\.Run\([^\n]*func\((\w+) \*testing\.T\) \{{\n", body)
        inner, indent = (run.group(1), "\t\t\t") if run else (tvar, "\t\t")
        for check in re.finditer(rf"^{indent}if ([^\n]*) \{{\n", body, re.M):
            before = body[:check.start()]
            if re.search(r"\b(continue|break|return|goto)\b|Skip|os\.Exit|Goexit", before):
                break
            sides = split_top(split_top(check.group(1), ";")[-1], "!=")
            if len(sides) != 2 or "&&" in check.group(1) or "||" in check.group(1):
                continue
            sides = [x.strip() for x in sides]
            field = next((x[len(var) + 1:] for x in sides if re.fullmatch(rf"{var}\.\w+", x)), None)
            if field not in fields:
                continue
            uses = re.findall(rf"\b{var}\b(?:\.(\w+))?", before + check.group(1).replace(f"{var}.{field}", "", 1))
            if any(u in ("", field) for u in uses):
                continue
            block_open = loop.end() + check.end() - 2
            block_close = closing_brace(code, block_open)
            first = code[block_open + 1:block_close].strip().split("\n", 1)[0] if block_close else ""
            tail = code[block_close + 1:code.find("\n", block_close)] if block_close else "x"
            if not re.match(rf"{re.escape(inner)}\.(Error|Errorf|Fatal|Fatalf)\(", first) or tail.strip():
                continue
            out += _rows(source, code, struct_close + 1, rows_close, fields.index(field), field)
            break
    return out


def _rows(source, code, start, end, index, field):
    """(start, end, None) of the literal that holds `field` (positional `index`) in each row
    of the composite literal between the braces at start and end."""
    out = []
    offset = start + 1
    for row in split_top(code[start + 1:end], ","):
        at = offset + len(row) - len(row.lstrip())
        offset += len(row) + 1
        if not row.strip().startswith("{"):
            continue
        cells, cell_at = split_top(row.strip()[1:-1], ","), at + 1
        for k, cell in enumerate(cells):
            key, colon, value = cell.partition(":")
            keyed = colon and re.fullmatch(r"\s*\w+\s*", key)
            if (keyed and key.strip() == field) or (not any(":" in c for c in cells) and k == index):
                value_at = cell_at + (len(key) + 1 if keyed else 0)
                value = source[value_at:cell_at + len(cell)]
                if LITERAL.fullmatch(value.strip()):
                    lead = len(value) - len(value.lstrip())
                    out.append((value_at + lead, value_at + lead + len(value.strip()), None))
            cell_at += len(cell) + 1
    return out


def _int_changed(value, rng):
    bound = next(b for b in INT_BOUNDS if abs(value) <= b)
    low, high = (0, bound) if value >= 0 else (-bound - 1, 0)
    step = rng.randrange(1, max(10, abs(value)))
    new = value + rng.choice((-1, 1)) * step
    if not low <= new <= high:
        new = value - step if low <= value - step <= high else value + step
    if not low <= new <= high or new == value:
        new = value + 1 if value < high else value - 1
    return str(new)


def changed_literal(old, rng):
    """Another Go literal of `old`'s kind (int, float, interpreted string), on either side
    of it: larger or smaller, longer or shorter."""
    if old.startswith('"'):
        inner, letters = old[1:-1], "abcdefghijklmnopqrstuvwxyz"
        if inner and rng.random() < 0.5:
            i = rng.randrange(len(inner))
            inner = inner[:i] + inner[i + 1:] if rng.random() < 0.5 else \
                inner[:i] + rng.choice([c for c in letters if c != inner[i]]) + inner[i + 1:]
        else:
            inner += "".join(rng.choice(letters) for _ in range(rng.randrange(1, 4)))
        return '"' + inner + '"'
    if "." in old:
        value = float(old)
        new = round(value + rng.choice((-1, 1)) * rng.randrange(1, 10) + 0.5, 6)
        new = new if new >= 0 or value < 0 else value + 1.5
        text = f"{new:.6f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return _int_changed(int(old), rng)


def mutant(source, check, rng):
    """`source` with the literal of `check` changed, in its condition and in its block."""
    start, end, closing = check
    old = source[start:end]
    new = changed_literal(old, rng)
    if closing is None:  # a row of a table: its check prints the field
        return source[:start] + new + source[end:]
    block_start = source.find("\n", end) + 1
    block = source[block_start:closing]
    spans = literal_spans(block)
    if old.startswith('"'):
        inner, new_inner = old[1:-1], new[1:-1]
        pieces, last = [], 0
        for a, b in spans:
            if block[a] != '"':
                continue
            text = block[a:b]
            if text == old:
                text = new
            elif len(inner) >= 3 and "%" not in inner:
                text = text.replace(inner, new_inner)
            pieces.append(block[last:a] + text)
            last = b
        block = "".join(pieces) + block[last:]
    else:
        block = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w.])", new, block)
    return source[:start] + new + source[end:block_start] + block + source[closing:]


def _name_words(name):
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+|_", name[4:])


def canary_name(template, names, taken, rng):
    """A new test name made from `template` (a real test's name) by changing or adding one
    word, taken from the words of `names` (the file's test names)."""
    vocabulary = sorted({w for n in names for w in _name_words(n) if w != "_"}) or \
        ["Value", "Result", "Case", "Parse", "Input", "Output"]
    words = _name_words(template) or [rng.choice(vocabulary)]
    for _attempt in range(50):
        parts = list(words)
        spots = [k for k, w in enumerate(parts) if w != "_"]
        word = rng.choice([w for w in vocabulary if w.lower() not in {p.lower() for p in parts}]
                          or vocabulary)
        if spots and rng.random() < 0.5:
            k = rng.choice(spots)
            parts[k] = word if parts[k][:1].isupper() else word.lower()
        else:
            k = rng.randrange(len(parts) + 1)
            lower = k > 0 and parts[k - 1] == "_" and len(parts) > k and parts[k][:1].islower()
            parts.insert(k, word.lower() if lower else word)
        name = "Test" + "".join(parts)
        if name not in taken and re.fullmatch(r"Test\w+", name) and "__" not in name:
            return name
    return f"Test{''.join(words)}{rng.randrange(2, 99)}"


def _synthetic(text, name, rng):
    """A small failing test whose message is one of the file's own formats (two `%v` or `%d`
    verbs, or one) where it has one."""
    formats = [m.group(2) for m in re.finditer(r'\.(Errorf|Fatalf)\(("(?:[^"\\\n]|\\.)*")', text)
               if 1 <= len(re.findall(r"%", m.group(2))) == len(re.findall(r"%[vd]", m.group(2))) <= 2]
    value = rng.randrange(2, 10_000)
    var = rng.choice(("got", "want", "n", "size", "count"))
    message, call = f'"{var} = %v, want %v"', "Fatalf"
    if formats:
        message, call = rng.choice(formats), rng.choice(("Errorf", "Fatalf"))
    other = value + rng.randrange(1, 1000)
    source = SYNTHETIC.format(name=name, var=var, value=value, other=other, call=call, message=message)
    if message.count("%") == 1:
        source = source.replace(f", {var}, {other})", f", {var})")
    return source


def _files(tree, fail_to_pass):
    out = []
    for rel in sorted({i.split("::", 1)[0] for i in fail_to_pass}):
        path = os.path.join(tree, rel)
        if rel.endswith("_test.go") and regular_file(path):
            with open(path, "rb") as fh:
                if IMPORTS_TESTING.search(fh.read()):
                    out.append(rel)
    return out


def plant_canaries(tree, fail_to_pass, pass_to_pass=(), count=CANARIES, rng=None):
    """Plant `count` failing tests among the tests of the fail-to-pass test files (those that
    import "testing" by that name); their ids (empty when no file fits).

    Each is a copy of a passing test of its file (one of `fail_to_pass`, else one of
    `pass_to_pass`, as top-level ids) with one check changed (`checks`, `mutant`), or a
    synthetic test when the file has none; it goes before a random top-level function of
    its file (or at its end), named with `canary_name`."""
    rng = rng or random.SystemRandom()
    files = _files(tree, fail_to_pass)
    taken = set()
    for rel in files:
        pkg = os.path.join(tree, package_of(rel + "::"))
        for name in os.listdir(pkg):
            if name.endswith(".go") and regular_file(os.path.join(pkg, name)):
                with open(os.path.join(pkg, name), "rb") as fh:
                    taken.update(m.decode() for m in re.findall(rb"^func\s+(\w+)", fh.read(), re.M))
    ids = []
    for _ in range(count if files else 0):
        rel = rng.choice(files)
        path = os.path.join(tree, rel)
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "surrogateescape")
        functions = test_functions(text)
        names = [m.decode() for m in TEST_FUNC.findall(text.encode("utf-8", "surrogateescape"))]
        planted = {i.split("::", 1)[1] for i in ids if i.split("::", 1)[0] == rel}
        source = None
        for passing in (fail_to_pass, pass_to_pass):
            originals = sorted(n for n in functions if f"{rel}::{n}" in set(passing) and n not in planted)
            rng.shuffle(originals)
            for original in originals:
                start, end, tvar = functions[original]
                found = checks(text[start:end], tvar)
                if found:
                    name = canary_name(original, names, taken, rng)
                    clone = mutant(text[start:end], rng.choice(found), rng)
                    source = re.sub(rf"^func\s+{original}\b", f"func {name}", clone, count=1) + "\n\n"
                    break
            if source is not None:
                break
        if source is None:
            name = canary_name(rng.choice(names) if names else "Test", names, taken, rng)
            source = _synthetic(text, name, rng)
        taken.add(name)
        starts = declaration_starts(text)
        at = rng.choice(starts + [len(text)])
        if at == len(text):
            source = ("\n" if text.endswith("\n") else "\n\n") + source.rstrip("\n") + "\n"
        text = text[:at] + source + text[at:]
        with open(path, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogateescape"))
        ids.append(f"{rel}::{name}")
    return ids
