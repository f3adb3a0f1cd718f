"""The report pages as one self-contained HTML string each: a run, or two runs compared.

Markup is assembled here with every value escaped; charts come from `svg`, style and
script from `assets`, and the rollouts for the browser travel as a JSON block that the
script reads (never as markup). Nothing is fetched: the file works offline.
"""

from __future__ import annotations

import datetime as dt
import json
from html import escape
from typing import Any

from rlforge import __version__
from rlforge.difficulty import histogram_labels
from rlforge.report import data as rd
from rlforge.report import svg
from rlforge.report.assets import BROWSER_JS, COMPARE_JS, CSS


def pct(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}%}"


def num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def signed(v: float | None, as_pct: bool = True) -> str:
    if v is None:
        return '<span class="muted">–</span>'
    text = f"{v:+.1%}" if as_pct else f"{v:+.3f}"
    cls = "up" if v > 1e-12 else "down" if v < -1e-12 else "muted"
    return f'<span class="{cls}">{escape(text)}</span>'


def kpi(label: str, value: str, sub: str = "", cls: str = "") -> str:
    return (f'<div class="kpi {cls}"><div class="l">{escape(label)}</div>'
            f'<div class="v">{escape(value)}</div><div class="s">{escape(sub)}</div></div>')


def card(title: str, body: str, sub: str = "", attrs: str = "") -> str:
    sub_html = f'<p class="sub">{escape(sub)}</p>' if sub else ""
    return f'<section class="card"{attrs}><h2>{escape(title)}</h2>{sub_html}{body}</section>'


def document(title: str, header: str, body: str, script: str = "") -> str:
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{header}"
            f"<main>{body}</main><footer>rlforge {escape(__version__)} · generated {generated} · "
            "self-contained: no network needed</footer>"
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def _colors(generators: list[str]) -> dict[str, str]:
    return {g: svg.color(i) for i, g in enumerate(generators)}


def _run_header(d: rd.RunData) -> str:
    policy = d.plan.get("policy") or {}
    model = policy.get("model") or "?"
    endpoint = "embedded local model" if d.plan.get("embedded") else (policy.get("base_url") or "?")
    created = str(d.plan.get("created_at", ""))[:19].replace("T", " ")
    tasks = len({r["task_id"] for r in d.records})
    settings = d.plan.get("settings") or {}

    def setting(key: str) -> str:
        return str(settings.get(key, {}).get("value", "–"))
    gates = d.plan.get("gates") or {}
    env = d.plan.get("env") or {}
    meta = [("model", model), ("endpoint", endpoint), ("created", created),
            ("tasks", f"{tasks:,} × {d.samples} samples"),
            ("temperature", setting("run.temperature")),
            ("max tokens", setting("run.max_tokens")),
            ("gates", f"pass rate ≥ {gates.get('min_pass_rate', '–')}, infra errors ≤ "
                      f"{gates.get('max_infra_error_rate', '–')}"),
            ("loop", f"{env.get('tool_protocol', '–')} tools, ≤ {env.get('max_turns', '–')} "
                     f"turns, {d.plan.get('time_budget') or 'task'} s budget, "
                     f"{d.plan.get('concurrency', '–')} in flight"),
            ("tasks dir", str(d.plan.get("tasks_dir", "")))]
    items = "".join(f"<span>{escape(k)} <b>{escape(v)}</b></span>" for k, v in meta)
    return (f'<header><h1>rlforge run report<small>{escape(d.run_id)}</small></h1>'
            f'<div class="meta">{items}</div></header>')


def _kpis(d: rd.RunData) -> str:
    s = d.summary
    k = d.samples
    curve = s.get("pass_at_k") or {}
    lat = rd.quantiles([v for vs in rd.distribution(d, "seconds").values() for v in vs])
    tokens = (s.get("prompt_tokens") or 0) + (s.get("completion_tokens") or 0)
    cards = [
        kpi("pass rate", pct(s.get("pass_rate")), f"{s.get('pass', 0):,} of {s.get('valid', 0):,} valid"),
        kpi("mean reward", num(s.get("mean_reward")), "valid rollouts"),
        kpi("pass@1", pct(curve.get("1")), "unbiased estimator"),
    ]
    if k > 1:
        cards.append(kpi(f"pass@{k}", pct(curve.get(str(k))), f"{k} samples per task"))
    infra = s.get("infra_error_rate") or 0.0
    cards += [
        kpi("invalid (infra)", pct(infra), f"{s.get('invalid', 0):,} rollouts, not counted",
            "bad" if infra > 0.05 else ""),
        kpi("rollouts", f"{s.get('rollouts', 0):,}", f"{s.get('tasks', 0):,} tasks"),
        kpi("tokens", svg.fmt_num(tokens), f"{svg.fmt_num(s.get('completion_tokens') or 0)} completion"),
        kpi("latency p50", "–" if lat["p50"] is None else f"{lat['p50']:.2f}s",
            "" if lat["p90"] is None else f"p90 {lat['p90']:.2f}s per rollout"),
    ]
    return f'<div class="kpis">{"".join(cards)}</div>'


def _breakdown_table(d: rd.RunData) -> str:
    rows = rd.breakdown(d)
    k = d.samples
    head = ("<tr><th>generator</th><th>split</th><th class=num>tasks</th><th class=num>rollouts</th>"
            "<th>outcomes</th><th class=num>pass rate</th><th class=num>mean reward</th>"
            f"<th class=num>pass@1</th><th class=num>pass@{k}</th><th class=num>invalid</th></tr>")
    body = []
    for r in rows:
        mix = svg.stacked_bar([(o, r[o], svg.OUTCOME_COLORS[o]) for o in ("pass", "fail", "timeout", "invalid")])
        cls = "total" if r["generator"] == "all" else "gen" if r["split"] == "all" else ""
        body.append(
            f'<tr class="{cls}"><td>{escape(r["generator"])}</td><td>{escape(r["split"])}</td>'
            f'<td class=num>{r["tasks"]:,}</td><td class=num>{r["rollouts"]:,}</td><td>{mix}</td>'
            f'<td class=num>{pct(r["pass_rate"])}</td><td class=num>{num(r["mean_reward"])}</td>'
            f'<td class=num>{pct(r["pass_at_1"])}</td><td class=num>{pct(r["pass_at_k"])}</td>'
            f'<td class=num>{r["invalid"]:,}</td></tr>')
    key = svg.legend(["pass", "fail", "timeout", "invalid"],
                     [svg.OUTCOME_COLORS[o] for o in ("pass", "fail", "timeout", "invalid")])
    return key + f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _families(rows: list[dict[str, Any]]) -> str:
    head = ("<tr><th>generator</th><th>question family</th><th class=num>tasks</th>"
            "<th class=num>rollouts</th><th>outcomes</th><th class=num>pass rate</th>"
            "<th class=num>mean reward</th><th class=num>invalid</th></tr>")
    body = "".join(
        f'<tr><td>{escape(r["generator"])}</td><td>{escape(r["family"])}</td>'
        f'<td class=num>{r["tasks"]:,}</td><td class=num>{r["rollouts"]:,}</td>'
        f'<td>{svg.stacked_bar([(o, r[o], svg.OUTCOME_COLORS[o]) for o in ("pass", "fail", "timeout", "invalid")])}</td>'
        f'<td class=num>{pct(r["pass_rate"])}</td><td class=num>{num(r["mean_reward"])}</td>'
        f'<td class=num>{r["invalid"]:,}</td></tr>' for r in rows)
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


#: tasks listed in the report's task view (hardest first)
MAX_TASKS = 2000


def _tasks(rows: list[dict[str, Any]]) -> str:
    shown = rows[:MAX_TASKS]
    head = ("<tr><th>task</th><th>generator</th><th>family</th><th>split</th>"
            "<th class=num>passes / valid</th><th class=num>mean reward</th><th>source rows</th>"
            "<th>question</th></tr>")
    body = []
    for t in shown:
        lost = t["samples"] - t["valid"]
        count = f'{t["passes"]:,} / {t["valid"]:,}' + (f" ({lost:,} invalid)" if lost else "")
        first = t["question"].strip().splitlines()[0][:80] if t["question"].strip() else "–"
        body.append(
            f'<tr><td><code>{escape(t["task"])}</code></td><td>{escape(t["gen"])}</td>'
            f'<td>{escape(t["family"])}</td><td>{escape(t["split"])}</td>'
            f'<td class=num>{count}</td><td class=num>{num(t["mean"])}</td>'
            f'<td class="muted">{escape(t["source"])}</td>'
            f'<td><details><summary>{escape(first)}</summary>'
            f'<pre>{escape(t["question"])}</pre></details></td></tr>')
    note = "" if len(shown) == len(rows) else \
        f'<p class="muted">The {len(shown):,} hardest of {len(rows):,} tasks.</p>'
    return f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>{note}"


def _distribution_card(title: str, sub: str, per_gen: dict[str, list[float]],
                       colors: dict[str, str], x_label: str, unit: str = "") -> str:
    series = [(g, vs, colors[g]) for g, vs in per_gen.items() if vs]
    values = [v for _, vs, _ in series for v in vs]
    q = rd.quantiles(values)
    p50, p90, top = q["p50"], q["p90"], q["max"]
    quant = ("" if p50 is None or p90 is None or top is None else
             f'<div class="quant">p50 {svg.fmt_num(round(p50, 3))}{unit} · '
             f'p90 {svg.fmt_num(round(p90, 3))}{unit} · max {svg.fmt_num(round(top, 3))}{unit}'
             f' · n = {len(values):,}</div>')
    chart = svg.histogram(series, bins=24, lo=0.0, x_label=x_label, label=title, width=420,
                          height=200)
    return card(title, chart + quant, sub)


BIN_COLORS = ("#d9534f", "#e8833a", "#d4a72c", "#8fbf5a", "#2fa58a", "#3b9bd1", "#4f6bed")


def _difficulty_rows(rows: list[tuple[str, list[int], str]], labels: list[str]) -> str:
    """Table rows: a name, a stacked bar of the tasks per pass-rate bin, the counts."""
    out = []
    for name, counts, cls in rows:
        bar = svg.stacked_bar([(lab, n, BIN_COLORS[i % len(BIN_COLORS)])
                               for i, (lab, n) in enumerate(zip(labels, counts))])
        out.append(f'<tr class="{cls}"><td>{escape(name)}</td><td>{bar}</td>'
                   + "".join(f"<td class=num>{n:,}</td>" for n in counts) + "</tr>")
    return "".join(out)


def _difficulty(d: rd.RunData) -> str:
    labels = histogram_labels()
    hist = rd.difficulty_histograms(d)
    head = ("<tr><th>generator</th><th>tasks by pass rate</th>"
            + "".join(f"<th class=num>{escape(lab)}</th>" for lab in labels) + "</tr>")
    body = _difficulty_rows([(g, c, "total" if g == "all" else "") for g, c in hist.items()],
                            labels)
    key = svg.legend(labels, list(BIN_COLORS[:len(labels)]))
    return key + f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def _components(d: rd.RunData, colors: dict[str, str]) -> str:
    parts = []
    for gen, comps in rd.component_means(d).items():
        rows = [(f"{c['name']} ({c['level']}{', gate' if c['gate'] else ''})", c["mean"], colors.get(gen, svg.color(0)),
                 f"{c['name']}: mean {c['mean']:.3f} over the {c['n']:,} of {c['of']:,} valid "
                 f"rollouts whose reward has it; fully met in {c['met']:,}; weight {c['weight']:g}"
                 f"{'; a gate: unmet makes the total 0' if c['gate'] else ''}",
                 f"n = {c['n']:,}" + ("" if c["n"] == c["of"] else f" of {c['of']:,}"))
                for c in comps]
        parts.append(f'<div class="comp-gen"><h3>{escape(gen)}</h3>'
                     + svg.hbars(rows, max_value=1.0, value_fmt=lambda v: f"{v:.2f}",
                                 label=f"reward components of {gen}") + "</div>")
    return f'<div class="grid2">{"".join(parts)}</div>' if parts else '<p class="empty">no scored rollouts</p>'


def _errors(d: rd.RunData) -> str:
    errs = rd.errors(d)
    if not errs:
        return '<p class="muted">No errors: every rollout reached the verifier.</p>'
    bars = svg.hbars([(e["type"], e["count"], "#8a94a6" if e["infra"] else "#c47a2c",
                       f"{e['type']}: {e['count']} rollouts ({'infrastructure' if e['infra'] else 'policy'})")
                      for e in errs], label="errors by type")
    rows = "".join(
        f'<tr><td>{escape(e["type"])}</td><td><span class="pill {"infra" if e["infra"] else "policy"}">'
        f'{"infrastructure" if e["infra"] else "policy"}</span></td><td class=num>{e["count"]:,}</td>'
        f'<td>{escape(", ".join(f"{g} {n}" for g, n in e["generators"].items()))}</td>'
        f'<td class="muted">{escape(e["example"])}</td></tr>' for e in errs)
    table = ("<table><thead><tr><th>type</th><th>counts as</th><th class=num>rollouts</th>"
             f"<th>generators</th><th>example</th></tr></thead><tbody>{rows}</tbody></table>")
    return bars + table


def _browser(d: rd.RunData, max_rollouts: int) -> tuple[str, str]:
    rows = rd.browser_rows(d, max_rollouts)
    note = "" if len(rows) == len(d.records) else (
        f" Showing the first {len(rows):,} of {len(d.records):,} rollouts "
        "(by task and sample); `--max-rollouts` includes more.")
    payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")
    head = "".join(f'<th data-key="{k}"{" class=num" if n else ""}>{escape(t)}</th>' for k, t, n in [
        ("task", "task", False), ("sample", "#", True), ("gen", "generator", False),
        ("split", "split", False), ("outcome", "outcome", False), ("reward", "reward", True),
        ("adv", "advantage", True), ("ptok", "tokens in / out", True), ("sec", "seconds", True),
        ("err", "error", False)])
    filters = (
        '<div class="filters">'
        '<label>generator <select id="f-gen"><option value="">all</option></select></label>'
        '<label>split <select id="f-split"><option value="">all</option></select></label>'
        '<label>outcome <select id="f-outcome"><option value="">all</option></select></label>'
        '<label>error <select id="f-err"><option value="">any</option></select></label>'
        '<label>min reward <input id="f-min" type="number" min="0" max="1" step="0.1" style="width:70px"></label>'
        '<label>search <input id="f-q" type="search" placeholder="task id or text in messages"></label>'
        '<span id="count"></span></div>')
    body = (filters + f'<table id="rollouts"><thead><tr>{head}</tr></thead><tbody></tbody></table>'
            '<button class="more" id="more">show more</button>'
            f'<script type="application/json" id="rollout-data">{payload}</script>')
    return card("Rollouts", body, "Click a row for its messages, reward components and error; "
                "click a column to sort." + note, ' id="browser"'), BROWSER_JS


def render_run(d: rd.RunData, max_rollouts: int = 5000) -> str:
    """The report of one run."""
    colors = _colors(d.generators)
    gen_key = svg.legend(d.generators, [colors[g] for g in d.generators])
    notice = ""
    if d.plan.get("embedded"):
        notice = ('<div class="notice">This run used the embedded SmolLM2-135M model: a smoke '
                  "test of the pipeline, not a baseline.</div>")
    if not (d.summary.get("complete", True)) or len(d.records) < len(d.plan.get("tasks") or []) * d.samples:
        planned = len(d.plan.get("tasks") or []) * d.samples
        notice += (f'<div class="notice">The run is incomplete: {len(d.records):,} of {planned:,} '
                   f"rollouts. Resume it with <code>rlforge run --resume {escape(d.run_id)}</code>.</div>")
    series = rd.pass_at_k_series(d)
    curve = svg.lines([(name, pts, "#1f2430" if name == "all" else colors[name])
                       for name, pts in series.items()],
                      x_label="k (samples drawn per task)", y_label="pass@k", label="pass@k curve")
    curve_key = svg.legend(list(series), ["#1f2430"] + [colors[g] for g in d.generators])
    rewards = svg.histogram([(g, vs, colors[g]) for g, vs in rd.rewards_by_generator(d).items()],
                            bins=20, lo=0.0, hi=1.0, x_label="total reward", label="reward distribution")
    infos = rd.task_infos(d)
    families = rd.family_breakdown(d, infos)
    body = [notice, _kpis(d),
            card("By generator and split", _breakdown_table(d),
                 "Pass rate and mean reward over valid rollouts; invalid ones (infrastructure "
                 "failures) are counted apart. pass@k is the unbiased estimator over tasks."),
            card("By question family", _families(families),
                 "Within each generator whose tasks ask different kinds of question (a log "
                 "question's kind, a script's fact, a triage field).") if families else "",
            '<div class="grid2">',
            card("Reward distribution", gen_key + rewards, "Total reward of each valid rollout, "
                 "stacked by generator."),
            card("pass@k", curve_key + curve, "Chance that at least one of k samples of a task "
                 "passes (unbiased estimator), averaged over the tasks with at least k valid "
                 "samples."),
            "</div>", '<div class="row-gap"></div>',
            card("Difficulty", _difficulty(d), "Tasks by their pass rate over this run's "
                 "valid samples: dead (none passed) and saturated (all passed) teach RL "
                 "nothing; `rlforge calibrate` stores these estimates with intervals."),
            card("Reward components", _components(d, colors), "Mean value of each named "
                 "component over the valid rollouts whose reward has it, n of them (coarse: the result; medium: format, it runs; "
                 "fine: process). A gate must be met or the total is 0. Hover a bar for details."),
            '<div class="grid3">',
            _distribution_card("Prompt tokens", "per valid rollout, summed over its requests",
                               rd.distribution(d, "prompt_tokens", valid_only=True), colors,
                               "prompt tokens"),
            _distribution_card("Completion tokens", "per valid rollout, summed over its requests",
                               rd.distribution(d, "completion_tokens", valid_only=True), colors,
                               "completion tokens"),
            _distribution_card("Latency", "wall-clock seconds per rollout (policy, tools and "
                               "verifier; invalid ones included)", rd.distribution(d, "seconds"),
                               colors, "seconds", "s"),
            "</div>", '<div class="row-gap"></div>',
            card("Errors by type", _errors(d), "Infrastructure errors make a rollout invalid "
                 "(never counted against the policy); policy errors count as failures.")]
    body.append(card("Tasks", _tasks(rd.task_rows(d, infos)),
                     "Each task, hardest first: its samples, the rows it was built from and "
                     "its question (click to read it)."))
    browser, script = _browser(d, max_rollouts)
    body.append(browser)
    return document(f"rlforge report · {d.run_id}", _run_header(d), "".join(body), script)


def render_compare(cmp: dict[str, Any], a: rd.RunData, b: rd.RunData) -> str:
    """The comparison of run B against run A."""
    def model(d: rd.RunData) -> str:
        return str((d.plan.get("policy") or {}).get("model") or "?")

    header = (f'<header><h1>rlforge run comparison<small>{escape(a.run_id)} → {escape(b.run_id)}</small></h1>'
              f'<div class="meta"><span>A <b>{escape(a.run_id)}</b> ({escape(model(a))})</span>'
              f'<span>B <b>{escape(b.run_id)}</b> ({escape(model(b))})</span>'
              f'<span>tasks <b>{cmp["tasks"]:,}</b></span></div></header>')
    total = next((g for g in cmp["generators"] if g["generator"] == "all"), None)
    cards = []
    if total:
        pr, mr = total["pass_rate"], total["mean_reward"]
        cards += [kpi("pass rate A → B", f"{pct(pr['a'])} → {pct(pr['b'])}",
                      "" if pr["delta"] is None else f"{pr['delta']:+.1%}",
                      "good" if (pr["delta"] or 0) > 0 else "bad" if (pr["delta"] or 0) < 0 else ""),
                  kpi("mean reward A → B", f"{num(mr['a'], 2)} → {num(mr['b'], 2)}",
                      "" if mr["delta"] is None else f"{mr['delta']:+.3f}")]
    cards += [kpi("tasks fixed", f"{cmp['fixed']:,}", "fail in A, pass in B", "good" if cmp["fixed"] else ""),
              kpi("tasks broken", f"{cmp['broken']:,}", "pass in A, fail in B", "bad" if cmp["broken"] else ""),
              kpi("only in A / B", f"{len(cmp['only_in_a'])} / {len(cmp['only_in_b'])}", "tasks run by one side")]
    rows = []
    for g in cmp["generators"]:
        cls = ' class="total"' if g["generator"] == "all" else ""
        rows.append(
            f'<tr{cls}><td>{escape(g["generator"])}</td>'
            f'<td class=num>{g["rollouts"]["a"]:,} / {g["rollouts"]["b"]:,}</td>'
            + "".join(f'<td class=num>{(pct if m != "mean_reward" else num)(g[m]["a"])}</td>'
                      f'<td class=num>{(pct if m != "mean_reward" else num)(g[m]["b"])}</td>'
                      f'<td class=num>{signed(g[m]["delta"], m != "mean_reward")}</td>'
                      for m in ("pass_rate", "mean_reward", "pass_at_1"))
            + f'<td class=num>{pct(g["infra_error_rate"]["a"])} / {pct(g["infra_error_rate"]["b"])}</td></tr>')
    head = ("<tr><th>generator</th><th class=num>rollouts A / B</th>"
            "<th class=num>pass A</th><th class=num>pass B</th><th class=num>Δ</th>"
            "<th class=num>reward A</th><th class=num>reward B</th><th class=num>Δ</th>"
            "<th class=num>pass@1 A</th><th class=num>pass@1 B</th><th class=num>Δ</th>"
            "<th class=num>invalid A / B</th></tr>")
    deltas = svg.diverging_bars(
        [(g["generator"], g["pass_rate"]["delta"],
          f"{g['generator']}: {pct(g['pass_rate']['a'])} → {pct(g['pass_rate']['b'])}")
         for g in cmp["generators"] if g["pass_rate"]["delta"] is not None], label="pass rate deltas")
    flip_rows = "".join(
        f'<tr data-dir="{f["direction"]}"><td class="id">{escape(f["task_id"])}</td><td>{escape(f["generator"])}</td>'
        f'<td>{escape(f["split"])}</td><td><span class="pill {f["direction"]}">{f["direction"]}</span></td>'
        f'<td class=num>{f["a"]["passes"]} / {f["a"]["valid"]}</td>'
        f'<td class=num>{f["b"]["passes"]} / {f["b"]["valid"]}</td></tr>' for f in cmp["flips"])
    flips = ('<div class="filters"><label>show <select id="f-dir"><option value="">all flips</option>'
             '<option value="fixed">fixed</option><option value="broken">broken</option></select></label></div>'
             '<table id="flips"><thead><tr><th>task</th><th>generator</th><th>split</th><th>flip</th>'
             f'<th class=num>passes A</th><th class=num>passes B</th></tr></thead><tbody>{flip_rows}</tbody></table>'
             if cmp["flips"] else '<p class="muted">No task changed status.</p>')
    extra = ""
    for side, ids in (("A", cmp["only_in_a"]), ("B", cmp["only_in_b"])):
        if ids:
            extra += (f'<p class="muted">Only in run {side} ({len(ids)}): '
                      f'{escape(", ".join(ids[:50]))}{" …" if len(ids) > 50 else ""}</p>')
    shift = cmp["difficulty"]
    labels = shift["labels"]
    shift_rows = []
    for g in shift["generators"]:
        cls = "total" if g["generator"] == "all" else ""
        shift_rows.append((f'{g["generator"]} · A', g["a"], cls))
        shift_rows.append((f'{g["generator"]} · B ({g["easier"]} easier, {g["harder"]} '
                           f'harder of {g["shared"]} shared)', g["b"], cls))
    shift_html = (svg.legend(labels, list(BIN_COLORS[:len(labels)]))
                  + "<table><thead><tr><th>generator · run</th><th>tasks by pass rate</th>"
                  + "".join(f"<th class=num>{escape(lab)}</th>" for lab in labels)
                  + f"</tr></thead><tbody>{_difficulty_rows(shift_rows, labels)}</tbody></table>")
    body = (f'<div class="kpis">{"".join(cards)}</div>'
            + card("Difficulty, A → B", shift_html, "Tasks by pass rate in each run; "
                   "easier / harder: tasks both runs measured whose pass rate rose / fell.")
            + card("Per generator", f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>",
                   "B minus A. Rates over valid rollouts; invalid ones are infrastructure failures.")
            + card("Pass rate change by generator", deltas)
            + card(f"Tasks that flipped ({len(cmp['flips'])})", flips + extra,
                   "A task passes in a run when at least half of its valid samples pass."))
    return document(f"rlforge compare · {a.run_id} → {b.run_id}", header, body, COMPARE_JS)
