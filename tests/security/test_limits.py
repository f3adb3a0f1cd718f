"""Attacks that degrade the host without escaping: memory, uid, disk, inodes, CPU, copy-out.

Each test mounts the attack from inside the sandbox and looks for the damage on the host:
host memory (/proc/meminfo), the sandbox's host uid (/proc/PID/status seen from outside),
root's inotify instances, files left in the host workspace, host CPU time, and rlforge's own
memory and time while it handles what the sandbox left behind.
"""

from __future__ import annotations

import ctypes
import os
import resource
import stat
import threading
import time
import uuid
from pathlib import Path

import pytest

from rlforge.sandbox import SandboxSpec, run

PY = "/usr/bin/python3"
MB = 1 << 20

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="the limits below are the root path's")]


def _meminfo(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


class _Peak:
    """Samples a /proc/meminfo field every 20 ms in a thread; the highest and lowest seen."""

    def __init__(self, key: str):
        self.key, self.start = key, _meminfo(key)
        self.high = self.low = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.02):
            value = _meminfo(self.key)
            self.high, self.low = max(self.high, value), min(self.low, value)

    def stop(self) -> "_Peak":
        self._stop.set()
        self._thread.join()
        return self


def _py(task, code: str, **kw):
    kw.setdefault("timeout_sec", 30)
    return run([PY, "-c", code], task.spec(**kw))


# --- 1. memory: the limit covers memfds and every process of the sandbox together ----------

def test_memfds_cannot_hold_host_memory_past_the_limit(task):
    shmem = _Peak("Shmem")
    r = _py(task, """
import os, time
fds, held = [], 0
try:
    for i in range(4):
        fd = os.memfd_create(f"hold{i}")
        for _ in range(250):
            os.write(fd, b"x" * (1 << 20)); held += 1
        fds.append(fd)
except OSError as e:
    print("refused", e.errno)
print("held", held, flush=True)
time.sleep(0.5)
""", memory_mb=128)
    shmem.stop()
    rise = (shmem.high - shmem.start) / MB
    assert rise < 300, f"host Shmem rose by {rise:.0f} MB under a 128 MB sandbox: {r}"
    assert r.oom_killed and r.exit_code == 137, r
    assert any("out of memory" in note for note in r.notes), r.notes


def test_forked_children_share_one_memory_limit(task):
    r = _py(task, """
import os, time
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (700 << 20)  # every page written
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
print(sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids))
""", memory_mb=1024)
    statuses = eval(r.stdout_text.strip())
    assert statuses.count(0) <= 1, f"three children held 3 x 700 MB under 1024 MB: {r}"
    assert -9 in statuses and r.oom_killed, r


# --- 2. uid: never host root ------------------------------------------------------------------

def test_sandboxed_processes_are_not_host_root(task, leftovers):
    marker = f"30{uuid.uuid4().int % 10**6}"
    done = threading.Event()
    result = {}

    def go():
        result["r"] = run(["sh", "-c", f"sleep {marker}"], task.spec(timeout_sec=1.5))
        done.set()

    threading.Thread(target=go, daemon=True).start()
    pids = []
    while not pids and not done.is_set():
        pids = leftovers(f"sleep\x00{marker}")
        time.sleep(0.02)
    assert pids, "the sandboxed sleep never showed up on the host"
    status = Path(f"/proc/{pids[0]}/status").read_text()
    uids = [int(u) for u in status.split("Uid:")[1].split("\n")[0].split()]
    gids = [int(g) for g in status.split("Gid:")[1].split("\n")[0].split()]
    done.wait(10)
    assert 0 not in uids and 0 not in gids, f"sandbox runs as host uid {uids}, gid {gids}"


def test_inotify_instances_held_inside_do_not_starve_host_root(task, tmp_path):
    # The sandbox opens inotify instances until the kernel refuses, says so through a FIFO
    # the host made in a read-only bound directory, and holds them while the host tries.
    chan = tmp_path / "chan"
    chan.mkdir()
    os.mkfifo(chan / "held")
    libc = ctypes.CDLL(None, use_errno=True)
    seen = {}

    def host_side():
        with open(chan / "held") as fifo:
            seen["inside"] = fifo.readline().strip()
            fd = libc.inotify_init1(os.O_CLOEXEC)
            seen["host"] = fd if fd < 0 else "ok"
            seen["errno"] = ctypes.get_errno()
            if fd >= 0:
                os.close(fd)

    reader = threading.Thread(target=host_side, daemon=True)
    reader.start()
    r = _py(task, """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 4096:
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        break
    fds.append(fd)
with open("/chan/held", "w") as f:
    f.write(f"{len(fds)}\\n")
time.sleep(0.5)
""", ro_binds={"/chan": chan}, timeout_sec=10)
    reader.join(10)
    assert r.exit_code == 0, r
    assert int(seen["inside"]) > 0
    assert seen["host"] == "ok", (f"host root's inotify_init1 failed (errno {seen['errno']}) while the "
                                  f"sandbox held {seen['inside']} instances")


def test_no_set_uid_file_reaches_the_host(task, sh):
    r = sh("python3 -c 'import os; os.close(os.open(\"/app/tool\", os.O_CREAT | os.O_WRONLY, 0o6755))'"
           " && mkdir -p /app/d && python3 -c 'import os; os.mkdir(\"/app/d/s\", 0o2777)' && echo made")
    assert r.stdout_text.strip() == "made", r
    special = [(p.relative_to(task.workspace), oct(p.lstat().st_mode), p.lstat().st_uid)
               for p in [task.workspace, *task.workspace.rglob("*")]
               if p.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID)]
    assert special == [], special
    assert (task.workspace / "tool").is_file()  # the file itself came back, without the bits


# --- 3. disk and inodes of the workspace ---------------------------------------------------------

def test_filling_the_workspace_stops_at_its_size_cap(task):
    r = _py(task, """
written = 0
try:
    for i in range(16):
        with open(f"/app/fill{i}", "wb") as f:
            for _ in range(32):
                f.write(b"x" * (1 << 20)); f.flush(); written += 1
    print(written, "no-limit")
except OSError as e:
    print(written, e.errno)
""", workspace_mb=64, memory_mb=1024)
    written, err = r.stdout_text.split()
    assert err == "28" and int(written) <= 64, f"wrote {written} MB into /app: {r}"
    on_host = sum(p.stat().st_size for p in task.workspace.rglob("*") if p.is_file())
    assert on_host <= 64 * MB


def test_creating_files_in_the_workspace_stops_at_its_inode_cap(task):
    r = _py(task, """
n = 0
try:
    while n < 20000:
        open(f"/app/f{n}", "w").close(); n += 1
    print(n, "no-limit")
except OSError as e:
    print(n, e.errno)
""", workspace_inodes=2000)
    made, err = r.stdout_text.split()
    assert err == "28" and int(made) < 2000, f"made {made} files in /app: {r}"
    assert sum(1 for _ in task.workspace.iterdir()) < 2000


# --- 4. tmpfs inodes ------------------------------------------------------------------------------

def test_tmp_and_shm_stop_at_their_inode_caps(task):
    r = _py(task, """
for d in ("/tmp", "/dev/shm"):
    n = 0
    try:
        while n < 100000:
            open(f"{d}/f{n}", "w").close(); n += 1
        print(d, n, "no-limit")
    except OSError as e:
        print(d, n, e.errno)
""", tmp_inodes=5000)
    lines = [line.split() for line in r.stdout_text.splitlines()]
    assert [(d, err) for d, _, err in lines] == [("/tmp", "28"), ("/dev/shm", "28")], r
    assert all(int(n) < 5000 for _, n, _ in lines), lines


# --- 5. what rlforge reads back on the host ------------------------------------------------------

def test_a_huge_submission_is_refused_with_bounded_host_memory_and_time(task):
    from rlforge.run.submission import workspace_changes

    start = task.root / "start"
    start.mkdir()
    (start / "answer.txt").write_text("broken\n")
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    r = _py(task, """
import os
with open("/app/big.txt", "w") as f:
    for i in range(32 * 1024):
        f.write(f"line {i} " + "y" * 1000 + "\\n")
for i in range(40):
    with open(f"/app/sparse{i}.bin", "wb") as f:
        f.truncate(255 << 20)
print("written")
""", timeout_sec=60)
    assert r.stdout_text.strip() == "written", r
    changes = workspace_changes(start, task.workspace)
    elapsed = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert r.submission_too_large and "per file" in r.submission_too_large, r
    on_host = sum(p.stat().st_size for p in task.workspace.rglob("*") if p.is_file())
    assert on_host <= SandboxSpec().copy_total_mb * MB
    assert not any(task.workspace.glob("sparse*")) and not (task.workspace / "big.txt").exists()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert cpu < 5 and elapsed < 20, f"host side took {cpu:.1f} s CPU, {elapsed:.1f} s"
    assert (after.ru_maxrss - before.ru_maxrss) * 1024 < 200 * MB
    assert changes["files"] == {}  # what was left did not change anything the task shipped


def test_workspace_changes_refuse_a_tree_over_the_copy_caps(tmp_path):
    from rlforge.run.submission import workspace_changes

    start, ws = tmp_path / "start", tmp_path / "ws"
    start.mkdir()
    ws.mkdir()
    for i in range(40):
        with open(ws / f"sparse{i}.bin", "wb") as f:
            f.truncate(255 * MB)
    t0 = time.monotonic()
    changes = workspace_changes(start, ws)
    assert changes.get("error") == "submission too large", changes
    assert changes["files"] == {} and changes["complete"] is False
    assert time.monotonic() - t0 < 5


# --- CPU and mountinfo ---------------------------------------------------------------------------

BUSY = """
import os, time
end = time.monotonic() + 2.0
for _ in range(8):
    if os.fork() == 0:
        while time.monotonic() < end:
            pass
        os._exit(0)
for _ in range(8):
    os.wait()
t = os.times()
print(round(t.children_user + t.children_system, 2))
"""


def test_busy_processes_get_only_their_cpu_quota(task):
    # The machine may be busy with other work, so the quota is compared with what the same
    # processes got without one, just before.
    free = float(_py(task, BUSY, cpus=None).stdout_text)
    used = float(_py(task, BUSY, cpus=0.1).stdout_text)
    assert used < 0.1 * 2.0 * 1.6, f"8 busy processes used {used} CPU-seconds in 2 s at 0.1 CPUs"
    assert used < free / 2, f"{used} CPU-seconds with a quota of 0.1 CPUs, {free} without"


def test_mountinfo_does_not_show_the_host_paths_of_writable_directories(task, py):
    r = py("print(open('/proc/self/mountinfo').read())")
    assert r.exit_code == 0, r
    for host in (task.workspace, task.logs):
        assert str(host) not in r.stdout_text, r.stdout_text
    assert " /app " in r.stdout_text and " /logs/verifier " in r.stdout_text
