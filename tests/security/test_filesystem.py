"""Escape corpus: the file system. Only the task's directories and a read-only system are visible."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.sandbox


def test_a_host_secret_file_cannot_be_read_by_path_or_through_proc(task, sh):
    r = sh(f"cat {task.secret}; cat /proc/1/root{task.secret}; cat /proc/self/root{task.secret}; "
           f"ls {task.secret.parent}")
    assert "HOST SECRET" not in r.stdout_text
    assert r.stderr_text.count("No such file or directory") == 4, r.stderr_text
    assert "HOST SECRET" in task.secret.read_text()  # the witness is readable from the host


def test_root_home_and_other_host_directories_are_not_there(py):
    r = py("""
import os
print(sorted(os.listdir("/")))
for p in ("/root", "/home", "/work", "/var", "/srv", "/mnt", "/opt", "/boot", "/sys", "/run"):
    print(p, os.path.exists(p))
""")
    lines = r.stdout_text.splitlines()
    assert eval(lines[0]) == sorted(["app", "bin", "dev", "etc", "lib", "lib64", "logs", "proc",
                                     "sbin", "tests", "tmp", "usr"]
                                    + [d for d in ("lib32", "libx32") if os.path.exists("/" + d)])
    assert all(line.endswith(" False") for line in lines[1:]), lines


def test_the_rlforge_database_is_invisible(tmp_path, py):
    db = tmp_path / "rlforge.duckdb"  # where the test config points RLFORGE_DB
    assert os.environ["RLFORGE_DB"] == str(db)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE tickets AS SELECT 'customer card 4111 1111 1111 1111' AS body")
    con.close()
    r = py(f"""
import os
try:
    open({str(db)!r}, "rb").read(16); print("READ")
except OSError as e:
    print("blocked", e.errno)
print([p for p in os.listdir("/app") + os.listdir("/tests") if p.endswith(".duckdb")])
""")
    assert r.stdout_text.splitlines() == ["blocked 2", "[]"], r


def test_etc_holds_no_host_accounts_or_shadow(sh):
    r = sh("cat /etc/shadow; ls /etc/ssh; cat /etc/passwd")
    assert r.stdout_text.splitlines() == ["root:x:0:0:root:/root:/usr/sbin/nologin",
                                          "nobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin"]
    assert r.stderr_text.count("No such file or directory") == 2
    host_users = Path("/etc/passwd").read_text().splitlines()
    assert len(host_users) > 2  # the host has accounts the sandbox does not see


def test_writes_outside_the_workspace_fail_and_leave_the_host_unchanged(task, py):
    before = (task.tests / "test.sh").read_bytes()
    targets = ["/usr/evil", "/etc/evil", "/evil", "/tests/evil", "/tests/test.sh", "/bin/evil",
               "/proc/sys/kernel/hostname", "/dev/evil", str(task.secret), str(task.root / "evil")]
    r = py(f"""
written = []
for p in {targets!r}:
    try:
        with open(p, "w") as f:
            f.write("exit 0\\n")
        written.append(p)
    except OSError:
        pass
open("/app/ok.txt", "w").write("fine")
print(written)
""")
    assert r.exit_code == 0 and r.stdout_text.strip() == "[]", r
    assert (task.tests / "test.sh").read_bytes() == before
    assert "HOST SECRET" in task.secret.read_text()
    assert not (task.root / "evil").exists()
    assert not any(Path(p).exists() for p in ("/usr/evil", "/etc/evil", "/evil", "/bin/evil"))
    assert (task.workspace / "ok.txt").read_text() == "fine"  # the workspace is writable


def test_tampering_with_the_tests_fails(task, sh):
    before = {p.name: p.read_bytes() for p in task.tests.iterdir()}
    r = sh("echo 'exit 0' > /tests/test.sh; chmod 777 /tests/test.sh; rm -f /tests/test.sh; "
           "mv /tests/test.sh /tmp/x; touch /tests/new; echo done")
    assert r.stdout_text.strip() == "done"
    assert r.stderr_text.count("Read-only file system") >= 4, r.stderr_text
    assert {p.name: p.read_bytes() for p in task.tests.iterdir()} == before


def test_remounting_the_system_read_write_fails(sh, py):
    r = sh("mount -o remount,rw /; mount -o remount,rw /usr; mount -o remount,rw /tests; "
           "unshare -Urm sh -c 'mount -o remount,rw /usr'; echo x > /usr/evil && echo WROTE")
    assert "WROTE" not in r.stdout_text
    assert r.stderr_text.count("must be superuser") == 3, r.stderr_text
    assert "unshare failed" in r.stderr_text  # no nested user namespace to be root in
    r = py("""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
for target in (b"/", b"/usr", b"/tests"):
    print(target.decode(), libc.mount(None, target, None, MS_REMOUNT | MS_BIND, None), ctypes.get_errno())
""")
    assert r.stdout_text.split() == ["/", "-1", "1", "/usr", "-1", "1", "/tests", "-1", "1"], r


def test_mknod_of_devices_fails(task, py):
    r = py("""
import os, stat
for path, kind, dev in (("/tmp/sda", stat.S_IFBLK, (8, 0)), ("/app/mem", stat.S_IFCHR, (1, 1)),
                        ("/app/null", stat.S_IFCHR, (1, 3))):
    try:
        os.mknod(path, 0o666 | kind, os.makedev(*dev)); print("MADE", path)
    except OSError as e:
        print("denied", e.errno)
""")
    assert r.stdout_text.split() == ["denied", "1"] * 3, r
    assert not any(stat.S_ISBLK(p.lstat().st_mode) or stat.S_ISCHR(p.lstat().st_mode)
                   for p in task.workspace.iterdir())


def test_setuid_binaries_grant_nothing(py):
    r = py("""
import os, subprocess
assert os.stat("/usr/bin/mount").st_mode & 0o4000, "expected a setuid mount binary on the host"
out = subprocess.run(["mount", "-t", "tmpfs", "none", "/tmp"], capture_output=True, text=True)
print(out.returncode, "NoNewPrivs:\\t1" in open("/proc/self/status").read(), os.geteuid())
""")
    assert r.stdout_text.split() == ["32", "True", "65534"], r


def test_tmp_is_private(task, sh):
    marker = task.root.name + "-private-tmp-probe"
    Path("/tmp", marker).write_text("host")
    try:
        r = sh(f"cat /tmp/{marker}; echo sandbox > /tmp/{marker}-inside; ls /tmp")
        assert "host" not in r.stdout_text
        assert not Path("/tmp", f"{marker}-inside").exists()
    finally:
        Path("/tmp", marker).unlink()


def test_hard_links_cannot_reach_outside_the_workspace(task, sh):
    # link(2) does not cross mounts, so a hard link in /app can only name /app's own files:
    # nothing copied out later can alias the tests or the system.
    r = sh("ln /tests/test.sh /app/t; ln /usr/bin/sh /app/s; ln /etc/passwd /app/p; ls /app")
    assert r.stderr_text.count("Invalid cross-device link") == 3, r.stderr_text
    assert sorted(p.name for p in task.workspace.iterdir()) == ["answer.txt"]


def test_kernel_settings_cannot_be_changed(py):
    # As root the sandbox's uid is host uid 0, the owner of every sysctl. Writing the value
    # each already has keeps the host unchanged even if this test ever failed.
    knobs = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
             "/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/hostname"]
    before = {k: Path(k).read_text() for k in knobs if Path(k).exists()}
    r = py(f"""
import os
for knob, value in {before!r}.items():
    try:
        with open(knob, "w") as f:
            f.write(value)
        print("WROTE", knob)
    except OSError as e:
        print("denied", e.errno, os.access(knob, os.W_OK))
""")
    assert r.stdout_text.split() == ["denied", "30", "False"] * len(before), r
    assert {k: Path(k).read_text() for k in before} == before


def test_no_setuid_program_can_be_planted_in_the_workspace(task, py):
    # Files written in /app land on the host owned by the uid the sandbox maps to (root, when
    # rlforge runs as root); a setuid copy of a shell there would be a root shell for anyone.
    r = py("""
import ctypes, os, shutil
shutil.copy("/usr/bin/sh", "/app/rootshell")
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/app/rootshell", os.O_RDONLY)
attempts = {
    "chmod": lambda: os.chmod("/app/rootshell", 0o4755),
    "setgid": lambda: os.chmod("/app/rootshell", 0o2755),
    "fchmod": lambda: os.fchmod(fd, 0o6755),
    "fchmodat2": lambda: libc.syscall(452, -100, b"/app/rootshell", 0o4755, 0) == 0 or
                         (_ for _ in ()).throw(OSError(ctypes.get_errno(), "fchmodat2")),
}
for name, attempt in attempts.items():
    try:
        attempt(); print(name, "ALLOWED")
    except OSError as e:
        print(name, e.errno)
grown = os.open("/app/grown", os.O_CREAT | os.O_RDWR, 0o4755)
os.write(grown, b"#!/bin/sh\\n")  # writing clears a set-id bit set at creation
""")
    assert r.stdout_text.split() == ["chmod", "1", "setgid", "1", "fchmod", "1", "fchmodat2", "1"], r
    for name in ("rootshell", "grown"):
        assert not os.stat(task.workspace / name).st_mode & (stat.S_ISUID | stat.S_ISGID)


def test_read_only_binds_of_root_only_directories_are_readable_but_not_writable(tmp_path):
    # As root, sandboxes run as an unprivileged host uid; a tests directory made by
    # tempfile.mkdtemp (0700) with a 0600 file must still be readable, and stay unchanged.
    import tempfile

    from rlforge.sandbox import SandboxSpec, run

    tests = Path(tempfile.mkdtemp(dir=tmp_path))
    (tests / "run.json").write_text("{}")
    os.chmod(tests / "run.json", 0o600)
    r = run(["sh", "-c", "cat /tests/run.json; echo x > /tests/run.json; touch /tests/new"],
            SandboxSpec(tests=tests))
    assert r.stdout_text == "{}", r
    assert r.stderr_text.count("Read-only file system") == 2, r.stderr_text
    assert sorted(os.listdir(tests)) == ["run.json"] and (tests / "run.json").read_text() == "{}"
    assert stat.S_IMODE(os.stat(tests).st_mode) == 0o700 and os.stat(tests / "run.json").st_uid == 0
