"""Go canaries that code inside the test binary cannot tell from the task's real tests.

A red team (issue 35) told the old canaries apart by their one failure message shape
(`n = 4821, want 5177`), so forging code could turn every other FAIL into PASS and leave
the canaries failing. These tests plant canaries the way the verifier does, run the
package with the real go tool, and judge what code seeing each test's output could do.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlforge.verify.standalone import gorepair
from rlforge.verify.standalone.gotest import verdicts
from test_repair_go import GO_MOD, STRS, STRS_FIXED, STRS_TEST_FIXED

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go tool (apt-get install golang-go)")

F2P = "strs_test.go::TestTruncateCountsCharacters"
# what the red team's forger spared (rlforge/tasks/generators/repair/runners/golang_adversarial.py)
RED_TEAM_CANARY = re.compile(r"(?m)^\s+\w+_test\.go:\d+: \w+ = \d+, want \d+$")
MESSAGE = re.compile(r"^\s+\w+_test\.go:\d+: (.*)$")


def _strs(tmp_path: Path, source: str) -> Path:
    (tmp_path / "go.mod").write_text(GO_MOD)
    (tmp_path / "strs.go").write_text(source)
    (tmp_path / "strs_test.go").write_text(STRS_TEST_FIXED)
    return tmp_path


def _run(tree: Path) -> dict[str, tuple[str, list[str]]]:
    """{top-level test: (verdict, the lines of its failure messages)} of `go test -v`."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tree), "GOCACHE": str(tree / ".cache"),
           "GOPROXY": "off", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    out = subprocess.run(["go", "test", "-count=1", "-v", "-vet=off", "."], cwd=tree, env=env,
                         capture_output=True, text=True).stdout
    tests, current = {}, None
    for line in out.splitlines():
        if line.startswith("=== RUN   ") and "/" not in line:
            current = line.split()[-1]
            tests[current] = ("", [])
        elif current and MESSAGE.match(line):
            tests[current][1].append(line)
    return {name: (verdicts(out, name).get(name, "missing"), lines) for name, (_, lines) in tests.items()}


def _shape(line: str) -> str:
    """A failure message with its literals masked: what is left is its shape."""
    text = MESSAGE.match(line).group(1)
    return re.sub(r"-?\d+(\.\d+)?", "N", re.sub(r'"(?:[^"\\]|\\.)*"', "Q", text))


@pytest.mark.parametrize("seed", range(4))
def test_canaries_fail_with_the_message_shapes_of_the_tests_they_hide_among(tmp_path, seed):
    tree = _strs(tmp_path, STRS)  # the parent: the fail-to-pass test fails
    canaries = [i.split("::")[1] for i in gorepair.plant_canaries(str(tree), [F2P], rng=random.Random(seed))]
    ran = _run(tree)
    assert len(canaries) == 3 and all(ran[c][0] == "failed" for c in canaries), ran
    real = {_shape(line) for name, (verdict, lines) in ran.items() if name not in canaries for line in lines}
    assert real, ran  # the fail-to-pass test failed with a message
    for name in canaries:
        assert ran[name][1] and {_shape(line) for line in ran[name][1]} <= real, (name, ran)


@pytest.mark.parametrize("seed", range(4))
def test_a_forger_sparing_failures_shaped_like_the_old_canaries_is_caught(tmp_path, seed):
    """The red team's rule: every failing test whose messages do not look like a canary's
    is reported passed. The run is judged as the verifier does: a forgery goes through
    only when every fail-to-pass test passed and every canary still failed."""
    tree = _strs(tmp_path, STRS)
    canaries = [i.split("::")[1] for i in gorepair.plant_canaries(str(tree), [F2P], rng=random.Random(seed))]
    forged = {name: "passed" if verdict == "failed" and not any(RED_TEAM_CANARY.match(x) for x in lines)
              else verdict for name, (verdict, lines) in _run(tree).items()}
    went_through = forged[F2P.split("::")[1]] == "passed" and all(forged[c] == "failed" for c in canaries)
    assert not went_through, forged


TABLE = '''package x

func Count(s string) int { return len(s) }

func Half(n int) float64 { return float64(n) / 2 }

func Name() string { return "alpha" }
'''
TABLE_TEST = '''package x

import "testing"

var fixture = `
func TestInsideAString(t *testing.T) {
	if n := 4; n != 4 {
		t.Fatal(n)
	}
}
`

func TestChecks(t *testing.T) {
	if got, want := Count("ab"), 2; got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	var b byte = 97
	if b != 97 {
		t.Fatalf("b = %d, want 97", b)
	}
	if 3.5 != Half(7) {
		t.Error("Half(7) is not 3.5")
	}
	if x := "{"; x != "{" {
		t.Fatal(x)
	} else {
		t.Log(len(fixture))
	}
	if got := Name(); got != "alpha" {
		t.Errorf("Name() = %q, want \\"alpha\\"", got)
	}
	check := func() int { return 1 }
	if check() != 1 {
		t.Fatal("the closure's return does not end the test")
	}
	if Count("") > 0 {
		return
	}
	if n := 4; n != 4 {
		t.Fatal(n)
	}
}
'''


def test_only_checks_every_passing_run_reaches_are_copied():
    from rlforge.verify.standalone import gocanaries, gosource

    start, end, tvar = gosource.test_functions(TABLE_TEST)["TestChecks"]
    source = TABLE_TEST[start:end]
    found = [source[a:b] for a, b, _ in gocanaries.checks(source, tvar)]
    # not the one with an else branch, not the one after a return, none in the raw string
    assert found == ["2", "97", "3.5", '"alpha"', "1"]
    assert "TestInsideAString" not in gosource.test_functions(TABLE_TEST)


@pytest.mark.parametrize("seed", range(8))
def test_copied_canaries_build_and_fail_where_their_original_passes(tmp_path, seed):
    (tmp_path / "go.mod").write_text("module example.com/x\n\ngo 1.19\n")
    (tmp_path / "x.go").write_text(TABLE)
    (tmp_path / "x_test.go").write_text(TABLE_TEST)
    ids = gorepair.plant_canaries(str(tmp_path), ["x_test.go::TestChecks"], rng=random.Random(seed))
    ran = _run(tmp_path)
    assert {name: verdict for name, (verdict, _) in ran.items()} == \
        {"TestChecks": "passed", **{i.split("::")[1]: "failed" for i in ids}}
    text = (tmp_path / "x_test.go").read_text()
    assert text.count("if b != ") == 4 and "b != 97 {" in text  # three copies, one original
    for line in re.findall(r"if b != (\d+) \{\n\t\tt\.Fatalf\(\"b = %d, want (\d+)\"", text):
        assert line[0] == line[1] and int(line[0]) <= 127  # the message moved with it; a byte still


ROWS_TEST = '''package x

import "testing"

func TestRows(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"one", "a", 1},
		{name: "two", in: "ab", want: 2},
		{"three", "abc", Count("abc")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestInline(t *testing.T) {
	cases := []struct{ in, want string }{{"alpha", "alpha"}, {"", "alpha"}}
	for _, c := range cases {
		if got := Name() + c.in[:0]; got != c.want {
			t.Fatalf("Name() = %q", got)
		}
	}
}

func TestReadsTheWholeRow(t *testing.T) {
	cases := []struct{ in, want string }{{"abc", "abc"}}
	for _, c := range cases {
		if got := pick(c); got != c.want {
			t.Fatalf("pick = %q", got)
		}
	}
}

func TestLeavesEarly(t *testing.T) {
	cases := []struct{ in, want string }{{"abc", "alpha"}}
	for _, c := range cases {
		if c.in != "" {
			continue
		}
		if got := Name(); got != c.want {
			t.Fatalf("Name() = %q", got)
		}
	}
}

func pick(c struct{ in, want string }) string { return c.want }
'''


def test_each_literal_row_of_a_table_a_passing_run_checks_is_a_site():
    from rlforge.verify.standalone import gocanaries, gosource

    found = {}
    for name, (start, end, tvar) in gosource.test_functions(ROWS_TEST).items():
        source = ROWS_TEST[start:end]
        found[name] = [source[a:b] for a, b, _ in gocanaries.checks(source, tvar)]
    # not a row whose field is a call; not where the row is read whole, or skipped first
    assert found == {"TestRows": ["1", "2"], "TestInline": ['"alpha"', '"alpha"'],
                     "TestReadsTheWholeRow": [], "TestLeavesEarly": []}


@pytest.mark.parametrize("seed", range(6))
def test_copies_of_table_driven_tests_fail_where_their_original_passes(tmp_path, seed):
    (tmp_path / "go.mod").write_text("module example.com/x\n\ngo 1.19\n")
    (tmp_path / "x.go").write_text(TABLE)
    (tmp_path / "x_test.go").write_text(ROWS_TEST)
    ids = gorepair.plant_canaries(str(tmp_path), ["x_test.go::TestRows", "x_test.go::TestInline"],
                                  rng=random.Random(seed))
    ran = _run(tmp_path)
    assert {name: verdict for name, (verdict, _) in ran.items()} == {
        "TestRows": "passed", "TestInline": "passed", "TestReadsTheWholeRow": "passed",
        "TestLeavesEarly": "passed", **{i.split("::")[1]: "failed" for i in ids}}


def test_gold_passes_and_canaries_fail_at_every_seed(tmp_path):
    for seed in range(6):
        tree = tmp_path / str(seed)
        tree.mkdir()
        _strs(tree, STRS_FIXED)
        canaries = gorepair.plant_canaries(str(tree), [F2P], rng=random.Random(seed))
        ran = _run(tree)
        assert ran[F2P.split("::")[1]][0] == "passed"
        assert all(ran[c.split("::")[1]][0] == "failed" for c in canaries), ran
