"""Which commits could be repair tasks: one SQL pass over `commits` and `commit_files`.

The window is each repository's `last` most recent commits (by commit time). Every commit
in it is either a candidate or rejected here with a reason, checked in this order: merge
commit, no test change, no source change, another language, binary file, too many files,
too many lines, message too short. Candidates then go through the build-time check
(checks.py), which has reasons of its own.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

# Files that may change alongside the source without making the commit another language's.
NEUTRAL_LANGUAGES = ("markdown", "rst", "toml", "yaml", "json")


@dataclass
class CommitRow:
    repo: str
    sha: str
    parent: str | None
    subject: str
    message: str
    committed_at: dt.datetime | None
    files_changed: int
    lines_changed: int
    n_test: int
    n_source: int
    n_binary: int
    other_languages: list[str]
    is_merge: bool


def window(con, last: int, repos: list[str] | None = None,
           language: str | Sequence[str] = "python") -> list[CommitRow]:
    """The commits considered: each repository's `last` newest (0 = all), newest first.
    `language`: the `commit_files.language` (or several) of source files: a change in one is
    a source change, in any other (but `NEUTRAL_LANGUAGES`) another language."""
    languages = [language] if isinstance(language, str) else list(language)
    rows = con.execute("""
        WITH ranked AS (
            SELECT *, row_number() OVER (PARTITION BY repo ORDER BY committed_at DESC, sha) AS age
            FROM commits
        )
        SELECT c.repo, c.sha, c.parents, c.subject, c.message, c.committed_at, c.files_changed,
               coalesce(c.lines_added, 0) + coalesce(c.lines_removed, 0),
               count(f.path) FILTER (WHERE f.is_test),
               count(f.path) FILTER (WHERE NOT f.is_test AND list_contains($languages, f.language)),
               count(f.path) FILTER (WHERE f.is_binary),
               list(DISTINCT f.language ORDER BY f.language) FILTER (
                   WHERE f.language IS NOT NULL AND NOT list_contains($languages, f.language)
                     AND f.language NOT IN (SELECT unnest($neutral::VARCHAR[]))),
               c.is_merge
        FROM ranked c LEFT JOIN commit_files f ON f.repo = c.repo AND f.sha = c.sha
        WHERE ($last = 0 OR c.age <= $last)
        GROUP BY ALL
        ORDER BY c.repo, c.committed_at DESC, c.sha
    """, {"languages": languages, "neutral": list(NEUTRAL_LANGUAGES), "last": last}).fetchall()
    out = []
    for r in rows:
        if repos and not any(r[0] == x or r[0].rstrip("/").rsplit("/", 1)[-1] == x for x in repos):
            continue
        parents = list(r[2] or [])
        out.append(CommitRow(r[0], r[1], parents[0] if parents else None, r[3] or "", r[4] or "",
                             r[5], r[6] or 0, r[7] or 0, r[8], r[9], r[10], list(r[11] or []), bool(r[12])))
    return out


def screen(row: CommitRow, *, max_files: int, max_lines: int, language: str,
           min_message_words: int) -> str | None:
    """Why a commit cannot be a task, judged from the database alone; None if it may."""
    if row.is_merge:
        return "merge commit"
    if row.n_test == 0:
        return "no test change"
    if row.n_source == 0:
        return f"no source change (no non-test {language} file)"
    if row.other_languages:
        return f"other language ({', '.join(row.other_languages)})"
    if row.n_binary:
        return "binary file changed"
    if row.files_changed > max_files:
        return f"too large ({row.files_changed} files, max {max_files})"
    if row.lines_changed > max_lines:
        return f"too large ({row.lines_changed} lines, max {max_lines})"
    if len(row.message.split()) < min_message_words:
        return f"message too short (fewer than {min_message_words} words)"
    if row.parent is None:
        return "no parent commit"
    return None
