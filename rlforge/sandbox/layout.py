"""The file system a sandbox sees, apart from the task's own directories.

A read-only system (`/usr` and the `/bin`-style links or directories beside it), a small
generated `/etc` (no host accounts, no host configuration beyond what the dynamic loader
and locale need), and a fresh `/proc` whose global knobs are read-only and whose host-wide
listings are masked. The bubblewrap arguments for all of it are built here.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
from pathlib import Path

# Host /etc files the sandbox may read (all world-readable and secret-free).
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime",
             "nsswitch.conf", "mime.types")
# Files generated for the sandbox instead of exposing the host's.
ETC_DATA = {
    "/etc/passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                   "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n",
    "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "/etc/hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
}
# /proc entries made read-only, and ones hidden (they list host-wide timers, tasks, keys);
# the same lists Docker and runc use.
PROC_READONLY = ("/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq")
PROC_MASKED = ("/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/timer_stats",
               "/proc/sched_debug", "/proc/latency_stats", "/proc/kcore", "/proc/acpi",
               "/proc/scsi", "/proc/asound")

_etc_lock = threading.Lock()
_etc_made: str | None = None


def _etc_dir() -> str:
    """The sandbox's /etc: copies of a few host files plus generated ones, made once per
    process (one bind mount instead of ten; the host's /etc is never exposed)."""
    global _etc_made
    with _etc_lock:
        if _etc_made is None or not os.path.isdir(_etc_made):  # /tmp cleaners may remove it
            made = tempfile.mkdtemp(prefix="rlforge-etc-")
            for name in ETC_FILES:
                src, dest = f"/etc/{name}", os.path.join(made, name)
                if os.path.isdir(src):
                    shutil.copytree(src, dest, symlinks=True)
                elif os.path.isfile(src):
                    shutil.copyfile(src, dest)
            for path, text in ETC_DATA.items():
                Path(made, os.path.basename(path)).write_text(text)
            for root, dirs, files in os.walk(made):
                for name in dirs + files:
                    if not os.path.islink(os.path.join(root, name)):
                        os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
            os.chmod(made, 0o755)
            atexit.register(shutil.rmtree, made, True)
            _etc_made = made
        return _etc_made


def system_args() -> tuple[str, ...]:
    """The read-only system: /usr, the /bin-style top-level links or dirs, a minimal /etc,
    and a /proc whose global knobs are read-only and whose host-wide listings are masked."""
    return ("--ro-bind", _etc_dir(), "/etc") + _host_layout_args()


@functools.cache
def _host_layout_args() -> tuple[str, ...]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    # As root, the sandbox's uid is host uid 0, which owns every sysctl: without a
    # read-only /proc/sys it could rewrite kernel.core_pattern or kernel.modprobe and run
    # code on the host. (bubblewrap only covers /proc/sys when the directory is writable.)
    args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    args += [arg for path in PROC_READONLY if os.path.exists(path)
             for arg in ("--ro-bind", path, path)]
    for path in PROC_MASKED:
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return tuple(args)
