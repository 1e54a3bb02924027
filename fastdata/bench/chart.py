"""The bench's bar chart: one panel per group, each row's median over its baseline's."""

from __future__ import annotations

from typing import Any

from .harness import Result

FASTER, SLOWER, BASELINE = "#22aa77", "#d95f02", "#999999"
"""Bar colours by ratio: faster than the group's baseline, slower, the baseline itself."""


def colour(ratio: float, is_baseline: bool) -> str:
    """A bar's colour: by how it compares with its baseline, whoever's row it is."""
    if is_baseline:
        return BASELINE
    return FASTER if ratio >= 1.0 else SLOWER


def figure(results: list[Result]) -> Any:
    """The chart: one panel per group, each row's median as a ratio to its
    group's baseline (min-max as error bars), value labels inside the frame.
    Groups differ by orders of magnitude (pipelines ~500 img/s, conversion
    ~9,000 img/s, reads ~10^5 rec/s), so one absolute axis would flatten all
    but one. None when no group has a baseline to divide by."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    panels = _panels(results)
    if not panels:
        return None
    heights = [len(rows) for _, rows in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 0.3 * sum(heights) + 1.1 * len(panels) + 0.4),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    labels = []
    for ax, (group, rows) in zip(axes[:, 0], panels):
        ratio = [r.median / ref for r, ref in rows]
        low = [(r.median - min(r.rates)) / ref for r, ref in rows]
        high = [(max(r.rates) - r.median) / ref for r, ref in rows]
        ax.barh([r.name for r, _ in rows], ratio, xerr=[low, high],
                color=[colour(v, not r.baseline) for v, (r, _) in zip(ratio, rows)],
                error_kw={"elinewidth": 0.8, "ecolor": "#333"})
        ax.axvline(1.0, color="#444", linewidth=0.8, linestyle="--")
        for y, (value, up) in enumerate(zip(ratio, high)):
            labels.append((ax, ax.annotate(f"{value:.2f}x", (value + up, y), xytext=(3, 0), textcoords="offset points",
                                           va="center", fontsize=8)))
        ax.set_xlim(0, max(v + u for v, u in zip(ratio, high)) * 1.05)
        ax.invert_yaxis()
        base = next(r for r, _ in rows if not r.baseline)
        ax.set_title(f"{group}: x {base.name} ({base.median:,.0f} {base.unit}/s = 1)", fontsize=10, loc="left")
        ax.tick_params(axis="y", labelsize=8)
    axes[-1, 0].set_xlabel("median rate / the group's baseline (min-max)")
    fig.legend(handles=[Patch(color=FASTER, label="faster than the baseline"), Patch(color=SLOWER, label="slower"),
                        Patch(color=BASELINE, label="the baseline")], loc="lower right", fontsize=8, ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    _fit_labels(fig, labels)
    return fig


def _panels(results: list[Result]) -> list[tuple[str, list[tuple[Result, float]]]]:
    by_key = {(r.group, r.name): r for r in results}
    panels = []
    for group in dict.fromkeys(r.group for r in results):
        bases = {r.baseline for r in results if r.group == group and r.baseline}
        rows = []
        for r in results:
            base = by_key.get((group, r.baseline or r.name))
            if r.group == group and r.rates and base and base.rates and base.median > 0 and (r.baseline or r.name in bases):
                rows.append((r, base.median))
        if rows:
            panels.append((group, rows))
    return panels


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
