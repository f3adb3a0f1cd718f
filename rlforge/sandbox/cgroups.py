"""Limits that hold for the whole sandbox, whatever it forks: one cgroup per sandboxed run.

rlimits are per process: `RLIMIT_AS` does not see a memfd's pages nor three children of
700 MB each, and the kernel ignores `RLIMIT_NPROC` for host uid 0. So each run gets its own
cgroup in each controller this machine offers:

* **pids**: `pids.max`, processes and threads together;
* **memory**: `memory.limit_in_bytes` (v1) / `memory.max` (v2) over every process of the
  sandbox, its page cache and the tmpfs and shmem pages it writes; swap off
  (`memory.memsw.limit_in_bytes` / `memory.swap.max`). Past the limit the kernel's OOM
  killer kills a process of the sandbox (v2: all of them, `memory.oom.group`), never
  one of the host's; the run reads the OOM count afterwards to say so;
* **cpu**: a CFS quota (`cpu.cfs_quota_us` / `cpu.max`) of N CPUs per period.

Where: on cgroup v1 (one hierarchy per controller) below the cgroup this process is in,
so a sandbox is charged to whatever limits rlforge itself runs under; on cgroup v2 below
the root of the unified hierarchy (a cgroup holding processes cannot hand controllers to
children). On v1 the cpu cgroups sit right beside rlforge's own processes, not in a shared
`rlforge/` parent: CFS gives each group the weight of one task, so under a shared parent
all sandboxes together would get one task's share of a busy machine (a commits.repair
test collection missed its 4 s deadline that way); beside them, each sandbox competes
like one session, as bubblewrap's `--new-session` autogroup does without a cgroup.

Getting the sandbox into it: cgroup v1 can hold a single thread, so on v1 the spawning
thread steps into the run's pids and cpu cgroups, starts bubblewrap (born inside), and
steps back (`spawning_in`). The memory cgroup holds only the sandbox's own pid 1 and what
it forks, moved in (`attach`) while bubblewrap holds it before the command starts, never
bubblewrap's monitor process: on v1 the OOM killer takes the largest RSS in the cgroup,
and memory held where no RSS shows it (tmpfs pages, a memfd) would otherwise make the
monitor, a small process, the victim, and the sandbox lost rather than the command
failed. cgroup v2 has no per-thread placement; there the sandbox's pid 1 is moved into
every controller that way (and `memory.oom.group` kills all of it at the limit).
"""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("pids", "memory", "cpu")
_BASE_NAME = "rlforge"
_CPU_PERIOD_US = 100_000
_counter = itertools.count()
_found: tuple[bool, "SandboxCgroups | None"] = (False, None)
_lock = threading.Lock()


def _mounts() -> list[tuple[str, str, str]]:
    """(fstype, mount point, super options) of every cgroup mount in this mount namespace."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            out.append((tail[0], fields[4].replace("\\040", " "), tail[2]))
    return out


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def pid_gone(pid: str) -> bool:
    """Whether process `pid` has ended: no longer there, or a zombie (in a container whose
    pid 1 does not reap, a killed rlforge can stay one for long)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read_key(path: Path, key: str) -> int:
    """The number after `key` in a flat keyed file (memory.events, memory.oom_control)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


@dataclass(frozen=True)
class Limits:
    """What one run's cgroups allow: tasks, bytes of memory (None: no limit), CPUs."""

    pids: int
    memory_bytes: int | None = None
    cpus: float | None = None


@dataclass(frozen=True)
class RunCgroups:
    """One run's cgroup directories, controller -> path (on v2 all the same directory)."""

    paths: dict[str, Path]

    def dirs(self) -> list[Path]:
        """Each distinct directory once."""
        return list(dict.fromkeys(self.paths.values()))


class SandboxCgroups:
    """Writable cgroup directories for the sandbox's controllers; each run gets children.

    Args:
        bases: controller -> the directory runs are made in.
        version: 1 or 2.
        roots: controller -> its hierarchy's mount point (v1; where a thread's cgroup path
            from /proc/thread-self/cgroup starts).
    """

    def __init__(self, bases: dict[str, Path], version: int, roots: dict[str, Path] | None = None):
        self.bases = bases
        self.version = version
        self.roots = roots or {}

    @property
    def controllers(self) -> tuple[str, ...]:
        """The controllers in use, of pids, memory and cpu."""
        return tuple(c for c in CONTROLLERS if c in self.bases)

    @property
    def per_thread(self) -> bool:
        """Whether a thread can step into a cgroup by itself (v1) so its children start there."""
        return self.version == 1

    def born_in(self) -> tuple[str, ...]:
        """The controllers bubblewrap's monitor is born in (v1: pids and cpu, never memory;
        see the module docstring); the sandbox's pid 1 is `attach`ed to the others."""
        return tuple(c for c in self.controllers if c != "memory") if self.per_thread else ()

    @classmethod
    def find(cls) -> "SandboxCgroups | None":
        """The usable cgroups on this machine (probed once per process), or None if no
        controller can be used at all."""
        global _found
        with _lock:
            if not _found[0]:
                _found = (True, cls._probe())
            return _found[1]

    @classmethod
    def _probe(cls) -> "SandboxCgroups | None":
        mounts = _mounts()
        own = _own_cgroups()
        v1_bases: dict[str, Path] = {}
        roots: dict[str, Path] = {}
        for fstype, point, opts in mounts:
            for name in CONTROLLERS:
                if fstype == "cgroup" and name in opts.split(",") and name not in v1_bases:
                    base = Path(point) / own.get(name, "/").lstrip("/")
                    if name != "cpu":  # see the module docstring
                        base = base / _BASE_NAME
                    if cls._usable({name: base}, 1, {name: Path(point)}):
                        v1_bases[name], roots[name] = base, Path(point)
        v2 = next((Path(p) for t, p, _ in mounts if t == "cgroup2"), None)
        v2_found = cls._usable_v2(v2) if v2 is not None else None
        # Prefer the hierarchy that offers more of the controllers (v2 when it has all).
        found = v2_found if v2_found and len(v2_found.bases) >= len(v1_bases) else \
            cls(v1_bases, 1, roots) if v1_bases else None
        if found is not None:
            atexit.register(found._remove_bases)
        return found

    def _remove_bases(self) -> None:
        """At exit: remove the (empty) base directories, so no directory of ours is left
        inside the cgroup rlforge ran in once it is gone (another rlforge process may still
        be using one: then it is not empty and stays)."""
        for base in set(self.bases.values()):
            if base.name == _BASE_NAME:
                try:
                    base.rmdir()
                except OSError:
                    pass

    @classmethod
    def _usable(cls, bases: dict[str, Path], version: int,
                roots: dict[str, Path] | None = None) -> "SandboxCgroups | None":
        """`bases` if a run's cgroup can be made and removed there, else None."""
        found = cls(bases, version, roots)
        try:
            for base in set(bases.values()):
                base.mkdir(exist_ok=True)  # (a cpu base is rlforge's own cgroup: it exists)
            probe = found.create(Limits(pids=8, memory_bytes=64 << 20, cpus=1.0))
            found.remove(probe)
            found._sweep()
            return found
        except OSError:
            return None

    @classmethod
    def _usable_v2(cls, mount: Path) -> "SandboxCgroups | None":
        try:
            offered = (mount / "cgroup.controllers").read_text().split()
        except OSError:
            return None
        wanted = [c for c in CONTROLLERS if c in offered]
        if not wanted:
            return None
        base = mount / _BASE_NAME
        try:
            for where in (mount, base):
                if where == base:
                    base.mkdir(exist_ok=True)
                enabled = (where / "cgroup.subtree_control").read_text().split()
                missing = " ".join(f"+{c}" for c in wanted if c not in enabled)
                if missing:
                    _write(where / "cgroup.subtree_control", missing)
        except OSError:
            return None
        return cls._usable({c: base for c in wanted}, 2)

    def _sweep(self) -> None:
        """Remove cgroups left by rlforge processes that died before cleaning up."""
        for base in set(self.bases.values()):
            for child in base.iterdir():
                name = child.name.removeprefix(_BASE_NAME + "-")
                pid = name.split("-")[0]
                if name == child.name and base.name != _BASE_NAME:
                    continue  # beside rlforge's own cgroup only our prefixed names are ours
                if child.is_dir() and pid.isdigit() and pid_gone(pid):
                    try:
                        child.rmdir()
                    except OSError:
                        pass

    def create(self, limits: Limits) -> RunCgroups:
        """Fresh child cgroups with `limits` set."""
        name = f"{_BASE_NAME}-{os.getpid()}-{next(_counter)}"
        paths = {c: self.bases[c] / name for c in self.controllers}
        run = RunCgroups(paths)
        made = []
        try:
            for path in run.dirs():
                for attempt in range(3):
                    try:
                        path.mkdir()
                        break
                    except FileNotFoundError:  # another rlforge process removed the base
                        if attempt == 2:       # at its exit, between our runs
                            raise
                        path.parent.mkdir(exist_ok=True)
                made.append(path)
            self._set(run, limits)
        except OSError:
            for path in made:
                path.rmdir()
            raise
        return run

    def _set(self, run: RunCgroups, limits: Limits) -> None:
        if "pids" in run.paths:
            _write(run.paths["pids"] / "pids.max", str(limits.pids))
        mem = run.paths.get("memory")
        if mem is not None and limits.memory_bytes is not None:
            if self.version == 1:
                _write(mem / "memory.limit_in_bytes", str(limits.memory_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():  # swap accounting is on
                    _write(mem / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            else:
                _write(mem / "memory.max", str(limits.memory_bytes))
                if (mem / "memory.swap.max").exists():
                    _write(mem / "memory.swap.max", "0")
                _write(mem / "memory.oom.group", "1")
        cpu = run.paths.get("cpu")
        if cpu is not None and limits.cpus is not None:
            quota = max(1000, round(limits.cpus * _CPU_PERIOD_US))
            if self.version == 1:  # a new cgroup's period is the kernel's default, 100 ms
                if (cpu / "cpu.cfs_period_us").read_text().strip() != str(_CPU_PERIOD_US):
                    _write(cpu / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
                _write(cpu / "cpu.cfs_quota_us", str(quota))
            else:
                _write(cpu / "cpu.max", f"{quota} {_CPU_PERIOD_US}")

    @contextmanager
    def spawning_in(self, run: RunCgroups) -> Iterator[None]:
        """Run the block with the calling thread in `run`'s cgroups of `born_in()` (v1 only):
        processes it starts are born there. Writing "0" moves the writer itself."""
        paths = {c: p for c, p in run.paths.items() if c in self.born_in()}
        homes = {c: self._thread_cgroup(c) for c in paths}
        moved = []
        try:
            for controller, path in paths.items():
                _write(path / "tasks", "0")
                moved.append(controller)
            yield
        finally:
            for controller in moved:
                try:
                    _write(homes[controller] / "tasks", "0")
                except OSError:  # our old cgroup vanished: the hierarchy's root always exists
                    _write(self.roots[controller] / "tasks", "0")

    def _thread_cgroup(self, controller: str) -> Path:
        for line in Path("/proc/thread-self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                return self.roots[controller] / path.lstrip("/")
        raise OSError(errno.ENOENT, f"this thread is in no {controller} cgroup")

    def attach(self, run: RunCgroups, pid: int) -> None:
        """Move process `pid` into `run`'s cgroups it was not born in; its future children
        stay there."""
        born = self.born_in()
        for path in dict.fromkeys(p for c, p in run.paths.items() if c not in born):
            _write(path / "cgroup.procs", str(pid))

    @staticmethod
    def kill(run: RunCgroups) -> None:
        """SIGKILL every process in `run`'s cgroups."""
        for path in run.dirs():
            if (path / "cgroup.kill").exists():
                _write(path / "cgroup.kill", "1")
                continue
            for pid in (path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def oom_kills(self, run: RunCgroups) -> int:
        """How many processes the kernel's OOM killer killed in `run` for lack of memory."""
        mem = run.paths.get("memory")
        if mem is None:
            return 0
        if self.version == 1:
            return _read_key(mem / "memory.oom_control", "oom_kill")
        return _read_key(mem / "memory.events", "oom_kill")

    def memory_peak(self, run: RunCgroups) -> int | None:
        """The most memory `run` held at once, in bytes (None where the kernel does not say)."""
        mem = run.paths.get("memory")
        if mem is None:
            return None
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((mem / name).read_text())
        except (OSError, ValueError):
            return None

    def remove(self, run: RunCgroups, wait_sec: float = 2.0) -> bool:
        """Kill what is left in `run` and delete its cgroups; False if one would not go away."""
        deadline = time.monotonic() + wait_sec
        for path in run.dirs():
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        return False
                    self.kill(RunCgroups({"": path}))
                    time.sleep(0.005)
        return True
