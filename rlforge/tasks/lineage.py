"""Repair tasks across splits: a repair task's workspace is its repository at the fix's
parent, so it holds every earlier fix of that history. If an earlier fix is a validation
or test task while a later commit's task is in train, training shows the answer to a held-
out task. Here: which fixes each task's workspace holds (from the stored commit graph),
the split of a repository's repair tasks by their order in history (earliest train,
latest test), and the check a build fails on when a train workspace holds a held-out fix.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

import duckdb

from rlforge.errors import UserError

Fix = tuple[str, str]  # (repository, commit sha)


def fixes_in_workspaces(con: duckdb.DuckDBPyConnection, fixes: Sequence[Fix]
                        ) -> dict[Fix, set[str]]:
    """For each fix, the shas of the other given fixes of its repository that its
    workspace (the commit's parents and all their ancestors) holds."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for repo, sha in fixes:
        wanted[repo].add(sha)
    out: dict[Fix, set[str]] = {}
    for repo, shas in wanted.items():
        parents = {sha: list(ps or ()) for sha, ps in con.execute(
            "SELECT sha, parents FROM commits WHERE repo = ?", [repo]).fetchall()}
        memo: dict[str, frozenset[str]] = {}

        def held(sha: str) -> frozenset[str]:
            """Fixes among `shas` that are `sha` or its ancestors (iterative, no recursion)."""
            stack = [sha]
            while stack:
                top = stack[-1]
                if top in memo:
                    stack.pop()
                    continue
                todo = [p for p in parents.get(top, ()) if p not in memo]
                if todo:
                    stack.extend(todo)
                    continue
                acc = set({top} & shas)
                for p in parents.get(top, ()):
                    acc |= memo[p]
                memo[top] = frozenset(acc)
                stack.pop()
            return memo[sha]

        for sha in shas:
            inside: set[str] = set()
            for p in parents.get(sha, ()):
                inside |= held(p)
            out[(repo, sha)] = inside
    return out


def split_in_history_order(fixes: Sequence[Fix], order: Mapping[Fix, tuple],
                           ratios: tuple[float, float, float]) -> dict[Fix, str]:
    """Each repository's fixes cut by their place in `order` (commit time, then sha): the
    earliest `ratios[0]` train, then validation, the latest test."""
    by_repo: dict[str, list[Fix]] = defaultdict(list)
    for f in dict.fromkeys(fixes):
        by_repo[f[0]].append(f)
    out = {}
    for members in by_repo.values():
        members.sort(key=lambda f: order[f])
        n = len(members)
        for i, f in enumerate(members):
            x = (i + 0.5) / n
            out[f] = "train" if x < ratios[0] else "val" if x < ratios[0] + ratios[1] else "test"
    return out


def leaks(splits: Mapping[Fix, str], inside: Mapping[Fix, set[str]]) -> list[tuple[Fix, Fix]]:
    """(train task's fix, held-out fix its workspace holds) for every such pair."""
    found = []
    for fix, split in sorted(splits.items()):
        if split != "train":
            continue
        for sha in sorted(inside.get(fix, ())):
            other = (fix[0], sha)
            if splits.get(other, "train") != "train":
                found.append((fix, other))
    return found


def check(splits: Mapping[Fix, str], inside: Mapping[Fix, set[str]]) -> None:
    """Raise when a train task's workspace holds a validation or test task's fix."""
    found = leaks(splits, inside)
    if found:
        (repo, sha), (_, held) = found[0]
        raise UserError(
            f"{len(found)} train repair task(s) start from a workspace that holds a held-out "
            f"task's fix (e.g. {repo}@{sha[:12]} holds {held[:12]}, a {splits[(repo, held)]} "
            "task): the split would teach the answer; split repair tasks by history "
            "(--split-by hash does) or move the --cutoff")
