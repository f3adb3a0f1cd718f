"""Go tests run as policy code: compiled by the go tool, each top-level test in a process.

Every package with tests is compiled once (`go test -c`, vet off, cgo off, no module
proxy, the user's go env file and workspaces ignored); compiling runs no code of the
package. The binaries are then moved out of the tree into a directory the tests can only
read, and each wanted top-level test runs alone in a fresh process
(`-test.run '^TestX$' -test.v -test.paniconexit0`), cut off after the per-test timeout.
Each process is started by `golaunch`, after which it can run no program (not even its
own binary again) and open nothing under /proc; the launcher's probe runs first where the
tests run, and a host that cannot enforce that is an infrastructure failure
(SandboxBroken), never a weaker run. A test that runs a program (the helper-process
pattern) therefore fails, at the parent and with the fix alike.

The verdict of a test comes from the process's stdout pipe, which the verifier owns, read
as the testing package prints it (`--- PASS: TestX/sub (0.01s)`). A test passes only when
its process exited 0 and printed PASS for it and never FAIL; a test that calls os.Exit
panics (paniconexit0) or never prints PASS. Code of the package can print such lines
itself (Go 1.19 has no framing the test process cannot imitate), so a run must be judged
with canary tests beside the real ones: code that forges results without knowing which
tests are canaries forges theirs too (`gorepair`).

Test ids are `<test file>::<TestName>[/<subtest>]`: the `_test.go` file that defines the
top-level test, found by reading the package's test files.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # rlforge.verify.standalone.gotest
    from . import golaunch
    from .policy_code import SandboxBroken
else:  # tests/rlforge_gotest.py
    import rlforge_golaunch as golaunch
    from rlforge_policy_code import SandboxBroken

GO_PATH = "/usr/local/go/bin:/usr/lib/go/bin:/usr/local/bin:/usr/bin:/bin"
TEST_FUNC = re.compile(rb"^func\s+(Test[A-Za-z0-9_]*)\s*\(\s*\w+\s+\*testing\.T\s*\)", re.M)
VERDICT = re.compile(r"^\s*\x16?\s*--- (PASS|FAIL|SKIP): (\S+) \(")
SKIP_DIRS = ("vendor", "testdata")
OUTCOME = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
# The interpreter that runs the launcher inside the policy's sandbox (which mounts /usr)
PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
LAUNCHER = "launch.py"


def build_env(tree_inside, vendored):
    """The go tool's environment: offline, reproducible, nothing read from the tree's home."""
    return {"PATH": GO_PATH, "GOENV": "off", "GOWORK": "off", "GO111MODULE": "on",
            "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0",
            "GOFLAGS": "-mod=vendor" if vendored else "-mod=readonly",
            "GOTELEMETRY": "off", "HOME": tree_inside}


def test_packages(tree):
    """Directories (relative, "." for the root) holding `_test.go` files, sorted."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(tree):
        rel = os.path.relpath(dirpath, tree).replace(os.sep, "/")
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith((".", "_"))
                             and not os.path.islink(os.path.join(dirpath, d)))
        if any(n.endswith("_test.go") for n in filenames):
            found.add(rel)
    return sorted(found)


def package_of(test_id):
    """The package directory of a test id ("." for the root)."""
    path = test_id.split("::", 1)[0]
    return path.rsplit("/", 1)[0] if "/" in path else "."


def test_functions(tree, package):
    """{top-level test name: the test file (tree-relative) that defines it} of a package."""
    out = {}
    root = os.path.join(tree, package)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for name in names:
        path = os.path.join(root, name)
        if not name.endswith("_test.go") or os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            text = fh.read(20_000_000)
        rel = name if package == "." else f"{package}/{name}"
        for m in TEST_FUNC.finditer(text):
            out.setdefault(m.group(1).decode(), rel)
    return out


def verdicts(stdout, top):
    """{name: passed | failed | skipped} of `top` and its subtests, from a test binary's
    verbose output: FAIL wins over anything printed for the same name."""
    out = {}
    for line in stdout.splitlines():
        m = VERDICT.match(line)
        if not m or not (m.group(2) == top or m.group(2).startswith(top + "/")):
            continue
        value = OUTCOME[m.group(1)]
        if out.get(m.group(2)) != "failed":
            out[m.group(2)] = value
    return out


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def _compile(tree, packages, policy, vendored, deadline, log_tail):
    """Compile each package's test binary in one launch; {package: binary dir name} of
    those that built, the directory holding them (moved out of the tree), build errors."""
    inside, _ = policy.places(tree, {})
    out_name = ".rlforge-bin-" + os.urandom(6).hex()
    # The go tool ignores a go.mod in the temporary directory, which is the tree for policy
    # code (`LocalPolicy`): its caches and temporary files go to a directory of their own.
    lines = ['cache=$(mktemp -d /tmp/rlforge-go-XXXXXX) || exit 1', 'mkdir -p "$cache/tmp"',
             'export GOCACHE="$cache/build" GOPATH="$cache/path" GOMODCACHE="$cache/mod" TMPDIR="$cache/tmp"',
             f'mkdir -p "{out_name}"']
    mark = "rlforge-built-" + os.urandom(6).hex()
    for i, pkg in enumerate(packages):
        lines.append(f'go test -c -vet=off -o "{out_name}/{i}.test" {_quote("./" + pkg)} 2>&1 || echo')
        # the size as the compiler left it (no code of the package has run): a binary the
        # launcher would not copy out (over its per-file cap) is told from one not built
        lines.append(f'[ -f "{out_name}/{i}.test" ] && echo "{mark} {i} $(wc -c < "{out_name}/{i}.test")"')
    script = "\n".join(lines) + '\nrm -rf "$cache"\n'
    handle = policy.start(["/bin/sh", "-c", script], tree, {}, build_env(inside, vendored),
                          timeout=max(1.0, deadline - time.monotonic()))
    while not handle.poll():
        time.sleep(0.05)
    ran = handle.result()
    sizes = {}
    for line in (ran.stdout or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == mark and parts[1].isdigit() and parts[2].isdigit():
            sizes[int(parts[1])] = int(parts[2])
    log_tail.append("\n".join(line for line in ((ran.stdout or "") + (ran.stderr or "")).splitlines()
                              if not line.startswith(mark)))
    bins = tempfile.mkdtemp(prefix="rlforge-gobin-")
    built, errors, too_large = {}, [], []
    src = os.path.join(tree, out_name)
    for i, pkg in enumerate(packages):
        path = os.path.join(src, f"{i}.test")
        if os.path.isfile(path) and not os.path.islink(path):
            shutil.copyfile(path, os.path.join(bins, f"{i}.test"))
            os.chmod(os.path.join(bins, f"{i}.test"), 0o755)
            built[pkg] = f"{i}.test"
        elif i in sizes:
            too_large.append(f"{pkg}: its test binary ({sizes[i] / 1e6:.1f} MB) was built but not "
                             "copied out of the sandbox (over sandbox.copy_file_mb)")
        else:
            errors.append(f"{pkg}: the package's tests do not build")
    shutil.rmtree(src, ignore_errors=True)
    os.chmod(bins, 0o755)
    return built, bins, errors, too_large


def remove_test_sources(tree):
    """Delete every `_test.go` file of the tree (outside vendor/ and testdata/) once the
    binaries are built: the hidden tests and the canaries are compiled in, and code the
    binaries run must not read which tests they hold from their sources."""
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS
                       and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            if name.endswith("_test.go"):
                try:
                    os.unlink(os.path.join(dirpath, name))
                except OSError:
                    pass


def launcher_python():
    """The interpreter for the launcher: the system's python3, else this one."""
    return next((p for p in PYTHONS if os.access(p, os.X_OK)), sys.executable)


def check_launcher(policy, tree, bins, launch, deadline):
    """Run the launcher's probe where the tests will run (before any test binary has):
    SandboxBroken unless it confirms that exec, memfd and /proc are refused there."""
    handle = policy.start([*launch, "--probe"], tree, {"bin": bins}, {"PATH": GO_PATH},
                          timeout=max(1.0, min(30.0, deadline - time.monotonic())))
    while not handle.poll():
        time.sleep(0.02)
    ran = handle.result()
    if ran.code != 0 or (ran.stdout or "").strip() != "ok":
        why = (ran.stderr or ran.stdout or f"exit status {ran.code}").strip().splitlines()
        raise SandboxBroken("Go tests run only where they can neither run programs nor reach "
                            f"/proc, which this host cannot enforce: {why[-1] if why else ran.reason}")


def run_go_tests(tree, ids=None, *, paths=None, per_test_timeout=30.0, budget_sec=600.0,
                 env=None, policy, vendored=None, hide_sources=False):
    """Run Go tests in tree, as policy code; what happened to each (see the module docstring).

    ids: the test ids to run, or None for every test of the packages holding `paths`
    (test files; None: every package). Returns the runner-independent result: outcomes
    {id: passed | failed | skipped | timeout | missing}, started, hung, collect_errors,
    collection_hang, budget_exhausted, sessions, seconds, log_tail, checks (none: Go's
    tests have no checked asserts here). `policy`: the launcher of policy code
    (`policy_code`); `vendored`: build with vendor/ (None: when vendor/modules.txt exists);
    `hide_sources`: delete the tree's test sources once compiled (`remove_test_sources`;
    the verifier's private tree: the build's check runs its trees again).
    """
    started_at = time.monotonic()
    deadline = started_at + budget_sec
    if vendored is None:
        vendored = os.path.isfile(os.path.join(tree, "vendor", "modules.txt"))
    if ids is not None:
        packages = sorted({package_of(i) for i in ids})
    elif paths is not None:
        packages = sorted({package_of(p + "::") for p in paths if p.endswith("_test.go")})
    else:
        packages = test_packages(tree)
    defined = {pkg: test_functions(tree, pkg) for pkg in packages}
    log_tail = []
    result = {"collection_hang": False, "budget_exhausted": False, "sessions": 0, "checks": {}}
    outcomes, started, hung = {}, [], []
    built, bins, errors, too_large = ({}, None, [], []) if not packages else \
        _compile(tree, packages, policy, vendored, deadline, log_tail)
    if hide_sources:
        remove_test_sources(tree)
    if built:
        shutil.copyfile(golaunch.__file__, os.path.join(bins, LAUNCHER))
        os.chmod(os.path.join(bins, LAUNCHER), 0o644)
    if ids is not None:
        tops = [(package_of(i), i.split("::", 1)[1].split("/", 1)[0]) for i in ids]
    else:
        tops = [(pkg, name) for pkg in packages if pkg in built for name in sorted(defined[pkg])]
    try:
        inside, places = policy.places(tree, {"bin": bins} if bins else {})
        launch = [launcher_python(), "-I", "-S", f"{places.get('bin')}/{LAUNCHER}"]
        if built:
            check_launcher(policy, tree, bins, launch, deadline)
        for pkg, name in dict.fromkeys(tops):
            rel = defined.get(pkg, {}).get(name)
            if rel is None or pkg not in built:
                continue
            if time.monotonic() > deadline - 1:
                result["budget_exhausted"] = True
                break
            top_id = f"{rel}::{name}"
            started.append(top_id)
            result["sessions"] += 1
            cwd = inside if pkg == "." else f"{inside.rstrip('/')}/{pkg}"
            argv = [*launch, f"{places['bin']}/{built[pkg]}", cwd, f"-test.run=^{name}$", "-test.v", "-test.paniconexit0", "-test.count=1",
                    f"-test.timeout={per_test_timeout:g}s"]
            # one thread runs Go code: goroutines racing on an interface value (memory
            # access without unsafe) rarely interleave, and code cannot raise it (runtime
            # is gated; a Setenv after start has no effect)
            run_env = {"PATH": GO_PATH, **(env or {}), "GOMAXPROCS": "1"}
            limit = min(per_test_timeout + 5, max(1.0, deadline - time.monotonic()))
            handle = policy.start(argv, tree, {"bin": bins}, run_env, timeout=limit)
            while not handle.poll():
                time.sleep(0.02)
            ran = handle.result()
            got = verdicts(ran.stdout or "", name)
            log_tail.append((ran.stdout or "")[-2000:])
            if ran.timed_out or (ran.code not in (0, None) and "panic: test timed out" in (ran.stdout or "")):
                hung.append(top_id)
                outcomes[top_id] = "timeout"
                continue
            for test, value in got.items():  # a pass counts only from a process that exited 0
                outcomes.setdefault(f"{rel}::{test}", "failed" if value == "passed" and ran.code != 0
                                    else value)
            outcomes.setdefault(top_id, "failed")
    finally:
        if bins:
            shutil.rmtree(bins, ignore_errors=True)
    for pkg in packages:
        if pkg not in built:
            for name, rel in defined[pkg].items():
                outcomes.setdefault(f"{rel}::{name}", "failed")
    why = "timeout" if result["budget_exhausted"] else "missing"
    for test_id in ids or ():
        outcomes.setdefault(test_id, why)
    result.update(outcomes=outcomes, started=started, hung=hung, collect_errors=sorted(errors),
                  too_large=sorted(too_large),
                  log_tail="".join(log_tail)[-4000:], seconds=round(time.monotonic() - started_at, 3))
    return result
