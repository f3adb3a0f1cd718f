"""Python projects tested with pytest: the built-in runner, registered like a plug-in's.

Detection: a Python manifest at the root (pyproject.toml, setup.cfg, setup.py, a
requirements file `envs` reads), or, lacking one, a Python test file anywhere (pytest
needs no manifest to collect `test_*.py`). Tests: `test_*.py` / `*_test.py` files and
files under `test/`/`tests/` directories (`rlforge.ingest.commits`), with conftest.py and
pytest's configuration files protected alongside. The environment is a venv prepared
outside the sandbox (`rlforge.sandbox.prepare_env`, keyed by its requirement lines and
cached), its exact versions pinned in the task. A run is pytest with rlforge's plug-in
reporting each test over a FIFO (`rlforge/verify/standalone/testrun.py`), driven by the
task's own `rlforge_repair.py --run-tests`.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlforge.errors import UserError
from rlforge.ingest.commits import TEST_DIR, TEST_FILE
from rlforge.sandbox.envs import SYSTEM_PYTHON, env_key, installed_versions, prepare_env
from rlforge.tasks.generators.repair import envs
from rlforge.tasks.generators.repair.adversarial import repair_adversarials
from rlforge.tasks.generators.repair.runners.python_spec import behaviours as test_behaviours
from rlforge.tasks.generators.repair.runners.base import Dependencies, TestRun, TestRunner
from rlforge.verify.standalone import asserts, callers, protect, task_files, variants
from rlforge.verify.standalone.protect import top_level_modules

if TYPE_CHECKING:
    from rlforge.tasks.generators.repair.options import RepoSettings
    from rlforge.tasks.generators.repair.spec import Derivation

RULES: dict[str, Any] = {
    "patterns": ["(?i)" + TEST_DIR.pattern, TEST_FILE.pattern],
    "names": ["conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini",
              "setup.cfg", "pyproject.toml", "sitecustomize.py", "usercustomize.py"],
    "suffixes": [".pth"],
}


@functools.cache
def system_python_version() -> str:
    """Version of the interpreter prepared environments are built from (e.g. 3.11.2)."""
    return subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True, env={}).stdout.strip()


def report_checks(tree: Path, files: Mapping[str, bytes]) -> tuple[str, dict]:
    """Make the literal asserts of every test in the test `files` (path -> their bytes in
    `tree`) report their values as they run (the asserts themselves unchanged); (builtin
    name, plan)."""
    name = "_rlforge_check_" + os.urandom(6).hex()
    plan: dict[int, dict] = {}
    for rel in sorted(p for p in files if p.endswith(".py")):
        text, found = asserts.externalize_checks(
            files[rel], asserts.test_keys(files[rel]), name, start=len(plan),
            keep_assert=True)
        if found:
            (tree / rel).write_bytes(text)
            plan.update(found)
    return name, plan


class Pytest(TestRunner):
    name = "python"
    version = 1
    language = "python"
    description = "Python projects tested with pytest (per-test reports over a FIFO)"
    manifests = (envs.PYPROJECT, envs.SETUP_CFG, "setup.py",
                 *envs.REQUIREMENT_FILES, *envs.DEV_REQUIREMENT_FILES)
    verifier = "repair"
    result_format = "pytest-junit"
    source_suffixes = (".py",)
    selects_tests = True
    test_files_text = "anything under a `tests/` or `test/` directory,\n`test_*.py`, `*_test.py`, `conftest.py`"

    def detect(self, paths: Collection[str]) -> bool:
        return super().detect(paths) or any(self.is_test_file(p) for p in paths)

    def why_not(self) -> str:
        return f"{super().why_not()}, nor a Python test file"

    def test_rules(self) -> dict:
        return RULES

    def is_test_file(self, path: str) -> bool:
        return path.endswith(".py") and protect.is_protected(path, RULES) \
            and path.rsplit("/", 1)[-1] not in protect.ALWAYS_NAMES

    def dependencies(self, files: Mapping[str, bytes]) -> Dependencies:
        found = envs.discover(dict(files))
        return Dependencies(found.requirements, found.sources, found.files_sha256, found.unread)

    def settings_for(self, files: Mapping[str, bytes], settings: "RepoSettings") -> "RepoSettings":
        if settings.pythonpath is None:
            return replace(settings, pythonpath=envs.default_pythonpath(dict(files)))
        return settings

    def env_key(self, requirements: list[str], settings: "RepoSettings") -> str:
        return env_key(requirements, pip_args=settings.pip_args)

    def prepare(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> Path:
        return prepare_env(list(requirements), cache_dir, pip_args=list(settings.pip_args))

    def pinned(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> list[str]:
        """Read from the venv the checks ran in; as given when they name files or URLs."""
        if not requirements or any("/" in r or r.startswith(".") for r in requirements):
            return list(requirements)
        try:
            venv = self.prepare(requirements, settings, cache_dir)
        except UserError:
            return list(requirements)
        return installed_versions(venv) or list(requirements)

    def runtime_version(self) -> str:
        return system_python_version()

    def check_identity(self) -> dict[str, str]:
        """The interpreter's version, under the key checks had before runners were
        pluggable, so verdicts cached then stay valid (and rebuilds byte-identical)."""
        return {"python": self.runtime_version()}

    def test_run(self, *, tree: str, tests: str, out: str, env: str, settings: "RepoSettings",
                 paths: list[str] | None, budget_sec: float, check_name: str | None,
                 ids: list[str] | None = None) -> TestRun:
        spec = {"tree": tree, "test_command": list(settings.test_command),
                "ids": ids, "paths": paths, "per_test_timeout": settings.per_test_timeout,
                "collect_timeout": settings.collect_timeout, "budget_sec": budget_sec,
                "pythonpath": list(settings.pythonpath or ()), "env": dict(settings.env),
                "check_name": check_name}
        files = {**task_files(self.verifier), "run.json": json.dumps(spec).encode()}
        return TestRun([f"{env}/bin/python", f"{tests}/rlforge_repair.py", "--run-tests",
                        f"{tests}/run.json", f"{out}/results.json"], files)

    def report_checks(self, tree: Path, files: Mapping[str, bytes]) -> tuple[str | None, dict]:
        return report_checks(tree, files)

    def held_back_variants(self, files: Mapping[str, bytes], checked: dict[str, list[int]],
                           rng: random.Random) -> list[dict]:
        return variants.candidates(files, checked, rng)

    def plant_variants(self, tree: Path, files: Mapping[str, bytes],
                       chosen: list[dict]) -> tuple[str | None, dict]:
        name = "_rlforge_check_" + os.urandom(6).hex()
        plan: dict[int, dict] = {}
        for rel, text in sorted(variants.appended(files, chosen).items()):
            keys = {v["test"] for v in chosen if v["file"] == rel}
            text, found = asserts.externalize_checks(text, keys, name, start=len(plan))
            (tree / rel).write_bytes(text)
            plan.update({i: {**item, "file": rel} for i, item in found.items()})
        return name, plan

    def kept_variants(self, chosen: list[dict], plan: dict, runs: list[dict]) -> list[dict]:
        return variants.kept(chosen, plan, runs)

    def checked_fail_to_pass(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                             workspace: Mapping[str, bytes], held_at_parent: dict) -> list[str]:
        return asserts.checked_fail_to_pass(dict(hidden), fail_to_pass, dict(workspace),
                                            held_at_parent)

    def could_check(self, hidden: Mapping[str, bytes], workspace: Mapping[str, bytes]) -> bool:
        """`checked_fail_to_pass` with every test of the hidden files taken as failing
        at the parent and passing with the fix, and no check held at the parent: the
        largest set the runs could leave, so a commit it finds none in has none."""
        for rel in sorted(p for p in hidden if p.endswith(".py")):  # a file at a time: the first will do
            every = [f"{rel}::{key}" for key in sorted(asserts.test_keys(hidden[rel]))]
            if asserts.checked_fail_to_pass({rel: hidden[rel]}, every, dict(workspace), {}):
                return True
        return False

    def template_context(self, requirements: list[str], settings: "RepoSettings",
                         cache_dir: Path) -> dict:
        return {**super().template_context(requirements, settings, cache_dir),
                "config_files": [n for n in RULES["names"] if n != "conftest.py"],
                "python_version": ".".join(system_python_version().split(".")[:2])}

    def reference_fields(self, settings: "RepoSettings", workspace: Mapping[str, bytes]) -> dict:
        roots = [""] + list(settings.pythonpath or ())
        return {"test_command": list(settings.test_command), "pythonpath": list(settings.pythonpath or ()),
                "base_modules": top_level_modules(sorted(workspace), roots),
                "base_findings": callers.base_findings(workspace, self._protected)}

    def _protected(self, path: str) -> bool:
        return protect.is_protected(path, RULES)

    def gold_inspects_caller(self, workspace: Mapping[str, bytes],
                             fixed: Mapping[str, bytes | None]) -> list[str]:
        gold = {**workspace, **{p: d for p, d in fixed.items() if d is not None}}
        for path, data in fixed.items():
            if data is None:
                gold.pop(path, None)
        return callers.added_findings(gold, self._protected,
                                      callers.base_findings(workspace, self._protected))

    def task_metadata(self, requirements: list[str], settings: "RepoSettings") -> dict:
        """The venv's requirement lines and pip arguments (`rlforge.verify.runner`
        prepares it again from them), and its key."""
        return {"env_requirements": requirements, "env_pip_args": list(settings.pip_args),
                "env_key": self.env_key(requirements, settings)}

    def behaviours(self, hidden: Mapping[str, bytes], fail_to_pass: list[str],
                   workspace: Mapping[str, bytes], fixed: Mapping[str, bytes | None]
                   ) -> "Derivation | None":
        return test_behaviours(hidden, fail_to_pass, workspace, fixed, self.is_test_file)

    def adversarials(self, **task) -> list:
        return repair_adversarials(**task)
