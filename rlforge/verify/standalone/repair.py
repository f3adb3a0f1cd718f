"""The entry of code-repair tasks: `tests/rlforge_repair.py`, run by `tests/test.sh`.

    python3 -I rlforge_repair.py /tests/reference.json [--logs /logs/verifier] [--python PY]

rlforge calls the same `score_repair` with its own sandbox as the launcher. What it does
with the submission (the final state of the workspace; a unified diff at
`.rlforge/submission.diff`, if present, is applied on top of it first):

1. copy the workspace into a private tree (regular files only: no symlinks, no bytecode);
2. `patch_applies` (medium, gate): the submitted diff, if any, applies cleanly;
3. `tests_untouched` (fine, gate): no test file or test-runner configuration differs from
   the starting workspace, no packaging metadata (`*.dist-info`, `*.egg-info`, `*.pth`)
   was added, and no new top-level module shadows pytest, its plugins or the standard
   library (`protect`); tampering stops here, nothing is run;
   `blind_to_tests` (medium, gate, reported after the run's gates): no non-test source
   file holds more than it started with of what sees the caller or the test run (frames,
   tracebacks, tracing, warning locations, the runner's names, computed lookups:
   `callers`), since a change that behaves only under tests passes every test;
4. write the hidden test changes over the tree, plant canary tests that must fail (placed
   among the real tests, named like them: `canaries`) and the held-back copies of
   pass-to-pass tests with an input changed (`variants`), rewrite the literal asserts of
   the fail-to-pass tests and of those copies so their values come out and their literals
   stay here (`asserts`), and run the fail-to-pass and every pass-to-pass test as policy
   code (`testrun`).
   Reports come back over a FIFO, first report of each test wins, so nothing the tests do
   after a test ended can change its outcome; a test running longer than the per-test
   timeout is killed and counted as failed, and the others run again without it;
5. score: `fail_to_pass` (coarse, the fraction passing: reported passed, and every checked
   assert ran and holds), `pass_to_pass` (coarse, gate: all still pass, the held-back
   copies too, every checked assert of theirs holding), `collects` (medium, gate: no test
   file failed to import), `results_trusted` (medium, gate: every canary failed, so no
   code forged results).

`--run-tests SPEC OUT` is the build's mode: run tests in a prepared tree, write the raw
outcomes.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.repair
    from .asserts import apply_checks, externalize_checks, keys_by_file
    from .callers import added_findings, tree_code
    from .canaries import add_canaries
    from .entry import verifier_main
    from .policy_code import LocalPolicy, regular_file
    from .protect import installed_modules, is_protected, shadow_modules, tree_digest, tree_hashes
    from .repairscore import ids_text, open_attempt
    from .testrun import environment_site_dirs, run_tests
    from .variants import held_back, plant
else:  # tests/rlforge_repair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_asserts import apply_checks, externalize_checks, keys_by_file
    from rlforge_callers import added_findings, tree_code
    from rlforge_canaries import add_canaries
    from rlforge_entry import verifier_main
    from rlforge_policy_code import LocalPolicy, regular_file
    from rlforge_protect import (installed_modules, is_protected, shadow_modules, tree_digest,
                                 tree_hashes)
    from rlforge_repairscore import ids_text, open_attempt
    from rlforge_testrun import environment_site_dirs, run_tests
    from rlforge_variants import held_back, plant


def open_gated(ref, tests_dir, workspace=None, policy=None):
    """Steps 1-3: the attempt opened and every gate decided that is decided before any
    code of the policy runs (`patch_applies`, `tests_untouched`, then `blind_to_tests`
    unless one of those refused). Nothing is run; `policy` only says where the tests'
    environment is installed."""
    attempt = open_attempt(ref, tests_dir, workspace)  # hidden tests read before code runs
    roots = [""] + list(ref.get("pythonpath", []))
    shadows = []
    if attempt.applied:
        attempt.hashes = tree_hashes(attempt.tree)
        shadows = shadow_modules(sorted(attempt.hashes), roots, set(ref.get("base_modules", [])),
                                 installed_modules(environment_site_dirs(
                                     policy or LocalPolicy(), ref["test_command"])))
    attempt.untouched(shadows)
    if not attempt.refused and "base_findings" in ref:  # tasks built before it carry none
        attempt.blind_to_tests(added_findings(tree_code(attempt.tree),
                                              lambda p: is_protected(p, ref["protected"]),
                                              ref["base_findings"]))
    return attempt


def settle_repair(ref, tests_dir, workspace=None, policy=None):
    """What is known of a submission before anything of it runs, for validation, which
    must see every adversarial submission score 0 and need not run one whose 0 is
    certain: {"reward": ...} when a gate decided before the run fails it (`open_gated`,
    `Attempt.settled`), else {"tree": ...}, a digest of the tree the tests would run in
    (two submissions with the same digest are scored alike)."""
    attempt = open_gated(ref, tests_dir, workspace, policy)
    settled = attempt.settled()
    if settled is not None:
        return {"reward": settled}
    try:
        return {"tree": tree_digest(attempt.tree, attempt.hashes)}
    finally:
        attempt.close()


def score_repair(ref, tests_dir, workspace=None, policy=None):
    """Score the workspace (default ref['workspace']); see the module docstring."""
    attempt = open_gated(ref, tests_dir, workspace, policy)
    if attempt.refused:
        return attempt.not_run()
    tree, hidden = attempt.tree, attempt.hidden
    f2p, p2p = list(ref["fail_to_pass"]), list(ref["pass_to_pass"])
    attempt.write_hidden()
    canaries = add_canaries(tree, f2p)
    variants = plant(tree, ref.get("p2p_variants", []), random.SystemRandom())
    check_name, plan = "_rlforge_check_" + os.urandom(6).hex(), {}
    f2p_keys = {rel: keys for rel, keys in keys_by_file(f2p).items() if rel in hidden}
    p2p_lines = ref.get("p2p_checks", {})  # {pass-to-pass id: lines the fix passed}
    p2p_keys = keys_by_file(list(p2p_lines))
    held = keys_by_file(list(variants))  # held-back variants: their values stay here
    for rel in sorted(set(f2p_keys) | set(p2p_keys) | set(held)):
        path = os.path.join(tree, rel)
        if not (rel.endswith(".py") and regular_file(path)):
            continue
        kept = p2p_keys.get(rel, set()) - f2p_keys.get(rel, set())
        with open(path, "rb") as fh:
            text, found = externalize_checks(
                fh.read(), f2p_keys.get(rel, set()) | kept | held.get(rel, set()), check_name,
                start=len(plan), keep_assert=kept)
        if found:
            with open(path, "wb") as fh:
                fh.write(text)
            for i, item in found.items():
                if f"{rel}::{item['test']}" in variants:
                    item = held_back(item, variants[f"{rel}::{item['test']}"])
                    if item is None:
                        continue
                elif item["test"] in kept:  # a pass-to-pass test: the asserts the fix passed
                    only = [n for n, lines in p2p_lines.items() if n.split("::", 1)[0] == rel
                            and n.split("::", 1)[1].split("[", 1)[0] == item["test"]
                            and item["line"] in lines]
                    if not only:
                        continue
                    item = {**item, "only": only}
                plan[i] = {**item, "file": rel}
    try:
        run = run_tests(tree, ref["test_command"], f2p + p2p + canaries + list(variants),
                        per_test_timeout=ref["per_test_timeout"], collect_timeout=ref["collect_timeout"],
                        budget_sec=attempt.budget_left(ref["budget_sec"]),
                        pythonpath=ref.get("pythonpath", []),
                        env=ref.get("env"), policy=policy, check_name=check_name)
    finally:
        attempt.close()
    out, contradicted = apply_checks(run["outcomes"], run["checks"], plan)
    errors = run["collect_errors"]
    extra = "; a test hung" if run["hung"] else ""
    cut = run["budget_exhausted"] or run["collection_hang"]
    if cut:
        extra = "; the test run was cut off (time budget)"
    return attempt.score(
        run, out, canaries, why=contradicted, held_back=list(variants),
        collects=(not errors, f"test files failed to import: {ids_text(errors)}" if errors else
                  "every test file imports"),
        detail=f"{run['sessions']} session(s), {run['seconds']:.1f}s{extra}",
        reason="timeout" if cut else "")


def run_only(spec_path, out_path):
    """Build-time mode: run tests in a prepared tree and write the raw outcomes as JSON."""
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    result = run_tests(spec["tree"], spec["test_command"], spec.get("ids"),
                       paths=spec.get("paths"), per_test_timeout=spec["per_test_timeout"],
                       collect_timeout=spec["collect_timeout"], budget_sec=spec["budget_sec"],
                       pythonpath=spec.get("pythonpath", []), env=spec.get("env"),
                       check_name=spec.get("check_name"))
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, sort_keys=True)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--run-tests":
        return run_only(argv[1], argv[2])
    options = {"--logs": "/logs/verifier", "--python": None}
    for flag in options:
        if flag in argv:
            i = argv.index(flag)
            options[flag] = argv[i + 1]
            del argv[i:i + 2]
    def score_here(ref, tests_dir):
        policy = LocalPolicy(python=options["--python"])
        policy.require_apart()
        try:
            return score_repair(ref, tests_dir, policy=policy)
        finally:
            policy.sweep()

    return verifier_main(argv[0], options["--logs"], score_here)


if __name__ == "__main__":
    sys.exit(main())
