"""The verifier every answer, reply and script task carries in its tests/ directory.

This file is copied verbatim into each task as `tests/rlforge_verify.py` and run by
`tests/test.sh` with any Python 3.8+ and nothing else installed, so Harbor (or any runner)
can score a task without rlforge. rlforge imports the same functions to score answer
tasks in-process; both paths give the same reward.

    python3 rlforge_verify.py REFERENCE.json [--logs /logs/verifier]

A reward has named components, each a value in [0, 1] with a weight and a level (coarse:
the result is right; medium: valid format / it runs; fine: process constraints). A
component marked as a gate must be 1, or the total is 0. Otherwise the total is the
weighted mean of the non-gate components. The result is written to reward.json and
reward.txt, and printed on stdout as one line starting with `RLFORGE_REWARD `.

When it runs code the policy wrote (script tasks), the verifier first reads everything
it needs into memory, runs that code in a new session with its own pipes and a clean
environment, kills what it left behind, and only then writes the reward, so the code
cannot rewrite the reference, the held-back data, or the reward.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REWARD_PREFIX = "RLFORGE_REWARD "
MAX_ANSWER_CHARS = 400
ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*[:=]\s*(.*)$", re.I | re.M)


# --- rewards -------------------------------------------------------------------------

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


def reward(components, pass_threshold=1.0, detail=""):
    total = round(total_of(components), 6)
    return {"components": components, "total": total,
            "outcome": "pass" if total >= pass_threshold - 1e-9 else "fail", "detail": detail}


# --- answers -------------------------------------------------------------------------

def extract_answer(text):
    """The answer in a reply: the last `ANSWER: ...` line if there is one, else all of it."""
    if text is None:
        return ""
    found = ANSWER_LINE.findall(text)
    answer = found[-1] if found else text
    return answer.strip().strip("`").strip()


def normalize(text):
    """Case-, space- and punctuation-insensitive form used for exact comparison."""
    text = text.casefold().strip().strip("\"'`.,;:!?()[]{}<>").strip()
    text = re.sub(r"[\s_\-/]+", " ", text)
    return text.strip()


def parse_number(text):
    cleaned = text.strip().rstrip(".").replace(",", "")
    cleaned = re.sub(r"\s*(lines?|events?|entries|requests?|seconds?|s|ms|%)$", "", cleaned, flags=re.I)
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


TS_FORMATS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f",
              "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M")


def parse_timestamp(text):
    t = text.strip().replace("Z", "").replace("z", "")
    t = re.sub(r"([+-]\d\d:?\d\d)$", "", t).strip()
    for fmt in TS_FORMATS:
        try:
            return dt.datetime.strptime(t, fmt)
        except ValueError:
            continue
    return None


def split_items(text):
    return [i for i in (x.strip() for x in re.split(r"[,\n;]+", text)) if i]


def score_answer(ref, submitted):
    """Score one answer against the reference; see `reward` for the shape of the result."""
    kind = ref["answer_kind"]
    answer = extract_answer(submitted)
    comps = {}
    if len({normalize(a) for a in ANSWER_LINE.findall(submitted or "")}) > 1:
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail="several different ANSWER lines")
        comps["correct"] = component(0)
        return reward(comps, detail="ambiguous answer")
    if not answer:
        comps["valid_format"] = component(0, 0, "medium", gate=True, detail="empty answer")
        comps["correct"] = component(0)
        return reward(comps, detail="no answer")
    if len(answer) > ref.get("max_chars", MAX_ANSWER_CHARS):
        comps["valid_format"] = component(0, 0, "medium", gate=True,
                                          detail=f"answer longer than {ref.get('max_chars', MAX_ANSWER_CHARS)} characters")
        comps["correct"] = component(0)
        return reward(comps, detail="answer too long")
    ok_format, correct, detail = True, False, ""
    expected = ref["answer"]
    if kind == "label":
        labels = {normalize(x): x for x in ref["labels"]}
        got = normalize(answer)
        ok_format = got in labels
        correct = ok_format and got == normalize(expected)
        detail = "not one of the offered labels" if not ok_format else ""
    elif kind == "exact":
        correct = normalize(answer) == normalize(expected)
    elif kind == "numeric":
        value = parse_number(answer)
        ok_format = value is not None
        if ok_format:
            tol = max(float(ref.get("abs_tol", 0)), abs(float(expected)) * float(ref.get("rel_tol", 0)))
            correct = abs(value - float(expected)) <= tol + 1e-12
        detail = "" if ok_format else "not a single number"
    elif kind == "timestamp":
        value = parse_timestamp(answer)
        ok_format = value is not None
        if ok_format:
            want = parse_timestamp(expected)
            correct = abs((value - want).total_seconds()) <= float(ref.get("tolerance_sec", 0))
        detail = "" if ok_format else "not a timestamp (use YYYY-MM-DD HH:MM:SS)"
    elif kind == "set":
        got = {normalize(x) for x in split_items(answer)}
        want = {normalize(x) for x in expected}
        ok_format = bool(got)
        correct = got == want
        inter = len(got & want)
        f1 = 0.0 if not got or not want else 2 * inter / (len(got) + len(want))
        comps["overlap_f1"] = component(f1, 0, "fine", detail="informational")
    else:
        raise ValueError(f"unknown answer kind {kind!r}")
    comps["valid_format"] = component(1 if ok_format else 0, 0, "medium", gate=True, detail=detail)
    comps["correct"] = component(1 if correct else 0, 1.0, "coarse")
    return reward(comps)


# --- replies -------------------------------------------------------------------------

def contains(text, fact):
    """Whether `fact` appears in `text`, both normalised (how facts and forbidden items
    are matched; generators filter with it too)."""
    return normalize(fact) in normalize(text) if fact else False


def score_reply(ref, submitted):
    """A customer reply: required facts (partial credit), forbidden content, length."""
    text = (submitted or "").strip()
    comps = {}
    n_words = len(text.split())
    lo, hi = ref.get("min_words", 15), ref.get("max_words", 400)
    comps["length"] = component(1 if lo <= n_words <= hi else 0, 0, "medium", gate=True,
                                detail=f"{n_words} words; allowed {lo}-{hi}")
    leaked = [f for f in ref.get("forbidden", []) if contains(text, f)]
    comps["no_forbidden_content"] = component(0 if leaked else 1, 0, "fine", gate=True,
                                              detail=f"{len(leaked)} forbidden item(s) present")
    facts = ref.get("required", [])
    hits = [f for f in facts if contains(text, f)]
    comps["key_facts"] = component(len(hits) / len(facts) if facts else 1.0, 1.0, "coarse",
                                   detail=f"{len(hits)}/{len(facts)} key facts")
    return reward(comps, pass_threshold=ref.get("pass_threshold", 1.0))


# --- scripts the policy wrote --------------------------------------------------------

def _no_core_access():
    """Make this process non-dumpable so code of the same uid cannot reach its pipes."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def _sweep_namespace():
    """Inside rlforge's sandbox (own pid namespace) kill every process but us and our parents."""
    if os.environ.get("RLFORGE_SANDBOXED") != "1":
        return
    keep, pid = set(), os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    keep.add(1)
    for _ in range(20):
        _reap()
        others = [p for p in _live_pids() if p not in keep]
        if not others:
            return
        for p in others:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _live_pids():
    """Pids in /proc that are not zombies (a zombie is already dead; only its parent can reap it)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            out.append(int(name))
    return out


def _reap():
    """Collect exited children (the verifier may be the namespace's pid 1, which inherits orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_program(program, arg, timeout):
    """Run the policy's program on one input; return (exit code or None, stdout, stderr)."""
    if program.endswith(".py"):
        cmd = [sys.executable, program, arg]
    else:
        cmd = ["bash", program, arg]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tempfile.gettempdir(),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, close_fds=True,
                                start_new_session=True, cwd=os.path.dirname(program) or ".")
    except OSError as exc:
        return None, "", str(exc)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code, out, err = None, b"", b"timed out"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        _sweep_namespace()
    return code, out[:1_000_000].decode("utf-8", "replace"), err[:10_000].decode("utf-8", "replace")


def score_script(ref, tests_dir):
    """Run the policy's program on the visible logs and on each held-back variant."""
    candidates = [os.path.join(ref["workspace"], name) for name in ref["programs"]]
    program = next((p for p in candidates if os.path.isfile(p)), None)
    comps = {}
    if program is None:
        comps["runs"] = component(0, 0, "medium", gate=True,
                                  detail="no " + " or ".join(ref["programs"]) + " in the workspace")
        comps["correct"] = component(0)
        return reward(comps, detail="no program")
    # Everything the policy must not be able to change is read before its code runs.
    cases = []
    for case in ref["cases"]:
        files = {}
        if case.get("data_dir"):
            root = os.path.join(tests_dir, case["data_dir"])
            for dirpath, _, names in os.walk(root):
                for name in names:
                    full = os.path.join(dirpath, name)
                    with open(full, "rb") as fh:
                        files[os.path.relpath(full, root)] = fh.read()
        cases.append((case, files))
    ran, right, details, per_case = 0, 0, [], []
    for case, files in cases:
        if files:
            target = tempfile.mkdtemp(prefix="rlforge-case-")
            for rel, data in files.items():
                os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
                with open(os.path.join(target, rel), "wb") as fh:
                    fh.write(data)
        else:
            target = case["path"]
        code, out, err = run_program(program, target, ref.get("timeout_sec", 30))
        if code == 0:
            ran += 1
        lines = [line for line in out.splitlines() if line.strip()]
        answer = lines[-1] if lines else ""
        scored = score_answer(case["answer"], answer)
        is_right = scored["components"]["correct"]["value"] >= 1.0
        right += is_right
        per_case.append(is_right)
        details.append(f"{case['name']}: exit {code}, answer {answer[:60]!r}, "
                       f"{'right' if is_right else 'wrong'}")
    comps["runs"] = component(1 if ran == len(cases) else 0, 0, "medium", gate=True,
                              detail=f"{ran}/{len(cases)} runs exited 0")
    comps["correct"] = component(1 if right == len(cases) else 0, 1.0, "coarse",
                                 detail="; ".join(details))
    comps["correct_on_visible"] = component(1 if per_case and per_case[0] else 0, 0, "fine",
                                            detail="informational: the visible case alone")
    return reward(comps)


# --- entry point ---------------------------------------------------------------------

def score(ref, tests_dir):
    """Dispatch on the reference's verifier kind and return the reward."""
    kind = ref["verifier"]
    if kind == "script":
        return score_script(ref, tests_dir)
    path = ref["submission"]
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            submitted = fh.read(1_000_000)
    except OSError:
        submitted = ""
    if kind == "answer":
        return score_answer(ref, submitted)
    if kind == "reply":
        return score_reply(ref, submitted)
    raise ValueError(f"unknown verifier kind {kind!r}")


def write_reward(result, logs_dir):
    os.makedirs(logs_dir, exist_ok=True)
    with open(os.path.join(logs_dir, "reward.json"), "w") as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
    with open(os.path.join(logs_dir, "reward.txt"), "w") as fh:
        fh.write(f"{result['total']}\n")


BATCH_PREFIX = "RLFORGE_BATCH "


def _clear(directory):
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def score_batch(ref, tests_dir, submissions, workspace):
    """Score several submissions in turn, each in the workspace as it was at the start.

    Used by `rlforge validate` to prove the null and adversarial submissions of a task in
    one sandboxed run: the same `score` as test.sh, on the same files, without starting a
    sandbox and an interpreter per submission.
    """
    snapshot = tempfile.mkdtemp(prefix="rlforge-ws-")
    shutil.copytree(workspace, snapshot, dirs_exist_ok=True, symlinks=True)
    results = {}
    for sub in submissions:
        _clear(workspace)
        shutil.copytree(snapshot, workspace, dirs_exist_ok=True, symlinks=True)
        for rel, text in sub["files"].items():
            target = os.path.join(workspace, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(text.encode("utf-8", "surrogateescape"))
        results[sub["name"]] = score(ref, tests_dir)
        _sweep_namespace()
    return results


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    logs_dir = "/logs/verifier"
    options = {}
    for flag in ("--logs", "--batch"):
        if flag in argv:
            i = argv.index(flag)
            options[flag] = argv[i + 1]
            del argv[i:i + 2]
    logs_dir = options.get("--logs", logs_dir)
    _no_core_access()
    ref_path = argv[0]
    with open(ref_path, encoding="utf-8") as fh:
        ref = json.load(fh)
    if "--batch" in options:
        with open(options["--batch"], encoding="utf-8") as fh:
            submissions = json.load(fh)
        results = score_batch(ref, os.path.dirname(os.path.abspath(ref_path)), submissions,
                              ref.get("workspace", "/app"))
        sys.stdout.write(BATCH_PREFIX + json.dumps(results, sort_keys=True) + "\n")
        sys.stdout.flush()
        return 0
    result = score(ref, os.path.dirname(os.path.abspath(ref_path)))
    _sweep_namespace()
    write_reward(result, logs_dir)
    sys.stdout.write(REWARD_PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
