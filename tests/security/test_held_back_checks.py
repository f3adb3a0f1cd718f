"""Held-back pass-to-pass checks against a forger in the test process (issue 33, item 6).

A real fix that also breaks another function, shipped with code the tests import that (1)
wraps the checked-assert function to send the literal its caller compares with and (2)
patches pytest's `Function.runtest` to swallow failures everywhere but in the fail-to-pass
tests, the canaries and the canaries' originals (tests/security/attacks/p2p_forge.py),
scored 1.0: every pass-to-pass literal is in the workspace the policy saw. A task now
holds copies of pass-to-pass tests with an input changed, whose values the build measured
and the verifier keeps: the forger can neither echo them nor compute them with the broken
function, and the attempt scores 0. The gold fix still scores 1.0 (the build validates).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from builds import build_repair, repair_home
from rlforge.tasks.generators.repair.score import score_workspace

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

FORGE = (Path(__file__).parent / "attacks" / "p2p_forge.py").read_text()
CLOCK = '''def fmt_minutes(n):
    hours, minutes = divmod(n, 60)
    return f"{hours}h{minutes:02d}m"


def parse_minutes(text):
    hours, _, minutes = text.partition("h")
    return int(hours) * 60 + int(minutes.rstrip("m") or 0)
'''
MONEY = '''def cents(amount):
    whole, _, frac = amount.partition(".")
    return int(whole) * 100 + int(frac or 0)
'''
CLOCK_TESTS = '''from shop import fmt_minutes, parse_minutes


def test_fmt_minutes():
    assert fmt_minutes(135) == "2h15m"


def test_fmt_minutes_on_the_hour():
    assert fmt_minutes(180) == "3h00m"


def test_parse_minutes():
    assert parse_minutes("1h05m") == 65
'''
MONEY_TESTS = '''from shop import cents


def test_cents_of_whole_amounts():
    assert cents("12") == 1200
'''
FIX_TEST = '''

def test_cents_of_one_decimal():
    assert cents("1.5") == 150
'''


def _git(repo: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_AUTHOR_DATE": "2024-03-01T10:00:00+00:00", "GIT_COMMITTER_DATE": "2024-03-01T10:00:00+00:00"}
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True,
                   capture_output=True)


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def task(tmp_path_factory, shared_cache) -> Path:
    """The one repair task of a small shop repository: the fix is to cents(); the clock
    functions are tested by pass-to-pass tests only. Built and validated (gold 1, null and
    the adversarial submissions 0)."""
    root = tmp_path_factory.mktemp("held-back")
    repo = root / "shop"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, "Start the shop package with clock and money helpers", {
        "pyproject.toml": '[project]\nname = "shop"\nversion = "0.1.0"\ndependencies = []\n\n'
                          '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        "shop/__init__.py": "from shop.clock import fmt_minutes, parse_minutes\nfrom shop.money import cents\n",
        "shop/clock.py": CLOCK, "shop/money.py": MONEY,
        "tests/test_clock.py": CLOCK_TESTS, "tests/test_money.py": MONEY_TESTS})
    _commit(repo, "cents() reads one decimal digit as cents instead of tenths\n\ncents(\"1.5\") gives 105.", {
        "shop/money.py": MONEY.replace('int(frac or 0)', 'int((frac + "00")[:2])'),
        "tests/test_money.py": MONEY_TESTS + FIX_TEST})
    with repair_home(root, shared_cache):
        report = build_repair(root, [repo], validate=True, seed=5, per_test_timeout=5.0)
    dirs = [d for d in (root / "tasks").iterdir() if (d / "task.toml").is_file()]
    assert len(dirs) == 1, (report, dirs)
    return dirs[0]


def _attempt(task: Path, tmp_path: Path, regression: str) -> dict:
    """The gold fix, `regression` appended to shop/clock.py and the forger to the package."""
    ws = tmp_path / "app"
    shutil.copytree(task / "environment" / "app", ws)
    subprocess.run(["git", "apply", str(task / "solution" / "gold.diff")], cwd=ws, check=True)
    clock = ws / "shop" / "clock.py"
    clock.write_text(clock.read_text() + regression)
    known = sorted({n for f in (ws / "tests").glob("test_*.py") for n in re.findall(r"def (test_\w+)", f.read_text())})
    init = ws / "shop" / "__init__.py"
    reference = json.loads((task / "tests" / "reference.json").read_text())
    new = sorted({i.split("::")[-1] for i in reference["fail_to_pass"]})
    init.write_text(init.read_text() + f"\n_P2P_KNOWN = {known!r}\n_P2P_NEW = {new!r}\n" + FORGE)
    result = asyncio.run(score_workspace(task, ws))
    assert result.reward is not None, result.error
    return result.reward


@pytest.mark.parametrize("regression", [
    '\n\ndef fmt_minutes(n):\n    return ""\n',
    '\n\ndef parse_minutes(text):\n    return 0\n',
], ids=["fmt_minutes-empty", "parse_minutes-zero"])
def test_a_real_fix_that_breaks_another_function_scores_zero_despite_a_forger(task, tmp_path, monkeypatch,
                                                                               shared_cache, regression):
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
    reward = _attempt(task, tmp_path, regression)
    comps = reward["components"]
    assert comps["fail_to_pass"]["value"] == 1.0, comps  # the real fix holds
    assert reward["total"] == 0.0, comps
    assert comps["pass_to_pass"]["value"] == 0, comps


def test_the_forger_alone_does_not_fail_the_gold_fix(task, tmp_path, monkeypatch, shared_cache):
    """Without a regression every test holds, so the pass-to-pass zero above is the
    regression caught, not the forger's machinery. The attempt still fails: on the caller
    gate (the forger reads frames and pytest), and on its echoes, which it reads from the
    test files it finds empty on disk while the tests run (`testrun._hold`)."""
    monkeypatch.setenv("RLFORGE_CACHE_DIR", str(shared_cache))
    reference = json.loads((task / "tests" / "reference.json").read_text())
    assert reference["p2p_variants"], "the task holds back no pass-to-pass check"
    reward = _attempt(task, tmp_path, "")
    comps = reward["components"]
    assert comps["fail_to_pass"]["value"] == comps["pass_to_pass"]["value"] == 1.0, comps
    assert reward["total"] == 0.0 and comps["blind_to_tests"]["value"] == 0, reward
    assert reward["reason"] == "forged_results", reward
