"""What a forget removes (`plan`, read only) and its database part (`delete_rows`, one
transaction): rows keyed by the tickets, the tasks and rollouts built from them or holding
their text, the key replaced in the rows that stay, a dataset version retiring the tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from rlforge import db
from rlforge.forget.files import Matcher, run_lines
from rlforge.forget.match import (Key, Term, any_of, as_text, needles, scrub, scrub_targets,
                                  table_exists)


@dataclass
class Plan:
    """What a forget of one key removes."""

    key: Key
    needles: list[Term] = field(default_factory=list, repr=False)
    counts: dict[str, int] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)  # task_id generator out_dir path why
    rollout_ids: set[str] = field(default_factory=set)
    runs: list[str] = field(default_factory=list)  # run directories with lines to drop
    versions: dict[str, int] = field(default_factory=dict)  # out_dir -> the retiring version
    exports: list[dict[str, Any]] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return any(self.counts.values())

    @property
    def task_ids(self) -> list[str]:
        return sorted({t["task_id"] for t in self.tasks})

    def pending(self) -> dict[str, Any]:
        """The file work, as `do_files` takes it: ids and paths, never text."""
        return {"task_ids": self.task_ids,
                "task_dirs": sorted({t["path"] for t in self.tasks if t.get("path")}),
                "out_dirs": self.versions, "rollout_ids": sorted(self.rollout_ids),
                "runs": sorted(self.runs)}


def _count(con, sql: str, args: list) -> int:
    return int(con.execute(sql, args).fetchall()[0][0])


def plan(con: duckdb.DuckDBPyConnection, key: Key) -> Plan:
    """Everything a forget of `key` removes, found without changing anything."""
    p = Plan(key)
    ids = key.ticket_ids
    c = p.counts
    c["tickets"] = _count(con, "SELECT count(*) FROM tickets WHERE list_contains(?, ticket_id)", [ids])
    c["ticket_messages"] = _count(con, "SELECT count(*) FROM ticket_messages WHERE "
                                  "list_contains(?, ticket_id)", [ids])
    for table in ("links", "link_terms"):
        if table_exists(con, table):
            c[table] = _count(con, f"SELECT count(*) FROM {table} WHERE list_contains(?, ticket_id)",
                              [ids])
    c["task_drops"] = _count(con, "SELECT count(*) FROM task_drops WHERE "
                             "list_has_any(string_split(source_keys, ','), ?)", [ids])
    p.needles = needles(con, key) if (ids or key.terms) else []
    patterns = [t.re2() for t in p.needles]
    match = Matcher(p.needles)
    c["quarantine"] = _count(con, f"SELECT count(*) FROM quarantine WHERE {any_of('raw')}",
                             [patterns]) if patterns else 0
    for task_id, generator, out_dir, path, built_from in con.execute(
            "SELECT task_id, generator, out_dir, path, list_has_any(source_keys, ?) FROM tasks "
            "ORDER BY out_dir, task_id", [ids]).fetchall():
        if built_from or (path and match.in_tree(Path(path))):
            p.tasks.append({"task_id": task_id, "generator": generator, "out_dir": out_dir,
                            "path": path, "why": "built from" if built_from else "holds a copy"})
    task_ids = p.task_ids
    c["tasks"] = len(task_ids)
    c["task_stats"] = _count(con, "SELECT count(*) FROM task_stats WHERE list_contains(?, task_id)",
                             [task_ids])
    c["task_dirs"] = sum(1 for t in p.tasks if t["path"] and Path(t["path"]).is_dir())
    text = "concat_ws(chr(10), messages::VARCHAR, steps::VARCHAR, submission::VARCHAR)"
    found = con.execute("SELECT rollout_id FROM rollouts WHERE list_contains(?, task_id)"
                        + (f" OR {any_of(text)}" if patterns else ""),
                        [task_ids] + ([patterns] if patterns else [])).fetchall()
    c["rollouts"] = len(found)
    p.rollout_ids = {r[0] for r in found}
    lines = 0
    for (run_dir,) in con.execute("SELECT run_dir FROM runs WHERE run_dir IS NOT NULL "
                                  "ORDER BY run_dir").fetchall():
        n = run_lines(Path(run_dir), set(task_ids), p.rollout_ids, match)
        if n:
            p.runs.append(run_dir)
            lines += n
    c["run_file_lines"] = lines
    for table, cols in scrub_targets(con, key.terms).items():
        where = " OR ".join(any_of(as_text(col, kind)) for col, kind in cols)
        c[f"replaced in {table}"] = _count(con, f'SELECT count(*) FROM "{table}" WHERE {where}',
                                           [[t.re2() for t in key.terms if t.replacement]] * len(cols))
    from rlforge.tasks import versions

    for out_dir in sorted({t["out_dir"] for t in p.tasks if t["out_dir"]}):
        known = versions.index(con, Path(out_dir))
        p.versions[out_dir] = (known[-1]["version"] + 1) if known else 1
    c["dataset_versions"] = len(p.versions)
    if table_exists(con, "exports"):  # (a dry run on the database of an older rlforge)
        p.exports = [{"kind": k, "format": f, "out": o, "written_at": str(w)} for k, f, o, w in
                     con.execute("SELECT kind, format, out, written_at FROM exports WHERE "
                                 "list_has_any(task_ids, ?) ORDER BY written_at",
                                 [task_ids]).fetchall()]
    c["exports_stale"] = len(p.exports)
    return p


def delete_rows(con: duckdb.DuckDBPyConnection, p: Plan, forget_id: str) -> None:
    """The database part of a forget (inside the caller's transaction)."""
    ids, task_ids = p.key.ticket_ids, p.task_ids
    patterns = [t.re2() for t in p.needles]
    con.execute("DELETE FROM ticket_messages WHERE list_contains(?, ticket_id)", [ids])
    con.execute("DELETE FROM tickets WHERE list_contains(?, ticket_id)", [ids])
    for table in ("links", "link_terms"):
        if table_exists(con, table):
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, ticket_id)", [ids])
    con.execute("DELETE FROM task_drops WHERE list_has_any(string_split(source_keys, ','), ?)", [ids])
    if patterns:
        con.execute(f"DELETE FROM quarantine WHERE {any_of('raw')}", [patterns])
    con.execute("DELETE FROM task_stats WHERE list_contains(?, task_id)", [task_ids])
    con.execute("DELETE FROM rollouts WHERE list_contains(?, rollout_id) OR list_contains(?, task_id)",
                [sorted(p.rollout_ids), task_ids])
    _record_versions(con, p, forget_id)
    con.execute("DELETE FROM tasks WHERE list_contains(?, task_id)", [task_ids])
    for table, cols in scrub_targets(con, p.key.terms).items():
        scrub(con, table, cols, p.key.terms)
    if task_ids:
        con.execute("UPDATE exports SET stale_since = ?, stale_forget = ? WHERE stale_since IS NULL "
                    "AND list_has_any(task_ids, ?)", [db.now(), forget_id, task_ids])


def _record_versions(con, p: Plan, forget_id: str) -> None:
    """A new dataset version of each build output that loses tasks: its active tasks less
    those removed, so `rlforge tasks diff` lists them as removed."""
    from rlforge.tasks import versions

    gone = set(p.task_ids)
    for out_dir, version in p.versions.items():
        cur = con.execute("SELECT task_id, generator, version, split, source_table, source_keys, "
                          "content_hashes, template_hash FROM tasks WHERE out_dir = ? "
                          "ORDER BY task_id", [out_dir])
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        active = [r for r in rows if r["task_id"] not in gone]
        versions.record_version(con, Path(out_dir), active, {
            "version": version, "hash": versions.content_hash(active),
            "build_id": f"forget-{forget_id}", "created_at": db.now(), "tasks": len(active),
            "rendered": 0, "reused": len(active), "retired": len(rows) - len(active)})
