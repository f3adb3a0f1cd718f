"""What a generator produces: `TaskSpec`, pure data that `render` turns into a directory.

A spec carries everything a task needs — the template to render and its variables, the
starting workspace, the verifier's reference data, the gold solution, a null submission
and the adversarial submissions validation must see score 0 — plus lineage (source rows and
content hashes) and the keys splits are computed from.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

# Where a task's answer goes inside the workspace (`/app`).
ANSWER_FILE = "answer.txt"


@dataclass(frozen=True)
class Submission:
    """What a policy leaves behind: files written into the workspace before verification."""

    name: str
    files: dict[str, bytes] = field(default_factory=dict)
    description: str = ""


@dataclass
class SourceRef:
    """Lineage: the table and rows a task came from, with their content hashes."""

    table: str
    keys: list[str]
    content_hashes: list[str]


@dataclass
class TaskSpec:
    """One task before rendering. See the module docstring."""

    generator: str
    version: int
    source: SourceRef
    instruction_template: str
    context: dict[str, Any]
    reference: dict[str, Any]
    solution_files: dict[str, bytes]
    verifier: str
    group_key: str
    dedup_text: str
    null: Submission
    adversarial: list[Submission]
    workspace: dict[str, bytes] = field(default_factory=dict)
    tests_data: dict[str, bytes] = field(default_factory=dict)
    time: dt.datetime | None = None
    category: str = ""
    difficulty: str = "medium"
    keywords: list[str] = field(default_factory=list)
    agent_timeout_sec: float = 120.0
    verifier_timeout_sec: float = 60.0
    cpus: int = 1
    memory_mb: int = 1024
    kind: str = "answer"  # answer (single turn) | terminal (multi-turn, runs commands)
    secret_strings: list[str] = field(default_factory=list)
    leak_allowed: list[str] = field(default_factory=list)
    evidence_in_workspace: bool = False  # the workspace holds the data the answer comes from
    extra_metadata: dict[str, Any] = field(default_factory=dict)
    templates: list[str] = field(default_factory=list)
    # other groups whose material this task shows (an incident repair task's ticket): the
    # tasks of all of them land in one split
    related_groups: list[str] = field(default_factory=list)
    # the ticket's subject as `splits.subject_key` normalises it: tickets of one subject
    # land in one split (unless it is generic in the build)
    subject_key: str | None = None
    # a repair task's (repository, commit sha): the commit whose change is the answer; the
    # workspace is its parent. Splits keep every held-out fix out of train workspaces.
    fix: tuple[str, str] | None = None


@dataclass
class BuildContext:
    """What a generator is given: the database, the seed, its quota and its options."""

    con: duckdb.DuckDBPyConnection
    seed: int
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: told (done, total, note) as a generator works through slow candidates (`tick`)
    progress: Callable[[int, int | None, str], None] | None = field(default=None, repr=False)

    def tick(self, done: int, total: int | None = None, note: str = "") -> None:
        """Report how many candidates a slow generator has examined, of how many, and
        what came of them so far (`note`: "3 kept, 40 dropped")."""
        if self.progress is not None:
            self.progress(done, total, note)

    def rng(self, *keys: Any) -> random.Random:
        """A generator of random numbers for one item, fixed by the seed and the keys.

        Independent of iteration order, so adding a source row never changes other tasks.
        """
        h = hashlib.sha256(repr((self.seed, *keys)).encode()).digest()
        return random.Random(int.from_bytes(h[:8], "big"))


def stable_sample(items: list, k: int | None, seed: int, key) -> list:
    """The first k items in an order fixed by the seed and each item's key."""
    ranked = sorted(items, key=lambda it: hashlib.sha256(f"{seed}:{key(it)}".encode()).hexdigest())
    return ranked if k is None else ranked[:k]
