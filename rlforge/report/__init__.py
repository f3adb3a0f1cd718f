"""`rlforge report`: a run as one self-contained HTML page, or two runs compared.

The page works offline (no CDN, no fetch): charts are inline SVG drawn by `svg`, the
stylesheet and script are inlined from `assets`, and the rollouts travel in the page as
JSON. Numbers come from the run's own files through `data`, with `rlforge.stats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlforge.errors import UserError
from rlforge.report import data as rd
from rlforge.report.page import render_compare, render_run


@dataclass
class ReportResult:
    """What `build_report` and `build_compare` wrote, with the figures they printed."""

    out: str
    bytes: int
    summary: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "bytes": self.bytes, **self.summary}


def _write(out: Path, html: str) -> int:
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; give a file name such as report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode("utf-8")
    out.write_bytes(data)
    return len(data)


def build_report(run: str | Path, out: Path, *, runs_dir: str | Path = "runs",
                 max_rollouts: int = 5000) -> ReportResult:
    """Write the HTML report of one run.

    Args:
        run: a run id under `runs_dir`, or a run's directory.
        out: the HTML file to write.
        runs_dir: where runs live (`run.runs_dir`).
        max_rollouts: rollouts included in the page's browser (statistics use all).
    """
    d = rd.load_run(run, runs_dir)
    if not d.records:
        raise UserError(f"run {d.run_id} has no rollouts yet; nothing to report")
    size = _write(out, render_run(d, max_rollouts))
    s = d.summary
    return ReportResult(str(out), size, {
        "run_id": d.run_id, "rollouts": len(d.records), "browsable": min(len(d.records), max_rollouts),
        "pass_rate": s.get("pass_rate"), "mean_reward": s.get("mean_reward"),
        "pass_at_k": s.get("pass_at_k"), "infra_error_rate": s.get("infra_error_rate"),
        "by_generator": {g: {k: v[k] for k in ("rollouts", "pass_rate", "mean_reward")}
                         for g, v in s.get("by_generator", {}).items()}})


def build_compare(run_a: str | Path, run_b: str | Path, out: Path, *,
                  runs_dir: str | Path = "runs") -> ReportResult:
    """Write the HTML comparison of run B against run A (deltas are B minus A)."""
    a, b = rd.load_run(run_a, runs_dir), rd.load_run(run_b, runs_dir)
    cmp = rd.compare(a, b)
    size = _write(out, render_compare(cmp, a, b))
    return ReportResult(str(out), size, {k: v for k, v in cmp.items() if k != "task_rows"})
