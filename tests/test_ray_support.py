"""Helpers for the Ray tests: a real Ray head on 127.0.0.1 only, and what listens where.

- `ray_head` (session-wide, started once) runs `ray start --head --block` on this machine
  with Ray kept on the loopback interface (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, which
  this module sets before anything imports Ray — the test process is a Ray driver too)
  and token authentication on, with a token made up for the session. Every port the head
  would otherwise take at a fixed default (client server 10001, agents 52365, metrics
  44217/44227, ...) is a free one, so it coexists with other Ray instances. It is
  stopped (SIGTERM to `ray start --block`, which stops its processes) at the end, or
  when the test process dies.
- `listening_sockets(pids)` reads /proc: the TCP sockets those processes listen on.
- `ray_extra` skips a test with the reason when Ray is not installed, and FAILS under
  `CI=true` (the CI set-up installs `rlforge[ray]`).

The tests at the end check the helpers — and with them the README's security note: the
head, the private instance rlforge starts, and every worker listen on 127.0.0.1 only,
and a client without the token is refused.
"""

from __future__ import annotations

import atexit
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlforge.execution.ray.cluster import INSTALL_HINT, LOOPBACK_ENV

pytestmark = pytest.mark.ray

# Before any import of Ray in this process (collection imports this module first).
os.environ.setdefault(LOOPBACK_ENV, "0")
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(24))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

RAY_BIN = Path(sys.executable).parent / "ray"
# Small (Ray's default is 30% of memory, more than a CI container's /dev/shm may hold);
# the largest thing the tests put there is a packed task directory of a few kB.
OBJECT_STORE_BYTES = 200 * 1024 * 1024


def ray_installed() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return RAY_BIN.exists()


@pytest.fixture
def ray_extra():
    if not ray_installed():
        message = f"Ray is not installed: {INSTALL_HINT}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " — the CI set-up must install it")
        pytest.skip(message)


def stop_with_parent() -> None:
    """In the child, before exec: SIGTERM when the test process dies, however it dies (a
    killed pytest must not leave a Ray head behind; `ray start --block` stops it on TERM)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayHead:
    """A single-node Ray cluster on 127.0.0.1, started with the `ray` command line."""

    def __init__(self, root: Path, num_cpus: int = 2):
        self.root = root
        self.num_cpus = num_cpus
        self.proc: subprocess.Popen | None = None
        self.address = ""

    def start(self, timeout: float = 120.0) -> "RayHead":
        env = {**os.environ, "AUTOSCALER_METRIC_PORT": str(free_port()),
               "DASHBOARD_METRIC_PORT": str(free_port())}
        ports = {"--ray-client-server-port": free_port(), "--dashboard-port": free_port(),
                 "--dashboard-agent-listen-port": free_port(),
                 "--dashboard-agent-grpc-port": free_port(), "--metrics-export-port": free_port(),
                 "--runtime-env-agent-port": free_port()}
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "ray-start.log", "wb")
        self.proc = subprocess.Popen(
            [str(RAY_BIN), "start", "--head", "--block", "--port=0",
             "--node-ip-address=127.0.0.1", "--include-dashboard=false",
             "--disable-usage-stats", f"--num-cpus={self.num_cpus}",
             f"--object-store-memory={OBJECT_STORE_BYTES}",
             f"--temp-dir={self.root}", *(f"{flag}={port}" for flag, port in ports.items())],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=stop_with_parent)
        log.close()
        marker = self.root / "ray_current_cluster"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ray start failed:\n" +
                                   (self.root / "ray-start.log").read_text()[-3000:])
            if marker.exists() and marker.read_text().strip():
                self.address = marker.read_text().strip()
                host, _, port = self.address.rpartition(":")
                try:
                    socket.create_connection((host, int(port)), timeout=1).close()
                    return self
                except OSError:
                    pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the Ray head did not start within {timeout:g}s")

    def pids(self) -> list[int]:
        """The `ray start` process and everything under it."""
        return descendants(self.proc.pid) if self.proc else []

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


_HEAD: RayHead | None = None


@pytest.fixture(scope="session")
def ray_head(tmp_path_factory) -> RayHead:
    """One Ray head for the whole test session (see the module docstring)."""
    global _HEAD
    if not ray_installed():
        message = f"Ray is not installed: {INSTALL_HINT}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " — the CI set-up must install it")
        pytest.skip(message)
    if _HEAD is None:
        # A short root: Ray's socket paths must fit in 107 bytes.
        _HEAD = RayHead(Path(f"/tmp/rlforge-test-ray-{os.getpid()}")).start()
        atexit.register(_HEAD.stop)
    return _HEAD


# --- /proc ---------------------------------------------------------------------------------

def descendants(root: int) -> list[int]:
    """`root` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _listening_inodes() -> dict[int, tuple[str, int]]:
    found = {}
    for name, width in (("tcp", 8), ("tcp6", 32)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] != "0A":  # LISTEN
                continue
            address, port = parts[1].split(":")
            raw = bytes.fromhex(address)
            if width == 8:
                ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:  # four little-endian 32-bit words
                ip = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1]
                                                                 for i in range(0, 16, 4)))
            found[int(parts[9])] = (ip, int(port, 16))
    return found


def listening_sockets(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, ip, port) of every TCP socket those processes listen on."""
    inodes = _listening_inodes()
    out = []
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[8:-1])
                if inode in inodes:
                    out.append((pid, *inodes[inode]))
    return out


def is_loopback_ip(ip: str) -> bool:
    return ip.startswith("127.") or ip in ("::1", "::ffff:127.0.0.1") or \
        ip.startswith("::ffff:127.")


# --- the helpers' own tests (and the security note) ----------------------------------------

def test_the_test_head_listens_on_loopback_only_and_refuses_a_client_without_the_token(ray_head):
    sockets = listening_sockets(ray_head.pids())
    ports = {port for _, _, port in sockets}
    assert int(ray_head.address.rsplit(":", 1)[1]) in ports  # the GCS is among them
    assert len(sockets) >= 5  # GCS, raylet, agents, client server, ...
    assert [s for s in sockets if not is_loopback_ip(s[1])] == []
    # A driver without the token is turned away (and one with it gets in: every other test).
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}
    env["HOME"] = str(ray_head.root)  # no ~/.ray/auth_token there either
    probe = subprocess.run([sys.executable, "-c", (
        "import sys, ray\n"
        "try:\n"
        "    ray.init(address=sys.argv[1])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "    sys.exit(3)\n"
        "print('connected')\n"), ray_head.address], env=env, capture_output=True, text=True,
        timeout=180)
    assert probe.returncode == 3, probe.stdout + probe.stderr
    assert "connected" not in probe.stdout


def test_the_private_instance_and_its_workers_listen_on_loopback_only(ray_extra, tmp_path):
    import asyncio

    from rlforge.execution.ray.cluster import close_workers, connected, start_workers

    async def workers_up(ray):
        workers = await start_workers(ray, sandbox_workers=1, sandbox_mode="none",
                                      needs_sandbox=False, cache_dir=None, probe=[])
        try:
            return listening_sockets(descendants(os.getpid())), len(workers)
        finally:
            await close_workers(ray, workers)

    with connected("") as ray:
        assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
        sockets, count = asyncio.run(workers_up(ray))
    assert count == 1
    assert len(sockets) >= 5
    assert [s for s in sockets if not is_loopback_ip(s[1])] == []
    # Stopped with the command: nothing of it is left under this process (but the session's
    # test head, if another test started it).
    head = set(_HEAD.pids()) if _HEAD is not None else set()
    deadline = time.monotonic() + 20
    while left := [pid for pid in descendants(os.getpid())[1:]
                   if pid not in head and b"ray" in cmdline(pid)]:
        assert time.monotonic() < deadline, [cmdline(pid)[:80] for pid in left]
        time.sleep(0.2)


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
