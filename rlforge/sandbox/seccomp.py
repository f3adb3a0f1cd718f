"""A small seccomp filter for sandboxed code, generated here as classic BPF bytes.

Namespaces do not isolate everything. Kernel keyrings are keyed by the *host* uid: when
rlforge runs as root, sandboxed code maps to uid 0 on the host and could read root's
session and user keyrings. A few other syscalls (bpf, perf_event_open, userfaultfd,
io_uring) are large kernel attack surfaces that test suites do not need. This filter makes
all of them fail with EPERM; everything else is allowed. bubblewrap loads it (`--seccomp`)
right before running the command.
"""

from __future__ import annotations

import errno
import platform
import struct

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; ...
_OFFSET_ARCH = 4
_X32_SYSCALL_BIT = 0x40000000

BLOCKED = ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd",
           "io_uring_setup", "io_uring_enter", "io_uring_register")

# Syscall numbers per audit arch, in the order of BLOCKED. A 64-bit kernel also accepts
# its 32-bit ABI, so both tables go into the filter.
_TABLES: dict[str, list[tuple[int, tuple[int, ...]]]] = {
    "x86_64": [
        (0xC000003E, (248, 249, 250, 321, 298, 323, 425, 426, 427)),  # AUDIT_ARCH_X86_64
        (0x40000003, (286, 287, 288, 357, 336, 374, 425, 426, 427)),  # AUDIT_ARCH_I386
    ],
    "aarch64": [
        (0xC00000B7, (217, 218, 219, 280, 241, 282, 425, 426, 427)),  # AUDIT_ARCH_AARCH64
        (0x40000028, (309, 310, 311, 386, 364, 388, 425, 426, 427)),  # AUDIT_ARCH_ARM
    ],
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _arch_section(numbers: tuple[int, ...], x32_check: bool) -> list[bytes]:
    """Load the syscall number; deny the listed ones (and x32 calls); allow the rest."""
    checks = ([_X32_SYSCALL_BIT] if x32_check else []) + list(numbers)
    body = [_insn(_LD_W_ABS, 0, 0, _OFFSET_NR)]
    for i, nr in enumerate(checks):
        to_deny = len(checks) - i  # skip the remaining checks and the ALLOW
        body.append(_insn(_JGE_K if x32_check and i == 0 else _JEQ_K, to_deny, 0, nr))
    body.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    body.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
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
    program = [_insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH)]
    for arch, numbers in _TABLES[machine]:
        section = _arch_section(numbers, x32_check=(arch == 0xC000003E))
        program.append(_insn(_JEQ_K, 0, len(section), arch))
        program.extend(section)
    program.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(program)
