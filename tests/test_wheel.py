"""The wheel, not the checkout: built from the source tree, installed into a fresh venv, it
ingests and builds validated tasks, byte-identical to the ones the checkout builds.

Every other test runs rlforge from the checkout (an editable install), where files the
wheel forgot to ship are still found. The fresh venv gets rlforge only from the wheel; its
dependencies are the ones already installed here, seen through a `.pth` file (nothing is
downloaded), and pip checks them against the wheel's declared ranges as it installs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from paths import ROOT, SAMPLE_DATA

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

GENERATORS = "tickets.triage,tickets.reply"


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _dependencies_without_rlforge(target: Path) -> Path:
    """A directory of links to this environment's installed packages, rlforge's own left out
    (the editable install's path hooks and metadata), so the fresh venv can only get
    rlforge from the wheel."""
    target.mkdir()
    for lib in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        for entry in Path(lib).iterdir():
            name = entry.name.lower()
            if (name.startswith(("rlforge", "__editable__", "_rlforge")) or name.endswith(".pth")
                    or (target / entry.name).exists()):
                continue
            (target / entry.name).symlink_to(entry)
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

    # 2. a fresh venv that has every dependency but rlforge, and rlforge from the wheel
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    py = venv / "bin" / "python"
    purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   tmp_path, env).stdout.strip()
    deps = _dependencies_without_rlforge(tmp_path / "deps")
    (Path(purelib) / "deps.pth").write_text(f"{deps}\n")
    missing = subprocess.run([py, "-c", "import rlforge"], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "No module named 'rlforge'" in missing.stderr
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

    # 4. the checkout builds the same bytes from the same database and seed
    shutil.copy2(tmp_path / "wheel.duckdb", tmp_path / "checkout.duckdb")
    env.update(RLFORGE_DB=str(tmp_path / "checkout.duckdb"), PYTHONPATH=str(ROOT))
    _run([sys.executable, "-m", "rlforge", "build-tasks", "--out", tmp_path / "from-checkout",
          "--generators", GENERATORS, "--limit", "4", "--seed", "3"], tmp_path, env)
    from_checkout = _tree(tmp_path / "from-checkout")
    # the task directories (manifest.parquet beside them records when it was written)
    assert ({p: b for p, b in from_checkout.items() if Path(p).parts[0] in tasks}
            == {p: b for p, b in from_wheel.items() if Path(p).parts[0] in tasks})
