"""The entry of JavaScript/TypeScript code-repair tasks: `tests/rlforge_noderepair.py`.

    python3 -I rlforge_noderepair.py /tests/reference.json [--logs /logs/verifier]

The steps and components of `repair` (Python), with node's test frameworks (`noderun`)
and checked asserts in JavaScript (`jsasserts`):

1. copy the workspace into a private tree; apply `.rlforge/submission.diff` if present
   (`patch_applies`, medium gate);
2. `tests_untouched` (fine, gate): no test file, `node_modules`, `package.json`, lockfile,
   framework, Babel or TypeScript configuration differs from the starting workspace;
   nothing runs otherwise (a reporter plug-in, a setup file or an npm script the policy
   adds never runs);
3. write the hidden test changes over the tree and rewrite the checked asserts of the
   fail-to-pass tests: each sends its value out, its literal stays here (`externalize`);
   every title of a hidden test file is made neutral (`case 7`) and every comment of a
   hidden script removed (`jstitles`), the map back to the real test names kept here;
4. run the fail-to-pass and pass-to-pass tests as policy code, asked for by their neutral
   names: the driver `noderun` (copied beside the tree, read-only) runs each test file in
   a process of its own with canary tests appended (`run_tests`); its outcomes are mapped
   back to the real names here;
5. score here, in this process, with the hidden literals: `fail_to_pass` (coarse, the
   fraction passing: reported passed *and* every checked assert ran and every value it
   sent holds), `pass_to_pass` (coarse, gate), `collects` (medium, gate),
   `results_trusted` (medium, gate: every canary failed, no file's results forged).

What holds: a fail-to-pass test counts only through a value the tested code computed and
this process compared with a literal the code never saw (`jsasserts`): the build counts
no test whose literal's text (3 or more characters, any case; each such string of an
array or object literal too) is anywhere else in the test code the sandbox can read,
nor one whose file loads a helper that judges (`runners.javascript.literal_elsewhere`,
`runners.js_modules`). A value a hidden file's titles or comments imply without
spelling it (`rock and roll` of `'rock-roll'`) cannot be read at scoring: the sandbox
gets neither (`jstitles`); a value the code of the test implies otherwise (a variable's
name, a title the framework computes, such as `test.each`'s) is not seen. What does not: the
driver, the frameworks and the tested code share a uid inside the sandbox, so the code
can rewrite the driver's results (outcomes, canaries); a forger gains nothing on a
fail-to-pass test from that without the value its hidden assert expects, but a
pass-to-pass test's outcome (a gate) is as forgeable as the framework's report. The
canaries do not close that: code that reads its caller's line (or the test's name, or
its place after the file's own tests) can tell a canary from a real assert and swallow
only the real failures. Measured by a red team (s49, D1/E2): a submission wrapping node's
`assert` so that failures are swallowed unless the calling line holds the canaries'
`require("node:assert")` hid 9 broken pass-to-pass tests of a real mime-types task (it
reported 46/46 and scored 1.0). Giving canaries the text of a real assert would only move
the tell (their place in the file, their values), so the bound stands and JavaScript
tasks are opt-in (`TestRunner.forgeable`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.noderepair
    from .jsasserts import apply_checks, externalize
    from .jstitles import neutral_ids, neutralize, restore
    from .noderun import FRAMEWORKS, SCRIPT_SUFFIXES, is_test_file
    from .patch import remove_file, write_file
    from .policy_code import LocalPolicy, regular_file
    from .repairscore import entry_main, ids_text, open_attempt
    from .rewards import component, reward
else:  # tests/rlforge_noderepair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_jsasserts import apply_checks, externalize
    from rlforge_jstitles import neutral_ids, neutralize, restore
    from rlforge_noderun import FRAMEWORKS, SCRIPT_SUFFIXES, is_test_file
    from rlforge_patch import remove_file, write_file
    from rlforge_policy_code import LocalPolicy, regular_file
    from rlforge_repairscore import entry_main, ids_text, open_attempt
    from rlforge_rewards import component, reward

#: the modules the driver needs in the sandbox (`noderun` and what it imports)
DRIVER = ("noderun", "jsasserts", "jsvalues", "policy_code", "siblings")
ENV_DIR = "/opt/venv"  # where the prepared node_modules environment is mounted
SYSTEM_PYTHON = "/usr/bin/python3"
RESULT_LIMIT = 100 * 1024 * 1024


def hide_literals(tree, hidden, fail_to_pass):
    """Write the hidden tests over the tree with the checked asserts of the fail-to-pass
    tests sending their values, every hidden test file's titles neutral and every hidden
    script's comments gone (`jstitles`); (the plan ({index: check}) this process compares with, {file:
    {neutral test name: real name}})."""
    wanted = {}
    for test_id in fail_to_pass:
        rel, _, test = test_id.partition("::")
        wanted.setdefault(rel, set()).add(test)
    name = "__rlforge_check_" + os.urandom(6).hex()
    plan, names = {}, {}
    for rel, data in sorted(hidden.items()):
        text, found = externalize(data, rel, wanted.get(rel, set()), name, start=len(plan))
        if rel.endswith(SCRIPT_SUFFIXES):
            text, names[rel] = neutralize(text, titles=is_test_file(rel))
        write_file(tree, rel, text)
        plan.update(found)
    return plan, names


def _driver_files(here):
    """{copied name: source} of the driver's modules, from this verifier's own copies."""
    out = {}
    for module in DRIVER:
        copied = os.path.join(here, f"rlforge_{module}.py")
        source = copied if os.path.isfile(copied) else os.path.join(here, f"{module}.py")
        with open(source, "rb") as fh:
            out[f"rlforge_{module}.py"] = fh.read()
    return out


def environment_of(policy, ref):
    """Where the tests find the prepared node_modules environment, as the code sees it."""
    fields = getattr(policy, "fields", None)
    if isinstance(fields, dict) and fields.get("venv"):
        return str(fields["venv"]) if getattr(policy, "mode", "") == "none" else ENV_DIR
    return ref.get("node_env", ENV_DIR)


def run_driver(ref, tree, ids, policy):
    """Run `ids` of the tree (canaries planted) through `noderun` as policy code; its
    result dict, or None when it gave none (the policy's fail: its code ran)."""
    if ref.get("framework") not in FRAMEWORKS:
        raise ValueError(f"reference.json: framework must be one of {', '.join(FRAMEWORKS)}")
    drv = tempfile.mkdtemp(prefix="rlforge-noderun-")
    out_dir = os.path.join(tree, f".rlforge-{os.urandom(8).hex()}")
    os.mkdir(out_dir)
    try:
        inside, places = policy.places(tree, {"drv": drv})
        spec = {"tree": inside, "framework": ref["framework"], "env": environment_of(policy, ref),
                "ids": ids, "paths": None, "per_test_timeout": ref["per_test_timeout"],
                "collect_timeout": ref["collect_timeout"], "budget_sec": ref["budget_sec"],
                "env_vars": ref.get("env") or {}, "canaries": True}
        for name, data in {**_driver_files(os.path.dirname(os.path.abspath(__file__))),
                           "run.json": json.dumps(spec).encode()}.items():
            with open(os.path.join(drv, name), "wb") as fh:
                fh.write(data)
        python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else "python3"
        out = f"{inside}/{os.path.basename(out_dir)}/results.json"
        ran = policy.run([python, "-I", f"{places['drv']}/rlforge_noderun.py", f"{places['drv']}/run.json",
                          out], tree, {"drv": drv}, timeout=float(ref["budget_sec"]) + 60)
        path = os.path.join(out_dir, "results.json")
        if not regular_file(path) or os.path.getsize(path) > RESULT_LIMIT:
            return None, ran
        with open(path, encoding="utf-8", errors="replace") as fh:
            result = json.load(fh)
        return (result if isinstance(result, dict) and isinstance(result.get("outcomes"), dict)
                else None), ran
    except (ValueError, RecursionError):
        return None, None
    finally:
        shutil.rmtree(drv, ignore_errors=True)


def score_js_repair(ref, tests_dir, workspace=None, policy=None):
    """Score the workspace (default ref['workspace']); see the module docstring."""
    f2p = list(ref["fail_to_pass"])
    attempt = open_attempt(ref, tests_dir, workspace)
    try:
        attempt.untouched()
        if attempt.refused:
            return attempt.not_run()
        plan, names = hide_literals(attempt.tree, attempt.hidden, f2p)
        for rel in ref.get("hidden_deleted", []):
            remove_file(attempt.tree, rel)
        left = {**ref, "budget_sec": attempt.budget_left(ref["budget_sec"])}
        run, ran = run_driver(left, attempt.tree, neutral_ids(f2p + list(ref["pass_to_pass"]), names),
                              policy or LocalPolicy())
    finally:
        attempt.close()
    if run is None:
        why = f" ({ran.reason or 'exit 0'})" if ran is not None else ""
        attempt.comps["fail_to_pass"] = component(0, 1.0, "coarse",
                                                  detail="the test run gave no results" + why)
        attempt.comps["pass_to_pass"] = component(0, 0, "coarse", gate=True, detail="no results")
        return reward(attempt.comps, detail="the test run gave no results", reason="no_results")
    sent = run.get("checks") if isinstance(run.get("checks"), dict) else {}
    out, contradicted = apply_checks(restore(run["outcomes"], names), sent, plan)
    errors = [str(e) for e in run.get("collect_errors") or []]
    canaries = run.get("canaries") if isinstance(run.get("canaries"), dict) else {}
    return attempt.score(
        run, {**out, **canaries}, list(canaries), why=contradicted, canaries_required=True,
        forged=[str(f) for f in run.get("forged") or []],
        collects=(not errors, f"test files failed to load: {ids_text(errors)}" if errors
                  else "every test file loads"),
        detail=f"{run.get('sessions', 0)} test process(es), {float(run.get('seconds') or 0):.1f}s"
        + ("; a test hung" if run.get("hung") else ""),
        reason="timeout" if run.get("budget_exhausted") or run.get("collection_hang") else "")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    return entry_main(argv, score_js_repair)


if __name__ == "__main__":
    sys.exit(main())
