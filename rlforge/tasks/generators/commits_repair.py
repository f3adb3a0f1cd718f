"""`commits.repair`: fix the code so the commit's own tests pass (fail-to-pass / pass-to-pass).

A commit that changes source files and test files is a problem with a machine-checkable
answer. The task's workspace is the repository at the commit's parent (files only, no
history); the commit's test changes are hidden in the task's tests/; the instruction is the
commit message (no file or line hints unless `file_hints`); the gold solution is the
commit's source diff. A commit becomes a task only when the build-time check (see
`rlforge.tasks.generators.repair.checks`) finds tests that fail at the parent and pass with the fix,
run twice in the sandbox; a commit whose changed tests could give no checked test
(`TestRunner.could_check`, read from the files) is dropped before any sandbox run. Every
commit in the window that does not become a task is reported in `self.rejections` with its
reason, and build-tasks records it in `task_drops`.

Everything language-specific goes through the repository's test runner
(`rlforge.tasks.generators.repair.runners`): which runner serves a repository is detected
once per build from the tree of its newest commit in the window (or named by
`tasks.repair.repos.<name>.runner`); a repository no runner of `tasks.repair.language`
detects gives no task, each of its commits dropped as "no test runner found".

The verifier (`rlforge/verify/standalone/repair.py`, copied into tests/) runs the
fail-to-pass and pass-to-pass tests in the task's prepared environment; validation adds
the runner's adversarial submissions (Python: `rlforge.tasks.generators.repair.adversarial`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import hashlib
import io
import re
import tokenize
from pathlib import Path
from typing import Any, ClassVar

from rlforge.config import RepairSettings, default_cache_dir
from rlforge.errors import UserError
from rlforge.sandbox import sandbox_settings
from rlforge.tasks.registry import Generator, register
from rlforge.tasks.generators.repair import gitrepo, runners, spec
from rlforge.tasks.generators.repair.checks import Checker, CheckResult, runner_of
from rlforge.tasks.generators.repair.options import RepairOptions, RepoSettings
from rlforge.tasks.generators.repair.runners import Dependencies, TestRunner
from rlforge.tasks.generators.repair.runners.python import RULES
from rlforge.tasks.generators.repair.select import CommitRow, screen, window
from rlforge.tasks.spec import BuildContext, SourceRef, Submission, TaskSpec, stable_sample
from rlforge.verify.standalone import variants
from rlforge.verify.standalone.protect import SUBMISSION_PATCH, is_protected

PROTECTED = RULES  # the Python runner's test files and configuration
NO_RUNNER = "no test runner found"
FORGEABLE = "the test runner's results can be forged"
#: dropped before any sandbox run: no test the commit changes could be a checked one
UNCHECKABLE = "no checkable assert in the changed tests"
#: what `commits.repair/<name>.j2` includes from `commits.repair/<runner>/`
RUNNER_TEMPLATES = ("Dockerfile", "test.sh")
SOLVE_SH = b"""#!/bin/bash
# Gold solution: the commit's own change to the source code (solution/gold.diff).
set -euo pipefail
cd /app
git apply --whitespace=nowarn /solution/gold.diff
"""
TRAILER = re.compile(r"^[A-Za-z][A-Za-z-]*(-by|-Id|-id): ", re.M)
MIN_SECRET_CHARS = 24
WORKSPACE_LIMIT = 100_000_000  # bytes; the verifier copies the workspace into its /tmp
MAX_SECRETS = 40


def problem_statement(message: str) -> tuple[str, str]:
    """(subject, body) of a commit message, without trailers (Signed-off-by, ...)."""
    lines = [line for line in message.strip().splitlines() if not TRAILER.match(line)]
    subject = lines[0].strip() if lines else ""
    body = "\n".join(lines[1:]).strip()
    return subject, body


def prose_lines(source: str) -> set[int]:
    """1-based numbers of the lines of Python source that hold only a comment or a string
    (docstrings, multi-line strings): prose, not code."""
    lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT and tok.line.strip().startswith("#"):
                lines.add(tok.start[0])
            elif tok.type == tokenize.STRING and (tok.end[0] > tok.start[0]
                                                  or tok.line.strip() == tok.string):
                lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


def distinctive_lines(snap: gitrepo.CommitSnapshot, suffix: str | tuple[str, ...] = ".py",
                      rules: dict | None = None) -> list[str]:
    """Code lines the commit adds (its tests, and its fix in `suffix` files) that appear
    nowhere in the starting workspace: if one shows up in the instruction, the task gives
    its answer away. Comments and docstrings are left out: a changelog kept in a module
    docstring repeats the commit message, and that is not the answer."""
    corpus = "\n".join(data.decode("utf-8", "replace") for data in snap.workspace.values())
    tests = {"patterns": (rules or PROTECTED)["patterns"]}  # test files, not runner configuration
    code = [(p, c) for p, c in snap.hidden.items() if is_protected(p, tests)]
    code += [(p, c) for p, c in snap.fixed.items() if c and p.endswith(suffix)]
    added: set[str] = set()
    for path, content in code:
        old = snap.workspace.get(path, b"").decode("utf-8", "replace").splitlines()
        text = content.decode("utf-8", "replace")
        new = text.splitlines()
        prose = prose_lines(text) if path.endswith(".py") else set()
        for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
            if tag in ("insert", "replace"):
                added.update(new[j].strip() for j in range(j1, j2) if j + 1 not in prose)
    return sorted(a for a in added if len(a) >= MIN_SECRET_CHARS and a not in corpus)[:MAX_SECRETS]


def _check_format(repo: str, settings: RepoSettings, runner: TestRunner) -> None:
    """A repository's `result_format`, when set, must be the one its runner writes."""
    fmt = settings.result_format
    if fmt is not None and fmt != runner.result_format:
        raise UserError(f"tasks.repair.repos.{Path(repo).name}.result_format: {fmt!r} is not what "
                        f"the {runner.name} runner writes; valid: {runner.result_format}")


class CheckProgress:
    """Commits checked so far, told to the build's progress as they finish: the count, and
    how many were kept (to be validated) and dropped."""

    def __init__(self, total: int, ctx: BuildContext):
        self.total, self.ctx = total, ctx
        self.kept = self.dropped = 0
        ctx.tick(0, total, self.note())

    def one(self, kept: bool) -> None:
        if kept:
            self.kept += 1
        else:
            self.dropped += 1
        self.ctx.tick(self.kept + self.dropped, self.total, self.note())

    def note(self) -> str:
        return f"{self.kept} kept, {self.dropped} dropped"


def _difficulty(lines: int) -> str:
    return "easy" if lines <= 10 else "medium" if lines <= 60 else "hard"


@register("commits.repair", 2, "Fix the code so the commit's own tests pass: workspace at the "
          "parent commit, hidden fail-to-pass and pass-to-pass tests run in the sandbox.",
          verifier="repair")
class CommitsRepair(Generator):
    sources: ClassVar[tuple[str, ...]] = ("commits",)

    def __init__(self, build=None, repair: RepairSettings | None = None, **options) -> None:
        """`options` override the `tasks.repair.*` settings; `build` (build-tasks' options,
        which checking commits needs) gives the resolved config, the sandbox mode, the
        number of sandboxes and the backend the checks run on. Without it (counting usable
        rows for `build-tasks --list`) the settings are `repair` (None: the defaults)."""
        self.build = build
        if build is not None:
            repair = build.config.settings().repair
        self.opts = RepairOptions.resolve(options, repair or RepairSettings(), runners.languages())
        self.rejections: list[dict[str, str]] = []
        #: repository -> its test runner, or why none serves it (set by `specs`)
        self.detected: dict[str, TestRunner | str] = {}
        #: the specification verdicts of the commits checked (`repair.spec`)
        self.specification = spec.SpecFigures()
        self._specified: dict[tuple[str, str], spec.Specification] = {}

    @property
    def sandbox(self) -> dict[str, Any]:
        """The sandbox settings the checks run under: build-tasks' mode, the user's limits."""
        return sandbox_settings(self.build.config.settings().sandbox, self.build.sandbox_mode)

    def _window(self, con) -> list[CommitRow]:
        """The commits considered, newest first (a variant may narrow them, rejecting the
        others with `_reject`)."""
        o = self.opts
        languages = sorted({lang for r in runners.runners().values() if r.language == o.language
                            for lang in r.languages()})
        return window(con, o.last, o.repos, languages)

    def available(self, con) -> int:
        """Commits in the window that pass the database-only screening."""
        o = self.opts
        return sum(1 for row in self._window(con)
                   if screen(row, max_files=o.max_files, max_lines=o.max_lines,
                             language=o.language, min_message_words=o.min_message_words) is None)

    def runners_seen(self) -> dict[str, str]:
        """{repository: the id of its test runner (`go@1`), or why none serves it} as the
        last `specs` found them (the build summary prints them)."""
        return {repo: r if isinstance(r, str) else self._seen(r)
                for repo, r in sorted(self.detected.items())}

    def _seen(self, runner: TestRunner) -> str:
        if runner.forgeable and runner.name not in self.opts.forgeable_runners:
            return (f"{runner.id}, whose results can be forged: no tasks unless "
                    f"tasks.repair.forgeable_runners names it")
        return runner.id

    def runners_by_repo(self, con) -> dict[str, str]:
        """`runners_seen` for the repositories in the window now (`build-tasks --list`)."""
        self.detected = self._detect_runners(self._window(con))
        return self.runners_seen()

    def specs(self, ctx: BuildContext):
        o = self.opts
        self.rejections = []
        self.specification, self._specified = spec.SpecFigures(), {}
        rows = self._window(ctx.con)
        self.detected = self._detect_runners(rows)
        candidates = []
        for row in rows:
            runner = self.detected[row.repo]
            if isinstance(runner, str):
                self._reject(row, NO_RUNNER, runner)
                continue
            if runner.forgeable and runner.name not in o.forgeable_runners:
                self._reject(row, FORGEABLE, f"{runner.id}: {runner.forgeable}; "
                             f"tasks.repair.forgeable_runners = [\"{runner.name}\"] builds "
                             "them anyway, for evaluation only")
                continue
            why = screen(row, max_files=o.max_files, max_lines=o.max_lines, language=o.language,
                         min_message_words=o.min_message_words)
            if why:
                self._reject(row, why)
            else:
                candidates.append(row)
        ordered = stable_sample(candidates, None, ctx.seed, key=lambda r: f"{r.repo}@{r.sha}")
        kept = asyncio.run(self._check_all(ctx, ordered))
        for row, snap, settings, reqs, check in kept:
            yield self._spec(row, snap, settings, reqs, check, ctx)

    def _detect_runners(self, rows: list[CommitRow]) -> dict[str, TestRunner | str]:
        """{repository: its test runner, or why none serves it}: the runner its settings
        name, else the first runner of the language that detects the tree of its newest
        commit in the window (rows are newest first). A repository git cannot read gets
        the language's first runner: its snapshot reports it, commit by commit."""
        language = self.opts.language
        serving = [r for r in runners.runners().values() if r.language == language]
        out: dict[str, TestRunner | str] = {}
        for row in rows:
            if row.repo in out:
                continue
            found = out[row.repo] = self._runner_of(row, language, serving)
            if not isinstance(found, str):
                _check_format(row.repo, self.opts.for_repo(row.repo), found)
        return out

    def _runner_of(self, row: CommitRow, language: str, serving: list[TestRunner]) -> TestRunner | str:
        """The runner of the repository of `row` (see `_detect_runners`), or why none."""
        named = self.opts.for_repo(row.repo).runner
        if named is not None:
            chosen = runners.get(named)
            if chosen.language != language:
                raise UserError(f"tasks.repair.repos.{Path(row.repo).name}.runner: {named} tests "
                                f"{chosen.language} projects, but tasks.repair.language is {language}")
            return chosen
        try:
            paths = gitrepo.ls_tree(row.repo, row.sha)
        except (gitrepo.GitError, OSError):
            return serving[0]
        found = runners.detect(paths, language)
        if found is not None:
            return found
        other = runners.detect(paths)  # another language's runner: say how to use it
        hint = (f"; {other.id} detects it: set tasks.repair.language = \"{other.language}\""
                if other is not None else "")
        return runners.why_none(language) + hint

    def _reject(self, row: CommitRow, reason: str, detail: str = "") -> None:
        self.rejections.append({"source": f"{row.repo}@{row.sha}",
                                "reason": reason + (f" ({detail})" if detail and "(" not in reason else "")})

    async def _check_all(self, ctx: BuildContext, rows: list[CommitRow]) -> list[tuple]:
        """Check candidates in order until the quota is met; the kept ones, in that order.

        A commit runs its fix first, then its parent (two sandboxes at once only for the
        repeats), so `pool.workers` commits are checked at once, each started as soon as
        one finishes. Under a quota the kept are
        the first `ctx.limit` in `rows` order, whichever finishes first: no commit starts
        once the rows up to the limit-th kept one are all decided, and the rejections of
        commits after those are not reported (a larger quota would report them)."""
        build = self.build
        assert build is not None, "commits are checked in a build, with build-tasks' options"
        checker = await build.backend.repair_checker(
            ctx.con, self.opts, workers=build.workers, sandbox_mode=build.sandbox_mode,
            cache_dir=default_cache_dir(build.config.settings()), settings=self.sandbox)
        pool = checker.pool
        checked = {f"{r.repo}@{r.sha}" for r in rows}
        verdicts: list[Any] = [None] * len(rows)
        decided = [False] * len(rows)
        progress = CheckProgress(len(rows), ctx)

        def settled_prefix() -> int | None:
            """How many rows, from the first, decide the kept (None: not yet)."""
            if ctx.limit is None:
                return None
            kept = 0
            for i, done in enumerate(decided):
                if not done:
                    return None
                kept += verdicts[i] is not None
                if kept >= ctx.limit:
                    return i + 1
            return None

        slots = asyncio.Semaphore(max(1, pool.workers))

        async def one(i: int, row: CommitRow) -> None:
            async with slots:
                if settled_prefix() is not None:
                    return
                verdicts[i] = await self._check_one(checker, row)
                decided[i] = True
                progress.one(verdicts[i] is not None)

        try:
            await asyncio.gather(*(one(i, row) for i, row in enumerate(rows)))
        finally:
            checker.close()
            await asyncio.to_thread(pool.close)
        upto = settled_prefix() or len(rows)
        order = {f"{r.repo}@{r.sha}": i for i, r in enumerate(rows[:upto])}
        screened = [r for r in self.rejections if r["source"] not in checked]
        self.rejections = screened + sorted((r for r in self.rejections if r["source"] in order),
                                            key=lambda r: order[r["source"]])  # as if one by one
        kept = [v for v in verdicts[:upto] if v is not None]
        return kept if ctx.limit is None else kept[:ctx.limit]

    async def _check_one(self, checker: Checker, row: CommitRow):
        runner = self.detected[row.repo]
        assert not isinstance(runner, str), "specs() drops a repository no runner serves"
        settings = dataclasses.replace(self.opts.for_repo(row.repo), runner=runner.name)
        if settings.result_format is None:
            settings = dataclasses.replace(settings, result_format=runner.result_format)
        rules = runner.test_rules()
        assert row.parent is not None, "screen() drops a commit without a parent"
        try:
            snap = await asyncio.to_thread(gitrepo.snapshot, row.repo, row.sha, row.parent, rules)
        except (gitrepo.GitError, OSError) as exc:
            self._reject(row, "repository unavailable", str(exc)[:200])
            return None
        if snap.unreadable:
            self._reject(row, "path not UTF-8", ", ".join(snap.unreadable[:3]))
            return None
        size = sum(len(d) for d in snap.workspace.values())
        if size > WORKSPACE_LIMIT:
            self._reject(row, "workspace too large", f"{size / 1e6:.0f} MB, max {WORKSPACE_LIMIT / 1e6:.0f} MB")
            return None
        if not await asyncio.to_thread(runner.could_check, snap.hidden, snap.workspace):
            self._reject(row, UNCHECKABLE, "no test of the changed test files compares a "
                         "result with a literal the policy has not seen that no trivial value passes")
            return None
        inspects = runner.gold_inspects_caller(snap.workspace, snap.fixed)
        if inspects:  # the verifier would refuse the gold fix itself
            missing = all("(imports_missing:" in f for f in inspects)  # "path (finding)"
            self._reject(row, "gold fix imports a module the tree lacks" if missing
                         else "gold fix inspects its caller", ", ".join(inspects[:3]))
            return None
        found = runner.dependencies(snap.workspace)
        reqs = list(settings.requirements) if settings.requirements is not None else list(found.requirements)
        reqs = sorted(set(reqs) | set(settings.extra_requirements))
        settings = runner.settings_for(snap.workspace, settings)
        check = await checker.check(snap, settings, reqs, rules)
        if not check.kept:
            self._reject(row, check.reason, check.detail)
            return None
        checked = runner.checked_tests(snap.hidden, check.fail_to_pass, snap.workspace,
                                       check.held_at_parent, check.p2p_checks)
        if not checked:
            why = runner.unchecked_why(snap.hidden, check.fail_to_pass, snap.workspace)
            self._reject(row, "no checked fail-to-pass test",
                         (f"{why}; " if why else "")
                         + "no fail-to-pass test compares a result with a literal the policy "
                         "has not seen, which the verifier can hold back, no trivial value "
                         "passes, and the parent's code does not already pass")
            return None
        check = dataclasses.replace(check, fail_to_pass=checked)
        verdict = spec.specify(runner.behaviours(snap.hidden, checked, snap.workspace, snap.fixed),
                               self._request(row))
        self.specification.add(verdict)
        if verdict.reason is not None:
            self._reject(row, verdict.reason, verdict.detail)
            return None
        self._specified[(row.repo, row.sha)] = verdict
        return row, snap, settings, found, check

    def _request(self, row: CommitRow) -> str:
        """The request as the instruction shows it (what must name the checked behaviours)."""
        subject, body = problem_statement(row.message)
        return f"{subject}\n{body}"

    def _spec(self, row: CommitRow, snap: gitrepo.CommitSnapshot, settings: RepoSettings,
              found: Dependencies, check: CheckResult, ctx: BuildContext) -> TaskSpec:
        o = self.opts
        runner: TestRunner = runner_of(settings)
        rules = runner.test_rules()
        cache_dir = default_cache_dir(self.build.config.settings())
        subject, body = problem_statement(row.message)
        repo_name = Path(row.repo).name
        workspace = snap.workspace
        base_protected = {p: hashlib.sha256(d).hexdigest()
                          for p, d in workspace.items() if is_protected(p, rules)}
        per_test, collect = settings.per_test_timeout, settings.collect_timeout
        verifier_timeout = round(60 + collect + 2 * per_test + 4 * check.gold_seconds)
        held_back = variants.chosen(check.p2p_variants, ctx.rng("p2p-variants", repo_name, row.sha))
        reference = {
            "verifier": runner.verifier, "workspace": "/app", "submission_patch": SUBMISSION_PATCH,
            "result_format": settings.result_format,
            "fail_to_pass": check.fail_to_pass, "pass_to_pass": check.pass_to_pass,
            "p2p_checks": {i: check.p2p_checks[i] for i in check.pass_to_pass if i in check.p2p_checks},
            # held-back pass-to-pass checks: copies of visible tests with an input changed
            "p2p_variants": held_back,
            "hidden_dir": "hidden", "hidden_files": sorted(snap.hidden),
            "hidden_deleted": snap.hidden_deleted, "protected": rules,
            "base_protected": base_protected, "per_test_timeout": per_test,
            "collect_timeout": collect, "budget_sec": verifier_timeout - 20,
            "env": dict(settings.env), **runner.reference_fields(settings, workspace),
        }
        size_mb = sum(len(d) for d in workspace.values()) / 1e6
        requirements = check.requirements
        adversarial = runner.adversarials(workspace=workspace, hidden=snap.hidden,
                                          fail_to_pass=check.fail_to_pass, gold_paths=snap.gold_paths,
                                          pass_to_pass=check.pass_to_pass, gold_diff=snap.gold_diff,
                                          roots=[""] + list(settings.pythonpath or ()))
        return TaskSpec(
            generator=self.name, version=self.version,
            source=SourceRef("commits", [f"{row.repo}@{row.sha}"], [f"git:{row.sha}"]),
            instruction_template="instruction.md",
            context={"title": subject or f"Change requested in {repo_name}", "subject": subject,
                     "body": body, "repo_name": repo_name,
                     "file_hints": sorted(snap.gold_paths) if o.file_hints else [],
                     "requirements": requirements,
                     **runner.template_context(requirements, settings, cache_dir),
                     "behaviours": self._specified[(row.repo, row.sha)].lines},
            reference=reference,
            solution_files={"solve.sh": SOLVE_SH, "gold.diff": snap.gold_diff.encode("utf-8", "surrogateescape")},
            verifier=runner.verifier, group_key=f"{row.repo}@{row.sha}", fix=(row.repo, row.sha),
            dedup_text=row.message, time=row.committed_at,
            null=Submission("null", {}, "the starting workspace, unchanged"),
            adversarial=adversarial, workspace=workspace,
            tests_data={f"hidden/{p}": d for p, d in snap.hidden.items()},
            category="code-repair", difficulty=_difficulty(sum(
                1 for line in snap.gold_diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))),
            keywords=["code-repair", o.language, repo_name],
            agent_timeout_sec=1200.0, verifier_timeout_sec=float(verifier_timeout), memory_mb=2048,
            kind="terminal", secret_strings=distinctive_lines(snap, runner.source_suffixes, rules),
            leak_allowed=[], templates=[f"commits.repair/{runner.name}/{name}.j2" for name in RUNNER_TEMPLATES],
            extra_metadata={
                "repo": repo_name, "commit": row.sha, "parent": row.parent,
                **runner.task_metadata(requirements, settings),
                "dependency_files": list(found.sources), "dependency_files_sha256": found.files_sha256,
                # what the dependency files declare that the environment did not get, and why
                **({"dependency_files_unread": list(found.unread)} if found.unread else {}),
                # A fix that adds files asks the policy to guess their names (file_hints helps).
                "gold_files_added": sum(1 for p in snap.gold_paths if p not in snap.workspace),
                "fail_to_pass_count": len(check.fail_to_pass),
                "pass_to_pass_count": len(check.pass_to_pass),
                "held_back_checks": len(held_back),
                "sandbox_tmp_mb": max(256, int(3 * size_mb) + 64),
                **self._specified[(row.repo, row.sha)].metadata(),
            },
        )
