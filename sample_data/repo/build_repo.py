#!/usr/bin/env python3
"""Build `dura`, the demo git repository, from the patches next to this file.

    python sample_data/repo/build_repo.py DEST          # build, print HEAD
    python sample_data/repo/build_repo.py DEST --table  # also print the commit table

`dura` is a small duration parser with a pytest suite and a history of features,
refactors, docs, a merge and bug fixes, some of which make good code-repair tasks
and some of which a task miner must reject (see history.toml and README.md).

The builder replays history.toml with the git CLI: each commit applies one patch with
`git apply` and commits it with the author, e-mail and date written in the manifest.
The user's git configuration is ignored, so the commit SHAs are the same on every
machine and every run. Standard library only (Python 3.11+ for tomllib).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
HISTORY = HERE / "history.toml"
_PERSON = re.compile(r"^(?P<name>[^<]+?)\s*<(?P<email>[^>]+)>$")
# Settings passed on every call, so that nothing from ~/.gitconfig or /etc/gitconfig
# (signing, hooks, line endings, default branch, merge behaviour) changes the result.
_CONFIG = ("commit.gpgsign=false", "tag.gpgsign=false", "core.autocrlf=false",
           "core.hooksPath=/dev/null", "init.defaultBranch=main", "merge.ff=true",
           "apply.whitespace=nowarn", "core.fileMode=true")


def load_history(path: Path = HISTORY) -> list[dict]:
    """The commits of history.toml, in the order they are replayed."""
    with open(path, "rb") as fh:
        commits = tomllib.load(fh)["commit"]
    for c in commits:
        if ("patch" in c) == ("merge" in c):
            raise ValueError(f"{c['id']}: needs exactly one of 'patch' or 'merge'")
    return commits


class Git:
    """Runs git in one repository with a clean, fixed environment."""

    def __init__(self, repo: Path, scratch: Path):
        self.repo = repo
        self.base_env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(scratch),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "TZ": "UTC",
        }

    def __call__(self, *args: str, who: str | None = None, when: str | None = None) -> str:
        env = dict(self.base_env)
        if who:
            m = _PERSON.match(who)
            if not m:
                raise ValueError(f"not 'Name <email>': {who!r}")
            for role in ("AUTHOR", "COMMITTER"):
                env[f"GIT_{role}_NAME"] = m["name"]
                env[f"GIT_{role}_EMAIL"] = m["email"]
                env[f"GIT_{role}_DATE"] = when or ""
        cmd = ["git"]
        for setting in _CONFIG:
            cmd += ["-c", setting]
        proc = subprocess.run(cmd + list(args), cwd=self.repo, env=env, text=True,
                              capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed:\n{proc.stderr.strip()}")
        return proc.stdout.strip()


def build(dest: Path, history: list[dict] | None = None) -> list[str]:
    """Create the repository at `dest` (absent or empty) and return the SHA of each
    manifest entry, in manifest order."""
    history = load_history() if history is None else history
    dest = Path(dest).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    shas = []
    with tempfile.TemporaryDirectory(prefix="dura-build-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "template").mkdir()  # an empty template: no sample hooks copied in
        git = Git(dest, scratch)
        git("init", "-q", f"--template={scratch / 'template'}", "-b", "main")
        branches = {"main"}
        current = "main"
        for c in history:
            message_file = scratch / "message.txt"
            message_file.write_text(c["message"], encoding="utf-8")
            branch = c.get("branch", "main")
            if branch != current:
                if branch in branches:
                    git("checkout", "-q", branch)
                else:
                    git("checkout", "-q", "-b", branch, "main")
                    branches.add(branch)
                current = branch
            if "merge" in c:
                git("merge", "-q", "--no-ff", "--no-commit", c["merge"],
                    who=c["author"], when=c["date"])
            else:
                git("apply", "--index", str(HERE / c["patch"]))
            git("commit", "-q", "--cleanup=verbatim", "-F", str(message_file),
                who=c["author"], when=c["date"])
            shas.append(git("rev-parse", "HEAD"))
        if current != "main":
            git("checkout", "-q", "main")
    return shas


def commit_table(history: list[dict], shas: list[str]) -> str:
    """The Markdown table of README.md: sha prefix, kind, subject, expected F2P tests."""
    rows = ["| # | sha | kind | subject | expected fail-to-pass tests (fixes) |",
            "|---|---|---|---|---|"]
    for n, (c, sha) in enumerate(zip(history, shas), 1):
        subject = c["message"].splitlines()[0].replace("|", "\\|")
        f2p = c.get("fail_to_pass")
        if f2p is None:
            tests = ""
        elif f2p:
            tests = "<br>".join(f"`{t.split('::', 1)[1]}`" for t in f2p)
        else:
            tests = "none: " + ", ".join(f"`{t.split('::', 1)[1]}` passes at parent"
                                         for t in c.get("tests_added", []))
        rows.append(f"| {n} | `{sha[:8]}` | {c['kind']} | {subject} | {tests} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path, help="directory to create (must be absent or empty)")
    ap.add_argument("--table", action="store_true", help="print the commit table too")
    args = ap.parse_args(argv)
    try:
        shas = build(args.dest)
    except (FileExistsError, RuntimeError, ValueError) as err:
        print(f"build_repo: {err}", file=sys.stderr)
        return 1
    print(f"built {args.dest} with {len(shas)} commits, HEAD {shas[-1]}")
    if args.table:
        print(commit_table(load_history(), shas))
    return 0


if __name__ == "__main__":
    sys.exit(main())
