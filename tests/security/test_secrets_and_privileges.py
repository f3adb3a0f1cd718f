"""Escape corpus: host secrets, and the powers sandboxed code would need to reach out."""

from __future__ import annotations

import os
import platform
import signal
import subprocess

import pytest

pytestmark = pytest.mark.sandbox

API_KEY = "sk-live-4f9c2a7e1b3d5f60"


def test_an_api_key_in_the_parent_environment_does_not_enter(monkeypatch, py):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", API_KEY)
    # A host process started with the key, as rlforge itself is: its /proc/PID/environ
    # holds the key for anyone who can see the process.
    holder = subprocess.Popen(["sleep", "30"], env={**os.environ})
    # The probe spells the key backwards so its own command line does not contain it.
    probe = f"""
import os
key = {API_KEY[::-1]!r}[::-1]
hits = [k for k, v in os.environ.items() if key in v]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            try:
                if key.encode() in open(f"/proc/{{pid}}/{{part}}", "rb").read():
                    hits.append(f"/proc/{{pid}}/{{part}}")
            except OSError:
                pass
print(hits, sorted(os.environ))
"""
    try:
        unsandboxed = py(probe, mode="none")  # the probe does find the key when nothing hides it
        assert f"/proc/{holder.pid}/environ" in unsandboxed.stdout_text.split("] [")[0]
        r = py(probe)
    finally:
        holder.kill()
        holder.wait()
    hits, names = r.stdout_text.split("] [")
    assert hits == "[", r.stdout_text
    assert "OPENAI_API_KEY" not in names and "AWS_SECRET_ACCESS_KEY" not in names


def test_only_declared_variables_are_added(task, monkeypatch):
    from rlforge.sandbox import run

    monkeypatch.setenv("HOST_ONLY", "x")
    r = run(["env"], task.spec(env={"TASK_SEED": "7"}))
    env = dict(line.split("=", 1) for line in r.stdout_text.splitlines())
    assert env.pop("TASK_SEED") == "7"
    assert set(env) == {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "USER", "PWD"}


@pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="syscall numbers")
def test_kernel_keyrings_are_out_of_reach(py):
    # Keyrings are keyed by host uid; as root the sandbox would otherwise share root's.
    r = py("""
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
add_key, request_key, keyctl = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[platform.machine()]
print(libc.syscall(keyctl, 0, -3, 0), ctypes.get_errno())           # session keyring id
print(libc.syscall(keyctl, 0, -4, 0), ctypes.get_errno())           # user keyring id
print(libc.syscall(add_key, b"user", b"k", b"v", 1, -3), ctypes.get_errno())
print(libc.syscall(request_key, b"user", b"k", None, 0), ctypes.get_errno())
""")
    assert r.stdout_text.split() == ["-1", "1"] * 4, r


def test_no_capabilities_no_privilege_gain(py):
    r = py("""
import os
s = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups(),
      [s[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")])
""")
    assert r.stdout_text.strip() == ("65534 65534 65534 [] ['0000000000000000', '0000000000000000', "
                                     "'0000000000000000', '0000000000000000', '0000000000000000', '1', '2']")


def test_no_nested_user_namespace_to_be_root_in(sh):
    r = sh("unshare -Ur id; echo rc=$?")
    assert "uid=0" not in r.stdout_text and "rc=1" in r.stdout_text, r


@pytest.fixture
def canary():
    """A host process the sandbox will try to kill."""
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    proc.kill()
    proc.wait()


def _host_pids(*pids: int) -> tuple[int, ...]:
    """Host pids to aim at from inside. Pid 1 is left out: inside, it is the sandboxed
    command itself (a test run whose parent exited has been reparented to host pid 1)."""
    return tuple(p for p in pids if p != 1)


def test_kill_of_the_parent_and_of_host_processes_fails(canary, py):
    targets = _host_pids(canary.pid, os.getpid(), os.getppid())
    r = py(f"""
import os, signal
for pid in {targets}:
    try:
        os.kill(pid, signal.SIGKILL); print("KILLED", pid)
    except OSError as e:
        print("denied", e.errno)
try:
    os.kill(-1, signal.SIGKILL)  # every process we may signal: only the sandbox's own
except OSError:
    pass
""")
    assert r.stdout_text.split()[:2 * len(targets)] == ["denied", "3"] * len(targets), r
    assert canary.poll() is None  # still running


def test_ptrace_of_the_parent_fails_and_host_pids_are_invisible(py):
    targets = _host_pids(os.getpid(), os.getppid())
    r = py(f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
for pid in {targets}:
    print(libc.ptrace(PTRACE_ATTACH, pid, None, None), ctypes.get_errno(),
          libc.ptrace(PTRACE_SEIZE, pid, None, None), ctypes.get_errno(),
          os.path.exists(f"/proc/{{pid}}/mem"))
print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
""")
    lines = r.stdout_text.splitlines()
    for line in lines[:len(targets)]:
        assert line.split() == ["-1", "3", "-1", "3", "False"], r
    assert lines[len(targets)] == "[1]"  # the command is alone in its pid namespace (and is pid 1)


def test_pid_1_is_the_command_itself_not_a_privileged_helper(py):
    # No bubblewrap process lives inside: nothing to ptrace into that has laxer limits.
    r = py("""
import os
print(os.getpid(), open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode(), os.getppid())
""")
    assert r.stdout_text.split() == ["1", "/usr/bin/python3", "0"]


def test_a_signal_to_the_sandbox_from_inside_cannot_reach_rlforge(task):
    from rlforge.sandbox import run

    seen = []
    old = signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
    try:
        r = run(["sh", "-c", f"kill -USR1 {os.getpid()}; kill -USR1 0; kill -USR1 -1; echo done"],
                task.spec())
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert r.stdout_text.strip() == "done" and seen == []
