"""What every repair verifier does around its language's test run (`repair`, `gorepair`, ...).

Runner-neutral: no language's files or tools are named here. The steps, in order:

    attempt = open_attempt(ref, tests_dir, workspace)   # hidden tests read, tree copied,
                                                        # submitted diff applied
    attempt.gate("tests_untouched", bad_paths, ...)     # each gate: a fine/medium gate
    if attempt.refused:                                 # component; the first one refused
        return attempt.not_run()                        # stops the attempt, nothing runs
    attempt.write_hidden()                              # the hidden test changes
    canaries = plant(attempt.tree, f2p)                 # the runner's own canaries
    run = ...                                           # the runner's test run
    attempt.close()
    return attempt.score(run, outcomes, canaries, ...)  # fail_to_pass, pass_to_pass,
                                                        # collects, results_trusted

`attempt.comps` holds the components as they are set; `attempt.hidden` the hidden test
files ({path: bytes}), read before any code of the policy runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.repairscore
    from .entry import verifier_main
    from .patch import apply_patch, remove_file, write_file
    from .policy_code import LocalPolicy, regular_file
    from .protect import SUBMISSION_PATCH, copy_workspace, touched_protected
    from .rewards import component, reward
else:  # tests/rlforge_repairscore.py, imported by an entry that installed its siblings
    from rlforge_entry import verifier_main
    from rlforge_patch import apply_patch, remove_file, write_file
    from rlforge_policy_code import LocalPolicy, regular_file
    from rlforge_protect import SUBMISSION_PATCH, copy_workspace, touched_protected
    from rlforge_rewards import component, reward

#: the reason of a run whose test process wrote more reports than the scorer keeps
FLOODED = "results_flood"
#: the reason of a fail, by the first gate that did not hold after a run
GATE_REASONS = {"results_trusted": "forged_results", "collects": "collection_error",
                "pass_to_pass": "pass_to_pass_broken", "blind_to_tests": "inspects_caller"}


def ids_text(ids, limit=5):
    """The first `limit` ids, comma-separated, and how many more."""
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def load_hidden(ref, tests_dir):
    """{path: bytes} of the hidden test files (reference.json's `hidden_files`)."""
    hidden = {}
    root = os.path.join(tests_dir, ref.get("hidden_dir", "hidden"))
    for rel in ref.get("hidden_files", []):
        with open(os.path.join(root, rel), "rb") as fh:
            hidden[rel] = fh.read()
    return hidden


class Attempt:
    """One submission on its way to a score: its private tree and its components."""

    def __init__(self, ref, hidden, scratch, tree):
        self.ref, self.hidden, self.scratch, self.tree = ref, hidden, scratch, tree
        self.comps = {}
        self.refused = ""  # the reason of the first gate that refused the submission
        self.after_run = {}  # gates decided before the run, reported after the run's own
        self.hashes = {}  # {path: sha256} of the tree once the submission is applied
        self.started = time.monotonic()  # (open_attempt sets it to before the tests are read)

    def budget_left(self, budget_sec):
        """What is left of the tests' time budget `budget_sec` once this attempt's own work
        (reading the tests, copying and hashing the workspace) is paid from it. The budget
        is the verifier's timeout less a margin, so a workspace made slow to copy cannot
        push scoring past that timeout, where Harbor records no reward at all (a red team's
        76,000 files); it shortens the test run instead, the policy's fail."""
        return max(0.0, float(budget_sec) - (time.monotonic() - self.started))

    @property
    def applied(self):
        return self.comps["patch_applies"]["value"] == 1

    def gate(self, name, bad, level, ok_detail, bad_detail, reason):
        """A gate component: it holds when `bad` (what is wrong, a list) is empty; the
        first one that does not hold names the fail's `reason`."""
        self.comps[name] = component(not bad, 0, level, gate=True,
                                     detail=f"{bad_detail}: {ids_text(bad)}" if bad else ok_detail)
        if bad and not self.refused:
            self.refused = reason

    def untouched(self, more=(), what="test or runner files"):
        """`tests_untouched`: no protected file differs from the starting workspace (and
        none of `more`, the runner's own finds, exists)."""
        touched = sorted(set(touched_protected(self.tree, self.ref["protected"],
                                               self.ref["base_protected"]) + list(more))) \
            if self.applied else []
        self.gate("tests_untouched", touched, "fine", "no test file changed",
                  f"{what} changed", "tests_touched")

    def blind_to_tests(self, found):
        """`blind_to_tests` (medium, gate): the changed source holds nothing that sees its
        caller or the test run (`found`: what it holds, from `callers.added_findings`).
        Decided before any code runs, reported after the run's gates, so a submission
        that also forges results is still named for that."""
        self.after_run["blind_to_tests"] = component(
            not found, 0, "medium", gate=True,
            detail=f"the change inspects its caller or the test run: {ids_text(found)}"
            if found else "the changed source does not look at its caller or the test run")

    def not_run(self):
        """The fail of a refused submission: nothing of it ran."""
        self.comps["fail_to_pass"] = component(0, 1.0, "coarse", detail="not run")
        self.comps["pass_to_pass"] = component(0, 0, "coarse", gate=True, detail="not run")
        self.close()
        return reward(self.comps, detail="the submission was not run", reason=self.refused)

    def settled(self):
        """The fail this attempt is certain of before anything of it runs, or None.

        A refused attempt gets what `not_run` returns, as scoring gives it. A gate decided
        before the run but reported after it (`after_run`) that does not hold makes the
        total 0 whatever the run does (every gate must hold); the fail then names that
        gate, where scoring would name the first of the run's gates that failed too."""
        if not self.refused:
            failed = [name for name, c in self.after_run.items() if c["gate"] and c["value"] < 1]
            if not failed:
                return None
            self.comps.update(self.after_run)
            self.refused = GATE_REASONS.get(failed[0], failed[0])
        return self.not_run()

    def write_hidden(self):
        """Write the hidden test changes over the tree."""
        for rel, data in self.hidden.items():
            write_file(self.tree, rel, data)
        for rel in self.ref.get("hidden_deleted", []):
            remove_file(self.tree, rel)

    def close(self):
        shutil.rmtree(self.scratch, ignore_errors=True)

    def score(self, run, outcomes, canaries, *, collects, partial=True, why=None,
              canaries_required=False, forged=(), held_back=(), detail="", reason=""):
        """The reward after the run.

        Args:
            run: the runner's result (`budget_exhausted`, ...).
            outcomes: {test id: outcome} as the verifier judged them.
            canaries: the ids of the planted tests that must fail.
            collects: (holds, detail) of the `collects` gate (every test file loads).
            partial: `fail_to_pass` is the fraction passing (else 1 only when all pass).
            why: {test id: why it failed} shown instead of its outcome.
            canaries_required: `results_trusted` fails when no canary could be planted
                (else it is left out then).
            forged: the test files whose results the runner found forged (`results_trusted`
                fails).
            held_back: the ids of planted copies of pass-to-pass tests whose expected
                values the verifier kept (`variants`): they count as pass-to-pass tests.
            detail: the reward's detail; reason: the fail's reason before any gate's.
        """
        f2p, p2p = list(self.ref["fail_to_pass"]), list(self.ref["pass_to_pass"]) + list(held_back)
        why = why or {}
        ok = [t for t in f2p if outcomes.get(t) == "passed"]
        bad = [f"{t} ({why.get(t) or outcomes.get(t)})" for t in f2p if outcomes.get(t) != "passed"]
        value = len(ok) / len(f2p) if f2p and partial else float(bool(f2p) and not bad)
        self.comps["fail_to_pass"] = component(
            value, 1.0, "coarse",
            detail=f"{len(ok)}/{len(f2p)} pass" + (f"; failing: {ids_text(bad)}" if bad else ""))
        broken = [f"{t} ({outcomes.get(t)})" for t in p2p if outcomes.get(t) != "passed"]
        self.comps["pass_to_pass"] = component(
            not broken, 0, "coarse", gate=True,
            detail=f"{len(p2p) - len(broken)}/{len(p2p)} still pass"
            + (f"; broken: {ids_text(broken)}" if broken else ""))
        self.comps["collects"] = component(collects[0], 0, "medium", gate=True, detail=collects[1])
        if canaries or canaries_required or forged:
            wrong = [c for c in canaries if outcomes.get(c) != "failed"]
            self.comps["results_trusted"] = component(
                bool(canaries) and not wrong and not forged, 0, "medium", gate=True,
                detail="no canary could be planted" if not canaries else
                f"{len(wrong)} of {len(canaries)} canary tests, which must fail, were reported "
                f"{', '.join(sorted({str(outcomes.get(c)) for c in wrong}))}: the results cannot "
                "be trusted" if wrong else
                f"the results of {ids_text(list(forged))} were forged: they cannot be trusted"
                if forged else "every canary test failed, as it must")
        if run.get("flooded"):
            self.comps["results_trusted"] = component(
                0, 0, "medium", gate=True,
                detail=f"the test process flooded the results channel: {run.get('kept_events', 0)} "
                "reports kept (the cap), the run stopped at the next one; the results cannot be "
                "trusted")
            reason = FLOODED
        self.comps.update(self.after_run)
        failed = [name for name, c in self.comps.items() if c["gate"] and c["value"] < 1]
        reason = reason or (GATE_REASONS.get(failed[0], failed[0]) if failed else "tests_fail")
        return reward(self.comps, detail=detail, reason=reason)


def open_attempt(ref, tests_dir, workspace=None):
    """The hidden tests read (before any code of the policy runs), the workspace (default
    ref['workspace']) copied into a private tree, and the submitted diff
    (`.rlforge/submission.diff`), if any, applied: `patch_applies` (medium, gate)."""
    started = time.monotonic()
    hidden = load_hidden(ref, tests_dir)
    scratch = tempfile.mkdtemp(prefix="rlforge-tree-")
    tree = os.path.join(scratch, "app")
    os.mkdir(tree)
    attempt = Attempt(ref, hidden, scratch, tree)
    attempt.started = started
    ws = workspace or ref["workspace"]
    try:
        copy_workspace(ws, tree)
        patch_file = os.path.join(ws, ref.get("submission_patch", SUBMISSION_PATCH))
        if regular_file(patch_file):
            with open(patch_file, "rb") as fh:
                text = fh.read(20_000_000).decode("utf-8", "surrogateescape")
            applied, detail = apply_patch(tree, text)
        else:
            applied, detail = True, "workspace submitted as is"
    except OSError as exc:
        applied, detail = False, f"the workspace could not be read: {exc}"
    attempt.comps["patch_applies"] = component(applied, 0, "medium", gate=True, detail=detail)
    if not applied:
        attempt.refused = "patch_does_not_apply"
    return attempt


def entry_main(argv, score):
    """What a repair entry's main() does: `[--logs DIR] reference.json` parsed, then
    `score(ref, tests_dir, policy=...)` run by `verifier_main` with a `LocalPolicy` that
    must keep policy code apart (`require_apart`) and is swept afterwards."""
    argv = list(argv)
    logs = "/logs/verifier"
    if "--logs" in argv:
        i = argv.index("--logs")
        logs = argv[i + 1]
        del argv[i:i + 2]

    def score_here(ref, tests_dir):
        policy = LocalPolicy()
        policy.require_apart()
        try:
            return score(ref, tests_dir, policy=policy)
        finally:
            policy.sweep()

    return verifier_main(argv[0], logs, score_here)
