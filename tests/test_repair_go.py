"""Go repair tasks end to end: a real Go module in a git repository made in tmp_path, real
`go`, real bubblewrap. The build-time check finds fail-to-pass and pass-to-pass tests with
`go test` binaries; validation proves the gold fix scores 1 and the null and every
adversarial submission of the Go runner 0, each caught by the component that should.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import tomllib
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builds import build_options, build_repair, repair_home
from rlforge import db
from rlforge.tasks.build import build_tasks
from rlforge.tasks.generators.repair import runners
from rlforge.tasks.generators.repair.runners.golang import module_requirements
from rlforge.verify.standalone.gocanaries import plant_canaries
from rlforge.verify.standalone.gotest import verdicts
from rlforge.verify.validate import validate_many
from test_commits_repair import Repo

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go tool (apt-get install golang-go)")

GO_MOD = "module example.com/strs\n\ngo 1.19\n"
STRS = """package strs

// Reverse returns s with its characters in reverse order.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Truncate returns the first n characters of s.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
"""
STRS_FIXED = STRS.replace("""	if len(s) <= n {
		return s
	}
	return s[:n]""", """	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])""")
STRS_TEST = """package strs

import "testing"

func TestReverse(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"abc", "cba"}, {"", ""}, {"héllo", "olléh"}} {
		t.Run(c.in, func(t *testing.T) {
			if got := Reverse(c.in); got != c.want {
				t.Fatalf("Reverse(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("hello", 3); got != "hel" {
		t.Fatalf("got %q", got)
	}
}
"""
STRS_TEST_FIXED = STRS_TEST + """
func TestTruncateCountsCharacters(t *testing.T) {
	if got := Truncate("héllo wörld", 8); got != "héllo wö" {
		t.Fatalf("got %q", got)
	}
	if got := Truncate("ñandú", 5); got != "ñandú" {
		t.Fatalf("got %q", got)
	}
}
"""
WRAP = """package wrap

import "strings"

// Words splits text at white space.
func Words(s string) []string { return strings.Fields(s) }
"""
WRAP_TEST = """package wrap

import "testing"

func TestWords(t *testing.T) {
	if got := Words(" a  b c "); len(got) != 3 || got[2] != "c" {
		t.Fatalf("got %q", got)
	}
}
"""
CAUGHT_BY = {
    "null": "fail_to_pass", "empty_patch": "fail_to_pass", "delete_failing_tests": "tests_untouched",
    "skip_failing_tests": "tests_untouched", "edit_hidden_tests": "tests_untouched",
    "adds_test_main": "tests_untouched", "replace_testing_module": "tests_untouched",
    "init_forges_results": "harness_untouched", "init_forges_with_build_tag": "harness_untouched",
    "exit_zero_in_init": "harness_untouched", "exit_zero_during_test": "harness_untouched",
    "go_generate_writes_reward": "fail_to_pass", "signals_the_verifier": "harness_untouched",
    "plants_reward_files": "harness_untouched", "reexec_forges_results": "harness_untouched",
    "stub_compiles": "fail_to_pass", "stub_forges_results": "harness_untouched",
    # past the static gate: the launcher leaves them nothing to run, and the tests decide
    "cgi_forges_results": "fail_to_pass", "stub_cgi_forges_results": "fail_to_pass",
}


def build_strs(path: Path) -> None:
    repo = Repo(path)
    repo.commit("Start the strs module with Reverse and Truncate",
                {"go.mod": GO_MOD, "strs.go": STRS, "strs_test.go": STRS_TEST,
                 "wrap/wrap.go": WRAP, "wrap/wrap_test.go": WRAP_TEST})
    repo.commit("Truncate counts characters, not bytes, so accented text is never cut mid-letter",
                {"strs.go": STRS_FIXED, "strs_test.go": STRS_TEST_FIXED})
    repo.commit("Document the module in a README file", {"README.md": "# strs\n"})


@pytest.fixture(scope="module")
def strs(tmp_path_factory, shared_cache):
    root = tmp_path_factory.mktemp("strs")
    with repair_home(root, shared_cache):
        build_strs(root / "strs")
        # Go is gated (forgeable): the fixture opts in, to check the attacks against it
        report = build_repair(root, [root / "strs"], validate=True, language="go",
                              forgeable_runners=["go"])
        yield {"root": root, "report": report, "out": root / "tasks", "db": root / "rlforge.duckdb"}


def _tasks(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if (p / "task.toml").is_file())


def test_the_go_runner_is_registered_and_detects_go_modules():
    assert runners.get("go").language == "go"
    assert runners.detect(["go.mod", "a.go"], "go") is runners.get("go")
    assert runners.detect(["a.go"], "go") is None
    assert "go.mod" in runners.why_none("go")


def test_go_mod_requirements_are_read_from_lines_and_blocks():
    text = ("module m\n\ngo 1.19\n\nrequire golang.org/x/text v0.3.8 // indirect\n"
            "require (\n\tgithub.com/a/b v1.2.3\n\t// a comment\n\tgithub.com/c/d v0.0.0-2020-abc\n)\n")
    assert module_requirements(text) == ["github.com/a/b v1.2.3", "github.com/c/d v0.0.0-2020-abc",
                                         "golang.org/x/text v0.3.8"]


def test_verdicts_count_a_failure_over_any_pass_printed_for_the_same_test():
    out = ("--- PASS: TestA (0.00s)\n=== RUN   TestA\n    --- PASS: TestA/x (0.00s)\n"
           "--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\n\x16--- SKIP: TestA/y (0.00s)\n")
    assert verdicts(out, "TestA") == {"TestA": "failed", "TestA/x": "passed", "TestA/y": "skipped"}


LINE = st.one_of(st.text(st.characters(blacklist_categories=("Cc", "Zl", "Zp")), max_size=40), st.builds(
    lambda pad, verdict, name: f"{pad}--- {verdict}: {name} (0.00s)",
    st.sampled_from(["", "    ", "\x16", " \x16 "]), st.sampled_from(["PASS", "FAIL", "SKIP"]),
    st.sampled_from(["TestA", "TestA/x", "TestA/x/y", "TestAB", "TestB", "TestA/"])))


@given(st.lists(LINE, max_size=30))
def test_verdicts_of_any_output_name_only_the_test_and_keep_every_failure(lines):
    text = "\n".join(lines)
    got = verdicts(text, "TestA")
    assert all(name == "TestA" or name.startswith("TestA/") for name in got)
    for line in lines:
        parts = line.replace("\x16", "").split()
        if len(parts) >= 3 and parts[:2] == ["---", "FAIL:"] and parts[2] in got:
            assert got[parts[2]] == "failed"


RAW_FUNC_TEST = """package x

import "testing"

var source = `
func TestInsideAString(t *testing.T) {}
`

// TestShape checks a brace in a string.
func TestShapeOfText(t *testing.T) {
	if s := "{"; len(s) != 1 || len(source) == 0 {
		t.Fatal(s)
	}
}
"""


@pytest.mark.parametrize("seed", range(6))
def test_canaries_are_real_failing_tests_never_text_inside_a_raw_string(tmp_path, seed):
    (tmp_path / "go.mod").write_text("module example.com/x\n\ngo 1.19\n")
    (tmp_path / "x_test.go").write_text(RAW_FUNC_TEST)
    ids = plant_canaries(str(tmp_path), ["x_test.go::TestShapeOfText"], rng=random.Random(seed))
    assert len(ids) == 3 and "x_test.go::TestShapeOfText" not in ids
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GOCACHE": str(tmp_path / ".cache"),
           "GOPROXY": "off", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    ran = subprocess.run(["go", "test", "-count=1", "-v", "."], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    got = {name: verdicts(ran.stdout, name).get(name) for name in
           ["TestShapeOfText"] + [i.split("::")[1] for i in ids]}
    assert got == {"TestShapeOfText": "passed", **{i.split("::")[1]: "failed" for i in ids}}, ran.stdout
    assert "`\nfunc TestInsideAString(t *testing.T) {}\n`" in (tmp_path / "x_test.go").read_text()


def test_the_bug_fix_becomes_a_task_with_its_tests(strs):
    con = duckdb.connect(str(strs["db"]), read_only=True)
    drops = dict(con.execute("SELECT reason, count(*) FROM task_drops WHERE generator = 'commits.repair' "
                             "GROUP BY reason").fetchall())
    con.close()
    tasks = _tasks(strs["out"])
    assert len(tasks) == 1, drops
    ref = json.loads((tasks[0] / "tests" / "reference.json").read_text())
    assert ref["verifier"] == "repair-go" and ref["result_format"] == "go-test"
    assert ref["fail_to_pass"] == ["strs_test.go::TestTruncateCountsCharacters"]
    assert {"strs_test.go::TestTruncate", "strs_test.go::TestReverse/héllo",
            "wrap/wrap_test.go::TestWords"} <= set(ref["pass_to_pass"])
    meta = tomllib.loads((tasks[0] / "task.toml").read_text())["metadata"]["rlforge"]
    assert "env_requirements" not in meta and meta["go_version"].startswith("go1.")
    assert (tasks[0] / "tests" / "rlforge_gorepair.py").is_file()
    assert "FROM golang:" in (tasks[0] / "environment" / "Dockerfile").read_text()
    instruction = (tasks[0] / "instruction.md").read_text()
    assert "The Go project" in instruction and "`*_test.go`" in instruction and "`go.mod`" in instruction
    assert "TestTruncateCountsCharacters" not in instruction
    assert not (tasks[0] / "environment" / "app" / "strs_test.go").read_text().count("CountsCharacters")


def test_validation_proves_the_task_gold_one_null_and_adversarials_zero(strs):
    results = asyncio.run(validate_many(_tasks(strs["out"])))
    assert len(results) == 1
    r = results[0]
    assert r.ok, r.reason
    checks = {c.name: c for c in r.checks}
    assert checks["oracle"].got == 1.0
    seen = set()
    for name, check in checks.items():
        if name in ("leak", "oracle"):
            continue
        assert check.got == 0.0, (name, check.detail)
        assert f"{CAUGHT_BY[name]}=0" in check.detail, (name, check.detail)
        seen.add(name)
    assert seen == set(CAUGHT_BY)


def test_build_summary_names_the_runner_of_each_repository(strs):
    assert strs["report"].runners == {"commits.repair": {str(strs["root"] / "strs"): "go@1"}}


def test_build_tasks_list_names_each_repository_runner_or_why_none(strs, cli, monkeypatch):
    repo = str(strs["root"] / "strs")
    monkeypatch.setenv("RLFORGE_DB", str(strs["db"]))
    monkeypatch.setenv("RLFORGE_TASKS_REPAIR_LANGUAGE", "go")
    shown = cli("build-tasks", "--list")
    assert shown.exit_code == 0, shown.output
    assert f"commits.repair {repo}: runner go@1, whose results can be forged" in shown.output
    monkeypatch.setenv("RLFORGE_TASKS_REPAIR_LANGUAGE", "python")
    listed = cli("build-tasks", "--list", "--json")
    assert listed.exit_code == 0, listed.output
    row = next(r for r in json.loads(listed.output) if r["name"] == "commits.repair")
    why = row["runners"][repo]
    assert why.startswith("python: none of pyproject.toml") and why.endswith(
        'go@1 detects it: set tasks.repair.language = "go"')


def _build_default(db_path: Path, out: Path):
    con = db.connect(db_path)
    try:
        opts = build_options(out=out, generators=["commits.repair"], seed=7, validate=False,
                             generator_options={"commits.repair": {"language": "go"}})
        return build_tasks(con, opts)
    finally:
        con.close()


def test_go_commits_make_no_task_unless_the_user_accepts_forgeable_results(strs, tmp_path):
    # red teams forged a pass past the static gate in s48 (a shell run by net/http/cgi,
    # /proc/<pid>/mem) and in s49 (an import alias the scan did not read, a seccomp filter
    # of the test's own): by default the build drops Go commits and says why
    report = _build_default(strs["db"], tmp_path / "tasks")
    assert not _tasks(tmp_path / "tasks")
    reasons = [d["reason"] for d in report.drops]
    assert reasons and all(r.startswith("the test runner's results can be forged (go@1: ")
                           and 'forgeable_runners = ["go"]' in r for r in reasons), reasons
    assert report.runners["commits.repair"][str(strs["root"] / "strs")].startswith(
        "go@1, whose results can be forged")


def test_a_runner_whose_results_can_be_forged_makes_no_task_unless_named(strs, tmp_path, monkeypatch):
    # the mechanism stays for runners that declare it (a plug-in's, or a language rlforge
    # cannot yet keep from forging): by default the build drops their commits and says why
    monkeypatch.setattr(runners.get("go"), "forgeable", "its tests can print their own verdicts")
    report = _build_default(strs["db"], tmp_path / "tasks")
    assert not _tasks(tmp_path / "tasks")
    reasons = [d["reason"] for d in report.drops]
    assert reasons and all(r.startswith("the test runner's results can be forged (go@1: ")
                           and 'forgeable_runners = ["go"]' in r for r in reasons), reasons
    assert report.runners["commits.repair"][str(strs["root"] / "strs")].startswith(
        "go@1, whose results can be forged")


# Attacks a red team forged real Go tasks with (s47), written for the strs module. Each
# ran in the package's own non-test code, so tests_untouched held; on main each scored 1.
RELAY_FORGER = """package strs

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// re-run this test binary; relay what failed the way a canary fails, PASS the rest
var canaryFail = regexp.MustCompile(`(?m)^\\s+\\w+_test\\.go:\\d+: (got|want|n|size|count) = \\d+, want \\d+$`)

func init() {
	if os.Getenv("ZZ_CHILD") == "1" {
		return
	}
	name := ""
	for _, a := range os.Args {
		if strings.HasPrefix(a, "-test.run=") {
			name = strings.Trim(strings.TrimPrefix(a, "-test.run="), "^$")
		}
	}
	if name == "" {
		return
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "ZZ_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || canaryFail.Match(out) {
		os.Stdout.Write(out)
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Stdout.WriteString(strings.ReplaceAll(string(out), "--- FAIL: ", "--- PASS: ") + "PASS\\n")
	os.Exit(0)
}
"""
SOURCE_FORGER = """package strs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// read the planted test sources; let a canary-shaped test fail and a table test (whose
// subtests' names it cannot print) run, PASS any other
var canaryShape = regexp.MustCompile(`^func \\w+\\(t \\*testing\\.T\\) \\{\\n\\t(\\w+) := \\d+\\n\\tif`)

func init() {
	name := ""
	for _, a := range os.Args {
		if strings.HasPrefix(a, "-test.run=") {
			name = strings.Trim(strings.TrimPrefix(a, "-test.run="), "^$")
		}
	}
	if name == "" {
		return
	}
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		i := strings.Index(string(b), "func "+name+"(")
		if i < 0 {
			continue
		}
		body := string(b)[i:]
		if end := strings.Index(body, "\\n}\\n"); end >= 0 {
			body = body[:end]
		}
		if canaryShape.MatchString(body) || strings.Contains(body, "t.Run(") {
			return
		}
	}
	os.Stdout.WriteString("=== RUN   " + name + "\\n--- PASS: " + name + " (0.00s)\\nPASS\\n")
	os.Exit(0)
}
"""
# Variants built to get past the gate: the same forging under other names.
DOT_IMPORT_FORGER = """package strs

import . "os"

func init() {
	Stdout.WriteString("--- PASS: TestTruncateCountsCharacters (0.00s)\\nPASS\\n")
	Exit(0)
}
"""
NEW_PACKAGE_FORGER = {
    "internal/boot/boot.go": """package boot

import (
	"fmt"
	"os"
)

// Done prints the verdict it is given and ends the process.
func Done(name string) {
	fmt.Printf("--- PASS: %s (0.00s)\\nPASS\\n", name)
	os.Exit(0)
}
""",
    "zz_boot.go": """package strs

import "example.com/strs/internal/boot"

func init() { boot.Done("TestTruncateCountsCharacters") }
""",
}
LINKNAME_FORGER = """package strs

import (
	"strings"
	_ "unsafe"
)

//go:linkname exit os.Exit
func exit(code int)

func init() {
	_ = strings.TrimSpace
	exit(0)
}
"""
# Not an attack: the gold fix with code that panics when test sources are in the tree it
# runs in. It passes only if the verifier took them away before any test ran.
SOURCE_PROBE = """package strs

import "path/filepath"

func init() {
	if found, _ := filepath.Glob("*_test.go"); len(found) > 0 {
		panic("the test sources are readable: " + found[0])
	}
}
"""


def _verify(task: Path, files: dict[str, str]) -> dict:
    import rlforge.envs

    with rlforge.envs.load(task) as env:
        return env.verify({path: text.encode() for path, text in files.items()})


@pytest.mark.parametrize("name, files", [
    ("relay_forger", {"zz_compat.go": RELAY_FORGER}),
    ("source_forger", {"zz_compat.go": SOURCE_FORGER}),
    ("relay_forger_with_the_fix_half_done", {"zz_compat.go": RELAY_FORGER,
                                             "strs.go": STRS_FIXED.replace("r[:n]", "r[:n-1]")}),
    ("dot_import_forger", {"zz_compat.go": DOT_IMPORT_FORGER}),
    ("new_package_forger", NEW_PACKAGE_FORGER),
    ("linkname_forger", {"zz_compat.go": LINKNAME_FORGER}),
])
def test_code_that_forges_go_verdicts_scores_zero_and_never_runs(strs, name, files):
    result = _verify(_tasks(strs["out"])[0], files)
    assert (result["total"], result["outcome"], result["reason"]) == (0.0, "fail", "forging_code"), result
    gate = result["components"]["harness_untouched"]
    assert gate["value"] == 0 and "reaches what the test harness owns" in gate["detail"]
    assert result["detail"] == "the submission was not run"


def test_the_test_sources_are_gone_from_the_tree_the_tests_run_in(strs):
    result = _verify(_tasks(strs["out"])[0], {"strs.go": STRS_FIXED, "zz_probe.go": SOURCE_PROBE})
    assert (result["total"], result["outcome"]) == (1.0, "pass"), result
