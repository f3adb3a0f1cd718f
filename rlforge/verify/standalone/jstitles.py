"""Hidden JavaScript test files as the sandbox sees them: neutral titles, no comments.

The tested code runs in the test process: it can read the test file, its own call stack
and the framework's name of the running test (`expect.getState().currentTestName`,
Mocha's `this.test.title`, node's test context). A checked assert hides its literal, but
a title or comment around it may still imply the value without spelling it (`'turns rock
and roll into a slug'` of `'rock-roll'`, `// three items` of `3`). So the verifier's copy
of each hidden test file gets, before it enters the sandbox:

- every plain-string title of a `describe`/`test`/`it` (and `suite`, `context`,
  `specify`, also `.only`, `.skip`, `.todo`, `test.describe`, `t.test`) replaced by
  `case N`, N its place among the file's titles; a title that is not a plain string
  (a template, `.each`), and every title under one, is kept, since the framework computes
  the name the scorer must recognise;
- every comment removed, except the pragmas a framework or compiler reads from comments
  (`@jest-environment`, `@vitest-environment`, `@ts-*`, `@flow`, `/// <reference>`),
  kept bare.

Lines are kept here (the canaries planted before, `jscanaries`, add the lines of their
copies), so stack traces point at the lines the sandbox's copy has. `names` maps each neutral
test name back to its real one (titles joined with ` > `, as `noderun` names tests),
and `restore` maps a run's outcomes back: that map never enters the sandbox.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.jstitles
    from .jsasserts import FRAME, SEP, _Scan, _split_args
    from .jsvalues import parse_literal
else:  # tests/rlforge_jstitles.py: its siblings by their copied names
    from rlforge_jsasserts import FRAME, SEP, _Scan, _split_args
    from rlforge_jsvalues import parse_literal

NEUTRAL = "case {n}"
#: what a title's call may be reached through: the frameworks' own names and node's `t.test`
_OWNERS = {"", "test", "it", "describe", "suite", "context", "specify", "t"}
_KEPT_CHAINS = {"", ".skip", ".todo", ".fails"}
#: what a comment may carry that a framework or compiler reads: kept, bare
PRAGMA = re.compile(r"@(?:jest|vitest)-environment(?:-options)?(?:[ \t]+[^\s*]+)?"
                    r"|@ts-(?:nocheck|check|ignore|expect-error)\b|@flow\b")
REFERENCE = re.compile(r"///[ \t]*<reference[ \t][^>\n]*/>")


def _bare(comment):
    """What stays of a comment: its pragmas (same lines), or blanks."""
    lines = comment.split("\n")
    if comment.startswith("//"):
        ref = REFERENCE.match(comment)
        kept = ref.group(0) if ref else " ".join(PRAGMA.findall(comment))
        return kept if ref or not kept else "// " + kept
    kept = [" ".join(PRAGMA.findall(line)) for line in lines]
    if not any(kept):
        return " " + "\n" * (len(lines) - 1)
    opener = "/**" if comment.startswith("/**") else "/*"
    return opener + "\n".join(f" * {k}" if k else "" for k in kept) + " */"


def _titles(scan):
    """[(call start, close, title span or None, title or None)] of every describe/test
    call the scan finds whose title the neutral copy may rewrite or must keep."""
    out = []
    for m in FRAME.finditer(scan.text):
        paren = m.end() - 1
        owner = m.group(0)[:m.start(1) - m.start()].rstrip(".")
        if not scan.is_code(m.start()) or paren not in scan.match or owner not in _OWNERS:
            continue
        args = _split_args(scan, paren, scan.match[paren])
        if owner == "t" and len(args) < 2:
            continue  # `t.test(x)` with one argument: a regular expression's test, say
        span, title = None, None
        if args and m.group(3) in _KEPT_CHAINS:
            a, b = args[0]
            src = scan.text[a:b]
            value = parse_literal(src.strip())
            if value and value[0] == "s":
                lead = len(src) - len(src.lstrip())
                span, title = (a + lead, a + lead + len(src.strip())), value[1]
        out.append((paren, scan.match[paren], span, title))
    return out


def neutralize(source, titles=True, canaries=()):
    """The sandbox's copy of a hidden test file (see the module docstring): (new bytes,
    {neutral name: real name} of every test and suite it renamed, [neutral names of the
    canaries]). `titles` False: only the comments go (a helper module, whose calls are
    named where a test file makes them). `canaries`: the call parens of the canary tests
    (`jscanaries.plant`), numbered with the others but left out of the map."""
    text = source.decode("utf-8", "surrogateescape") if isinstance(source, bytes) else source
    scan = _Scan(text)
    frames = _titles(scan) if titles else []
    edits, names, neutral, planted = [], {}, {}, []
    for n, (start, end, span, title) in enumerate(frames):
        around = [f for f in frames if f[0] < start < f[1]]
        if span is None or any(f[0] not in neutral for f in around):
            continue
        new = NEUTRAL.format(n=len(neutral) + 1)
        neutral[start] = (new, title)
        path = [neutral[f[0]] for f in sorted(around)] + [(new, title)]
        if start in canaries:
            planted.append(SEP.join(p[0] for p in path))
        else:
            names[SEP.join(p[0] for p in path)] = SEP.join(p[1] for p in path)
        edits.append((span[0], span[1], f'"{new}"'))
    edits += [(a, b, _bare(text[a:b])) for a, b in scan.comments]
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text.encode("utf-8", "surrogateescape"), names, planted


def real_name(name, names):
    """The real name of a test the run reported by its neutral `name`: exact, else under
    a renamed suite (a test whose own title the framework computes), else unchanged."""
    if name in names:
        return names[name]
    best = max((k for k in names if name.startswith(k + SEP)), key=len, default=None)
    return names[best] + name[len(best):] if best is not None else name


def restore(outcomes, names):
    """{real id: outcome} of a run's {neutral id: outcome} (`names`: {file: map}); a
    real name two neutral ones share passes only when both passed."""
    out = {}
    for test_id, outcome in outcomes.items():
        rel, sep, name = test_id.partition("::")
        real = f"{rel}{sep}{real_name(name, names.get(rel, {}))}" if sep else test_id
        if real not in out or out[real] == "passed":
            out[real] = outcome
    return out


def neutral_ids(ids, names):
    """The ids to ask the run for: each real id's neutral names (`names`: {file: map}),
    or the id itself where its file or name was not renamed."""
    back = {}
    for rel, renamed in names.items():
        for new, real in renamed.items():
            back.setdefault(f"{rel}::{real}", []).append(f"{rel}::{new}")
    return [n for i in ids for n in back.get(i, [i])]


def _template_text(text):
    """`text` as it stands inside a template literal's backticks."""
    return text.replace("\\", "\\\\").replace("`", "\\`").replace("${", "\\${")


_SNAPSHOT_KEY = re.compile(r"^exports\[`((?:[^`\\]|\\.)*)`\]", re.M)


def neutral_snapshots(text, names):
    """A Jest or Vitest snapshot file (`__snapshots__/x.test.js.snap`) with each key named
    as the run under neutral titles names it (`names`: the test file's map): the key is
    the test's titles joined with a space (Jest) or ` > ` (Vitest) and its count. A key
    of a test whose own title the framework computes (`.each`) gets its renamed suites'
    titles (the longest that starts it); any other is kept."""
    pairs = []
    for new, real in names.items():
        for sep in (" ", SEP):
            pairs.append((_template_text(sep.join(real.split(SEP))) + " ",
                          _template_text(sep.join(new.split(SEP))) + " "))
    pairs.sort(key=lambda p: -len(p[0]))

    def rename(m):
        key = m.group(1)
        for real, new in pairs:
            if key.startswith(real) and key[len(real):].isdigit():
                return f"exports[`{new}{key[len(real):]}`]"
        for real, new in pairs:
            if key.startswith(real):
                return f"exports[`{new}{key[len(real):]}`]"
        return m.group(0)

    return _SNAPSHOT_KEY.sub(rename, text)
