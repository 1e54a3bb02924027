"""The bench's bar chart: the table's rows, drawn.

It draws :func:`~.report.rows`, the same list the text table prints: the
same rows in the same order, labelled alike (a row not trusted keeps its
``!``), each bar the row's median with its min-max as a whisker and, beside
it, the table's median, unit and ratio as text. One panel per group, each
on its own scale: groups differ by orders of magnitude (pipelines ~10^3
img/s, reads ~10^5 rec/s). :func:`plotted` reads a figure back (labels, bar
lengths, texts), which ``results.json`` keeps and the tests compare with
the table.
"""

from __future__ import annotations

import textwrap
from typing import Any

FASTER, SLOWER, BASELINE, NEUTRAL = "#22aa77", "#d95f02", "#999999", "#6a8caf"
"""Bar colours: faster than the group's baseline, slower, the baseline itself, a row with no ratio."""


CAP = 4
"""Whisker cap half-width, points; the value label starts beyond it."""


def colour(ratio: float | None, is_baseline: bool) -> str:
    """A bar's colour: by how it compares with its baseline, whoever's row it is."""
    if is_baseline:
        return BASELINE
    if ratio is None:
        return NEUTRAL
    return FASTER if ratio >= 1.0 else SLOWER


def figure(shown: list[Any], notes: dict[str, str] | None = None) -> Any:
    """The chart of ``shown``, the rows of :func:`~.report.rows` (None when no row was timed)."""
    import matplotlib.pyplot as plt

    if not any(r.median is not None for r in shown):
        return None
    groups = list(dict.fromkeys(r.group for r in shown))
    panels = [(g, [r for r in shown if r.group == g]) for g in groups]
    heights = [len(rs) + 1.2 + (0.4 * len(textwrap.wrap(notes[g], 150)) if notes and notes.get(g) else 0)
               for g, rs in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 0.32 * sum(heights) + 0.9 * len(panels) + 0.6),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    labels = []
    for ax, (group, rs) in zip(axes[:, 0], panels):
        labels += _panel(ax, group, rs, notes)
    handles = _legend(shown)
    fig.legend(handles=handles, loc="lower center", fontsize=8, ncol=len(handles), frameon=False)
    fig.tight_layout(rect=(0, 0.035, 1, 1))
    _fit_labels(fig, labels)
    return fig


def _panel(ax: Any, group: str, rs: list[Any], notes: dict[str, str] | None) -> list[tuple[Any, Any]]:
    """Draw one group's rows on ``ax``; returns its value labels as (axes, text) pairs for :func:`_fit_labels`."""
    from matplotlib.ticker import FuncFormatter

    labels = []
    ax.set_gid(group)
    values = [r.median or 0.0 for r in rs]
    low = [(r.median - r.low) if r.median is not None else 0.0 for r in rs]
    high = [(r.high - r.median) if r.median is not None else 0.0 for r in rs]
    bars = ax.barh(range(len(rs)), values, xerr=[low, high],
                   color=[colour(r.ratio, r.ratio_text == "base") for r in rs],
                   error_kw={"elinewidth": 0.8, "ecolor": "#333", "capsize": CAP, "capthick": 0.8})
    for bar, r in zip(bars, rs):
        if r.warnings:
            bar.set_hatch("///")
            bar.set_edgecolor("#b00")
    ax.set_yticks(range(len(rs)), [r.label for r in rs])
    for tick, r in zip(ax.get_yticklabels(), rs):
        if r.warnings:
            tick.set_color("#b00")
    base = next((r for r in rs if r.ratio_text == "base" and r.median), None)
    if base is not None:
        ax.axvline(base.median, color="#444", linewidth=0.8, linestyle="--")
    for y, (r, value, up) in enumerate(zip(rs, values, high)):
        # clear of the whisker's cap; the white box keeps the base row's dashed line from crossing the text
        labels.append((ax, ax.annotate(r.value_text, (value + up, y), xytext=(CAP + 4, 0),
                                       textcoords="offset points", va="center", fontsize=8,
                                       bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})))
    ax.set_xlim(0, max([v + u for v, u in zip(values, high)] + [1e-9]) * 1.05)
    ax.invert_yaxis()
    unit = rs[0].unit
    title = f"{group}: median {unit} of the rounds (whisker: min-max)"
    if base is not None:
        title += f"; x = ratio to {base.label.removesuffix(' !')}"
    if notes and notes.get(group):
        title += "\n" + "\n".join(textwrap.wrap(notes[group], 150))
    ax.set_title(title, fontsize=9, loc="left")
    ax.tick_params(axis="y", labelsize=8)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.set_xlabel(unit, fontsize=8)
    return labels


def _legend(shown: list[Any]) -> list[Any]:
    """The legend's patches: the colours, the neutral one only when a row has no base, the untrusted hatch."""
    from matplotlib.patches import Patch

    handles = [Patch(color=FASTER, label="faster than the base row"), Patch(color=SLOWER, label="slower"),
               Patch(color=BASELINE, label="the base row")]
    if any(r.ratio is None and r.ratio_text != "base" and r.median is not None for r in shown):
        handles.append(Patch(color=NEUTRAL, label="no base row to compare with"))
    handles.append(Patch(facecolor="white", edgecolor="#b00", hatch="///",
                         label="! not trusted (noisy rounds or a busy machine: see the table)"))
    return handles


def plotted(fig: Any) -> list[dict[str, Any]]:
    """What ``fig`` draws, read back from its artists: per bar its panel's group,
    its tick label, its length and the text beside it, top to bottom."""
    out = []
    for ax in fig.axes:
        group = ax.get_gid()
        if group is None:
            continue
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        bars = list(ax.patches)
        texts = [t.get_text() for t in ax.texts]
        for label, bar, text in zip(ticks, bars, texts):
            out.append({"group": group, "label": label, "value": float(bar.get_width()), "text": text})
    return out


def _fit_labels(fig: Any, labels: list[tuple[Any, Any]]) -> None:
    """Widen each panel's x range until its value labels end inside the frame
    (their width in data units depends on the range, hence a few passes)."""
    for _ in range(4):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        moved = False
        for ax, text in labels:
            right = ax.transData.inverted().transform(text.get_window_extent(renderer))[1][0]
            lo, hi = ax.get_xlim()
            if right > hi:
                ax.set_xlim(lo, lo + (right - lo) * 1.03)
                moved = True
        if not moved:
            return
