"""Go modules tested with `go test`: a built-in runner, registered like a plug-in's.

Detection: `go.mod` at the root. Tests: `_test.go` files; `testdata/` and `vendor/`
directories, `go.mod`, `go.sum` and `go.work` are protected with them (a replace
directive or a vendored copy could stand in for any dependency). Dependencies: the
module's `require`s; there is no module proxy here, so a module needing one must vendor
it (vendor/modules.txt) or need none (the standard library): otherwise its environment
fails to build, with the modules named. The toolchain is the machine's `go` (Debian's
golang-go), its version pinned in the task. A run compiles each package's tests and runs
each top-level test in a process of its own (`rlforge/verify/standalone/gotest.py`),
scored by the `repair-go` verifier (`gorepair.py`): a static gate keeps the submission's
code from reaching the test harness (its stdout, exit status, own binary; `goreach`),
each test process can run no program and open nothing under /proc (`golaunch`: Landlock
and seccomp; a host without them makes no Go tasks, with the reason), the test sources
leave the tree before any test runs, and canary tests must fail; Go has no checked
asserts here (see `gorepair`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlforge.errors import UserError
from rlforge.tasks.generators.repair.runners.base import Dependencies, TestRun, TestRunner
from rlforge.tasks.generators.repair.runners.golang_adversarial import go_adversarials
from rlforge.verify.standalone import golaunch, task_files
from rlforge.verify.standalone.goreach import reach_of_files
from rlforge.verify.standalone.gotest import launcher_python

if TYPE_CHECKING:
    from rlforge.tasks.generators.repair.options import RepoSettings

RULES: dict[str, Any] = {
    "patterns": [r"_test\.go$", r"(^|/)testdata/", r"(^|/)vendor/"],
    "names": ["go.mod", "go.sum", "go.work", "go.work.sum"],
    "suffixes": [],
}
REQUIRE_LINE = re.compile(r"^\s*([^\s()]+)\s+(v[^\s]+)")
SYSTEM_PYTHON = "/usr/bin/python3"


@functools.cache
def go_version() -> str:
    """The version of the machine's go tool (e.g. go1.19.8); '' when there is none."""
    go = shutil.which("go")
    if go is None:
        return ""
    proc = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GOENV": "off",
                               "HOME": "/nonexistent", "GOTOOLCHAIN": "local"})
    return proc.stdout.strip()


@functools.cache
def launcher_refusal() -> str:
    """Why the test launcher (`golaunch`) cannot restrict a test process on this machine;
    '' when its probe holds (exec, memfd and /proc refused)."""
    try:
        ran = subprocess.run([launcher_python(), "-I", "-S", golaunch.__file__, "--probe"],
                             capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the launcher's probe did not run: {exc}"
    if ran.returncode == 0 and ran.stdout.strip() == "ok":
        return ""
    lines = (ran.stderr or ran.stdout).strip().splitlines()
    return lines[-1] if lines else f"the launcher's probe exited {ran.returncode}"


def module_requirements(gomod: str) -> list[str]:
    """`path version` of every module go.mod requires (single lines and blocks)."""
    out, block = [], False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if block:
            if line == ")":
                block = False
            elif (m := REQUIRE_LINE.match(line)):
                out.append(f"{m.group(1)} {m.group(2)}")
        elif line.startswith("require"):
            rest = line[len("require"):].strip()
            if rest == "(":
                block = True
            elif (m := REQUIRE_LINE.match(rest)):
                out.append(f"{m.group(1)} {m.group(2)}")
    return sorted(set(out))


class GoTest(TestRunner):
    name = "go"
    version = 1
    language = "go"
    description = "Go modules tested with go test (each top-level test in its own process)"
    manifests = ("go.mod",)
    verifier = "repair-go"
    result_format = "go-test"
    source_suffixes = (".go",)
    test_files_text = "`*_test.go` files, anything under a `testdata/` or `vendor/` directory"
    # The test process can run no program and reach no /proc (golaunch), but what stops
    # the submission's own code from writing the verdict in-process is the static gate
    # (goreach), a list of routes. A red team walked around it: an import alias
    # spelled with letters the scan did not read, plus a seccomp filter of the test's own
    # holding a failing exit. Both are closed, but until a red team finds nothing, Go tasks
    # are for models one trusts.
    forgeable = ("a Go test runs in one process with the submission's code; the static gate "
                 "that keeps it from writing the verdict is a list of routes")

    def test_rules(self) -> dict:
        return RULES

    def is_test_file(self, path: str) -> bool:
        return path.endswith("_test.go") and not re.search(r"(^|/)(vendor|testdata)/", path)

    def dependencies(self, files: Mapping[str, bytes]) -> Dependencies:
        """The modules go.mod requires, unless vendor/ holds them (nothing to prepare)."""
        sources = [p for p in ("go.mod", "vendor/modules.txt") if p in files]
        reqs = module_requirements(files.get("go.mod", b"").decode("utf-8", "replace"))
        h = hashlib.sha256()
        for path in sources:
            h.update(path.encode() + b"\0" + files[path] + b"\0")
        vendored = "vendor/modules.txt" in files
        return Dependencies(() if vendored else tuple(reqs), tuple(sources), h.hexdigest()[:16])

    def env_key(self, requirements: list[str], settings: "RepoSettings") -> str:
        blob = json.dumps({"go": go_version(), "requirements": sorted(requirements)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def prepare(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> Path:
        """A directory naming the toolchain (Go needs no environment beyond the machine's
        go tool and the workspace's vendor/)."""
        version = go_version()
        if not version:
            raise UserError("Go tests need the go tool: apt-get install golang-go "
                            "(scripts/setup.sh installs it)")
        refused = launcher_refusal()
        if refused:
            raise UserError(f"Go tests run only where they can neither run programs nor reach /proc, "
                            f"and this host cannot enforce that ({refused}): Go repair tasks need "
                            "Linux 6.12 or later with Landlock enabled, on x86-64")
        if requirements:
            raise UserError(f"the module needs {len(requirements)} module(s) that are not vendored "
                            f"({', '.join(requirements[:3])}): rlforge has no Go module proxy, so "
                            "vendor them (go mod vendor) or drop them")
        env = cache_dir / "go-envs" / self.env_key(requirements, settings)
        env.mkdir(parents=True, exist_ok=True)
        (env / "toolchain.json").write_text(json.dumps({"go": version}) + "\n")
        return env

    def pinned(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> list[str]:
        return [f"go {go_version()}", *requirements]

    def runtime_version(self) -> str:
        return go_version()

    def test_run(self, *, tree: str, tests: str, out: str, env: str, settings: "RepoSettings",
                 paths: list[str] | None, budget_sec: float, check_name: str | None,
                 ids: list[str] | None = None) -> TestRun:
        spec = {"tree": tree, "ids": None, "paths": paths, "per_test_timeout": settings.per_test_timeout,
                "budget_sec": budget_sec, "env": dict(settings.env)}
        files = {**task_files(self.verifier), "run.json": json.dumps(spec).encode()}
        python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else "python3"
        return TestRun([python, "-I", f"{tests}/rlforge_gorepair.py", "--run-tests",
                        f"{tests}/run.json", f"{out}/results.json"], files)

    def template_context(self, requirements: list[str], settings: "RepoSettings",
                         cache_dir: Path) -> dict:
        return {**super().template_context(requirements, settings, cache_dir),
                "go_version": go_version().removeprefix("go")}

    def task_metadata(self, requirements: list[str], settings: "RepoSettings") -> dict:
        return {"env_key": self.env_key(requirements, settings), "go_version": go_version()}

    def checked_fail_to_pass(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                             workspace: Mapping[str, bytes], held_at_parent: dict) -> list[str]:
        """Every fail-to-pass test in a file the verifier can plant canaries in (one that
        imports "testing"): Go's tests have no checked asserts here, the canaries are
        what makes a forged result show (`gorepair`)."""
        ok = {p for p, d in hidden.items() if re.search(rb'^\s*(import\s+)?"testing"\s*$', d, re.M)}
        return [i for i in fail_to_pass if i.split("::", 1)[0] in ok]

    def reference_fields(self, settings: "RepoSettings", workspace: Mapping[str, bytes]) -> dict:
        """`go_reach`: what the parent's non-test code of each package already reaches of
        the test harness (`goreach`); a submission reaching more fails before it runs."""
        return {"go_reach": reach_of_files(workspace)}

    def adversarials(self, **task) -> list:
        return go_adversarials(**task)
