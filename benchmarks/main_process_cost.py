"""What the converter's main process spends per image outside the workers, phase by phase.

The phases are the serial part of ``fastdata convert`` (issue 20): scanning
SRC (one ``stat`` per file), ``make_plan``, saving the plan file, loading it
(``--resume``, other nodes) and writing ``sources.jsonl`` at the end. Each is
timed for two implementations in the same process, interleaved (one of each
per round, in alternating order) so that a busy machine slows both alike:

* ``base``: ``converters/scan.py``, ``converters/plan.py`` and
  ``convert._write_sources`` as they were at ``--base`` (read with
  ``git show``, loaded as a package of their own);
* ``new``: the working tree's.

on two folders: the photo folder ``benchmarks/convert_scaling.py`` builds
(hymenoptera train hard-linked ``--copies`` times; 11,712 files for 48) and a
synthetic folder of ``--tiny`` one-byte files in 100 classes (the scan's cost
is per file, not per byte). Figures are µs per image, median over
``--rounds``, and new / base ratios; ``--json`` writes them with the machine
and versions.

    python benchmarks/main_process_cost.py [--rounds 7] [--base 7dc5b3f] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

#: The commit before issue 20's main-process work (scan, plan file, sources.jsonl).
DEFAULT_BASE = "7dc5b3f"
PHASES = ("scan", "make_plan", "save", "load", "sources")


def load_base(rev: str) -> types.SimpleNamespace:
    """``scan``, ``plan`` and ``convert`` (for ``_write_sources``) as they were at ``rev``."""

    def show(path: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True,
                              capture_output=True, text=True).stdout

    pkg = types.ModuleType("fastdata_base_converters")
    pkg.__path__ = []
    sys.modules[pkg.__name__] = pkg
    # the converter's other modules (parallel, forkpool, ...) are not timed here: the working tree's stand in,
    # under the flat names the base's modules import them by (the working tree groups them in sub-packages)
    import fastdata.converters as current

    here = Path(current.__file__).parent
    for other in here.rglob("*.py"):
        name = other.stem
        if name not in ("scan", "plan", "convert", "__init__"):
            dotted = ".".join(other.relative_to(here).with_suffix("").parts)
            sys.modules[f"{pkg.__name__}.{name}"] = __import__(f"fastdata.converters.{dotted}", fromlist=["_"])
    mods = {}
    for name in ("scan", "plan", "convert"):  # each imports the ones before it
        mod = types.ModuleType(f"{pkg.__name__}.{name}")
        mod.__package__ = pkg.__name__
        sys.modules[mod.__name__] = mod
        exec(compile(show(f"converters/{name}.py"), f"{rev}:converters/{name}.py", "exec"), mod.__dict__)
        mods[name] = mod
    return types.SimpleNamespace(scan=mods["scan"], plan=mods["plan"], write_sources=mods["convert"]._write_sources,
                                 record=lambda: {"skipped": []})


def load_new() -> types.SimpleNamespace:
    from fastdata.converters.conversion import convert
    from fastdata.converters.output.record import ShardRecord
    from fastdata.converters.planning import plan, scan

    return types.SimpleNamespace(scan=scan, plan=plan, write_sources=convert._write_sources, record=ShardRecord)


def build_tiny(scratch: Path, count: int, classes: int = 100) -> Path:
    src = scratch / f"tiny-{count}"
    if src.is_dir():
        return src
    tmp = scratch / f"tiny-{count}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    for c in range(classes):
        d = tmp / f"class{c:03d}"
        d.mkdir(parents=True)
        for k in range(c * count // classes, (c + 1) * count // classes):
            (d / f"img{k:07d}.jpg").write_bytes(b"x")
    tmp.rename(src)
    return src


def run_phases(impl: types.SimpleNamespace, src: Path, work: Path) -> dict[str, float]:
    """Seconds of each phase, as ``fastdata convert SRC OUT`` runs them."""
    source = {"kind": "folder", "root": os.path.abspath(src), "extensions": list(impl.scan.DEFAULT_EXTENSIONS),
              "allow_empty_classes": False}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    took = {}
    gc.collect()
    t = time.perf_counter()
    scan = impl.scan.scan_folder(src)
    took["scan"] = time.perf_counter() - t
    gc.collect()
    t = time.perf_counter()
    plan = impl.plan.make_plan(scan, impl.plan.PlanOptions(format="recordio"), source)
    took["make_plan"] = time.perf_counter() - t
    gc.collect()
    t = time.perf_counter()
    plan.save(work)
    took["save"] = time.perf_counter() - t
    gc.collect()
    t = time.perf_counter()
    back = impl.plan.Plan.load(work)
    took["load"] = time.perf_counter() - t
    records = {s.key: impl.record() for s in back.shards}  # a shard's done record, as each implementation has it
    gc.collect()
    t = time.perf_counter()
    impl.write_sources(work, back, "", records)
    took["sources"] = time.perf_counter() - t
    took["items"] = len(scan.items)
    took["_sources"] = (work / "sources.jsonl").read_bytes()
    return took


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--src", type=Path, help="image folder (default: convert_scaling's photos x --copies)")
    p.add_argument("--copies", type=int, default=48)
    p.add_argument("--tiny", type=int, default=100_000, help="files in the synthetic folder (0: skip it)")
    p.add_argument("--scratch", type=Path, default=Path("/tmp/fastdata-convert-scaling"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--base", default=DEFAULT_BASE, help="git revision of the base implementation")
    p.add_argument("--json", type=Path, help="write the results here as JSON")
    args = p.parse_args(argv)

    args.scratch.mkdir(parents=True, exist_ok=True)
    if args.src is None:
        from convert_scaling import DEFAULT_PHOTOS, build_source

        args.src = build_source(DEFAULT_PHOTOS, args.copies, args.scratch)
    folders = {"photos": args.src}
    if args.tiny:
        folders["tiny"] = build_tiny(args.scratch, args.tiny)
    impls = {"base": load_base(args.base), "new": load_new()}
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="main-cost-") as tmp:
        for label, src in folders.items():
            runs: dict[str, list[dict]] = {k: [] for k in impls}
            for r in range(args.rounds + 1):  # round 0 warms the caches and is dropped
                order = list(impls) if r % 2 == 0 else list(reversed(impls))
                for key in order:
                    took = run_phases(impls[key], src, Path(tmp) / key)
                    if r:
                        runs[key].append(took)
            if runs["base"][0]["_sources"] != runs["new"][0]["_sources"]:
                raise SystemExit(f"{label}: sources.jsonl differs between base and new")
            n = runs["base"][0]["items"]
            per = {key: {ph: statistics.median(t[ph] for t in runs[key]) / n * 1e6 for ph in PHASES}
                   for key in impls}
            for key in impls:
                per[key]["total"] = sum(per[key][ph] for ph in PHASES if ph != "load")  # load: resume/nodes only
            results[label] = {"src": str(src), "items": n, "us_per_item": per,
                              "ratio_new_base": {ph: per["new"][ph] / per["base"][ph] for ph in per["base"]}}
    for label, res in results.items():
        print(f"\n{label}: {res['items']:,} files from {res['src']}, median of {args.rounds} interleaved rounds")
        print(f"{'phase':<28}{'base µs':>10}{'new µs':>10}{'new/base':>10}")
        for ph in (*PHASES, "total"):
            name = ph if ph != "total" else "total (without load)"
            print(f"{name:<28}{res['us_per_item']['base'][ph]:>10.2f}{res['us_per_item']['new'][ph]:>10.2f}"
                  f"{res['ratio_new_base'][ph]:>10.2f}")
    if args.json:
        meta = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                "platform": platform.platform(), "base": args.base, "rounds": args.rounds,
                "head": subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                       text=True).stdout.strip()}
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
