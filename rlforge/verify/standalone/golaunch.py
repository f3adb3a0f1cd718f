"""The launcher of a Go test binary: after it, the test process can run no program and reach no /proc.

A Go test shares its process with the submission's code, and the static gate (`goreach`)
is a list of routes: a red team forged verdicts past it by running programs (a shell
started by `net/http/cgi` re-ran the test binary and relayed a rewritten verdict) and by
writing the test binary's code through `/proc/<pid>/mem`. This launcher closes both at
the kernel, the same way on every scoring path (rlforge's sandbox, Harbor's test.sh):

    python3 -I -S launch.py BINARY DIR [TEST ARGS...]   run the test binary in DIR
    python3 -I -S launch.py --probe                     check the restrictions hold here

1. the binary is copied into an anonymous memory file (memfd), which is moved to the
   highest descriptor number the process may hold (N), close-on-exec; then the limit of
   open files (soft and hard) is lowered to N, so no later descriptor can be N again;
2. Landlock (ABI 6 or later) allows every access but execution beneath each top-level
   directory except /proc (so /proc/self/mem, /proc/<pid>/mem and every other /proc file
   stay closed: nothing is allowed beneath /proc or / itself), and scopes signals and
   abstract unix sockets to the test's own processes;
3. a seccomp filter makes `execve` fail, and `execveat` fail unless its descriptor is N;
   a new process (fork, vfork, clone without CLONE_THREAD; clone3, whose flags a filter
   cannot read, is "not implemented" so Go falls back to clone) fails, threads do not;
   memfd_create, ptrace, process_vm_*, pidfd_getfd, raising limits, io_uring, namespaces,
   mounts and a seccomp filter of the test's own fail too; 32-bit and x32 system calls end the process;
4. `execveat(N, "", AT_EMPTY_PATH)` starts the test binary, which closes N on the way.

After that no descriptor N can exist, so no program runs (not the test binary again
either, by /proc/self/exe or by a path), no copy of the process runs beside it (a forked
child that ran the real test while its parent waited to relay the verdict), and no file
under /proc opens. Landlock and the
filter stay with every process the test starts. The binary remains readable to itself
(through its own mapping), as it was before.

`--probe` applies the same restrictions to itself and checks that an exec, a memfd and
/proc are refused; it prints `ok` only then. A host without Landlock ABI 6, seccomp or
x86-64 cannot run Go tests this way: the verifier refuses to score there (never a weaker
sandbox), and the task builder makes no Go tasks there.

Standard library only, no sibling imports: it is copied beside the test binaries and run
by path inside the policy's sandbox.
"""

import ctypes
import errno
import os
import platform
import resource
import struct
import sys

MIN_ABI = 6
EXIT_REFUSED = 125
# x86-64 system call numbers
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
SYS_EXECVEAT = 322
SYS_CLONE, SYS_CLONE3 = 56, 435
SYS_PRCTL = 157
DENIED = {
    "execve": 59, "memfd_create": 319, "memfd_secret": 447, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
    "setrlimit": 160, "prlimit64": 302, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "userfaultfd": 323, "bpf": 321, "perf_event_open": 298,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "open_by_handle_at": 304, "fsopen": 430, "fsmount": 432, "fspick": 433,
    "open_tree": 428, "move_mount": 429, "mount_setattr": 442, "add_key": 248,
    "request_key": 249, "keyctl": 250, "uselib": 134, "personality": 135, "fork": 57, "vfork": 58,
    "seccomp": 317,  # no filter of the test's own: one could hold or refuse an exit
}
CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
CLONE_THREAD = 0x10000
AT_EMPTY_PATH = 0x1000
MFD_CLOEXEC, MFD_EXEC = 0x1, 0x10
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000
RET_KILL_PROCESS, RET_ALLOW, RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
# Landlock file system rights (linux/landlock.h) and the ABI that brought them
FS_EXECUTE = 1 << 0
FS_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # exec, write, read, truncate, ioctl
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
             5: (1 << 16) - 1}
SCOPES = (1 << 0) | (1 << 1)  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL
RULE_PATH_BENEATH = 1


class Refused(Exception):
    """The restrictions cannot be applied on this host."""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _call(libc, nr, *args):
    got = libc.syscall(ctypes.c_long(nr), *args)
    if got < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return got


def landlock_abi(libc=None):
    """The Landlock ABI version the kernel offers (0: none)."""
    if platform.machine() != "x86_64":
        return 0
    try:
        return _call(libc or _libc(), SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                     ctypes.c_uint32(1))
    except OSError:
        return 0


def _procfs_mounts():
    """Mount points of proc file systems (read before /proc closes)."""
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "proc":
                    out.append(left.split(" ")[4].encode().decode("unicode_escape"))
    except OSError:
        pass
    return out


def _landlock(libc, abi):
    """Restrict this (single-threaded) process: no execution anywhere, nothing under /proc."""
    handled = FS_BY_ABI.get(abi, FS_BY_ABI[5])
    for mount in _procfs_mounts():
        if mount != "/proc" and not mount.startswith("/proc/"):
            raise Refused(f"a proc file system is mounted at {mount}, not only at /proc")
    attr = struct.pack("=QQQ", handled, 0, SCOPES)
    ruleset = _call(libc, SYS_LANDLOCK_CREATE_RULESET, ctypes.c_char_p(attr),
                    ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    try:
        for name in sorted(os.listdir("/")):
            path = "/" + name
            real = os.path.realpath(path)
            if real == "/" or real == "/proc" or real.startswith("/proc/"):
                continue
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rights = handled & ~FS_EXECUTE
                if not os.path.isdir(path):
                    rights &= FS_FILE_RIGHTS
                rule = struct.pack("=Qi", rights, fd)
                _call(libc, SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                      ctypes.c_char_p(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise Refused("prctl(PR_SET_NO_NEW_PRIVS) failed")
        _call(libc, SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def assemble(program):
    """Classic BPF bytes of `program`: (code, jt, jf, k) instructions, where jt and jf are
    offsets or the name of a label, placed by a ("label", name) entry before the
    instruction it names. rlforge's bubblewrap filter (`rlforge.sandbox.seccomp`) is
    assembled here too."""
    labels, pc = {}, 0
    for ins in program:
        if ins[0] == "label":
            labels[ins[1]] = pc
        else:
            pc += 1
    out, pc = [], 0
    for ins in program:
        if ins[0] == "label":
            continue
        code, jt, jf, k = ins
        jt = labels[jt] - pc - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - pc - 1 if isinstance(jf, str) else jf
        out.append(struct.pack("=HBBI", code, jt, jf, k))
        pc += 1
    return b"".join(out)


def filter_program(exec_fd):
    """The seccomp filter (classic BPF bytes): see the module docstring, step 3."""
    program = [(LD_W_ABS, 0, 0, 4), (JEQ_K, 1, 0, AUDIT_ARCH_X86_64), (RET_K, 0, 0, RET_KILL_PROCESS),
               (LD_W_ABS, 0, 0, 0), (JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, RET_KILL_PROCESS)]
    program += [(JEQ_K, "deny", 0, nr) for nr in sorted(DENIED.values())]
    program += [(JEQ_K, "prctl", 0, SYS_PRCTL),
                (JEQ_K, "execveat", 0, SYS_EXECVEAT), (JEQ_K, "clone", 0, SYS_CLONE),
                (JEQ_K, 0, "allow", SYS_CLONE3),
                (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),  # clone3's flags are out of reach
                ("label", "prctl"), (LD_W_ABS, 0, 0, 16),  # prctl(PR_SET_SECCOMP, ...) is seccomp(2)
                (JEQ_K, "deny", "allow", PR_SET_SECCOMP),
                ("label", "execveat"), (LD_W_ABS, 0, 0, 16),  # the descriptor (an int)
                (JEQ_K, "allow", "deny", exec_fd),
                ("label", "clone"), (LD_W_ABS, 0, 0, 16),  # threads only: no process, no namespace
                (JSET_K, "deny", 0, CLONE_NAMESPACES),
                (JSET_K, "allow", "deny", CLONE_THREAD),
                ("label", "allow"), (RET_K, 0, 0, RET_ALLOW),
                ("label", "deny"), (RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    return assemble(program)


def _seccomp(libc, exec_fd):
    code = filter_program(exec_fd)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = struct.pack("=HxxxxxxQ", len(code) // 8, ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(prog), 0, 0) != 0:
        raise Refused(f"the seccomp filter was refused: {os.strerror(ctypes.get_errno())}")


def _exec_slot():
    """The descriptor number the binary goes to: the highest one allowed now; the limit is
    then lowered below it (returns it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > 1 << 20:
        hard = 1 << 20
    if hard < 64:
        raise Refused(f"the open-file limit ({hard}) is too low")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard - 1


def restrict(binary=None):
    """Apply every restriction to this process; the descriptor holding `binary` (None when
    probing). Raises Refused when the host cannot."""
    if platform.machine() != "x86_64":
        raise Refused(f"no seccomp table for {platform.machine()}")
    libc = _libc()
    abi = landlock_abi(libc)
    if abi < MIN_ABI:
        raise Refused(f"Landlock ABI {abi} (needs {MIN_ABI}: Linux 6.12 or later with landlock "
                      "in the lsm= list)")
    slot = _exec_slot()
    if binary is not None:
        try:
            mem = os.memfd_create("rlforge-test", MFD_CLOEXEC | MFD_EXEC)
        except OSError:
            mem = os.memfd_create("rlforge-test", MFD_CLOEXEC)
        with open(binary, "rb") as src:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                os.write(mem, chunk)
        os.dup2(mem, slot, inheritable=False)
        os.close(mem)
    resource.setrlimit(resource.RLIMIT_NOFILE, (slot, slot))
    _landlock(libc, abi)
    _seccomp(libc, slot)
    return slot, libc


def run(binary, directory, args):
    """Restrict, then become the test binary (never returns unless it fails)."""
    os.chdir(directory)
    slot, libc = restrict(binary)
    argv = [os.fsencode(a) for a in ["test", *args]]
    env = [os.fsencode(f"{k}={v}") for k, v in os.environ.items()]
    c_argv = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    c_env = (ctypes.c_char_p * (len(env) + 1))(*env, None)
    _call(libc, SYS_EXECVEAT, ctypes.c_int(slot), ctypes.c_char_p(b""), c_argv, c_env,
          ctypes.c_int(AT_EMPTY_PATH))


def _refused(action):
    try:
        action()
    except OSError as exc:
        return exc.errno in (errno.EPERM, errno.EACCES)
    return False


def probe():
    """Restrict this process and check that exec, memfd and /proc are refused; the lines to print."""
    restrict(None)
    checks = {
        "exec": lambda: os.execv("/bin/sh", ["/bin/sh", "-c", "exit 0"]),
        "memfd": lambda: os.close(os.memfd_create("x", MFD_CLOEXEC)),
        "proc": lambda: os.close(os.open("/proc/self/status", os.O_RDONLY)),
        "proc-mem": lambda: os.close(os.open("/proc/self/mem", os.O_RDWR)),
    }
    failed = [name for name, action in checks.items() if not _refused(action)]
    if failed:
        raise Refused(f"not refused under the restrictions: {', '.join(failed)}")
    return "ok"


def main(argv):
    try:
        if argv[:1] == ["--probe"]:
            print(probe(), flush=True)
            return 0
        if len(argv) < 2:
            print("usage: launch.py BINARY DIR [ARGS...] | --probe", file=sys.stderr)
            return 2
        run(argv[0], argv[1], argv[2:])
    except (Refused, OSError) as exc:
        print(f"rlforge-golaunch: {exc}", file=sys.stderr, flush=True)
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
