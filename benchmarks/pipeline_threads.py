"""Where the threaded training pipeline's time goes, and what the batch path takes back.

Interleaved rounds over one RecordIO dataset converted twice (plain and with
``--restart-markers``), train (RandomResizedCrop(224) + flip) and eval
(Resize(256) + CenterCrop(224)), batch 32, 2 threads:

* ``full decode x2``: two processes running simplejpeg's full decode over the
  same bytes in memory: the issue's "2 cores' full decode" (1.0 by definition);
* ``per-sample``: ``make_loader(ds, 32, workers=Workers(num=2, kind="threads"))``
  with ``loader.dataloader.batch_path = False``: each sample through
  ``ds[key]``, then ``fast_collate``;
* ``before``: the per-sample path with fast_collate's NumPy copy (the
  code before the batch path and the compiled collate copy);
* ``batch path``: the same loader with the batch path (one C call per batch
  that decodes every sample into its slot, the GIL released);
* ``C only``: 2 threads calling the compiled crop decoder on boxes planned
  beforehand, no Python per sample: the ceiling for this decoder.

Run ``python benchmarks/pipeline_threads.py SRC_FOLDER --rounds 5`` (SRC: an
ImageFolder, e.g. hymenoptera train replicated x4); it converts into
``--work`` once. Writes JSON (``--json``) and prints a table of img/s and
ratios to the full decode, with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import torch

BATCH, THREADS = 32, 2


def convert(src: str, out: str, restart: bool) -> str:
    if not os.path.exists(os.path.join(out, "manifest.json")):
        cmd = [sys.executable, "-m", "fastdata.converters.cli", "convert", src, out, "--format", "recordio"]
        usage = subprocess.run(cmd[:4] + ["--help"], capture_output=True, text=True).stdout
        # Where restart markers became the default, "plain" must ask for the original bytes.
        plain = ["--passthrough"] if "--passthrough" in usage else []
        subprocess.run(cmd + (["--restart-markers"] if restart else plain), check=True, capture_output=True)
    return out


def records(path: str) -> list[bytes]:
    from fastdata.datasets import open_dataset

    ds = open_dataset(path, decode=False)
    return [ds[i][0] for i in range(len(ds))]


_FULL: list[bytes] = []


def _decode_half(part: int) -> float:
    import simplejpeg

    cpu = time.process_time()
    for data in _FULL[part::2]:
        simplejpeg.decode_jpeg(data, colorspace="RGB")
    return time.process_time() - cpu


def full_decode(pool: Any) -> tuple[float, float]:
    t = time.perf_counter()
    cpu = sum(pool.map(_decode_half, [0, 1]))
    return len(_FULL) / (time.perf_counter() - t), cpu / len(_FULL)


def loader_pass(loader: Any, numpy_collate: bool = False) -> tuple[float, float]:
    from fastdata.loading import collate

    simd = collate._copy_into
    if numpy_collate:  # fast_collate's NumPy copy, as before the compiled copy_into
        collate._copy_into = None
    try:
        n, t, cpu = 0, time.perf_counter(), time.process_time()
        for images, _ in loader:
            n += len(images)
        return n / (time.perf_counter() - t), (time.process_time() - cpu) / n
    finally:
        collate._copy_into = simd


def c_only(path: str) -> Any:
    """Two threads calling the compiled decoder on pre-planned boxes: what is left with no Python."""
    from fastdata.datasets import open_dataset
    from fastdata.decode import native, read_info
    from fastdata.transforms.base import dct_min_size
    from fastdata.transforms.crop import sample_resized_crop

    ds = open_dataset(path, decode=False)
    gen = np.random.default_rng(0)
    plans = []
    for i in range(len(ds)):
        data = ds[i][0]
        info = read_info(data)
        box = sample_resized_crop(info.height, info.width, (0.08, 1.0), (3 / 4, 4 / 3), gen)
        n, region, sub = native.plan(info, box, dct_min_size((224, 224)), True, "x")
        plans.append((data, n, region, sub, info.orientation, bool(gen.random() < 0.5)))
    out = np.empty((THREADS, 224, 224, 3), np.uint8)

    def run(part: int) -> None:
        for data, n, region, sub, o, flip in plans[part::THREADS]:
            native.cropdecode.decode_resized(data, out[part], n, region, sub, o, flip, 0)

    def timed() -> tuple[float, float]:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
        t, cpu = time.perf_counter(), time.process_time()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return len(plans) / (time.perf_counter() - t), (time.process_time() - cpu) / len(plans)

    return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="ImageFolder to convert (e.g. hymenoptera train x4)")
    ap.add_argument("--work", default="/tmp/fastdata-pipeline-threads", help="where the two conversions are kept")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()

    from fastdata.datasets import open_dataset
    from fastdata.decode import native_status
    from fastdata.loading import Workers, make_loader
    from fastdata.transforms import CenterCrop, Compose, RandomHorizontalFlip, RandomResizedCrop, Resize

    plain = convert(args.src, os.path.join(args.work, "plain"), False)
    rst = convert(args.src, os.path.join(args.work, "restart"), True)
    _FULL.extend(records(plain))
    pool = mp.get_context("fork").Pool(2)
    pool.map(_decode_half, [0, 1])  # warm

    def loader(path: str, train: bool, batch_path: bool) -> Any:
        tf = Compose([RandomResizedCrop(224), RandomHorizontalFlip()] if train else [Resize(256), CenterCrop(224)])
        ld = make_loader(open_dataset(path, transform=tf), BATCH, workers=Workers(num=THREADS, kind="threads"),
                         train=train)
        if not hasattr(ld.dataloader, "batch_path"):  # a checkout without the batch path
            return None if batch_path else ld
        ld.dataloader.batch_path = batch_path
        return ld

    full = "full decode x2 (simplejpeg, processes)"
    variants: dict[str, Any] = {full: lambda: full_decode(pool)}
    for label, path in (("plain", plain), ("restart", rst)):
        for group, train in (("train", True), ("eval", False)):
            for name, bp, numpy_collate in (("before", False, True), ("per-sample", False, False),
                                            ("batch path", True, False)):
                ld = loader(path, train, bp)
                if ld is not None:
                    loader_pass(ld)  # warm: threads started, pages cached
                    variants[f"{label} {group}: {name}"] = (lambda ld=ld, nc=numpy_collate: loader_pass(ld, nc))
        timed = c_only(path)
        timed()
        variants[f"{label} train: C only, 2 threads"] = timed

    results: dict[str, list[float]] = {k: [] for k in variants}
    cpu_us: dict[str, list[float]] = {k: [] for k in variants}
    loads = []
    for _ in range(args.rounds):
        for name, fn in variants.items():
            rate, cpu = fn()
            results[name].append(rate)
            cpu_us[name].append(cpu * 1e6)
        loads.append(os.getloadavg()[0])
    pool.terminate()

    def paired(a: str, b: str) -> float:
        """Median over rounds of a / b, each round's pair timed back to back."""
        return statistics.median(x / y for x, y in zip(results[a], results[b]))

    print(f"{len(_FULL)} images, batch {BATCH}, {THREADS} threads, {args.rounds} rounds; crop decode: {native_status()}")
    print(f"1-min load average after each round: {', '.join(f'{x:.2f}' for x in loads)} ({os.cpu_count()} CPUs)")
    print("img/s: wall clock; vs full x2: median of the per-round ratios; CPU: process CPU time per image "
          "(all threads; a busy machine inflates it less than img/s)")
    print(f"{'variant':36s} {'median img/s':>12s} {'min':>6s} {'max':>6s} {'vs full x2':>10s} {'CPU us/img':>10s}")
    table = {}
    for name, vals in results.items():
        med, cpu = statistics.median(vals), statistics.median(cpu_us[name])
        table[name] = {"img_per_s": med, "vs_full_decode_x2": paired(name, full), "cpu_us_per_img": cpu}
        print(f"{name:36s} {med:12.0f} {min(vals):6.0f} {max(vals):6.0f} {paired(name, full):10.2f} {cpu:10.0f}")
    gains = {}
    for name in results:
        if name.endswith("batch path"):
            for other in ("before", "per-sample"):
                base_name = name.replace("batch path", other)
                gains[f"{name.split(':')[0]}, batch path / {other}"] = {
                    "img_per_s": paired(name, base_name),
                    "cpu": statistics.median(cpu_us[base_name]) / statistics.median(cpu_us[name])}
    for group, g in gains.items():
        print(f"{group}: {g['img_per_s']:.2f}x img/s, {g['cpu']:.2f}x less CPU per image")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                            "torch": torch.__version__, "crop_decode": native_status(), "load_after_rounds": loads},
                "images": len(_FULL), "batch": BATCH, "threads": THREADS, "table": table, "batch_vs_per_sample": gains,
                "img_per_s": results, "cpu_us_per_img": cpu_us,
            }, f, indent=1)


if __name__ == "__main__":
    main()
