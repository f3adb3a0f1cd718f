"""What a sandboxed run is asked to do (`SandboxSpec`) and what came of it (`SandboxResult`).

Plain data, no process handling: the runner reads a spec and fills a result. Paths inside
the sandbox follow Harbor's layout, so task scripts written for Harbor run unchanged.
"""

from __future__ import annotations

import enum
import math
import signal
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from rlforge.config import SandboxSettings
from rlforge.errors import ConfigError, UserError
from rlforge.sandbox.files import CopyLimits

# Where things appear inside the sandbox (Harbor's paths).
WORKSPACE_MOUNT = "/app"
TESTS_MOUNT = "/tests"
LOGS_MOUNT = "/logs/verifier"
VENV_MOUNT = "/opt/venv"

#: The uid and gid sandboxed code runs as (the conventional `nobody`).
SANDBOX_UID = 65534
#: The `sandbox.*` settings at their defaults: a spec's own defaults.
_DEFAULT = SandboxSettings()

#: Environment every sandboxed command gets; nothing else from the host enters.
BASE_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "USER": "nobody",
}

_RESERVED = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/proc",
             "/dev", "/tmp", WORKSPACE_MOUNT, TESTS_MOUNT, LOGS_MOUNT, VENV_MOUNT)
_MODES = ("bwrap", "none")


@dataclass(frozen=True)
class SandboxSpec:
    """How to run one untrusted command.

    Args:
        workspace: Host directory bound read-write at `/app` (the task's working tree).
        tests: Host directory bound at `/tests`, read-only unless `tests_writable`.
        tests_writable: Bind `tests` read-write (only for trusted set-up steps).
        logs: Host directory bound read-write at `/logs/verifier`, where verifiers write
            `reward.json` / `reward.txt`.
        venv: A prepared environment (from `prepare_env`) bound read-only at `/opt/venv`;
            its `bin/` goes first on PATH and `VIRTUAL_ENV` is set.
        ro_binds: Extra read-only binds, sandbox path -> host path.
        rw_binds: Extra read-write binds, sandbox path -> host path (copied onto the
            capped file system with the workspace, and back, as the workspace is).
        env: Variables added to the clean environment (`BASE_ENV`); host variables never
            pass through unless listed here with their value.
        cwd: Working directory inside the sandbox (default `/app` if a workspace is
            bound, else `/tmp`).
        timeout_sec: Wall-clock limit; the whole process tree is killed when it passes.
        cpu_sec: CPU-time limit per process (RLIMIT_CPU; SIGKILL when reached); default: the
            timeout rounded up.
        memory_mb: Memory of the whole sandbox (a memory cgroup: all its processes, page
            cache, and the tmpfs pages of /tmp, /dev/shm and the workspace copy; no swap);
            each process is also held to it by RLIMIT_AS. None for no limit.
        cpus: CPU quota of the whole sandbox, in CPUs (a cgroup CFS quota); None for none.
        max_processes: Processes and threads the command may have at once (a forkbomb
            stops here).
        file_size_mb: Largest file the command may write (RLIMIT_FSIZE).
        open_files: Open file descriptors per process (RLIMIT_NOFILE).
        tmp_mb: Size of the private, in-memory `/tmp` (and of `/dev/shm`).
        tmp_inodes: Files and directories `/tmp` (and `/dev/shm`) may hold.
        workspace_mb: Size of the capped file system the writable directories (workspace,
            logs, writable tests) are copied onto for the run, all together.
        workspace_inodes: Files and directories that file system may hold.
        copy_file_mb: Largest file copied back out of it after the run.
        copy_total_mb: Bytes copied back out in all (files the run did not change are
            not copied and do not count).
        copy_files: Entries copied back out in all. Past a copy-out cap the result's
            `submission_too_large` says which.
        host_uid: As root, the first unprivileged host uid sandboxes run as.
        host_uids: How many host uids, from `host_uid` on, sandboxes may use.
        output_limit: Bytes kept from each of stdout and stderr; the rest is dropped and
            the result says it was truncated.
        mode: "bwrap" (isolated) or "none" (no isolation at all; only when the user asked
            for it explicitly, and it warns on every run).
    """

    workspace: Path | None = None
    tests: Path | None = None
    tests_writable: bool = False
    logs: Path | None = None
    venv: Path | None = None
    ro_binds: Mapping[str, Path] = field(default_factory=dict)
    rw_binds: Mapping[str, Path] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_sec: float = _DEFAULT.timeout
    cpu_sec: int | None = None
    memory_mb: int | None = _DEFAULT.memory_mb
    cpus: float | None = _DEFAULT.cpus
    max_processes: int = _DEFAULT.max_processes
    file_size_mb: int = 256
    open_files: int = 1024
    tmp_mb: int = _DEFAULT.tmp_mb
    tmp_inodes: int = _DEFAULT.tmp_inodes
    workspace_mb: int = _DEFAULT.workspace_mb
    workspace_inodes: int = _DEFAULT.workspace_inodes
    copy_file_mb: int = _DEFAULT.copy_file_mb
    copy_total_mb: int = _DEFAULT.copy_total_mb
    copy_files: int = _DEFAULT.copy_files
    host_uid: int = _DEFAULT.host_uid
    host_uids: int = _DEFAULT.host_uids
    output_limit: int = _DEFAULT.output_limit
    mode: str = _DEFAULT.mode

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise UserError(f"sandbox mode {self.mode!r} is not one of {', '.join(_MODES)}")
        if not self.timeout_sec > 0:
            raise UserError(f"sandbox timeout must be positive, got {self.timeout_sec}")
        for name in ("max_processes", "file_size_mb", "open_files", "tmp_mb", "tmp_inodes",
                     "workspace_mb", "workspace_inodes", "copy_file_mb", "copy_total_mb",
                     "copy_files", "host_uid", "host_uids", "output_limit"):
            if getattr(self, name) < 1:
                raise UserError(f"sandbox {name} must be at least 1, got {getattr(self, name)}")
        for name in ("cpu_sec", "memory_mb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"sandbox {name} must be at least 1 or unset, got {value}")
        if self.cpus is not None and not self.cpus >= 0.01:
            raise UserError(f"sandbox cpus must be at least 0.01 or unset, got {self.cpus}")
        for dest in (*self.ro_binds, *self.rw_binds):
            path = PurePosixPath(dest)
            if not path.is_absolute() or ".." in path.parts or str(path) == "/":
                raise UserError(f"sandbox bind target {dest!r} must be an absolute path below /")
            if any(str(path) == r or str(path).startswith(r + "/") for r in _RESERVED):
                raise UserError(f"sandbox bind target {dest!r} is reserved; choose another path")
        if self.cwd is not None and not PurePosixPath(self.cwd).is_absolute():
            raise UserError(f"sandbox cwd {self.cwd!r} must be an absolute path inside the sandbox")
        for key in self.env:
            if not key or "=" in key or "\0" in key:
                raise UserError(f"invalid environment variable name {key!r}")

    @property
    def workdir(self) -> str:
        """The working directory inside the sandbox."""
        return self.cwd or (WORKSPACE_MOUNT if self.workspace else "/tmp")

    @property
    def cpu_limit(self) -> int:
        """The CPU-seconds limit actually applied."""
        return self.cpu_sec if self.cpu_sec is not None else math.ceil(self.timeout_sec)

    @property
    def copy_limits(self) -> CopyLimits:
        """The copy-out caps as `CopyLimits`."""
        return CopyLimits(self.copy_file_mb << 20, self.copy_total_mb << 20, self.copy_files)

    def environment(self) -> dict[str, str]:
        """The complete environment the command sees."""
        env = dict(BASE_ENV)
        if self.venv is not None:
            env["PATH"] = f"{VENV_MOUNT}/bin:{env['PATH']}"
            env["VIRTUAL_ENV"] = VENV_MOUNT
        env.update(self.env)
        return env

    def binds(self) -> list[tuple[Path, str, bool]]:
        """(host path, sandbox path, writable) for every bind this spec asks for."""
        out: list[tuple[Path, str, bool]] = []
        if self.workspace is not None:
            out.append((Path(self.workspace), WORKSPACE_MOUNT, True))
        if self.tests is not None:
            out.append((Path(self.tests), TESTS_MOUNT, self.tests_writable))
        if self.logs is not None:
            out.append((Path(self.logs), LOGS_MOUNT, True))
        if self.venv is not None:
            out.append((Path(self.venv), VENV_MOUNT, False))
        out.extend((Path(src), dest, False) for dest, src in self.ro_binds.items())
        out.extend((Path(src), dest, True) for dest, src in self.rw_binds.items())
        return out


#: Spec fields set straight from the `sandbox.<field>` setting of the same name
#: (`memory_mb` and `cpus`: 0 there is None here, no limit).
CONFIGURED = ("memory_mb", "cpus", "max_processes", "output_limit", "tmp_mb", "tmp_inodes",
              "workspace_mb", "workspace_inodes", "copy_file_mb", "copy_total_mb", "copy_files",
              "host_uid", "host_uids")
_UNLIMITED_AT_ZERO = ("memory_mb", "cpus")


def sandbox_settings(sandbox: SandboxSettings, mode: str | None = None) -> dict[str, Any]:
    """The spec fields the user set in the `sandbox.*` settings: the mode (always; `mode`,
    when given, wins) and each limit given by a flag, an `RLFORGE_SANDBOX_*` variable or
    rlforge.toml. A limit left at its default is left out, so that what a task asks for
    itself (its [environment] memory_mb, a larger /tmp) comes before the built-in default,
    which is `SandboxSpec`'s own. JSON-ready: a run's plan keeps it, Ray workers get it.
    Every spec of untrusted code is built from it by `spec_of`.
    """
    if mode is not None and mode not in _MODES:
        raise ConfigError(f"sandbox.mode from flag: {mode!r} is not one of {', '.join(_MODES)}")
    out: dict[str, Any] = {"mode": mode if mode is not None else sandbox.mode}
    for key, name in (("timeout", "timeout_sec"), *((n, n) for n in CONFIGURED)):
        if key in sandbox.given:
            value = getattr(sandbox, key)
            out[name] = None if name in _UNLIMITED_AT_ZERO and value <= 0 else value
    return out


def settings_with_mode(settings: Mapping[str, Any] | None, mode: str | None) -> dict[str, Any]:
    """`settings` (from `sandbox_settings`), or with None the built-in defaults (the
    caller resolved none); `mode`, when given, wins."""
    out = dict(settings or {})
    if mode is not None:
        out["mode"] = mode
    out.setdefault("mode", "bwrap")
    return out


def spec_of(*layers: Mapping[str, Any], **fields: Any) -> SandboxSpec:
    """A spec from layers of fields, each over the ones before it, then `fields` over all.
    rlforge's layers: what a task asks for itself (its memory, a larger /tmp, its venv),
    then the user's `sandbox_settings`, then the run's own directories and timeout."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    merged.update(fields)
    return SandboxSpec(**merged)


def spec_from_settings(sandbox: SandboxSettings, **fields: Any) -> SandboxSpec:
    """A spec whose mode and limits default to the `sandbox.*` settings.

    Args:
        sandbox: The resolved `sandbox.*` settings.
        **fields: Any `SandboxSpec` field; a value of None means "not given" and leaves the
            configured default in place (so CLI flags can be passed straight through).
    """
    return spec_of(sandbox_settings(sandbox),
                   **{k: v for k, v in fields.items() if v is not None})


class FailureReason(str, enum.Enum):
    """Why the sandbox itself failed: an infrastructure error, never the command's fault."""

    LAUNCH = "launch"  # bubblewrap could not be started at all
    SETUP = "setup"  # bubblewrap started but could not build the sandbox (e.g. bind source missing)
    LIMITS = "limits"  # the cgroups, host uid or capped file systems could not be set up
    LOST = "lost"  # the sandbox vanished without reporting the command's exit status
    # The writable directories given do not fit the capped file system (`workspace_mb`,
    # `workspace_inodes`), so the command never ran. Whose fault that is, the caller knows:
    # a workspace the policy's earlier commands grew is the policy's (a fail), a task's
    # own starting workspace is not (invalid).
    TOO_LARGE = "too_large"


@dataclass(frozen=True)
class SandboxFailure:
    """An infrastructure failure: the command never ran, or its status was lost."""

    reason: FailureReason
    detail: str

    def __str__(self) -> str:
        return f"sandbox {self.reason.value} failure: {self.detail}"


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one sandboxed command.

    Attributes:
        exit_code: The command's exit status; 128+N when it died from signal N (as a shell
            reports it); None when it never ran, timed out or was cancelled.
        stdout: Captured standard output, at most `output_limit` bytes.
        stderr: Captured standard error, at most `output_limit` bytes.
        stdout_truncated: True when stdout was longer than the limit.
        stderr_truncated: True when stderr was longer than the limit.
        timed_out: True when the wall-clock timeout killed the process tree.
        killed: True when the command ended by a signal (our kill on timeout or
            cancellation, or a limit such as CPU time).
        duration_sec: Wall-clock time of the whole run, sandbox set-up included.
        failure: Set when the sandbox itself failed; then the outcome must not count
            against the policy.
        sandboxed: False when the run used mode "none".
        oom_killed: The kernel killed processes of the sandbox at its memory limit (the
            command's own failure: its exit code says how it ended).
        memory_peak_mb: The most memory the sandbox held at once (memory cgroup), if known.
        submission_too_large: Set when what the run wrote passed a copy-out cap: why.
            The files over it were not copied back; a fail for the policy, not infra.
        notes: One line each on the above, for people (the CLI prints them).
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False
    killed: bool = False
    duration_sec: float = 0.0
    failure: SandboxFailure | None = None
    sandboxed: bool = True
    oom_killed: bool = False
    memory_peak_mb: float | None = None
    submission_too_large: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """The command ran to completion and exited 0."""
        return self.failure is None and not self.timed_out and self.exit_code == 0

    @property
    def signal(self) -> int | None:
        """The signal that ended the command, if its exit status says it died from one."""
        if self.exit_code is not None and 128 < self.exit_code < 128 + signal.NSIG:
            return self.exit_code - 128
        return None

    @property
    def stdout_text(self) -> str:
        """stdout decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def stderr_text(self) -> str:
        """stderr decoded as UTF-8 (undecodable bytes replaced)."""
        return self.stderr.decode("utf-8", "replace")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (outputs as text), e.g. for a rollout record."""
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout_text,
            "stderr": self.stderr_text,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "timed_out": self.timed_out,
            "killed": self.killed,
            "duration_sec": round(self.duration_sec, 4),
            "failure": None if self.failure is None else
            {"reason": self.failure.reason.value, "detail": self.failure.detail},
            "sandboxed": self.sandboxed,
            "oom_killed": self.oom_killed,
            "memory_peak_mb": self.memory_peak_mb,
            "submission_too_large": self.submission_too_large,
            "notes": list(self.notes),
        }
