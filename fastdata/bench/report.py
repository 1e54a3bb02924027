"""Benchmark output: a readable table, JSON with machine and versions, a PNG bar chart."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path
from typing import Any

from ..decode.native import native_status
from .harness import Result
from .targets import decode_aware_row, decode_limit_source, target

_PACKAGES = ["fastdata", "torch", "torchvision", "numpy", "pillow", "PyTurboJPEG", "simplejpeg",
             "opencv-python-headless", "nvidia-dali-cuda130", "lmdb", "tfrecord"]


def machine_info() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "crop_decode": native_status(),
    }


def ratios(results: list[Result]) -> dict[tuple[str, str], float | None]:
    """(group, name) -> median rate over the median of its baseline in the same group."""
    by_key = {(r.group, r.name): r for r in results}
    out: dict[tuple[str, str], float | None] = {}
    for r in results:
        base = by_key.get((r.group, r.baseline)) if r.baseline else None
        out[(r.group, r.name)] = (r.median / base.median) if base and base.median > 0 and r.rates else None
    return out


def table(results: list[Result]) -> str:
    rat = ratios(results)
    head = f"{'group':<10} {'variant':<44} {'median':>10} {'min':>10} {'max':>10} {'x base':>7} {'RSS MB':>7}  note"
    lines = [head, "-" * len(head)]
    for r in results:
        if r.error:
            lines.append(f"{r.group:<10} {r.name:<44} {'failed':>10}  {r.error}")
            continue
        unit = f"{r.unit}/s"
        mn, mx = (min(r.rates), max(r.rates)) if r.rates else (0, 0)
        value = rat[(r.group, r.name)]
        ratio = f"{value:.2f}" if value is not None else ("base" if not r.baseline else "-")
        lines.append(
            f"{r.group:<10} {r.name:<44} {r.median:>10.1f} {mn:>10.1f} {mx:>10.1f} {ratio:>7} {r.peak_rss_mb:>7.0f}  {unit} {r.note}"
        )
    return "\n".join(lines)


def to_json(results: list[Result], meta: dict) -> str:
    rat = ratios(results)
    rows = []
    for r in results:
        rows.append({
            "group": r.group, "name": r.name, "unit": f"{r.unit}/s", "rates": r.rates, "median": r.median,
            "min": min(r.rates) if r.rates else None, "max": max(r.rates) if r.rates else None,
            "baseline": r.baseline, "ratio_to_baseline": rat[(r.group, r.name)], "peak_rss_mb": round(r.peak_rss_mb, 1),
            "mb_per_s": (r.median * r.bytes_per_item / 1e6) if r.bytes_per_item else None,
            "note": r.note, "error": r.error,
        })
    return json.dumps({"machine": machine_info(), "settings": meta, "results": rows}, indent=1)


def write_all(results: list[Result], meta: dict, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write results.json, results.txt and (with matplotlib) results.png; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "table": out / "results.txt"}
    paths["json"].write_text(to_json(results, meta))
    paths["table"].write_text(table(results) + "\n")
    png = _chart(results, out / "results.png")
    if png:
        paths["png"] = png
    return paths


def _chart(results: list[Result], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig = figure(results)
    if fig is None:
        return None
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def figure(results: list[Result]) -> Any:
    """The chart: one panel per group, each row's median as a ratio to its
    group's baseline (min-max as error bars). Groups differ by orders of
    magnitude (pipelines ~500 img/s, conversion ~9,000 img/s, reads ~10^5
    rec/s), so one absolute axis would flatten all but one. None when no
    group has a baseline to divide by."""
    import matplotlib.pyplot as plt

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
    if not panels:
        return None
    heights = [len(rows) for _, rows in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 0.3 * sum(heights) + 1.1 * len(panels)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (group, rows) in zip(axes[:, 0], panels):
        ratio = [r.median / ref for r, ref in rows]
        low = [(r.median - min(r.rates)) / ref for r, ref in rows]
        high = [(max(r.rates) - r.median) / ref for r, ref in rows]
        ax.barh([r.name for r, _ in rows], ratio, xerr=[low, high], color=[_colour(r.name) for r, _ in rows],
                error_kw={"elinewidth": 0.8, "ecolor": "#333"})
        ax.axvline(1.0, color="#444", linewidth=0.8, linestyle="--")
        for y, (value, up) in enumerate(zip(ratio, high)):
            ax.annotate(f"{value:.2f}x", (value + up, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.invert_yaxis()
        base = next(r for r, _ in rows if not r.baseline)
        ax.set_title(f"{group}: x {base.name} ({base.median:,.0f} {base.unit}/s = 1)", fontsize=10, loc="left")
        ax.tick_params(axis="y", labelsize=8)
    axes[-1, 0].set_xlabel("median rate / the group's baseline (min-max)")
    fig.tight_layout()
    return fig


def _colour(name: str) -> str:
    if name.startswith("fastdata"):
        return "#2a7"  # fastdata
    if name.startswith("DALI"):
        return "#48c"
    return "#999"  # baselines and reference points


def headline(results: list[Result]) -> list[str]:
    """The project's speed targets (:mod:`fastdata.bench.targets`), each stated as met or missed with its ratio.

    A target whose rows this run did not time (no DALI, no shards) is left out.
    """
    lines = ["targets (ratios from this run):"]

    def check(key: str, label: str, num: str | None, den: str | None, group: str) -> None:
        med = {r.name: r.median for r in results if r.rates and r.group == group}
        if num not in med or den not in med or med[den] <= 0:
            return
        value, minimum = med[num] / med[den], target(key).minimum
        lines.append(f"  {'MET   ' if value >= minimum else 'MISSED'} {label}: {value:.2f}x (target >= {minimum}x)")

    best: dict[str, Result] = {}
    for group in ("train", "eval"):
        base = next((r.name for r in results if r.group == group and r.baseline is None), None)
        # the same images as the baseline: shards stored smaller (--resize) are FFCV's lever, shown but not a target
        top = max((r for r in results if r.group == group and "decode-aware" in r.name and r.rates
                   and "--resize" not in r.name),
                  key=lambda r: r.median, default=None)
        if top is not None:
            best[group] = top
        if base and top:
            check(f"{group}_vs_torchvision", f"{group}: {top.name} vs {base}", top.name, base, group)
    for r in results:
        if r.group == "train" and r.name.startswith("DALI CPU ") and r.rates:
            fmt = r.name[len("DALI CPU "):]
            check("train_vs_dali_cpu", f"train: fastdata {fmt} decode-aware vs {r.name}",
                  decode_aware_row(fmt), r.name, "train")
    for r in results:
        # the definition: the best same-images pipeline vs decoding every whole image, same loader
        if r.group == "train" and decode_limit_source(r.name) is not None and "train" in best:
            fast = best["train"].name
            check("decode_limit", f"decode limit: {fast} vs {r.name}", fast, r.name, "train")
    return lines
