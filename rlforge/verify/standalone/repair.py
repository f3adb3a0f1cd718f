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
4. write the hidden test changes over the tree, plant canary tests that must fail (placed
   among the real tests, named like them: `canaries`), rewrite the literal asserts of the
   fail-to-pass tests so their values come out and their literals stay here (`asserts`),
   and run the fail-to-pass and every pass-to-pass test as policy code (`testrun`).
   Reports come back over a FIFO, first report of each test wins, so nothing the tests do
   after a test ended can change its outcome; a test running longer than the per-test
   timeout is killed and counted as failed, and the others run again without it;
5. score: `fail_to_pass` (coarse, the fraction passing: reported passed, and every checked
   assert ran and holds), `pass_to_pass` (coarse, gate: all
   still pass), `collects` (medium, gate: no test file failed to import),
   `results_trusted` (medium, gate: every canary failed, so no code forged results).

`--run-tests SPEC OUT` is the build's mode: run tests in a prepared tree, write the raw
outcomes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.repair
    from .asserts import apply_checks, externalize_checks, keys_by_file
    from .canaries import add_canaries
    from .entry import verifier_main
    from .patch import apply_patch, remove_file, write_file
    from .policy_code import LocalPolicy, regular_file
    from .protect import (SUBMISSION_PATCH, copy_workspace, installed_modules, shadow_modules,
                          touched_protected, tree_hashes)
    from .rewards import component, reward
    from .testrun import environment_site_dirs, run_tests
else:  # tests/rlforge_repair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_asserts import apply_checks, externalize_checks, keys_by_file
    from rlforge_canaries import add_canaries
    from rlforge_entry import verifier_main
    from rlforge_patch import apply_patch, remove_file, write_file
    from rlforge_policy_code import LocalPolicy, regular_file
    from rlforge_protect import (SUBMISSION_PATCH, copy_workspace, installed_modules, shadow_modules,
                                 touched_protected, tree_hashes)
    from rlforge_rewards import component, reward
    from rlforge_testrun import environment_site_dirs, run_tests


def _load_hidden(ref, tests_dir):
    hidden = {}
    root = os.path.join(tests_dir, ref.get("hidden_dir", "hidden"))
    for rel in ref.get("hidden_files", []):
        with open(os.path.join(root, rel), "rb") as fh:
            hidden[rel] = fh.read()
    return hidden


def _ids(ids, limit=5):
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def score_repair(ref, tests_dir, workspace=None, policy=None):
    """Score the workspace (default ref['workspace']); see the module docstring."""
    hidden = _load_hidden(ref, tests_dir)  # everything trusted is read before code runs
    f2p, p2p = list(ref["fail_to_pass"]), list(ref["pass_to_pass"])
    comps = {}
    scratch = tempfile.mkdtemp(prefix="rlforge-tree-")
    tree = os.path.join(scratch, "app")
    os.mkdir(tree)
    ws = workspace or ref["workspace"]
    roots = [""] + list(ref.get("pythonpath", []))
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
    comps["patch_applies"] = component(applied, 0, "medium", gate=True, detail=detail)
    touched = []
    if applied:
        touched = touched_protected(tree, ref["protected"], ref["base_protected"])
        now = sorted(tree_hashes(tree))
        policy = policy or LocalPolicy()
        touched += shadow_modules(now, roots, set(ref.get("base_modules", [])),
                                  installed_modules(environment_site_dirs(policy, ref["test_command"])))
        touched = sorted(set(touched))
    comps["tests_untouched"] = component(
        not touched, 0, "fine", gate=True,
        detail=f"test or runner files changed: {_ids(touched)}" if touched else "no test file changed")
    if not applied or touched:
        comps["fail_to_pass"] = component(0, 1.0, "coarse", detail="not run")
        comps["pass_to_pass"] = component(0, 0, "coarse", gate=True, detail="not run")
        shutil.rmtree(scratch, ignore_errors=True)
        return reward(comps, detail="the submission was not run",
                      reason="patch_does_not_apply" if not applied else "tests_touched")
    for rel, data in hidden.items():
        write_file(tree, rel, data)
    for rel in ref.get("hidden_deleted", []):
        remove_file(tree, rel)
    canaries = add_canaries(tree, f2p)
    check_name, plan = "_rlforge_check_" + os.urandom(6).hex(), {}
    f2p_keys = {rel: keys for rel, keys in keys_by_file(f2p).items() if rel in hidden}
    p2p_lines = ref.get("p2p_checks", {})  # {pass-to-pass id: lines the fix passed}
    p2p_keys = keys_by_file(list(p2p_lines))
    for rel in sorted(set(f2p_keys) | set(p2p_keys)):
        path = os.path.join(tree, rel)
        if not (rel.endswith(".py") and regular_file(path)):
            continue
        kept = p2p_keys.get(rel, set()) - f2p_keys.get(rel, set())
        with open(path, "rb") as fh:
            text, found = externalize_checks(fh.read(), f2p_keys.get(rel, set()) | kept, check_name,
                                             start=len(plan), keep_assert=kept)
        if found:
            with open(path, "wb") as fh:
                fh.write(text)
            for i, item in found.items():
                if item["test"] in kept:  # a pass-to-pass test: the asserts the fix passed
                    only = [n for n, lines in p2p_lines.items() if n.split("::", 1)[0] == rel
                            and n.split("::", 1)[1].split("[", 1)[0] == item["test"]
                            and item["line"] in lines]
                    if not only:
                        continue
                    item = {**item, "only": only}
                plan[i] = {**item, "file": rel}
    try:
        run = run_tests(tree, ref["test_command"], f2p + p2p + canaries,
                        per_test_timeout=ref["per_test_timeout"], collect_timeout=ref["collect_timeout"],
                        budget_sec=ref["budget_sec"], pythonpath=ref.get("pythonpath", []),
                        env=ref.get("env"), policy=policy, check_name=check_name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out, contradicted = apply_checks(run["outcomes"], run["checks"], plan)
    f2p_ok = [t for t in f2p if out.get(t) == "passed"]
    f2p_bad = [f"{t} ({contradicted.get(t) or out.get(t)})" for t in f2p if out.get(t) != "passed"]
    comps["fail_to_pass"] = component(
        len(f2p_ok) / len(f2p) if f2p else 0, 1.0, "coarse",
        detail=f"{len(f2p_ok)}/{len(f2p)} pass" + (f"; failing: {_ids(f2p_bad)}" if f2p_bad else ""))
    p2p_bad = [f"{t} ({out.get(t)})" for t in p2p if out.get(t) != "passed"]
    comps["pass_to_pass"] = component(
        not p2p_bad, 0, "coarse", gate=True,
        detail=f"{len(p2p) - len(p2p_bad)}/{len(p2p)} still pass"
        + (f"; broken: {_ids(p2p_bad)}" if p2p_bad else ""))
    errors = run["collect_errors"]
    comps["collects"] = component(
        not errors, 0, "medium", gate=True,
        detail=f"test files failed to import: {_ids(errors)}" if errors else "every test file imports")
    if canaries:
        wrong = [c for c in canaries if out.get(c) != "failed"]
        comps["results_trusted"] = component(
            not wrong, 0, "medium", gate=True,
            detail="every canary test failed, as it must" if not wrong else
            f"{len(wrong)} of {len(canaries)} canary tests, which must fail, were reported "
            f"{', '.join(sorted({str(out.get(c)) for c in wrong}))}: the results cannot be trusted")
    extra = "; a test hung" if run["hung"] else ""
    if run["budget_exhausted"] or run["collection_hang"]:
        extra = "; the test run was cut off (time budget)"
    failed = [name for name, c in comps.items() if c["gate"] and c["value"] < 1]
    reason = ("timeout" if run["budget_exhausted"] or run["collection_hang"] else
              {"results_trusted": "forged_results", "collects": "collection_error",
               "pass_to_pass": "pass_to_pass_broken"}.get(failed[0], failed[0]) if failed else
              "tests_fail")
    return reward(comps, detail=f"{run['sessions']} session(s), {run['seconds']:.1f}s{extra}",
                  reason=reason)


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
