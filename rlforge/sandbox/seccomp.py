"""A small seccomp filter for sandboxed code, generated here as classic BPF bytes.

Namespaces do not isolate everything:

* Kernel keyrings are keyed by the *host* uid. When rlforge runs as root, sandboxed code
  maps to host uid 0 and could read root's session and user keyrings.
* Files the sandbox writes into the workspace land on the host, owned by the host uid the
  sandbox maps to (root, when rlforge runs as root). A `chmod u+s` there would leave a
  setuid-root program on the host for anyone who can reach the directory.
* The command is pid 1 of the sandbox and dies with bubblewrap through its parent-death
  signal (SIGKILL). If it could reset that signal, killing rlforge outright would leave it
  running; so PR_SET_PDEATHSIG is allowed only with SIGKILL.
* bpf, perf_event_open, userfaultfd and io_uring are large kernel attack surfaces that
  test suites do not need.

This filter makes those calls fail with EPERM (chmod-family calls only when they set the
setuid or setgid bit); everything else is allowed. bubblewrap loads it (`--seccomp`) right
before running the command.
"""

from __future__ import annotations

import errno
import platform

# The classic-BPF assembler the Go test launcher carries (it is copied alone beside test
# binaries, so the one copy lives there, standard library only).
from rlforge.verify.standalone.golaunch import assemble

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6]
_OFFSET_ARCH = 4
_OFFSET_ARGS = 16  # the low 32 bits of args[i] are at 16 + 8 * i (little-endian)
_X32_SYSCALL_BIT = 0x40000000
_SETID_BITS = 0o6000  # S_ISUID | S_ISGID
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9

BLOCKED = ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd",
           "io_uring_setup", "io_uring_enter", "io_uring_register")
MODE_CHECKED = ("chmod", "fchmod", "fchmodat", "fchmodat2")

# Per audit arch: numbers of BLOCKED (in order), (number, index of the mode argument) of
# MODE_CHECKED (chmod does not exist on aarch64), and prctl's number. A 64-bit kernel
# also accepts its 32-bit ABI, so both tables go into the filter.
_TABLES: dict[str, list[tuple[int, tuple[int, ...], tuple[tuple[int, int], ...], int]]] = {
    "x86_64": [
        (0xC000003E, (248, 249, 250, 321, 298, 323, 425, 426, 427),  # AUDIT_ARCH_X86_64
         ((90, 1), (91, 1), (268, 2), (452, 2)), 157),
        (0x40000003, (286, 287, 288, 357, 336, 374, 425, 426, 427),  # AUDIT_ARCH_I386
         ((15, 1), (94, 1), (306, 2), (452, 2)), 172),
    ],
    "aarch64": [
        (0xC00000B7, (217, 218, 219, 280, 241, 282, 425, 426, 427),  # AUDIT_ARCH_AARCH64
         ((52, 1), (53, 2), (452, 2)), 167),
        (0x40000028, (309, 310, 311, 386, 364, 388, 425, 426, 427),  # AUDIT_ARCH_ARM
         ((15, 1), (94, 1), (333, 2), (452, 2)), 172),
    ],
}


def _arch_section(n: int, blocked: tuple[int, ...], mode_checked: tuple[tuple[int, int], ...],
                  prctl: int, x32_check: bool) -> list[tuple]:
    """Instructions for one arch: the syscall number decides allow, deny, or an argument test."""
    deny, allow = f"deny{n}", f"allow{n}"
    body: list[tuple] = [(_LD_W_ABS, 0, 0, _OFFSET_NR)]
    if x32_check:
        body.append((_JGE_K, deny, 0, _X32_SYSCALL_BIT))
    body += [(_JEQ_K, deny, 0, nr) for nr in blocked]
    body += [(_JEQ_K, 0, f"chmods{n}", prctl),  # prctl(PR_SET_PDEATHSIG, sig): only SIGKILL
             (_LD_W_ABS, 0, 0, _OFFSET_ARGS),
             (_JEQ_K, 0, allow, _PR_SET_PDEATHSIG),
             (_LD_W_ABS, 0, 0, _OFFSET_ARGS + 8),
             (_JEQ_K, allow, deny, _SIGKILL),
             ("label", f"chmods{n}")]
    for i, (nr, arg) in enumerate(mode_checked):
        body += [(_JEQ_K, 0, f"next{n}.{i}", nr),
                 (_LD_W_ABS, 0, 0, _OFFSET_ARGS + 8 * arg),
                 (_JSET_K, deny, allow, _SETID_BITS),
                 ("label", f"next{n}.{i}")]
    body += [("label", allow), (_RET_K, 0, 0, _RET_ALLOW),
             ("label", deny), (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    return body


def supported(machine: str | None = None) -> bool:
    """Whether a filter can be built for this machine's architecture."""
    return (machine or platform.machine()) in _TABLES


def filter_bytes(machine: str | None = None) -> bytes:
    """The BPF program (an array of `struct sock_filter`) for bubblewrap's `--seccomp`.

    Raises:
        ValueError: the architecture has no syscall table here.
    """
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise ValueError(f"no seccomp syscall table for architecture {machine!r}")
    program: list[tuple] = [(_LD_W_ABS, 0, 0, _OFFSET_ARCH)]
    for n, (arch, blocked, mode_checked, prctl) in enumerate(_TABLES[machine]):
        program.append((_JEQ_K, 0, f"arch{n + 1}", arch))
        program += _arch_section(n, blocked, mode_checked, prctl, x32_check=(arch == 0xC000003E))
        program.append(("label", f"arch{n + 1}"))
    program.append((_RET_K, 0, 0, _RET_ALLOW))
    return assemble(program)
