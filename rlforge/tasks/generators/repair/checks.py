"""Build-time validation of a repair task, SWE-bench style, in the sandbox.

For one commit: tree A = the parent with the commit's test changes applied; tree B = A
with the gold diff applied (by `git apply`, as solution/solve.sh does). The tests run twice
on each, in the sandbox with the repository's prepared environment mounted at /opt/venv:

- fail-to-pass (F2P): fails (or is absent) in both runs of A, passes in both runs of B;
- pass-to-pass (P2P): passes in all four runs;
- flaky: a different verdict between the two runs of the same tree; never used.

The fixed tree runs first, its whole suite. Only a test that passes there can be
fail-to-pass or pass-to-pass, so the parent's run and every repeat run those tests alone
(for a runner that `selects_tests`; the others run whole), and when none passes (the
suite does not collect with this environment, or the fix hangs) the parent is not run at
all: the commit is dropped for what that one run shows ("no F2P", a hang). The second run
of each tree happens only when the first runs leave a fail-to-pass test possible
(`undecided`); a commit whose first runs show none, or hang, is dropped either way.

Only tests that live in test files count (a doctest in a source module or the README
would ask the policy to write it). A commit is kept with F2P >= 1, and P2P >= 1 when the
suite has other tests. Every other outcome is a rejection with one of the reasons in
`REASONS`. Results are stored in `repair_checks`, keyed by everything that decides them,
so rebuilding from the same database gives the same tasks without running anything.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Awaitable, Callable, Collection, Protocol, cast

from rlforge import db
from rlforge.errors import UserError
from rlforge.sandbox import read_file, settings_with_mode, spec_of
from rlforge.tasks.generators.repair import runners
from rlforge.tasks.generators.repair.gitrepo import CommitSnapshot
from rlforge.tasks.generators.repair.options import RepairOptions, RepoSettings
from rlforge.tasks.generators.repair.runners import TestRunner
from rlforge.tasks.generators.repair.runners.python import system_python_version
from rlforge.verify.standalone import asserts, protect

__all__ = ["Checker", "CheckResult", "classify", "runner_of", "system_python_version", "write_tree"]

CHECK_VERSION = 5  # 2: pytest run with autoload off, -c config, FIFO reports; 3: literal
#                    asserts report their values (hidden ones at the parent, all with the fix);
#                    4: held-back variants of the pass-to-pass tests measured; 5: variants
#                    change a word's form too (bump it whenever variants.candidates changes)
KEPT = "kept"
REJECTED = "rejected"
# Rejection reasons of the build-time check (selection adds its own, see select.py).
REASONS = ("environment failed to build", "patch does not apply", "hang at parent",
           "hang with the fix", "no F2P", "flaky", "no P2P", "sandbox failure")


@dataclass
class CheckResult:
    """The verdict on one commit."""

    status: str
    reason: str = ""
    detail: str = ""
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    env_key: str = ""
    gold_seconds: float = 0.0
    seconds: float = 0.0
    cached: bool = False
    #: {fail-to-pass id: lines of its checked asserts the parent's code already passed}
    held_at_parent: dict[str, list[int]] = field(default_factory=dict)
    #: {pass-to-pass or fail-to-pass id: lines of its literal asserts the fix passed in
    #: every run} (a task's reference keeps the pass-to-pass ones)
    p2p_checks: dict[str, list[int]] = field(default_factory=dict)
    #: copies of pass-to-pass tests with an input changed, with the values they gave in
    #: two runs at the parent and two with the fix (`rlforge/verify/standalone/variants.py`)
    p2p_variants: list[dict] = field(default_factory=list)

    @property
    def kept(self) -> bool:
        return self.status == KEPT


def write_tree(root: Path, files: dict[str, bytes], executable: AbstractSet[str] = frozenset()) -> None:
    """Materialise files under root, readable and writable by the sandbox user."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o777 if rel in executable else 0o666)
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        d.chmod(0o777)


def apply_gold(tree: Path, diff: str) -> str | None:
    """`git apply` the gold diff in tree (a plain directory); None, or why it failed."""
    if not diff:
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull,
           "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=tree, env=env,
                          input=diff.encode("utf-8", "surrogateescape"), capture_output=True)
    if proc.returncode != 0:
        return proc.stderr.decode(errors="replace").strip()[:300] or f"git apply exited {proc.returncode}"
    return None


def runner_of(settings: RepoSettings) -> TestRunner:
    """The test runner a repository's settings name (`python` when they name none)."""
    return runners.get(settings.runner or "python")


class EnvCache:
    """Prepared environments of this build, by runner and environment key; failures are
    remembered too."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir
        self._done: dict[tuple, Path | str] = {}
        self._locks: dict[tuple, asyncio.Lock] = {}  # one per key: other keys do not wait

    async def get(self, runner: TestRunner, requirements: list[str], settings: RepoSettings) -> Path | str:
        """The prepared environment, or the error message when it cannot be built."""
        key = (runner.id, runner.env_key(requirements, settings))
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._done:
                try:
                    self._done[key] = await asyncio.to_thread(
                        runner.prepare, list(requirements), settings, self.cache_dir)
                except UserError as exc:
                    self._done[key] = str(exc)
            return self._done[key]


class Checker:
    """Runs the build-time check of commits through one sandbox pool, under the user's
    sandbox `settings` (`rlforge.sandbox.sandbox_settings`; None: the built-in
    defaults), keeping verdicts in `repair_checks` (`con`).

    `sandboxed`, when given, replaces `run_check` (the part that runs code): a backend
    that runs it elsewhere passes its own, and `on_close` to end what it started."""

    def __init__(self, con, opts: RepairOptions, pool: Any, cache_dir: Path,
                 sandbox_mode: str = "bwrap", settings: dict | None = None,
                 sandboxed: Callable[..., Awaitable[CheckResult]] | None = None,
                 on_close: Callable[[], None] | None = None):
        self.con, self.opts, self.pool = con, opts, pool
        self._sandboxed = sandboxed or self.run_check
        self._on_close = on_close
        self.settings = settings_with_mode(settings, sandbox_mode)
        self.mode = self.settings["mode"]
        self.envs = EnvCache(cache_dir)
        self.scratch = Path(tempfile.mkdtemp(prefix="rlforge-repair-"))

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self._on_close is not None:
            self._on_close()

    # --- cache ---------------------------------------------------------------------------

    def cached(self, repo: str, sha: str, key: str) -> CheckResult | None:
        rows = self.con.execute(
            "SELECT status, reason, detail, fail_to_pass, pass_to_pass, flaky, requirements, "
            "env_key, gold_seconds, seconds, held_at_parent, p2p_checks, p2p_variants FROM repair_checks "
            "WHERE repo = ? AND sha = ? AND check_key = ?", [repo, sha, key]).fetchall()
        if not rows:
            return None
        r = rows[0]
        return CheckResult(r[0], r[1] or "", r[2] or "", list(r[3] or []), list(r[4] or []),
                           list(r[5] or []), list(r[6] or []), r[7] or "", r[8] or 0.0, r[9] or 0.0,
                           cached=True, held_at_parent=json.loads(r[10] or "{}"),
                           p2p_checks=json.loads(r[11] or "{}"), p2p_variants=json.loads(r[12] or "[]"))

    def store(self, repo: str, sha: str, key: str, r: CheckResult) -> None:
        self.con.execute("DELETE FROM repair_checks WHERE repo = ? AND sha = ? AND check_key = ?",
                         [repo, sha, key])
        self.con.execute(
            "INSERT INTO repair_checks (repo, sha, check_key, status, reason, detail, fail_to_pass, "
            "pass_to_pass, flaky, requirements, env_key, gold_seconds, seconds, checked_at, "
            "held_at_parent, p2p_checks, p2p_variants) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [repo, sha, key, r.status, r.reason, r.detail, r.fail_to_pass, r.pass_to_pass, r.flaky,
             r.requirements, r.env_key, r.gold_seconds, r.seconds, db.now(),
             json.dumps(r.held_at_parent, sort_keys=True), json.dumps(r.p2p_checks, sort_keys=True),
             json.dumps(r.p2p_variants, sort_keys=True)])

    # --- one commit ------------------------------------------------------------------------

    async def check(self, snap: CommitSnapshot, settings: RepoSettings, requirements: list[str],
                    rules: dict) -> CheckResult:
        """Check one commit (or return its stored verdict)."""
        key = self.opts.check_key(settings, requirements, runner_of(settings).check_identity(),
                                  CHECK_VERSION)
        if not self.opts.recheck:
            hit = self.cached(snap.repo, snap.sha, key)
            if hit is not None:
                return hit
        started = time.perf_counter()
        result = await self._sandboxed(snap, settings, requirements, rules)
        result.requirements = list(requirements)
        result.seconds = round(time.perf_counter() - started, 3)
        if result.reason not in ("environment failed to build", "sandbox failure"):
            self.store(snap.repo, snap.sha, key, result)  # infrastructure trouble is retried
        return result

    async def run_check(self, snap: CommitSnapshot, settings: RepoSettings,
                        requirements: list[str], rules: dict) -> CheckResult:
        """Check one commit in sandboxes of `pool`: its tests on the parent and the fixed
        trees (no cache)."""
        if snap.unsupported:
            return CheckResult(REJECTED, "patch does not apply",
                               f"the fix changes symlinks or submodules: {', '.join(snap.unsupported[:3])}")
        runner = runner_of(settings)
        venv = await self.envs.get(runner, requirements, settings)
        if isinstance(venv, str):
            return CheckResult(REJECTED, "environment failed to build", venv[-300:])
        work = Path(tempfile.mkdtemp(prefix=f"{snap.sha[:12]}-", dir=self.scratch))
        try:
            a = work / "parent"
            a.mkdir()
            write_tree(a, {**snap.workspace, **snap.hidden}, snap.executable)
            for rel in snap.hidden_deleted:
                (a / rel).unlink(missing_ok=True)
            b = work / "fixed"
            shutil.copytree(a, b)
            why = apply_gold(b, snap.gold_diff)
            if why:
                return CheckResult(REJECTED, "patch does not apply", why)
            write_tree(b, {})  # permissions of anything git apply created
            # At the parent the hidden tests' literal asserts also report their values, so
            # a check the parent's code already passes is known (and not counted); with the
            # fix every test file's do, so the pass-to-pass values the verifier compares
            # itself are the ones the fix gives.
            check_name, plan = runner.report_checks(a, snap.hidden)
            tests = {p: d for p, d in {**snap.workspace, **snap.hidden}.items()
                     if runner.is_test_file(p)}
            fixed_name, fixed_plan = runner.report_checks(
                b, {p: (b / p).read_bytes() for p in tests if (b / p).is_file()})
            paths = None
            if self.opts.p2p_scope == "files":
                paths = sorted(p for p in snap.hidden if p.endswith(runner.source_suffixes))

            async def replicas(tree: Path, checks: str | None, n: int,
                               ids: list[str] | None) -> list[dict | str]:
                # One after the other on the same tree, as a re-run would be: a test that
                # depends on what an earlier run left behind shows up as flaky.
                return [await self._run(tree, Path(venv), settings, paths, work, checks, ids)
                        for _ in range(n)]

            # The fix first: only a test that passes with it can be fail-to-pass or
            # pass-to-pass, so the parent runs those tests alone (a runner that
            # `selects_tests`), and not at all when there are none.
            fixed = await replicas(b, fixed_name, 1, None)
            wanted = passing(fixed[0], rules, runner.test_file)
            elsewhere: list[str] = []
            if not wanted:
                parent: list[dict | str] = [dict(NOT_RUN)]
            else:
                only = wanted if runner.selects_tests else None
                parent = await replicas(a, check_name, 1, only)
                if undecided(parent[0], fixed[0], rules, runner.test_file):
                    more = self.opts.runs - 1
                    again = await asyncio.gather(replicas(a, check_name, more, only),
                                                 replicas(b, fixed_name, more, only))
                    parent, fixed = parent + again[0], fixed + again[1]
                    elsewhere = await self._other_tests(a, Path(venv), settings, paths, work, check_name,
                                                        parent, fixed, snap, rules)
            failures = [r for r in parent + fixed if isinstance(r, str)]
            if failures:
                return CheckResult(REJECTED, "sandbox failure", failures[0][:300])
            # No failure: every run returned its report (a dict).
            result = classify(cast("list[dict]", parent), cast("list[dict]", fixed), snap, rules,
                              self.opts.max_p2p, runner.test_file, elsewhere)
            result.held_at_parent = runner.held_lines(
                plan, cast("dict", parent[0]).get("checks", {}), result.fail_to_pass)
            result.p2p_checks = passed_in_every(fixed_plan, cast("list[dict]", fixed),
                                                result.pass_to_pass + result.fail_to_pass,
                                                runner.held_lines)
            if result.kept:
                result.p2p_variants = await self._held_back(snap, (a, b), Path(venv), settings, work, result)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return result

    async def _other_tests(self, tree: Path, venv: Path, settings: RepoSettings,
                           paths: list[str] | None, work: Path, check_name: str | None,
                           parent: list[dict | str], fixed: list[dict | str], snap: CommitSnapshot,
                           rules: dict) -> list[str]:
        """When the parent's runs were only of the tests that passed with the fix and
        every one of them is fail-to-pass, whether the suite has other tests (ones the fix
        breaks, say: then the commit has no pass-to-pass test and is dropped) shows only in
        a whole run at the parent: run it, and return the ids it reported. A whole run
        that fails or hangs joins `parent`, so the verdict says so."""
        runner = runner_of(settings)
        if not runner.selects_tests or any(isinstance(r, str) for r in parent + fixed):
            return []
        first = classify(cast("list[dict]", parent), cast("list[dict]", fixed), snap, rules,
                         self.opts.max_p2p, runner.test_file)
        if not first.kept or first.pass_to_pass:
            return []
        whole = await self._run(tree, venv, settings, paths, work, check_name)
        if isinstance(whole, str) or whole["collection_hang"] or whole["budget_exhausted"]:
            parent.append(whole)
            return []
        return list(whole["outcomes"])

    async def _held_back(self, snap: CommitSnapshot, trees: tuple[Path, Path], venv: Path,
                         settings: RepoSettings, work: Path, result: CheckResult) -> list[dict]:
        """Variants of the kept pass-to-pass tests (copies with one input changed, made by
        the runner from a generator fixed by the commit) run twice at the parent and twice
        with the fix (`trees`, after their own runs); those whose values all four runs
        agree on (`rlforge/verify/standalone/variants.py`). A sandbox failure keeps none."""
        runner = runner_of(settings)
        checked = {i: result.p2p_checks[i] for i in result.pass_to_pass if i in result.p2p_checks}
        files = {p: d for p, d in {**snap.workspace, **snap.hidden}.items() if runner.is_test_file(p)}
        seed = int.from_bytes(hashlib.sha256(f"p2p-variants:{snap.sha}".encode()).digest()[:8], "big")
        made = runner.held_back_variants(files, checked, random.Random(seed))
        if not made:
            return []
        ids = [f"{v['file']}::{v['test']}" for v in made]
        planted = [runner.plant_variants(tree, files, made) for tree in trees]
        paths = sorted({v["file"] for v in made})

        async def twice(tree: Path, name: str | None) -> list[dict | str]:
            return [await self._run(tree, venv, settings, paths, work, name, ids=ids) for _ in range(2)]

        sides = await asyncio.gather(*(twice(tree, name) for tree, (name, _) in zip(trees, planted)))
        runs = [r for side in sides for r in side]
        if any(isinstance(r, str) for r in runs):
            return []
        kept = runner.kept_variants(made, planted[0][1], cast("list[dict]", runs))
        result.detail += f", {len(kept)} of {len(made)} held-back variants kept"
        return kept

    async def _run(self, tree: Path, venv: Path, settings: RepoSettings, paths: list[str] | None,
                   work: Path, check_name: str | None = None,
                   ids: list[str] | None = None) -> dict | str:
        """One sandboxed test run by the settings' runner; the raw result, or an
        infrastructure error message. `check_name`: what the tree's checked asserts report
        through (`report_checks`); `ids`: only these tests (None: all under `paths`)."""
        runner = runner_of(settings)
        runner_dir = Path(tempfile.mkdtemp(prefix="runner-", dir=work))
        logs = Path(tempfile.mkdtemp(prefix="logs-", dir=work))
        logs.chmod(0o777)
        sandboxed = self.mode != "none"
        run = runner.test_run(tree="/app" if sandboxed else str(tree),
                              tests="/tests" if sandboxed else str(runner_dir),
                              out="/logs/verifier" if sandboxed else str(logs),
                              env="/opt/venv" if sandboxed else str(venv), settings=settings,
                              paths=paths, budget_sec=self.opts.run_budget_sec,
                              check_name=check_name, ids=ids)
        write_tree(runner_dir, run.files)
        sandbox = spec_of({"tmp_mb": 512}, self.settings, workspace=tree, tests=runner_dir, logs=logs,
                          venv=venv, timeout_sec=self.opts.run_budget_sec + 60,
                          env={"RLFORGE_SANDBOXED": "1"})
        result = await self.pool.run(run.argv, sandbox)
        if result.failure:
            return str(result.failure)
        try:
            return json.loads(read_file(logs, "results.json", max_bytes=200_000_000))
        except (OSError, ValueError):
            return (f"the test runner gave no results (exit {result.exit_code}"
                    f"{', timed out' if result.timed_out else ''}): {result.stderr_text.strip()[-300:]}")


class CheckerBackend(Protocol):
    """Where the build-time checks of commits run: an `rlforge.execution` backend, chosen
    by the CLI and handed down through build-tasks' options."""

    async def repair_checker(self, con, opts: RepairOptions, *, workers: int, sandbox_mode: str,
                             cache_dir: Path, settings: dict[str, Any] | None) -> Checker:
        """A `Checker` whose sandboxed runs happen on this backend; the caller closes it,
        and then its `pool`."""


def passed_in_every(plan: dict, runs: list[dict], ids: list[str],
                    held: Callable[[dict, dict, list[str]], dict] = asserts.held_lines
                    ) -> dict[str, list[int]]:
    """{test id: lines}: the checked asserts of `ids` that passed in every one of `runs`
    (`held`: the runner's reading of one run, `TestRunner.held_lines`)."""
    per_run = [held(plan, r.get("checks", {}), ids) for r in runs]
    out = {}
    for nodeid in ids:
        lines = set(per_run[0].get(nodeid, [])) if per_run else set()
        for one_run in per_run[1:]:
            lines &= set(one_run.get(nodeid, []))
        if lines:
            out[nodeid] = sorted(lines)
    return out


def _passed(run: dict, nodeid: str) -> bool:
    return run["outcomes"].get(nodeid) == "passed"


def _file_part(test_id: str) -> str:
    return test_id.split("::", 1)[0]


#: the report of the parent's run when none was needed (no test passes with the fix)
NOT_RUN: dict = {"outcomes": {}, "started": [], "hung": [], "collect_errors": [], "checks": {},
                 "collection_hang": False, "budget_exhausted": False, "sessions": 0, "seconds": 0.0}


def passing(fixed: dict | str, rules: dict, test_file: Callable[[str], str] = _file_part) -> list[str]:
    """The tests of test files that passed in a run with the fix (sorted), the only ones
    that can be fail-to-pass or pass-to-pass; none when the run failed or did not finish
    (the commit is dropped for that, whatever the parent does)."""
    if isinstance(fixed, str) or fixed["collection_hang"] or fixed["budget_exhausted"]:
        return []
    return sorted(i for i in fixed["outcomes"]
                  if _passed(fixed, i) and protect.is_protected(test_file(i), rules))


def undecided(parent: dict | str, fixed: dict | str, rules: dict,
              test_file: Callable[[str], str] = _file_part) -> bool:
    """Whether the first run of each side leaves the verdict open: both ran, neither hung,
    and some test fails (or is absent) at the parent and passes with the fix. Otherwise
    the commit is dropped whatever the other runs say (no fail-to-pass test can appear
    in them, `classify` takes it from the first), so they are not run."""
    if isinstance(parent, str) or isinstance(fixed, str):
        return False
    if any(r["collection_hang"] or r["budget_exhausted"] for r in (parent, fixed)):
        return False
    return any(_passed(fixed, i) and not _passed(parent, i)
               for i in fixed["outcomes"] if protect.is_protected(test_file(i), rules))


def classify(parent: list[dict], fixed: list[dict], snap: CommitSnapshot, rules: dict,
             max_p2p: int, test_file: Callable[[str], str] = _file_part,
             elsewhere: Collection[str] = ()) -> CheckResult:
    """F2P / P2P / flaky from the runs of each side; see the module docstring. `test_file`:
    where a test id lives (`TestRunner.test_file`); `elsewhere`: the ids of a whole run at
    the parent when its runs here were of some tests only (`Checker._other_tests`), which
    count among the other tests a fail-to-pass test needs a pass-to-pass one beside."""
    gold_seconds = round(sum(r["seconds"] for r in fixed) / len(fixed), 3)
    if any(r["collection_hang"] or r["budget_exhausted"] for r in parent):
        return CheckResult(REJECTED, "hang at parent", "the test run at the parent never finished "
                           "collecting or ran out of time", gold_seconds=gold_seconds)
    if any(r["collection_hang"] or r["budget_exhausted"] for r in fixed):
        return CheckResult(REJECTED, "hang with the fix", "the test run with the fix never finished "
                           "collecting or ran out of time", gold_seconds=gold_seconds)
    ids = sorted({i for r in parent + fixed for i in r["outcomes"]
                  if protect.is_protected(test_file(i), rules)})
    flaky = [i for i in ids if len({_passed(r, i) for r in parent}) > 1
             or len({_passed(r, i) for r in fixed}) > 1]
    steady = [i for i in ids if i not in set(flaky)]
    f2p = [i for i in steady if not _passed(parent[0], i) and _passed(fixed[0], i)]
    p2p = [i for i in steady if _passed(parent[0], i) and _passed(fixed[0], i)]
    if not f2p:
        flaky_f2p = [i for i in flaky if any(_passed(r, i) for r in fixed)
                     and not all(_passed(r, i) for r in parent)]
        if flaky_f2p:
            return CheckResult(REJECTED, "flaky", f"tests that would be fail-to-pass are flaky: "
                               f"{', '.join(flaky_f2p[:3])}", flaky=flaky, gold_seconds=gold_seconds)
        hung = sorted({h for r in parent for h in r["hung"]})
        passing = [i for i in steady if _passed(fixed[0], i)]
        if not passing:
            detail = (f"no test passes with the fix either ({len(ids)} collected); the code may "
                      "need another runtime version or other dependencies than the environment has")
        else:
            detail = ("no test fails at the parent and passes with the fix"
                      + (f" ({len(hung)} hung at the parent)" if hung else ""))
        return CheckResult(REJECTED, "no F2P", detail, flaky=flaky, gold_seconds=gold_seconds)
    others = sorted(i for i in set(ids) | {e for e in elsewhere if protect.is_protected(test_file(e), rules)}
                    if i not in set(f2p))
    if not p2p and others:
        return CheckResult(REJECTED, "no P2P", f"none of the {len(others)} other tests passes both "
                           "at the parent and with the fix", fail_to_pass=f2p, flaky=flaky,
                           gold_seconds=gold_seconds)
    if 0 < max_p2p < len(p2p):  # the commit's own test files first, then a stable sample
        near = [i for i in p2p if test_file(i) in snap.hidden]
        far = sorted((i for i in p2p if i not in set(near)),
                     key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        p2p = sorted((near + far)[:max_p2p])
    return CheckResult(KEPT, "", f"{len(f2p)} fail-to-pass, {len(p2p)} pass-to-pass"
                       + (f", {len(flaky)} flaky dropped" if flaky else ""),
                       fail_to_pass=f2p, pass_to_pass=p2p, flaky=flaky, gold_seconds=gold_seconds)
