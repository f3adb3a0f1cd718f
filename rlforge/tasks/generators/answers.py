"""Shared pieces of answer tasks: the gold solution script and the submissions that must fail.

An answer task asks for one answer in `/app/answer.txt`. Its gold solution writes the
reference answer there; its null submission writes nothing; its adversarial submissions
are the cheap tricks a policy under RL finds first: an empty file, every option at once,
the instruction echoed back, and a very long answer listing many candidates; and bytes no
parser expects, which must be a fail like any wrong answer.
"""

from __future__ import annotations

from pathlib import Path

from rlforge.taskdir.layout import SOLVE_SCRIPT
from rlforge.tasks.spec import ANSWER_FILE, Submission


#: Bytes no answer parser expects (an error raised on them was once an invalid rollout).
UNDECODABLE = b"ANSWER: \x00\xff\xfe\xed\xa0\x80" + b"[" * 20_000 + b"\r\n\x1b[2J"


#: the heredoc delimiter of a gold solution's answer (extended with `_` while the answer holds it)
ANSWER_MARKER = "RLFORGE_ANSWER_EOF"


def solve_script(answer_text: str) -> bytes:
    """solution/solve.sh writing the answer with a quoted heredoc (no shell expansion)."""
    marker = ANSWER_MARKER
    while marker in answer_text:
        marker += "_"
    return (f"#!/bin/bash\n# Gold solution: write the reference answer.\n"
            f"cat > /app/{ANSWER_FILE} <<'{marker}'\n{answer_text}\n{marker}\n").encode()


def gold_answer(script: str) -> str | None:
    """The answer a `solve_script` writes, read back from its text; None for any other
    script (a repair task's, or one another tool wrote)."""
    head, sep, rest = script.partition(f"cat > /app/{ANSWER_FILE} <<'")
    if not sep or not head.startswith("#!/bin/bash\n"):
        return None
    marker, sep, body = rest.partition("'\n")
    end = f"\n{marker}\n"
    if not sep or not marker.startswith(ANSWER_MARKER) or not body.endswith(end):
        return None
    return body[:-len(end)]


def read_gold_answer(task_dir: Path) -> str | None:
    """`gold_answer` of a task directory's solution/solve.sh; None when it has none."""
    try:
        script = (task_dir / SOLVE_SCRIPT).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return gold_answer(script)


def null_submission() -> Submission:
    return Submission("null", {}, "nothing submitted")


def adversarial_answers(*, options: list[str], candidates: list[str]) -> list[Submission]:
    """The standard tricks: empty, all options, a long candidate list.

    Validation adds one more to every answer task: the rendered instruction echoed back.
    """
    subs = [Submission("empty", {ANSWER_FILE: b""}, "an empty answer file"),
            Submission("undecodable_bytes", {ANSWER_FILE: UNDECODABLE},
                       "NUL, invalid UTF-8, an encoded surrogate and deep nesting: the "
                       "answer's parser must fail it, never raise")]
    if options:
        subs.append(Submission("every_option", {ANSWER_FILE: ", ".join(options).encode()},
                               "every offered option at once"))
        subs.append(Submission("every_option_lines",
                               {ANSWER_FILE: "\n".join(f"ANSWER: {o}" for o in options).encode()},
                               "every option, one ANSWER line each"))
    many = [c for c in candidates if c] or options
    if many:
        text = "\n".join(f"It could be {c}." for c in (many * (1 + 600 // max(1, len(many))))[:600])
        subs.append(Submission("long_candidate_list", {ANSWER_FILE: text.encode()},
                               "a very long answer listing many candidates"))
    return subs
