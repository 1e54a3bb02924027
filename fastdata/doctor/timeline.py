"""The doctor's picture: each batch of the training loop as a bar of its
wait for data stacked under its step, beside the two ceilings measured alone.

A run that waits shows tall red bars; one that does not, blue bars with a
thin red base. The dashed lines are the loader alone (its ms per batch) and
the step alone: whichever is higher is the limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["STEP", "WAIT", "draw"]

WAIT, STEP, STARTUP = "#d62728", "#1f77b4", "#bbbbbb"


def draw(path: Path, timeline: dict[str, list[float]], *, loader_ms: float, step_ms: float, title: str,
         pass_starts: list[int], stages: dict[str, float], startup_counted: bool = False) -> bool:
    """Write the PNG at ``path``; False when matplotlib is missing (the ``bench`` extra).

    ``startup_counted``: the passes are short, so their first batches' waits are
    in the wait share (drawn as waits, and named so) rather than set apart.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    wait, step = timeline["wait_ms"], timeline["step_ms"]
    steps = range(len(wait))
    starts = set(pass_starts)
    fig, (ax, side) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [4, 1]})
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    first = WAIT if startup_counted else STARTUP
    ax.bar(steps, wait, width=1.0, color=[first if i in starts else WAIT for i in steps])
    ax.bar(steps, step, width=1.0, bottom=wait, color=STEP)
    ax.axhline(loader_ms, color=WAIT, linestyle="--", linewidth=1.2)
    ax.axhline(step_ms, color=STEP, linestyle="--", linewidth=1.2)
    waits = [Patch(color=WAIT, label="waiting for data (each pass's first batch too: short passes)")] \
        if startup_counted else [Patch(color=WAIT, label="waiting for data"),
                                 Patch(color=STARTUP, label="a pass's first batch (start-up, not counted)")]
    handles = [*waits, Patch(color=STEP, label="the step"),
               Line2D([], [], color=WAIT, linestyle="--", label=f"loader alone: {loader_ms:.1f} ms/batch"),
               Line2D([], [], color=STEP, linestyle="--", label=f"step alone: {step_ms:.1f} ms/batch")]
    steady = sorted(w + s for i, (w, s) in enumerate(zip(wait, step)) if startup_counted or i not in starts)
    if steady:  # the start-ups' waits would flatten the rest
        ax.set_ylim(0, max(loader_ms, step_ms, steady[int(0.98 * (len(steady) - 1))]) * 1.3)
    ax.set_xlabel("batch of the training loop")
    ax.set_ylabel("ms")
    ax.set_title(title, fontsize=10)
    ax.legend(handles=handles, loc="upper right", fontsize=8, framealpha=0.9)
    total = sum(stages.values())
    names = sorted(stages, key=stages.__getitem__)
    shares = [100 * stages[n] / total for n in names] if total else []
    side.barh(range(len(names)), shares, color="#6a8caf")
    for i, share in enumerate(shares):
        side.text(min(share, 70) + 2, i, f"{share:.0f}%", va="center", fontsize=8)
    side.set_yticks(range(len(names)), names, fontsize=8)
    side.set_xlim(0, 100)
    side.set_xlabel("% of the workers' time")
    side.set_title("where the workers' time goes", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def describe(path: Path) -> dict[str, Any]:
    """Size and pixel size of a written PNG (what the tests check)."""
    data = path.read_bytes()
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return {"bytes": len(data), "width": width, "height": height, "png": data[:8] == b"\x89PNG\r\n\x1a\n"}
