"""Policy code: the trust boundary every verifier kind goes through.

The contract every verifier kind follows. Code the policy controls (a submitted program,
the repository's tests that import the submitted code) runs only through a `PolicyCode`
launcher, never in the verifier's process:
- it gets a private copy of what it needs (`tree`, read-write) and read-only data
  directories (`data`), never the verifier's inputs (reference.json, hidden answers,
  canary names) and never the directory the reward is written to;
- its results come back over channels the verifier owns (its stdout pipe; for test runs
  a FIFO whose reports are taken first-come, see `testrun`), never from a file it could
  have written;
- it runs as another uid than the scorer (rlforge's sandbox, or uid 65534 when the
  verifier runs as root, as under Harbor), so it cannot signal or trace the scorer;
- dropped to uid 65534 it runs under the limits rlforge's sandbox sets (`LIMITS`), and
  is the first the kernel's OOM killer takes, so passing one is its own fail;
- once it has run, a crash, a timeout, a signal or a missing or malformed result is a
  *fail* with a typed `reason`, never a missing reward.
`LocalPolicy` is the launcher for tests/test.sh; rlforge passes its sandbox launcher
(rlforge.verify.boundary) to the same scoring functions.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time

POLICY_UID = 65534
INIT_NAMES = ("systemd", "init", "launchd", "upstart", "openrc-init", "runit")
#: What code dropped to POLICY_UID may use, per process, as `rlforge run`'s sandbox holds it
#: (rlforge.sandbox.spec.SandboxSpec's defaults; a test keeps them equal). There the
#: sandbox's cgroups bound the whole tree; here, with none of ours, these hold:
#: RLIMIT_NPROC counts every process of the uid, RLIMIT_FSIZE and RLIMIT_NOFILE hold
#: each process, and RLIMIT_CPU (the run's timeout, rounded up) is a backstop to it.
LIMITS = {"max_processes": 128, "file_size_mb": 256, "open_files": 1024}
#: Memory: RLIMIT_AS bounds one process's address space, not the memory the tree holds
#: (nor tmpfs pages or memfds), so it is set only to what `rlforge run` sets (the task's
#: memory, which is the container's memory limit under Harbor, read from its cgroup) and
#: the container's limit is what bounds the whole; policy processes get the highest OOM
#: score, so at that limit the kernel kills them, not the verifier.
OOM_SCORE_ADJ = 1000


class SandboxBroken(Exception):
    """The launcher could not start policy code at all (an infrastructure failure)."""


class Ran:
    """What one run of policy code did."""

    def __init__(self, code, stdout="", stderr="", timed_out=False):
        self.code, self.stdout, self.stderr, self.timed_out = code, stdout, stderr, timed_out

    @property
    def reason(self):
        """`timeout`, `signal` (killed by one), `crash` (non-zero exit), or '' when it exited 0."""
        if self.timed_out:
            return "timeout"
        if self.code is None or self.code < 0 or self.code > 128:
            return "signal"
        return "crash" if self.code else ""


class _LocalHandle:
    def __init__(self, proc, policy, timeout):
        self.proc, self.policy = proc, policy
        self.deadline = time.monotonic() + timeout
        self.killed = False

    def poll(self):
        """True once the code has exited (or was killed at its deadline)."""
        if self.proc.poll() is not None:
            return True
        if time.monotonic() > self.deadline:
            self.kill()
            self.killed = True
            return True
        return False

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.policy.sweep()

    def result(self, out_limit=1_000_000):
        try:
            out, err = self.proc.communicate(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.killed = True
            self.kill()
            try:
                out, err = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired as e:  # a process kill() missed holds the pipes
                out, err = e.output, e.stderr
                for pipe in (self.proc.stdout, self.proc.stderr):
                    if pipe is not None:
                        pipe.close()
        out, err = out or b"", err or b""
        self.kill()  # whatever it left behind goes before its result is read
        self.proc.wait()
        code = None if self.killed else self.proc.returncode
        return Ran(code, out[:out_limit].decode("utf-8", "replace"),
                   err[-10_000:].decode("utf-8", "replace"), self.killed)


class LocalPolicy:
    """Runs policy code as a child process of this verifier (tests/test.sh under Harbor).

    As root (Harbor runs test.sh as root), the code runs as uid/gid 65534 with no
    supplementary groups in a session of its own; its tree is handed to that uid, its data
    copied to a directory it may only read, and every process of that uid is killed when
    it ends. Without root the code runs as this process's own uid: there is no uid to drop
    to, and only rlforge's sandbox (or a separate verifier container) keeps it apart.
    """

    def __init__(self, python=None, drop=None):
        self.drop = (hasattr(os, "geteuid") and os.geteuid() == 0) if drop is None else drop
        self.python = python or sys.executable

    def places(self, tree, data):
        """Where the tree and each data directory appear to the code (host paths here)."""
        return tree, dict(data)

    def _prepare(self, tree, data):
        if not self.drop:
            return
        for dirpath, dirnames, filenames in os.walk(tree):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.lchown(name, POLICY_UID, POLICY_UID)
        for path in [tree, *data.values()]:
            _traversable(os.path.dirname(os.path.abspath(path)))
        for path in data.values():
            for dirpath, dirnames, filenames in os.walk(path):
                os.chmod(dirpath, 0o755)
                for n in filenames:  # regular files only: a FIFO keeps its own mode
                    if regular_file(os.path.join(dirpath, n)):
                        os.chmod(os.path.join(dirpath, n), 0o644)

    def _demote(self, limits=()):
        os.setsid()
        if self.drop:
            try:
                with open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write(str(OOM_SCORE_ADJ))
            except OSError:
                pass
            os.setgroups([])
            os.setgid(POLICY_UID)
            os.setuid(POLICY_UID)
            for which, value in limits:  # after setuid: its process count is checked at fork
                resource.setrlimit(which, (value, value))

    def _limits(self, timeout):
        """(rlimit, value) for code dropped to POLICY_UID (see `LIMITS`)."""
        mb = 1 << 20
        out = [(resource.RLIMIT_NPROC, LIMITS["max_processes"]),
               (resource.RLIMIT_FSIZE, LIMITS["file_size_mb"] * mb),
               (resource.RLIMIT_NOFILE, LIMITS["open_files"]),
               (resource.RLIMIT_CPU, max(1, math.ceil(timeout))), (resource.RLIMIT_CORE, 0)]
        memory = container_memory_limit()
        if memory is not None:
            out.append((resource.RLIMIT_AS, memory))
        return out

    def start(self, argv, tree, data=None, env=None, timeout=30.0, log=None):
        """Start `argv` with cwd `tree`; returns a handle with poll(), kill(), result().

        `log`: a file path for stdout and stderr together (for long runs whose output is
        not read while they run), else both are piped back."""
        data = data or {}
        self._prepare(tree, data)
        run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tree, "TMPDIR": tree,
                   "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        run_env.update(env or {})
        limits = self._limits(timeout) if self.drop else []
        out = open(log, "wb") if log else None
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                    stdout=out or subprocess.PIPE,
                                    stderr=subprocess.STDOUT if out else subprocess.PIPE,
                                    env=run_env, cwd=tree, close_fds=True,
                                    preexec_fn=lambda: self._demote(limits))
        except OSError as exc:
            raise SandboxBroken(f"cannot start {argv[0]}: {exc}") from None
        finally:
            if out:
                out.close()
        return _LocalHandle(proc, self, timeout)

    def run(self, argv, tree, data=None, env=None, timeout=30.0):
        """Run to the end; a `Ran`."""
        return self.start(argv, tree, data, env, timeout).result()

    def require_apart(self):
        """Refuse (SandboxBroken) to score by running policy code as this verifier's own
        uid: it could read the tests and write the reward."""
        if not self.drop:
            raise SandboxBroken(
                "this verifier would run policy code as its own uid, beside the reference and "
                "the reward: run tests/test.sh as root (policy code then runs as uid "
                f"{POLICY_UID}), or in rlforge's environments, whose scorer keeps it apart")

    def sweep(self):
        """Kill what policy code left running: every process of the policy's uid, or,
        inside rlforge's sandbox (a pid namespace of our own), every process but ours."""
        if not self.drop:
            if os.environ.get("RLFORGE_SANDBOXED") == "1":
                stop_other_processes()
            return
        _kill_every_process_of(POLICY_UID)  # one kill(-1): no fork outruns it
        for _ in range(20):
            left = [p for p in _live_pids() if _uid_of(p) == POLICY_UID]
            if not left:
                return
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            _reap()
            time.sleep(0.01)


def container_memory_limit():
    """The memory limit of this process's cgroup in bytes (a container's: Harbor sets it
    from the task's memory_mb), or None where there is none or it cannot be read."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    places = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # cgroup v2
            places += [f"/sys/fs/cgroup{path.rstrip('/')}/memory.max", "/sys/fs/cgroup/memory.max"]
        elif "memory" in controllers.split(","):  # v1; in a container its own is the root
            places += [f"/sys/fs/cgroup/memory{path.rstrip('/')}/memory.limit_in_bytes",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    for place in places:
        try:
            with open(place) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        return int(text) if text.isdigit() and int(text) < 1 << 50 else None  # v1: 2**63 - page
    return None


def _traversable(path):
    """Let other users pass through path and its parents up to the temporary directory."""
    top = os.path.abspath(tempfile.gettempdir())
    path = os.path.abspath(path)
    while path.startswith(top + os.sep):
        os.chmod(path, os.stat(path).st_mode | 0o111)
        path = os.path.dirname(path)


def _uid_of(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _private_namespace():
    """Whether this process is in a container or sandbox of its own, where stopping every
    other process is safe: never on a host whose pid 1 is an init system."""
    if os.environ.get("RLFORGE_SANDBOXED") == "1":
        return True
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        with open("/proc/1/comm") as fh:
            return fh.read().strip() not in INIT_NAMES
    except OSError:
        return False


def stop_other_processes():
    """Before scoring, stop every process that is not this verifier or one of its
    ancestors (pid 1 of the container stays): nothing the agent left running may read the
    tests or rewrite the reward. Returns how many were killed (-1: not in a container)."""
    if not _private_namespace():
        return -1
    keep, pid = {1}, os.getpid()
    while pid > 1:
        keep.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    killed = set()
    for _ in range(50):
        _reap()
        others = [p for p in _live_pids() if p not in keep]
        if not others:
            break
        for p in others:
            try:
                os.kill(p, signal.SIGKILL)
                killed.add(p)
            except OSError:
                pass
        time.sleep(0.01)
    return len(killed)


def _kill_every_process_of(uid):
    """SIGKILL to every process of `uid`, from a child that takes that uid: `kill(-1)`
    reaches them all in one call (a chain of forks that each exit can slip past a scan of
    /proc between its reading and its kills)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(3):
                os.kill(-1, signal.SIGKILL)  # all the uid may signal, the caller spared
        except BaseException:
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _live_pids():
    """Pids in /proc that are not zombies (a zombie is already dead; only its parent can
    reap it), but a leader that exited while its other threads run is alive."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") or _threads(name) > 1:
            out.append(int(name))
    return out


def _threads(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _reap():
    """Collect exited children (the verifier may be a namespace's pid 1, which inherits orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


MAX_DEPTH = 64  # directory levels a submitted tree may have


def copy_tree_bounded(src, dst, limit=200 * 1024 * 1024, max_files=100_000, skip=None):
    """Copy the regular files under src into dst (created), never following links.

    Symlinks and special files are left out, as is any relative path `skip(rel)` is true
    for. Returns the relative paths copied; raises OSError past `limit` bytes,
    `max_files` files and directories (each takes an inode of the tree's file system) or
    MAX_DEPTH directory levels.
    """
    os.makedirs(dst, exist_ok=True)
    copied, total, dirs = [], 0, 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel_dir = os.path.relpath(dirpath, src)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        if rel_dir.count("/") + 2 > MAX_DEPTH and dirnames:
            raise OSError(f"the workspace is deeper than {MAX_DEPTH} directories")
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if not os.path.islink(os.path.join(dirpath, d)) and not (skip and skip(rel)):
                dirs += 1
                if len(copied) + dirs > max_files:
                    raise OSError(f"the workspace has more than {max_files} files and directories")
                keep.append(d)
                os.makedirs(os.path.join(dst, rel), exist_ok=True)
        dirnames[:] = keep
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if skip and skip(rel):
                continue
            if len(copied) + dirs >= max_files:
                raise OSError(f"the workspace has more than {max_files} files and directories")
            try:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symlink or unreadable entry
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    continue
                total += st.st_size
                if total > limit:
                    raise OSError(f"the workspace is larger than {limit // (1024 * 1024)} MB")
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read(limit + 1)
            finally:
                os.close(fd)
            target = os.path.join(dst, rel)
            with open(target, "wb") as out:
                out.write(data)
            os.chmod(target, 0o755 if st.st_mode & 0o111 else 0o644)
            copied.append(rel)
    return copied


def regular_file(path):
    """Whether path is a regular file reached without following a link at its last step."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_regular_files(tree, wanted, limit=-1):
    """{relative posix path: bytes} of the regular files under `tree` whose relative path
    `wanted(rel)` accepts, links never followed; each read up to `limit` bytes (-1: whole)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, tree).replace(os.sep, "/")
            if wanted(rel) and not os.path.islink(path) and os.path.isfile(path):
                with open(path, "rb") as fh:
                    out[rel] = fh.read(limit)
    return out
