"""`build-tasks`: generators → specs → splits → rendered Harbor directories → validation.

Steps, all deterministic for the same database, seed and templates:
1. quotas per generator from `--limit` and the weighted mix;
2. each generator yields specs from its SQL selection;
3. exact duplicates are dropped, near-duplicates and shared group keys are grouped, and each
   group gets one split (by stable hash, or by time with `--split-by time`);
4. every spec is rendered in memory (its id is the hash of its files) and written to a
   work area beside `--out` (see `rlforge.tasks.staging`), never into `--out` itself;
5. unless `--no-validate`, every task is validated in the sandbox there; a task joins the
   staged build once whole and proven, a failing one is removed and its reason recorded in
   `task_drops`;
6. the staged build, with `manifest.parquet`, replaces `--out` in one rename, and the
   `tasks` table is written.

Incremental: a build into an `--out` that holds an earlier build of the same seed writes
and validates only the tasks that are new or changed. A task's id is the hash of every
file it has but task.toml (what a policy sees, the tests, the verifier, the solution), so
a task rendered (in memory) under an id the earlier build holds, validated under the same
settings, keeps that directory: its files are hard-linked into the new build, not written
or validated again, and only its task.toml is rewritten when its metadata changed (a
generator may record figures of the whole dataset there). A new
dataset version is recorded in the database when the set of tasks changed, and tasks that
left it are kept in the manifest as retired (`rlforge.tasks.versions`).

Difficulty (`rlforge.difficulty`): with `--difficulty LOW:HIGH` or difficulty bins in
`--mix`, every generator yields all it can, and the rendered tasks are kept by their
latest pass-rate estimate for the model, then cut to the `--limit` quotas.

A crash or Ctrl-C costs only the tasks in flight: the rerun of the same command keeps every
task already staged whose bytes are unchanged, and the previous build stays readable in
`--out` until the new one replaces it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import hashlib
import inspect
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import duckdb
import polars as pl

from rlforge import __version__, db, difficulty
from rlforge.config import Config, Settings
from rlforge.errors import UserError
from rlforge.sandbox import sandbox_settings
from rlforge.taskdir import TASK_TOML
from rlforge.tasks import registry
from rlforge.tasks.render import PACKAGE_ROOT, Renderer, RenderedTask, render_task
from rlforge.tasks.generators.repair.checks import CheckerBackend
from rlforge.tasks.spec import BuildContext, TaskSpec
from rlforge.tasks import lineage
from rlforge.tasks.splits import (SPLITS, exact_key, hash_split, near_duplicate_groups,
                                  time_split)
from rlforge.tasks import versions
from rlforge.tasks.staging import BuildArea, task_digest
from rlforge.verify.validate import VALIDATION_FILE, ValidationBackend, ValidationResult


class BuildBackend(ValidationBackend, CheckerBackend, Protocol):
    """Where build-tasks' sandboxed work runs (an `rlforge.execution` backend, chosen by
    the CLI): the validation of its tasks and the commits.repair checks."""


@dataclass
class BuildOptions:
    out: Path
    generators: list[str] | None = None  # None: every generator with usable rows
    mix: dict[str, float] = field(default_factory=dict)
    limit: int | None = None
    seed: int = 0
    templates: Path | None = None
    validate: bool = True
    split_by: str = "hash"  # hash | time
    cutoff: dt.datetime | None = None
    ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)
    sandbox_mode: str = "bwrap"
    workers: int = 0
    generator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    force: bool = False
    selection: difficulty.Selection = field(default_factory=difficulty.Selection)
    config: Config = field(kw_only=True)  # the resolved configuration
    backend: BuildBackend = field(kw_only=True)  # where the checks and validation run


@dataclass
class BuildReport:
    out: str
    build_id: str
    per_generator: dict[str, dict[str, int]]
    drops: list[dict[str, str]]
    emitted: int
    seconds: float
    validated: bool
    resumed: int = 0  # tasks kept from an unfinished build of the same directory
    # generator -> measured label field ("origin:field") -> its learnability figures
    learnability: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    judge: dict[str, Any] | None = None  # the reply judge's check (rlforge.tasks.judge), if asked
    rendered: int = 0  # tasks rendered by this build
    reused: int = 0  # tasks kept from the build in --out (inputs unchanged)
    version: int = 0  # the dataset version the build is
    #: generator -> repository -> the test runner that serves it (`go@1`), or why none does
    runners: dict[str, dict[str, str]] = field(default_factory=dict)
    version_hash: str = ""
    new_version: bool = False
    retired: int = 0  # tasks of the previous version retired by this one
    difficulty: dict[str, Any] = field(default_factory=dict)  # model, band, drops
    limit: int | None = None  # --limit
    usable: dict[str, int] = field(default_factory=dict)  # usable source rows per generator
    # generator -> how many of its repair tasks' instructions name every checked behaviour
    specification: dict[str, dict[str, int]] = field(default_factory=dict)
    #: opt-in generator -> {"why": its measured bound, "built": whether this build made it}
    opt_in: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def parse_mix(text: str | None) -> dict[str, float]:
    """`a=3,b=1` into weights; a name without a weight counts 1."""
    mix: dict[str, float] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, _, weight = part.partition("=")
        try:
            mix[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise UserError(f"--mix {part!r}: weight must be a number (e.g. tickets.triage=3)") from None
        if mix[name.strip()] < 0:
            raise UserError(f"--mix {part!r}: weight must not be negative")
    return mix


def quotas(names: list[str], mix: dict[str, float], limit: int | None,
           available: dict[str, int] | None = None) -> dict[str, int | None]:
    """Tasks per generator: the limit shared by weight (largest remainder), or no cap.

    With `available` (usable source rows per generator), a generator gets no more than it
    has rows for, one with none gets 0, and what they cannot take goes to the others by
    weight, until every generator is full or the limit is shared."""
    weights = {n: mix.get(n, 1.0 if not mix else 0.0) for n in names}
    if limit is None:
        return {n: None for n in names if weights[n] > 0}
    out = difficulty.shares(limit, weights, "--mix gives every selected generator a weight of 0")
    if available is not None:
        room = {n: max(0, available.get(n, 0)) for n in names}
        out = {n: 0 for n in names}
        left = limit
        while left > 0:
            open_ = {n: w for n, w in weights.items() if w > 0 and out[n] < room[n]}
            if not open_:
                break
            share = difficulty.shares(left, open_)
            for n, k in share.items():
                take = min(k, room[n] - out[n])
                out[n] += take
                left -= take
    return {n: q for n, q in out.items() if weights[n] > 0}


def select_generators(con, opts: BuildOptions) -> list[registry.GeneratorInfo]:
    """The generators `--generators` names; by default every registered one that is not
    opt-in (`Generator.opt_in`)."""
    reg = registry.registry()
    if opts.generators:
        infos = [registry.get(n) for n in opts.generators]
    else:
        infos = [i for i in reg.values() if not i.opt_in]
    for name in difficulty.split_mix(opts.mix)[0]:
        info = registry.get(name)
        if info.name not in {i.name for i in infos}:
            why = (f": {info.name} is built only when --generators names it ({info.opt_in})"
                   if info.opt_in and not opts.generators else "")
            raise UserError(f"--mix names {name!r}, which is not among the selected "
                            f"generators{why}")
    return infos


def opt_in_status(infos: list[registry.GeneratorInfo],
                  named: bool) -> dict[str, dict[str, Any]]:
    """The opt-in generators a build made, and with no `--generators` (`named` False) the
    ones it left out: why each is opt-in, and whether it was built."""
    chosen = {i.name for i in infos}
    return {n: {"why": i.opt_in, "built": n in chosen}
            for n, i in registry.registry().items() if i.opt_in and (n in chosen or not named)}


def instantiate(info: registry.GeneratorInfo, options: dict[str, Any],
                build: BuildOptions | None = None):
    try:
        if build is not None and "build" in inspect.signature(info.factory).parameters:
            return info.factory(build=build, **options)  # it runs code: sandbox mode, config
        return info.factory(**options)
    except TypeError as exc:
        raise UserError(f"options for generator {info.name}: {exc}") from None


def _listed(info: registry.GeneratorInfo, settings: Settings | None):
    """A generator made to count rows, not to build: with the user's settings of its
    source where it takes them (commits.repair's `repair`)."""
    if settings is not None and "repair" in inspect.signature(info.factory).parameters:
        return info.factory(repair=settings.repair)
    return info.factory()


def available_counts(con, settings: Settings | None = None) -> dict[str, int]:
    """How many source rows each registered generator can use now (under `settings`;
    None: the defaults)."""
    out = {}
    for name, info in registry.registry().items():
        try:
            out[name] = int(_listed(info, settings).available(con))
        except duckdb.CatalogException:
            out[name] = 0  # its source tables do not exist yet
    return out


def list_generators(con, settings: Settings | None = None) -> list[dict[str, Any]]:
    """`build-tasks --list`: each registered generator, the source rows it can use now,
    the question families this database cannot support, and why it has no rows."""
    counts = available_counts(con, settings)
    return [{"name": i.name, "version": i.version, "verifier": i.verifier,
             "usable_rows": counts.get(n, 0), "description": i.description,
             "cannot_support": _unsupported(con, i, settings),
             "why_none": None if counts.get(n, 0) else _why_none(con, i),
             "opt_in": i.opt_in,
             **({"runners": r} if (r := _runners(con, i, settings)) is not None else {})}
            for n, i in registry.registry().items()]


def _runners(con, info, settings: Settings | None) -> dict[str, str] | None:
    """{repository: its test runner, or why none serves it} of a generator that picks a
    runner per repository (`runners_by_repo`); None for the others."""
    by_repo = getattr(_listed(info, settings), "runners_by_repo", None)
    if by_repo is None:
        return None
    try:
        return dict(by_repo(con))
    except duckdb.CatalogException:
        return {}  # its source tables do not exist yet


#: what a source table holds, and the command that fills it
INGEST_OF = {"tickets": ("tickets", "rlforge ingest tickets"),
             "commits": ("commits", "rlforge ingest commits"),
             "log_records": ("log records", "rlforge ingest logs")}


def _why_none(con, info) -> str:
    """Why a generator has no usable rows: an empty source table, or its screening."""
    for table in getattr(info.factory, "sources", ()):
        try:
            n = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        except duckdb.CatalogException:
            n = 0
        if not n:
            what, how = INGEST_OF.get(table, (table, ""))
            return f"no {what} yet" + (f": {how}" if how else "")
    return "no row passes its screening: see `rlforge build-tasks` drops"


def _unsupported(con, info, settings: Settings | None) -> dict[str, str]:
    """Question families the generator says this database's fields cannot support."""
    skipped = getattr(_listed(info, settings), "skipped", None)
    if skipped is None:
        return {}
    try:
        return dict(skipped(con))
    except duckdb.CatalogException:
        return {}  # its source tables do not exist yet


def _assign_splits(specs: list[TaskSpec], opts: BuildOptions,
                   inside: dict[lineage.Fix, set[str]] | None = None) -> list[str]:
    """Each spec's split. Repair tasks (`spec.fix`) split by history per repository, and
    the build fails if a train task's workspace still holds a held-out task's fix."""
    inside = inside or {}
    if opts.split_by == "time":
        if opts.cutoff is None:
            raise UserError("--split-by time needs --cutoff DATE (e.g. 2024-06-01)")
        splits = [time_split(s.time, opts.cutoff) for s in specs]
        _check_fixes(specs, splits, inside)
        return splits
    groups = near_duplicate_groups([s.group_key for s in specs], [s.dedup_text for s in specs],
                                   [s.related_groups for s in specs],
                                   [s.subject_key for s in specs])
    # Tasks sharing a group key, a related group or a subject, or near-duplicate texts, now
    # share the smallest key of their group.
    # The generator is not part of the hash: the same thread, commit or incident lands in
    # one split whichever generators made tasks of it (a fix in commits.repair and
    # incidents.repair, a ticket in triage, reply and incidents.diagnose).
    splits = [hash_split(g, opts.ratios) for g in groups]
    fixes = {s.fix: s.time for s in specs if s.fix}
    if fixes:
        by_fix = lineage.split_in_history_order(list(fixes), {f: (
            t is None, t.timestamp() if t else 0.0, f[1]) for f, t in fixes.items()}, opts.ratios)
        splits = _held_out_wins(groups, splits, [by_fix.get(s.fix) if s.fix else None
                                                 for s in specs])
        # A train task whose workspace holds a held-out fix (history out of time order)
        # joins that split, with its group, until none does.
        while True:
            of_fix = {s.fix: sp for s, sp in zip(specs, splits) if s.fix}
            moved: list[str | None] = [None] * len(specs)
            for i, s in enumerate(specs):
                if s.fix and splits[i] == "train":
                    held = [of_fix[(s.fix[0], sha)] for sha in inside.get(s.fix, ())
                            if of_fix.get((s.fix[0], sha), "train") != "train"]
                    moved[i] = max(held, key=SPLITS.index) if held else None
            if not any(moved):
                break
            splits = _held_out_wins(groups, splits, moved)
    _check_fixes(specs, splits, inside)
    return splits


def _held_out_wins(groups: list[str], splits: list[str], wanted: list[str | None]) -> list[str]:
    """Every group whose member wants a split takes the most held-out one wanted in it."""
    best: dict[str, str] = {}
    for g, w in zip(groups, wanted):
        if w is not None and SPLITS.index(w) >= SPLITS.index(best.get(g, w)):
            best[g] = w
    return [best.get(g, sp) for g, sp in zip(groups, splits)]


def _check_fixes(specs: list[TaskSpec], splits: list[str],
                 inside: dict[lineage.Fix, set[str]]) -> None:
    of_fix: dict[lineage.Fix, str] = {}
    for s, sp in zip(specs, splits):
        if s.fix:  # one commit in two generators: the most held-out split counts
            of_fix[s.fix] = max(of_fix.get(s.fix, sp), sp, key=SPLITS.index)
    lineage.check(of_fix, inside)


def _validation_payload(spec: TaskSpec) -> bytes:
    subs = [{"name": s.name, "description": s.description,
             "files": {k: v.decode("utf-8", "surrogateescape") for k, v in s.files.items()}}
            for s in spec.adversarial]
    payload = {"adversarial": subs, "secret_strings": spec.secret_strings,
               "leak_allowed": spec.leak_allowed,
               "workspace_may_contain_answer": spec.evidence_in_workspace or spec.kind == "terminal"}
    # Bytes that are not UTF-8 were decoded to lone surrogates: written as JSON escapes
    # (\udcff), which json.loads reads back to the same bytes.
    return (json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode(
        "utf-8", "backslashreplace")


def build_tasks(con: duckdb.DuckDBPyConnection, opts: BuildOptions,
                progress: Callable[..., None] | None = None,
                reconnect: Callable[[], duckdb.DuckDBPyConnection] | None = None) -> BuildReport:
    """Build, split, render, validate and record tasks; see the module docstring.

    With `reconnect`, `con` is closed once the specs are made, so that other processes
    (`rlforge status`, an ingest) can use the database while the tasks are written and
    validated, and `reconnect()` opens it again to record them (closed here after)."""
    started = time.perf_counter()
    given = con
    infos = select_generators(con, opts)
    gen_mix, bins = difficulty.split_mix(opts.mix)
    sel = opts.selection if not bins else dataclasses.replace(opts.selection, bins=bins)
    gens = {i.name: i for i in infos}
    usable = _usable(con, opts, gens) if opts.limit is not None else None
    q = quotas([i.name for i in infos], gen_mix, opts.limit, usable)
    # Selecting by difficulty needs the rendered ids: every generator yields all it can,
    # and the quotas are applied after the band.
    gen_q: dict[str, int | None] = {n: None for n in q} if sel.active else q
    renderer = Renderer(opts.templates, [d for i in infos if (d := i.template_dir())])
    stats: dict[str, Counter] = {i.name: Counter() for i in infos if i.name in q}
    drops: list[dict[str, str]] = []
    learnability: dict[str, dict[str, dict[str, Any]]] = {}
    runners_seen: dict[str, dict[str, str]] = {}
    specification: dict[str, dict[str, int]] = {}
    previous = versions.previous_manifest(opts.out) if not opts.force else []
    area = BuildArea(opts.out, validation=validation_key(opts) if opts.validate else None)
    area.open(opts.force)  # the marker: a rerun after a crash knows this build
    try:
        specs = _generate(con, opts, gens, gen_q, stats, drops, progress, learnability,
                          runners_seen, specification)
        inside = lineage.fixes_in_workspaces(con, [s.fix for s in specs if s.fix])
        unique, reused, continues = _render_all(specs, opts, renderer, previous,
                                                area.validation, set(area.journal), inside)
        if not continues:  # another dataset (another seed, other generators): no history
            previous = []
        chosen_difficulty = {}
        if sel.active:
            chosen_difficulty = _select_difficulty(con, unique, sel, q, stats, drops)
        if reconnect is not None:
            con.close()  # the database is free while the tasks are written and validated
        kept, failed = _write_and_validate(area, list(unique.values()), opts, progress, reused)
        if reconnect is not None:
            con = reconnect()
        for t, reason in failed:
            drops.append({"generator": t.spec.generator, "source": ",".join(t.spec.source.keys),
                          "task_id": t.task_id, "reason": reason})
            stats[t.spec.generator]["dropped_validation"] += 1
        for t in kept:
            stats[t.spec.generator]["emitted"] += 1
        build_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        rows = _manifest_rows(kept, area.validation, opts.seed,
                              difficulty.latest_for_tasks(con, {t.task_id for t in kept}))
        version, digest, new = versions.next_version(con, opts.out, rows)
        retired = versions.retire(previous, rows, version)
        newly_retired = sum(r.get("retired_in") == version for r in retired) if new else 0

        if not new:
            retired = [r for r in previous if r["status"] == "retired"]
        area.publish({t.task_id for t in kept}, lambda path: _write_manifest(rows + retired, path))
        _record(con, opts, rows, drops, build_id, {
            "version": version, "hash": digest, "build_id": build_id, "created_at": db.now(),
            "tasks": len(rows), "rendered": sum(t.task_id not in reused for t in kept),
            "reused": sum(t.task_id in reused for t in kept), "retired": newly_retired}
            if new else None)
    except BaseException:  # an error or Ctrl-C: temporaries go, finished tasks stay
        area.abandon()
        raise
    finally:
        if con is not given:
            con.close()
    area.finish()
    return BuildReport(
        out=str(opts.out), build_id=build_id,
        per_generator={g: {"candidates": c["specs"] + c["rejected"],
                           "unaccounted": c["specs"] + c["rejected"] - c["emitted"]
                           - c["dropped_validation"] - c["exact_duplicates"] - c["rejected"]
                           - c["dropped_difficulty"],
                           "specs": c["specs"], "emitted": c["emitted"],
                           "dropped": c["dropped_validation"] + c["exact_duplicates"]
                           + c["rejected"] + c["dropped_difficulty"],
                           **{k: c[k] for k in ("dropped_validation", "exact_duplicates",
                                                "rejected", "dropped_difficulty")},
                           **{f"split_{s}": sum(1 for t in kept if t.spec.generator == g and t.split == s)
                              for s in ("train", "val", "test")}}
                       for g, c in stats.items()},
        drops=drops, emitted=len(kept), seconds=round(time.perf_counter() - started, 3),
        validated=opts.validate, resumed=area.reused, learnability=learnability,
        rendered=sum(t.task_id not in reused for t in kept),
        reused=sum(t.task_id in reused for t in kept), version=version,
        version_hash=digest, new_version=new, retired=newly_retired,
        difficulty=chosen_difficulty, limit=opts.limit, usable=usable or {}, runners=runners_seen,
        specification=specification, opt_in=opt_in_status(infos, bool(opts.generators)))


def _select_difficulty(con, unique: dict[str, RenderedTask], sel: difficulty.Selection,
                       q: dict[str, int | None], stats: dict[str, Counter],
                       drops: list[dict[str, str]]) -> dict[str, Any]:
    """Keep the rendered tasks the band and bins select, within the quotas (in place)."""
    model, estimates = difficulty.latest(con, sel.model)
    if model is None and sel.unmeasured == "drop":
        raise UserError("no calibration in this database and --unmeasured drop: every task "
                        "would go; run them first (`rlforge run`, `rlforge calibrate`)")
    kept, why = difficulty.select(list(unique.values()), lambda t: t.task_id,
                                  lambda t: t.spec.generator, estimates, sel, q)
    keep_ids = {t.task_id for t in kept}
    for task_id in [t for t in unique if t not in keep_ids]:
        t = unique.pop(task_id)
        stats[t.spec.generator]["dropped_difficulty"] += 1
    band = difficulty.resolve_band(sel, estimates) if sel.band is not None else None
    return {"model": model, "band": str(band) if band else None, "unmeasured": sel.unmeasured,
            "bins": sel.bins, "measured": sum(t in estimates for t in keep_ids),
            "dropped": dict(why)}


def _usable(con, opts: BuildOptions, gens: dict[str, registry.GeneratorInfo]) -> dict[str, int]:
    """Source rows each generator can use (`available`), 0 where its tables are missing."""
    out = {}
    for name, info in gens.items():
        try:
            gen = instantiate(info, opts.generator_options.get(name, {}), opts)
            out[name] = int(gen.available(con))
        except duckdb.CatalogException:
            out[name] = 0
    return out


def _generate(con, opts: BuildOptions, gens: dict[str, registry.GeneratorInfo],
              q: dict[str, int | None], stats: dict[str, Counter], drops: list[dict[str, str]],
              progress, learnability: dict[str, dict[str, dict[str, Any]]],
              runners_seen: dict[str, dict[str, str]] | None = None,
              specification: dict[str, dict[str, int]] | None = None) -> list[TaskSpec]:
    """Every selected generator's specs, exact duplicates dropped (and counted); the
    learnability figures a generator measured go into `learnability` by its name, the
    test runner it found per repository (`runners_seen()`) into `runners_seen`, and a
    repair generator's specification figures into `specification`.

    Under a limit, a generator that makes fewer specs than its quota (its rows rejected)
    hands the shortfall to the generators after it; what is still short at the end goes
    to the generators that filled their quota, last first, run again with a larger one."""
    made: dict[str, list[TaskSpec]] = {}
    rejections: dict[str, list[dict[str, str]]] = {}

    def run(name: str, limit: int | None) -> None:
        if limit == 0:  # no usable rows
            made[name], rejections[name] = [], []
            return
        gen = instantiate(gens[name], opts.generator_options.get(name, {}), opts)
        checking = (lambda done, total, note="": progress(f"checking {name}", done, total, note)
                    ) if progress else None
        ctx = BuildContext(con, opts.seed, limit, opts.generator_options.get(name, {}),
                           progress=checking)
        made[name] = []
        if progress:
            progress(f"generating {name}", 0, limit)
        try:
            for spec in gen.specs(ctx):
                made[name].append(spec)
                if progress:
                    progress(f"generating {name}", len(made[name]), limit)
        except duckdb.CatalogException:
            made[name] = []  # its source tables do not exist in this database yet
        if getattr(gen, "learnability", None):
            learnability[name] = dict(gen.learnability)
        if specification is not None and getattr(gen, "specification", None) is not None:
            specification[name] = gen.specification.to_dict()
        rejections[name] = list(getattr(gen, "rejections", ()))
        if runners_seen is not None and hasattr(gen, "runners_seen"):
            runners_seen[name] = gen.runners_seen()

    names = [n for n in gens if n in q]
    short = 0
    limits: dict[str, int | None] = {}
    for name in names:
        quota = q[name]
        limits[name] = None if quota is None else quota + short
        run(name, limits[name])
        short = 0 if quota is None else max(0, (limits[name] or 0) - len(made[name]))
    for name in reversed(names):  # a second round for what is still short
        if short <= 0 or not limits[name] or len(made[name]) < (limits[name] or 0):
            continue
        before = len(made[name])
        run(name, before + short)
        short -= len(made[name]) - before

    specs: list[TaskSpec] = []
    seen: set[str] = set()
    for name in names:
        for rejected in rejections[name]:  # source rows a generator screened out
            stats[name]["rejected"] += 1
            drops.append({"generator": name, "source": rejected["source"], "task_id": "",
                          "reason": rejected["reason"]})
        for spec in made[name]:
            stats[name]["specs"] += 1
            key = exact_key(spec.dedup_text, spec.reference)
            if key in seen:
                stats[name]["exact_duplicates"] += 1
                drops.append({"generator": name, "source": ",".join(spec.source.keys),
                              "task_id": "", "reason": "exact duplicate of another task"})
                continue
            seen.add(key)
            specs.append(spec)
    return specs


def _render_all(specs: list[TaskSpec], opts: BuildOptions, renderer: Renderer,
                previous: list[dict[str, Any]], validation: str | None,
                journalled: frozenset[str] | set[str] = frozenset(),
                inside: dict[lineage.Fix, set[str]] | None = None
                ) -> tuple[dict[str, RenderedTask], set[str], bool]:
    """Split every spec and render it in memory, by task id (two specs may render alike);
    note the tasks the previous build in `--out` already holds (see the module docstring),
    unless an unfinished build of the same directory journalled them: that build's work
    resumes as `rlforge.tasks.staging` describes.

    Returns:
        (task id -> task, the ids kept from the previous build, whether this build
        continues the previous one: same seed and some task in common. A build with
        another seed or of other generators does not; its manifest starts without
        retired tasks.)
    """
    same_seed = [r for r in previous if r["status"] == "active" and r.get("seed") == opts.seed]
    earlier = {r["task_id"] for r in same_seed
               if (validation is None or r.get("validation") == validation)
               and r["task_id"] not in journalled and (opts.out / r["task_id"]).is_dir()}
    known = {r["task_id"] for r in same_seed}
    unique: dict[str, RenderedTask] = {}
    for spec, split in zip(specs, _assign_splits(specs, opts, inside)):
        spec.tests_data = {**spec.tests_data, VALIDATION_FILE: _validation_payload(spec)}
        t = render_task(spec, renderer, seed=opts.seed, split=split)
        unique.setdefault(t.task_id, t)
    return unique, earlier & set(unique), bool(known & set(unique))


def _sandbox_settings(opts: BuildOptions) -> dict[str, Any]:
    """The user's sandbox settings validation runs under."""
    return sandbox_settings(opts.config.settings().sandbox, opts.sandbox_mode)


def validation_key(opts: BuildOptions) -> str:
    """What a validation verdict depends on besides the task's bytes: rlforge's checks and
    sandbox (their source, so an edited checkout does not reuse old verdicts), mode and the
    sandbox limits the user set."""
    h = hashlib.sha256()
    for package in ("verify", "sandbox"):
        for path in sorted((PACKAGE_ROOT / package).rglob("*.py")):  # the verifier's files too
            rel = path.relative_to(PACKAGE_ROOT / package).as_posix()
            h.update(rel.encode() + b"\0" + path.read_bytes())
    limits = {k: v for k, v in _sandbox_settings(opts).items() if k != "mode"}
    limits_part = f", limits {json.dumps(limits, sort_keys=True)}" if limits else ""
    return f"rlforge {__version__}, sandbox {opts.sandbox_mode}{limits_part}, checks {h.hexdigest()[:16]}"


def _write_and_validate(area: BuildArea, tasks: list[RenderedTask], opts: BuildOptions,
                        progress, reused: frozenset[str] | set[str] = frozenset()
                        ) -> tuple[list[RenderedTask], list[tuple[RenderedTask, str]]]:
    """Stage every task, keeping what an unfinished build settled; validate the rest.

    A task is renamed into the staged tree as soon as it is whole (and, when validating,
    has passed), so a crash loses only the tasks in flight. Returns the kept tasks and the
    failed ones with their reasons, both in the order given.
    """
    verdicts: dict[str, str | None] = {}  # task id -> None (kept) or why it was dropped
    for t in tasks:
        if t.task_id in reused:
            area.adopt(t.task_id, t.files[TASK_TOML])  # the previous build's task
            verdicts[t.task_id] = None
    digests = {t.task_id: task_digest(t.files) for t in tasks if t.task_id not in verdicts}
    pending: list[RenderedTask] = []
    for i, t in enumerate(tasks, start=1):
        if t.task_id in reused:
            continue
        settled = area.settled(t, digests[t.task_id])
        if settled is not None:
            verdicts[t.task_id] = None if settled.ok else settled.reason
            continue
        area.stage(t)
        if opts.validate:
            pending.append(t)
        else:
            area.promote(t.task_id, digests[t.task_id], validated=False)
            verdicts[t.task_id] = None
        if progress and i % 200 == 0:
            progress("writing", i, len(tasks))
    if pending:
        by_path = {str(area.tmp / t.task_id): t for t in pending}

        def settle(r: ValidationResult) -> None:
            t = by_path.get(str(r.path))
            if t is None or t.task_id in verdicts:
                return
            if r.ok:
                area.promote(t.task_id, digests[t.task_id], validated=True)
            else:
                area.reject(t.task_id, digests[t.task_id], r.reason, definitive=_definitive(r))
            verdicts[t.task_id] = None if r.ok else r.reason
            if progress:
                done = [verdicts[p.task_id] for p in pending if p.task_id in verdicts]
                passed = sum(v is None for v in done)
                progress("validating", len(done), len(pending),
                         f"{passed} emitted, {len(done) - passed} dropped")

        if progress:
            progress("validating", 0, len(pending), "")
        results = asyncio.run(opts.backend.validate(list(map(Path, by_path)), workers=opts.workers,
                                                    sandbox_mode=opts.sandbox_mode, progress=settle,
                                                    settings=_sandbox_settings(opts)))
        for r in results:
            settle(r)
        for t in pending:
            if t.task_id not in verdicts:
                area.reject(t.task_id, digests[t.task_id], "not validated", definitive=False)
                verdicts[t.task_id] = "not validated"
    kept = [t for t in tasks if verdicts[t.task_id] is None]
    failed = [(t, why) for t in tasks if (why := verdicts[t.task_id]) is not None]
    return kept, failed


def _definitive(r: ValidationResult) -> bool:
    """Whether a failure is the task's own (a check scored it), not a verifier that could
    not run: only those are remembered for a rerun."""
    failed = [c for c in getattr(r, "checks", []) if not c.ok]
    return bool(failed) and (failed[0].got is not None or failed[0].name == "leak")


MANIFEST_SCHEMA: dict[str, Any] = {
    "task_id": pl.Utf8, "generator": pl.Utf8, "version": pl.Int64, "verifier": pl.Utf8,
    "kind": pl.Utf8, "split": pl.Utf8, "path": pl.Utf8, "source_table": pl.Utf8,
    "source_keys": pl.List(pl.Utf8), "content_hashes": pl.List(pl.Utf8),
    "group_key": pl.Utf8, "template_hash": pl.Utf8, "agent_timeout_sec": pl.Float64,
    "context_tokens": pl.Int64,  # a long-context task's prompt tokens (approximate)
    "learnability": pl.Utf8,  # JSON of a label task's learnability figures
    "seed": pl.Int64, "validation": pl.Utf8,
    "difficulty": pl.Utf8,  # JSON: model -> latest estimate (rlforge.difficulty)
    "status": pl.Utf8, "retired_in": pl.Int64, "retired_by": pl.Utf8,
}


def _manifest_rows(kept: list[RenderedTask], validation: str | None, seed: int,
                   estimates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"task_id": t.task_id, "generator": t.spec.generator, "version": t.spec.version,
             "verifier": t.spec.verifier, "kind": t.spec.kind, "split": t.split,
             "path": t.task_id, "source_table": t.spec.source.table,
             "source_keys": t.spec.source.keys, "content_hashes": t.spec.source.content_hashes,
             "group_key": t.spec.group_key, "template_hash": t.template_hash,
             "agent_timeout_sec": float(t.spec.agent_timeout_sec),
             "context_tokens": t.spec.extra_metadata.get("context_tokens"),
             "learnability": _learnability_json(t.spec.extra_metadata),
             "seed": seed,
             "validation": validation,
             "difficulty": json.dumps(estimates[t.task_id], sort_keys=True)
             if t.task_id in estimates else None,
             "status": "active", "retired_in": None, "retired_by": None}
            for t in sorted(kept, key=lambda t: t.task_id)]


def _learnability_json(metadata: dict[str, Any]) -> str | None:
    """A task's `learn_*` figures (its label field's learnability) as JSON, else None."""
    figures = {k.removeprefix("learn_"): v for k, v in sorted(metadata.items())
               if k.startswith("learn_")}
    return json.dumps(figures, sort_keys=True) if figures else None


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame([{k: r.get(k) for k in MANIFEST_SCHEMA} for r in rows],
                        schema=MANIFEST_SCHEMA)


def _write_manifest(rows: list[dict[str, Any]], path: Path) -> None:
    """The manifest: active tasks, then the retired ones (`rlforge.tasks.versions`)."""
    _frame(rows).write_parquet(path, statistics=False)


def _record(con, opts: BuildOptions, manifest: list[dict[str, Any]],
            drops: list[dict[str, str]], build_id: str, version: dict[str, Any] | None) -> None:
    now = db.now()
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM tasks WHERE out_dir = ?", [str(opts.out.resolve())])
        rows = [(r["task_id"], r["generator"], r["version"], r["verifier"], r["kind"], r["split"],
                 str((opts.out / r["path"]).resolve()), str(opts.out.resolve()), r["source_table"],
                 r["source_keys"], r["content_hashes"], r["group_key"], r["template_hash"],
                 opts.seed, opts.validate, build_id, now) for r in manifest]
        db.insert_rows(con, "tasks", rows)
        db.insert_rows(con, "task_drops", [(build_id, d["generator"], d["source"], d["task_id"],
                                            d["reason"], now) for d in drops])
        if version is not None:
            versions.record_version(con, opts.out, manifest, version)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
