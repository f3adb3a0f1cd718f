"""A verifier's reward: named components, a total, an outcome, and the files Harbor reads.

A reward has named components, each a value in [0, 1] with a weight and a level (coarse:
the result is right; medium: valid format / it runs; fine: process constraints). A
component marked as a gate must be 1, or the total is 0. Otherwise the total is the
weighted mean of the non-gate components. A failing reward names its `reason`. The result
is written as Harbor reads it, reward.json (a flat map of numbers: `reward`, the total, and
one number per component) and reward.txt (the total), in full to rlforge_result.json beside
them, and printed on stdout as one line starting with `RLFORGE_REWARD `.
"""

from __future__ import annotations

import json
import os
import tempfile

REWARD_PREFIX = "RLFORGE_REWARD "


def component(value, weight=1.0, level="coarse", gate=False, detail=""):
    """One named reward component."""
    value = max(0.0, min(1.0, float(value)))
    return {"value": value, "weight": float(weight), "level": level, "gate": bool(gate),
            "detail": detail}


def total_of(components):
    """0 if any gate is not fully met, else the weighted mean of the other components."""
    if any(c["gate"] and c["value"] < 1.0 for c in components.values()):
        return 0.0
    scored = [c for c in components.values() if not c["gate"] and c["weight"] > 0]
    if not scored:
        return 1.0
    return sum(c["value"] * c["weight"] for c in scored) / sum(c["weight"] for c in scored)


def reward(components, pass_threshold=1.0, detail="", reason=""):
    """The result: components, total, outcome and, for a fail, a typed `reason` (why the
    policy's submission failed: e.g. `wrong_answer`, `crash`, `timeout`, `signal`)."""
    total = round(total_of(components), 6)
    passed = total >= pass_threshold - 1e-9
    out = {"components": components, "total": total, "outcome": "pass" if passed else "fail",
           "detail": detail}
    if not passed:
        out["reason"] = reason or "wrong_answer"
    return out


def unscorable_reward(detail):
    """The fail of a submission whose scoring raised (a disk the policy's code filled, a
    file it left that nothing can read): once the policy's work is in, a reward is always
    written, and an error on it is the policy's, never a missing reward."""
    return reward({"scorable": component(0, 0, "medium", gate=True, detail=detail)},
                  detail="the submission could not be scored", reason="unscorable")


RESULT_NAME = "rlforge_result.json"  # the detailed result, beside Harbor's reward files


def flat_reward(result):
    """Harbor's reward.json: a flat map of numbers, `reward` the total and one number per
    component (a component named `reward` is written as `component_reward`)."""
    flat = {"reward": result["total"]}
    for name, c in sorted(result.get("components", {}).items()):
        flat["component_reward" if name == "reward" else name] = c["value"]
    return flat


REWARD_NAMES = ("reward.txt", "reward.json", RESULT_NAME)


def _set_aside(target):
    """Move a directory standing at `target` out of the way (a rename: any depth), then
    delete it bottom-up without recursion, ignoring what cannot be deleted."""
    if not os.path.isdir(target) or os.path.islink(target):
        return
    aside = tempfile.mkdtemp(prefix=".aside-", dir=os.path.dirname(target))
    os.rename(target, os.path.join(aside, "x"))
    stack = [aside]  # depth-first with a list, not the call stack
    try:
        while stack:
            top = stack[-1]
            subdirs = []
            with os.scandir(top) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(entry.path)
                    else:
                        os.unlink(entry.path)
            if subdirs:
                stack.extend(subdirs)
            else:
                os.rmdir(stack.pop())
    except OSError:
        pass


def claim_logs(logs_dir):
    """Before policy code runs: the reward directory is root's alone (when the verifier is
    root) and nothing stands at the reward names, so no file another process put there
    can be read as the reward."""
    os.makedirs(logs_dir, exist_ok=True)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chown(logs_dir, 0, 0)
        os.chmod(logs_dir, 0o755)
    for name in REWARD_NAMES:
        target = os.path.join(logs_dir, name)
        _set_aside(target)
        if os.path.lexists(target):
            os.unlink(target)


def write_reward(result, logs_dir):
    """Write reward.txt (the total), reward.json (Harbor's flat map) and rlforge_result.json
    (components with weights, levels, gates and details; outcome and reason), in that
    order, replacing whatever stands at those names (a directory of any depth, a link, a
    file another process wrote) through a private temporary file."""
    os.makedirs(logs_dir, exist_ok=True)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chmod(logs_dir, 0o755)
    for name, text in (("reward.txt", f"{result['total']}\n"),
                       ("reward.json", json.dumps(flat_reward(result), sort_keys=True)),
                       (RESULT_NAME, json.dumps(result, indent=2, sort_keys=True))):
        target = os.path.join(logs_dir, name)
        _set_aside(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=logs_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
