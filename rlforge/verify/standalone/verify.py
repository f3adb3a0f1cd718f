"""The entry of answer, reply and script tasks: `tests/rlforge_verify.py`, run by `tests/test.sh`.

    python3 -I rlforge_verify.py REFERENCE.json [--logs /logs/verifier]

Dispatches on the reference's verifier kind; rlforge calls the same `score` with its
sandbox as the launcher of policy code, so both paths give the same reward.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.verify
    from .answers import score_answer
    from .entry import verifier_main
    from .policy_code import LocalPolicy
    from .replies import score_reply
    from .script import score_script
else:  # tests/rlforge_verify.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_answers import score_answer
    from rlforge_entry import verifier_main
    from rlforge_policy_code import LocalPolicy
    from rlforge_replies import score_reply
    from rlforge_script import score_script


def read_submission(path, limit=1_000_000):
    """The answer file as text (UTF-8 with replacement, universal newlines), links refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a FIFO, a device
            os.close(fd)
            return ""
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""


def score(ref, tests_dir, workspace=None, policy=None):
    """Dispatch on the reference's verifier kind and return the reward.

    `workspace`: the submission's directory (default: the reference's, /app); `policy`:
    how policy code is launched (default `LocalPolicy`).
    """
    kind = ref["verifier"]
    if kind == "script":
        return score_script(ref, tests_dir, workspace, policy)
    path = ref["submission"]
    if workspace is not None:
        path = os.path.join(workspace, os.path.relpath(path, ref.get("workspace", "/app")))
    submitted = read_submission(path)
    if kind == "answer":
        return score_answer(ref, submitted)
    if kind == "reply":
        return score_reply(ref, submitted)
    raise ValueError(f"unknown verifier kind {kind!r}")


def _score_here(ref, tests_dir):
    policy = LocalPolicy()
    if ref["verifier"] == "script":
        policy.require_apart()
    try:
        return score(ref, tests_dir, policy=policy)
    finally:
        policy.sweep()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    logs_dir = "/logs/verifier"
    if "--logs" in argv:
        i = argv.index("--logs")
        logs_dir = argv[i + 1]
        del argv[i:i + 2]
    return verifier_main(argv[0], logs_dir, _score_here)


if __name__ == "__main__":
    sys.exit(main())
