"""The verifier every code-repair task carries in its tests/ directory, standard library only.

Copied verbatim into each `commits.repair` task as `tests/rlforge_repair.py` (next to
`rlforge_verify.py`, whose reward helpers and policy-code launcher it uses, and
`rlforge_repair_patch.py`, which applies diffs) and run by `tests/test.sh`, so Harbor or any
runner can score a task without rlforge; rlforge calls the same `score_repair` with its own
sandbox as the launcher:

    python rlforge_repair.py /tests/reference.json [--logs /logs/verifier]

What it does with the submission (the final state of the workspace; a unified diff at
`.rlforge/submission.diff`, if present, is applied on top of it first):

1. copy the workspace into a private tree (regular files only: no symlinks, no bytecode);
2. `patch_applies` (medium, gate): the submitted diff, if any, applies cleanly;
3. `tests_untouched` (fine, gate): no test file or test-runner configuration differs from
   the starting workspace, no packaging metadata (`*.dist-info`, `*.egg-info`, `*.pth`)
   was added, and no new top-level module shadows pytest, its plugins or the standard
   library; tampering stops here, nothing is run;
4. write the hidden test changes over the tree, plant canary tests that must fail (placed
   among the real tests, named like them), rewrite the literal asserts of the
   fail-to-pass tests so their values come out and their literals stay here (see
   "checked asserts" below), and run the fail-to-pass and every
   pass-to-pass test as policy code: pytest started with a safe import path, plugin
   autoloading off (the environment's own plugins loaded by name), a configuration built
   here from the maintainers' files (`-c`), and this file as its reporting plugin under a
   random name. Reports come back over a FIFO, first report of each test wins, so nothing
   the tests do after a test ended can change its outcome; a test running longer than the
   per-test timeout is killed and counted as failed, and the others run again without it;
5. score: `fail_to_pass` (coarse, the fraction passing: reported passed, and every checked
   assert ran and holds), `pass_to_pass` (coarse, gate: all
   still pass), `collects` (medium, gate: no test file failed to import),
   `results_trusted` (medium, gate: every canary failed, so no code forged results).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from typing import Any

SUBMISSION_PATCH = ".rlforge/submission.diff"
RUN_TREE_LIMIT = 200 * 1024 * 1024  # bytes of workspace copied into the private tree
RUN_TREE_FILES = 100_000  # files: more could run the verifier out of time (an "invalid" score)
JUNIT_LIMIT = 50 * 1024 * 1024  # bytes of test reports buffered at once
MAX_EVENT = 65536  # bytes of one report line; longer ones are not rlforge's
ENV_CHANNEL = "RLFORGE_REPAIR_CHANNEL"
ENV_CHECK = "RLFORGE_REPAIR_CHECK"
SKIP_NAMES = ("__pycache__",)
# Protected whatever the task's rules say: runner configuration pytest reads on its own,
# packaging metadata that could register a plugin or extend sys.path, interpreter hooks.
ALWAYS_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "conftest.py",
                "sitecustomize.py", "usercustomize.py")
ALWAYS_SUFFIXES = (".pth",)
METADATA_DIRS = (".dist-info", ".egg-info", ".egg-link")
RUNNER_MODULES = ("pytest", "_pytest", "pluggy", "py")
MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")  # what Python imports a module from
CANARIES = 3
TOLERANT = ("approx", "ANY", "isclose", "allclose")  # equal to values near or other than theirs


# --- reward helpers (shared with rlforge_verify.py) --------------------------------------

def _here_first():
    """This file's directory on the import path (python -I leaves it off), for its siblings."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)


def _base():
    """The answer verifier's module: the copy next to this file, or rlforge's own."""
    _here_first()
    try:
        import rlforge_verify as base
    except ImportError:
        from rlforge.verify import standalone as base
    return base


def _patch():
    """The diff applier: the copy next to this file, or rlforge's own."""
    _here_first()
    try:
        import rlforge_repair_patch as patch
    except ImportError:
        from rlforge.verify import repair_patch as patch
    return patch


# --- paths ---------------------------------------------------------------------------------

def is_protected(path, rules):
    """Whether a repository path is test code or test-runner configuration.

    `rules` comes from the task's reference: regexes for test paths (the same ones commit
    ingest uses), file names (conftest.py, pytest.ini, ...) and suffixes (.pth); the
    names in ALWAYS_NAMES and packaging metadata directories are protected in any case.
    """
    base = path.rsplit("/", 1)[-1]
    if base in rules.get("names", ()) or base in ALWAYS_NAMES:
        return True
    if any(base.endswith(s) for s in tuple(rules.get("suffixes", ())) + ALWAYS_SUFFIXES):
        return True
    if any(part.endswith(METADATA_DIRS) for part in path.split("/")[:-1]):
        return True
    return any(re.search(p, path) for p in rules.get("patterns", ()))


def shadow_modules(paths, roots, allowed, installed=()):
    """Paths that add a top-level module (at the tree root or a `pythonpath` root) named
    after pytest, its plugin machinery, a standard-library module or a module installed in
    the test environment (`installed`), unless the starting workspace already had a
    top-level module of that name (`allowed`): the tree is on the tests' import path, so
    such a module would be imported in place of the real one."""
    names = (set(RUNNER_MODULES) | set(getattr(sys, "stdlib_module_names", ())) | set(installed)
             | {"sitecustomize", "usercustomize"})
    out = []
    for path in paths:
        for root in roots:
            prefix = root.strip("/") + "/" if root.strip("/") else ""
            if not path.startswith(prefix):
                continue
            first = path[len(prefix):].split("/", 1)[0]
            name = first.split(".", 1)[0]
            module = first.endswith(MODULE_SUFFIXES) or "/" in path[len(prefix):]
            if name in names and name not in allowed and module:
                out.append(path)
                break
    return sorted(out)


def installed_modules(site_dirs):
    """Top-level module names importable from the given site-packages directories."""
    out = set()
    for site in site_dirs:
        try:
            names = os.listdir(site)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info", ".pth")) or name.startswith("_distutils"):
                continue
            out.add(name.split(".", 1)[0])
    return sorted(n for n in out if n.isidentifier())


def top_level_modules(paths, roots):
    """Module names at the tree root and each `pythonpath` root (for `shadow_modules`)."""
    out = set()
    for path in paths:
        for root in roots:
            prefix = root.strip("/") + "/" if root.strip("/") else ""
            if path.startswith(prefix):
                first = path[len(prefix):].split("/", 1)[0]
                out.add(first[:-3] if first.endswith(".py") else first.split(".", 1)[0])
    return sorted(out)


def skipped_path(rel):
    parts = rel.split("/")
    return parts[0] == ".rlforge" or any(p in SKIP_NAMES for p in parts) or rel.endswith(".pyc")


def copy_workspace(src, dst, limit=RUN_TREE_LIMIT, max_files=RUN_TREE_FILES):
    """Copy the regular files under src to dst (which exists), never following links.

    Symlinks, special files, bytecode and `.rlforge/` are left out. Returns the relative
    paths copied; raises OSError when the copy would exceed `limit` bytes or `max_files`.
    """
    return _base().copy_tree_bounded(src, dst, limit, max_files, skip=skipped_path)


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


# --- pytest plugin (loaded with -p, under a random module name, inside the test process) --

_channel: dict[str, Any] = {}


def _send(event):
    """One JSON line to the verifier's FIFO (a line under PIPE_BUF is written whole)."""
    fd = _channel.get("fd")
    if fd is None:
        return
    data = (json.dumps(event) + "\n").encode("utf-8", "replace")
    try:
        os.write(fd, data)
    except OSError:
        pass


def pytest_configure(config):
    chan = os.environ.get(ENV_CHANNEL)
    if chan and "fd" not in _channel:
        try:
            _channel["fd"] = os.open(os.path.join(chan, "results"), os.O_WRONLY)
        except OSError:
            _channel["fd"] = None
        _send({"ready": True})
    name = os.environ.get(ENV_CHECK, "")
    if name.isidentifier():
        import builtins
        setattr(builtins, name, _report_check)


def _report_check(index, value):
    """What a checked assert of a fail-to-pass test computed, sent for the verifier to compare
    with the expected value, which this process never holds (see `externalize_checks`).
    Returns the value (a build's run keeps the assert around the call)."""
    try:
        data = _encode(value)
    except (_Unplain, RecursionError, ValueError, OverflowError):
        data = ["?", type(value).__name__]
    event = {"check": index, "test": _channel.get("test"), "value": data}
    if len(json.dumps(event)) > MAX_EVENT - 1024:
        event["value"] = ["?", "too long"]
    _send(event)
    return value


class _Unplain(Exception):
    pass


def _encode(value, depth=0):
    """A value as tagged JSON that `_decode` rebuilds with its type and equality: None, bool,
    numbers, str, bytes and lists, tuples, sets and dicts of them; anything else raises."""
    import numbers

    if depth > 50:
        raise _Unplain
    if value is None:
        return ["N"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, numbers.Integral):
        return ["i", str(int(value))]
    if isinstance(value, numbers.Real):
        return ["f", repr(float(value))]
    if isinstance(value, complex):
        return ["c", repr(value.real), repr(value.imag)]
    if isinstance(value, str):
        return ["s", str.__add__("", value)]
    if isinstance(value, (bytes, bytearray)):
        return ["y", bytes(value).hex()]
    for kind, tag in ((list, "l"), (tuple, "t"), (set, "S"), (frozenset, "F")):
        if isinstance(value, kind):
            return [tag, [_encode(v, depth + 1) for v in value]]
    if isinstance(value, dict):
        return ["d", [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in value.items()]]
    raise _Unplain


def _decode(data):
    """The value `_encode` sent (raises ValueError, TypeError or KeyError on anything else)."""
    tag = data[0]
    if tag == "N":
        return None
    if tag == "b":
        return bool(data[1])
    if tag == "i":
        if len(data[1]) > 4000:
            raise ValueError("integer too long")
        return int(data[1])
    if tag == "f":
        return float(data[1])
    if tag == "c":
        return complex(float(data[1]), float(data[2]))
    if tag == "s":
        if not isinstance(data[1], str):
            raise TypeError("not a string")
        return data[1]
    if tag == "y":
        return bytes.fromhex(data[1])
    if tag in ("l", "t", "S", "F"):
        items = [_decode(v) for v in data[1]]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d":
        return {_decode(k): _decode(v) for k, v in data[1]}
    raise ValueError(f"not a value: {tag!r}")


def pytest_collection_modifyitems(session, config, items):
    """Keep only the requested test ids and drop the excluded ones (hung earlier)."""
    chan = os.environ.get(ENV_CHANNEL)
    if not chan:
        return
    with open(os.path.join(chan, "select.json"), encoding="utf-8") as fh:
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


def pytest_collectreport(report):
    if report.failed:
        _send({"collect_error": report.nodeid or "<session>"})


def pytest_runtest_logstart(nodeid, location):
    _channel["test"] = nodeid
    _send({"start": nodeid})


def pytest_runtest_logreport(report):
    _send({"report": report.nodeid, "when": report.when, "outcome": report.outcome})


# --- running tests -------------------------------------------------------------------------

def bind_python(command, python=None):
    """The configured command with `python`/`python3` bound to this interpreter."""
    cmd = list(command)
    if cmd and cmd[0] in ("python", "python3"):
        cmd[0] = python or sys.executable
    return cmd


def _ini_lines(text, section):
    """The body of `[section]` in an ini-style file, or None."""
    out, inside = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            inside = stripped[1:-1].strip() == section
            continue
        if inside:
            out.append(line)
    return "\n".join(out) if inside or out else None


def _toml_value(value):
    if isinstance(value, list):
        return "\n    " + "\n    ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def runner_config(tree, inside=None):
    """An ini file's text with the maintainers' pytest settings, found as pytest would
    find them at the tree's root (pytest.ini, pyproject.toml, tox.ini, setup.cfg), so that
    `-c` can hand them to pytest without it looking for configuration in the tree.
    `pythonpath` entries, which pytest reads relative to the file, are made absolute under
    `inside` (where the tree appears to the tests)."""
    def read(name):
        path = os.path.join(tree, name)
        if not _base()._regular_file(path):
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(5_000_000)

    body = None
    for name in ("pytest.ini", ".pytest.ini"):
        text = read(name)
        if text is not None:
            body = _ini_lines(text, "pytest") or ""
            break
    if body is None:
        text = read("pyproject.toml")
        if text is not None:
            try:
                import tomllib
                table = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
            except Exception:  # Python < 3.11 or a broken file: no settings from it
                table = None
            if table is not None:
                body = "\n".join(f"{k} = {_toml_value(v)}" for k, v in table.items())
    if body is None:
        for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
            text = read(name)
            found = _ini_lines(text, section) if text is not None else None
            if found is not None:
                body = found
                break
    body = body or ""
    root = (inside or tree).rstrip("/")
    out, in_path = [], False
    for line in body.splitlines():
        key = line.split("=", 1)[0].strip() if "=" in line and not line[:1].isspace() else None
        if key is not None:
            in_path = key == "pythonpath"
            if in_path:
                values = line.split("=", 1)[1].split()
                line = "pythonpath = " + " ".join(v if v.startswith("/") else f"{root}/{v}" for v in values)
        elif in_path and line.strip():
            line = "    " + " ".join(v if v.startswith("/") else f"{root}/{v}" for v in line.split())
        out.append(line)
    return "[pytest]\n" + "\n".join(out) + "\n"


def environment_plugins(site_dirs):
    """Modules of the pytest plugins installed in the task's environment (the `pytest11`
    entry points of the distributions in `site_dirs`), loaded by name since autoloading,
    which would also scan the tree, is off."""
    found = []
    for site in site_dirs:
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            path = os.path.join(site, name, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            body = _ini_lines(text, "pytest11") or ""
            for line in body.splitlines():
                if "=" in line:
                    module = line.split("=", 1)[1].split(":", 1)[0].strip()
                    if module and module not in found:
                        found.append(module)
    return found


def _site_dirs(python):
    """site-packages of the environment `python` belongs to, found on disk."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    out = []
    for lib in ("lib", "lib64"):
        root = os.path.join(prefix, lib)
        try:
            for name in sorted(os.listdir(root)):
                site = os.path.join(root, name, "site-packages")
                if name.startswith("python") and os.path.isdir(site):
                    out.append(site)
        except OSError:
            continue
    return out


def environment_site_dirs(policy, command):
    """site-packages of the environment the tests run in, as seen from the verifier: the
    launcher's own answer (a sandbox mounts the venv elsewhere), else found from the
    interpreter the command runs."""
    if hasattr(policy, "site_dirs"):
        return policy.site_dirs()
    exe = bind_python(command, getattr(policy, "python", None))[0]
    return _site_dirs(shutil.which(exe) or exe)


def _outcomes_from(reports):
    """passed / failed / skipped per test from its phase reports (first of each wins)."""
    out = {}
    for nodeid, phases in reports.items():
        values = set(phases.values())
        if "failed" in values:
            out[nodeid] = "failed"
        elif "skipped" in values:
            out[nodeid] = "skipped"
        elif phases.get("call") == "passed":
            out[nodeid] = "passed"
    return out


class _Channel:
    """The FIFO test runs report through, read here without blocking."""

    def __init__(self, path):
        os.mkfifo(path, 0o622)
        os.chmod(path, 0o622)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.buf = b""

    def events(self):
        out = []
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            self.buf += chunk
            if len(self.buf) > JUNIT_LIMIT:
                self.buf = b""
                break
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if len(line) > MAX_EVENT:
                continue
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def close(self):
        os.close(self.fd)


def run_tests(tree, command, ids=None, *, paths=None, per_test_timeout=30.0,
              collect_timeout=120.0, budget_sec=600.0, pythonpath=(), env=None, policy=None,
              site_dirs=None, check_name=None):
    """Run pytest in tree, as policy code, under a watchdog; what happened to each test.

    ids: the test ids to run, or None for every test collected from `paths` (test files;
    None: the whole suite). The run goes through `policy` (default: this machine, see
    rlforge_verify.LocalPolicy). A test still running after `per_test_timeout` seconds is
    killed with its session and marked `timeout`; the session is run again without it.
    check_name: the builtin that checked asserts call (`externalize_checks`); what each
    test sent through it is returned as checks {id: {index: encoded value}}, the first
    value of each (test, index) kept, and only for tests that had started.
    Returns a dict: outcomes {id: passed | failed | skipped | timeout | missing}, started
    (ids in the order they started), hung, collect_errors, collection_hang,
    budget_exhausted, sessions, seconds, log_tail, checks.
    """
    base = _base()
    policy = policy or base.LocalPolicy()
    started_at = time.monotonic()
    deadline = started_at + budget_sec
    work = tempfile.mkdtemp(prefix="rlforge-run-")
    os.chmod(work, 0o711)
    chan = os.path.join(work, "chan")
    os.mkdir(chan)
    os.chmod(chan, 0o755)
    plugin = "_" + os.urandom(8).hex()
    shutil.copyfile(os.path.abspath(__file__), os.path.join(chan, plugin + ".py"))
    python = getattr(policy, "python", None) or sys.executable
    if site_dirs is None:
        site_dirs = environment_site_dirs(policy, command)
    extra_plugins = environment_plugins(site_dirs)
    wanted = None if ids is None else list(dict.fromkeys(ids))
    candidates = paths if wanted is None else {i.split("::", 1)[0] for i in wanted}
    files = None if candidates is None else sorted(
        p for p in candidates if os.path.isfile(os.path.join(tree, p)))
    outcomes, hung, started, seen, collect_errors, checks = {}, [], [], set(), [], {}
    wanted_set = None if wanted is None else set(wanted)
    result = {"collection_hang": False, "budget_exhausted": False, "sessions": 0, "log_tail": ""}
    why = None
    for path in [os.path.join(chan, n) for n in os.listdir(chan)]:
        os.chmod(path, 0o644)
    while files != []:  # no test file to run: nothing ran, every wanted test is missing
        result["sessions"] += 1
        fifo = os.path.join(chan, "results")
        if os.path.exists(fifo):
            os.unlink(fifo)
        channel = _Channel(fifo)
        with open(os.path.join(chan, "select.json"), "w", encoding="utf-8") as fh:
            json.dump({"only": sorted(wanted) if wanted is not None else None, "exclude": hung}, fh)
        os.chmod(os.path.join(chan, "select.json"), 0o644)
        inside, places = policy.places(tree, {"chan": chan})
        at = places["chan"]
        with open(os.path.join(chan, "pytest.ini"), "w", encoding="utf-8") as fh:
            fh.write(runner_config(tree, inside))
        os.chmod(os.path.join(chan, "pytest.ini"), 0o644)
        argv = bind_python(command, python) + [
            "-p", plugin, "-p", "no:cacheprovider", "-c", f"{at}/pytest.ini",
            "--rootdir", inside, "--confcutdir", inside,  # no conftest.py from above the tree
            "--continue-on-collection-errors", "-q", "--color=no"]
        for module in extra_plugins:
            argv += ["-p", module]
        argv += list(files or [])
        run_env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1",
                   "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", ENV_CHANNEL: at,
                   "PYTHONPATH": os.pathsep.join([at, inside] + [inside.rstrip("/") + "/" + p.strip("/")
                                                              for p in pythonpath if p.strip("/")])}
        run_env.update(env or {})
        if check_name:
            run_env[ENV_CHECK] = check_name
        log_path = os.path.join(work, f"output-{result['sessions']}.txt")
        handle = policy.start(argv, tree, {"chan": chan}, run_env,
                              timeout=max(1.0, deadline - time.monotonic()) + 5, log=log_path)
        reports = {}
        idle_since, current, why = time.monotonic(), None, None

        def take(events):
            nonlocal current, idle_since
            now = time.monotonic()
            for ev in events:
                if "check" in ev:
                    test, index = ev.get("test"), ev["check"]
                    if isinstance(test, str) and test in seen and isinstance(index, int):
                        checks.setdefault(test, {}).setdefault(index, ev.get("value"))
                elif "start" in ev and isinstance(ev["start"], str):
                    nodeid = ev["start"]
                    if wanted_set is not None and nodeid not in wanted_set:
                        continue
                    current = (nodeid, now)
                    if nodeid not in seen:
                        seen.add(nodeid)
                        started.append(nodeid)
                elif "report" in ev and isinstance(ev.get("report"), str):
                    phases = reports.setdefault(ev["report"], {})
                    if ev["report"] in seen and str(ev.get("when")) not in phases:
                        phases[str(ev.get("when"))] = str(ev.get("outcome"))
                    if ev.get("when") == "teardown" and current and current[0] == ev["report"]:
                        current, idle_since = None, now
                elif "collect_error" in ev:
                    collect_errors.append(str(ev["collect_error"]))

        while not handle.poll():
            time.sleep(0.05)
            take(channel.events())
            now = time.monotonic()
            if now > deadline:
                why = "budget"
            elif current is None and now - idle_since > collect_timeout:
                why = "collect"
            elif current is not None and now - current[1] > per_test_timeout:
                why = "hang"
            if why:
                break
        handle.kill()
        ran = handle.result()
        take(channel.events())
        channel.close()
        result["log_tail"] = (ran.stdout or "")[-4000:] or _tail(log_path)
        if why == "hang":
            hung.append(current[0])
            outcomes[current[0]] = "timeout"
            for nodeid, value in _outcomes_from(reports).items():
                outcomes.setdefault(nodeid, value)
            continue
        if why is None:
            for nodeid, value in _outcomes_from(reports).items():
                outcomes.setdefault(nodeid, value)
        else:
            result["collection_hang"] = why == "collect"
            result["budget_exhausted"] = why == "budget"
        break
    for nodeid in (wanted if wanted is not None else started):
        outcomes.setdefault(nodeid, "timeout" if why in ("collect", "budget") else "missing")
    shutil.rmtree(work, ignore_errors=True)
    result.update(outcomes=outcomes, started=started, hung=hung, checks=checks,
                  collect_errors=sorted(set(collect_errors)),
                  seconds=round(time.monotonic() - started_at, 3))
    return result


def _tail(path, n=4000):
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - n))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


# --- canaries -------------------------------------------------------------------------------

def _test_names(tree_text):
    return re.findall(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", tree_text, re.M)


def _tolerant(test):
    """Whether an assert names something equal to values other than its own (approx, ANY)."""
    import ast

    return any(getattr(n, "attr", None) in TOLERANT or getattr(n, "id", None) in TOLERANT
               for n in ast.walk(test))


def _value_literals(node):
    """The literals of an expected value that each change it when changed: the value itself,
    the elements of a list, tuple, set or dict, a negated number; never a literal inside a
    call or another expression."""
    import ast

    if isinstance(node, ast.Constant):
        return [node]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _value_literals(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [c for e in node.elts for c in _value_literals(e)]
    if isinstance(node, ast.Dict):
        return [c for e in node.values if e is not None for c in _value_literals(e)]
    return []  # a call (approx tolerates small changes), a name, an expression


def _mutant(raw, node, rng):
    """The source of test function `node` with one literal of one of its top-level
    `assert X == Y` statements changed (in the expected side, Y, where it has one), so it
    fails where the original passes; None when it has no such assert."""
    import ast

    sites = []
    for stmt in node.body:
        test = stmt.test if isinstance(stmt, ast.Assert) else None
        if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
            continue
        if _tolerant(test):
            continue  # approx(1e9) == 1000000003.5 still holds
        # The expected value: never the inputs on the left, whose change may not change the
        # result (percent(0, 5) == 0.0 holds for any 5), and only literals that are the value
        # itself or an element of it: one inside a call may not count (max(3, 10), round(x, 2)).
        found = _value_literals(test.comparators[0])
        sites.extend(n for n in found if type(n.value) in (int, float, str)
                     and n.lineno == n.end_lineno)
    lines = raw.splitlines(keepends=True)
    rng.shuffle(sites)
    for const in sites:
        line = lines[const.lineno - 1]
        old = line[const.col_offset:const.end_col_offset].decode("utf-8", "surrogateescape")
        if isinstance(const.value, bool) or not old:
            continue
        # Mutants scatter on both sides of the original (longer and shorter, larger and
        # smaller), so the original is not the extreme one among its copies.
        if type(const.value) is float and re.fullmatch(r"\d+\.\d*", old):
            new = repr(round(const.value + rng.choice((-1, 1)) * rng.randrange(1, 10) + 0.5, 6))
            new = new if not new.startswith("-") else repr(const.value + 1.5)
        elif type(const.value) is int and old.isdigit():
            step = rng.randrange(1, max(10, const.value))
            value = const.value + rng.choice((-1, 1)) * step
            new = str(value if value >= 0 else const.value + step)
        elif type(const.value) is str and old[0] in "'\"" and len(old) >= 2 and old[-1] == old[0] \
                and old[-2:-1] != old[0] and "\\" not in old:
            inner, letters = old[1:-1], "abcdefghijklmnopqrstuvwxyz"
            if inner and rng.random() < 0.5:
                i = rng.randrange(len(inner))
                inner = inner[:i] + inner[i + 1:] if rng.random() < 0.5 else \
                    inner[:i] + rng.choice([c for c in letters if c != inner[i]]) + inner[i + 1:]
            else:
                inner += "".join(rng.choice(letters) for _ in range(rng.randrange(1, 4)))
            new = old[0] + inner + old[-1]
        else:
            continue
        if ast.literal_eval(new) == const.value:  # a float too large to move by a few units
            continue
        body = lines[node.lineno - 1:node.end_lineno]
        at = const.lineno - node.lineno
        body[at] = line[:const.col_offset] + new.encode() + line[const.end_col_offset:]
        return b"".join(body).decode("utf-8", "surrogateescape")
    return None


def add_canaries(tree, fail_to_pass, count=CANARIES, rng=None):
    """Plant `count` tests that must fail among the tests of the fail-to-pass files.

    A canary is a copy of one of the file's own tests with one literal of one `assert
    X == Y` changed, so it reads like the tests around it; it goes before a random
    top-level definition of the file (not always at its end) and is named with words of
    the file's test names. Code that reports every test passed, or spares the last or
    the odd-named test of a file, reports a canary passed; to spare a canary, code must
    spare its original too, which fails the fix. Files without such a test get a small
    synthetic canary. Returns their ids (empty when no file fits).
    """
    import ast
    import random as _random

    rng = rng or _random.SystemRandom()
    files = sorted({i.split("::", 1)[0] for i in fail_to_pass
                    if i.split("::", 1)[0].endswith(".py")})
    files = [f for f in files if os.path.isfile(os.path.join(tree, f))
             and not os.path.islink(os.path.join(tree, f))]
    ids = []
    for _ in range(count if files else 0):
        rel = rng.choice(files)
        path = os.path.join(tree, rel)
        with open(path, "rb") as fh:
            raw = fh.read()
        text = raw.decode("utf-8", "surrogateescape")
        try:
            body = ast.parse(raw).body
        except (SyntaxError, ValueError):
            body = []
        starts = [min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
                  for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        existing = set(_test_names(text))
        words = sorted({w for n in existing for w in n.split("_")[1:] if w.isidentifier()}) or \
            ["value", "result", "case", "check", "input", "output"]
        for _attempt in range(50):
            name = "test_" + "_".join(rng.sample(words, min(len(words), rng.choice((1, 2, 2, 3)))))
            if name not in existing and f"{rel}::{name}" not in ids:
                break
        else:
            name = "test_" + "_".join(rng.sample(words, 1)) + f"_{rng.randrange(2, 99)}"
        # Never a canary planted before (mutating one can give back its original's literal),
        # and never a fail-to-pass test: its copy would show the literals its checked
        # asserts hold back, all but the one changed.
        planted = {i.split("::", 1)[1] for i in ids if i.split("::", 1)[0] == rel}
        checked = _keys_by_file(fail_to_pass).get(rel, set())
        originals = [n for n in body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
                     and n.name not in planted | checked and not n.decorator_list and n.lineno > 0]
        rng.shuffle(originals)
        source = None
        for node in originals:
            clone = _mutant(raw, node, rng)
            if clone is not None:
                source = re.sub(rf"^(\s*def\s+){re.escape(node.name)}\b", rf"\g<1>{name}", clone, count=1)
                break
        if source is None:
            a = rng.randrange(2, 10_000)
            var = rng.choice(("expected", "want", "result", "value", "got"))
            source = f"def {name}():\n    {var} = {a}\n    assert {var} == {a + rng.randrange(1, 1000)}\n"
        lines = text.splitlines(keepends=True)
        at = rng.choice(starts + [len(lines) + 1]) if starts else len(lines) + 1
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        if at > len(lines):  # at the end: the blank lines a definition has before it
            source = "\n\n" + source.rstrip("\n") + "\n"
        else:  # before a definition, which keeps the blank lines it had
            source = source.rstrip("\n") + "\n\n\n"
        lines.insert(at - 1, source)
        with open(path, "wb") as fh:
            fh.write("".join(lines).encode("utf-8", "surrogateescape"))
        ids.append(f"{rel}::{name}")
    return ids


# --- checked asserts -----------------------------------------------------------------------
# Code that the tests import runs in the test process and can make pytest report anything,
# so a verdict computed there can be forged. What it cannot forge is a value it does not
# know: each top-level `assert <expression> <op> <literal>` of a fail-to-pass test becomes a
# call that sends the expression's value out, the literal stays with the verifier, and the
# comparison is made here. A fail-to-pass test passes only when pytest says so *and* every
# checked assert ran and holds.

CHECK_OPS = {"Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b,
             "Lt": lambda a, b: a < b, "LtE": lambda a, b: a <= b,
             "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
             "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}
# Values a policy could send without knowing the expected one: a check that one of them
# passes (`== 0`, `in [None, 3]`, `in "0123"`, which "" passes) is not counted as checked.
TRIVIAL: tuple[object, ...] = (None, True, False, 0, 1, -1, 0.0, 1.0, "", b"", (), [], {}, set())


def trivially_holds(op, literal, literal_left=False):
    """Whether a check `<value> <op> <literal>` can be passed without knowing the literal:
    any op but == and `in` (!= holds for NaN, < and > for infinities, `not in` for an empty
    value), `<literal> in value` (a value listing every candidate holds it), or a value of
    `TRIVIAL` that passes it: for `in` a string or bytes literal always (the empty one is
    in each), a container holding one of them."""
    if op not in ("Eq", "In") or literal_left:
        return True
    if op == "Eq":
        return any(type(literal) is type(t) and literal == t for t in TRIVIAL)
    if isinstance(literal, (str, bytes)):
        return True
    for t in TRIVIAL:
        try:
            if t in literal:
                return True
        except TypeError:  # an unhashable probe in a set or dict cannot be in it
            continue
    return False


def _literal(node):
    import ast

    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _test_functions(body, prefix=""):
    """(key, FunctionDef) of the test functions of a module body: `name` or `Class::name`."""
    import ast

    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef) and not prefix and node.name.startswith("Test"):
            yield from _test_functions(node.body, node.name + "::")


def _leaves_early(func):
    """Whether a function can return or yield before its last statement (or is async)."""
    import ast

    if isinstance(func, ast.AsyncFunctionDef):
        return True
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def externalize_checks(source, keys, name, start=0, keep_assert=False):
    """Rewrite the top-level literal asserts of the test functions named in `keys` (see above).

    Returns (new source bytes, plan {index: {"test", "line" (counted from the test's
    `def`, so canaries planted between tests move nothing), "op", "literal",
    "literal_left", "trivial"}}), indexes from `start`; (source, {}) when nothing could be
    rewritten. Line numbers are kept; an assert sharing a line with other code is left as
    it is. `keep_assert` (True, or the keys it holds for): the assert stays, with only its
    expression wrapped in the call, so the test runs exactly as written and the value is
    reported too (a build's runs, where nothing is hidden, and pass-to-pass tests, whose
    literals the policy has seen).
    """
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return source, {}
    lines = source.splitlines(keepends=True)
    edits, plan, index = [], {}, start
    for key, func in _test_functions(tree.body):
        if key not in keys or _leaves_early(func):
            continue
        for stmt in func.body:
            test = stmt.test if isinstance(stmt, ast.Assert) else None
            if not isinstance(test, ast.Compare) or len(test.ops) != 1:
                continue
            op = type(test.ops[0]).__name__
            left, right = test.left, test.comparators[0]
            (lit_l, val_l), (lit_r, val_r) = _literal(left), _literal(right)
            if op not in CHECK_OPS or lit_l == lit_r:
                continue
            if _tolerant(test):
                continue
            expr = right if lit_l else left
            first, last = lines[stmt.lineno - 1], lines[stmt.end_lineno - 1]
            if first[:stmt.col_offset].strip() or last[stmt.end_col_offset:].strip()[:1] not in (b"", b"#"):
                continue
            seg = ast.get_source_segment(source.decode("utf-8", "surrogateescape"), expr)
            if seg is None:
                continue
            literal = val_l if lit_l else val_r
            plan[index] = {"test": key, "line": stmt.lineno - func.lineno, "op": op, "literal": repr(literal),
                           "literal_left": lit_l, "trivial": trivially_holds(op, literal, lit_l)}
            call = f"{name}({index}, ({seg}))".encode("utf-8", "surrogateescape")
            kept = keep_assert if isinstance(keep_assert, bool) else key in keep_assert
            edits.append((expr if kept else stmt, call))
            index += 1
    for node, call in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        gap = (node.end_lineno - node.lineno) - call.count(b"\n")
        call += b"\n" * max(gap, 0)
        head = lines[node.lineno - 1][:node.col_offset]  # (ast's offsets count bytes)
        tail = lines[node.end_lineno - 1][node.end_col_offset:]
        lines[node.lineno - 1:node.end_lineno] = [head + call + tail]
    return b"".join(lines), plan


def apply_checks(outcomes, sent, plan):
    """Outcomes with every reported pass that a failed, missing or unreadable checked assert
    contradicts turned into `failed`; and {id: why} for each one turned."""

    by_test = {}
    for index, item in plan.items():
        by_test.setdefault(item["file"] + "::" + item["test"], []).append((index, item))
    out, why = dict(outcomes), {}
    for nodeid, outcome in outcomes.items():
        wanted = [(i, item) for i, item in by_test.get(nodeid.split("[", 1)[0], [])
                  if "only" not in item or nodeid in item["only"]]
        if outcome != "passed" or not wanted:
            continue
        got = sent.get(nodeid, {})
        for index, item in wanted:
            if index not in got:
                why[nodeid] = "a checked assert did not run"
                break
            if not check_holds(item, got[index]):
                why[nodeid] = "a checked assert does not hold"
                break
        if nodeid in why:
            out[nodeid] = "failed"
    return out, why


def check_holds(item, encoded):
    """Whether the value a checked assert sent (encoded) passes it; False for anything
    that cannot be read or compared (the value is the policy's: anything may go wrong)."""
    import ast

    try:
        value = _decode(encoded)
        literal = ast.literal_eval(item["literal"])
        a, b = (literal, value) if item["literal_left"] else (value, literal)
        return bool(CHECK_OPS[item["op"]](a, b))
    except Exception:
        return False


def test_keys(source):
    """The keys (`name`, `Class::name`) of a test file's test functions."""
    import ast

    try:
        return {key for key, _ in _test_functions(ast.parse(source).body)}
    except (SyntaxError, ValueError, RecursionError):
        return set()


def checked_fail_to_pass(hidden, fail_to_pass, workspace=None, held_at_parent=None):
    """The fail-to-pass ids whose verdict code under test cannot forge (what a build keeps):
    tests of the hidden files with a checked assert that discriminates: an `==` or `in`
    that no trivial value passes (`trivially_holds`), whose literal appears nowhere in the
    policy's own copy of that file (`workspace`: {path: bytes} of the starting workspace),
    so the policy has not seen it, and which the parent's code did not already pass
    (`held_at_parent`: {test id: [lines of the checks that held in the build's run at the
    parent]}), so only the fix can pass it."""
    held = held_at_parent or {}
    keep = []
    for rel, keys in _keys_by_file(fail_to_pass).items():
        if rel in hidden and rel.endswith(".py"):
            _, plan = externalize_checks(hidden[rel], keys, "_check")
            seen = _literals_in((workspace or {}).get(rel, b""))
            lines = {}
            for item in plan.values():
                if not item["trivial"] and not seen(item["literal"]):
                    lines.setdefault(rel + "::" + item["test"], set()).add(item["line"])
            keep += [i for i in fail_to_pass if i.split("[", 1)[0] in lines
                     and lines[i.split("[", 1)[0]] - set(held.get(i, ()))]
    return [i for i in fail_to_pass if i in set(keep)]


def held_lines(plan, checks, ids):
    """{test id: [lines]}: of the checked asserts a build's run reported (`checks`, as
    `run_tests` returns them, for the plan of `externalize_checks`), those whose value
    passed them, for each of `ids`."""
    out = {}
    for nodeid in ids:
        lines = sorted({plan[int(index)]["line"] for index, value in checks.get(nodeid, {}).items()
                        if int(index) in plan and check_holds(plan[int(index)], value)})
        if lines:
            out[nodeid] = lines
    return out


def _literals_in(source):
    """A test whether a literal (its repr) is written in a Python source: among its
    constants and literal lists, tuples, sets and dicts; when the source does not parse,
    whether its text appears anywhere in it."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        text = source.decode("utf-8", "replace")
        return lambda literal: literal.strip("'\"") in text
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp)):
            ok, value = _literal(node)
            if ok:
                out.add(repr(value))
    return out.__contains__


# --- scoring -------------------------------------------------------------------------------

def _keys_by_file(ids):
    """{file: {test key without parameters}} of pytest ids (`file::Class::name[param]`)."""
    out = {}
    for i in ids:
        rel, _, rest = i.partition("::")
        if rest:
            out.setdefault(rel, set()).add(rest.split("[", 1)[0])
    return out


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
    base = _base()
    component, reward = base.component, base.reward
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
        if base._regular_file(patch_file):
            with open(patch_file, "rb") as fh:
                text = fh.read(20_000_000).decode("utf-8", "surrogateescape")
            applied, detail = _patch().apply_patch(tree, text)
        else:
            applied, detail = True, "workspace submitted as is"
    except OSError as exc:
        applied, detail = False, f"the workspace could not be read: {exc}"
    comps["patch_applies"] = component(applied, 0, "medium", gate=True, detail=detail)
    touched = []
    if applied:
        touched = touched_protected(tree, ref["protected"], ref["base_protected"])
        now = sorted(tree_hashes(tree))
        policy = policy or base.LocalPolicy()
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
    patch = _patch()
    for rel, data in hidden.items():
        patch.write_file(tree, rel, data)
    for rel in ref.get("hidden_deleted", []):
        patch.remove_file(tree, rel)
    canaries = add_canaries(tree, f2p)
    check_name, plan = "_rlforge_check_" + os.urandom(6).hex(), {}
    f2p_keys = {rel: keys for rel, keys in _keys_by_file(f2p).items() if rel in hidden}
    p2p_lines = ref.get("p2p_checks", {})  # {pass-to-pass id: lines the fix passed}
    p2p_keys = _keys_by_file(list(p2p_lines))
    for rel in sorted(set(f2p_keys) | set(p2p_keys)):
        path = os.path.join(tree, rel)
        if not (rel.endswith(".py") and base._regular_file(path)):
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
    base = _base()
    options = {"--logs": "/logs/verifier", "--python": None}
    for flag in options:
        if flag in argv:
            i = argv.index(flag)
            options[flag] = argv[i + 1]
            del argv[i:i + 2]
    def score_here(ref, tests_dir):
        policy = base.LocalPolicy(python=options["--python"])
        policy.require_apart()
        try:
            return score_repair(ref, tests_dir, policy=policy)
        finally:
            policy.sweep()

    return base.verifier_main(argv[0], options["--logs"], score_here)


if __name__ == "__main__":
    sys.exit(main())
