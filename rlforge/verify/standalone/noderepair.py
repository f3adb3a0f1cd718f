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
4. plant canaries in every test file the run uses (`jscanaries`: a test of the file copied
   beside itself, one literal changed in one of the two, drawn from a seed of the task)
   before the titles are made neutral, so they are numbered with the rest; run the
   fail-to-pass and pass-to-pass tests, the canaries and every other test of their files
   as policy code, asked for by their neutral names: the driver `noderun` (copied beside
   the tree, read-only) runs each test file in a process of its own (`run_tests`); the
   canaries are judged and the outcomes mapped back to the real names here;
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
canaries narrow that: their titles, ids, place and stack are a real test's, so code that
swallows failures must tell the real literal from the changed one. It can where it knows
the real one (a pass-to-pass test of a file the policy saw), and a file with no test
that compares with a literal in its own body gets no canary. Measured by a red team:
a submission wrapping node's `assert` so that failures are swallowed
unless the calling line holds the canaries' `require("node:assert")` hid 9 broken
pass-to-pass tests of a real mime-types task (it reported 46/46 and scored 1.0); one
sparing tests titled like the old canaries (`case N M`) scored 1.0 before and 0 now. So
the bound stands and JavaScript tasks are opt-in (`TestRunner.forgeable`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.noderepair
    from .jscanaries import judge, plant_files, task_seed
    from .jsasserts import apply_checks, externalize
    from .jstitles import neutral_ids, neutral_snapshots, neutralize, restore
    from .noderun import FRAMEWORKS, SCRIPT_SUFFIXES, is_test_file
    from .patch import remove_file, write_file
    from .policy_code import LocalPolicy, regular_file
    from .repairscore import entry_main, ids_text, open_attempt
    from .rewards import component, reward
else:  # tests/rlforge_noderepair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_jscanaries import judge, plant_files, task_seed
    from rlforge_jsasserts import apply_checks, externalize
    from rlforge_jstitles import neutral_ids, neutral_snapshots, neutralize, restore
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


def hide_literals(tree, hidden, fail_to_pass, files, seed):
    """Write the hidden tests over the tree with the checked asserts of the fail-to-pass
    tests sending their values, canaries planted in every test file of `files` (the run's:
    hidden or not, `jscanaries`, drawn from `seed`), every such file's titles neutral, its
    Jest or Vitest snapshots keyed by them, and every hidden script's comments gone
    (`jstitles`); (the plan ({index: check}) this
    process compares with, {file: {neutral test name: real name}}, [canary ids])."""
    wanted = {}
    for test_id in fail_to_pass:
        rel, _, test = test_id.partition("::")
        wanted.setdefault(rel, set()).add(test)
    name = "__rlforge_check_" + os.urandom(6).hex()
    plan, names, sources, canaries = {}, {}, {}, []
    for rel, data in sorted(hidden.items()):
        sources[rel], found = externalize(data, rel, wanted.get(rel, set()), name, start=len(plan))
        plan.update(found)
    for rel in sorted(set(files) - set(sources)):
        path = os.path.join(tree, rel)
        if rel.endswith(SCRIPT_SUFFIXES) and regular_file(path):
            with open(path, "rb") as fh:
                sources[rel] = fh.read()
    tests = {rel: text.decode("utf-8", "surrogateescape") for rel, text in sources.items()
             if rel in set(files) and is_test_file(rel)}
    planted, parens = plant_files(tests, seed, avoid=name)
    for rel, text in sorted(sources.items()):
        if rel.endswith(SCRIPT_SUFFIXES):
            text, names[rel], marked = neutralize(planted.get(rel, text), titles=is_test_file(rel),
                                                  canaries=set(parens.get(rel, ())))
            canaries += [f"{rel}::{n}" for n in marked]
        write_file(tree, rel, text)
    for rel, renamed in sorted(names.items()):  # after every hidden file is written
        snap = os.path.join(os.path.dirname(rel), "__snapshots__", os.path.basename(rel) + ".snap")
        if renamed and regular_file(os.path.join(tree, snap)):
            with open(os.path.join(tree, snap), "rb") as fh:
                keyed = neutral_snapshots(fh.read().decode("utf-8", "surrogateescape"), renamed)
            write_file(tree, snap, keyed.encode("utf-8", "surrogateescape"))
    return plan, names, canaries


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
                "env_vars": ref.get("env") or {}}
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
        for rel in ref.get("hidden_deleted", []):
            remove_file(attempt.tree, rel)
        ids = f2p + list(ref["pass_to_pass"])
        seed = task_seed(ids, {rel: data.hex() for rel, data in sorted(attempt.hidden.items())})
        files = sorted({i.split("::", 1)[0] for i in ids})
        plan, names, planted = hide_literals(attempt.tree, attempt.hidden, f2p, files, seed)
        left = {**ref, "budget_sec": attempt.budget_left(ref["budget_sec"])}
        # every test of the files run is asked for: which were wanted says nothing of
        # which test is a canary (a canary's twin may be a test nobody wants)
        asked = {f"{rel}::{n}" for rel, renamed in names.items() if rel in files for n in renamed}
        run, ran = run_driver(left, attempt.tree, sorted({*neutral_ids(ids, names), *asked, *planted}),
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
    real, canaries, forged = judge(run["outcomes"], planted)
    out, contradicted = apply_checks(restore(real, names), sent, plan)
    errors = [str(e) for e in run.get("collect_errors") or []]
    return attempt.score(
        run, {**out, **canaries}, list(canaries), why=contradicted, canaries_required=True,
        forged=forged,
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
