"""Small line charts as inline SVG: one metric per panel with its own y axis (train solid, eval
dashed with markers), every point with a tooltip and its value in data attributes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from olmocr_rl.report.common import esc

COLORS = {"train": "#0969da", "eval": "#cf222e"}
LABEL_CHAR_PX = 6.2  # the widest a character of a 10 px tick label is drawn (digits, ".", "-", "e" in the sans-serif fonts)


def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    v = start
    while v <= hi + 1e-9 * step:
        ticks.append(round(v, 10))
        v += step
    return ticks


def _fmt(v: float, digits: int = 3) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 0.01:
        return f"{v:.{max(2, digits - 1)}g}"
    return f"{v:.{digits}g}"


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks as short numbers, with as many significant digits as it takes to tell them apart
    (three suffice on most axes; entropy near 5.55 needs four: 5.545, 5.55, 5.555)."""
    labels = [_fmt(t) for t in ticks]
    for digits in range(4, 16):
        if len(set(labels)) == len(labels):
            break
        labels = [_fmt(t, digits) for t in ticks]
    return labels


def _runs(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """The points sorted by step, split at each missing value (None): the pieces of the line."""
    out: list[list[tuple[float, float]]] = [[]]
    for a, b in sorted(points, key=lambda p: p[0]):
        if b is None:
            if out[-1]:
                out.append([])
        else:
            out[-1].append((a, b))
    return [r for r in out if r]


def chart(
    title: str,
    series: dict[str, Sequence[tuple[float, float | None]]],
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float] | None = None,
    metric: str = "",
    width: int = 340,
    height: int = 190,
    caption: str = "",
) -> str:
    """A panel: `series` maps "train"/"eval" (or any name) to (step, value) points; a value of
    None (not a number in the log) is a gap in the line. `y_range`: fixed (e.g. 0..1 for rates),
    else the data's range, padded."""
    runs = {name: _runs(s) for name, s in series.items()}
    series = {name: [p for r in rs for p in r] for name, rs in runs.items() if rs}
    pts = [p for s in series.values() for p in s]
    if not pts:
        return ""
    x0, x1 = x_range
    if y_range is None:
        lo, hi = min(p[1] for p in pts), max(p[1] for p in pts)
        if hi == lo:
            lo, hi = lo - (abs(lo) * 0.1 or 0.5), hi + (abs(hi) * 0.1 or 0.5)
        pad = (hi - lo) * 0.08
        lo, hi = lo - pad, hi + pad
        if lo < 0 <= min(p[1] for p in pts):
            lo = 0.0
    else:
        lo, hi = y_range
        lo, hi = min(lo, min(p[1] for p in pts)), max(hi, max(p[1] for p in pts))
    yt = nice_ticks(lo, hi)
    y_labels = tick_labels(yt)
    # The y labels end 4 px left of the plot, 10 px type (~6 px a character): room for the longest, whole.
    left, right, top, bottom = max(42, math.ceil(8 + LABEL_CHAR_PX * max(len(label) for label in y_labels))), 10, 8, 22
    pw, ph = width - left - right, height - top - bottom

    def x(v: float) -> float:
        return left + (pw * (v - x0) / (x1 - x0) if x1 > x0 else pw / 2)

    def y(v: float) -> float:
        return top + ph - ph * (v - lo) / (hi - lo)

    legend = "".join(
        f'<span class="s-{esc(name)}">{"┅" if name == "eval" else "━"} {esc(name)} {sorted(s)[-1][1]:.3g}</span> '
        for name, s in series.items()
        if s
    )
    out = [f'<figure class="chart" data-metric="{esc(metric or title)}"><div class="ctitle">{esc(title)}</div>'
           f'<div class="legend small">{legend}<span class="muted">(last value)</span></div>'
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{esc(title)}">']  # fmt: skip
    for t, label in zip(yt, y_labels):
        out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{left + pw}" y2="{y(t):.1f}" stroke="#eaeef2"/>'
                   f'<text x="{left - 4}" y="{y(t) + 3.5:.1f}" font-size="10" text-anchor="end" fill="#57606a">{label}</text>')  # fmt: skip
    xt = [t for t in nice_ticks(x0, x1, 5) if float(t).is_integer()] or [x0]
    for t, label in zip(xt, tick_labels(xt)):
        out.append(f'<text x="{x(t):.1f}" y="{height - 8}" font-size="10" text-anchor="middle" fill="#57606a">{label}</text>')
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#8c959f"/>')
    for i, (name, s) in enumerate(series.items()):
        color = COLORS.get(name, ["#8250df", "#1a7f37", "#bf8700"][i % 3])
        dash = ' stroke-dasharray="4 3"' if name == "eval" else ""
        for run in runs[name]:
            if len(run) > 1:
                coords = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in run)
                out.append(f'<polyline data-series="{esc(name)}" fill="none" stroke="{color}" stroke-width="1.6"{dash} points="{coords}"/>')
        r = 2.6 if name == "eval" or len(s) <= 40 else 1.4
        for a, b in s:
            out.append(f'<circle data-series="{esc(name)}" data-step="{a:g}" data-value="{b!r}" cx="{x(a):.1f}" cy="{y(b):.1f}" r="{r}" '
                       f'fill="{color}"><title>{esc(name)} step {a:g}: {b:.4g}</title></circle>')  # fmt: skip
    out.append("</svg>")
    if caption:
        out.append(f'<figcaption class="muted small">{esc(caption)}</figcaption>')
    out.append("</figure>")
    return "".join(out)
