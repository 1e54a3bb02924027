"""Benchmark output: a readable table, JSON with machine and versions, a PNG bar chart."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path

from ..decode.native import native_status
from ..formats import speedups
from . import verdicts
from .chart import figure
from .harness import Result
from .verdicts import row_warnings, run_warnings

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
        "shard_write": speedups.status(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
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
    """The rows as text; a row whose figure may not be trusted (noisy rounds, a
    busy machine: :func:`~.verdicts.row_warnings`) is marked ``!`` with why."""
    rat = ratios(results)
    head = (f"{'group':<10} {'variant':<44} {'median':>10} {'min':>10} {'max':>10} {'spread':>6} {'x base':>7} "
            f"{'RSS MB':>7}  note")
    lines = [head, "-" * len(head)]
    for r in results:
        if r.error:
            lines.append(f"{r.group:<10} {r.name:<44} {'failed':>10}  {r.error}")
            continue
        unit = f"{r.unit}/s"
        mn, mx = (min(r.rates), max(r.rates)) if r.rates else (0, 0)
        value = rat[(r.group, r.name)]
        ratio = f"{value:.2f}" if value is not None else ("base" if not r.baseline else "-")
        spread = f"{r.spread:.2f}" if r.spread is not None else "-"
        warn = "; ".join(row_warnings(r))
        note = " ".join(x for x in (unit, r.note, f"! {warn}" if warn else "") if x)
        lines.append(
            f"{r.group:<10} {r.name:<44} {r.median:>10.1f} {mn:>10.1f} {mx:>10.1f} {spread:>6} {ratio:>7} "
            f"{r.peak_rss_mb:>7.0f}  {note}"
        )
    return "\n".join(lines)


def to_json(results: list[Result], meta: dict) -> str:
    rat = ratios(results)
    rows = []
    for r in results:
        rows.append({
            "group": r.group, "name": r.name, "unit": f"{r.unit}/s", "rates": r.rates, "median": r.median,
            "min": min(r.rates) if r.rates else None, "max": max(r.rates) if r.rates else None,
            "spread": r.spread, "others_cpu_share": r.busy,
            "baseline": r.baseline, "ratio_to_baseline": rat[(r.group, r.name)], "peak_rss_mb": round(r.peak_rss_mb, 1),
            "mb_per_s": (r.median * r.bytes_per_item / 1e6) if r.bytes_per_item else None,
            "note": r.note, "error": r.error, "warnings": row_warnings(r),
        })
    doc = {"machine": machine_info(), "settings": meta, "warnings": run_warnings(results), "results": rows}
    return json.dumps(doc, indent=1)


def write_all(results: list[Result], meta: dict, out_dir: str | os.PathLike[str], *, text: str | None = None) -> dict[str, Path]:
    """Write results.json, results.txt (``text``, else the table) and (with
    matplotlib) results.png; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "table": out / "results.txt"}
    paths["json"].write_text(to_json(results, meta))
    paths["table"].write_text((text if text is not None else table(results)) + "\n")
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


def headline(results: list[Result], missing: dict[str, str] | None = None) -> list[str]:
    """The project's speed targets (:mod:`fastdata.bench.targets`), each judged on
    the defaults' row (:mod:`fastdata.bench.verdicts`), then the run's warnings."""
    from .suite import FORMATS

    return verdicts.headline(results, FORMATS, missing)
