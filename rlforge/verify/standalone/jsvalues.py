"""JavaScript values as tagged JSON: literals read from source, compared as JavaScript does.

A checked assert's value leaves the test process encoded as a small tagged list (the
helper `jsasserts` appends to the test file writes it): `["u"]` undefined, `["N"]` null,
`["b", bool]`, `["n", text]` a number as `String(x)` gives it (`"-0"`, `"NaN"`,
`"Infinity"` too), `["g", digits]` a BigInt, `["s", text]`, `["a", [items]]` an array,
`["o", [[key, value], ...]]` a plain object, `["?", type]` anything else. The expected
value is the literal of the assert, read here from the test's source into the same
form (`parse_literal`); `matches` compares the two with the rule of the assertion.
"""

from __future__ import annotations

import math
import re

#: values a policy could send without knowing the expected one (issue 33's rule)
TRIVIAL = (["u"], ["N"], ["b", True], ["b", False], ["n", "0"], ["n", "1"], ["n", "-1"],
           ["n", "NaN"], ["s", ""], ["a", []], ["o", []])

class _NotLiteral(Exception):
    pass


_NUMBER = re.compile(r"(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)(n?)")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _num_text(value):
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    return repr(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)


class _Literal:
    """A recursive-descent reader of one JavaScript literal expression."""

    def __init__(self, text):
        self.text, self.i = text, 0

    def ws(self):
        while True:
            m = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.S).match(self.text, self.i)
            if not m or not m.group():
                return
            self.i = m.end()

    def value(self, depth=0):
        if depth > 40:
            raise _NotLiteral
        self.ws()
        t, i = self.text, self.i
        if i >= len(t):
            raise _NotLiteral
        c = t[i]
        if c in "'\"`":
            return ["s", self.string()]
        if c == "[":
            self.i += 1
            items = []
            while True:
                self.ws()
                if self.text.startswith("]", self.i):
                    self.i += 1
                    return ["a", items]
                items.append(self.value(depth + 1))
                self.ws()
                if self.text.startswith(",", self.i):
                    self.i += 1
                elif not self.text.startswith("]", self.i):
                    raise _NotLiteral
        if c == "{":
            self.i += 1
            pairs, keys = [], set()
            while True:
                self.ws()
                if self.text.startswith("}", self.i):
                    self.i += 1
                    return ["o", pairs]
                key = self.key()
                self.ws()
                if not self.text.startswith(":", self.i) or key in keys:
                    raise _NotLiteral
                self.i += 1
                keys.add(key)
                pairs.append([key, self.value(depth + 1)])
                self.ws()
                if self.text.startswith(",", self.i):
                    self.i += 1
                elif not self.text.startswith("}", self.i):
                    raise _NotLiteral
        if c in "+-":
            self.i += 1
            inner = self.value(depth + 1)
            if inner[0] != "n":
                raise _NotLiteral
            if c == "+":
                return inner
            return ["n", _num_text(-_to_float(inner[1]))]
        m = _IDENT.match(t, i)
        if m:
            self.i = m.end()
            word = m.group()
            found = {"true": ["b", True], "false": ["b", False], "null": ["N"], "undefined": ["u"],
                     "NaN": ["n", "NaN"], "Infinity": ["n", "Infinity"]}.get(word)
            if found is None:
                raise _NotLiteral
            return found
        m = _NUMBER.match(t, i)
        if m and m.group(1):
            self.i = m.end()
            digits = m.group(1).replace("_", "")
            if m.group(2):
                return ["g", str(int(digits, 0))]
            if digits[:2].lower() in ("0x", "0o", "0b"):
                return ["n", _num_text(float(int(digits, 0)))]
            if re.fullmatch(r"0\d+", digits):  # a legacy octal or a leading zero: unclear
                raise _NotLiteral
            return ["n", _num_text(float(digits))]
        raise _NotLiteral

    def key(self):
        t = self.text
        if self.i < len(t) and t[self.i] in "'\"":
            return self.string()
        m = _IDENT.match(t, self.i) or re.compile(r"\d+").match(t, self.i)
        if not m:
            raise _NotLiteral
        self.i = m.end()
        return m.group()

    def string(self):
        t, q = self.text, self.text[self.i]
        j, out = self.i + 1, []
        while j < len(t):
            c = t[j]
            if c == q:
                self.i = j + 1
                return "".join(out)
            if q == "`" and t.startswith("${", j):
                raise _NotLiteral
            if c == "\n" and q != "`":
                raise _NotLiteral
            if c == "\\":
                e = t[j + 1:j + 2]
                if e in _ESCAPES and not (e == "0" and t[j + 2:j + 3].isdigit()):
                    out.append(_ESCAPES[e])
                    j += 2
                elif e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", t[j + 2:j + 4]):
                    out.append(chr(int(t[j + 2:j + 4], 16)))
                    j += 4
                elif e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", t[j + 2:j + 6]):
                    out.append(chr(int(t[j + 2:j + 6], 16)))
                    j += 6
                elif e == "\n":
                    j += 2
                elif e and not e.isalnum():
                    out.append(e)
                    j += 2
                else:
                    raise _NotLiteral
                continue
            out.append(c)
            j += 1
        raise _NotLiteral


def parse_literal(source):
    """The tagged value of a JavaScript literal (strings, numbers, booleans, null,
    undefined, arrays and plain objects of them); None when `source` is not one."""
    reader = _Literal(source)
    try:
        value = reader.value()
        reader.ws()
    except (_NotLiteral, ValueError, OverflowError, RecursionError):
        return None
    return value if reader.i == len(source) else None


# --- JavaScript's comparisons on tagged values ---------------------------------------------

def _to_float(text):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(text) or float(text)


def _same(a, b):
    """Object.is on primitives (what toBe and strictEqual use)."""
    if a[0] != b[0] or a[0] in ("a", "o", "?"):
        return False
    if a[0] == "n":
        x, y = _to_float(a[1]), _to_float(b[1])
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    return a[1:] == b[1:]


def _string_number(text):
    s = text.strip()
    if not s:
        return 0.0
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", s):
            return float(int(s, 0))
        if re.fullmatch(r"[+-]?(Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)", s):
            return float(s.replace("Infinity", "inf"))
    except ValueError:
        pass
    return math.nan


def _loose(a, b):
    """`==` on primitives (node's assert.equal also takes NaN as equal to NaN)."""
    if a[0] == b[0]:
        if a[0] == "n" and math.isnan(_to_float(a[1])) and math.isnan(_to_float(b[1])):
            return True
        return _same(a, b) or (a[0] == "n" and _to_float(a[1]) == _to_float(b[1]))
    kinds = {a[0], b[0]}
    if kinds == {"u", "N"}:
        return True
    if kinds & {"u", "N", "a", "o", "?", "g"}:
        return False
    nums = [_to_float(x[1]) if x[0] == "n" else float(x[1]) if x[0] == "b" else _string_number(x[1])
            for x in (a, b)]
    return nums[0] == nums[1]


def _deep(a, b, prim, drop_undefined):
    if a[0] == "a" and b[0] == "a":
        return len(a[1]) == len(b[1]) and all(_deep(x, y, prim, drop_undefined)
                                              for x, y in zip(a[1], b[1]))
    if a[0] == "o" and b[0] == "o":
        da = {k: v for k, v in a[1] if not (drop_undefined and v[0] == "u")}
        db = {k: v for k, v in b[1] if not (drop_undefined and v[0] == "u")}
        return da.keys() == db.keys() and all(_deep(da[k], db[k], prim, drop_undefined) for k in da)
    if "a" in (a[0], b[0]) or "o" in (a[0], b[0]):
        return False
    return prim(a, b)


def matches(kind, value, literal):
    """Whether `value` (tagged, as the test sent it) passes the comparison `kind` with
    `literal`; False for anything malformed (the value is the policy's)."""
    try:
        if kind == "same":
            return _same(value, literal)
        if kind == "loose":
            return _loose(value, literal)
        if kind == "equal":
            return _deep(value, literal, _same, True)
        if kind == "strict_deep":
            return _deep(value, literal, _same, False)
        if kind == "loose_deep":
            return _deep(value, literal, _loose, False)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, RecursionError):
        return False
    return False


def trivially_holds(kind, literal):
    """Whether a value that knows nothing of `literal` passes the check (`TRIVIAL`)."""
    return any(matches(kind, list(t), literal) for t in TRIVIAL)
