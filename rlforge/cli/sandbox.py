"""`rlforge sandbox check|run|prepare-env`: prove the sandbox holds; run code as a verifier would."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlforge.cli.common import console, err_console, state
from rlforge.config import default_cache_dir
from rlforge.errors import SandboxUnavailable, UserError
from rlforge.sandbox import prepare_env, run, run_checks, spec_from_settings

sandbox_app = typer.Typer(help="Run untrusted code under bubblewrap, and prove it is contained.",
                          no_args_is_help=True)

TIMEOUT_EXIT = 124  # what coreutils `timeout` returns


@sandbox_app.command("check")
def check(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Test every sandbox property live on this machine; exit 1 if any fails (CI runs this)."""
    results = run_checks()
    ok = all(c.ok for c in results)
    if as_json:
        console.print_json(json.dumps({"ok": ok, "checks": [
            {"name": c.name, "ok": c.ok, "detail": c.detail} for c in results]}))
    else:
        table = Table("property", "result", "observed", title="rlforge sandbox check")
        for c in results:
            table.add_row(c.name, "[green]pass[/]" if c.ok else "[bold red]FAIL[/]", escape(c.detail))
        console.print(table)
        failed = sum(not c.ok for c in results)
        console.print("[green]all properties hold[/]" if ok else
                      f"[bold red]{failed} of {len(results)} properties failed[/]")
    if not ok:
        raise typer.Exit(1)


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--env")
        env[key] = value
    return env


@sandbox_app.command("run")
def run_command(
    ctx: typer.Context,
    cmd: List[str] = typer.Argument(..., help="the command and its arguments, after --"),
    workspace: Optional[Path] = typer.Option(None, "--workspace", "-w", help="directory bound read-write at /app"),
    tests: Optional[Path] = typer.Option(None, "--tests", help="directory bound read-only at /tests"),
    logs: Optional[Path] = typer.Option(None, "--logs", help="directory bound read-write at /logs/verifier"),
    venv: Optional[Path] = typer.Option(None, "--venv", help="prepared environment mounted at /opt/venv"),
    env: List[str] = typer.Option([], "--env", "-e", help="KEY=VALUE added to the clean environment"),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="seconds before the whole tree is killed "
                                            "(setting sandbox.timeout)"),
    memory: Optional[int] = typer.Option(None, "--memory", help="memory of the whole sandbox, MB: its "
                                         "processes, page cache and tmpfs pages; also each "
                                         "process's address-space limit (setting sandbox.memory_mb)"),
    cpus: Optional[float] = typer.Option(None, "--cpus", help="CPU quota of the whole sandbox "
                                         "(setting sandbox.cpus)"),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="bwrap, or none to run WITHOUT "
                                          "isolation (setting sandbox.mode)"),
) -> None:
    """Run a command exactly as a verifier would; print its output and exit with its code.

    Exit code: the command's own (137 when the kernel killed it at the memory limit), 124
    if it timed out, 1 if the sandbox itself failed.
    """
    for name, path in (("--workspace", workspace), ("--tests", tests), ("--logs", logs), ("--venv", venv)):
        if path is not None and not path.is_dir():
            raise UserError(f"{name} {path}: not a directory")
    cfg = state(ctx).config
    spec = spec_from_settings(
        cfg.settings().sandbox, mode=cfg.get("sandbox.mode", sandbox), timeout_sec=timeout, memory_mb=memory, cpus=cpus,
        workspace=workspace and workspace.resolve(), tests=tests and tests.resolve(),
        logs=logs and logs.resolve(), venv=venv and venv.resolve(), env=_env_pairs(env))
    result = run(cmd, spec)
    if result.failure is not None:
        raise SandboxUnavailable(f"{result.failure}; the command did not run")
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.flush()
    for stream, cut in (("stdout", result.stdout_truncated), ("stderr", result.stderr_truncated)):
        if cut:
            err_console.print(f"[yellow]rlforge:[/] {stream} truncated to {spec.output_limit:,} bytes")
    for note in result.notes:
        err_console.print(f"[yellow]rlforge:[/] {escape(note)}")
    if result.timed_out:
        err_console.print(f"[yellow]rlforge:[/] timed out after {spec.timeout_sec:g}s; process tree killed")
        raise typer.Exit(TIMEOUT_EXIT)
    raise typer.Exit(result.exit_code if result.exit_code is not None else 1)


@sandbox_app.command("prepare-env")
def prepare_env_command(
    ctx: typer.Context,
    requirements: List[str] = typer.Argument(None, help="pip requirement specifiers"),
    requirements_file: Optional[Path] = typer.Option(None, "--requirements", "-r",
                                                     help="read requirements from this file"),
) -> None:
    """Build (once, cached by content hash) a venv for sandboxed code and print its path."""
    reqs = list(requirements or [])
    if requirements_file is not None:
        if not requirements_file.is_file():
            raise UserError(f"{requirements_file}: no such file")
        reqs += [line.strip() for line in requirements_file.read_text().splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
    path = prepare_env(reqs, default_cache_dir(state(ctx).config.settings()))
    console.print(str(path), highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")
