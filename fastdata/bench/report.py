"""Benchmark output: a readable table, JSON with machine and versions, a PNG bar chart."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import os
import platform
from pathlib import Path
from typing import Any

from ..decode.native import native_status
from ..formats import speedups
from . import chart, verdicts
from .harness import Result
from .verdicts import row_warnings, run_warnings

_PACKAGES = ["fastdata", "torch", "torchvision", "numpy", "pillow", "PyTurboJPEG", "simplejpeg",
             "opencv-python-headless", "nvidia-dali-cuda130", "nvidia-dali-cuda120", "lmdb", "tfrecord", "matplotlib"]


def machine_info() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    versions: dict[str, str | None] = {}
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


def rate_text(value: float) -> str:
    """A rate as the table and the chart both show it: ``2,306`` (``12.5`` below 100)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


@dataclasses.dataclass(frozen=True)
class Row:
    """One row as shown: the table prints these, the chart draws these (:func:`rows`)."""

    group: str
    label: str
    """The variant's name, with `` !`` when its figure is not trusted (:attr:`warnings`)."""
    unit: str
    median: float | None
    low: float | None
    high: float | None
    spread: str
    ratio: float | None
    ratio_text: str
    """``4.88x``, ``base`` (the row the group's ratios are taken against) or ``-``."""
    rss_mb: float
    note: str
    warnings: tuple[str, ...]
    error: str | None

    @property
    def value_text(self) -> str:
        """The median with its unit and the ratio: the chart's bar label, the table's figures."""
        if self.median is None:
            return "failed"
        return f"{rate_text(self.median)} {self.unit}  {self.ratio_text}"


def rows(results: list[Result]) -> list[Row]:
    """The rows in the order shown: the one source of the table and the chart."""
    rat = ratios(results)
    bases = {(r.group, r.baseline) for r in results if r.baseline}
    out = []
    for r in results:
        warns = tuple(row_warnings(r))
        label = r.name + (" !" if warns else "")
        if r.error or not r.rates:
            out.append(Row(r.group, label, f"{r.unit}/s", None, None, None, "-", None, "-", r.peak_rss_mb,
                           r.error or "no rounds timed", warns, r.error or "no rounds timed"))
            continue
        value = rat[(r.group, r.name)]
        ratio = f"{value:.2f}x" if value is not None else ("base" if (r.group, r.name) in bases else "-")
        spread = f"{r.spread:.0%}" if r.spread is not None else "-"
        note = "; ".join(x for x in (r.note, f"! {'; '.join(warns)}" if warns else "") if x)
        out.append(Row(r.group, label, f"{r.unit}/s", r.median, min(r.rates), max(r.rates), spread, value, ratio,
                       r.peak_rss_mb, note, warns, None))
    return out


def figure(results: list[Result], notes: dict[str, str] | None = None) -> Any:
    """The chart of :func:`rows` (None when no row was timed): the table, drawn."""
    return chart.figure(rows(results), notes)


def table(results: list[Result], notes: dict[str, str] | None = None) -> str:
    """The rows as text; a row whose figure may not be trusted (noisy rounds, a
    busy machine: :func:`~.verdicts.row_warnings`) is marked ``!`` after its
    name, and its note says why. ``notes``: a line per group on what its figures are."""
    shown = rows(results)
    width = max([len("variant"), *(len(r.label) for r in shown)])
    head = (f"{'group':<7}  {'variant':<{width}}  {'median':>9}  {'min':>9}  {'max':>9}  {'spread':>6}  {'x base':>6}  "
            f"{'RSS MB':>6}  unit   note")
    lines = [head, "-" * len(head)]
    for r in shown:
        if r.median is None or r.low is None or r.high is None:  # a failed row has none of them
            lines.append(f"{r.group:<7}  {r.label:<{width}}  {'failed':>9}  {r.error}")
            continue
        lines.append(
            f"{r.group:<7}  {r.label:<{width}}  {rate_text(r.median):>9}  {rate_text(r.low):>9}  {rate_text(r.high):>9}  "
            f"{r.spread:>6}  {r.ratio_text:>6}  {r.rss_mb:>6.0f}  {r.unit:<5}  {r.note}".rstrip()
        )
    groups = list(dict.fromkeys(r.group for r in shown))
    said = [(g, notes[g]) for g in groups if notes and notes.get(g)]
    lines.append("")
    lines.append("median/min/max: the rounds' rates; spread: (max - min) / median; x base: median over the group's "
                 "base row's; '!' after a name: not trusted (its note says why)")
    lines += [f"{g}: {text}" for g, text in said]
    return "\n".join(lines)


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of :func:`table`'s text back as columns (what a reader of results.txt sees)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("group ") and "variant" in line)
    out = []
    for line in lines[at + 2:]:
        if not line.strip():
            break
        cells = [c for c in line.split("  ") if c.strip()]
        cells = [c.strip() for c in cells]
        if cells[2] == "failed":
            out.append({"group": cells[0], "variant": cells[1], "median": "failed"})
            continue
        keys = ["group", "variant", "median", "min", "max", "spread", "x base", "RSS MB", "unit", "note"]
        out.append(dict(zip(keys, [*cells[:9], "  ".join(cells[9:])])))
    return out


def machine_line(info: dict | None = None) -> str:
    """The machine and versions, one line for the text report (the JSON has them in full)."""
    m = info or machine_info()
    v = {k: x for k, x in m["versions"].items() if x}
    cpus = m["cpu_affinity"] or m["cpu_count"]
    names = ", ".join(f"{k} {x}" for k, x in v.items())
    return f"machine: {m['cpu_model'] or 'unknown CPU'}, {cpus} CPUs for this process; Python {m['python']}; {names}"


def to_json(results: list[Result], meta: dict, chart: list[dict] | None = None) -> str:
    rat = ratios(results)
    out = []
    for r, shown in zip(results, rows(results)):
        out.append({
            "group": r.group, "name": r.name, "label": shown.label, "unit": f"{r.unit}/s", "rates": r.rates,
            "median": r.median, "min": min(r.rates) if r.rates else None, "max": max(r.rates) if r.rates else None,
            "relative_spread": r.spread, "others_cpu_share": r.busy, "round_seconds": r.seconds,
            "baseline": r.baseline, "ratio_to_baseline": rat[(r.group, r.name)], "ratio_text": shown.ratio_text,
            "peak_rss_mb": round(r.peak_rss_mb, 1),
            "mb_per_s": (r.median * r.bytes_per_item / 1e6) if r.bytes_per_item else None,
            "note": r.note, "error": r.error, "warnings": row_warnings(r),
        })
    doc = {"machine": machine_info(), "settings": meta, "warnings": run_warnings(results),
           "machine_busy": verdicts.machine_busy(results), "results": out, "chart": chart}
    return json.dumps(doc, indent=1)


def write_all(results: list[Result], meta: dict, out_dir: str | os.PathLike[str], *, text: str | None = None) -> dict[str, Path]:
    """Write results.json, results.txt (``text``, else the table) and (with
    matplotlib) results.png; return their paths. The JSON's ``chart`` is what
    the PNG plots, read back from the figure (None without matplotlib)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "table": out / "results.txt"}
    notes = meta.get("group_notes") if isinstance(meta, dict) else None
    paths["table"].write_text((text if text is not None else table(results, notes)) + "\n")
    plotted = _chart(results, out / "results.png", notes)
    if plotted is not None:
        paths["png"] = out / "results.png"
    paths["json"].write_text(to_json(results, meta, plotted))
    return paths


def _chart(results: list[Result], path: Path, notes: dict[str, str] | None) -> list[dict] | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None

    fig = figure(results, notes)
    if fig is None:
        return None
    fig.savefig(path, dpi=100)
    data = chart.plotted(fig)
    plt.close(fig)
    return data


def headline(results: list[Result], missing: dict[str, str] | None = None, *, full: bool = True) -> list[str]:
    """The project's speed targets (:mod:`fastdata.bench.targets`), each judged on
    the defaults' row (:mod:`fastdata.bench.verdicts`), then the run's warnings."""
    from .suite import FORMATS

    return verdicts.headline(results, FORMATS, missing, full=full)
