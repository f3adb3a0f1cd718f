"""`rlforge report`: a run's self-contained HTML report, or two runs compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from rlforge.cli.common import console, state


def _pct(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def report(
    ctx: typer.Context,
    run_id: Optional[str] = typer.Argument(None, help="a run id (a directory under the runs "
                                           "directory) or the path of a run's directory"),
    compare: Optional[tuple[str, str]] = typer.Option(None, "--compare", metavar="RUN_A RUN_B",
                                                      help="compare two runs (B against A)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file to write (default: "
                                       "report.html, or compare.html with --compare)"),
    max_rollouts: int = typer.Option(5000, "--max-rollouts", min=0, help="rollouts included "
                                     "in the page's browser (statistics always use all)"),
    runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="where runs/<run_id>/ "
                                            "live (default: run.runs_dir)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable summary"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print errors only"),
) -> None:
    """Write a run's report as one HTML file that works offline, or compare two runs."""
    from rlforge.report import build_compare, build_report

    if (run_id is None) == (compare is None):
        raise typer.BadParameter("give a RUN_ID, or --compare RUN_A RUN_B (not both)")
    cfg = state(ctx).config
    where = cfg.get("run.runs_dir", str(runs_dir) if runs_dir else None)
    if compare:
        result = build_compare(compare[0], compare[1], out or Path("compare.html"), runs_dir=where)
    else:
        assert run_id is not None  # exactly one of the two was given (checked above)
        result = build_report(run_id, out or Path("report.html"), runs_dir=where,
                              max_rollouts=max_rollouts)
    d = result.to_dict()
    if as_json:
        console.print_json(json.dumps(d))
        return
    if quiet:
        return
    if compare:
        t = Table("generator", "pass A", "pass B", "Δ pass", "reward A", "reward B",
                  title=f"{d['a']} → {d['b']}")
        for g in d["generators"]:
            pr, mr = g["pass_rate"], g["mean_reward"]
            delta = "–" if pr["delta"] is None else f"{pr['delta']:+.1%}"
            t.add_row(g["generator"], _pct(pr["a"]), _pct(pr["b"]), delta,
                      "–" if mr["a"] is None else f"{mr['a']:.3f}",
                      "–" if mr["b"] is None else f"{mr['b']:.3f}")
        console.print(t)
        console.print(f"{len(d['flips'])} tasks flipped: {d['fixed']} fixed, {d['broken']} broken")
        labels = d["difficulty"]["labels"]
        h = Table("generator", "run", *labels, title="tasks by pass rate")
        for g in d["difficulty"]["generators"]:
            h.add_row(g["generator"], "A", *map(str, g["a"]))
            h.add_row("", f"B ({g['easier']} easier, {g['harder']} harder)", *map(str, g["b"]))
        console.print(h)
    else:
        console.print(f"run {d['run_id']}: {d['rollouts']:,} rollouts, pass rate "
                      f"{_pct(d['pass_rate'])}, invalid {_pct(d['infra_error_rate'])}")
    console.print(f"wrote {d['out']} ({d['bytes'] / 1024:,.0f} KB)", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
