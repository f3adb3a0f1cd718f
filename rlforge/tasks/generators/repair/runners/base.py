"""What a language test runner declares for repair tasks: the `TestRunner` base class.

A runner is everything `commits.repair` needs to know about one language's tests:

- which projects it serves (`detect`, from the paths of a tree: manifest files);
- which files are tests or test-runner configuration (`test_rules`, the rules
  `rlforge.verify.standalone.protect` applies; `is_test_file`; `test_file` of a test id);
- what the tests need installed (`dependencies`, read from the manifests) and how that
  environment is prepared outside the sandbox, with network, once per content key
  (`prepare`, `env_key`), and pinned exactly in the task (`pinned`);
- how one test run happens in the sandbox (`test_run`): the files it copies into the
  sandbox's tests/ and the command that writes a `RunResult`-shaped JSON file.

Test ids are `<path>::<name>`: the path (relative to the tree's root) says where a test
lives (a test file; for a runner that reports per package, like `go test -json`, the
package's directory, with `test_file` mapping it back), the name is the runner's own
(pytest's node id, Jest's ancestor titles joined, Go's `TestX/sub`).

A test run's result, whatever the runner, is one JSON object: `outcomes` {id: passed |
failed | skipped | timeout | missing}, `started` (ids in the order they started), `hung`,
`collect_errors`, `collection_hang`, `budget_exhausted`, `sessions`, `seconds`,
`log_tail`, and `checks` ({id: {index: value}} of checked asserts, empty when the
language has none). The build-time check (`checks.classify`) reads only that.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rlforge.verify.standalone import asserts

if TYPE_CHECKING:  # types only: options imports the registry to validate names
    from rlforge.tasks.generators.repair.options import RepoSettings
    from rlforge.tasks.generators.repair.spec import Derivation


@dataclass(frozen=True)
class Dependencies:
    """What a project needs for its tests, and the files that said so."""

    requirements: tuple[str, ...]
    sources: tuple[str, ...]
    files_sha256: str  # hash of the dependency files read (lineage)
    unread: tuple[str, ...] = ()  # what the dependency files declare that was not read, and why


@dataclass(frozen=True)
class TestRun:
    """One sandboxed test run: `files` go into the sandbox's tests/ directory, `argv` runs
    there (the prepared environment mounted at `/opt/venv`) and writes the result JSON to
    the path it was given."""

    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)


class TestRunner:
    """A language's test runner; subclass it and register an instance with
    `rlforge.tasks.generators.repair.runners.register_runner`."""

    __test__ = False  # not a pytest test class, whatever its name

    name: ClassVar[str]
    version: ClassVar[int] = 1
    language: ClassVar[str]  # as `commit_files.language` names it (tasks.repair.language)
    description: ClassVar[str] = ""
    #: files whose presence at the root marks a project of this runner
    manifests: ClassVar[tuple[str, ...]] = ()
    #: the verifier kind whose standalone files score the task (`verify.standalone.ENTRIES`)
    verifier: ClassVar[str] = "repair"
    #: the format of the per-test results the verifier reads (the task's `result_format`)
    result_format: ClassVar[str]
    #: why the tested code can forge this runner's results ("" : it cannot, as far as
    #: rlforge knows); such a runner's commits make no task unless the user names it in
    #: `tasks.repair.forgeable_runners`
    forgeable: ClassVar[str] = ""
    #: suffixes of source files (where a fix's added lines may give the answer away)
    source_suffixes: ClassVar[tuple[str, ...]] = ()
    #: `commit_files.language` of the project's source files (default: `language`); a
    #: commit's change in them counts as a source change, not as another language
    source_languages: ClassVar[tuple[str, ...]] = ()
    #: the language as the instruction names it (default: `language` capitalised)
    language_name: ClassVar[str] = ""
    #: the test files, as the instruction names them ("... test files (<this>) or ...")
    test_files_text: ClassVar[str] = "the project's test files"
    #: whether `test_run` runs only the test ids it is given (`ids`): then the build's
    #: runs at the parent and its repeats run only the tests that passed with the fix
    #: (the only ones that can be fail-to-pass or pass-to-pass); False: every run is whole
    selects_tests: ClassVar[bool] = False

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"

    def detect(self, paths: Collection[str]) -> bool:
        """Whether the tree with these paths is a project this runner tests."""
        return any(m in paths for m in self.manifests)

    def languages(self) -> tuple[str, ...]:
        """`source_languages`, or the runner's `language` alone."""
        return self.source_languages or (self.language,)

    def why_not(self) -> str:
        """What `detect` looked for, for a drop reason when nothing detected a project."""
        return f"{self.name}: none of {', '.join(self.manifests)}"

    def test_rules(self) -> dict:
        """The protect rules (`patterns`, `names`, `suffixes`) of test files and test-runner
        configuration: hidden from the policy when a commit changes them, never to be
        touched by a submission."""
        raise NotImplementedError

    def is_test_file(self, path: str) -> bool:
        """A file of the project's tests (where pass-to-pass tests live)."""
        raise NotImplementedError

    def test_file(self, test_id: str) -> str:
        """The path a test id lives at (a test file, or a package directory)."""
        return test_id.split("::", 1)[0]

    def dependencies(self, files: Mapping[str, bytes]) -> Dependencies:
        """What the tests of the tree `files` (path -> bytes) need installed, sorted."""
        raise NotImplementedError

    def settings_for(self, files: Mapping[str, bytes], settings: "RepoSettings") -> "RepoSettings":
        """The repository's settings with what the tree implies filled in (defaults the
        user left unset)."""
        return settings

    def env_key(self, requirements: list[str], settings: "RepoSettings") -> str:
        """The content key of the prepared environment (recorded in the task)."""
        raise NotImplementedError

    def prepare(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> Path:
        """The prepared environment (a directory mounted read-only at /opt/venv), built
        outside the sandbox with network on first use and cached under `cache_dir` by
        `env_key`; `rlforge.errors.UserError` when it cannot be built."""
        raise NotImplementedError

    def pinned(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> list[str]:
        """The requirements as the exact versions the prepared environment holds (what a
        task's Dockerfile installs); as given when they cannot be pinned."""
        return list(requirements)

    def runtime_version(self) -> str:
        """Version of the language runtime the environments are built from (part of a
        build-time check's cache key)."""
        raise NotImplementedError

    def check_identity(self) -> dict[str, str]:
        """What of the runner decides a build-time check's outcome, hashed into the check's
        cache key: its id and the runtime's version."""
        return {"runner": self.id, "runtime": self.runtime_version()}

    def test_run(self, *, tree: str, tests: str, out: str, env: str, settings: "RepoSettings",
                 paths: list[str] | None, budget_sec: float, check_name: str | None,
                 ids: list[str] | None = None) -> TestRun:
        """The sandboxed run of the tests in `tree` (the tests under `paths`, or all; a
        runner that `selects_tests` runs only `ids` when they are given, and so must one
        that makes `held_back_variants`), as the sandbox sees it: runner files in `tests`,
        the environment at `env`, the result JSON to write at `{out}/results.json`."""
        raise NotImplementedError

    def held_back_variants(self, files: Mapping[str, bytes], checked: dict[str, list[int]],
                           rng: random.Random) -> list[dict]:
        """Copies of pass-to-pass tests with one input of a checked assert changed, for the
        build to measure (`rlforge/verify/standalone/variants.py`); `files`: the test files,
        `checked`: {pass-to-pass id: lines of the checked asserts the fix passed}. The
        default makes none (the verifier must be able to plant and check them)."""
        return []

    def plant_variants(self, tree: Path, files: Mapping[str, bytes],
                       variants: list[dict]) -> tuple[str | None, dict]:
        """Write `variants` into their files in `tree` (from `files`), their checked asserts
        sending their values; (the name they report through, the plan)."""
        return None, {}

    def kept_variants(self, variants: list[dict], plan: dict, runs: list[dict]) -> list[dict]:
        """Of `variants` (planted with `plan`), those the build's `runs` at the parent and
        with the fix agree on, with their values."""
        return []

    def report_checks(self, tree: Path, files: Mapping[str, bytes]) -> tuple[str | None, dict]:
        """Make the literal asserts of the test `files` (path -> bytes in `tree`) report
        their values as they run; (the name they report through, the plan). Languages
        without checked asserts keep the default: nothing reported."""
        return None, {}

    def held_lines(self, plan: dict, checks: dict, ids: list[str]) -> dict[str, list[int]]:
        """{test id: lines} of the checked asserts of `ids` (in the `plan` of
        `report_checks`) whose values, as one run reported them (`checks`), held."""
        return asserts.held_lines(plan, checks, ids)

    def checked_tests(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                      workspace: Mapping[str, bytes], held_at_parent: dict,
                      held_with_fix: dict) -> list[str]:
        """`checked_fail_to_pass`, given also what held in every run with the fix
        (`held_with_fix`, {test id: lines}), for runners whose verifier compares in
        another language than the tests' (so the fix's values must be seen to hold)."""
        return self.checked_fail_to_pass(hidden, fail_to_pass, workspace, held_at_parent)

    def could_check(self, hidden: Mapping[str, bytes], workspace: Mapping[str, bytes]) -> bool:
        """Whether some test of the commit's changed test files (`hidden`) could still
        be a checked fail-to-pass test, read from the files alone, before any sandbox
        run (a commit with none is dropped unrun). It must over-approximate
        `checked_tests`: False only when no outcome of the runs could make one checked.
        The default cannot tell: True ("maybe"), and the runs decide."""
        return True

    def unchecked_why(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                      workspace: Mapping[str, bytes]) -> str:
        """Why fail-to-pass tests were left out before their values were looked at (a
        runner that reads which tests its checks alone decide says which and why), for
        the drop reason of a commit with no checked test; "" when nothing was."""
        return ""

    def checked_fail_to_pass(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                             workspace: Mapping[str, bytes], held_at_parent: dict) -> list[str]:
        """The fail-to-pass tests the verifier can check beyond their reported outcome (a
        hidden literal, no trivial value passes); a commit with none is dropped. The
        default trusts none: a runner states what it can check."""
        return []

    def template_context(self, requirements: list[str], settings: "RepoSettings",
                         cache_dir: Path) -> dict:
        """Variables of the task's templates that depend on the runner: its name (the
        templates are `commits.repair/<runner>/*.j2`, which `commits.repair/*.j2` include),
        the pinned requirements, the test files and configuration files the instruction
        names, the language's name. A runner adds its own (a runtime version for the
        Dockerfile)."""
        return {"runner": self.name, "language": self.language_name or self.language.capitalize(),
                "pinned_requirements": self.pinned(requirements, settings, cache_dir),
                "test_files": self.test_files_text,
                "config_files": [n for n in self.test_rules().get("names", [])]}

    def reference_fields(self, settings: "RepoSettings", workspace: Mapping[str, bytes]) -> dict:
        """What the runner's verifier reads from `tests/reference.json` beyond what every
        repair verifier reads (tests, timeouts, protected files)."""
        return {}

    def gold_inspects_caller(self, workspace: Mapping[str, bytes],
                             fixed: Mapping[str, bytes | None]) -> list[str]:
        """What the gold fix (`fixed`: its paths' new content) adds that the runner's
        verifier refuses as code that sees its caller or the test run; such a commit is
        no task (its gold answer would fail). The default refuses nothing."""
        return []

    def task_metadata(self, requirements: list[str], settings: "RepoSettings") -> dict:
        """`[metadata.rlforge]` fields of the task's environment (how rlforge prepares it
        again when it scores the task)."""
        return {"env_key": self.env_key(requirements, settings)}

    def behaviours(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                   workspace: Mapping[str, bytes], fixed: Mapping[str, bytes | None]
                   ) -> "Derivation | None":
        """What each checked fail-to-pass test checks, described without its literals, and
        the literals it holds back (`rlforge.tasks.generators.repair.spec`). The default
        cannot say (None): the task keeps the request-only instruction, counted as
        unmeasured."""
        return None

    def adversarials(self, **task) -> list:
        """The submissions that must score 0 on a task (`rlforge validate`), from the
        task's parts (workspace, hidden, fail_to_pass, pass_to_pass, gold_paths,
        gold_diff, roots)."""
        raise NotImplementedError
