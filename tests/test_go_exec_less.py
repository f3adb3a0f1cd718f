"""A Go test process runs no program and reaches no /proc (`golaunch`), so forging a verdict
by re-running the test binary or by patching it in memory scores 0.

Real `go`, real Landlock and seccomp, real bubblewrap on the API path. The red team of
s48 forged 1.0 past the static gate (`goreach`) on every scoring path with two routes a
scan of tokens cannot close: net/http/cgi running a shell that re-ran the test binary, and
a shell rewriting the binary's exit status through /proc/<pid>/mem. Both are written here
afresh against the `strs` module of test_repair_go, with variants of our own; each scored
1 when a test process could still run programs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlforge.tasks.generators.repair.runners.golang_adversarial import cgi_forger
from rlforge.verify.standalone import golaunch
from rlforge.verify.standalone.gotest import launcher_python, run_go_tests
from rlforge.verify.standalone.policy_code import LocalPolicy
from test_repair_go import STRS_FIXED, _tasks, _verify, strs  # noqa: F401  (strs: a fixture)

pytestmark = [
    pytest.mark.skipif(shutil.which("go") is None, reason="needs the go tool (apt-get install golang-go)"),
    pytest.mark.skipif(golaunch.landlock_abi() < golaunch.MIN_ABI, reason="needs Landlock ABI 6"),
]

# Each test passes only when the route it tries is refused; the last one does ordinary work.
ROUTES_TEST = r"""package routes

import (
	"io"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func refusedToRun(t *testing.T, path string, args ...string) {
	t.Helper()
	if err := exec.Command(path, args...).Run(); err == nil {
		t.Fatalf("%s ran", path)
	}
}

func TestShell(t *testing.T) { refusedToRun(t, "/bin/sh", "-c", "exit 0") }

func TestOwnBinaryAgain(t *testing.T) {
	refusedToRun(t, "/proc/self/exe", "-test.run=^$")
	if self, err := os.Executable(); err == nil {
		refusedToRun(t, self, "-test.run=^$")
	}
	refusedToRun(t, os.Args[0], "-test.run=^$")
}

func TestCopiedProgram(t *testing.T) {
	dir := t.TempDir()
	for i, src := range []string{"/proc/self/exe", "/bin/sh"} {
		in, err := os.Open(src)
		if err != nil {
			continue
		}
		dst := filepath.Join(dir, strconv.Itoa(i))
		out, _ := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
		io.Copy(out, in)
		in.Close()
		out.Close()
		refusedToRun(t, dst, "-c", "exit 0")
	}
}

func TestMemfd(t *testing.T) {
	name := []byte("x\x00")
	if fd, _, errno := syscall.Syscall(319, uintptr(unsafe.Pointer(&name[0])), 0, 0); errno == 0 {
		t.Fatalf("memfd_create gave descriptor %d", fd)
	}
}

func execveat(fd int) syscall.Errno {
	empty := []byte{0}
	argv := []*byte{&[]byte("x\x00")[0], nil}
	env := []*byte{nil}
	_, _, errno := syscall.Syscall6(322, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&env[0])), 0x1000, 0)
	return errno
}

func TestExecveatOnAnyDescriptor(t *testing.T) {
	f, err := os.Open("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	raised := syscall.Rlimit{Cur: lim.Max + 4096, Max: lim.Max + 4096}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
		t.Fatalf("the open-file limit went past %d", lim.Max)
	}
	for _, target := range []int{int(lim.Cur), int(lim.Max), int(lim.Max) - 1, 1<<20 - 1} {
		if target > 2 && syscall.Dup2(int(f.Fd()), target) == nil && execveat(target) == 0 {
			t.Fatalf("execveat on descriptor %d ran", target)
		}
	}
	for fd := 0; fd < 64; fd++ {
		if execveat(fd) == 0 {
			t.Fatalf("execveat on descriptor %d ran", fd)
		}
	}
}

func TestProc(t *testing.T) {
	for _, path := range []string{"/proc/self/mem", "/proc/self/status", "/proc/self/cmdline",
		"/proc/" + strconv.Itoa(os.Getppid()) + "/mem", "/proc/1/environ"} {
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			f.Close()
			t.Fatalf("%s opened", path)
		}
		if f, err := os.Open(path); err == nil {
			f.Close()
			t.Fatalf("%s opened", path)
		}
	}
}

func TestPtrace(t *testing.T) {
	if err := syscall.PtraceAttach(os.Getppid()); err == nil {
		syscall.PtraceDetach(os.Getppid())
		t.Fatal("attached to the parent")
	}
}

func TestSignalOutside(t *testing.T) {
	if err := syscall.Kill(os.Getppid(), 0); err == nil {
		t.Fatal("the parent can be signalled")
	}
	other, _ := strconv.Atoi(os.Getenv("OTHER_PROCESS"))
	if err := syscall.Kill(other, syscall.SIGTERM); other <= 1 || err == nil {
		t.Fatalf("process %d was signalled", other)
	}
}

func TestOtherMemory(t *testing.T) {
	buf := make([]byte, 8)
	local := [2]uintptr{uintptr(unsafe.Pointer(&buf[0])), 8}
	remote := [2]uintptr{0x400000, 8}
	for _, nr := range []uintptr{310, 311} { // process_vm_readv, process_vm_writev
		_, _, errno := syscall.Syscall6(nr, uintptr(os.Getppid()), uintptr(unsafe.Pointer(&local)), 1,
			uintptr(unsafe.Pointer(&remote)), 1, 0)
		if errno == 0 {
			t.Fatalf("system call %d reached the parent's memory", nr)
		}
	}
}

func TestFork(t *testing.T) {
	for _, nr := range []uintptr{57, 58} { // fork, vfork: a child would return here too
		if pid, _, errno := syscall.RawSyscall(nr, 0, 0, 0); errno == 0 {
			if pid == 0 {
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
			}
			t.Fatalf("system call %d made process %d", nr, pid)
		}
	}
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 {
		if pid == 0 {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
		t.Fatalf("clone made process %d", pid)
	}
}

func TestNamespaces(t *testing.T) {
	if err := syscall.Unshare(syscall.CLONE_NEWUSER); err == nil {
		t.Fatal("a user namespace was made")
	}
}

func TestOwnSeccompFilter(t *testing.T) {
	// a filter that allows everything: harmless, but a filter of its own could hold an exit
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	type sockFprog struct {
		n      uint16
		_      [6]byte
		filter *sockFilter
	}
	allow := sockFilter{code: 0x06, k: 0x7fff0000}
	prog := sockFprog{n: 1, filter: &allow}
	if _, _, errno := syscall.RawSyscall(317, 1, 0, uintptr(unsafe.Pointer(&prog))); errno == 0 {
		t.Fatal("seccomp(SECCOMP_SET_MODE_FILTER) added a filter")
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 22, 2, uintptr(unsafe.Pointer(&prog))); errno == 0 {
		t.Fatal("prctl(PR_SET_SECCOMP) added a filter")
	}
}

func TestCgi(t *testing.T) {
	rec := httptest.NewRecorder()
	h := &cgi.Handler{Path: "/bin/sh", Args: []string{"-c", "printf 'Content-Type: text/plain\\r\\n\\r\\nran'"}}
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if strings.Contains(rec.Body.String(), "ran") {
		t.Fatal("net/http/cgi ran a shell")
	}
}

func TestOrdinaryWork(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "data" {
		t.Fatal(string(b), err)
	}
	if b, err := os.ReadFile("testdata/in.txt"); err != nil || string(b) != "input\n" {
		t.Fatal(string(b), err)
	}
}
"""
ROUTES = ["TestShell", "TestOwnBinaryAgain", "TestCopiedProgram", "TestMemfd", "TestExecveatOnAnyDescriptor",
          "TestProc", "TestPtrace", "TestSignalOutside", "TestOtherMemory", "TestFork", "TestNamespaces", "TestOwnSeccompFilter",
          "TestCgi", "TestOrdinaryWork"]


def test_a_go_test_process_can_run_no_program_and_reach_no_proc(tmp_path):
    # the policy runs as this uid (no uid to drop to): only the launcher keeps it in
    tree = tmp_path / "routes"
    (tree / "testdata").mkdir(parents=True)
    (tree / "go.mod").write_text("module example.com/routes\n\ngo 1.19\n")
    (tree / "routes_test.go").write_text(ROUTES_TEST)
    (tree / "testdata" / "in.txt").write_text("input\n")
    other = subprocess.Popen(["sleep", "120"])  # a process of this uid the tests must not signal
    try:
        run = run_go_tests(str(tree), None, policy=LocalPolicy(drop=False), env={"OTHER_PROCESS": str(other.pid)})
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
    assert run["collect_errors"] == []
    assert run["outcomes"] == {f"routes_test.go::{name}": "passed" for name in ROUTES}, run["log_tail"]


def test_the_probe_confirms_the_restrictions_and_refuses_a_weaker_host(tmp_path):
    python = launcher_python()
    ran = subprocess.run([python, "-I", "-S", golaunch.__file__, "--probe"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "ok\n"), ran.stderr
    # the same launcher, asked for an ABI this kernel does not have, refuses with the reason
    # and never runs the binary
    weaker = tmp_path / "launch.py"
    weaker.write_text(Path(golaunch.__file__).read_text().replace("MIN_ABI = 6", "MIN_ABI = 99"))
    ran = subprocess.run([python, "-I", "-S", str(weaker), "/bin/true", str(tmp_path)],
                         capture_output=True, text=True)
    assert ran.returncode == golaunch.EXIT_REFUSED
    assert "Landlock ABI" in ran.stderr and "needs 99" in ran.stderr


# The s48 attacks, written afresh: the cgi forger of the adversarial set (attack 4: exit
# status patched through /proc/$PPID/mem), and on its parts attack 3 (the shell re-runs
# the binary, os.Exit where the parent's code already called it) and a relay with no shell.
# (3) where the parent's code already ended the process itself (os.Exit allowed)
SHELL_RELAY_INIT = """
func init() {
	if os.Getenv("ZZ_AGAIN") != "" {
		return
	}
	real, status, ok := zzAgain()
	if !ok || status == "0" || zzCanary.MatchString(real) {
		return
	}
	zzServe(zzForged(real))
	os.Exit(0)
}
"""
# a variant without a shell: the test binary runs itself through /proc/self/exe as a CGI
# program (the child answers with a CGI header first), every test, and relays
SELF_RELAY_INIT = """
func init() {
	if os.Getenv("ZZ_AGAIN") != "" {
		zzServe("")
		return
	}
	rec := httptest.NewRecorder()
	h := &cgi.Handler{Path: "/proc/self/exe", Args: []string{"-test.v"}, Env: []string{"ZZ_AGAIN=1"}}
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	real := rec.Body.String()
	if !strings.Contains(real, "--- ") {
		return
	}
	var kept []string
	for _, block := range strings.Split(real, "=== RUN") {
		if zzCanary.MatchString(block) {
			kept = append(kept, block)
		} else {
			kept = append(kept, zzForged(block))
		}
	}
	zzServe(strings.Join(kept, "=== RUN"))
	os.Exit(0)
}
"""


MEMORY_PATCH_FORGER = cgi_forger("strs").decode()
SHELL_RELAY_FORGER = cgi_forger("strs", SHELL_RELAY_INIT).decode()
SELF_RELAY_FORGER = cgi_forger("strs", SELF_RELAY_INIT).decode()


def _verify_past_gate(task: Path, tmp_path: Path, files: dict[str, str],
                      reached: tuple[str, ...] = ("import net/http/cgi",)) -> dict:
    """Verify against a copy of the task whose parent's code (so says go_reach) already
    reached `reached` (net/http/cgi, which the gate refuses since s50; os.Exit, as the
    red team's calc repository did), so the forgers meet the launcher, not the gate."""
    copy = tmp_path / task.name
    shutil.copytree(task, copy, symlinks=True)
    ref_path = copy / "tests" / "reference.json"
    ref = json.loads(ref_path.read_text())
    ref.setdefault("go_reach", {}).setdefault(".", []).extend(reached)
    ref_path.write_text(json.dumps(ref))
    return _verify(copy, files)


@pytest.mark.parametrize("name", ["memory_patch", "shell_relay", "self_relay"])
def test_forging_by_running_programs_or_patching_memory_scores_zero(strs, tmp_path, name):  # noqa: F811
    task = _tasks(strs["out"])[0]
    if name == "memory_patch":
        result = _verify_past_gate(task, tmp_path, {"zz_compat.go": MEMORY_PATCH_FORGER})
    else:
        forger = SHELL_RELAY_FORGER if name == "shell_relay" else SELF_RELAY_FORGER
        result = _verify_past_gate(task, tmp_path, {"zz_compat.go": forger},
                                   ("import net/http/cgi", "os.Exit"))
    assert result["components"]["harness_untouched"]["value"] == 1, result  # past the static gate
    assert (result["total"], result["outcome"]) == (0.0, "fail"), result
    assert result["components"]["fail_to_pass"]["value"] == 0, result


def test_the_fix_still_passes_beside_code_that_tries_the_routes(strs, tmp_path):  # noqa: F811
    # the forger gives up when it cannot run anything, and the real tests decide
    result = _verify_past_gate(_tasks(strs["out"])[0], tmp_path,
                               {"strs.go": STRS_FIXED, "zz_compat.go": MEMORY_PATCH_FORGER})
    assert (result["total"], result["outcome"]) == (1.0, "pass"), result


def test_the_gate_refuses_the_cgi_forger_outright(strs):  # noqa: F811
    result = _verify(_tasks(strs["out"])[0], {"zz_compat.go": MEMORY_PATCH_FORGER})
    assert result["reason"] == "forging_code", result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
