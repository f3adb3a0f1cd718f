"""Specified repair instructions: every checked behaviour of a hidden test is stated.

A repair task's instruction is the request (a commit message, or a customer's ticket); the
verdict is the hidden fail-to-pass tests'. When a test checks something the request does
not say (a commit "add once decorator" whose test calls `once` from several threads), a
correct-but-different solution fails, and the task teaches guessing. So for each checked
fail-to-pass test, the test runner describes what the test checks (`TestRunner.behaviours`,
a `Derivation`): the project names it uses, the exceptions, warnings, threads, output or
environment it involves, the kind of value its asserts expect, and the words of its name
or docstring. Never its literals: the checked-assert defence holds the expected values
back, so a description showing one would void it (`Derivation.literals`, and a last check
here before any line is used).

`specify` decides, test by test, whether the request already names the behaviour (each
required `Aspect`'s words appear, and at least half the words of the test's name); the
behaviours it does not name are described in the instruction (`Specification.lines`), and
a commit with a behaviour that is neither named nor describable is dropped with the
reason. A runner that cannot describe its tests (the default) keeps the request-only
instruction; such a task counts as *unmeasured*. `SpecFigures` adds up a build's verdicts
for the build report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

NOT_SPECIFIED = "instruction does not specify a checked behaviour"
SHOWS_LITERAL = "description would show a hidden literal"
UNSTATED_MESSAGE = "a hidden test checks a wording the request does not state"
SUMMARY_SHARE = 0.5  # of a test name's content words the request must contain
# Words of a test's name that say nothing about the behaviour by themselves.
FILLER = frozenset("""test tests the a an of is are be been in on to for with and or it its as
at by from when should does do that this then than into via after before can cannot
works work correct correctly properly right check checks case cases example examples
returns return gives give handles handle new old basic simple valid value values result
results one two get gets set sets not no""".split())


@dataclass(frozen=True)
class Aspect:
    """One part of what a test checks, as the instruction would say it.

    `terms`: words (lower case; a word matches any text word its stem starts) of which the
    request must contain one for the aspect to count as named, or with `exact` whole
    identifiers or phrases (a keyword argument's name, an exception type); `stated`: texts
    the request must all hold, each standing on its own (a parameter's name and its default
    value); neither: an aspect shown in a description but never required (the kind of
    value a test expects)."""

    kind: str
    text: str
    terms: tuple[str, ...] = ()
    exact: bool = False  # terms are identifiers or phrases: matched whole, not by stem
    forms: tuple[str, ...] = ()  # literal forms (`form_of`) the request must all state
    stated: tuple[str, ...] = ()  # texts the request must each show on their own (a default)


@dataclass(frozen=True)
class Behaviour:
    """What one fail-to-pass test checks: `summary` (the words of its name or docstring),
    `words` (the content words of that summary the request is matched against), its
    aspects, and `messages`: the wordings it checks word for word (a message's text but
    the test's own inputs) that the policy cannot find in its workspace, which the request
    must state as written (no description can: they are held back). What a summary or an
    aspect's text takes from the test is quoted (“…”) or in backticks (`DERIVED_PART`):
    only that is searched for hidden literals."""

    test: str
    summary: str
    words: tuple[str, ...]
    aspects: tuple[Aspect, ...]
    messages: tuple[str, ...] = ()

    def describable(self) -> bool:
        """Whether there is anything to say: a named project item or summary words."""
        return bool(self.words) or any(a.kind == "uses" for a in self.aspects)

    def describe(self, leave_out: Iterable[Aspect] = ()) -> str:
        """One line for the instruction: the summary, then every aspect (but `leave_out`)."""
        skipped = set(leave_out)
        parts = [a.text for a in self.aspects if a not in skipped]
        head = self.summary or "a hidden test"
        return f"{head}: " + "; ".join(parts) if parts else head


@dataclass(frozen=True)
class Derivation:
    """A runner's description of the checked fail-to-pass tests, and the literals they
    hold back (which no description may show)."""

    behaviours: tuple[Behaviour, ...]
    literals: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()  # literals that are interface names a description may show

    def hidden(self) -> frozenset[str]:
        """The literals no description may show."""
        return self.literals - self.names


def words_of(text: str) -> list[str]:
    """Lower-case word tokens of a text; identifiers split at underscores and case changes."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*|[0-9]+", text)]


def content_words(text: str, skip: Iterable[str] = ()) -> tuple[str, ...]:
    """The words of a summary worth matching: no filler, no digits, none of `skip`."""
    skipped = set(skip)
    out: list[str] = []
    for w in words_of(text):
        if len(w) >= 3 and w not in FILLER and w not in skipped and not w.isdigit() and w not in out:
            out.append(w)
    return tuple(out)


def states_wording(request: str, wording: str) -> bool:
    """Whether the request holds a wording as written (case and punctuation included;
    runs of white space count as one space)."""
    return " ".join(wording.split()) in " ".join(request.split())


def _stem(word: str) -> str:
    return word[:max(4, len(word) - 2)] if len(word) > 4 else word


def mentions(text_words: set[str], term: str) -> bool:
    """Whether a term (a word, or words joined by spaces that must all appear) is in the
    text's words, a word matching any text word that starts with its stem."""
    for part in term.split():
        stem = _stem(part)
        if not any(w.startswith(stem) for w in text_words):
            return False
    return True


def says_exactly(request: str, term: str) -> bool:
    """Whether the request holds the term as a whole identifier (`interpolate`, not
    `interpolation`) or, for words with spaces, as that phrase."""
    if " " in term:
        return f" {term} " in " " + " ".join(words_of(request)) + " "
    return term in {t.lower() for t in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", request)}


NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
PLACEHOLDER = "<n>"
FORM_EDGES = "'\"`()[]{},;:.!?"  # around a piece: quotes, brackets, punctuation
MAX_FORM = 40  # characters: a longer literal is content, not a form


def form_of(text: str) -> str:
    """The form of a literal as a request would state it: every number replaced by `<n>`
    (`"3 wks"` -> `<n> wks`, `"1h30m"` -> `<n>h<n>m`). Digits inside a word that starts
    with a letter are no number (`S3cr3t_P4ss` has none; `v2` and `sha256` end in one)."""
    def number(m: re.Match[str]) -> str:
        start = m.start()
        while start and text[start - 1].isalnum():
            start -= 1
        inside = text[start].isalpha() and m.end() < len(text) and text[m.end()].isalpha()
        return m.group() if inside else PLACEHOLDER
    return NUMBER.sub(number, text)


def form_tokens(text: str) -> list[str]:
    """The whitespace-separated pieces of a form (or of a request's forms), lower case,
    without the quotes, brackets and punctuation around them."""
    out = []
    for piece in form_of(text).lower().split():
        piece = piece.strip(FORM_EDGES)
        if piece:
            out.append(piece)
    return out


def states_form(request: str, form: str) -> bool:
    """Whether the request states a literal form: each of its pieces other than a bare
    number appears in the request as a piece of the same form (`'2w'` states `<n>w`;
    `w, wk, week` do not state `<n> wks`)."""
    pieces = set(form_tokens(request))
    return all(p == PLACEHOLDER or p in pieces for p in form_tokens(form))


def missing(behaviour: Behaviour, request: str) -> list[str]:
    """What of a behaviour the request does not name: required aspects' texts (one of an
    aspect's terms, all of its forms, all of its stated texts), and "summary" when fewer than `SUMMARY_SHARE` of
    its words appear (or it has neither words nor required aspects to look for)."""
    found = set(words_of(request))
    out = [a.text for a in behaviour.aspects if a.terms and not any(
        says_exactly(request, t) if a.exact else mentions(found, t) for t in a.terms)]
    out += [a.text for a in behaviour.aspects
            if a.forms and not all(states_form(request, f) for f in a.forms)]
    out += [a.text for a in behaviour.aspects
            if a.stated and not all(shows_literal(request, [s]) is not None for s in a.stated)]
    if behaviour.words:
        named = sum(mentions(found, w) for w in behaviour.words)
        if named < SUMMARY_SHARE * len(behaviour.words):
            out.append("summary")
    elif not any(a.terms for a in behaviour.aspects):
        out.append("summary")  # nothing to find in the request: it cannot be shown to name it
    return out


# The parts of a description that come from a test: quoted (its summary) or in backticks
# (names, forms, kinds); the rest is the description's own sentences.
DERIVED_PART = re.compile(r"“[^”]*”|`[^`]*`")


def shows_literal(text: str, literals: Iterable[str], derived_only: bool = False) -> str | None:
    """The first hidden literal (its text as written) the text shows, if any: standing on
    its own, not inside a longer word, identifier or number (case-insensitively).
    `derived_only`: the text is a description; only its parts that come from the test
    (`DERIVED_PART`) can show one, not the words of its own sentences (`a`, `text`)."""
    if derived_only:
        text = " ".join(DERIVED_PART.findall(text))
    for lit in sorted(literals):
        core = lit.strip()
        if not core:
            continue
        before = r"(?<![\w.])" if core[0].isalnum() or core[0] == "_" else ""
        after = r"(?![\w]|\.\d)" if core[-1].isalnum() or core[-1] == "_" else ""
        if re.search(before + re.escape(core) + after, text, re.IGNORECASE):
            return lit
    return None


@dataclass
class Specification:
    """The verdict on one commit: which behaviours the request names, the lines that
    describe the others, and why it is dropped (None: kept)."""

    measured: bool
    behaviours: list[Behaviour] = field(default_factory=list)
    stated: list[bool] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    reason: str | None = None
    detail: str = ""

    @property
    def by_request(self) -> bool:
        """The request alone names every checked behaviour."""
        return self.measured and all(self.stated)

    def metadata(self) -> dict[str, Any]:
        """What task.toml records of it."""
        if not self.measured:
            return {"spec": "unmeasured"}
        return {"spec": "request" if self.by_request else "derived",
                "spec_behaviours": len(self.behaviours),
                "spec_described": len(self.lines)}


def specify(derivation: Derivation | None, request: str) -> Specification:
    """The specification of a commit's checked tests against the request the policy sees
    (see the module docstring); `derivation` None: the runner cannot describe its tests."""
    if derivation is None:
        return Specification(measured=False)
    spec = Specification(measured=True, behaviours=list(derivation.behaviours))
    for b in derivation.behaviours:
        unstated = [m for m in b.messages if not states_wording(request, m)]
        if unstated:
            spec.reason = UNSTATED_MESSAGE
            spec.detail = (f"{b.test}: checks {len(unstated)} wording(s) word for word "
                           f"({', '.join(str(len(m.split())) + ' words' for m in unstated)}) that "
                           "neither the request nor the workspace holds; a different wording fails")
            spec.lines = []
            return spec
        gaps = missing(b, request)
        spec.stated.append(not gaps)
        if not gaps:
            continue
        if not b.describable():
            spec.reason = NOT_SPECIFIED
            spec.detail = (f"{b.test}: the request does not say what it checks "
                           f"({', '.join(gaps)}) and nothing of it can be described")
            return spec
        line = b.describe()
        if shows_literal(line, derivation.hidden(), derived_only=True) is not None:
            # What the request already names need not be described (an environment
            # variable it quotes, whose name the test also compares with).
            line = b.describe(leave_out=[a for a in b.aspects if a.terms and a.text not in gaps])
        if line not in spec.lines:
            spec.lines.append(line)
    for line in spec.lines:
        if (lit := shows_literal(line, derivation.hidden(), derived_only=True)) is not None:
            spec.reason = SHOWS_LITERAL
            spec.detail = f"a description of a hidden test would show one of its literals ({len(lit)} chars)"
            spec.lines = []
            return spec
    return spec


@dataclass
class SpecFigures:
    """A build's count of specification verdicts (one per commit that reached the stage)."""

    checked: int = 0      # commits with checked fail-to-pass tests
    by_request: int = 0   # the request alone names every checked behaviour
    described: int = 0    # specified once the missing behaviours are described
    dropped: int = 0      # a behaviour neither named nor describable (or a literal leak)
    unmeasured: int = 0   # the runner cannot describe its tests: request-only instruction

    def add(self, spec: Specification) -> None:
        self.checked += 1
        if not spec.measured:
            self.unmeasured += 1
        elif spec.reason is not None:
            self.dropped += 1
        elif spec.by_request:
            self.by_request += 1
        else:
            self.described += 1

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def summary_line(figures: dict[str, int]) -> str:
    """How the build report says it: the share specified by the request alone and with
    the descriptions, of the commits measured."""
    measured = figures["checked"] - figures["unmeasured"]
    if not measured:
        return f"{figures['unmeasured']:,} unmeasured (the test runner cannot describe its tests)"
    share = figures["by_request"] / measured
    after = (figures["by_request"] + figures["described"]) / measured
    text = (f"{figures['by_request']:,} of {measured:,} ({share:.0%}) specified by the request "
            f"alone, {figures['by_request'] + figures['described']:,} ({after:.0%}) with described "
            f"hidden tests; {figures['dropped']:,} dropped")
    if figures["unmeasured"]:
        text += f", {figures['unmeasured']:,} unmeasured"
    return text
