"""Benchmark output: a readable table, JSON with machine and versions, a PNG bar chart."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path

from .harness import Result

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
    rows = [r for r in results if r.rates and r.unit == "img"]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(rows) + 1.2))
    names = [f"{r.group}: {r.name}" for r in rows]
    ax.barh(names, [r.median for r in rows], xerr=[[r.median - min(r.rates) for r in rows], [max(r.rates) - r.median for r in rows]],
            color=["#888" if not r.baseline else "#2a7" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("images/s (median, min-max)")
    ax.set_title("fastdata bench")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def headline(results: list[Result]) -> list[str]:
    """The project's speed targets, each stated as met or missed with its ratio."""
    lines = ["targets (ratios from this run):"]

    def check(label: str, num: str | None, den: str | None, target: float, group: str | None = None) -> None:
        med = {r.name: r.median for r in results if r.rates and (group is None or r.group == group)}
        if num not in med or den not in med or med[den] <= 0:
            return
        value = med[num] / med[den]
        lines.append(f"  {'MET   ' if value >= target else 'MISSED'} {label}: {value:.2f}x (target >= {target}x)")

    for group, target in (("train", 4.0), ("eval", 5.0)):
        base = next((r.name for r in results if r.group == group and r.baseline is None), None)
        best = max((r for r in results if r.group == group and "decode-aware" in r.name and r.rates),
                   key=lambda r: r.median, default=None)
        if base and best:
            check(f"{group}: {best.name} vs {base}", best.name, base, target, group)
        if group == "train":
            for r in results:
                if r.group == group and r.name.startswith("DALI CPU ") and r.rates:
                    fmt = r.name.split()[-1]
                    check(f"train: fastdata {fmt} decode-aware vs DALI CPU {fmt}", f"fastdata {fmt}, decode-aware", r.name, 1.3, group)
    small = [r for r in results if r.group == "read" and "random (10k" in r.name and r.rates]
    tf = next((r.name for r in results if r.group == "read" and r.name.startswith("tfrecord package")), None)
    for r in small:
        lines.append(f"  {'MET   ' if r.median >= 200_000 else 'MISSED'} read: {r.name}: {r.median:,.0f} rec/s (target >= 200,000)")
        if tf:
            check(f"read: {r.name} vs {tf}", r.name, tf, 3.0)
    plain = next((r.name for r in results if r.group == "convert" and r.baseline is None), None)
    for r in results:
        if r.group == "convert" and r.baseline and "workers" in r.name:
            check(f"convert: {r.name} vs {plain}", r.name, plain, 3.0)
    two = next((r.name for r in results if r.name.startswith("fastdata convert recordio,") and "workers" in r.name), None)
    check("convert: recordio scaling 1 -> 2 workers", two, "fastdata convert recordio, 1 worker", 1.8)
    return lines
