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
   (`plant_canaries`, named with words of the file's test names, at random places among
   them), compile, delete every `_test.go` source from the tree (the binaries hold them),
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
import re
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.gorepair
    from .entry import verifier_main
    from .goreach import beyond
    from .gotest import TEST_FUNC, package_of, run_go_tests
    from .patch import apply_patch, remove_file, write_file
    from .policy_code import LocalPolicy, regular_file
    from .protect import SUBMISSION_PATCH, copy_workspace, touched_protected
    from .rewards import component, reward
else:  # tests/rlforge_gorepair.py, run as python3 -I: its siblings from their source beside it
    import runpy

    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rlforge_siblings.py"))["install"](__file__)
    from rlforge_entry import verifier_main
    from rlforge_goreach import beyond
    from rlforge_gotest import TEST_FUNC, package_of, run_go_tests
    from rlforge_patch import apply_patch, remove_file, write_file
    from rlforge_policy_code import LocalPolicy, regular_file
    from rlforge_protect import SUBMISSION_PATCH, copy_workspace, touched_protected
    from rlforge_rewards import component, reward

CANARIES = 3
CANARY_BODY = """func {name}(t *testing.T) {{
\t{var} := {value}
\tif {var} != {other} {{
\t\tt.Fatalf("{var} = %v, want %v", {var}, {other})
\t}}
}}

"""


def declaration_starts(text):
    """Offsets of the lines of Go source that begin a top-level `func` declaration: outside
    any string, rune literal or comment and any brace (a `func` line inside a raw string
    is test data, and a canary put there would never run)."""
    out, depth, i, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c == "`":
            end = text.find("`", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and (i == 0 or text[i - 1] == "\n") and re.match(r"func\s", text[i:i + 5]):
            out.append(i)
        i += 1
    return out


def _words(names):
    out = set()
    for name in names:
        out.update(w for w in re.findall(r"[A-Z][a-z0-9]+|[A-Z]+(?![a-z])", name[4:]) if w)
    return sorted(out) or ["Value", "Result", "Case", "Parse", "Input", "Output"]


def plant_canaries(tree, fail_to_pass, count=CANARIES, rng=None):
    """Plant `count` failing tests among the tests of the fail-to-pass test files (those that
    import "testing" by that name), each before a random test function of its file (or at
    its end) and named with words of the package's test names; their ids (empty when no
    file fits)."""
    rng = rng or random.SystemRandom()
    files = []
    for rel in sorted({i.split("::", 1)[0] for i in fail_to_pass}):
        path = os.path.join(tree, rel)
        if rel.endswith("_test.go") and regular_file(path):
            with open(path, "rb") as fh:
                if re.search(rb'^\s*(import\s+)?"testing"\s*$', fh.read(), re.M):
                    files.append(rel)
    taken = set()
    for rel in files:
        pkg = os.path.join(tree, package_of(rel + "::"))
        for name in os.listdir(pkg):
            if name.endswith(".go") and regular_file(os.path.join(pkg, name)):
                with open(os.path.join(pkg, name), "rb") as fh:
                    taken.update(m.decode() for m in re.findall(rb"^func\s+(\w+)", fh.read(), re.M))
    ids = []
    for _ in range(count if files else 0):
        rel = rng.choice(files)
        path = os.path.join(tree, rel)
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "surrogateescape")
        words = _words([m.decode() for m in TEST_FUNC.findall(text.encode("utf-8", "surrogateescape"))])
        for _attempt in range(50):
            name = "Test" + "".join(rng.sample(words, min(len(words), rng.choice((1, 2, 2, 3)))))
            if name not in taken:
                break
        else:
            name = "Test" + rng.choice(words) + str(rng.randrange(2, 99))
        taken.add(name)
        value = rng.randrange(2, 10_000)
        source = CANARY_BODY.format(name=name, var=rng.choice(("got", "want", "n", "size", "count")),
                                    value=value, other=value + rng.randrange(1, 1000))
        starts = declaration_starts(text)
        at = rng.choice(starts + [len(text)])
        if at == len(text):
            source = ("\n" if text.endswith("\n") else "\n\n") + source.rstrip("\n") + "\n"
        text = text[:at] + source + text[at:]
        with open(path, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogateescape"))
        ids.append(f"{rel}::{name}")
    return ids


def _ids(ids, limit=5):
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def score_go_repair(ref, tests_dir, workspace=None, policy=None):
    """Score the workspace (default ref['workspace']); see the module docstring."""
    hidden = {}
    root = os.path.join(tests_dir, ref.get("hidden_dir", "hidden"))
    for rel in ref.get("hidden_files", []):  # everything trusted is read before code runs
        with open(os.path.join(root, rel), "rb") as fh:
            hidden[rel] = fh.read()
    f2p, p2p = list(ref["fail_to_pass"]), list(ref["pass_to_pass"])
    comps = {}
    scratch = tempfile.mkdtemp(prefix="rlforge-tree-")
    tree = os.path.join(scratch, "app")
    os.mkdir(tree)
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
    comps["patch_applies"] = component(applied, 0, "medium", gate=True, detail=detail)
    touched = touched_protected(tree, ref["protected"], ref["base_protected"]) if applied else []
    comps["tests_untouched"] = component(
        not touched, 0, "fine", gate=True,
        detail=f"test or module files changed: {_ids(touched)}" if touched else "no test file changed")
    reached = beyond(tree, ref.get("go_reach", {})) if applied and not touched else []
    if applied and not touched:
        comps["harness_untouched"] = component(
            not reached, 0, "fine", gate=True,
            detail=f"the code reaches what the test harness owns: {_ids(reached)}" if reached else
            "the code reaches nothing of the test harness the parent's code did not")
    if not applied or touched or reached:
        comps["fail_to_pass"] = component(0, 1.0, "coarse", detail="not run")
        comps["pass_to_pass"] = component(0, 0, "coarse", gate=True, detail="not run")
        shutil.rmtree(scratch, ignore_errors=True)
        return reward(comps, detail="the submission was not run",
                      reason="patch_does_not_apply" if not applied else
                      "tests_touched" if touched else "forging_code")
    for rel, data in hidden.items():
        write_file(tree, rel, data)
    for rel in ref.get("hidden_deleted", []):
        remove_file(tree, rel)
    canaries = plant_canaries(tree, f2p)
    try:
        run = run_go_tests(tree, f2p + p2p + canaries, per_test_timeout=ref["per_test_timeout"],
                           budget_sec=ref["budget_sec"], env=ref.get("env"),
                           policy=policy or LocalPolicy(), hide_sources=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = run["outcomes"]
    f2p_ok = [t for t in f2p if out.get(t) == "passed"]
    f2p_bad = [f"{t} ({out.get(t)})" for t in f2p if out.get(t) != "passed"]
    comps["fail_to_pass"] = component(  # all or nothing: see the module docstring
        bool(f2p) and not f2p_bad, 1.0, "coarse",
        detail=f"{len(f2p_ok)}/{len(f2p)} pass" + (f"; failing: {_ids(f2p_bad)}" if f2p_bad else ""))
    p2p_bad = [f"{t} ({out.get(t)})" for t in p2p if out.get(t) != "passed"]
    comps["pass_to_pass"] = component(
        not p2p_bad, 0, "coarse", gate=True,
        detail=f"{len(p2p) - len(p2p_bad)}/{len(p2p)} still pass"
        + (f"; broken: {_ids(p2p_bad)}" if p2p_bad else ""))
    errors, too_large = run["collect_errors"], run.get("too_large", [])
    comps["collects"] = component(
        not errors and not too_large, 0, "medium", gate=True,
        detail=f"packages failed to build: {_ids(errors)}" if errors else
        f"test binaries too large to run: {_ids(too_large)}" if too_large else "every package builds")
    wrong = [c for c in canaries if out.get(c) != "failed"]
    comps["results_trusted"] = component(
        bool(canaries) and not wrong, 0, "medium", gate=True,
        detail="every canary test failed, as it must" if canaries and not wrong else
        "no canary could be planted" if not canaries else
        f"{len(wrong)} of {len(canaries)} canary tests, which must fail, were reported "
        f"{', '.join(sorted({str(out.get(c)) for c in wrong}))}: the results cannot be trusted")
    failed = [name for name, c in comps.items() if c["gate"] and c["value"] < 1]
    reason = ("timeout" if run["budget_exhausted"] else "test_binary_too_large" if too_large else
              {"results_trusted": "forged_results", "collects": "collection_error",
               "pass_to_pass": "pass_to_pass_broken"}.get(failed[0], failed[0]) if failed else
              "tests_fail")
    return reward(comps, detail=f"{run['sessions']} test process(es), {run['seconds']:.1f}s"
                  + ("; a test hung" if run["hung"] else ""), reason=reason)


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
    logs = "/logs/verifier"
    if "--logs" in argv:
        i = argv.index("--logs")
        logs = argv[i + 1]
        del argv[i:i + 2]

    def score_here(ref, tests_dir):
        policy = LocalPolicy()
        policy.require_apart()
        try:
            return score_go_repair(ref, tests_dir, policy=policy)
        finally:
            policy.sweep()

    return verifier_main(argv[0], logs, score_here)


if __name__ == "__main__":
    sys.exit(main())
