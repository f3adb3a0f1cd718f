"""One commit read back from its repository: the tree at its parent, and its changes split
into hidden test changes and the gold source diff.

File contents are not stored in DuckDB (ingest keeps only paths and counts), so they come
from the repository by sha: `git ls-tree` and `git cat-file --batch` give the parent tree
exactly (no export-ignore, no smudge filters), `git diff` the gold patch. Every call runs
with the user's and system git configuration switched off, so diff prefixes, colours or
external diff drivers cannot change the bytes a task is built from.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rlforge.ingest.gitbytes import has_stray_bytes, readable
from rlforge.verify.standalone.protect import is_protected, skipped_path

REGULAR = ("100644", "100755")
_CONFIG = ("-c", "core.quotepath=false", "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
           "-c", "color.ui=never", "-c", "core.autocrlf=false")


class GitError(Exception):
    """git failed on this repository (it moved, or the commit is gone)."""


def _git(repo: str | Path, *args: str, data: bytes | None = None) -> bytes:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
           "HOME": os.devnull}
    proc = subprocess.run(["git", *_CONFIG, "-C", str(repo), *args], input=data,
                          capture_output=True, env=env)
    if proc.returncode != 0:
        raise GitError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()[:300]}")
    return proc.stdout


def ls_tree(repo: str | Path, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob sha) of every entry of the tree at rev."""
    out = {}
    for entry in _git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, _kind, sha = meta.decode().split()
        out[path.decode("utf-8", "surrogateescape")] = (mode, sha)
    return out


def read_blobs(repo: str | Path, shas: list[str]) -> dict[str, bytes]:
    """Blob contents by sha, through one `git cat-file --batch`."""
    unique = sorted(set(shas))
    if not unique:
        return {}
    raw = _git(repo, "cat-file", "--batch", data=("\n".join(unique) + "\n").encode())
    out, pos = {}, 0
    for sha in unique:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split()
        if len(header) != 3:
            raise GitError(f"cat-file: no object {sha}")
        size = int(header[2])
        out[sha] = raw[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return out


@dataclass
class CommitSnapshot:
    """What a task is made of, read from the repository at one commit and its parent."""

    repo: str
    sha: str
    parent: str
    workspace: dict[str, bytes]              # the parent tree (regular files only)
    executable: set[str]                     # workspace paths with the executable bit
    hidden: dict[str, bytes]                 # test paths the commit adds or changes -> new content
    hidden_deleted: list[str]                # test paths the commit deletes
    gold_paths: list[str]                    # source paths the commit changes
    gold_diff: str                           # git diff of those paths (binary-safe)
    fixed: dict[str, bytes | None]           # gold paths -> content at the commit (None: deleted)
    unsupported: list[str] = field(default_factory=list)  # symlinks/submodules the fix touches
    skipped: list[str] = field(default_factory=list)      # parent entries left out (links, bytecode)
    # paths the commit changes whose names are not UTF-8 (readable form): a task's files
    # and manifests are text, so such a commit is no task
    unreadable: list[str] = field(default_factory=list)


def changed_paths(repo: str | Path, parent: str, sha: str) -> list[tuple[str, str]]:
    """(status letter, path) for each path that differs between parent and sha."""
    raw = _git(repo, "diff", "--name-status", "--no-renames", "-z", parent, sha).split(b"\0")
    out = []
    for i in range(0, len(raw) - 1, 2):
        out.append((raw[i].decode()[:1], raw[i + 1].decode("utf-8", "surrogateescape")))
    return out


def snapshot(repo: str | Path, sha: str, parent: str, rules: dict) -> CommitSnapshot:
    """Read a commit: split its changes by `is_protected(path, rules)` into hidden test
    changes and the gold diff, and take the parent tree as the starting workspace."""
    repo = str(repo)
    before, after = ls_tree(repo, parent), ls_tree(repo, sha)
    changes = changed_paths(repo, parent, sha)
    # A parent file whose name is not UTF-8 is left out of the workspace, as links are.
    workspace_entries = {p: e for p, e in before.items() if e[0] in REGULAR
                         and not skipped_path(p) and not has_stray_bytes(p)}
    skipped = sorted(readable(p) for p in before if p not in workspace_entries)
    unreadable = sorted(readable(p) for _, p in changes if has_stray_bytes(p))
    changes = [(status, p) for status, p in changes if not has_stray_bytes(p)]
    hidden_paths, hidden_deleted, gold, unsupported = [], [], [], []
    for status, path in changes:
        entry = after.get(path)
        if is_protected(path, rules):
            if entry is None:
                hidden_deleted.append(path)
            elif entry[0] in REGULAR:
                hidden_paths.append(path)
            else:
                unsupported.append(path)
        else:
            gold.append(path)
            for side in (before.get(path), entry):
                if side is not None and side[0] not in REGULAR:
                    unsupported.append(path)
    wanted = [e[1] for e in workspace_entries.values()]
    wanted += [after[p][1] for p in hidden_paths]
    wanted += [after[p][1] for p in gold if p in after and after[p][0] in REGULAR]
    blobs = read_blobs(repo, wanted)
    gold_diff = ""
    if gold:
        gold_diff = _git(repo, "diff", "--binary", "--full-index", "--no-renames", "--no-color",
                         "--no-ext-diff", "--no-textconv", parent, sha, "--",
                         *[f":(literal){p}" for p in sorted(gold)]).decode("utf-8", "surrogateescape")
    return CommitSnapshot(
        repo=repo, sha=sha, parent=parent,
        workspace={p: blobs[e[1]] for p, e in sorted(workspace_entries.items())},
        executable={p for p, e in workspace_entries.items() if e[0] == "100755"},
        hidden={p: blobs[after[p][1]] for p in sorted(hidden_paths)},
        hidden_deleted=sorted(hidden_deleted), gold_paths=sorted(gold), gold_diff=gold_diff,
        fixed={p: (blobs[after[p][1]] if p in after and after[p][0] in REGULAR else None)
               for p in sorted(gold)},
        unsupported=sorted(set(unsupported)), skipped=skipped, unreadable=unreadable)
