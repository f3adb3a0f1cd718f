"""The sandbox API: what `run` returns, how specs map to the sandbox, and how it fails."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from rlforge.config import Config
from rlforge.errors import SandboxUnavailable, UserError
from rlforge.sandbox import (FailureReason, SandboxSpec, read_file, run, run_checks,
                             spec_from_settings)
from rlforge.sandbox import runner, seccomp

pytestmark = pytest.mark.sandbox


@pytest.fixture
def dirs(tmp_path):
    made = {name: tmp_path / name for name in ("workspace", "tests", "logs", "data")}
    for d in made.values():
        d.mkdir()
    (made["tests"] / "test.sh").write_text(
        "#!/bin/bash\n"
        "if grep -q fixed /app/answer.txt; then r=1; else r=0; fi\n"
        'echo "{\\"total\\": $r, \\"components\\": {\\"answer\\": $r}}" > /logs/verifier/reward.json\n'
        "echo $r > /logs/verifier/reward.txt\n")
    (made["data"] / "labels.csv").write_text("id,label\n1,billing\n")
    return made


def test_exit_code_and_both_outputs_come_back(dirs):
    r = run(["sh", "-c", "echo out; echo err >&2; exit 3"], SandboxSpec(workspace=dirs["workspace"]))
    assert (r.exit_code, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    assert not r.ok and r.failure is None and r.sandboxed and not r.timed_out and not r.killed
    assert r.duration_sec > 0
    assert json.loads(json.dumps(r.to_dict()))["stdout"] == "out\n"


def test_a_harbor_style_verifier_runs_at_the_harbor_paths(dirs):
    spec = SandboxSpec(workspace=dirs["workspace"], tests=dirs["tests"], logs=dirs["logs"])
    (dirs["workspace"] / "answer.txt").write_text("fixed\n")
    r = run(["bash", "/tests/test.sh"], spec)
    assert r.ok, r
    assert json.loads(read_file(dirs["logs"], "reward.json")) == {"total": 1, "components": {"answer": 1}}
    assert read_file(dirs["logs"], "reward.txt") == b"1\n"
    r = run(["pwd"], spec)
    assert r.stdout == b"/app\n"


def test_tests_are_read_only_unless_asked(dirs):
    script = "echo x >> /tests/test.sh && echo wrote"
    assert run(["sh", "-c", script], SandboxSpec(tests=dirs["tests"])).stdout == b""
    assert run(["sh", "-c", script], SandboxSpec(tests=dirs["tests"], tests_writable=True)).stdout == b"wrote\n"


def test_extra_read_only_binds_and_cwd(dirs):
    spec = SandboxSpec(ro_binds={"/data": dirs["data"]}, cwd="/data")
    r = run(["sh", "-c", "pwd; cat labels.csv; touch new 2>/dev/null || echo read-only"], spec)
    assert r.stdout_text.splitlines() == ["/data", "id,label", "1,billing", "read-only"]


def test_no_workspace_means_cwd_tmp_and_a_clean_environment(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "t0k3n")
    r = run(["sh", "-c", "pwd; env | sort"], SandboxSpec(env={"TASK_ID": "abc"}))
    lines = r.stdout_text.splitlines()
    assert lines[0] == "/tmp"
    assert lines[1:] == sorted(["HOME=/tmp", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin",
                                "PWD=/tmp", "TASK_ID=abc", "TMPDIR=/tmp", "USER=nobody"])


@pytest.mark.parametrize("bad", [
    dict(timeout_sec=0), dict(mode="docker"), dict(max_processes=0), dict(memory_mb=0),
    dict(output_limit=0), dict(ro_binds={"relative": "/x"}), dict(ro_binds={"/usr/share": "/x"}),
    dict(ro_binds={"/app/sub": "/x"}), dict(ro_binds={"/": "/x"}), dict(env={"A=B": "x"}),
    dict(cwd="app"),
])
def test_invalid_specs_are_user_errors(bad):
    with pytest.raises(UserError):
        SandboxSpec(**bad)


def test_an_empty_command_is_a_user_error():
    with pytest.raises(UserError):
        run([])


def test_a_missing_command_is_the_commands_failure_not_the_sandboxes():
    r = run(["no-such-program"])
    assert r.exit_code == 127 and r.failure is None
    assert b"no-such-program" in r.stderr


def test_a_sandbox_that_cannot_be_built_reports_an_infrastructure_failure(tmp_path):
    r = run(["true"], SandboxSpec(workspace=tmp_path / "gone"))
    assert r.failure is not None and r.failure.reason is FailureReason.SETUP
    assert "gone" in r.failure.detail and r.exit_code is None and not r.ok
    # a command cannot fake one by printing bubblewrap's words and exiting 1
    r = run(["sh", "-c", "echo \"bwrap: Can't find source path /x\" >&2; exit 1"])
    assert r.failure is None and r.exit_code == 1


def test_cancel_kills_the_run_promptly():
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    r = run(["sleep", "30"], SandboxSpec(timeout_sec=30), cancel=cancel)
    assert r.killed and not r.timed_out and r.exit_code is None
    assert r.duration_sec < 3
    assert run(["true"], cancel=cancel).killed  # already cancelled: nothing starts


def test_mode_none_runs_on_the_host_and_warns_every_time(dirs, capsys):
    spec = SandboxSpec(workspace=dirs["workspace"], mode="none")
    first = run(["pwd"], spec)
    second = run(["sh", "-c", "test -d /root && echo host"], spec)
    assert not first.sandboxed and first.stdout_text.strip() == str(dirs["workspace"])
    assert second.stdout == b"host\n"
    assert capsys.readouterr().err.count("WITHOUT isolation") == 2


def test_spec_from_settings_uses_settings_and_lets_given_values_win(monkeypatch):
    monkeypatch.setenv("RLFORGE_SANDBOX_TIMEOUT", "7.5")
    monkeypatch.setenv("RLFORGE_SANDBOX_MEMORY_MB", "0")
    cfg = Config.load().settings().sandbox
    spec = spec_from_settings(cfg, max_processes=None)
    assert (spec.timeout_sec, spec.memory_mb, spec.max_processes, spec.mode) == (7.5, None, 128, "bwrap")
    assert spec_from_settings(cfg, timeout_sec=2, memory_mb=64).memory_mb == 64
    assert spec_from_settings(cfg, timeout_sec=2).cpu_limit == 2


def test_missing_bubblewrap_is_refused_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "_support", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        run(["true"])


def test_no_user_namespaces_is_refused_with_the_fix():
    # Run rlforge inside a bubblewrap that forbids further user namespaces: a real host
    # where namespaces are off, without touching this machine's settings.
    root = str(Path(__file__).resolve().parents[1])
    code = (f"import sys; sys.path.insert(0, {root!r})\n"
            "from rlforge.sandbox import ensure_available\n"
            "from rlforge.errors import SandboxUnavailable\n"
            "try:\n    ensure_available()\nexcept SandboxUnavailable as e:\n    print(e)\n")
    out = subprocess.run(["bwrap", "--unshare-user", "--uid", "1000", "--disable-userns", "--dev-bind",
                          "/", "/", "--", "/usr/bin/python3", "-c", code],
                         capture_output=True, text=True, timeout=60)
    assert "cannot create namespaces" in out.stdout, out
    assert "unprivileged user namespaces" in out.stdout


def test_the_seccomp_program_is_well_formed():
    for machine in ("x86_64", "aarch64"):
        program = seccomp.filter_bytes(machine)
        assert len(program) % 8 == 0 and 8 < len(program) // 8 < 256
    with pytest.raises(ValueError):
        seccomp.filter_bytes("riscv64")


def test_check_catches_what_an_unsandboxed_run_gets_away_with():
    # The same probes without isolation: each property the sandbox provides must fail.
    results = {c.name: c.ok for c in run_checks(mode="none")}
    caught = ["no network (host 127.0.0.1, internet, DNS)", "host files invisible",
              "clean environment (no host secrets)", "uid 65534, no capabilities, no new user namespaces",
              "timeout kills the whole tree", "keyring syscalls blocked (seccomp)",
              "nothing left running after exit"]
    if os.geteuid() == 0:  # an ordinary user cannot do these even without a sandbox
        caught += ["system read-only, tests read-only", "kernel settings read-only (/proc/sys)",
                   "process limit holds", "memory cgroup holds (memfds, children)",
                   "host uid is not root", "no set-uid file reaches the host",
                   "workspace capped in bytes and inodes", "/tmp and /dev/shm capped in inodes",
                   "copy-out capped (submission too large)"]
    for name in caught:
        assert results[name] is False, name
    assert all(c.ok for c in run_checks()), "every property holds in the sandbox"
