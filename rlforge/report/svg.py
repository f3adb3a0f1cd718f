"""Small, dependency-free SVG charts for the run report: bars, histograms, lines.

Every chart is a string of inline SVG sized by a viewBox (it scales with the page), with
axis ticks at round numbers, a `<title>` on every mark (the browser shows it on hover),
and text escaped. Colours come from `PALETTE` in a fixed order, so a generator keeps its
colour across the charts of one report.
"""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

PALETTE = ("#4f6bed", "#e8833a", "#2fa58a", "#c94f7c", "#8a63d2", "#d4a72c", "#3b9bd1",
           "#7d8b99", "#b5523b", "#5c9e3f")
OUTCOME_COLORS = {"pass": "#2fa58a", "fail": "#d9534f", "timeout": "#e8a33a",
                  "invalid": "#8a94a6"}
AXIS = "#6b7280"


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def nice_ticks(top: float, count: int = 5, integer: bool = False) -> list[float]:
    """Round tick values from 0 to at least `top` (whole numbers only if `integer`)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1, math.ceil(step))
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def fmt_num(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v / 1000:.3g}k" if abs(v) < 999_500 else f"{v / 1_000_000:.3g}M"
    if abs(v) < 0.01:
        return f"{v:.2g}"
    return f"{v:g}" if float(v).is_integer() else f"{v:.3g}"


def _svg(width: int, height: int, body: list[str], label: str, grow: float = 1.4) -> str:
    """The chart scales with its box, up to `grow` times its natural size (text stays legible)."""
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'style="max-width:{width * grow:.0f}px" aria-label="{escape(label)}" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "middle", cls: str = "tick",
          extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{cls}"{extra}>'
            f"{escape(text)}</text>")


def legend(names: Sequence[str], colors: Sequence[str]) -> str:
    """An HTML legend (wraps with the page, unlike SVG text)."""
    items = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(n)}</span>'
                    for n, c in zip(names, colors))
    return f'<div class="legend">{items}</div>'


def hbars(rows: Sequence[tuple], *, max_value: float | None = None,
          value_fmt=fmt_num, label: str = "bar chart", width: int = 560) -> str:
    """Horizontal bars: rows of (label, value, colour, hover text), and optionally a note
    shown after the value (e.g. how many it is over)."""
    if not rows:
        return '<p class="empty">nothing to show</p>'
    notes = any(len(row) > 4 and row[4] for row in rows)
    bar_h, gap, left, right = 22, 8, 240, 150 if notes else 60
    height = len(rows) * (bar_h + gap) + 10
    top = max_value if max_value is not None else max(row[1] for row in rows) or 1.0
    span = width - left - right
    body = []
    for i, (name, value, fill, hover, *note) in enumerate(rows):
        y = 5 + i * (bar_h + gap)
        w = 0 if top <= 0 else max(0.0, min(1.0, value / top)) * span
        short = name if len(name) <= 36 else name[:35] + "…"
        body.append(_text(left - 8, y + bar_h * 0.7, short, "end", "label"))
        body.append(f'<rect x="{left}" y="{y}" width="{span}" height="{bar_h}" class="track"/>')
        body.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" rx="3" '
                    f'fill="{fill}"><title>{escape(hover)}</title></rect>')
        shown = value_fmt(value) + (f" · {note[0]}" if note and note[0] else "")
        body.append(_text(left + w + 6, y + bar_h * 0.7, shown, "start", "value"))
    return _svg(width, height, body, label, grow=1.0)


def histogram(series: Sequence[tuple[str, Sequence[float], str]], *, bins: int = 20,
              lo: float | None = None, hi: float | None = None, x_label: str = "",
              label: str = "histogram", width: int = 560, height: int = 220,
              x_fmt=fmt_num) -> str:
    """Stacked histogram of several named series (name, values, colour) over shared bins."""
    values = [v for _, vs, _ in series for v in vs]
    if not values:
        return '<p class="empty">no values</p>'
    lo = min(values) if lo is None else lo
    if hi is None:  # bins of a round width, from lo to a round top
        ticks = nice_ticks(max(values) - lo, bins)
        bins = max(1, len(ticks) - 1)
        hi = lo + (ticks[-1] or 1.0)
    if hi <= lo:
        hi = lo + 1.0
    edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    counts = [[0] * bins for _ in series]
    for s, (_, vs, _) in enumerate(series):
        for v in vs:
            i = min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))
            counts[s][i] += 1
    totals = [sum(c[i] for c in counts) for i in range(bins)]
    ticks = nice_ticks(max(totals), 4, integer=True)
    ymax = ticks[-1] or 1
    left, right, top, bottom = 44, 12, 10, 38
    pw, ph = width - left - right, height - top - bottom
    body = []
    for t in ticks:
        y = top + ph - t / ymax * ph
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        body.append(_text(left - 6, y + 4, fmt_num(t), "end"))
    bw = pw / bins
    for i in range(bins):
        base = 0
        for s, (name, _, fill) in enumerate(series):
            n = counts[s][i]
            if not n:
                continue
            h = n / ymax * ph
            y = top + ph - (base + n) / ymax * ph
            body.append(f'<rect x="{left + i * bw + 1:.1f}" y="{y:.1f}" width="{max(1.0, bw - 2):.1f}" '
                        f'height="{h:.1f}" fill="{fill}"><title>{escape(name)}: {n} in '
                        f'[{x_fmt(edges[i])}, {x_fmt(edges[i + 1])})</title></rect>')
            base += n
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" class="axis"/>')
    for i in range(0, bins + 1, max(1, math.ceil(bins / 6))):
        x = left + i * bw
        body.append(_text(x, top + ph + 15, x_fmt(edges[i])))
    if x_label:
        body.append(_text(left + pw / 2, height - 4, x_label, cls="axis-label"))
    return _svg(width, height, body, label)


def lines(series: Sequence[tuple[str, Sequence[tuple[float, float]], str]], *,
          x_label: str = "", y_label: str = "", y_max: float = 1.0, label: str = "line chart",
          width: int = 560, height: int = 240, y_fmt=None) -> str:
    """Line chart with markers: series of (name, [(x, y)...], colour); y from 0 to y_max."""
    points = [p for _, ps, _ in series for p in ps]
    if not points:
        return '<p class="empty">no values</p>'
    xs = sorted({x for x, _ in points})
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    y_fmt = y_fmt or (lambda v: f"{v:.0%}" if y_max == 1.0 else fmt_num(v))
    left, right, top, bottom = 48, 16, 12, 40
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - y / y_max * ph

    body = []
    for t in [y_max * i / 4 for i in range(5)]:
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}" class="grid"/>')
        body.append(_text(left - 6, py(t) + 4, y_fmt(t), "end"))
    step = max(1, math.ceil(len(xs) / 12))
    for x in xs[::step]:
        body.append(_text(px(x), top + ph + 16, fmt_num(x)))
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" class="axis"/>')
    for name, ps, stroke in series:
        if not ps:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(ps))
        body.append(f'<path d="{path}" fill="none" stroke="{stroke}" stroke-width="2.2"/>')
        for x, y in ps:
            body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{stroke}">'
                        f"<title>{escape(name)}: k={fmt_num(x)}, {y_fmt(y)}</title></circle>")
    if x_label:
        body.append(_text(left + pw / 2, height - 6, x_label, cls="axis-label"))
    if y_label:
        body.append(_text(12, top + ph / 2, y_label, cls="axis-label",
                          extra=f' transform="rotate(-90 12 {top + ph / 2:.1f})"'))
    return _svg(width, height, body, label)


def stacked_bar(parts: Sequence[tuple[str, float, str]], width: int = 160, height: int = 12) -> str:
    """One thin horizontal bar split into parts (name, count, colour): outcome mixes."""
    total = sum(v for _, v, _ in parts)
    if total <= 0:
        return ""
    x, body = 0.0, []
    for name, v, fill in parts:
        if v <= 0:
            continue
        w = v / total * width
        body.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" fill="{fill}">'
                    f"<title>{escape(name)}: {fmt_num(v)} ({v / total:.0%})</title></rect>")
        x += w
    return (f'<svg class="mix" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def diverging_bars(rows: Sequence[tuple[str, float, str]], *, label: str = "deltas",
                   width: int = 560, value_fmt=None) -> str:
    """Bars left (negative, red) or right (positive, green) of zero: rows of (label,
    delta, hover text); the scale is symmetric around the largest magnitude."""
    if not rows:
        return '<p class="empty">nothing to compare</p>'
    value_fmt = value_fmt or (lambda v: f"{v:+.1%}")
    bar_h, gap, left, right = 22, 8, 170, 70
    height = len(rows) * (bar_h + gap) + 10
    top = max(abs(v) for _, v, _ in rows) or 1.0
    span = (width - left - right) / 2
    mid = left + span
    body = [f'<line x1="{mid}" x2="{mid}" y1="0" y2="{height}" class="axis"/>']
    for i, (name, value, hover) in enumerate(rows):
        y = 5 + i * (bar_h + gap)
        w = abs(value) / top * span
        x = mid if value >= 0 else mid - w
        fill = "#2fa58a" if value > 0 else "#d9534f" if value < 0 else AXIS
        short = name if len(name) <= 26 else name[:25] + "…"
        body.append(_text(left - 8, y + bar_h * 0.7, short, "end", "label"))
        body.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1):.1f}" height="{bar_h}" rx="3" '
                    f'fill="{fill}"><title>{escape(hover)}</title></rect>')
        tx = mid + w + 6 if value >= 0 else mid - w - 6
        body.append(_text(tx, y + bar_h * 0.7, value_fmt(value), "start" if value >= 0 else "end",
                          "value"))
    return _svg(width, height, body, label, grow=1.0)
