"""Held-back pass-to-pass checks: copies of visible tests with one input changed.

A pass-to-pass test is one the policy has seen: the literals of its checked asserts are in
the workspace, so code under test that reads its caller's line can send them back, and
its verdict is pytest's, decided in the test process. A variant is a copy of such a test
with one literal of a checked assert's *input* (the expression side, never the expected
literal) changed. The build runs the variants at the parent and with the fix, twice each,
and keeps one only when it passed with the same values in all four runs (behaviour the fix
left alone, which any correct fix keeps), and the changed assert's value is not trivial
(`trivially_holds`) and differs from the original's literal (so echoing it fails). The
values stay with the verifier: in a task the variant is planted among the real tests under
its original's name with one word changed, and each of its checked asserts becomes a call
that sends the value out (`externalize_checks`), compared here with the build's value.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.variants
    from .asserts import is_tolerant, trivially_holds
    from .canaries import insert_definition
    from .plugin import decode_value, parse_source
else:  # tests/rlforge_variants.py: its siblings by their copied names
    from rlforge_asserts import is_tolerant, trivially_holds
    from rlforge_canaries import insert_definition
    from rlforge_plugin import decode_value, parse_source

CANDIDATES = 16  # variants a build runs per commit (one sandboxed session each way)
PER_TEST = 2  # variants a build makes of one test
PER_TASK = 4  # variants a task keeps, chosen by the task's rng
WORDS = ("value", "result", "case", "input", "output", "basic")


def _literal(node):
    import ast

    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _inputs(stmt, raw_lines):
    """(constant, its source text) of the inputs of a top-level `assert <expr> == <literal>`:
    the plain int, float and str literals inside the expression side; [] for any other
    statement."""
    import ast

    test = stmt.test if isinstance(stmt, ast.Assert) else None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return []
    if is_tolerant(test):
        return []
    (lit_l, _), (lit_r, _) = _literal(test.left), _literal(test.comparators[0])
    if lit_l == lit_r:
        return []
    expr = test.comparators[0] if lit_l else test.left
    out = []
    for node in ast.walk(expr):
        if not isinstance(node, ast.Constant) or type(node.value) not in (int, float, str):
            continue
        if node.lineno != node.end_lineno:
            continue
        text = raw_lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode("utf-8", "surrogateescape")
        out.append((node, text))
    return out


def _changed(value, text, rng, seen=frozenset()):
    """(the source of another literal of the same type as `value` (written `text`), whether
    it holds a word in a form `seen` lacks in any letter case), or None when it cannot be
    changed safely (escapes, prefixes, exponents). `seen`: the words of the visible tests,
    lower-cased."""
    if type(value) is int and text.isdigit():
        new = value + rng.choice((-1, 1)) * rng.randrange(1, max(10, value // 2 + 1))
        return str(new if new >= 0 else value + rng.randrange(1, 10)), False
    if type(value) is float and re.fullmatch(r"\d+\.\d*", text):
        return repr(round(value + rng.randrange(1, 10) + 0.5, 6)), False
    if type(value) is str and len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0] \
            and text[-2:-1] != text[0] and "\\" not in text:
        inner = text[1:-1]
        digits = any(c.isdigit() for c in inner)
        words = list(re.finditer(r"[A-Za-z]{2,}", inner))
        if not inner:
            return None
        fresh = False
        if words:
            # another form of one of its words (one no visible test holds, in any case, where
            # there is one), which code keyed on the words the policy saw would not know
            new_words = [m for m in words if any(f.lower() not in seen for f in _forms(m.group()))]
            m = rng.choice(new_words or words)
            form, fresh = _word_form(m.group(), rng, seen)
            inner = inner[:m.start()] + form + inner[m.end():]
        if digits:
            # and another digit, which keeps the text readable and makes its value new (code
            # that takes the new form for the old word gives the old value, which echoing
            # the visible assert's literal would pass)
            i = rng.choice([i for i, c in enumerate(inner) if c.isdigit()])
            inner = inner[:i] + rng.choice([d for d in "0123456789" if d != inner[i]]) + inner[i + 1:]
        elif not words:
            i = rng.randrange(len(inner))
            letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if c != inner[i]]
            inner = inner[:i] + rng.choice(letters) + inner[i + 1:]
        return text[0] + inner + text[-1], fresh
    return None


def _forms(word):
    """Other forms of `word` a reader would take for the same word: its case changed, or a
    final "s" added or taken away."""
    forms = [word.capitalize() if word.islower() else word.lower(), word.upper() if not word.isupper() else word.lower()]
    forms.append(word[:-1] if word.endswith("s") and len(word) > 3 else word + "s")
    return [f for f in dict.fromkeys(forms) if f != word] or [word + "s"]


def _word_form(word, rng, seen=frozenset()):
    """(one of `_forms(word)`, whether its lower case is not in `seen`): forms `seen`
    lacks in any case come first, then forms new only in their case."""
    forms = _forms(word)
    fresh = [f for f in forms if f.lower() not in seen]
    form = rng.choice(fresh or forms)
    return form, bool(fresh)


def _renamed(name, words, taken, rng):
    """`name` with one of its words (after `test`) changed for another of `words`, not in
    `taken`."""
    parts = name.split("_")
    spots = [i for i in range(1, len(parts)) if parts[i]]
    pool = sorted(set(words) - set(parts)) or list(WORDS)
    for _ in range(50):
        if not spots:
            break
        i = rng.choice(spots)
        new = "_".join(parts[:i] + [rng.choice(pool)] + parts[i + 1:])
        if new not in taken and new.isidentifier():
            return new
    for _ in range(50):
        new = f"{name}_{rng.choice(pool)}"
        if new not in taken:
            return new
    return f"{name}_{rng.randrange(100, 10_000)}"


def candidates(files, checked, rng, limit=CANDIDATES, per_test=PER_TEST):
    """Variants a build may keep, at most `limit`, at most `per_test` of one test.

    Args:
        files: {path: bytes} of the test files as the repository has them.
        checked: {test id: lines of its checked asserts (from its `def`) the fix passed
            in every run}: the pass-to-pass tests they come from. Module-level,
            undecorated, unparametrized tests only.
        rng: a `random.Random` (the build's, fixed by the commit).

    Returns:
        [{"file", "test" (its name), "original" (the test it copies), "line" (of the
        changed assert, from the `def`), "source" (the function's text), "expected" (the
        repr of the original assert's literal)}], in a fixed order.
    """
    import ast

    wanted = {}
    for nodeid, lines in sorted(checked.items()):
        rel, _, key = nodeid.partition("::")
        if rel.endswith(".py") and key.isidentifier():
            wanted.setdefault(rel, {})[key] = set(lines)
    out = []
    seen = frozenset(w.decode().lower() for raw in files.values() if isinstance(raw, bytes)
                     for w in re.findall(rb"[A-Za-z]{2,}", raw))
    for rel in sorted(wanted):
        raw = files.get(rel)
        try:
            body = parse_source(raw).body if raw is not None else []
        except (SyntaxError, ValueError, RecursionError):
            continue
        names = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        words = {w for n in names if n.startswith("test") for w in n.split("_")[1:] if w.isidentifier()}
        raw_lines = raw.splitlines(keepends=True)
        for node in body:
            if not isinstance(node, ast.FunctionDef) or node.name not in wanted[rel] or node.decorator_list:
                continue
            sites = [(stmt, const, text) for stmt in node.body
                     if stmt.lineno - node.lineno in wanted[rel][node.name]
                     for const, text in _inputs(stmt, raw_lines)]
            rng.shuffle(sites)
            made = 0
            for stmt, const, text in sites:
                changed = _changed(const.value, text, rng, seen)
                if changed is None or made >= per_test:
                    continue
                new, fresh = changed
                name = _renamed(node.name, words, names, rng)
                names.add(name)
                lines = raw_lines[node.lineno - 1:node.end_lineno]
                at = const.lineno - node.lineno
                line = lines[at]
                lines[at] = line[:const.col_offset] + new.encode("utf-8") + line[const.end_col_offset:]
                source = b"".join(lines).decode("utf-8", "surrogateescape")
                source = re.sub(rf"^(\s*def\s+){re.escape(node.name)}\b", rf"\g<1>{name}", source, count=1)
                test = stmt.test
                expected = test.left if _literal(test.left)[0] else test.comparators[0]
                out.append({"file": rel, "test": name, "original": node.name,
                            "line": stmt.lineno - node.lineno, "source": source,
                            "expected": repr(_literal(expected)[1]), "fresh_word": fresh})
                made += 1
    rng.shuffle(out)
    fresh = [v for v in out if v["fresh_word"]]  # up to half the places for copies with a new word
    out = fresh[:limit // 2] + [v for v in out if not v["fresh_word"]] + fresh[limit // 2:]
    return sorted(out[:limit], key=lambda v: (v["file"], v["test"]))


def appended(files, variants):
    """{path: bytes} of the files of `variants` with each variant's source appended (how a
    build runs them: every name is already unique in its file)."""
    out = {}
    for v in variants:
        text = out.get(v["file"], files[v["file"]])
        text = text if text.endswith(b"\n") or not text else text + b"\n"
        out[v["file"]] = text + b"\n\n" + v["source"].rstrip("\n").encode("utf-8", "surrogateescape") + b"\n"
    return out


def _held(encoded):
    """(True, value) when an encoded value reads back and its repr is a literal giving it
    back (what a reference can hold), else (False, None)."""
    import ast

    try:
        value = decode_value(encoded)
        back = ast.literal_eval(repr(value))
    except Exception:
        return False, None
    return (type(back) is type(value) and back == value), value


def kept(variants, plan, runs):
    """The variants whose every checked assert sent the same readable value in every one
    of `runs` (the build's runs at the parent and with the fix) and passed, whose changed
    assert's value is not trivial and differs from its original's literal; each with its
    values, {"checks": {line: repr}} (and without "expected", which the task never needs).

    Args:
        variants: as `candidates` made them.
        plan: the `externalize_checks` plan of the runs' files, each item with its "file".
        runs: the raw results of `run_tests` (outcomes, checks).
    """
    import ast

    out = []
    for v in variants:
        nodeid = f"{v['file']}::{v['test']}"
        items = {i: item for i, item in plan.items() if item["file"] == v["file"] and item["test"] == v["test"]}
        if not runs or v["line"] not in {item["line"] for item in items.values()}:
            continue
        values, ok = {}, True
        for index, item in items.items():
            seen = []
            for run in runs:
                got = {int(k): e for k, e in run.get("checks", {}).get(nodeid, {}).items()}
                readable, value = _held(got[index]) if index in got else (False, None)
                if run["outcomes"].get(nodeid) != "passed" or not readable:
                    ok = False
                    break
                seen.append(value)
            if not ok or any(type(s) is not type(seen[0]) or s != seen[0] for s in seen[1:]):
                ok = False
                break
            values[item["line"]] = seen[0]
        if not ok:
            continue
        value = values[v["line"]]
        if trivially_holds("Eq", value) or value == ast.literal_eval(v["expected"]):
            continue
        out.append({**{k: x for k, x in v.items() if k != "expected"},
                    "checks": {str(line): repr(x) for line, x in sorted(values.items())}})
    return out


def chosen(variants, rng, count=PER_TASK):
    """At most `count` of the kept `variants`, spread over the tests they copy: one of each
    original in turn, in an order `rng` decides, copies that hold a word in a form no
    visible test has (`fresh_word`) before the others."""
    groups = {}
    for v in variants:
        groups.setdefault((v["file"], v["original"]), []).append(v)
    order = sorted(groups)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(groups[key])
        groups[key].sort(key=lambda v: bool(v.get("fresh_word")))  # popped from the end
    order.sort(key=lambda k: not groups[k][-1].get("fresh_word"))
    out = []
    while len(out) < count and any(groups[k] for k in order):
        for key in order:
            if groups[key] and len(out) < count:
                out.append(groups[key].pop())
    return sorted(out, key=lambda v: (v["file"], v["test"]))


def plant(tree, variants, rng):
    """Plant `variants` (a task's reference's) among the tests of their files, each before
    a random top-level definition or at the end, as canaries are; a name a canary took
    gets a number. Returns {test id: variant} of those planted."""
    import ast

    planted = {}
    for v in variants:
        path = os.path.join(tree, v["file"])
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as fh:
            raw = fh.read()
        try:
            body = parse_source(raw).body
        except (SyntaxError, ValueError, RecursionError):
            continue  # the file does not load: `collects` fails the attempt anyway
        text = raw.decode("utf-8", "surrogateescape")
        taken = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        name = v["test"]
        while name in taken:
            name = f"{v['test']}_{rng.randrange(2, 99)}"
        source = re.sub(rf"^(\s*def\s+){re.escape(v['test'])}\b", rf"\g<1>{name}", v["source"], count=1)
        with open(path, "wb") as fh:
            fh.write(insert_definition(text, body, source, rng).encode("utf-8", "surrogateescape"))
        planted[f"{v['file']}::{name}"] = {**v, "test": name}
    return planted


def held_back(item, variant):
    """A plan item of a planted variant's checked assert, compared with the value the
    build measured (an `==` whose literal stays here); None when the build had none."""
    literal = variant["checks"].get(str(item["line"]))
    if literal is None:
        return None
    return {**item, "op": "Eq", "literal": literal, "literal_left": False, "trivial": False}
