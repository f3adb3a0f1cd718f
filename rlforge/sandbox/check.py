"""`rlforge sandbox check`: prove on this machine, live, that each sandbox property holds.

Every check runs real code in a real sandbox and looks at the outcome from both sides: a
TCP listener on the host's 127.0.0.1 counts connections, a secret file and an API-key-like
variable are planted on the host, the host process table is searched for processes the
sandbox left behind. A check that cannot run counts as failed.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rlforge.errors import SandboxUnavailable
from rlforge.sandbox.files import copy_tree, read_file
from rlforge.sandbox.runner import ensure_available, run
from rlforge.sandbox.spec import SandboxResult, SandboxSpec

PY = "/usr/bin/python3"


@dataclass(frozen=True)
class Check:
    """One property, whether it held, and what was observed."""

    name: str
    ok: bool
    detail: str


class _Bench:
    """Host-side props for the checks: directories, a planted secret, a TCP listener."""

    def __init__(self, root: Path, mode: str):
        self.root, self.mode = root, mode
        self.workspace, self.tests, self.logs = root / "app", root / "tests", root / "logs"
        for d in (self.workspace, self.tests, self.logs):
            d.mkdir()
        (self.tests / "test.sh").write_text("exit 0\n")
        self.secret = root / "host-secret.txt"
        self.secret.write_text("host secret\n")
        self.env_name, self.env_value = "RLFORGE_CHECK_API_KEY", "sk-" + secrets.token_hex(8)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.listener.close()

    def spec(self, **kw) -> SandboxSpec:
        base = dict(workspace=self.workspace, tests=self.tests, logs=self.logs, timeout_sec=5,
                    mode=self.mode)
        return SandboxSpec(**{**base, **kw})

    def py(self, code: str, **kw) -> SandboxResult:
        return run([PY, "-c", code], self.spec(**kw))


def _said(result: SandboxResult) -> str:
    """The last line the probe printed, or why it printed nothing."""
    if result.failure:
        return str(result.failure)
    lines = result.stdout_text.strip().splitlines()
    return lines[-1] if lines else f"exit {result.exit_code}: {result.stderr_text.strip()[-200:]}"


def _reap_leftovers(marker: str) -> int:
    """Count host processes whose command line contains `marker`, and kill them."""
    found = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found += 1
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                continue
    return found


def _check_python(b: _Bench) -> tuple[bool, str]:
    r = b.py("import sys; print(sys.version.split()[0])")
    return r.exit_code == 0, f"{PY} {_said(r)}" if r.exit_code == 0 else _said(r)


def _check_network(b: _Bench) -> tuple[bool, str]:
    r = b.py(f"""
import socket
for host in ("127.0.0.1", "1.1.1.1"):
    try:
        socket.create_connection((host, {b.port} if host == "127.0.0.1" else 53), timeout=2)
        print("CONNECTED", host)
    except OSError as e:
        print("refused", host, e.errno)
try:
    socket.getaddrinfo("example.com", 443); print("RESOLVED")
except OSError:
    print("dns failed")
""")
    out = r.stdout_text
    ok = r.exit_code == 0 and "CONNECTED" not in out and "RESOLVED" not in out \
        and "dns failed" in out and b.connections == 0
    return ok, f"host listener saw {b.connections} connections; " + " / ".join(out.split("\n")[:3])


def _check_host_files(b: _Bench) -> tuple[bool, str]:
    r = b.py(f"""
import os
seen = [p for p in ({str(b.secret)!r}, "/root", "/home", "/etc/shadow", "/var", "/work", "/sys")
        if os.path.exists(p)]
print("VISIBLE " + " ".join(seen) if seen else "hidden: " + " ".join(sorted(os.listdir("/"))))
""")
    return r.exit_code == 0 and _said(r).startswith("hidden"), _said(r)


def _check_readonly_system(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import ctypes, os
wrote = []
for p in ("/usr/rlforge-probe", "/etc/rlforge-probe", "/rlforge-probe", "/tests/rlforge-probe"):
    try:
        open(p, "w").close(); os.unlink(p); wrote.append(p)
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT, MS_BIND = 32, 4096
rc = libc.mount(b"none", b"/usr", None, MS_REMOUNT | MS_BIND, None)
print("WROTE " + " ".join(wrote) if wrote else f"read-only; remount /usr -> {rc} errno {ctypes.get_errno()}")
""")
    ok = r.exit_code == 0 and _said(r).startswith("read-only") and "-> -1" in _said(r) \
        and not (b.tests / "rlforge-probe").exists()
    return ok, _said(r)


def _check_kernel_settings(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import os
writable = [os.path.join(d, f) for d, _, files in os.walk("/proc/sys") for f in files
            if os.access(os.path.join(d, f), os.W_OK)]
print(f"{len(writable)} writable: {' '.join(writable[:3])}" if writable else "all read-only")
""")
    return _said(r) == "all read-only", f"/proc/sys: {_said(r)}"


def _check_workspace(b: _Bench) -> tuple[bool, str]:
    r = b.py("open('/app/out.txt', 'w').write('x'); open('/logs/verifier/reward.txt', 'w').write('1');"
             "import os; print(os.getcwd())")
    ok = r.exit_code == 0 and (b.workspace / "out.txt").is_file() \
        and (b.logs / "reward.txt").read_text() == "1" and _said(r) == "/app"
    return ok, f"cwd {_said(r)}; /app and /logs/verifier writable from inside: {ok}"


def _check_environment(b: _Bench) -> tuple[bool, str]:
    # The key sits in rlforge's environment and in the initial environment of a host
    # process, as it does in the rlforge process a user starts with the key exported.
    os.environ[b.env_name] = b.env_value
    holder = subprocess.Popen(["sleep", "30"], env={b.env_name: b.env_value})
    try:
        r = b.py(f"""
import os
leaks = [k for k, v in os.environ.items() if {b.env_value!r} in v]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if {b.env_value!r}.encode() in open(f"/proc/{{pid}}/environ", "rb").read():
                leaks.append("/proc/" + pid)
        except OSError:
            pass
print("LEAKED " + " ".join(leaks) if leaks else "clean: " + " ".join(sorted(os.environ)))
""")
    finally:
        del os.environ[b.env_name]
        holder.kill()
        holder.wait()
    return r.exit_code == 0 and _said(r).startswith("clean"), _said(r)


def _check_privileges(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
caps = {k: int(status[k], 16) for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")}
ids = f"uid {os.getuid()} gid {os.getgid()}"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
userns = "ALLOWED" if libc.unshare(0x10000000) == 0 else "blocked"  # CLONE_NEWUSER
print(f"{ids} caps {sum(caps.values())} nonewprivs {status['NoNewPrivs'].strip()} userns {userns}")
""")
    ok = _said(r) == "uid 65534 gid 65534 caps 0 nonewprivs 1 userns blocked"
    return ok, _said(r)


def _check_seccomp(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 250, "aarch64": 219}[platform.machine()]  # keyctl
rc = libc.syscall(nr, 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
print(f"keyctl -> {rc} {os.strerror(ctypes.get_errno())}")
""")
    return _said(r) == f"keyctl -> -1 {os.strerror(errno.EPERM)}", _said(r)


def _check_process_limit(b: _Bench) -> tuple[bool, str]:
    limit = 16
    r = b.py("""
import os, time
n = 0
while n < 200:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.closerange(0, 3); time.sleep(5); os._exit(0)
    n += 1
print(f"forked {n}")
""", max_processes=limit)
    said = _said(r)
    ok = said.startswith("forked") and int(said.split()[1]) < limit
    return ok, f"{said} with max_processes={limit}"


def _check_memory_cgroup(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import os, time
for i in range(3):
    if os.fork() == 0:
        fd = os.memfd_create("probe")
        for _ in range(100):
            os.write(fd, b"x" * (1 << 20))
        time.sleep(2)
        os._exit(0)
print([os.waitstatus_to_exitcode(os.wait()[1]) for _ in range(3)])
""", memory_mb=128, timeout_sec=20)
    ok = r.oom_killed and r.memory_peak_mb is not None and r.memory_peak_mb <= 128
    return ok, (f"3 children x 100 MB of memfd under memory_mb=128: {_said(r)}; "
                f"peak {r.memory_peak_mb} MB; OOM kill reported: {r.oom_killed}")


def _check_cpu_quota(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
import os, time
end = time.monotonic() + 1.0
for _ in range(4):
    if os.fork() == 0:
        while time.monotonic() < end:
            pass
        os._exit(0)
for _ in range(4):
    os.wait()
t = os.times()
print(round(t.children_user + t.children_system, 2))
""", cpus=0.2)
    said = _said(r)
    ok = r.exit_code == 0 and float(said) < 0.2 * 1.0 * 1.6
    return ok, f"4 busy processes for 1 s at cpus=0.2 used {said} CPU-seconds"


def _host_ids(pid: int) -> list[int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return [int(v) for key in ("Uid:", "Gid:") for v in status.split(key)[1].split("\n")[0].split()]


def _check_host_uid(b: _Bench) -> tuple[bool, str]:
    marker = f"20{secrets.randbelow(10**6)}"
    seen = threading.Event()
    runner = threading.Thread(target=run, args=(["sleep", marker], b.spec(timeout_sec=30)),
                              kwargs={"cancel": seen})
    runner.start()
    ids: list[int] = []
    try:
        while not ids and runner.is_alive():
            for entry in os.listdir("/proc"):
                try:
                    if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes() == \
                            f"sleep\0{marker}\0".encode():
                        ids = _host_ids(int(entry))
                except (OSError, IndexError):
                    continue
    finally:
        seen.set()
        runner.join()
    if not ids:
        return False, "the sandboxed process was never seen on the host"
    return 0 not in ids, f"host uids/gids of a sandboxed process: {sorted(set(ids))}"


def _check_no_setuid(b: _Bench) -> tuple[bool, str]:
    r = b.py("import os; os.close(os.open('/app/suid', os.O_CREAT | os.O_WRONLY, 0o6755)); print('made')")
    target = b.workspace / "suid"
    mode = os.lstat(target).st_mode if target.exists() else 0
    ok = _said(r) == "made" and target.exists() and not mode & 0o6000
    return ok, f"a file created 06755 inside is {oct(mode & 0o7777)} on the host"


def _fill(path: str, what: str) -> str:
    """A probe filling a fresh directory below `path` with bytes or with empty files until
    the file system refuses; it prints how far it got and removes what it wrote."""
    step = ('open(f"{d}/fill", "ab").write(b"x" * (1 << 20))' if what == "bytes"
            else 'open(f"{d}/f{n}", "w").close()')
    return f"""
import os, shutil, tempfile
d = tempfile.mkdtemp(prefix="rlforge-check-", dir={path!r})
n, said = 0, "no limit"
try:
    while n < 2000:
        {step}
        n += 1
except OSError as e:
    said = f"errno {{e.errno}}"
shutil.rmtree(d)
print(n, {"MB" if what == "bytes" else "files"!r} + ",", said)
"""


def _check_workspace_caps(b: _Bench) -> tuple[bool, str]:
    size = b.py(_fill("/app", "bytes"), workspace_mb=8)
    inodes = b.py(_fill("/app", "inodes"), workspace_inodes=500)
    ok = all(_said(r).endswith("errno 28") and int(_said(r).split()[0]) < limit
             for r, limit in ((size, 8), (inodes, 500)))
    return ok, f"workspace_mb=8: {_said(size)}; workspace_inodes=500: {_said(inodes)}"


def _check_tmp_inodes(b: _Bench) -> tuple[bool, str]:
    # without a sandbox (mode "none", for tests) the probe fills the check's own directory,
    # never the host's /tmp
    dirs = ("/tmp", "/dev/shm") if b.mode != "none" else (str(b.root), str(b.root))
    said = [_said(b.py(_fill(d, "inodes"), tmp_inodes=500)) for d in dirs]
    ok = all(s.endswith("errno 28") and int(s.split()[0]) < 500 for s in said)
    return ok, f"tmp_inodes=500: /tmp {said[0]}; /dev/shm {said[1]}"


def _check_copy_out_caps(b: _Bench) -> tuple[bool, str]:
    r = b.py("open('/app/big.bin', 'wb').write(b'x' * (3 << 20)); print('written')", copy_file_mb=1)
    back = (b.workspace / "big.bin").exists()
    ok = _said(r) == "written" and bool(r.submission_too_large) and not back
    return ok, f"3 MB file at copy_file_mb=1: {r.submission_too_large or 'copied back'}"


def _check_private_binds(b: _Bench) -> tuple[bool, str]:
    private = b.root / "private"
    private.mkdir(mode=0o700)
    (private / "data.json").write_text("{}")
    os.chmod(private / "data.json", 0o600)
    r = run(["sh", "-c", "cat /tests/data.json && : > /tests/data.json"], b.spec(tests=private))
    ok = r.stdout_text == "{}" and "Read-only" in r.stderr_text
    return ok, f"0600 file in a 0700 tests dir: read {r.stdout_text!r}; {r.stderr_text.strip()[-60:]}"


def _check_mountinfo(b: _Bench) -> tuple[bool, str]:
    r = b.py("print(open('/proc/self/mountinfo').read())")
    shown = [str(p) for p in (b.workspace, b.logs) if str(p) in r.stdout_text]
    ok = r.exit_code == 0 and not shown
    return ok, ("host paths of /app and /logs/verifier not in mountinfo" if ok else
                f"mountinfo shows {' '.join(shown) or _said(r)}")


def _check_memory_limit(b: _Bench) -> tuple[bool, str]:
    r = b.py("""
try:
    block = bytearray(512 * 1024 * 1024); print("ALLOCATED 512 MB")
except MemoryError:
    print("MemoryError")
""", memory_mb=128)
    return _said(r) == "MemoryError", f"512 MB under memory_mb=128: {_said(r)}"


def _tree(marker: str) -> str:
    """A shell script leaving sleepers behind: background, setsid, and a double fork."""
    quiet = ">/dev/null 2>&1"  # the sleepers hold no pipe: only the sandbox can end them
    return (f"sleep {marker} {quiet} & setsid sleep {marker} {quiet} & "
            f"sh -c 'sh -c \"sleep {marker} {quiet}\" &' ; sleep 0.1")


def _check_timeout(b: _Bench) -> tuple[bool, str]:
    marker = f"60{secrets.randbelow(10**6)}"
    r = run(["sh", "-c", _tree(marker) + f"; sleep {marker}"], b.spec(timeout_sec=0.5))
    left = _reap_leftovers(f"sleep\x00{marker}")
    ok = r.timed_out and r.exit_code is None and not left and r.duration_sec < 3
    return ok, f"timed out after {r.duration_sec:.2f}s; {left} processes left"


def _check_leftovers(b: _Bench) -> tuple[bool, str]:
    marker = f"60{secrets.randbelow(10**6)}"
    r = run(["sh", "-c", _tree(marker) + "; exit 0"], b.spec())
    left = _reap_leftovers(f"sleep\x00{marker}")
    return r.exit_code == 0 and not left, f"exit {r.exit_code}; {left} processes left"


def _check_output_cap(b: _Bench) -> tuple[bool, str]:
    r = run(["head", "-c", "3000000", "/dev/zero"], b.spec(output_limit=100_000))
    ok = len(r.stdout) == 100_000 and r.stdout_truncated and r.exit_code == 0
    return ok, f"3 MB written, {len(r.stdout):,} bytes kept, truncated={r.stdout_truncated}"


def _check_copy_out(b: _Bench) -> tuple[bool, str]:
    r = run(["ln", "-s", str(b.secret), "/app/reward.json"], b.spec())
    if r.exit_code != 0:
        return False, f"could not plant the link: {_said(r)}"
    try:
        read_file(b.workspace, "reward.json")
        return False, "read_file followed a planted symlink"
    except OSError as exc:
        refused = exc.errno == errno.ELOOP
    report = copy_tree(b.workspace, b.root / "copied")
    skipped = ("reward.json", "symlink") in report.skipped
    return refused and skipped, f"read refused: {refused}; copy skipped the link: {skipped}"


CHECKS: list[tuple[str, Callable[[_Bench], tuple[bool, str]]]] = [
    ("system python inside", _check_python),
    ("no network (host 127.0.0.1, internet, DNS)", _check_network),
    ("host files invisible", _check_host_files),
    ("system read-only, tests read-only", _check_readonly_system),
    ("kernel settings read-only (/proc/sys)", _check_kernel_settings),
    ("workspace and logs writable at Harbor paths", _check_workspace),
    ("clean environment (no host secrets)", _check_environment),
    ("uid 65534, no capabilities, no new user namespaces", _check_privileges),
    ("keyring syscalls blocked (seccomp)", _check_seccomp),
    ("process limit holds", _check_process_limit),
    ("memory limit holds (per process)", _check_memory_limit),
    ("memory cgroup holds (memfds, children)", _check_memory_cgroup),
    ("CPU quota holds", _check_cpu_quota),
    ("host uid is not root", _check_host_uid),
    ("no set-uid file reaches the host", _check_no_setuid),
    ("workspace capped in bytes and inodes", _check_workspace_caps),
    ("/tmp and /dev/shm capped in inodes", _check_tmp_inodes),
    ("copy-out capped (submission too large)", _check_copy_out_caps),
    ("mountinfo hides host paths of writable dirs", _check_mountinfo),
    ("root-only read-only binds readable, not writable", _check_private_binds),
    ("timeout kills the whole tree", _check_timeout),
    ("nothing left running after exit", _check_leftovers),
    ("output capped", _check_output_cap),
    ("copy-out never follows symlinks", _check_copy_out),
]


def run_checks(mode: str = "bwrap") -> list[Check]:
    """Run every check and return them in order; the first is bubblewrap itself.

    Args:
        mode: "bwrap" to check the sandbox. "none" runs the same probes without isolation,
            which shows what each check catches (nearly all fail); it is for tests.

    Returns:
        One `Check` per property. If the sandbox cannot be built at all, only the first,
        failed check is returned.
    """
    if mode == "none":
        results = [Check("bubblewrap usable", False, "mode none: no isolation")]
    else:
        try:
            support = ensure_available()
        except SandboxUnavailable as exc:
            return [Check("bubblewrap usable", False, str(exc))]
        results = [Check("bubblewrap usable", True,
                         f"{support.bwrap} {'.'.join(map(str, support.version))}; "
                         f"{support.limits()}")]
    with tempfile.TemporaryDirectory(prefix="rlforge-check-") as tmp:
        os.chmod(tmp, 0o755)
        bench = _Bench(Path(tmp), mode)
        try:
            for name, probe in CHECKS:
                try:
                    ok, detail = probe(bench)
                except Exception as exc:  # a probe that crashes is a failed check, not a crash
                    ok, detail = False, f"{type(exc).__name__}: {exc}"
                results.append(Check(name, ok, detail))
        finally:
            bench.close()
    return results
