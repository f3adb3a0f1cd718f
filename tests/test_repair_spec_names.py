"""A hidden test's names and defaults that nothing the policy sees shows (`python_names`).

The held-out audit's misses, each a class of defect, read from commits of real git
repositories made in `tmp_path` (workspace at the parent, the fix's files, the hidden test
as committed):

- the dict a test expects holds a key that neither the workspace nor the request shows:
  a correct solution storing it under another name fails, so the key is described (a
  name is interface, not an expected value: the description may show it, never the value);
- a new function's call relies on its defaults (a width, a marker text): a solution with
  other defaults fails, so each default a checked call leaves out is described unless the
  request states it; an unchanged default, or a call whose result nothing checks, asks
  for nothing.
"""

from __future__ import annotations

from pathlib import Path

from rlforge.tasks.generators.repair import spec
from rlforge.tasks.generators.repair.runners import get
from test_commits_repair import Repo

RUNNER = get("python")


def _derive(repo: Repo, sha: str, f2p: list[str]) -> spec.Derivation:
    """The runner's description of a commit's fail-to-pass tests, read from git."""
    def show(rev: str, rel: str) -> bytes:
        return repo.git("show", f"{rev}:{rel}").encode()

    parent = [p for p in repo.git("ls-tree", "-r", "--name-only", f"{sha}^").splitlines()]
    changed = repo.git("diff", "--name-only", f"{sha}^", sha).splitlines()
    hidden = {p: show(sha, p) for p in changed if RUNNER.is_test_file(p)}
    workspace = {p: show(f"{sha}^", p) for p in parent if p not in hidden}
    fixed: dict[str, bytes | None] = {p: show(sha, p) for p in changed if p not in hidden}
    derivation = RUNNER.behaviours(hidden, f2p, workspace, fixed)
    assert derivation is not None
    return derivation


FRAMES = '''def parse(text):
    """Frames of a traceback: each a dict of `file` and `line`."""
    frames = []
    for row in text.splitlines():
        if row.startswith("  File "):
            frames.append({"file": row.split('"')[1], "line": ""})
        elif row.startswith("    ") and frames:
            frames[-1]["line"] = row.strip()
    return frames
'''
FRAMES_FIXED = FRAMES.replace('''            frames[-1]["line"] = row.strip()''', '''            if set(row.strip()) <= set("^~"):
                frames[-1]["caret_mark"] = row.strip()
            else:
                frames[-1]["line"] = row.strip()''')
FRAMES_TEST = '''from tb.frames import parse

TRACE = """Traceback:
  File "a.py", line 1
    go(1)
    ^^^^^
"""


def test_parse_keeps_the_marks():
    """parse keeps the marker row under a source row"""
    assert parse(TRACE) == [{"file": "a.py", "line": "go(1)", "caret_mark": "^^^^^"}]


def test_parse_pairs_echo():
    assert parse(TRACE)[0]["file"] == "a.py"
'''


def test_a_key_the_expected_dict_holds_that_nothing_shows_is_described(tmp_path: Path):
    r = Repo(tmp_path / "tb")
    r.commit("Traceback frames", {"tb/__init__.py": "", "tb/frames.py": FRAMES,
                                  "tests/test_frames.py": "def test_nothing():\n    pass\n"})
    sha = r.commit("frames: keep the marker rows of a traceback",
                   {"tb/frames.py": FRAMES_FIXED, "tests/test_frames.py": FRAMES_TEST})
    derivation = _derive(r, sha, ["tests/test_frames.py::test_parse_keeps_the_marks"])
    verdict = spec.specify(derivation, "frames: keep the marker rows of a traceback\n")
    assert verdict.reason is None and verdict.stated == [False]
    [line] = verdict.lines
    assert "holds the key `caret_mark`" in line
    # A hidden literal of the test, but a name: the description may show it.
    assert "caret_mark" in derivation.literals and "caret_mark" in derivation.names
    # The keys the workspace shows, and the expected values, are not described.
    assert "`file`" not in line and "`line`" not in line
    assert "^^^^^" not in line and "go(1)" not in line
    # A request naming the key needs no line for it.
    named = spec.specify(derivation, "parse: keep the marker rows of a traceback in caret_mark\n")
    assert named.stated == [True] and named.lines == []


def test_a_key_the_test_also_compares_as_a_value_stays_hidden(tmp_path: Path):
    r = Repo(tmp_path / "tb")
    r.commit("Traceback frames", {"tb/__init__.py": "", "tb/frames.py": FRAMES})
    test = FRAMES_TEST + '''

def test_keys():
    assert sorted(parse(TRACE)[0]) == ["caret_mark", "file", "line"]
    assert parse(TRACE)[0] == {"file": "a.py", "line": "go(1)", "caret_mark": "^^^^^"}
'''
    sha = r.commit("frames: keep the marker rows", {"tb/frames.py": FRAMES_FIXED, "tests/test_frames.py": test})
    derivation = _derive(r, sha, ["tests/test_frames.py::test_keys"])
    verdict = spec.specify(derivation, "frames: keep the marker rows\n")
    assert verdict.reason == spec.SHOWS_LITERAL and verdict.lines == []
    assert "caret_mark" not in derivation.names


def test_a_key_echoed_from_the_tests_own_input_is_not_described(tmp_path: Path):
    r = Repo(tmp_path / "kv")
    r.commit("Pairs", {"kv/__init__.py": "def pairs(text):\n    return {}\n"})
    fixed = ("def pairs(text):\n    return dict(p.split('=', 1) for p in text.split(';') if p)\n")
    test = ('from kv import pairs\n\n\ndef test_pairs():\n'
            '    assert pairs("colour=red;size=xl") == {"colour": "red", "size": "xl"}\n')
    sha = r.commit("kv: read pairs", {"kv/__init__.py": fixed, "tests/test_kv.py": test})
    derivation = _derive(r, sha, ["tests/test_kv.py::test_pairs"])
    verdict = spec.specify(derivation, "kv: read pairs\n")
    assert all("holds the key" not in line for line in verdict.lines)
    assert derivation.names == frozenset()


CLIP = '''def clip(text, width=40, *, marker="»"):
    """Cut text at a space so that it fits in width, marker included."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - len(marker) + 1)
    return (text[:cut] if cut > 0 else text[:width - len(marker)]) + marker
'''
CLIP_TEST = '''import pytest

from textkit.clip import clip


def test_clip():
    assert clip("short") == "short"
    assert clip("one two three four", 10) == "one two»"
    text = "the wheels on the bus"
    for width in range(2, len(text)):
        assert len(clip(text, width)) <= width


def test_clip_needs_room():
    with pytest.raises(ValueError):
        clip("anything", 0)
'''


def test_the_defaults_a_checked_call_leaves_out_are_described(tmp_path: Path):
    r = Repo(tmp_path / "textkit")
    r.commit("textkit", {"textkit/__init__.py": "", "textkit/clip.py": "def noop():\n    return None\n"})
    sha = r.commit("textkit: add clip to shorten text at a word boundary",
                   {"textkit/clip.py": CLIP.replace('    if len(text)', '    if width <= len(marker):\n'
                                                    '        raise ValueError(width)\n    if len(text)'),
                    "tests/test_clip.py": CLIP_TEST})
    derivation = _derive(r, sha, ["tests/test_clip.py::test_clip", "tests/test_clip.py::test_clip_needs_room"])
    request = "textkit: add clip to shorten text at a word boundary, with a marker, raising ValueError\n"
    verdict = spec.specify(derivation, request)
    assert verdict.reason is None and verdict.stated == [False, False]
    first, second = verdict.lines
    assert "`clip` called without `marker` uses its default, `'»'`" in first
    assert "`clip` called without `width` uses its default, `40`" in first
    # A call whose result nothing checks relies on no default.
    assert "default" not in second
    # A request stating both defaults leaves only the raising test to describe... which it names.
    stated = spec.specify(derivation, request.strip() + "; width defaults to 40, marker to »\n")
    assert stated.stated[0] is True
    # One default stated, the other not: still described.
    half = spec.specify(derivation, request.strip() + "; width defaults to 40\n")
    assert half.stated[0] is False and "without `marker`" in half.lines[0]


def test_an_unchanged_default_asks_for_nothing(tmp_path: Path):
    r = Repo(tmp_path / "textkit")
    old = CLIP.replace("    if len(text) <= width:", "    if len(text) < width:")
    r.commit("textkit", {"textkit/__init__.py": "", "textkit/clip.py": old})
    sha = r.commit("clip: text exactly as long as the width is kept",
                   {"textkit/clip.py": CLIP, "tests/test_clip.py": CLIP_TEST})
    derivation = _derive(r, sha, ["tests/test_clip.py::test_clip"])
    verdict = spec.specify(derivation, "clip: text exactly as long as the width is kept\n")
    assert all("default" not in line for line in verdict.lines)


STAMP = '''import datetime


class Stamp:
    def __init__(self, text):
        self.when = datetime.datetime.fromisoformat(text)
'''


def test_an_attribute_the_fix_gives_is_described_a_library_values_is_not(tmp_path: Path):
    r = Repo(tmp_path / "stamps")
    r.commit("Stamps", {"stamps/__init__.py": "", "stamps/core.py": STAMP})
    fixed = STAMP + "        self.zone_name = self.when.tzname() or 'local'\n"
    test = ('from stamps.core import Stamp\n\n\ndef test_zone():\n'
            '    s = Stamp("2024-01-02T03:04:05.25+00:00")\n'
            '    assert s.zone_name == "UTC"\n    assert s.when.microsecond == 250000\n')
    sha = r.commit("stamps: name the time zone", {"stamps/core.py": fixed, "tests/test_core.py": test})
    derivation = _derive(r, sha, ["tests/test_core.py::test_zone"])
    [line] = spec.specify(derivation, "stamps: name the time zone\n").lines
    assert "reads the attribute `zone_name` of a project object" in line
    # `microsecond` is the datetime's, which the fix's source never gives: not the project's.
    assert "microsecond" not in line
