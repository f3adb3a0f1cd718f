"""Dataset versions of a build-tasks output, and what changed between two of them.

A company's records keep coming, so `build-tasks` runs again over a database that gained
rows. Each build that changes the set of tasks records a **version** of its `--out` in the
database: a row of `dataset_versions` (number, content hash, build id, time, how many tasks
were rendered, kept and retired) and the snapshot of its active tasks in
`dataset_version_tasks`. The output directory itself holds only the tasks and their
manifest, so two builds of the same inputs stay byte-identical trees.

The content hash is the SHA-256 of the sorted `task_id split template_hash` lines of the
active tasks; a task id is itself a hash of the task's rendered files, so equal hashes mean
the same dataset. A build whose result hashes as the latest version records none.

`manifest.parquet` lists the active tasks (`status` = active) and, after them, every task
an earlier build had and this one does not (`status` = retired, `retired_in` the version
that dropped it, `retired_by` the task that replaced it when its source record changed):
a changed record gives a task with a new id, and the old one stays on record instead of
being silently overwritten.

Two tasks are *the same lineage* when they come from the same generator and the same
source rows (`source_table`, `source_keys`); `diff_versions` calls a task *changed* when
its lineage is in both versions under another id or split, *added* or *removed* otherwise.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rlforge.errors import UserError
from rlforge.taskdir import MANIFEST

SNAPSHOT_FIELDS = ("task_id", "generator", "version", "split", "source_table", "source_keys",
                   "content_hashes", "template_hash")


def lineage(row: dict[str, Any]) -> tuple:
    """What makes two tasks the same task over time: generator and source rows."""
    return (row["generator"], row.get("source_table") or "", tuple(row.get("source_keys") or ()))


def content_hash(rows: list[dict[str, Any]]) -> str:
    """The hash of a set of active tasks (see the module docstring)."""
    h = hashlib.sha256()
    for line in sorted(f"{r['task_id']} {r['split']} {r.get('template_hash') or ''}"
                       for r in rows):
        h.update(line.encode() + b"\n")
    return h.hexdigest()


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a manifest or version parquet file."""
    import polars as pl

    try:
        return pl.read_parquet(path).to_dicts()
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise UserError(f"{path}: not a manifest rlforge can read ({exc})") from None


def previous_manifest(out: Path) -> list[dict[str, Any]]:
    """The rows of the manifest of the build now in `out` (none: a first build), each with
    a `status` (manifests from before versions have only active tasks)."""
    path = out / MANIFEST
    if not path.is_file():
        return []
    try:
        rows = read_rows(path)
    except UserError:
        return []
    for r in rows:
        r.setdefault("status", "active")
        r["status"] = r["status"] or "active"
    return rows


def index(con, out: Path) -> list[dict[str, Any]]:
    """The versions recorded for the build-tasks output `out`, oldest first."""
    rows = con.execute("SELECT version, hash, build_id, created_at, tasks, rendered, reused, "
                       "retired FROM dataset_versions WHERE out_dir = ? ORDER BY version",
                       [str(Path(out).resolve())]).fetchall()
    keys = ("version", "hash", "build_id", "created_at", "tasks", "rendered", "reused", "retired")
    return [dict(zip(keys, r)) for r in rows]


def retire(previous: list[dict[str, Any]], active: list[dict[str, Any]],
           version: int) -> list[dict[str, Any]]:
    """The retired rows of the new manifest: those retired before, and every task active
    before that is not now (replaced when a task of its lineage is active under a new id)."""
    now_ids = {r["task_id"] for r in active}
    by_lineage: dict[tuple, list[str]] = {}
    for r in active:
        by_lineage.setdefault(lineage(r), []).append(r["task_id"])
    out = [r for r in previous if r["status"] == "retired" and r["task_id"] not in now_ids]
    for r in previous:
        if r["status"] != "active" or r["task_id"] in now_ids:
            continue
        successors = by_lineage.get(lineage(r), [])
        out.append({**r, "status": "retired", "retired_in": version,
                    "retired_by": successors[0] if len(successors) == 1 else ""})
    return out


def next_version(con, out: Path, active: list[dict[str, Any]]) -> tuple[int, str, bool]:
    """(version number, content hash, whether it is new) for the active rows of a build
    into `out`."""
    versions = index(con, out)
    digest = content_hash(active)
    if versions and versions[-1]["hash"] == digest:
        return versions[-1]["version"], digest, False
    return (versions[-1]["version"] + 1 if versions else 1), digest, True


def record_version(con, out: Path, active: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """Insert a version and its snapshot (inside the caller's transaction)."""
    from rlforge import db

    where = str(Path(out).resolve())
    db.insert_rows(con, "dataset_versions", [(
        where, entry["version"], entry["hash"], entry["build_id"], entry["created_at"],
        entry["tasks"], entry["rendered"], entry["reused"], entry["retired"])])
    db.insert_rows(con, "dataset_version_tasks", [
        (where, entry["version"], *(r.get(k) for k in SNAPSHOT_FIELDS)) for r in active])


def _snapshot(con, out: Path, version: int) -> list[dict[str, Any]]:
    rows = con.execute(
        "SELECT task_id, generator, generator_version, split, source_table, source_keys, "
        "content_hashes, template_hash FROM dataset_version_tasks WHERE out_dir = ? AND "
        "version = ? ORDER BY task_id", [str(Path(out).resolve()), version]).fetchall()
    return [dict(zip(SNAPSHOT_FIELDS, r)) for r in rows]


def resolve(con, out: Path, name: str) -> tuple[str, list[dict[str, Any]]]:
    """A version of `out` named by number (`3`, `v3`) or by a content-hash prefix (six
    characters at least), or the path of a manifest parquet file or of a build directory
    (its active tasks now): (its name, its active rows)."""
    path = Path(name)
    if path.is_dir() and (path / MANIFEST).is_file():
        path = path / MANIFEST
    if path.suffix == ".parquet" and path.is_file():
        rows = read_rows(path)
        return str(path), [r for r in rows if (r.get("status") or "active") == "active"]
    versions = index(con, out)
    if not versions:
        raise UserError(f"no dataset versions of {out} in this database (build-tasks records "
                        "them); give --dir DIR, the --out of a build, or --db")
    text = name.lower().removeprefix("v")
    match = [v for v in versions if text.isdigit() and v["version"] == int(text)] or \
        [v for v in versions if len(text) >= 6 and v["hash"].startswith(text)]
    if len(match) != 1:
        known = ", ".join(f"v{v['version']} ({v['hash'][:12]})" for v in versions)
        raise UserError(f"no single version {name!r} in {out}; it holds {known}")
    v = match[0]
    return f"v{v['version']}", _snapshot(con, out, v["version"])


def diff_versions(con, out: Path, v1: str, v2: str) -> dict[str, Any]:
    """The tasks added, removed and changed from version `v1` to `v2` (see `resolve`).

    Returns:
        {"from", "to": {name, tasks, hash}, "added", "removed": [rows],
         "changed": [{old_id, new_id, generator, source_keys, why}], "unchanged": n}
    """
    name_a, a = resolve(con, out, v1)
    name_b, b = resolve(con, out, v2)
    ids_a = {r["task_id"]: r for r in a}
    ids_b = {r["task_id"]: r for r in b}
    gone = [r for t, r in ids_a.items() if t not in ids_b]
    new = [r for t, r in ids_b.items() if t not in ids_a]
    by_lineage_gone: dict[tuple, list[dict]] = {}
    by_lineage_new: dict[tuple, list[dict]] = {}
    for r in gone:
        by_lineage_gone.setdefault(lineage(r), []).append(r)
    for r in new:
        by_lineage_new.setdefault(lineage(r), []).append(r)
    changed: list[dict[str, Any]] = []
    paired: set[str] = set()
    for key, olds in by_lineage_gone.items():
        news = by_lineage_new.get(key, [])
        if len(olds) == 1 and len(news) == 1:  # one task then, one now: the same one, changed
            old, new_row = olds[0], news[0]
            why = [what for what, differs in (
                ("source changed", list(old.get("content_hashes") or [])
                 != list(new_row.get("content_hashes") or [])),
                ("generator version", old.get("version") != new_row.get("version")),
                ("templates", old.get("template_hash") != new_row.get("template_hash")))
                if differs] or ["rendered differently"]
            changed.append({"old_id": old["task_id"], "new_id": new_row["task_id"],
                            "generator": old["generator"],
                            "source_keys": list(old.get("source_keys") or []),
                            "why": ", ".join(why)})
            paired.update((old["task_id"], new_row["task_id"]))
    for t in sorted(set(ids_a) & set(ids_b)):
        if ids_a[t]["split"] != ids_b[t]["split"]:
            changed.append({"old_id": t, "new_id": t, "generator": ids_a[t]["generator"],
                            "source_keys": list(ids_a[t].get("source_keys") or []),
                            "why": f"split {ids_a[t]['split']} -> {ids_b[t]['split']}"})

    def brief(r: dict) -> dict[str, Any]:
        return {"task_id": r["task_id"], "generator": r["generator"], "split": r["split"],
                "source_keys": list(r.get("source_keys") or [])}

    changed.sort(key=lambda c: (c["generator"], c["old_id"]))
    moved = sum(c["old_id"] == c["new_id"] for c in changed)
    return {"from": {"name": name_a, "tasks": len(a), "hash": content_hash(a)},
            "to": {"name": name_b, "tasks": len(b), "hash": content_hash(b)},
            "added": sorted((brief(r) for r in new if r["task_id"] not in paired),
                            key=lambda r: r["task_id"]),
            "removed": sorted((brief(r) for r in gone if r["task_id"] not in paired),
                              key=lambda r: r["task_id"]),
            "changed": changed,
            "unchanged": len(set(ids_a) & set(ids_b)) - moved}

