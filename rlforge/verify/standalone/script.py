"""A program the policy wrote, run as policy code on the visible logs and each held-back variant."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.script
    from .answers import score_answer
    from .policy_code import LocalPolicy, copy_tree_bounded, regular_file
    from .rewards import component, reward
else:  # tests/rlforge_script.py: its siblings by their copied names
    from rlforge_answers import score_answer
    from rlforge_policy_code import LocalPolicy, copy_tree_bounded, regular_file
    from rlforge_rewards import component, reward


def score_script(ref, tests_dir, workspace=None, policy=None):
    """Run the policy's program on the visible logs and on each held-back variant.

    Each case runs in a fresh launch of its own, on a private copy of the workspace, with
    only that case's data (a held-back window is a read-only data directory); its answer
    is the last line it printed on its stdout, compared here.
    """
    ws = workspace or ref["workspace"]
    policy = policy or LocalPolicy()
    program = next((name for name in ref["programs"] if regular_file(os.path.join(ws, name))), None)
    comps = {}
    if program is None:
        comps["runs"] = component(0, 0, "medium", gate=True,
                                  detail="no " + " or ".join(ref["programs"]) + " in the workspace")
        comps["correct"] = component(0)
        return reward(comps, detail="no program", reason="no_program")
    ran_ok, right, details, per_case, reasons = 0, 0, [], [], []
    # Every case's copy and run come out of one budget, less than the verifier's timeout:
    # a workspace made slow to copy shortens the runs (the policy's fail), and never
    # pushes scoring past the timeout, where Harbor records no reward at all.
    started, budget = time.monotonic(), float(ref.get("budget_sec", 90))

    def spent(case):
        """Whether the budget is spent (under a second left): the case is then not run."""
        if budget - (time.monotonic() - started) >= 1:
            return False
        reasons.append("timeout")
        per_case.append(False)
        details.append(f"{case['name']}: not run, the verifier's time budget was spent")
        return True

    scratch = tempfile.mkdtemp(prefix="rlforge-cases-")
    try:
        for i, case in enumerate(ref["cases"]):
            if spent(case):
                continue
            root = os.path.join(scratch, f"case{i}")
            os.mkdir(root)
            tree = os.path.join(root, "app")
            try:
                copy_tree_bounded(ws, tree)
            except OSError as exc:
                comps["runs"] = component(0, 0, "medium", gate=True, detail=str(exc))
                comps["correct"] = component(0)
                return reward(comps, detail="the workspace could not be copied",
                              reason="submission_too_large")
            data = {}
            if case.get("data_dir"):
                data["data"] = os.path.join(root, "data")
                copy_tree_bounded(os.path.join(tests_dir, case["data_dir"]), data["data"])
            inside, places = policy.places(tree, data)
            if data:
                target = places["data"]
            else:  # a path in the workspace, e.g. /app/logs
                rel = os.path.relpath(case["path"], ref.get("workspace", "/app"))
                target = inside if rel == "." else inside.rstrip("/") + "/" + rel
            path = inside.rstrip("/") + "/" + program
            argv = ([policy.python if hasattr(policy, "python") else "python3", path, target]
                    if program.endswith(".py") else ["bash", path, target])
            if spent(case):  # again after the copies, the slow part a policy controls
                continue
            left = budget - (time.monotonic() - started)
            ran = policy.run(argv, tree, data, timeout=min(float(ref.get("timeout_sec", 30)), left))
            if ran.code == 0:
                ran_ok += 1
            elif ran.reason:
                reasons.append(ran.reason)
            lines = [line for line in ran.stdout.splitlines() if line.strip()]
            answer = lines[-1] if lines else ""
            scored = score_answer(case["answer"], answer)
            is_right = ran.code == 0 and scored["components"]["correct"]["value"] >= 1.0
            right += is_right
            per_case.append(is_right)
            said = [line for line in ran.stderr.splitlines() if line.strip()]
            why = f" ({said[-1].strip()[:120]})" if ran.code != 0 and said else ""
            details.append(f"{case['name']}: {ran.reason or 'exit 0'}{why}, answer {answer[:60]!r}, "
                           f"{'right' if is_right else 'wrong'}")
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    n = len(ref["cases"])
    comps["runs"] = component(1 if ran_ok == n else 0, 0, "medium", gate=True,
                              detail=f"{ran_ok}/{n} runs exited 0")
    comps["correct"] = component(1 if right == n else 0, 1.0, "coarse",
                                 detail="; ".join(details))
    comps["correct_on_visible"] = component(1 if per_case and per_case[0] else 0, 0, "fine",
                                            detail="informational: the visible case alone")
    reason = reasons[0] if reasons else ("" if right == n else "wrong_answer")
    return reward(comps, reason=reason)
