"""Harbor's container emulated for tests/test.sh: the agent's commands and then the
verifier in one container, as Harbor runs a task in its shared mode (bubblewrap as real
root in a pid namespace of its own, the host's system read-only). Needs root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def harbor_trial(task: Path, tmp: Path, agent: str, after_sec: float = 1.5,
                  venv: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Play a Harbor trial: the agent's commands run as root in a container of their own
    (here: bubblewrap as real root, a pid namespace, the host's system read-only); its
    processes stay; then tests/ is uploaded and test.sh runs as root in the same container.
    `env`: variables the container sets for both (as an image's ENV would).
    Returns reward.txt as the host reads it `after_sec` after test.sh ended."""
    if os.geteuid() != 0:
        pytest.skip("emulating Harbor's root container needs root")
    app, tests, logs, ctl = tmp / "app", tmp / "tests", tmp / "logs", tmp / "ctl"
    shutil.copytree(task / "environment" / "app", app) if (task / "environment" / "app").is_dir() else app.mkdir()
    for d in (tests, logs, ctl):
        d.mkdir()
    (ctl / "agent.sh").write_text(agent)
    script = ("cd /app; bash /ctl/agent.sh >/ctl/agent.out 2>&1; touch /ctl/agent-done; "
              "while [ ! -e /ctl/go ]; do sleep 0.05; done; "
              "bash /tests/test.sh >/ctl/test.out 2>&1; echo $? > /ctl/rc; "
              "while [ ! -e /ctl/stop ]; do sleep 0.05; done")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", **(env or {})}
    proc = subprocess.Popen(["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                             "--die-with-parent", "--tmpfs", "/", "--ro-bind", "/usr", "/usr",
                             "--ro-bind", "/etc", "/etc", "--symlink", "usr/bin", "/bin",
                             "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                             "--symlink", "usr/sbin", "/sbin", "--dir", "/root", "--tmpfs", "/tmp",
                             "--proc", "/proc", "--dev", "/dev", "--bind", str(app), "/app",
                             "--bind", str(tests), "/tests", "--bind", str(logs), "/logs",
                             "--bind", str(ctl), "/ctl",
                             *(["--perms", "0755", "--dir", "/opt", "--ro-bind", str(venv), "/opt/venv"]
                               if venv else []),
                             "--", "bash", "-c", script], env=env)
    try:
        deadline = time.monotonic() + 60
        while not (ctl / "agent-done").exists():
            assert time.monotonic() < deadline and proc.poll() is None, "agent phase did not end"
            time.sleep(0.05)
        time.sleep(0.3)  # what the agent left running settles in
        shutil.copytree(task / "tests", tests, dirs_exist_ok=True)
        (ctl / "go").touch()
        deadline = time.monotonic() + 120
        while not (ctl / "rc").exists():
            assert time.monotonic() < deadline and proc.poll() is None, (ctl / "test.out").read_text()
            time.sleep(0.05)
        time.sleep(after_sec)
        reward = logs / "verifier" / "reward.txt"
        assert reward.is_file(), f"no reward.txt; test.sh said:\n{(ctl / 'test.out').read_text()[-3000:]}"
        return reward.read_text().strip()
    finally:
        (ctl / "stop").touch()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
