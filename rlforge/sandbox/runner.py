"""Run one untrusted command under bubblewrap and report what happened.

The sandbox: new user, pid, network, mount, ipc, uts and cgroup namespaces; uid/gid 65534;
all capabilities dropped and no new user namespaces inside; a read-only system (`/usr`,
the `/bin`-style links, a minimal `/etc`); private `/tmp` and `/dev/shm`; minimal `/dev`;
its own `/proc`; the task's directories at Harbor's paths; a clean environment; rlimits
applied by `prlimit` inside; a seccomp filter (see `seccomp.py`).

As root, also: bubblewrap itself starts as an unprivileged host uid of the run's own
(`hostuid.py`), so the sandbox maps onto that uid and never onto host root; pids, memory
and cpu cgroups limit the whole sandbox (`cgroups.py`); everything it may write lives on
tmpfs mounts capped in bytes and inodes, copied in and out (`scratch.py`); and read-only
binds are idmapped mounts that show root's files as the run's uid's (`idmap.py`), so
callers' 0700 directories stay readable. Tear-down happens after the result is returned
(`teardown.py`).

Lifetime: the command itself is pid 1 of the sandbox's pid namespace (`--as-pid-1`), so
when it exits, or when we kill it on timeout, the kernel kills every process left inside
(background jobs, setsid, double forks). `--die-with-parent` ties the sandbox to the thread
that started it. No bubblewrap process lives inside: its init would run without our
rlimits, and sandboxed code (same uid) could ptrace it or write its /proc/1/mem. As in a
container, pid 1 ignores signals from inside the sandbox that it has no handler for, and
inherits orphans (shells reap them). bubblewrap's `--json-status-fd` tells us the command
really started and its exit status; a run without that status is a sandbox failure, not
the command's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from rlforge.errors import SandboxUnavailable, UserError
from rlforge.sandbox import layout, scratch, seccomp
from rlforge.sandbox.cgroups import Limits, RunCgroups, SandboxCgroups
from rlforge.sandbox.hostuid import HostUid
from rlforge.sandbox.scratch import Scratch
from rlforge.sandbox.spec import (SANDBOX_UID, FailureReason, SandboxFailure,
                                  SandboxResult, SandboxSpec)
from rlforge.sandbox.support import (INSTALL_HINT, MIN_BWRAP, MOUNT_HINT, ROOT_HINT, USERNS_HINT,
                                     HostSupport, bwrap_version, util_linux)
from rlforge.sandbox.teardown import cleaner

log = logging.getLogger("rlforge.sandbox")

_DRAIN_SEC = 2.0  # after a kill, how long to wait for pipes to close


_support: HostSupport | None = None
_support_lock = threading.Lock()


def ensure_available() -> HostSupport:
    """Check once per process that sandboxes can be built here, by building one.

    Returns:
        What the machine offers (bubblewrap path and version, process-limit mechanism).

    Raises:
        SandboxUnavailable: bubblewrap is missing or too old, namespaces cannot be created,
            or no process limit can be enforced; the message says how to fix it.
    """
    global _support
    with _support_lock:
        if _support is not None:
            return _support
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}")
        version = bwrap_version(bwrap)
        if version < MIN_BWRAP:
            need, have = ".".join(map(str, MIN_BWRAP)), ".".join(map(str, version))
            raise SandboxUnavailable(f"bubblewrap {have} is too old (rlforge needs {need} or newer "
                                     "for --disable-userns and --size); upgrade it, e.g. from "
                                     "Debian 12 / Ubuntu 24.04 packages")
        prlimit, setpriv = util_linux("prlimit"), ""
        if not seccomp.supported():
            raise SandboxUnavailable("rlforge has no seccomp syscall table for this CPU "
                                     "architecture (supported: x86_64, aarch64)")
        cgroups = SandboxCgroups.find()
        capped = False
        if os.geteuid() == 0:
            controllers = cgroups.controllers if cgroups else ()
            if "pids" not in controllers or "memory" not in controllers:
                found = ", ".join(controllers) or "none"
                raise SandboxUnavailable(f"cannot limit the sandbox: {ROOT_HINT.format(found=found)}")
            setpriv = util_linux("setpriv")
            capped = scratch.can_mount()
            if not capped:
                raise SandboxUnavailable(MOUNT_HINT)
            scratch.sweep()
        pid_limit = f"cgroup v{cgroups.version}" if cgroups and "pids" in cgroups.bases else "rlimit"
        bare = subprocess.run([bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/",
                               "--", "/usr/bin/true"], capture_output=True, text=True, env={},
                              timeout=30)
        if bare.returncode != 0:
            detail = bare.stderr.strip() or f"exit {bare.returncode}"
            raise SandboxUnavailable(f"bubblewrap cannot create namespaces here ({detail}); {USERNS_HINT}")
        support = HostSupport(bwrap, version, prlimit, pid_limit, cgroups, seccomp.filter_bytes(),
                              setpriv, capped)
        probe = _Run(support, ["/usr/bin/true"], SandboxSpec(timeout_sec=30)).execute()
        if probe.failure is not None or probe.exit_code != 0:
            detail = str(probe.failure) if probe.failure else f"exit {probe.exit_code}"
            hint = ("inside Docker, a fresh /proc needs the container run with "
                    "`--security-opt systempaths=unconfined` (or --privileged)"
                    if "proc" in detail else "please report it with this message")
            raise SandboxUnavailable(f"bubblewrap runs, but rlforge's sandbox cannot be set up on this "
                                     f"host ({detail}); {hint}")
        _support = support
        return support


def run(cmd: Sequence[str], spec: SandboxSpec | None = None, *,
        cancel: threading.Event | None = None) -> SandboxResult:
    """Run `cmd` in a fresh sandbox and wait for it.

    Args:
        cmd: The program and its arguments (looked up on the sandbox's PATH), e.g.
            `["bash", "/tests/test.sh"]`.
        spec: Directories, environment and limits; default: nothing bound, default limits.
        cancel: When set from another thread, the run is killed as on timeout.

    Returns:
        The outcome. `result.failure` is set when the sandbox itself failed (an
        infrastructure error); otherwise `exit_code`, `timed_out` and the outputs describe
        what the command did.

    Raises:
        SandboxUnavailable: sandboxes cannot be built on this machine (see
            `ensure_available`).
        UserError: `cmd` is empty.
    """
    spec = spec or SandboxSpec()
    if not cmd:
        raise UserError("no command given to run in the sandbox")
    unusable = _unusable(cmd, spec)
    if unusable:  # the command's own fault: it is answered like a program that cannot start
        return SandboxResult(126, stderr=f"rlforge: {unusable}\n".encode(),
                             sandboxed=spec.mode != "none")
    if cancel is not None and cancel.is_set():  # cancelled while waiting for a worker
        return SandboxResult(None, killed=True, sandboxed=spec.mode != "none")
    if spec.mode == "none":
        # Straight to stderr, not through logging: no logging set-up may silence this.
        print(f"rlforge: WARNING: sandbox mode 'none': running {cmd[0]} WITHOUT isolation; it can "
              "read your files and secrets and use the network", file=sys.stderr, flush=True)
        return _Run(None, list(cmd), spec, cancel).execute()
    support = ensure_available()
    supervised = _Run(support, list(cmd), spec, cancel)
    result = supervised.execute()
    if supervised.started and result.failure is not None \
            and result.failure.reason is FailureReason.LOST:
        result = _after_loss(support, spec, result)
    return result


# Linux refuses (E2BIG) to start a program given one argument or environment string of
# this many bytes or more, its terminating NUL included (MAX_ARG_STRLEN: 32 pages).
MAX_ARG_BYTES = 32 * 4096


def _unusable(cmd: Sequence[str], spec: SandboxSpec) -> str:
    """Why no program could be given `cmd` and the spec's environment ("" when it can): a
    NUL byte, a character with no bytes (a lone surrogate from a JSON string), or a string
    longer than the kernel passes to a program (`MAX_ARG_BYTES`; a command of 128 KiB
    once failed bubblewrap's start, an infrastructure failure the policy chose)."""
    for kind, text in [*(("argument", a) for a in cmd), *(("cwd", spec.cwd or "") for _ in (0,)),
                       *(("environment variable", f"{k}={v}") for k, v in spec.env.items())]:
        if "\0" in text:
            return f"the {kind} holds a NUL byte, which no program can receive"
        try:
            size = len(os.fsencode(text))
        except UnicodeEncodeError:
            return f"the {kind} holds a character that has no bytes (a lone surrogate)"
        if kind != "cwd" and size >= MAX_ARG_BYTES:
            return (f"the {kind} is {size:,} bytes; a program can be given at most "
                    f"{MAX_ARG_BYTES - 1:,} in one (Argument list too long): write long "
                    "content in several commands")
    return ""


def _after_loss(support: HostSupport, spec: SandboxSpec, lost: SandboxResult) -> SandboxResult:
    """A sandbox lost after its command started is the command's failure, unless a probe
    with the same limits, run right after, fails too: only then is the loss shown to be
    the machine's (an infrastructure failure the command could not have caused)."""
    bare = dataclasses.replace(spec, workspace=None, tests=None, logs=None, venv=None,
                               ro_binds={}, rw_binds={}, cwd=None, timeout_sec=30.0)
    probe = _Run(support, ["/usr/bin/true"], bare).execute()
    if not probe.ok:
        return lost
    assert lost.failure is not None
    note = (f"the sandbox ended without its command's exit status ({lost.failure.detail}) "
            "after the command started; the same limits ran a probe cleanly right after, "
            "so the command ended it")
    return dataclasses.replace(lost, failure=None, exit_code=128 + signal.SIGKILL, killed=True,
                               notes=(*lost.notes, note))


def _limit_args(prlimit: str, spec: SandboxSpec, nproc: int) -> list[str]:
    mb = 1024 * 1024
    # soft = hard: the kernel sends SIGKILL at the limit (SIGXCPU would not reach pid 1).
    args = [prlimit, f"--cpu={spec.cpu_limit}",
            f"--fsize={spec.file_size_mb * mb}", f"--nofile={spec.open_files}",
            f"--nproc={nproc}", "--core=0"]
    if spec.memory_mb is not None:
        args.append(f"--as={spec.memory_mb * mb}")
    return args + ["--"]


def _data_fd(data: bytes, name: str) -> int:
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _exited_fd(pidfd: int, timeout_sec: float) -> bool:
    """Wait until the process behind `pidfd` has exited; False if it is still running."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(timeout_sec * 1000))


def _exited(pid: int, timeout_sec: float) -> bool:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return _exited_fd(fd, timeout_sec)
    finally:
        os.close(fd)




class _Run:
    """One supervised run: start, copy output, enforce the deadline, collect the status."""

    def __init__(self, support: HostSupport | None, cmd: list[str], spec: SandboxSpec,
                 cancel: threading.Event | None = None):
        self.support, self.cmd, self.spec, self.cancel = support, cmd, spec, cancel
        self.proc: subprocess.Popen | None = None
        self.pidfd: int | None = None
        self.cgroup: RunCgroups | None = None
        self.host_uid: HostUid | None = None
        self.scratch: Scratch | None = None
        self.block_fd: int | None = None
        self.exit_code: int | None = None
        self.failure: SandboxFailure | None = None
        self.killed_by_us = False
        #: bubblewrap reported its child, and we let it go on to start the command
        self.started = False

    # --- building the command line -------------------------------------------------------

    def _bind_args(self) -> list[str]:
        """Every host directory: as root, writable ones on a capped copy and read-only
        ones bound again below the run's scratch directory (see `scratch.Scratch`)."""
        spec, args, work = self.spec, [], self.scratch
        if work is not None:
            args += ["--bind", str(work.tmp), "/tmp", "--bind", str(work.shm), "/dev/shm"]
        else:
            tmp = str(spec.tmp_mb * 1024 * 1024)
            args += ["--size", tmp, "--tmpfs", "/tmp", "--size", tmp, "--tmpfs", "/dev/shm"]
        for src, dest, writable in spec.binds():
            if work is not None:
                src = work.add(src, dest) if writable else work.bind(src)
            args += ["--bind" if writable else "--ro-bind", str(src), dest]
        return args

    def _bwrap_argv(self, child_fds: list[int], status_w: int, block_r: int | None) -> list[str]:
        spec, support = self.spec, self.support
        assert support is not None
        uid = str(SANDBOX_UID)
        argv = [support.bwrap, "--unshare-all", "--unshare-user", "--uid", uid, "--gid", uid,
                "--hostname", "sandbox", "--cap-drop", "ALL", "--disable-userns",
                "--die-with-parent", "--new-session", "--as-pid-1", "--json-status-fd", str(status_w)]
        if self.host_uid is not None:
            host = str(self.host_uid.uid)
            argv = [support.setpriv, f"--reuid={host}", f"--regid={host}", "--clear-groups",
                    "--", *argv]
        argv += layout.system_args()
        argv += ["--dev", "/dev"]
        argv += self._bind_args()
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", spec.workdir, "--clearenv"]
        for key, value in spec.environment().items():
            argv += ["--setenv", key, value]
        fd = _data_fd(support.seccomp_filter, "rlforge-seccomp")
        child_fds.append(fd)
        argv += ["--seccomp", str(fd)]
        if block_r is not None:
            argv += ["--block-fd", str(block_r)]
        return argv + ["--", *_limit_args(support.prlimit, spec, spec.max_processes), *self.cmd]

    # --- running ---------------------------------------------------------------------------

    def execute(self) -> SandboxResult:
        start = time.monotonic()
        try:
            result = self._execute(start)
            return self._finish(result, start)
        finally:
            if self.pidfd is not None:
                os.close(self.pidfd)
            if self.block_fd is not None:
                os.close(self.block_fd)
            cleaner.put((self.scratch, self.support.cgroups if self.support else None,
                          self.cgroup, self.host_uid))

    def _finish(self, result: SandboxResult, start: float) -> SandboxResult:
        """Add what the cgroups saw and copy the writable directories back out."""
        notes = list(result.notes)
        changes: dict[str, Any] = {}
        cgroups = self.support.cgroups if self.support else None
        if self.cgroup is not None and cgroups is not None:
            kills = cgroups.oom_kills(self.cgroup)
            peak = cgroups.memory_peak(self.cgroup)
            if peak is not None:
                changes["memory_peak_mb"] = round(peak / (1 << 20), 1)
            if kills:
                changes["oom_killed"] = True
                notes.append(f"out of memory: the kernel killed {kills} process"
                             f"{'es' if kills > 1 else ''} of the sandbox at its memory limit "
                             f"({self.spec.memory_mb} MB)")
        if self.scratch is not None and result.failure is None:
            try:
                out = self.scratch.copy_out(self.spec.copy_limits)
            except OSError as exc:
                changes["failure"] = SandboxFailure(FailureReason.LIMITS, f"copy-out: {exc}")
            else:
                if out.too_large is not None:
                    changes["submission_too_large"] = out.too_large
                    notes.append(f"submission too large: {out.too_large}; what passed the cap "
                                 "was not copied back")
        if notes:
            changes["notes"] = tuple(notes)
        if not changes:
            return result
        changes["duration_sec"] = time.monotonic() - start
        return dataclasses.replace(result, **changes)

    def _start(self) -> tuple[int | None, SandboxResult | None]:
        """Spawn the process; returns (status read fd or None, early result on failure)."""
        spec, child_fds = self.spec, []
        status_r = block_r = None
        stage = FailureReason.LAUNCH
        try:
            if self.support is None:  # mode "none"
                argv = _limit_args(shutil.which("prlimit") or "prlimit", spec, spec.max_processes)
                self.proc = subprocess.Popen(
                    argv + self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, cwd=self._host_workdir(), env=spec.environment(),
                    start_new_session=True)
                return None, None
            stage = FailureReason.LIMITS
            if self.support.as_root:
                self.host_uid = HostUid(spec.host_uid, spec.host_uids)
                mb = 1 << 20
                self.scratch = Scratch(self.host_uid.uid, spec.tmp_mb * mb, spec.tmp_inodes,
                                       spec.workspace_mb * mb, spec.workspace_inodes)
            status_r, status_w = os.pipe()
            child_fds.append(status_w)
            cgroups = self.support.cgroups
            spawning: contextlib.AbstractContextManager = contextlib.nullcontext()
            if cgroups is not None:
                memory = spec.memory_mb * (1 << 20) if spec.memory_mb is not None else None
                # On v1 bubblewrap's monitor is born in the pids cgroup and counts there.
                pids = spec.max_processes + (1 if "pids" in cgroups.born_in() else 0)
                self.cgroup = cgroups.create(Limits(pids, memory, spec.cpus))
                spawning = cgroups.spawning_in(self.cgroup)
                # the sandbox's pid 1 is moved into the rest on "child-pid" (see _on_status)
                block_r, self.block_fd = os.pipe()
                child_fds.append(block_r)
            stage = FailureReason.SETUP
            argv = self._bwrap_argv(child_fds, status_w, block_r)
            stage = FailureReason.LIMITS
            with spawning:
                stage = FailureReason.LAUNCH
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    pass_fds=child_fds, env={}, start_new_session=True)
                stage = FailureReason.LIMITS
            return status_r, None
        except OSError as exc:
            if status_r is not None:
                os.close(status_r)
            if self.proc is not None:  # started, but the thread could not leave the cgroup
                self.proc.kill()
                self.proc.communicate()
            detail = str(exc)
            if stage == FailureReason.SETUP and scratch.no_space(exc):
                stage = FailureReason.TOO_LARGE
                detail = (f"the directories to bind do not fit in the sandbox's capped file "
                          f"system ({spec.workspace_mb} MB, {spec.workspace_inodes:,} inodes): {exc}")
            return None, SandboxResult(None, failure=SandboxFailure(stage, detail),
                                       sandboxed=self.support is not None)
        finally:
            for fd in child_fds:
                os.close(fd)

    def _host_workdir(self) -> str:
        """Mode "none" has no Harbor paths: map the sandbox cwd onto the host directories."""
        wd = self.spec.workdir
        for src, dest, _ in self.spec.binds():
            if wd == dest or wd.startswith(dest + "/"):
                return str(src) + wd[len(dest):]
        return wd

    def _on_status(self, doc: dict) -> None:
        if "child-pid" in doc:
            pid = int(doc["child-pid"])
            try:
                self.pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                pass
            cgroups = self.support.cgroups if self.support else None
            if self.cgroup is not None and cgroups is not None and self.block_fd is not None:
                try:
                    cgroups.attach(self.cgroup, pid)
                    os.write(self.block_fd, b"x")  # let bubblewrap go on and start the command
                    self.started = True
                except OSError as exc:
                    self.failure = SandboxFailure(FailureReason.LIMITS, f"cgroup attach: {exc}")
                    self._kill()
                os.close(self.block_fd)
                self.block_fd = None
            else:
                self.started = True
        if "exit-code" in doc:
            self.exit_code = int(doc["exit-code"])

    def _kill(self) -> None:
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.cgroup is not None:
            try:
                SandboxCgroups.kill(self.cgroup)
            except OSError:
                pass

    def _execute(self, start: float) -> SandboxResult:
        status_r, early = self._start()
        if early is not None:
            return early
        proc, limit = self.proc, self.spec.output_limit
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        out, err = bytearray(), bytearray()
        truncated = {out_fd: False, err_fd: False}
        buffers = {out_fd: out, err_fd: err}
        status = bytearray()
        sel = selectors.DefaultSelector()
        for fd in (out_fd, err_fd, status_r):
            if fd is not None:
                sel.register(fd, selectors.EVENT_READ)
        deadline = start + self.spec.timeout_sec
        unsandboxed = self.support is None
        drain_until: float | None = None
        timed_out = False
        try:
            while sel.get_map():
                now = time.monotonic()
                if drain_until is None:
                    if now >= deadline or (self.cancel is not None and self.cancel.is_set()):
                        timed_out = now >= deadline
                        self.killed_by_us = True
                        self._kill()
                        drain_until = now + _DRAIN_SEC
                    elif unsandboxed and proc.poll() is not None:
                        # mode "none" has no namespace to end the rest; take its process
                        # group down so a background job holding our pipes cannot stall us
                        self._kill()
                        drain_until = now + 0.2
                elif now >= drain_until:
                    break
                wait = (drain_until or deadline) - now
                if self.cancel is not None or unsandboxed:
                    wait = min(wait, 0.05)
                for key, _ in sel.select(max(wait, 0)):
                    fd = key.fd
                    data = os.read(fd, 65536)
                    if not data:
                        sel.unregister(fd)
                        continue
                    if fd == status_r:
                        status += data
                        while b"\n" in status:
                            line, _, rest = bytes(status).partition(b"\n")
                            status[:] = rest
                            try:
                                self._on_status(json.loads(line))
                            except ValueError:
                                log.warning("unreadable bubblewrap status line: %r", line)
                        continue
                    room = limit - len(buffers[fd])
                    if room > 0:
                        buffers[fd] += data[:room]
                    if len(data) > room:
                        truncated[fd] = True
        finally:
            sel.close()
            if status_r is not None:
                os.close(status_r)
            self._reap()
        return self._result(start, bytes(out), bytes(err), truncated[out_fd], truncated[err_fd],
                            timed_out)

    def _reap(self) -> None:
        """Wait for bubblewrap and for the sandbox's pid 1 (its exit empties the namespace)."""
        proc = self.proc
        assert proc is not None
        # Popen.wait(timeout) polls with growing sleeps; a pidfd wakes us the moment it exits.
        if proc.returncode is None and not _exited(proc.pid, _DRAIN_SEC):
            self.killed_by_us = True
            self._kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        if self.pidfd is not None:
            if not _exited_fd(self.pidfd, _DRAIN_SEC):
                self._kill()
                _exited_fd(self.pidfd, _DRAIN_SEC)
        elif self.support is None:  # mode "none": take the process group down with it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _result(self, start: float, out: bytes, err: bytes, out_trunc: bool, err_trunc: bool,
                timed_out: bool) -> SandboxResult:
        proc = self.proc
        assert proc is not None
        exit_code, failure = self.exit_code, self.failure
        if self.support is None:
            rc = proc.returncode
            exit_code = 128 - rc if rc is not None and rc < 0 else rc
        elif failure is None and exit_code is None and not self.killed_by_us:
            reason = FailureReason.LOST if (proc.returncode or 0) < 0 else FailureReason.SETUP
            detail = err.decode("utf-8", "replace").strip() or f"bubblewrap exited {proc.returncode}"
            failure = SandboxFailure(reason, detail)
        if self.killed_by_us:
            exit_code = None
        signalled = exit_code is not None and 128 < exit_code < 128 + signal.NSIG
        return SandboxResult(
            exit_code=exit_code, stdout=out, stderr=err, stdout_truncated=out_trunc,
            stderr_truncated=err_trunc, timed_out=timed_out,
            killed=self.killed_by_us or signalled, duration_sec=time.monotonic() - start,
            failure=failure, sandboxed=self.support is not None)
