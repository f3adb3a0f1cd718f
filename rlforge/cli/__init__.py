"""The `rlforge` command line: typer commands that parse, call the library, and print.

Exit codes: 0 ok, 1 user error (one line, no traceback), 2 bad flags, 3 pass rate below
the gate, 4 infrastructure error rate above the gate, 130 interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from rlforge import __version__
from rlforge.cli.tuning import tune_environment
from rlforge.config import Config
from rlforge.errors import RlforgeError

# Before any command module is imported: they import pyarrow and polars, which read these
# settings once, when they load. Nothing imported above loads either.
tune_environment()

from rlforge.cli.common import State, console, err_console  # noqa: E402


def _help_width() -> None:
    """--help in a pipe (a CI log, `| less`): 120 columns, not rich's 80, which cut the
    names of long flags; a terminal, COLUMNS or TERMINAL_WIDTH decide otherwise."""
    import os

    from typer import rich_utils

    if not (sys.stdout.isatty() or os.environ.get("COLUMNS") or rich_utils.MAX_WIDTH):
        rich_utils.MAX_WIDTH = 120


_help_width()

class RlforgeGroup(TyperGroup):
    """Turns rlforge errors into one clear line and an exit code, Ctrl-C into 130."""

    def invoke(self, ctx):  # noqa: D102
        try:
            return super().invoke(ctx)
        except RlforgeError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None


app = typer.Typer(
    cls=RlforgeGroup,
    help="Turn tickets, commits and ops logs into verifiable RL tasks, and run models on them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        console.print(f"rlforge {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    db: Optional[Path] = typer.Option(None, "--db", help="DuckDB file (env RLFORGE_DB; default rlforge.duckdb)"),
    config: Optional[Path] = typer.Option(None, "--config", help="config file (env RLFORGE_CONFIG; default ./rlforge.toml)"),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="show the version and exit"),
) -> None:
    """rlforge: records of real work in, verifiable RL tasks and scored rollouts out."""
    try:
        cfg = Config.load(config)
    except RlforgeError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    cfg.with_flags(db=str(db) if db else None)
    ctx.obj = State(config=cfg)


def _register() -> None:
    from rlforge.cli import admin, ingest

    admin.register(app)
    app.add_typer(ingest.app, name="ingest")
    for optional in ("sandbox", "tasks", "run", "export", "report", "templates", "links", "ray",
                     "flywheel", "forget"):
        try:
            module = __import__(f"rlforge.cli.{optional}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"rlforge.cli.{optional}":
                raise
            continue
        module.register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # raised outside a command (e.g. during import)
        _exit(130)
    except SystemExit as exc:
        code = exc.code
        if code is not None and not isinstance(code, int):  # sys.exit("message")
            print(code, file=sys.stderr)
            code = 1
        _exit(code or 0)
    _exit(0)


def _exit(code: int) -> None:
    """End the process once the command is done, without the interpreter's teardown.

    Freeing every module of polars, pyarrow and duckdb at exit takes ~0.1 s, which is a
    tenth of a short command. Nothing needs that teardown once the atexit handlers (ours
    and the libraries': servers stopped, pools joined) have run and the output is flushed,
    so the process ends there. The normal exit is taken instead while a non-daemon thread
    still runs (the interpreter waits for it) or a profiler or tracer is attached (it
    writes its output after the program returns).
    """
    import atexit
    import os
    import threading

    main_thread = threading.main_thread()
    if (sys.getprofile() is not None or sys.gettrace() is not None
            or any(t is not main_thread and not t.daemon and t.is_alive()
                   for t in threading.enumerate())):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed pipe or stream
            pass
    os._exit(code)
