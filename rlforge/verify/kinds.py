"""Verifier kinds as data: how a task's submission is shaped and how it is scored.

A task names its kind in `task.toml` (`[metadata.rlforge] verifier`) and in
`tests/reference.json` (`"verifier"`). Everything that depends on the kind asks this
registry rather than comparing names:

- `score(reference, tests_dir, workspace, policy)`: the reward of the workspace, computed
  on the host with policy code in sandboxes (`rlforge.verify.boundary`);
- `score_text(reference, text)`: for kinds whose submission is one text file, the reward
  of the text the verifier would read — scored in-process, without a sandbox (`rlforge
  run` single-turn tasks, rescoring, exports);
- `settle(reference, tests_dir, workspace, policy)`, for kinds that have it: what is known
  of a submission before any of it runs — {"reward": ...} when a gate decided before the
  run fails it, else {"tree": digest of what would run} — so that validation runs only
  the submissions whose score is not yet certain, each distinct tree once;
- `submission`: "text" (one file, /app/answer.txt by default: a chat reply becomes it and
  validation also submits the instruction echoed back), "patch" (the workspace's diff is
  the submission trainers and people read), or "workspace".

Third parties add kinds through the `rlforge.verifiers` entry-point group (importing the
entry point calls `register_kind`); see `rlforge.plugins` for broken ones. A task's
in-task verifier (`tests/test.sh`, for Harbor's own runs) is the generator's business: a
plug-in kind ships its own script through its generator's templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from rlforge import plugins
from rlforge.errors import UnknownName, UserError
from rlforge.taskdir import Task
from rlforge.verify.standalone import answers, gorepair, noderepair, repair, replies, verify

ENTRY_POINT_GROUP = "rlforge.verifiers"
SUBMISSIONS = ("text", "patch", "workspace")


@dataclass(frozen=True)
class VerifierKind:
    name: str
    version: int
    description: str
    score: Callable[[dict, str, str | None, Any], dict]
    submission: str = "workspace"
    score_text: Callable[[dict, str], dict] | None = None
    settle: Callable[[dict, str, str | None, Any], dict] | None = None

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def in_process(self) -> bool:
        """Scored from the reference and one text, without a sandbox."""
        return self.score_text is not None


_KINDS: dict[str, VerifierKind] = {}


def register_kind(kind: VerifierKind) -> VerifierKind:
    """Add a verifier kind (a higher version of a name replaces a lower one)."""
    if kind.submission not in SUBMISSIONS:
        raise UserError(f"verifier kind {kind.name}: submission must be one of "
                        f"{', '.join(SUBMISSIONS)}, not {kind.submission!r}")
    if kind.submission != "text" and kind.score_text is not None:
        raise UserError(f"verifier kind {kind.name}: only a text submission is scored from text")
    return plugins.add_versioned(_KINDS, kind, "verifier kind")


for _kind in (
    VerifierKind("answer", 1, "one short answer (a label, number, time, set or exact text) "
                 "compared with the reference", verify.score, "text",
                 answers.score_answer),
    VerifierKind("reply", 1, "a reply to a customer: the facts it must convey present, "
                 "forbidden content absent, length bounded", verify.score, "text",
                 replies.score_reply),
    VerifierKind("script", 1, "a script the verifier runs on the visible and held-back data "
                 "in the sandbox; its output compared with each case's answer",
                 verify.score, "workspace"),
    VerifierKind("repair", 1, "the workspace's code: hidden fail-to-pass and pass-to-pass "
                 "tests run in the sandbox", repair.score_repair, "patch",
                 settle=repair.settle_repair),
    VerifierKind("repair-go", 1, "the workspace's Go code: hidden fail-to-pass and "
                 "pass-to-pass Go tests, one process each, run in the sandbox",
                 gorepair.score_go_repair, "patch"),
    VerifierKind("repair-js", 1, "the workspace's JavaScript/TypeScript code: hidden "
                 "fail-to-pass tests whose checked asserts are compared outside the sandbox, "
                 "and pass-to-pass tests, one process a test file, run in the sandbox",
                 noderepair.score_js_repair, "patch"),
):
    register_kind(_kind)


def kinds() -> dict[str, VerifierKind]:
    """Every verifier kind by name (built-ins and plug-ins)."""
    plugins.load(ENTRY_POINT_GROUP)
    return dict(sorted(_KINDS.items()))


def get(name: str) -> VerifierKind:
    """The kind called `name`; UnknownName lists the valid ones."""
    found = kinds().get(name)
    if found is None:
        raise UnknownName("verifier kind", name, list(kinds()))
    return found


def scored_in_process(task: Task) -> bool:
    """Whether `task` is scored from its reference data and one text (no sandbox needed)."""
    return get(task.verifier).in_process and bool(task.reference)
