"""The verifier every code-repair task carries in its tests/ directory, standard library only.

Copied verbatim into each `commits.repair` task as `tests/rlforge_repair.py` (next to
`rlforge_verify.py`, whose reward helpers it uses, and `rlforge_repair_patch.py`, which
applies diffs) and run by `tests/test.sh` with the task's Python environment, so Harbor or
any runner can score a task without rlforge:

    python rlforge_repair.py /tests/reference.json [--logs /logs/verifier]

What it does with the submission in /app (the final state of the workspace; a unified diff
at `/app/.rlforge/submission.diff`, if present, is applied on top of it first):

1. copy the workspace into a private tree (regular files only: no symlinks, no bytecode);
2. `patch_applies` (medium, gate): the submitted diff, if any, applies cleanly;
3. `tests_untouched` (fine, gate): no test file or test-runner configuration differs from
   the starting workspace (by content hash); tampering stops here, nothing is run;
4. write the hidden test changes (tests/hidden/) over the tree, add a canary test that
   must fail, and run the fail-to-pass and pass-to-pass tests with the configured command,
   one pytest session at a time under a watchdog: a test running longer than the per-test
   timeout is killed and counted as failed, and the others run again without it;
5. read pytest's junit XML only after the session's process tree is gone, and score:
   `fail_to_pass` (coarse, the fraction passing), `pass_to_pass` (coarse, gate: all still
   pass), `results_trusted` (medium, gate: the canary failed, so no code forged the
   results of every test).

The same file is the pytest plugin the watchdog loads (`-p`): it keeps only the requested
test ids and writes one line per test started, which is how a hang is attributed.
rlforge imports the path and test-running functions from here, so a task built by rlforge
and scored by Harbor behave the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SUBMISSION_PATCH = ".rlforge/submission.diff"
RUN_TREE_LIMIT = 200 * 1024 * 1024  # bytes of workspace copied into the private tree
RUN_TREE_FILES = 100_000  # files: more could run the verifier out of time (an "invalid" score)
JUNIT_LIMIT = 50 * 1024 * 1024
PLUGIN_MODULE = "_rlforge_repair_plugin"
ENV_SELECT = "RLFORGE_REPAIR_SELECT"
ENV_PROGRESS = "RLFORGE_REPAIR_PROGRESS"
SKIP_NAMES = ("__pycache__",)


# --- reward helpers (shared with rlforge_verify.py) --------------------------------------

def _base():
    """The answer verifier's module: the copy next to this file, or rlforge's own."""
    try:
        import rlforge_verify as base
    except ImportError:
        from rlforge.verify import standalone as base
    return base


def _patch():
    """The diff applier: the copy next to this file, or rlforge's own."""
    try:
        import rlforge_repair_patch as patch
    except ImportError:
        from rlforge.verify import repair_patch as patch
    return patch


# --- paths ---------------------------------------------------------------------------------

def is_protected(path, rules):
    """Whether a repository path is test code or test-runner configuration.

    `rules` comes from the task's reference: regexes for test paths (the same ones commit
    ingest uses), file names (conftest.py, pytest.ini, ...) and suffixes (.pth).
    """
    base = path.rsplit("/", 1)[-1]
    if base in rules.get("names", ()) or any(base.endswith(s) for s in rules.get("suffixes", ())):
        return True
    return any(re.search(p, path) for p in rules.get("patterns", ()))


def skipped_path(rel):
    parts = rel.split("/")
    return parts[0] == ".rlforge" or any(p in SKIP_NAMES for p in parts) or rel.endswith(".pyc")


def copy_workspace(src, dst, limit=RUN_TREE_LIMIT, max_files=RUN_TREE_FILES):
    """Copy the regular files under src to dst (which exists), never following links.

    Symlinks, special files, bytecode and `.rlforge/` are left out. Returns the relative
    paths copied; raises OSError when the copy would exceed `limit` bytes or `max_files`.
    """
    copied, total = [], 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if not os.path.islink(os.path.join(dirpath, d)) and not skipped_path(rel):
                keep.append(d)
                os.makedirs(os.path.join(dst, rel), exist_ok=True)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if skipped_path(rel):
                continue
            if len(copied) >= max_files:
                raise OSError(f"the workspace has more than {max_files} files")
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symlink or unreadable entry
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    continue
                total += st.st_size
                if total > limit:
                    raise OSError(f"the workspace is larger than {limit // (1024 * 1024)} MB")
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read()
            finally:
                os.close(fd)
            target = os.path.join(dst, rel)
            with open(target, "wb") as out:
                out.write(data)
            os.chmod(target, 0o755 if st.st_mode & 0o111 else 0o644)
            copied.append(rel)
    return copied


def tree_hashes(root):
    """sha256 of every regular file under root, by relative posix path (links skipped)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            with open(full, "rb") as fh:
                out[rel] = hashlib.sha256(fh.read()).hexdigest()
    return out


def touched_protected(root, rules, base_hashes):
    """Protected paths whose content differs from the starting workspace (added,
    changed or deleted), sorted."""
    now = {p: h for p, h in tree_hashes(root).items() if is_protected(p, rules) and not skipped_path(p)}
    changed = {p for p, h in now.items() if base_hashes.get(p) != h}
    changed |= {p for p in base_hashes if p not in now}
    return sorted(changed)


# --- pytest plugin (loaded with -p inside the test process) ------------------------------

def pytest_collection_modifyitems(session, config, items):
    """Keep only the requested test ids and drop the excluded ones (hung earlier)."""
    path = os.environ.get(ENV_SELECT)
    if not path:
        return
    with open(path, encoding="utf-8") as fh:
        wanted = json.load(fh)
    only = set(wanted["only"]) if wanted.get("only") is not None else None
    exclude = set(wanted.get("exclude", ()))
    kept, dropped = [], []
    for item in items:
        ok = (only is None or item.nodeid in only) and item.nodeid not in exclude
        (kept if ok else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_logstart(nodeid, location):
    """One JSON line per test started: the watchdog times each test from it."""
    path = os.environ.get(ENV_PROGRESS)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(nodeid) + "\n")


# --- running tests -------------------------------------------------------------------------

def junit_key(nodeid):
    """(classname, name) pytest's junit XML gives a test id (its mangle_test_address)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def parse_junit(path):
    """{(classname, name): passed | failed | skipped} from a junit XML file, or None when
    the file is missing or not pytest's XML."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(JUNIT_LIMIT + 1)
    if len(data) > JUNIT_LIMIT or b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return None
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    out = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        outcome = ("failed" if tags & {"failure", "error"} else
                   "skipped" if "skipped" in tags else "passed")
        if out.get(key) != "failed":  # a teardown error after a pass still fails the test
            out[key] = outcome
    return out


def _read_progress(path, offset):
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    ids = []
    for line in data[:end].splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, str):
            ids.append(value)
    return ids, offset + end


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def _reap():
    """Collect exited children (as the sandbox's pid 1, orphans of the tests become ours)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _tail(path, n=4000):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - n))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def bind_python(command, python=None):
    """The configured command with `python`/`python3` bound to this interpreter."""
    cmd = list(command)
    if cmd and cmd[0] in ("python", "python3"):
        cmd[0] = python or sys.executable
    return cmd


def run_tests(tree, command, ids=None, *, paths=None, per_test_timeout=30.0,
              collect_timeout=120.0, budget_sec=600.0, pythonpath=(), env=None, sweep=None):
    """Run pytest in tree under a watchdog and return what happened to each test.

    ids: the test ids to run, or None for every test collected from `paths` (test files;
    None: the whole suite as the repository configures it). A test still running after
    `per_test_timeout` seconds is killed with its session and marked `timeout`; the
    session is run again without it. Returns a dict: outcomes {id: passed | failed |
    skipped | timeout | missing}, started (ids in the order they started), hung,
    collection_hang, budget_exhausted, sessions, seconds, log_tail.
    """
    started_at = time.monotonic()
    deadline = started_at + budget_sec
    work = tempfile.mkdtemp(prefix="rlforge-run-")
    plugin_dir = os.path.join(work, "plugin")
    os.mkdir(plugin_dir)
    shutil.copyfile(os.path.abspath(__file__), os.path.join(plugin_dir, PLUGIN_MODULE + ".py"))
    wanted = None if ids is None else list(dict.fromkeys(ids))
    candidates = paths if wanted is None else {i.split("::", 1)[0] for i in wanted}
    files = None if candidates is None else sorted(
        p for p in candidates if os.path.isfile(os.path.join(tree, p)))
    outcomes, hung, started, seen = {}, [], [], set()
    result = {"collection_hang": False, "budget_exhausted": False, "sessions": 0, "log_tail": ""}
    base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "TMPDIR": work,
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": os.pathsep.join([plugin_dir] + [os.path.join(tree, p) for p in pythonpath])}
    if os.environ.get("VIRTUAL_ENV"):
        base_env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
    base_env.update(env or {})
    why = None
    while files != []:  # no test file to run: nothing ran, every wanted test is missing
        result["sessions"] += 1
        session = tempfile.mkdtemp(prefix="session-", dir=work)
        junit, progress = os.path.join(session, "junit.xml"), os.path.join(session, "progress.jsonl")
        select = os.path.join(session, "select.json")
        with open(select, "w", encoding="utf-8") as fh:
            json.dump({"only": wanted, "exclude": hung}, fh)
        argv = command + ["-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-p", "no:randomly",
                          "--rootdir", tree, "--junitxml", junit,
                          "--continue-on-collection-errors", "-q", "--color=no"] + (files or [])
        log_path = os.path.join(session, "output.txt")
        run_env = dict(base_env, **{ENV_SELECT: select, ENV_PROGRESS: progress})
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, cwd=tree, env=run_env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        t0, offset, current, why = time.monotonic(), 0, None, None
        while proc.poll() is None:
            time.sleep(0.05)
            new, offset = _read_progress(progress, offset)
            now = time.monotonic()
            for nodeid in new:
                current = (nodeid, now)
                if nodeid not in seen:
                    seen.add(nodeid)
                    started.append(nodeid)
            if now > deadline:
                why = "budget"
            elif current is None and now - t0 > collect_timeout:
                why = "collect"
            elif current is not None and now - current[1] > per_test_timeout:
                why = "hang"
            if why:
                break
        _kill_group(proc)
        if sweep:
            sweep()  # nothing the tests started may outlive them before results are read
            _reap()
        result["log_tail"] = _tail(log_path)
        if why == "hang":
            hung.append(current[0])
            outcomes[current[0]] = "timeout"
            continue
        if why is None:
            cases = parse_junit(junit)
            new, offset = _read_progress(progress, offset)
            for nodeid in new:
                if nodeid not in seen:
                    seen.add(nodeid)
                    started.append(nodeid)
            if cases is not None:
                for nodeid in (wanted if wanted is not None else started):
                    if nodeid not in outcomes:
                        outcome = cases.get(junit_key(nodeid))
                        if outcome is not None:
                            outcomes[nodeid] = outcome
        else:
            result["collection_hang"] = why == "collect"
            result["budget_exhausted"] = why == "budget"
        break
    for nodeid in (wanted if wanted is not None else started):
        outcomes.setdefault(nodeid, "timeout" if why in ("collect", "budget") else "missing")
    shutil.rmtree(work, ignore_errors=True)
    result.update(outcomes=outcomes, started=started, hung=hung,
                  seconds=round(time.monotonic() - started_at, 3))
    return result


# --- the canary ----------------------------------------------------------------------------

def add_canary(tree, fail_to_pass):
    """Append a test that must fail to the file of the first fail-to-pass test.

    Returns its id, or None when no such file exists. Its name is random and shaped like
    the test names around it, so code that marks every test passed is caught.
    """
    for nodeid in sorted(fail_to_pass):
        rel = nodeid.split("::", 1)[0]
        path = os.path.join(tree, rel)
        if not rel.endswith(".py") or not os.path.isfile(path) or os.path.islink(path):
            continue
        m = re.match(r"[A-Za-z]+_?", nodeid.split("::")[-1])
        prefix = m.group(0) if m else "test_"
        name = prefix + os.urandom(6).hex()
        a, b = int.from_bytes(os.urandom(3), "big"), int.from_bytes(os.urandom(3), "big") | 1
        with open(path, "rb") as fh:
            text = fh.read()
        sep = b"" if text.endswith(b"\n") or not text else b"\n"
        with open(path, "ab") as fh:
            fh.write(sep + f"\n\ndef {name}():\n    assert {a} == {a + b}\n".encode())
        return f"{rel}::{name}"
    return None


# --- scoring -------------------------------------------------------------------------------

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


def score_repair(ref, tests_dir):
    """Score the workspace at ref['workspace']; see the module docstring."""
    base = _base()
    component, reward = base.component, base.reward
    hidden = _load_hidden(ref, tests_dir)  # everything trusted is read before code runs
    f2p, p2p = list(ref["fail_to_pass"]), list(ref["pass_to_pass"])
    comps = {}
    tree = tempfile.mkdtemp(prefix="rlforge-tree-")
    ws = ref["workspace"]
    try:
        copy_workspace(ws, tree)
        patch_file = os.path.join(ws, ref.get("submission_patch", SUBMISSION_PATCH))
        if os.path.isfile(patch_file) and not os.path.islink(patch_file):
            with open(patch_file, "rb") as fh:
                text = fh.read(20_000_000).decode("utf-8", "surrogateescape")
            applied, detail = _patch().apply_patch(tree, text)
        else:
            applied, detail = True, "workspace submitted as is"
    except OSError as exc:
        applied, detail = False, f"the workspace could not be read: {exc}"
    comps["patch_applies"] = component(applied, 0, "medium", gate=True, detail=detail)
    touched = touched_protected(tree, ref["protected"], ref["base_protected"]) if applied else []
    comps["tests_untouched"] = component(
        not touched, 0, "fine", gate=True,
        detail=f"test files changed: {_ids(touched)}" if touched else "no test file changed")
    if not applied or touched:
        comps["fail_to_pass"] = component(0, 1.0, "coarse", detail="not run")
        comps["pass_to_pass"] = component(0, 0, "coarse", gate=True, detail="not run")
        shutil.rmtree(tree, ignore_errors=True)
        return reward(comps, detail="the submission was not run")
    patch = _patch()
    for rel, data in hidden.items():
        patch.write_file(tree, rel, data)
    for rel in ref.get("hidden_deleted", []):
        patch.remove_file(tree, rel)
    canary = add_canary(tree, f2p)
    run = run_tests(tree, bind_python(ref["test_command"]), f2p + p2p + ([canary] if canary else []),
                    per_test_timeout=ref["per_test_timeout"], collect_timeout=ref["collect_timeout"],
                    budget_sec=ref["budget_sec"], pythonpath=ref.get("pythonpath", []),
                    env=ref.get("env"), sweep=base._sweep_namespace)
    shutil.rmtree(tree, ignore_errors=True)
    out = run["outcomes"]
    f2p_ok = [t for t in f2p if out.get(t) == "passed"]
    f2p_bad = [f"{t} ({out.get(t)})" for t in f2p if out.get(t) != "passed"]
    comps["fail_to_pass"] = component(
        len(f2p_ok) / len(f2p) if f2p else 0, 1.0, "coarse",
        detail=f"{len(f2p_ok)}/{len(f2p)} pass" + (f"; failing: {_ids(f2p_bad)}" if f2p_bad else ""))
    p2p_bad = [f"{t} ({out.get(t)})" for t in p2p if out.get(t) != "passed"]
    comps["pass_to_pass"] = component(
        not p2p_bad, 0, "coarse", gate=True,
        detail=f"{len(p2p) - len(p2p_bad)}/{len(p2p)} still pass"
        + (f"; broken: {_ids(p2p_bad)}" if p2p_bad else ""))
    if canary:
        got = out.get(canary)
        comps["results_trusted"] = component(
            got == "failed", 0, "medium", gate=True,
            detail="the canary test failed, as it must" if got == "failed" else
            f"the canary test, which must fail, was reported {got}: the results cannot be trusted")
    extra = "; a test hung" if run["hung"] else ""
    if run["budget_exhausted"] or run["collection_hang"]:
        extra = "; the test run was cut off (time budget)"
    return reward(comps, detail=f"{run['sessions']} session(s), {run['seconds']:.1f}s{extra}")


def run_only(spec_path, out_path):
    """Build-time mode: run tests in a prepared tree and write the raw outcomes as JSON."""
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    base = _base()
    result = run_tests(spec["tree"], bind_python(spec["test_command"]), spec.get("ids"),
                       paths=spec.get("paths"), per_test_timeout=spec["per_test_timeout"],
                       collect_timeout=spec["collect_timeout"], budget_sec=spec["budget_sec"],
                       pythonpath=spec.get("pythonpath", []), env=spec.get("env"),
                       sweep=base._sweep_namespace)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, sort_keys=True)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--run-tests":
        return run_only(argv[1], argv[2])
    base = _base()
    logs_dir = "/logs/verifier"
    if "--logs" in argv:
        i = argv.index("--logs")
        logs_dir = argv[i + 1]
        del argv[i:i + 2]
    base._no_core_access()
    with open(argv[0], encoding="utf-8") as fh:
        ref = json.load(fh)
    result = score_repair(ref, os.path.dirname(os.path.abspath(argv[0])))
    base._sweep_namespace()
    base.write_reward(result, logs_dir)
    sys.stdout.write(base.REWARD_PREFIX + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
