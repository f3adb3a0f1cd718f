"""Policy code under tests/test.sh where no rlforge sandbox holds it (Harbor with Docker):
the verifier runs as root and its launcher (`policy_code.LocalPolicy`) drops the code to
uid 65534. There it runs under the limits `rlforge run`'s sandbox sets, and passing one
is the submission's fail (reward 0 with a reason), never a crash of the verifier.

Docker does not run here: the container is emulated (`harbor_container`), test.sh as
real root, so uid 65534 is the host's. The bombs are bounded (300 processes, a sparse
file) so that on a launcher without limits they finish, and score.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harbor_container import harbor_trial
from paths import SAMPLE_DATA
from rlforge.sandbox import SandboxSpec
from rlforge.verify.boundary import read_logged_result
from rlforge.verify.standalone.policy_code import LIMITS, OOM_SCORE_ADJ, LocalPolicy

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="the launcher drops a uid only as root")]

#: Prepended to the gold program: each stops at a limit, else the gold answer follows.
FORK_BOMB = ("import os, time\nfor _ in range(300):\n    if os.fork() == 0:\n"
             "        time.sleep(5)\n        os._exit(0)\n")
FILE_SIZE_BOMB = ("with open('big.bin', 'wb') as _fh:\n    _fh.seek(300 << 20)\n"
                  "    _fh.write(b'x')\n")


@pytest.fixture(scope="module")
def script_task(tmp_path_factory) -> Path:
    """A logs.script task built from sample_data."""
    root = tmp_path_factory.mktemp("limits")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RLFORGE_")},
           "RLFORGE_DB": str(root / "rl.duckdb"), "RLFORGE_CACHE_DIR": str(root / "cache"),
           "HOME": str(root)}
    for args in (["ingest", "logs", *map(str, sorted((SAMPLE_DATA / "logs").glob("*.log*")))],
                 ["build-tasks", "--out", str(root / "tasks"), "--limit", "1", "--seed", "1",
                  "--generators", "logs.script"]):
        done = subprocess.run([sys.executable, "-m", "rlforge", *args], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return next(p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file())


def test_dropped_policy_code_runs_under_rlforge_runs_limits(tmp_path):
    assert LIMITS == {name: getattr(SandboxSpec(), name) for name in LIMITS}
    probe = ("import os, resource as r\nprint(os.getuid(), [r.getrlimit(getattr(r, n))[1] for n in "
             "('RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE', 'RLIMIT_CPU')], "
             "open('/proc/self/oom_score_adj').read().strip())\n")
    ran = LocalPolicy().run(["/usr/bin/python3", "-c", probe], str(tmp_path), timeout=20.5)
    assert ran.code == 0, ran.stderr
    assert ran.stdout.split()[0] == "65534"
    assert json.loads(ran.stdout[ran.stdout.index("["):ran.stdout.index("]") + 1]) == \
        [128, 256 << 20, 1024, 21]
    assert ran.stdout.split()[-1] == str(OOM_SCORE_ADJ)


@pytest.mark.slow
@pytest.mark.parametrize("bomb, why", [(FORK_BOMB, "Resource temporarily unavailable"),
                                       (FILE_SIZE_BOMB, "File too large")],
                         ids=["fork_bomb", "file_size_bomb"])
def test_a_bomb_under_the_root_verifier_is_the_submissions_fail(script_task, tmp_path, bomb, why):
    ref = json.loads((script_task / "tests" / "reference.json").read_text())
    program = "/app/" + next(p for p in ref["programs"] if p.endswith(".py"))
    solve = (script_task / "solution" / "solve.sh").read_text()
    agent = (f"{solve}\ncat > /tmp/bomb <<'RLFORGE_BOMB'\n{bomb}RLFORGE_BOMB\n"
             f"cat /tmp/bomb {program} > /tmp/both && cp /tmp/both {program}\n")
    assert float(harbor_trial(script_task, tmp_path, agent)) == 0.0
    result = read_logged_result(tmp_path / "logs" / "verifier")
    assert result["outcome"] == "fail" and result["reason"] == "crash", result
    assert why in result["components"]["correct"]["detail"], result["components"]["correct"]
