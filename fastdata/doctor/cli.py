"""``fastdata doctor SRC``: is training on this machine waiting for data?

Measures the loader alone (its ceiling), a training step alone and both
together (:mod:`.measure`), prints a table and a verdict, and writes
``fastdata-doctor.json`` and ``fastdata-doctor.png`` (:mod:`.timeline`).
``--json`` prints the JSON object instead of the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from ..errors import FastDataError
from ..loading.verdict import times
from ..loading.watcher import loader_dict
from .measure import Phase, alone, loader_alone, ratio, together
from .steps import choose_step
from .timeline import draw

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fastdata doctor",
        description="Measure the loader alone, a training step alone and both together on this machine, "
                    "and say whether training waits for data and what would help.",
    )
    p.add_argument("src", metavar="SRC", help="an image folder (root/<class>/<image>) or a converted dataset")
    p.add_argument("--batch-size", type=int, default=32, metavar="N", help="images per batch (default 32)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="loader workers (default: make_loader's, CPUs per rank up to 8)")
    p.add_argument("--kind", choices=("auto", "threads", "processes"), default="auto",
                   help="worker threads or processes (default auto: make_loader's choice)")
    p.add_argument("--decode", choices=("cpu", "cuda", "auto"), default="cpu", help="make_loader's decode= (default cpu)")
    p.add_argument("--size", type=int, default=224, metavar="PX", help="RandomResizedCrop output size (default 224)")
    step = p.add_mutually_exclusive_group()
    step.add_argument("--model", choices=("resnet50", "tiny"), default=None,
                      help="the step: a model's forward+backward (default resnet50 on CUDA with torchvision, else tiny)")
    step.add_argument("--step-ms", type=float, default=None, metavar="T",
                      help="the step: T milliseconds of waiting, standing for a step of known time")
    p.add_argument("--seconds", type=float, default=4.0, metavar="S", help="each measurement's length (default 4)")
    p.add_argument("--min-steps", type=int, default=10, metavar="N", help="each measurement's least steps (default 10)")
    p.add_argument("--out", default=".", metavar="DIR", help="where fastdata-doctor.json and .png go (default .)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    return p


def _loader(args: argparse.Namespace) -> tuple[Any, Any]:
    from ..datasets.open import open_dataset
    from ..loading.make import make_loader
    from ..loading.settings import Workers
    from ..transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

    dataset = open_dataset(args.src, transform=Compose([RandomResizedCrop(args.size), RandomHorizontalFlip()]))
    loader = make_loader(dataset, args.batch_size, workers=Workers(args.workers, kind=args.kind), decode=args.decode,
                         seed=0, rank=0, world_size=1)
    return dataset, loader


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The three measurements and the verdict, as the JSON object."""
    dataset, loader = _loader(args)
    classes = len(getattr(dataset, "classes", ()) or ()) or 1000
    step = choose_step(args.model, args.step_ms, classes=classes)
    budget = {"seconds": args.seconds, "min_steps": args.min_steps, "batch_size": args.batch_size}
    with loader:
        ceiling, batch, _ = loader_alone(loader, **budget)
        stepped = alone(step.run, batch, **budget)
        loader_ratio = ratio(ceiling, stepped)
        both, report, timeline = together(loader, step.run, loader_ratio=loader_ratio, **budget)
    verdict = report.verdict
    stats = report.loader
    return {
        "src": str(args.src), "dataset": type(dataset).__name__, "images": len(dataset),
        "batch_size": args.batch_size, "workers": loader.workers, "decode": args.decode,
        "cuda": torch.cuda.is_available(), "step": {"name": step.name, "device": step.device, "note": step.note},
        "phases": {p.name: p.to_dict() for p in (ceiling, stepped, both)},
        "loader_step_ratio": loader_ratio,
        "verdict": verdict.verdict, "wait_share": verdict.wait_share, "wait_share_counts": _counts(both),
        "dominant": verdict.dominant, "dominant_share": verdict.dominant_share, "suggestion": verdict.suggestion,
        "loader_stats": loader_dict(stats),
        "timeline": timeline,
    }


def _counts(together: Phase) -> str:
    """What ``wait_share`` is over, in words (the table and the JSON say the same)."""
    if together.startup_counted:
        return (f"every batch counted: passes of {together.pass_batches} batch(es), fewer than the "
                f"{together.steady_batches} a steady state needs")
    return "each pass's first batch (start-up) left out"


def table(result: dict[str, Any]) -> list[str]:
    """The text report."""
    phases = [result["phases"][name] for name in ("loader alone", "step alone", "together")]
    lines = [
        (
            f"fastdata doctor: {result['src']} ({result['dataset']}, {result['images']} images), batch "
            f"{result['batch_size']}, workers: {result['workers']}, decode={result['decode']!r}"
        ),
        f"step: {result['step']['name']}",
    ]
    if result["step"]["note"]:
        lines.append(f"note: {result['step']['note']}")
    lines += ["", f"{'':14}{'batches/s':>11}{'images/s':>11}{'wait ms/batch':>15}{'step ms/batch':>15}{'batches':>9}"]
    for p in phases:
        wait = f"{p['wait_ms']:.1f}" if p["name"] != "step alone" else "-"
        step = f"{p['step_ms']:.1f}" if p["name"] != "loader alone" else "-"
        lines.append(f"{p['name']:14}{p['batches_per_s']:>11.1f}{p['images_per_s']:>11.0f}{wait:>15}{step:>15}"
                     f"{p['steps']:>9}")
    ratio_ = result["loader_step_ratio"]
    if ratio_ is not None:
        lines.append(f"{'':14}loader alone / step alone: {times(ratio_)} "
                     f"({phases[0]['batches_per_s']:.1f} / {phases[1]['batches_per_s']:.1f} batches/s)")
    lines.append("")
    together_ = result["phases"]["together"]
    lines.append(f"waiting for data: {result['wait_share']:.0%} of the training loop's time "
                 f"({result['wait_share_counts']}; start-up {together_['startup_s']:.2f} s)")
    if together_["startup_counted"]:
        lines.append(f"  (training on this dataset pays each pass's start-up every epoch, so it is counted; a "
                     f"steady-state figure needs passes of {together_['steady_batches']} batches or more: more images, or a "
                     f"smaller --batch-size than {result['batch_size']})")
    stats = result["loader_stats"]
    if stats and stats["worker_stages"]:
        total = sum(stats["worker_stages"].values())
        parts = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(stats["worker_stages"].items(), key=lambda kv: -kv[1]))
        busy = stats["worker_busy_share"]
        lines.append(f"workers: {busy:.0%} busy; {parts}" if busy is not None else f"workers: {parts}")
        lines += [f"  ({note})" for note in stats["notes"]]
    lines.append(f"verdict: {result['verdict']} -- {result['suggestion']}")
    return lines


def _title(result: dict[str, Any]) -> str:
    ratio_ = result["loader_step_ratio"]
    versus = f"; loader alone / step alone: {times(ratio_)}" if ratio_ is not None else ""
    return (f"{result['verdict']}: waiting {result['wait_share']:.0%} of the time{versus}\n"
            f"step: {result['step']['name']}; {result['wait_share_counts']}")


def _write(result: dict[str, Any], out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": str(out / "fastdata-doctor.json")}
    p = result["phases"]
    stats = result["loader_stats"] or {}
    drawn = draw(out / "fastdata-doctor.png", result["timeline"], loader_ms=p["loader alone"]["wait_ms"],
                 step_ms=p["step alone"]["step_ms"], pass_starts=result["timeline"]["pass_starts"],
                 stages=stats.get("worker_stages") or {}, startup_counted=p["together"]["startup_counted"],
                 title=_title(result))
    if drawn:
        paths["png"] = str(out / "fastdata-doctor.png")
    result["files"] = paths
    Path(paths["json"]).write_text(json.dumps(result, indent=1) + "\n")
    return paths


def main(argv: list[str] | None = None) -> int:
    """``fastdata doctor``: 0 when measured, 2 for a bad argument or dataset (the message says why)."""
    args = parser().parse_args(argv)
    try:
        result = run(args)
    except (FastDataError, OSError) as exc:
        print(f"fastdata doctor: error: {exc}", file=sys.stderr)
        return 2
    paths = _write(result, Path(args.out))
    if args.json:
        print(json.dumps(result))
        return 0
    lines = table(result)
    missing = "" if "png" in paths else " (no PNG: matplotlib is missing; pip install 'fastdata[bench]')"
    lines.append(f"wrote {', '.join(paths.values())}{missing}")
    print("\n".join(lines))
    return 0
