"""Settings of `commits.repair`: selection filters, timeouts, and per-repository test setup.

Precedence, highest first: generator options (`tasks.generator_options."commits.repair"`,
or keyword arguments in code) > `RLFORGE_TASKS_REPAIR_*` > `[tasks.repair]` in rlforge.toml
> defaults. Per-repository settings live under `[tasks.repair.repos.<name>]`, where
<name> is the repository's directory name or its absolute path:

    [tasks.repair.repos.parse]
    runner = "python"                       # default: the runner that detects the project
    test_command = "python -m pytest"      # test ids and result flags are appended
    result_format = "pytest-junit"          # default (and the only one): the runner's
    requirements = ["pytest", "pytest-cov"] # replaces the ones found in dependency files
    extra_requirements = []                 # added to them
    pip_args = []
    pythonpath = ["src"]                    # default: src/ when it holds the code
    env = { TZ = "UTC" }
    per_test_timeout = 30
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rlforge.config import RepairSettings
from rlforge.errors import UnknownName, UserError

LANGUAGES = ("python",)  # the built-in runners' (`runners.languages()` adds plug-ins')
DEFAULT_TEST_COMMAND = ("python", "-m", "pytest")
REPO_KEYS = {"runner", "test_command", "result_format", "requirements", "extra_requirements", "pip_args",
             "pythonpath", "env", "per_test_timeout", "collect_timeout"}


@dataclass(frozen=True)
class RepoSettings:
    """How one repository's tests are installed and run (`runner`: a test runner's name
    from `rlforge.tasks.generators.repair.runners`, None: the one that detects it)."""

    runner: str | None = None
    test_command: tuple[str, ...] = DEFAULT_TEST_COMMAND
    result_format: str | None = None  # None: the runner's own
    requirements: tuple[str, ...] | None = None
    extra_requirements: tuple[str, ...] = ()
    pip_args: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    per_test_timeout: float = 15.0
    collect_timeout: float = 120.0


_DEFAULT = RepairSettings()  # the `tasks.repair.*` settings at their defaults


@dataclass
class RepairOptions:
    """Everything that decides which commits become tasks and how they are checked."""

    last: int = _DEFAULT.last
    max_files: int = _DEFAULT.max_files
    max_lines: int = _DEFAULT.max_lines
    language: str = _DEFAULT.language
    file_hints: bool = _DEFAULT.file_hints
    p2p_scope: str = _DEFAULT.p2p_scope
    max_p2p: int = _DEFAULT.max_p2p  # 0: every pass-to-pass test
    per_test_timeout: float = _DEFAULT.per_test_timeout
    collect_timeout: float = 120.0
    run_budget_sec: float = 600.0
    runs: int = 2
    min_message_words: int = 3
    repos: list[str] = field(default_factory=list)  # only these repositories (paths or names)
    recheck: bool = False  # ignore cached build-time checks
    repo_settings: dict[str, dict] = field(default_factory=dict)
    #: runners whose results can be forged that may still make tasks (`TestRunner.forgeable`)
    forgeable_runners: list[str] = field(default_factory=list)

    @classmethod
    def resolve(cls, overrides: dict[str, Any] | None, repair: RepairSettings,
                languages: Sequence[str] = LANGUAGES) -> "RepairOptions":
        """Options from the `tasks.repair.*` settings, then `overrides` on top; `language`
        must be one of `languages` (those the registered test runners serve)."""
        opts = cls(last=repair.last, max_files=repair.max_files, max_lines=repair.max_lines,
                   language=repair.language, file_hints=repair.file_hints,
                   p2p_scope=repair.p2p_scope, max_p2p=repair.max_p2p,
                   per_test_timeout=repair.per_test_timeout, repo_settings=dict(repair.repos),
                   forgeable_runners=list(repair.forgeable_runners))
        known = {f.name for f in fields(cls)}
        for key, value in (overrides or {}).items():
            if key not in known:
                raise UserError(f"commits.repair has no option {key!r}; valid: {', '.join(sorted(known))}")
            setattr(opts, key, value)
        opts.check(languages)
        return opts

    def check(self, languages: Sequence[str] = LANGUAGES) -> None:
        if self.language not in languages:
            raise UnknownName("commits.repair language", self.language, list(languages))
        if self.p2p_scope not in ("suite", "files"):
            raise UnknownName("commits.repair p2p_scope", self.p2p_scope, ["suite", "files"])
        if self.runs < 2:
            raise UserError("commits.repair runs must be at least 2 (flaky tests are found by "
                            "running each side twice)")
        for name, raw in self.repo_settings.items():
            if not isinstance(raw, dict):
                raise UserError(f"tasks.repair.repos.{name} must be a table of settings")
            unknown = set(raw) - REPO_KEYS
            if unknown:
                raise UserError(f"tasks.repair.repos.{name}: unknown setting(s) "
                                f"{', '.join(sorted(unknown))}; valid: {', '.join(sorted(REPO_KEYS))}")

    def for_repo(self, repo: str) -> RepoSettings:
        """The settings of one repository: its own table (by path, then name) over the defaults."""
        raw = self.repo_settings.get(repo) or self.repo_settings.get(Path(repo).name) or {}
        command = raw.get("test_command", DEFAULT_TEST_COMMAND)
        if isinstance(command, str):
            command = shlex.split(command)
        if not command:
            raise UserError(f"tasks.repair.repos.{Path(repo).name}.test_command is empty")
        fmt = raw.get("result_format")  # checked against the runner's when it is known
        if fmt is not None and not isinstance(fmt, str):
            raise UserError(f"tasks.repair.repos.{Path(repo).name}.result_format must be a format's name")
        reqs = raw.get("requirements")

        def strings(key: str) -> tuple[str, ...]:
            value = raw.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UserError(f"tasks.repair.repos.{Path(repo).name}.{key} must be a list of strings")
            return tuple(value)

        runner = raw.get("runner")
        if runner is not None and not isinstance(runner, str):
            raise UserError(f"tasks.repair.repos.{Path(repo).name}.runner must be a runner's name")
        return RepoSettings(
            runner=runner, test_command=tuple(command), result_format=fmt,
            requirements=None if reqs is None else strings("requirements"),
            extra_requirements=strings("extra_requirements"), pip_args=strings("pip_args"),
            pythonpath=None if raw.get("pythonpath") is None else strings("pythonpath"),
            env=tuple(sorted((str(k), str(v)) for k, v in dict(raw.get("env", {})).items())),
            per_test_timeout=float(raw.get("per_test_timeout", self.per_test_timeout)),
            collect_timeout=float(raw.get("collect_timeout", self.collect_timeout)))

    def check_key(self, settings: RepoSettings, requirements: list[str], runner: dict[str, str],
                  version: int) -> str:
        """Hash of everything that decides a build-time check's outcome (its cache key);
        `runner`: the test runner's identity (`TestRunner.check_identity`), which stands in
        for the settings' `runner` name."""
        fields = {k: v for k, v in asdict(settings).items() if k != "runner"}
        blob = json.dumps({"settings": fields, "requirements": requirements, **runner,
                           "p2p_scope": self.p2p_scope,
                           "max_p2p": self.max_p2p, "runs": self.runs,
                           "budget": self.run_budget_sec, "version": version}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
