"""The static gate of Go repair: what a submission's non-test code reaches of the test harness.

Go source read as tokens: imports resolved through their local names, nothing counted
inside comments or strings, directives counted, and only what goes beyond the parent's
code of the same package refused.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlforge.verify.standalone.goreach import beyond, file_reach, reach_of_files

HEAD = "package strs\n\n"


@pytest.mark.parametrize("source, reached", [
    ('import "os"\n\nfunc init() { os.Exit(0) }\n', ["os.Exit"]),
    ('import sys "os"\n\nfunc init() { sys.Stdout.WriteString("--- PASS: TestX (0.00s)") }\n',
     ["os.Stdout"]),
    ('import (\n\t. "os"\n\t"strings"\n)\n\nfunc init() { Exit(0) }\n', ["import . os"]),
    ('import (\n\t"fmt"\n\t"os/exec"\n)\n\nvar _ = exec.Command\nvar _ = fmt.Sprintf\n',
     ["import os/exec"]),
    ('import _ "unsafe"\n\n//go:linkname exit os.Exit\nfunc exit(int)\n',
     ["//go:linkname", "import unsafe"]),
    ('import "fmt"\n\nfunc init() { fmt.Println("--- PASS: TestX (0.00s)") }\n', ["fmt.Println"]),
    ('import "flag"\n\nfunc init() { _ = flag.CommandLine.Parse([]string{"-h"}) }\n', ["import flag"]),
    ('import "runtime/debug"\n\nfunc init() { debug.WriteHeapDump(1) }\n', ["import runtime/debug"]),
    ('import "os"; import "syscall"\n\nfunc init() { syscall.Exit(0) }\n', ["import syscall"]),
    ('import "embed"\n\n//go:embed strs_test.go\nvar src string\n', ["//go:embed", "import embed"]),
    # s50: cgi.Serve writes a verdict to stdout; pprof and expvar hand out os.Args (the
    # test's name) and function addresses
    ('import "net/http/cgi"\n\nvar _ = cgi.Serve\n', ["import net/http/cgi"]),
    ('import _ "net/http/pprof"\n', ["import net/http/pprof"]),
    ('import "expvar"\n\nvar _ = expvar.Get("cmdline")\n', ["import expvar"]),
])
def test_a_route_to_the_verdict_is_found_however_the_package_is_named(source, reached):
    assert file_reach(HEAD + source) == reached


@pytest.mark.parametrize("source, reached", [
    # a comment is white space to Go: the selector is still os.Exit
    ('import "os"\n\nfunc init() { os./**/Exit(0) }\n', ["os.Exit"]),
    ('import "os"\n\nfunc init() { os. /* x */ Stdout.WriteString("--- PASS") }\n', ["os.Stdout"]),
    # an import path spelled with escapes is the path the go tool decodes
    ('import "os\\x2fexec"\n\nvar _ = exec.Command\n', ["import os/exec"]),
    ('import "sys\\u0063all"\n\nfunc init() { syscall.Exit(0) }\n', ["import syscall"]),    # an alias of letters outside the Basic Multilingual Plane is a Go name too (s49)
    ('import \U0001d42c "syscall"\n\nfunc init() { \U0001d42c.Exit(0) }\n', ["import syscall"]),
    ('import (\n\t\U0001d42e "unsafe"\n\t"fmt"\n)\n\nvar _ = fmt.Sprint\n', ["import unsafe"]),
    # an import the scan cannot read refuses the file rather than ending the scan
    ('import \u2022 "syscall"\n', ["import \u2022"]),
])
def test_a_route_spelled_another_way_is_still_found(source, reached):
    # a red team's forgers (s48) wrote `os./**/Exit` and `"os\x2fexec"`: both built with Go
    # 1.19, and the scan saw neither
    assert file_reach(HEAD + source) == reached


def test_names_in_comments_strings_and_other_packages_reach_nothing():
    source = HEAD + ('import (\n\t"fmt"\n\t"os"\n)\n\n// os.Exit(0) and fmt.Println in a comment\n'
                     '/* import "os/exec" */\nvar s = "os.Exit(0) fmt.Print(x)"\nvar r = `os.Stdout`\n'
                     'var c = \'"\'\n\nfunc f(x struct{ os int }) string {\n'
                     '\treturn fmt.Sprintf("%d %s", x.os, os.Getenv("HOME"))\n}\n')
    assert file_reach(source) == []


def test_only_what_goes_beyond_the_parents_package_is_refused(tmp_path):
    parent = {"cmd/tool/main.go": HEAD.replace("strs", "main").encode()
              + b'import "os"\n\nfunc main() { os.Exit(2) }\n',
              "strs.go": HEAD.encode() + b"func Reverse(s string) string { return s }\n",
              "strs_test.go": HEAD.encode() + b'import "os"\n\nvar _ = os.Args\n',
              "vendor/x/x.go": b'package x\n\nimport "os"\n\nvar _ = os.Exit\n'}
    allowed = reach_of_files(parent)
    assert allowed == {"cmd/tool": ["os.Exit"]}
    for rel, data in parent.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert beyond(str(tmp_path), allowed) == []
    (tmp_path / "zz.go").write_text(HEAD + 'import "os"\n\nfunc init() { os.Exit(0) }\n')
    (tmp_path / "zz_amd64.s").write_text("TEXT ·f(SB),0,$0\n")
    (tmp_path / "cmd" / "tool" / "more.go").write_text(
        "package main\n\nimport \"os\"\n\nfunc exit() { os.Exit(0) }\n")
    assert beyond(str(tmp_path), allowed) == [".: file *.s", ".: os.Exit"]


def test_code_past_what_the_scan_reads_is_refused_whole(tmp_path, monkeypatch):
    from rlforge.verify.standalone import goreach

    monkeypatch.setattr(goreach, "MAX_FILE", 1000)
    padded = HEAD + "// " + "x" * 1200 + '\nimport "os"\n\nfunc init() { os.Exit(0) }\n'
    (tmp_path / "zz.go").write_text(padded)
    assert beyond(str(tmp_path), {}) == [".: file zz.go over 1000 bytes"]


REACHING = ["os.Exit(0)", "os.Stdout.Write(b)", "exec.Command(x)", "fmt.Print(x)"]


@given(st.lists(st.sampled_from(REACHING), min_size=1, max_size=4),
       st.lists(st.sampled_from(["// ", "/* ", '"', "`"]), min_size=1, max_size=4))
def test_calls_hidden_in_comments_or_strings_never_count_and_the_code_always_does(calls, wraps):
    imports = 'import (\n\t"fmt"\n\t"os"\n\t"os/exec"\n)\n\n'
    hidden = []
    for call, wrap in zip(calls, wraps * len(calls)):
        close = {"// ": "\n", "/* ": " */", '"': '"', "`": "`"}[wrap]
        hidden.append(f"var _ = {wrap}{call}{close}\n" if wrap in ('"', "`") else f"{wrap}{call}{close}\n")
    quiet = file_reach(HEAD + imports + "".join(hidden))
    assert quiet == ["import os/exec"]
    loud = file_reach(HEAD + imports + "".join(hidden) + "func init() {\n\t" + "\n\t".join(calls) + "\n}\n")
    want = {"exec.Command(x)": "import os/exec", "os.Exit(0)": "os.Exit",
            "os.Stdout.Write(b)": "os.Stdout", "fmt.Print(x)": "fmt.Print"}
    assert set(loud) == {"import os/exec"} | {want[c] for c in calls}
