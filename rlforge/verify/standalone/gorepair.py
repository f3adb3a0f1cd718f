"""The entry of Go code-repair tasks: `tests/rlforge_gorepair.py`, run by `tests/test.sh`.

    python3 -I rlforge_gorepair.py /tests/reference.json [--logs /logs/verifier]

The steps and components of `repair` (Python), with Go's tests (`gotest`):

1. copy the workspace into a private tree; apply `.rlforge/submission.diff` if present
   (`patch_applies`, medium gate);
2. `tests_untouched` (fine, gate): no `_test.go` file, `testdata/` or `vendor/` file,
   `go.mod`, `go.sum` or `go.work` differs from the starting workspace; nothing runs
   otherwise (a replace directive, a test file or a TestMain the policy adds never runs);
3. `harness_untouched` (fine, gate): the non-test code reaches nothing of the test
   harness (stdout, process exit, its own binary, other processes, the runtime's or the
   `testing` package's internals, embedded files, assembly) beyond what the parent's code
   of the same package already reached (`goreach`, against reference.json's `go_reach`);
   nothing runs otherwise (reason `forging_code`). A Go test shares its process with the
   package's code, so this is what keeps that code from printing or re-running its own
   verdict;
4. write the hidden test changes over the tree, plant canary tests that must fail
   (`gocanaries`: copies of the file's passing tests, fail-to-pass first, with one checked
   literal changed, so they fail with their original's message shape; named like the
   file's tests, at random places among them), compile, delete every `_test.go` source from the tree (the binaries hold them),
   and run the fail-to-pass, pass-to-pass and canary tests as policy code, each top-level
   test in its own process (`gotest`);
5. score: `fail_to_pass` (coarse, all or nothing: 1 only when every fail-to-pass test
   passes; most Go commits' hidden tests do not build at the parent, so most of their
   fail-to-pass tests failed only for that, and a fraction would pay a stub that merely
   compiles), `pass_to_pass` (coarse, gate), `collects` (medium, gate: every package's
   tests build, and each test binary came out of the build sandbox: one over
   `sandbox.copy_file_mb` is the submission's fail, reason `test_binary_too_large`, since
   the gold's binary fit when the task was validated), `results_trusted` (medium, gate:
   every canary failed, so no code forged results wholesale).

What does not hold for Go, against Python: there are no checked asserts (a test's expected
values stay in its source, which is compiled into the binary the policy's code runs in).
The gate is a scan of tokens, not of types, and it lists what it knows: a forger needs a
route to stdout and to exit status 0 (or to another process) that it does not list. The
canaries stay as a second line for code that forges results wholesale.

`--run-tests SPEC OUT` is the build's mode: run tests in a prepared tree, write the raw
outcomes.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.gorepair
    from .gocanaries import plant_canaries
    from .goreach import beyond
    from .gotest import run_go_tests
    from .policy_code import LocalPolicy
    from .repairscore import entry_main, ids_text, open_attempt
else:  # tests/rlforge_gorepair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_gocanaries import plant_canaries
    from rlforge_goreach import beyond
    from rlforge_gotest import run_go_tests
    from rlforge_policy_code import LocalPolicy
    from rlforge_repairscore import entry_main, ids_text, open_attempt

def score_go_repair(ref, tests_dir, workspace=None, policy=None):
    """Score the workspace (default ref['workspace']); see the module docstring."""
    attempt = open_attempt(ref, tests_dir, workspace)  # hidden tests read before code runs
    f2p, p2p = list(ref["fail_to_pass"]), list(ref["pass_to_pass"])
    attempt.untouched(what="test or module files")
    if not attempt.refused:
        attempt.gate("harness_untouched", beyond(attempt.tree, ref.get("go_reach", {})), "fine",
                     "the code reaches nothing of the test harness the parent's code did not",
                     "the code reaches what the test harness owns", "forging_code")
    if attempt.refused:
        return attempt.not_run()
    attempt.write_hidden()
    canaries = plant_canaries(attempt.tree, f2p, p2p)
    # in an order code cannot predict: the tree outlives each test process, so code that
    # noted which tests ran before it would otherwise know the canaries come last
    order = f2p + p2p + canaries
    random.SystemRandom().shuffle(order)
    try:
        run = run_go_tests(attempt.tree, order, per_test_timeout=ref["per_test_timeout"],
                           budget_sec=attempt.budget_left(ref["budget_sec"]), env=ref.get("env"),
                           policy=policy or LocalPolicy(), hide_sources=True)
    finally:
        attempt.close()
    errors, too_large = run["collect_errors"], run.get("too_large", [])
    return attempt.score(
        run, run["outcomes"], canaries, partial=False, canaries_required=True,
        collects=(not errors and not too_large,
                  f"packages failed to build: {ids_text(errors)}" if errors else
                  f"test binaries too large to run: {ids_text(too_large)}" if too_large else
                  "every package builds"),
        detail=f"{run['sessions']} test process(es), {run['seconds']:.1f}s"
        + ("; a test hung" if run["hung"] else ""),
        reason="timeout" if run["budget_exhausted"] else "test_binary_too_large" if too_large else "")


def run_only(spec_path, out_path):
    """Build-time mode: run tests in a prepared tree and write the raw outcomes as JSON."""
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    result = run_go_tests(spec["tree"], spec.get("ids"), paths=spec.get("paths"),
                          per_test_timeout=spec["per_test_timeout"], budget_sec=spec["budget_sec"],
                          env=spec.get("env"), policy=LocalPolicy())
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, sort_keys=True)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--run-tests":
        return run_only(argv[1], argv[2])
    return entry_main(argv, score_go_repair)


if __name__ == "__main__":
    sys.exit(main())
