"""Go source read without a parser: where its literals and comments are, its braces, its
top-level declarations and test functions (what `gocanaries` copies tests with).

The scan knows Go's lexical rules for comments, interpreted and raw strings and rune
literals, so a brace or a `func` line inside a literal or comment is never code.
"""

from __future__ import annotations

import bisect
import re

TEST_HEAD = re.compile(r"func\s+(Test\w*)\s*\(\s*(\w+)\s+\*testing\.T\s*\)\s*\{")


def literal_end(text, i):
    """The index just past the comment, string or rune literal that starts at i; i when none does."""
    c, n = text[i], len(text)
    if text.startswith("//", i):
        end = text.find("\n", i)
        return n if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return n if end < 0 else end + 2
    if c == "`":
        end = text.find("`", i + 1)
        return n if end < 0 else end + 1
    if c in "\"'":
        j = i + 1
        while j < n and text[j] != c and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def literal_spans(text):
    """(start, end) of every comment, string and rune literal of Go source, in order."""
    spans, i, n = [], 0, len(text)
    while i < n:
        end = literal_end(text, i) if text[i] in "/`\"'" else i
        if end > i:
            spans.append((i, end))
            i = end
        else:
            i += 1
    return spans


def inside(spans, pos):
    """Whether `pos` falls in one of `spans` (sorted (start, end) pairs)."""
    at = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return at >= 0 and spans[at][0] <= pos < spans[at][1]


def declaration_starts(text):
    """Offsets of the lines of Go source that begin a top-level `func` declaration: outside
    any string, rune literal or comment and any brace (a `func` line inside a raw string
    is test data, and a canary put there would never run)."""
    out, depth, i, n = [], 0, 0, len(text)
    while i < n:
        end = literal_end(text, i) if text[i] in "/`\"'" else i
        if end > i:
            i = end
            continue
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and (i == 0 or text[i - 1] == "\n") and re.match(r"func\s", text[i:i + 5]):
            out.append(i)
        i += 1
    return out


def test_functions(text):
    """{name: (start, end, T parameter)} of the file's top-level `func TestX(t *testing.T)`
    declarations; end is just past the closing brace."""
    out = {}
    for start in declaration_starts(text):
        m = TEST_HEAD.match(text, start)
        if not m:
            continue
        closing = closing_brace(text, m.end() - 1)
        if closing is not None:
            out.setdefault(m.group(1), (start, closing + 1, m.group(2)))
    return out


def split_top(text, sep):
    """`text` split at each `sep` outside brackets and literals."""
    spans, parts, depth, last, i = literal_spans(text), [], 0, 0, 0
    while i < len(text):
        if inside(spans, i):
            i += 1
            continue
        c = text[i]
        depth += 1 if c in "([{" else -1 if c in ")]}" else 0
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[last:i])
            last = i + len(sep)
            i = last
            continue
        i += 1
    return parts + [text[last:]]


def closing_brace(source, i):
    """The index of the brace that closes the one at i."""
    depth = 0
    while i < len(source):
        end = literal_end(source, i) if source[i] in "/`\"'" else i
        if end > i:
            i = end
            continue
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        if depth == 0:
            return i
        i += 1
    return None


def outside_closures(source):
    """The code of a function's source with its literals, comments and the bodies of the
    function literals inside it blanked (a `return` there leaves only the closure)."""
    code = code_only(source, literal_spans(source))
    for m in re.finditer(r"\bfunc\s*\(", code):
        if m.start() == 0:
            continue
        depth, i = 0, m.end() - 1
        while i < len(code):  # past the parameters, then to the body's brace
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            if depth == 0 and code[i] == "{":
                break
            i += 1
        end = closing_brace(code, i) if i < len(code) else None
        if end is not None:
            code = code[:i + 1] + re.sub(r"\S", " ", code[i + 1:end]) + code[end:]
    return code


def code_only(text, spans):
    """`text` with its comments and literals blanked."""
    pieces, last = [], 0
    for a, b in spans:
        pieces.append(text[last:a] + " " * (b - a))
        last = b
    return "".join(pieces) + text[last:]
