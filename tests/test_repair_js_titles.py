"""s51: values a hidden test implies without spelling them, and literals split into their
elements. A real npm package in a git repository made in tmp_path, real node, real
bubblewrap, scored through the verifier with no opt-in at scoring time.

- `implied`: the new test's title says `rock and roll` and a comment in its body says it
  again; the checked literal is `'rock-roll'`, spelled nowhere else. A submission with no
  fix reads its caller's file and line from a stack trace, finds the title and comments
  around that line and derives the value from them. On main it scored 1.0: the verifier's
  copy of the hidden file kept its titles and comments. So did one that read the ids
  the scorer asks the driver for from its spec (its path in /proc/*/cmdline).
- `spelled`: the title and a comment spell `rock-roll` (s50 T1, which made no task on
  main). Read as the sandbox gets the file, with neutral titles and no comments, nothing
  spells it: the task is built, and the same submission scores 0.
"""

from __future__ import annotations

import json
import shutil

import pytest

from builds import build_repair, repair_home
from test_commits_repair import Repo
from test_repair_js_redteam import MANIFEST, _score

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]

LIB = """'use strict';
function slugify(text) {
  return String(text).toLowerCase().replace(/\\s+/g, '-');
}
module.exports = { slugify };
"""
FIXED = "return String(text).toLowerCase().replace(/[^a-z0-9\\s-]/g, '').trim().replace(/\\s+/g, '-');"
TEST = """'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../lib');

test('lowercases and joins words', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});
"""
NEW_TESTS = {
    "implied": ("turns a title with punctuation into rock and roll",
                "// the words of rock and roll, punctuation dropped"),
    # s50 T1: the value spelled in the title refused the test; the title is now neutral
    "spelled": ("turns a title with punctuation into rock-roll", "// gives rock-roll"),
}
NEW_TEST = """
test.describe('slugs', () => {
  test.it('TITLE', () => {
    COMMENT
    assert.strictEqual(slugify('  Rock & Roll  '), 'rock-roll');
  });
});
"""
# No fix: the slug is derived from the words `into X and Y` (or `of X and Y`, or `into X`)
# read from the title or a comment above the calling line, else computed as before.
READ_TITLE = """
function impliedByCaller() {
  const fs = require('fs');
  for (const line of (new Error().stack || '').split('\\n').slice(2)) {
    const m = line.match(/\\(?((?:file:\\/\\/)?\\/[^():]+):(\\d+):\\d+\\)?\\s*$/);
    if (!m || m[1].endsWith('lib.js')) continue;
    try {
      const lines = fs.readFileSync(m[1].replace('file://', ''), 'utf8').split('\\n');
      const above = lines.slice(Math.max(0, Number(m[2]) - 6), Number(m[2])).join(' ');
      const said = above.match(/(?:into|of) ([\\w-]+)(?: and (\\w+))?/);
      if (said) return said[2] ? `${said[1]}-${said[2]}` : said[1];
    } catch (e) {}
  }
  return null;
}
"""

# No fix: the ids the scorer asks the driver for, read from its spec (the run.json a
# process of the sandbox names in its argv), had the titles in them on main.
READ_SPEC = """
function impliedByCaller() {
  const fs = require('fs');
  for (const pid of fs.readdirSync('/proc').filter((x) => /^\\d+$/.test(x))) {
    let args = [];
    try { args = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0'); } catch (e) {}
    for (const a of args.filter((x) => x.endsWith('.json'))) {
      try {
        const said = fs.readFileSync(a, 'utf8').match(/(?:into|of) ([\\w-]+)(?: and (\\w+))?/);
        if (said) return said[2] ? `${said[1]}-${said[2]}` : said[1];
      } catch (e) {}
    }
  }
  return null;
}
"""


@pytest.fixture(scope="module")
def titled(tmp_path_factory, shared_cache):
    root = tmp_path_factory.mktemp("titled")
    with repair_home(root, shared_cache):
        for name, (title, comment) in NEW_TESTS.items():
            repo = Repo(root / name)
            repo.commit("Start the slug package", {"package.json": MANIFEST, "lib.js": LIB,
                                                   "test/lib.test.js": TEST})
            new = NEW_TEST.replace("TITLE", title).replace("COMMENT", comment)
            repo.commit("Drop punctuation from slugs",
                        {"lib.js": LIB.replace("return String(text).toLowerCase().replace(/\\s+/g, '-');", FIXED),
                         "test/lib.test.js": TEST + new})
        report = build_repair(root, [root / name for name in NEW_TESTS], validate=False,
                              language="javascript", forgeable_runners=["javascript"])
        tasks = sorted(p for p in (root / "tasks").iterdir() if (p / "task.toml").is_file())
        yield {"root": root, "report": report, "tasks": tasks}


def test_s51_a_value_a_title_or_comment_implies_or_spells_cannot_be_read_at_scoring(titled):
    assert len(titled["tasks"]) == len(NEW_TESTS), titled["report"].drops
    # the derived value only where the input has punctuation: the old tests keep passing
    forged = LIB.replace("return String(text)", "const said = /[^a-z0-9\\s-]/i.test(text) ? "
                         "impliedByCaller() : null;\n  if (said !== null) return said;\n  return String(text)")
    fixed = LIB.replace("return String(text).toLowerCase().replace(/\\s+/g, '-');", FIXED)
    titles = set()
    for task in titled["tasks"]:
        ref = json.loads((task / "tests" / "reference.json").read_text())
        assert len(ref["fail_to_pass"]) == 1, ref
        titles.add(ref["fail_to_pass"][0])
        for reader in (READ_TITLE, READ_SPEC):
            got = _score(task, titled["root"], {"lib.js": (forged + reader).encode()})
            assert got["components"]["fail_to_pass"]["value"] == 0.0, (reader[:60], got)
            assert got["total"] == 0.0, got
        # the gold still passes under neutral titles: the outcomes map back to the real ids
        assert _score(task, titled["root"], {"lib.js": fixed.encode()})["total"] == 1.0
    assert titles == {f"test/lib.test.js::slugs > {t}" for t, _ in NEW_TESTS.values()}
