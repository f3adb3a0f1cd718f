"""npm packages tested with node's test runner, Jest, Vitest or Mocha.

Detection: a `package.json` at the root. Which framework runs the tests is read from the
tree (`framework`): the `test` script first, then the frameworks' configuration files
(and `package.json` keys), then the devDependencies; node's built-in `node --test` when
none says. TypeScript: Vitest natively; Jest through the project's own transform (ts-jest
or babel-jest with a TypeScript preset, installed from its devDependencies); Mocha through
the project's `.mocharc` `require` (ts-node, tsx); node 20's test runner runs none (type
stripping came in node 22), so `.ts` test files are not run under `node --test`.

Tests: `*.test.*`/`*.spec.*`/`*-test.*`/`test-*` scripts and scripts under `test/`,
`tests/`, `__tests__/` or `spec/` (`rlforge.verify.standalone.noderun`), with the
frameworks' configuration files, babel/TypeScript configuration and `package.json`
(scripts, the `jest`/`mocha` keys) protected alongside, as is anything under a
`node_modules` directory.

The environment: the direct dependencies of `package.json` (dependencies and
devDependencies), each at the version its lockfile (`package-lock.json`) holds, else at
its range, installed with `npm install --ignore-scripts` (no install script of the
project or a dependency runs on the host) outside the sandbox, with network, into a
directory keyed by those lines and node's and npm's versions, and mounted read-only at
/opt/venv; the exact versions installed are the task's pinned requirements. Local
(`file:`, `link:`, `workspace:`) dependencies are left out.

A run is `rlforge_noderun.py` in the sandbox: each test file in a process of its own,
the framework started from the environment, per-test results from its report (see that
module for what holds against tested code that forges results, and what does not).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlforge.errors import UserError
from rlforge.tasks.generators.repair.runners.base import Dependencies, TestRun, TestRunner
from rlforge.tasks.generators.repair.runners.js_adversarial import js_adversarials
from rlforge.verify.standalone import copied_name, files_of, noderun

if TYPE_CHECKING:
    from rlforge.tasks.generators.repair.options import RepoSettings

MANIFEST, LOCKFILE = "package.json", "package-lock.json"
_CONFIG_EXTS = ("js", "cjs", "mjs", "ts", "cts", "mts", "json")
CONFIG_FILES = {
    "jest": tuple(f"jest.config.{e}" for e in _CONFIG_EXTS),
    "vitest": tuple(f"{n}.config.{e}" for n in ("vitest", "vitest.workspace", "vite")
                    for e in _CONFIG_EXTS),
    "mocha": (".mocharc", ".mocharc.js", ".mocharc.cjs", ".mocharc.mjs", ".mocharc.json", ".mocharc.jsonc",
              ".mocharc.yaml", ".mocharc.yml"),
}
#: configuration the frameworks (or their transforms) read: never the policy's to change
RUNNER_CONFIG = (MANIFEST, LOCKFILE, "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
                 ".npmrc", ".babelrc", ".babelrc.json", ".babelrc.js", ".babelrc.cjs",
                 *(f"babel.config.{e}" for e in _CONFIG_EXTS), "tsconfig.json",
                 *(n for names in CONFIG_FILES.values() for n in names))
RULES: dict[str, Any] = {
    "patterns": [noderun.TEST_NAME.pattern, noderun.TEST_DIR.pattern, r"(^|/)node_modules/",
                 r"(^|/)__mocks__/", r"(^|/)__snapshots__/", r"(^|/)tsconfig[^/]*\.json$"],
    "names": sorted(set(RUNNER_CONFIG)),
    "suffixes": [".snap"],
}
#: the package each framework needs in the environment (node's runner is built in)
FRAMEWORK_PACKAGE = {"jest": "jest", "vitest": "vitest", "mocha": "mocha"}
_LOCAL_SPEC = ("file:", "link:", "workspace:", "portal:", "./", "../", "/", "~/")
_FORMAT = 1  # bump when the layout of a prepared environment changes
_MARKER = "rlforge-node-env.json"


def _manifest(files: Mapping[str, bytes]) -> dict:
    try:
        data = json.loads(files.get(MANIFEST, b"{}").decode("utf-8", "replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _table(data: dict, key: str) -> dict[str, str]:
    value = data.get(key)
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def framework(files: Mapping[str, bytes]) -> str:
    """The framework the tree's tests run with: `node`, `jest`, `vitest` or `mocha`."""
    data = _manifest(files)
    script = _table(data, "scripts").get("test", "")
    found = {name: m.start() for name in ("vitest", "jest", "mocha")
             if (m := re.search(rf"(^|[\s/&;|]){name}(\s|$)", script))}
    node = re.search(r"(^|[\s&;|])node\s+(--[\w-]+(=\S+)?\s+)*--test\b", script)
    if node:
        found["node"] = node.start()
    if found:
        return min(found, key=lambda name: found[name])
    for name in ("vitest", "jest", "mocha"):
        if any(f in files for f in CONFIG_FILES[name]) or (name in ("jest", "mocha") and name in data):
            return name
    deps = {**_table(data, "dependencies"), **_table(data, "devDependencies")}
    for name in ("vitest", "jest", "mocha"):
        if name in deps:
            return name
    return "node"


def _locked_versions(files: Mapping[str, bytes]) -> dict[str, str]:
    """{package: version} of the direct dependencies a package-lock.json holds."""
    try:
        lock = json.loads(files.get(LOCKFILE, b"{}").decode("utf-8", "replace"))
    except ValueError:
        return {}
    if not isinstance(lock, dict):
        return {}
    out = {}
    packages = lock.get("packages")
    if isinstance(packages, dict):  # lockfileVersion 2 and 3
        for key, entry in packages.items():
            if key.startswith("node_modules/") and "/node_modules/" not in key[13:] \
                    and isinstance(entry, dict) and isinstance(entry.get("version"), str):
                out[key[13:]] = entry["version"]
    deps = lock.get("dependencies")
    if not out and isinstance(deps, dict):  # lockfileVersion 1
        out = {k: v["version"] for k, v in deps.items()
               if isinstance(v, dict) and isinstance(v.get("version"), str)}
    return out


def split_requirement(req: str) -> tuple[str, str]:
    """(`name`, `spec`) of a requirement line `name@spec` (`@scope/name@spec` too)."""
    at = req.find("@", 1)
    return (req, "") if at < 0 else (req[:at], req[at + 1:])


@functools.cache
def tool_versions() -> dict[str, str]:
    """node's and npm's versions (the runtime environments are built with)."""
    out = {}
    for tool in ("node", "npm"):
        try:
            proc = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            out[tool] = proc.stdout.strip().lstrip("v")
        except (OSError, subprocess.TimeoutExpired):
            out[tool] = ""
    return out


def _npm_env(home: Path, cache: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "npm_config_cache": str(cache), "npm_config_update_notifier": "false",
            "npm_config_fund": "false", "npm_config_audit": "false",
            "npm_config_ignore_scripts": "true", "npm_config_save_exact": "true",
            "LANG": "C.UTF-8",
            **{k: v for k, v in os.environ.items()
               if k.lower() in ("http_proxy", "https_proxy", "no_proxy", "npm_config_registry")}}


class NodeTests(TestRunner):
    name = "javascript"
    version = 1
    language = "javascript"
    description = ("npm packages tested with node --test, Jest, Vitest or Mocha "
                   "(one process per test file, the framework's own report)")
    manifests = (MANIFEST,)
    verifier = "repair"
    result_format = "node-json"
    source_suffixes = noderun.SCRIPT_SUFFIXES

    def test_rules(self) -> dict:
        return RULES

    def is_test_file(self, path: str) -> bool:
        return noderun.is_test_file(path)

    def dependencies(self, files: Mapping[str, bytes]) -> Dependencies:
        data = _manifest(files)
        wanted = {**_table(data, "dependencies"), **_table(data, "devDependencies")}
        locked = _locked_versions(files)
        reqs = {}
        for name, spec in wanted.items():
            if spec.startswith(_LOCAL_SPEC) or not name:
                continue
            reqs[name] = f"{name}@{locked.get(name) or spec}"
        package = FRAMEWORK_PACKAGE.get(framework(files))
        if package and package not in reqs:
            reqs[package] = package
        sources = [p for p in (MANIFEST, LOCKFILE) if p in files]
        h = hashlib.sha256()
        for path in sources:
            h.update(path.encode() + b"\0" + files[path] + b"\0")
        return Dependencies(tuple(sorted(reqs.values())), tuple(sources), h.hexdigest()[:16])

    def settings_for(self, files: Mapping[str, bytes], settings: "RepoSettings") -> "RepoSettings":
        """The framework goes in `test_command` unless the repository's settings name one."""
        if settings.test_command and settings.test_command[0] in noderun.FRAMEWORKS:
            return settings
        return replace(settings, test_command=(framework(files),))

    def env_key(self, requirements: list[str], settings: "RepoSettings") -> str:
        blob = json.dumps({"format": _FORMAT, "tools": tool_versions(),
                           "requirements": sorted(requirements)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def prepare(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> Path:
        """`npm install` of the requirements into `cache_dir/node-<key>` on first use."""
        cache_dir = Path(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        dest = cache_dir / f"node-{self.env_key(requirements, settings)}"
        if (dest / _MARKER).is_file():
            return dest
        with open(cache_dir / f"{dest.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (dest / _MARKER).is_file():
                return dest
            build = Path(tempfile.mkdtemp(prefix=f"{dest.name}-", dir=cache_dir))
            try:
                versions = _npm_install(build, sorted(requirements), cache_dir / "npm-cache")
                (build / _MARKER).write_text(json.dumps(
                    {"requirements": sorted(requirements), "installed": versions,
                     "tools": tool_versions()}, indent=1, sort_keys=True))
                for path in [build, *build.rglob("*")]:
                    if not path.is_symlink():
                        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
                shutil.rmtree(dest, ignore_errors=True)
                os.rename(build, dest)
            finally:
                shutil.rmtree(build, ignore_errors=True)
        return dest

    def pinned(self, requirements: list[str], settings: "RepoSettings", cache_dir: Path) -> list[str]:
        """`name@version` of each direct dependency as installed in the environment."""
        try:
            env = self.prepare(requirements, settings, cache_dir)
            installed = json.loads((env / _MARKER).read_text())["installed"]
        except (UserError, OSError, ValueError, KeyError):
            return list(requirements)
        return [f"{name}@{installed.get(name, spec)}"
                for name, spec in map(split_requirement, requirements)]

    def runtime_version(self) -> str:
        return tool_versions()["node"]

    def check_identity(self) -> dict[str, str]:
        return {"runner": self.id, "runtime": f"node {self.runtime_version()}",
                "npm": tool_versions()["npm"]}

    def test_run(self, *, tree: str, tests: str, out: str, env: str, settings: "RepoSettings",
                 paths: list[str] | None, budget_sec: float, check_name: str | None) -> TestRun:
        chosen = settings.test_command[0] if settings.test_command else "node"
        if chosen not in noderun.FRAMEWORKS:
            raise UserError(f"the javascript runner runs {', '.join(noderun.FRAMEWORKS)}, not "
                            f"{' '.join(settings.test_command)!r} (tasks.repair.repos.*.test_command)")
        spec = {"tree": tree, "framework": chosen, "env": env, "ids": None, "paths": paths,
                "per_test_timeout": settings.per_test_timeout,
                "collect_timeout": settings.collect_timeout, "budget_sec": budget_sec,
                "env_vars": dict(settings.env)}
        files = {**files_of("noderun", "siblings"), "run.json": json.dumps(spec).encode()}
        return TestRun(["/usr/bin/python3", "-I", f"{tests}/{copied_name('noderun')}",
                        f"{tests}/run.json", f"{out}/results.json"], files)

    def adversarials(self, **task) -> list:
        return js_adversarials(**task)


class TypeScriptTests(NodeTests):
    """The same runner for repositories whose commits `commit_files` calls TypeScript."""

    name = "typescript"
    language = "typescript"
    description = "TypeScript npm packages: the javascript runner (Vitest, Jest with a transform, Mocha)"


def _npm_install(build: Path, requirements: list[str], npm_cache: Path) -> dict[str, str]:
    """Install `requirements` into `build/node_modules`; {name: version installed}."""
    deps = dict(split_requirement(r) for r in requirements)
    (build / MANIFEST).write_text(json.dumps(
        {"name": "rlforge-test-env", "version": "0.0.0", "private": True,
         "devDependencies": {k: v or "*" for k, v in deps.items()}}, indent=1, sort_keys=True))
    home = build / ".home"
    home.mkdir()
    if deps:
        try:
            proc = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                                   "--loglevel=error", "--include=dev"],
                                  cwd=build, env=_npm_env(home, npm_cache), capture_output=True,
                                  text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"npm install failed: {exc}") from None
        if proc.returncode != 0:
            raise UserError(f"npm install of {len(deps)} package(s) failed: "
                            f"{(proc.stderr or proc.stdout).strip()[-600:]}")
    else:
        (build / "node_modules").mkdir()
    shutil.rmtree(home, ignore_errors=True)
    versions = {}
    for name in deps:
        try:
            meta = json.loads((build / "node_modules" / name / MANIFEST).read_text())
            versions[name] = str(meta["version"])
        except (OSError, ValueError, KeyError):
            versions[name] = ""
    return versions
