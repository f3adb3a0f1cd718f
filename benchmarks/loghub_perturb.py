"""How the template miner holds up on what unseen systems do differently: a synthetic
perturbation suite over every labelled Loghub system, and leave-one-out over the systems.

The perturbation suite rewrites the message (the `Content` part) of each system's 2,000
labelled lines, keeping each line's header and its ground-truth event, and runs the
result through `rlforge ingest logs` exactly as `loghub_accuracy.py` does (same format
string, masks, redaction default). What changes within an event is only what one logging
statement of another system might do from one call to the next:

- `spaces`: one token boundary of about half the lines padded with a run of 2-4 spaces.
- `optional`: one trailing `key=value` field (one key per event) on about half the lines
  of each event and absent on the others.
- `list`: a list of 1..5 ids (one separator and id shape per event: `, ` or `,` or a
  space; numbers, `id-N`, `0x..` or `nodeNN`) inserted at one place per event.
- `timestamp`: a human-readable time stamp inserted at one place per event (one style per
  event: ctime with the day of month padded as in `Sun Jul  3 10:05:25 2005`,
  `03/Jul/2005:10:05:25 +0000`, `Jul 3, 2005 10:05:25 PM`, `2005-07-03 10:05:25,123`,
  syslog's `Jul  3 10:05:25`).
- `reorder`: two or three `key=value` fields appended to every line of an event, their
  order shuffled from line to line.

Per system and perturbation it reports GA, PA and *split events*: ground-truth events
whose lines the miner maps to more than one template that it did not split on the
unperturbed lines (events split already there are counted apart, in `base`). The PA
truth of a perturbed line is its event's template with the inserted text added, every
inserted value (ids, the list, the time stamp) as `<*>`; for `reorder` PA compares the
fields as a set, since no single order is right. drain3 0.9.11 runs on the same
perturbed contents with the benchmark's masks and settings.

`--leave-one-out`: for each system, the miner's settings that `loghub_accuracy.py`'s grid
could choose are chosen on the other ten (best mean GA) and scored on the one left out,
next to the frozen defaults on it.

    .venv/bin/python benchmarks/loghub_perturb.py [--data ../shared/data/loghub]
        [--perturb spaces,optional,...] [--no-drain3] [--leave-one-out] [SYSTEM ...]
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import hashlib
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import loghub_accuracy as acc  # noqa: E402

from rlforge import db  # noqa: E402
from rlforge.config import setting  # noqa: E402
from rlforge.ingest import logs  # noqa: E402
from rlforge.ingest import templates as tm  # noqa: E402
from rlforge.ingest.load import make_redactor  # noqa: E402


class Line(NamedTuple):
    prefix: str  # the header text before the message
    content: str
    event: str
    template: str


def read_lines(data: Path, system: str) -> list[Line]:
    """Each labelled line: raw header text, message, event id and true template."""
    with open(data / system / f"{system}_2k.log_structured.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    raw = (data / system / f"{system}_2k.log").read_text(encoding="utf-8").split("\n")
    out = []
    for text, row in zip(raw, rows):
        text, content = text.rstrip(), row["Content"].rstrip()
        if not text.endswith(content):
            raise SystemExit(f"{system}: line {row['LineId']} does not end with its Content")
        out.append(Line(text[:len(text) - len(content)], content, row["EventId"],
                        row["EventTemplate"]))
    return out


# --- perturbations ----------------------------------------------------------------------
# Each takes the event's own random source (the same for every line of the event: what
# the logging statement fixes) and the line's (what varies per call), and returns the new
# content and its true template.

def _event_rng(system: str, kind: str, event: str) -> random.Random:
    seed = hashlib.sha1(f"{system}/{kind}/{event}".encode()).hexdigest()
    return random.Random(int(seed[:12], 16))


def _insert(content: str, template: str, at: int, text: str, tpl_text: str) -> tuple[str, str]:
    """Insert after word `at` of the message (0: at the end)."""
    words, twords = content.split(" "), template.split(" ")
    if at == 0 or at >= len(words) or at >= len(twords):
        return f"{content} {text}", f"{template} {tpl_text}"
    return (" ".join(words[:at] + [text] + words[at:]),
            " ".join(twords[:at] + [tpl_text] + twords[at:]))


def p_spaces(ev: random.Random, rng: random.Random, line: Line) -> tuple[str, str]:
    spaces = [i for i, c in enumerate(line.content) if c == " "]
    if not spaces or rng.random() < 0.5:
        return line.content, line.template
    i = rng.choice(spaces)
    return line.content[:i] + " " * rng.randint(2, 4) + line.content[i + 1:], line.template


KEYS = ["retry", "trace_id", "elapsed_ms", "attempt", "shard", "span", "queue_depth"]


def _value(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return str(rng.randint(0, 100000))
    if kind == 1:
        return f"{rng.getrandbits(32):08x}"
    return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"


def p_optional(ev: random.Random, rng: random.Random, line: Line) -> tuple[str, str]:
    key = ev.choice(KEYS)
    if rng.random() < 0.5:
        return line.content, line.template
    return f"{line.content} {key}={_value(rng)}", f"{line.template} {key}=<*>"


def p_list(ev: random.Random, rng: random.Random, line: Line) -> tuple[str, str]:
    sep = ev.choice([", ", ",", " "])
    shape = ev.randrange(4)
    at = ev.choice([0, 1, 2])

    def one() -> str:
        n = rng.randint(1, 99999)
        return [str(n), f"id-{n}", f"0x{n:x}", f"node{n % 100:02d}"][shape]

    items = sep.join(one() for _ in range(rng.randint(1, 5)))
    return _insert(line.content, line.template, at, f"ids {items}", "ids <*>")


_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _stamp(style: int, t: dt.datetime) -> str:
    mon, day = _MONTHS[t.month - 1], _DAYS[t.weekday()]
    hms = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if style == 0:
        return f"{day} {mon} {t.day:>2} {hms} {t.year}"
    if style == 1:
        return f"{t.day:02d}/{mon}/{t.year}:{hms} +0000"
    if style == 2:
        hour = t.hour % 12 or 12
        return f"{mon} {t.day}, {t.year} {hour}:{t.minute:02d}:{t.second:02d} " + \
            ("AM" if t.hour < 12 else "PM")
    if style == 3:
        return f"{t.year}-{t.month:02d}-{t.day:02d} {hms},{t.microsecond // 1000:03d}"
    return f"{mon} {t.day:>2} {hms}"


def p_timestamp(ev: random.Random, rng: random.Random, line: Line) -> tuple[str, str]:
    style = ev.randrange(5)
    at = ev.choice([0, 1, 2])
    word = ev.choice(["at", "since", "until"])
    t = dt.datetime(2005, 6, 1) + dt.timedelta(seconds=rng.randint(0, 90 * 86400),
                                               microseconds=rng.randint(0, 999999))
    return _insert(line.content, line.template, at, f"{word} {_stamp(style, t)}",
                   f"{word} <*>")


def p_reorder(ev: random.Random, rng: random.Random, line: Line) -> tuple[str, str]:
    keys = ev.sample(KEYS, ev.choice([2, 3]))
    rng.shuffle(keys)
    return (line.content + "".join(f" {k}={_value(rng)}" for k in keys),
            line.template + "".join(f" {k}=<*>" for k in keys))


PERTURBATIONS: dict[str, Callable] = {
    "spaces": p_spaces, "optional": p_optional, "list": p_list, "timestamp": p_timestamp,
    "reorder": p_reorder}


def perturb(system: str, kind: str, lines: list[Line]) -> list[Line]:
    rng = random.Random(f"{system}/{kind}")
    fn = PERTURBATIONS[kind]
    out = []
    for line in lines:
        content, template = fn(_event_rng(system, kind, line.event), rng, line)
        out.append(line._replace(content=content, template=template))
    return out


# --- scoring ----------------------------------------------------------------------------

def split_events(predicted: list, events: list[str]) -> set[str]:
    """Ground-truth events whose lines got more than one predicted template."""
    seen: dict[str, set] = collections.defaultdict(set)
    for p, e in zip(predicted, events):
        seen[e].add(p)
    return {e for e, ps in seen.items() if len(ps) > 1}


def _pa_key(template: str, kind: str) -> str:
    canon = acc.canonical(template)
    if kind != "reorder":
        return canon
    toks = canon.split(" ")
    kv = sorted(t for t in toks if "=" in t)
    return " ".join([t for t in toks if "=" not in t] + kv)


class Result(NamedTuple):
    ga: float
    pa: float
    split: set[str]


def score(predicted: list, texts: list[str], lines: list[Line], kind: str) -> Result:
    events = [ln.event for ln in lines]
    truth = [_pa_key(ln.template, kind) for ln in lines]
    memo: dict[str, str] = {}
    pa = sum(memo.setdefault(t, _pa_key(t, kind)) == want
             for t, want in zip(texts, truth)) / len(lines)
    return Result(acc.grouping_accuracy(predicted, events), pa,
                  split_events(predicted, events))


def run_rlforge(lines: list[Line], spec: dict, work: Path, name: str) -> tuple[list, list]:
    """Template id and text of each line, through `ingest_file` (current settings)."""
    log = work / f"{name}.log"
    log.write_text("".join(ln.prefix + ln.content + "\n" for ln in lines), encoding="utf-8")
    dbfile = work / f"{name}.duckdb"
    if dbfile.exists():
        dbfile.unlink()
    con = db.connect(dbfile)
    try:
        result = logs.ingest_file(con, log, fmt=spec["log_format"], masks=spec["regex"],
                                  redactor=make_redactor(con, setting("redact").default))
        if result.status != "ok":
            raise SystemExit(f"{name}: ingest failed: {result.error}")
        rows = con.execute("SELECT l.template_id, t.template FROM log_lines l "
                           "LEFT JOIN log_templates t USING (template_id) "
                           "ORDER BY l.line_no").fetchall()
    finally:
        con.close()
    if len(rows) != len(lines):
        raise SystemExit(f"{name}: {len(rows)} lines loaded of {len(lines)}")
    return [r[0] for r in rows], [r[1] or "" for r in rows]


def run_drain3(lines: list[Line], spec: dict) -> tuple[list, list] | None:
    return acc.drain3_templates([ln.content for ln in lines], spec)


def suite(data: Path, systems: list[str], formats: dict, work: Path, kinds: list[str],
          with_drain: bool) -> int:
    who = ["rlforge"] + (["drain3"] if with_drain else [])
    # (who, kind) -> system -> Result, kind "clean" for the unperturbed lines
    got: dict[tuple[str, str], dict[str, Result]] = collections.defaultdict(dict)
    for s in systems:
        clean = read_lines(data, s)
        for kind in ["clean"] + kinds:
            lines = clean if kind == "clean" else perturb(s, kind, clean)
            runs = {"rlforge": run_rlforge(lines, formats[s], work, f"{s}-{kind}")}
            if with_drain:
                d = run_drain3(lines, formats[s])
                if d is None:
                    raise SystemExit("drain3 is not installed (pip install -e .[bench]) "
                                     "or pass --no-drain3")
                runs["drain3"] = d
            for name, (pred, texts) in runs.items():
                got[(name, kind)][s] = score(pred, texts, lines, kind)
        print(f"  {s} done", file=sys.stderr, flush=True)
    for name in who:
        print(f"\n{name}: GA / PA / new split events per system and perturbation "
              f"(base: events split on the unperturbed lines)")
        head = f"{'system':<12} {'base':>10}" + "".join(f" {k:>20}" for k in ["clean"] + kinds)
        print(head)
        total_new = collections.Counter()
        for s in systems:
            base = got[(name, "clean")][s].split
            cells = []
            for kind in ["clean"] + kinds:
                r = got[(name, kind)][s]
                new = len(r.split - base)
                total_new[kind] += new
                cells.append(f"{r.ga:.3f}/{r.pa:.3f}/{new:>3}")
            print(f"{s:<12} {len(base):>10}" + "".join(f" {c:>20}" for c in cells))
        for label, agg in (("mean", statistics.mean), ("worst", min)):
            cells = [f"{agg(got[(name, k)][s].ga for s in systems):.3f}/"
                     f"{agg(got[(name, k)][s].pa for s in systems):.3f}/"
                     + (f"{total_new[k]:>3}" if label == "mean" else "  -")
                     for k in ["clean"] + kinds]
            print(f"{label:<12} {'':>10}" + "".join(f" {c:>20}" for c in cells))
        allga = {s: statistics.mean(got[(name, k)][s].ga for k in kinds) for s in systems}
        worst = min(allga, key=allga.__getitem__)
        print(f"mean GA over perturbations: {statistics.mean(allga.values()):.4f}; worst "
              f"system {worst} {allga[worst]:.4f}; new split events in all: "
              f"{sum(total_new[k] for k in kinds)}  (mean row: total new splits)")
    return 0


def leave_one_out(data: Path, systems: list[str], formats: dict, work: Path) -> int:
    """Settings chosen on the other systems, scored on each one left out; and defaults."""
    configs = acc.grid_settings()
    print(f"scoring {len(configs)} settings x {len(systems)} systems ...", file=sys.stderr,
          flush=True)
    table = acc.score_all(data, systems, formats, work, configs)
    keys = list(table)
    default = tuple(sorted({k: getattr(tm.SETTINGS, k) for k in acc.GRID}.items()))
    print(f"{'held out':<12} {'GA':>6} {'PA':>6} {'frozen GA':>9} {'frozen PA':>9}  chosen")
    held, frozen = [], []
    for s in systems:
        rest = [x for x in systems if x != s]
        best = max(keys, key=lambda c: (statistics.mean(table[c][x].ga for x in rest),
                                        c == default, -keys.index(c)))
        got, fz = table[best][s], table[default][s]
        held.append(got)
        frozen.append(fz)
        chosen = "defaults" if best == default else ", ".join(f"{n}={v}" for n, v in best)
        print(f"{s:<12} {got.ga:>6.4f} {got.pa:>6.4f} {fz.ga:>9.4f} {fz.pa:>9.4f}  {chosen}")
    for label, agg in (("mean", statistics.mean), ("worst", min)):
        print(f"{label:<12} {agg(g.ga for g in held):>6.4f} {agg(g.pa for g in held):>6.4f} "
              f"{agg(g.ga for g in frozen):>9.4f} {agg(g.pa for g in frozen):>9.4f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "loghub")
    ap.add_argument("--perturb", default=",".join(PERTURBATIONS),
                    help="comma-separated perturbations (default: all)")
    ap.add_argument("--no-drain3", action="store_true", help="do not run drain3 beside")
    ap.add_argument("--leave-one-out", action="store_true")
    ap.add_argument("systems", nargs="*", default=acc.SYSTEMS)
    args = ap.parse_args(argv)
    kinds = [k for k in args.perturb.split(",") if k]
    unknown = [k for k in kinds if k not in PERTURBATIONS]
    if unknown:
        ap.error(f"unknown perturbation {', '.join(unknown)} (known: {', '.join(PERTURBATIONS)})")
    formats = json.loads((args.data / "formats.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        if args.leave_one_out:
            return leave_one_out(args.data, args.systems, formats, Path(tmp))
        return suite(args.data, args.systems, formats, Path(tmp), kinds, not args.no_drain3)


if __name__ == "__main__":
    raise SystemExit(main())
