"""What every command module shares: the consoles and the state the root callback keeps."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import typer
from rich.console import Console, ConsoleDimensions
from rich.progress import (BarColumn, Progress, ProgressColumn, SpinnerColumn, TaskID,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table
from rich.text import Text

from rlforge.config import Config

#: how wide output to a pipe or a file (a CI log) is, when COLUMNS does not say: wide
#: enough that tables keep paths, ids and headers whole (rich would squeeze them into 80)
PIPE_WIDTH = 240


class _Console(Console):
    """A rich console that is `PIPE_WIDTH` wide when it writes to no terminal and COLUMNS
    is unset; on a terminal, the terminal's width."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not self.is_terminal and not self._environ.get("COLUMNS"):
            return ConsoleDimensions(PIPE_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


console = _Console()
err_console = _Console(stderr=True)


@dataclass
class State:
    """What the root callback resolved, handed to every command through ctx.obj."""

    config: Config
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def db_path(self) -> Path:
        return Path(self.config.get("db"))


def shown_path(path: str) -> str:
    """A stored (absolute) path as the table shows it: relative to the working directory
    when it lies under it, so the column stays narrow in an 80-column CI log."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def state(ctx: typer.Context) -> State:
    """The State the root callback stored (commands call this first)."""
    return ctx.find_root().obj


# --- selecting tasks by difficulty (build-tasks, export tasks, run) -------------------------

def difficulty_option():  # noqa: D103 - the options' help says it
    return typer.Option(None, "--difficulty", metavar="LOW:HIGH|auto",
                        help="keep tasks whose measured pass rate lies in [LOW, HIGH] (e.g. "
                        "0.2:0.8); auto: the band of the curriculum schedule for the model's "
                        "latest mean pass rate")


def difficulty_model_option():
    return typer.Option(None, "--difficulty-model", metavar="NAME",
                        help="whose pass rates --difficulty reads (default: the only model "
                        "calibrated)")


def unmeasured_option():
    return typer.Option(None, "--unmeasured", metavar="keep|drop",
                        help="tasks never measured for the model: keep (default) or drop")


def selection(cfg, band: str | None, model: str | None, unmeasured: str | None):
    """The difficulty selection the flags ask for (`rlforge.difficulty.Selection`); the
    schedule of `--difficulty auto` comes from rlforge.toml's curriculum.stages."""
    from rlforge import difficulty

    stages = cfg.get("curriculum.stages") or None
    return difficulty.make_selection(band, model, unmeasured, schedule=stages)


# --- progress of long work ----------------------------------------------------------------

#: seconds between status lines when the output is not a terminal (a CI log)
STATUS_EVERY = 15.0

Update = Callable[..., None]  # (stage, done, total, note="")


def rate_eta(done: int, total: int | None, seconds: float) -> str:
    """"1.5/min, ETA 4m10s" for `done` of `total` items in `seconds` ("" until one is done;
    no ETA while the total is unknown; nothing in the first second)."""
    if done <= 0 or seconds < 1:
        return ""
    per_min = 60 * done / seconds
    rate = (f"{per_min * 60:,.1f}/h" if per_min < 1 else f"{per_min:,.1f}/min" if per_min < 100
            else f"{per_min / 60:,.1f}/s")
    if total is None or total <= done:
        return rate
    left = round((total - done) * seconds / done)
    eta = f"{left // 3600}h{left % 3600 // 60:02d}m" if left >= 3600 else \
        f"{left // 60}m{left % 60:02d}s" if left >= 60 else f"{left}s"
    return f"{rate}, ETA {eta}"


@contextlib.contextmanager
def stage_progress(verb: str, quiet: bool) -> Iterator[Update | None]:
    """A `progress(stage, done, total, note="")` callback for long work, or None when
    `quiet`; `note` says what came of the items so far ("3 kept, 40 dropped").

    On a terminal: a bar per stage (a count alone while the total is unknown) with the
    note and the time left. Elsewhere (a pipe, a CI log): one line on stderr when a stage
    starts, one every `STATUS_EVERY` seconds and one when its count reaches its total, with
    the stage's count, note, rate, time left and the time so far."""
    if quiet:
        yield None
        return
    if err_console.is_terminal:
        prog = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                        _CountColumn(), TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
                        TimeRemainingColumn(), console=err_console, transient=True)
        ids: dict[str, TaskID] = {}

        def update(stage: str, done: int, total: int | None, note: str = "") -> None:
            if stage not in ids:
                ids[stage] = prog.add_task(stage, total=total, note=note)
            prog.update(ids[stage], completed=done, total=total, note=note)

        with prog:
            yield update
        return
    started = time.monotonic()
    lock = threading.Lock()
    current: list[Any] = []  # [stage, done, total, note, when the stage started]

    def line() -> str:
        stage, done, total, note, since = current
        count = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
        now = time.monotonic()
        extra = ", ".join(x for x in (note, rate_eta(done, total, now - since)) if x)
        return f"{verb}: {stage} {count}{f' ({extra})' if extra else ''}, {now - started:,.0f}s"

    def say(stage: str, done: int, total: int | None, note: str = "") -> None:
        with lock:
            new = not current or current[0] != stage
            finished = not new and total is not None and done >= total > current[1]
            current[:] = [stage, done, total, note, time.monotonic() if new else current[4]]
            if new or finished:
                err_console.print(line(), highlight=False, soft_wrap=True, markup=False)

    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(STATUS_EVERY):
            with lock:
                if current:
                    err_console.print(line(), highlight=False, soft_wrap=True, markup=False)

    thread = threading.Thread(target=ticker, name=f"rlforge-{verb}-progress", daemon=True)
    thread.start()
    try:
        yield say
    finally:
        stop.set()


class _CountColumn(ProgressColumn):
    """done/total, or done alone while the total is unknown (never "0/None")."""

    def render(self, task) -> Text:
        if task.total is None:
            return Text(f"{int(task.completed):,}")
        return Text(f"{int(task.completed):,}/{int(task.total):,}")


def print_shares(cal: dict) -> None:
    """The saturated / dead / in-band table of a calibration, per model and generator."""
    from rlforge.difficulty import histogram_labels

    for model, per_gen in cal["shares"].items():
        t = Table("generator", "tasks", "pass rate [95%]", "saturated", "dead",
                  f"in band {cal['band']}", "tasks by pass rate",
                  title=f"difficulty of {model} ({cal['method']}, runs {', '.join(cal['runs'])})",
                  caption="tasks by pass rate: " + " | ".join(histogram_labels()))
        for gen, s in per_gen.items():
            low, high = s["pass_rate_interval"]
            rate = (f"{s['passes']}/{s['samples']} = {s['pass_rate']:.0%} "
                    f"[{low:.0%}, {high:.0%}]") if s["samples"] else "-"
            t.add_row(gen, f"{s['tasks']:,}", rate,
                      f"{s['saturated_share']:.0%} ({s['saturated']})",
                      f"{s['dead_share']:.0%} ({s['dead']})",
                      f"{s['in_band_share']:.0%} ({s['in_band']})",
                      " | ".join(str(c) for c in s["histogram"]),
                      style="bold" if gen == "all" else None)
        console.print(t)
