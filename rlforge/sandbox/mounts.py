"""Host directories standing for a sandbox's directories, for the environments of other
frameworks (`rlforge.harbor`, `rlforge.verifiers_env`) that run each command in a fresh
rlforge sandbox: /app, the log directories and whatever the framework uploads each live
in a host directory of their own, bound into every sandbox at their path.

Only the standard library and `rlforge.sandbox.spec`: these environments run in the
framework's Python, where rlforge's own dependencies need not be installed.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Iterable

from rlforge.sandbox.spec import (LOGS_MOUNT, TESTS_MOUNT, VENV_MOUNT, WORKSPACE_MOUNT,
                                  FailureReason, SandboxResult, SandboxSpec)

#: Paths the sandbox owns (the host's read-only system, its private /tmp, the prepared
#: venv): nothing can be mounted there.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc",
                "/proc", "/dev", "/tmp", "/sys", "/run", "/var", VENV_MOUNT)


class Mounts:
    """Sandbox path -> host directory, the host directories made under `root`."""

    def __init__(self, root: Path):
        self.root = root
        self.dirs: dict[str, Path] = {}

    def add(self, path: str) -> Path:
        """A new, empty host directory (writable by the sandbox's user) mounted at `path`."""
        host = self.root / "mounts" / str(len(self.dirs))
        host.mkdir(parents=True)
        host.chmod(0o777)
        self.dirs[path] = host
        return host

    def find(self, path: PurePosixPath, create: str | None = None) -> tuple[Path, PurePosixPath]:
        """The host directory mounted where the absolute `path` lives, and `path` relative
        to it. `create` names the directory to mount when no mount holds `path` yet;
        without it that is a FileNotFoundError. A relative path, '..', or a directory
        the sandbox owns is a ValueError."""
        if not path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{str(path)!r}: give an absolute path without '..'")
        for mount in sorted(self.dirs, key=len, reverse=True):
            if path == PurePosixPath(mount) or PurePosixPath(mount) in path.parents:
                return self.dirs[mount], path.relative_to(mount)
        if create is None:
            raise FileNotFoundError(f"{path}: not in this environment")
        top = str(PurePosixPath(create))
        if top == "/" or any(top == s or top.startswith(s + "/") for s in SYSTEM_PATHS):
            raise ValueError(f"{create}: rlforge's sandbox keeps {create} read-only; "
                             "upload below another directory")
        self.add(top)
        return self.find(path)

    def binds(self, read_only: Iterable[str] = (), trusted: bool = False) -> dict[str, Any]:
        """SandboxSpec fields: the workspace, and every other mount as a bind, read-only
        where its path is in `read_only`. The tests and the verifier's logs only for a
        `trusted` command (the verifier's own): never where the agent's commands run."""
        mounts = dict(self.dirs)
        workspace, logs = mounts.pop(WORKSPACE_MOUNT), mounts.pop(LOGS_MOUNT, None)
        tests = mounts.pop(TESTS_MOUNT, None)
        ro = set(read_only)
        return {"workspace": workspace, "logs": logs if trusted else None,
                "tests": tests if trusted else None,
                "ro_binds": {p: h for p, h in mounts.items() if p in ro},
                "rw_binds": {p: h for p, h in mounts.items() if p not in ro}}

    def host(self, path: str) -> Path | None:
        """The host directory mounted exactly at `path`, if any."""
        return self.dirs.get(path)


def trusted_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """SandboxSpec fields for a trusted command (the verifier's test.sh), from the agent's:
    its capped file system holds twice the agent's bytes and files, so a workspace the
    agent's commands filled to their caps still goes in beside the verifier's logs, and the
    scorer decides (a workspace too large for policy code's sandboxes is its fail); the
    verifier's own sandbox never fails to start over what the agent left."""
    out = dict(fields)
    for name in ("workspace_mb", "workspace_inodes"):
        base = out.get(name, SandboxSpec.__dataclass_fields__[name].default)
        out[name] = 2 * int(base)
    return out


def grown_past_cap(result: SandboxResult, grown: bool) -> str | None:
    """Why a command was not run when the workspace the policy's earlier commands `grown`
    no longer fits its sandbox (copy-out makes sparse files dense): the policy's doing,
    answered as `rlforge run` does, like a program that cannot start (exit 126, the reason
    on stderr), and the episode goes on to be graded. None for any other result: a
    sandbox failure there is the infrastructure's (a task's own starting workspace too
    large included)."""
    failure = result.failure
    if failure is None or not grown or failure.reason is not FailureReason.TOO_LARGE:
        return None
    return f"not run: the workspace no longer fits the sandbox: {failure.detail}"
