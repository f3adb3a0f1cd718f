"""What this machine offers the sandbox (`HostSupport`), and how to fix what it lacks.

`runner.ensure_available` fills a `HostSupport` once per process by probing the machine
and building one sandbox; the hints here are the one-line fixes its errors print.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from rlforge.errors import SandboxUnavailable
from rlforge.sandbox import scratch
from rlforge.sandbox.cgroups import SandboxCgroups

MIN_BWRAP = (0, 8, 0)  # --disable-userns and --size
INSTALL_HINT = ("install it with `apt-get install -y bubblewrap` (Debian/Ubuntu) or "
                "`dnf install -y bubblewrap` (Fedora)")
USERNS_HINT = ("enable unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` "
               "(Debian), `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 24.04+), "
               "`sysctl -w user.max_user_namespaces=15000`; inside Docker, run the container with "
               "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`")
ROOT_HINT = ("as root, the sandbox's process and memory limits need writable cgroup pids and "
             "memory controllers (found: {found}) under /sys/fs/cgroup: run rlforge as a non-root "
             "user, or give it a writable cgroup (e.g. a privileged container, or "
             "`mount -t cgroup2 none /sys/fs/cgroup`)")
MOUNT_HINT = ("as root, rlforge caps what a sandbox may write with tmpfs mounts under "
              f"{scratch.RUNTIME}, and cannot mount one here (no CAP_SYS_ADMIN?): run rlforge as "
              "a non-root user, or with the capability")


@dataclass(frozen=True)
class HostSupport:
    """What this machine offers the sandbox; found once by `ensure_available`."""

    bwrap: str
    version: tuple[int, ...]
    prlimit: str
    pid_limit: str  # "rlimit" or "cgroup v1"/"cgroup v2"
    cgroups: SandboxCgroups | None
    seccomp_filter: bytes
    setpriv: str = ""  # as root: starts bubblewrap as the run's unprivileged host uid
    capped_fs: bool = False  # as root: tmpfs mounts with size and inode caps

    @property
    def as_root(self) -> bool:
        """Whether runs switch to an unprivileged host uid and use capped file systems."""
        return bool(self.setpriv)

    def limits(self) -> str:
        """One line on how the limits are enforced here, for `sandbox check`."""
        cg = self.cgroups
        via = (f"cgroup v{cg.version} {'+'.join(cg.controllers)}" if cg else "rlimits only")
        return (f"limits via {via}; host uid {'of its own' if self.as_root else 'the caller'}; "
                f"capped file systems {'yes' if self.capped_fs else 'no (not root)'}")


def bwrap_version(bwrap: str) -> tuple[int, ...]:
    out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, env={},
                         timeout=10).stdout
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if not match:
        raise SandboxUnavailable(f"cannot tell the version of {bwrap} (printed {out.strip()!r}); "
                                 f"reinstall bubblewrap: {INSTALL_HINT}")
    return tuple(int(g or 0) for g in match.groups())


def util_linux(name: str) -> str:
    found = shutil.which(name)
    path = os.path.realpath(found) if found else ""
    if not path.startswith("/usr/"):
        raise SandboxUnavailable(f"{name} (util-linux) was not found under /usr; "
                                 "install it with `apt-get install -y util-linux`")
    return path
