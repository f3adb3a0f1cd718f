"""Every command as a CI log and a terminal show it: no cell cut to "…", no path wrapped.

rich squeezes output that goes to no terminal into 80 columns; a CI log then showed ids
as `run_…`, headers as `statu`, paths in 14-character pieces and `--help` without the
ends of long flag names. Commands run as subprocesses here, with their output in a real
pipe or a real pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import select
import struct
import subprocess
import sys
import termios
import fcntl
from pathlib import Path

import pytest

from cli_commands import LEAVES
from fault_server import FaultServer
from paths import SAMPLE_DATA


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RLFORGE_") and k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    env.update(RLFORGE_DB=str(tmp / "rl.duckdb"), HOME=str(tmp), **extra)
    return env


def in_pipe(tmp: Path, *args, check: bool = True) -> str:
    proc = subprocess.run([sys.executable, "-m", "rlforge", *map(str, args)], cwd=tmp,
                          env=_env(tmp), capture_output=True, text=True, timeout=600)
    assert not check or proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def in_terminal(tmp: Path, *args, columns: int = 120) -> str:
    """Run with stdout and stderr on a pseudo-terminal `columns` wide; what it showed."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "rlforge", *map(str, args)], cwd=tmp,
                            env=_env(tmp, TERM="xterm"), stdin=subprocess.DEVNULL,
                            stdout=side, stderr=side, close_fds=True)
    os.close(side)
    out = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(main)
    assert proc.returncode == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


def assert_whole(text: str, root: Path | None, what: str) -> None:
    """No cell cut short, and every path under `root` whole on its line (a terminal too
    narrow for a path may wrap it: `root` None)."""
    assert "…" not in text, f"{what}: a cell was cut:\n{text}"
    if root is None:
        return
    base = str(root)
    head = base[:12]
    for line in text.splitlines():
        at = line.find(head)
        while at >= 0:
            assert line[at:].startswith(base), f"{what}: a path was wrapped:\n{text}"
            at = line.find(head, at + 1)


@pytest.mark.parametrize("path", [" ".join(p) for p in LEAVES])
def test_help_is_whole_in_a_pipe_and_a_terminal(tmp_path, path):
    words = path.split()
    assert_whole(in_pipe(tmp_path, *words, "--help"), tmp_path, f"{path} --help | cat")
    assert_whole(in_terminal(tmp_path, *words, "--help"), None, f"{path} --help")


def _git_repo(path: Path) -> Path:
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=Dev", "-c", "user.email=dev@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i, message in enumerate(["Initial import", "Fix the parser\n\nFixes #10003"]):
        (path / "f.txt").write_text(f"{i}\n")
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", message], check=True)
    return path


def test_a_session_keeps_cells_and_paths_whole(tmp_path):
    """The commands of the main job and after it, over a project in a deep directory, as
    CI runs them (a pipe) and a few as a person sees them (a terminal). Left out: `ray
    check` (starts a cluster) and `sandbox prepare-env` (builds a venv): their --help is
    walked above. Long work (build-tasks, validate) says what it does on the way."""
    root = tmp_path / "company-wide-projects" / "support-and-operations-analytics"
    root.mkdir(parents=True)
    tasks, runs = root / "generated-harbor-tasks", root / "evaluation-runs"
    steps = [
        ("init", root / "project-config"),
        ("ingest", "tickets", SAMPLE_DATA / "tickets" / "tickets.csv"),
        ("ingest", "logs", SAMPLE_DATA / "logs" / "billing-api.jsonl"),
        ("ingest", "commits", _git_repo(root / "customer-facing-application")),
        ("links",),
        ("status",),
        ("config", "show"),
        ("sandbox", "check"),
        ("sandbox", "run", "--", "echo", "hello"),
        ("build-tasks", "--list"),
        ("build-tasks", "--out", tasks, "--limit", "4", "--generators", "tickets.triage"),
        ("validate", tasks),
        ("templates",),
        ("export", "tasks", tasks, "--format", "jsonl", "--out", root / "tasks-export"),
    ]
    for step in steps:
        out = in_pipe(root, *step)
        assert_whole(out, root, " ".join(map(str, step)) + " | cat")
        if step[0] in ("build-tasks", "validate") and "--list" not in step:
            assert f"{step[0]}: " in out, out  # its status lines
    server = FaultServer().start()
    try:  # two runs of the tasks against an endpoint on 127.0.0.1, then what reads them
        for name in ("baseline-evaluation-run", "candidate-evaluation-run"):
            step = ("run", tasks, "--base-url", server.url, "--model", "ok", "--samples", "2",
                    "--runs-dir", runs, "--run-id", name)
            assert_whole(in_pipe(root, *step), root, " ".join(map(str, step)) + " | cat")
    finally:
        server.stop()
    for step in [("rescore", "baseline-evaluation-run", "--runs-dir", runs),
                 ("calibrate", "baseline-evaluation-run", "candidate-evaluation-run"),
                 ("export", "rollouts", "baseline-evaluation-run", "--format", "sft",
                  "--runs-dir", runs, "--out", root / "rollouts-export"),
                 ("tasks", "diff", "1", "1", "--dir", tasks),
                 ("report", "baseline-evaluation-run", "--runs-dir", runs, "--out", root / "r.html"),
                 ("report", "--compare", "baseline-evaluation-run", "candidate-evaluation-run",
                  "--runs-dir", runs, "--out", root / "c.html")]:
        assert_whole(in_pipe(root, *step), root, " ".join(map(str, step)) + " | cat")
    for step in [("status",), ("build-tasks", "--list"), ("config", "show"),
                 ("links",), ("sandbox", "check")]:
        assert_whole(in_terminal(root, *step), None, " ".join(step))
