"""The training loop's host time per batch with decode="cuda", on the CPU
fallback with a decoder of known latency, and the resampling's padded source
pixels over those used, on the same batches.

The stage's work (waiting for workers, the decoder call, the resample) either
runs inside the training loop's ``next()`` or on a thread of its own; a step
that sleeps ``--step-ms`` (releasing the GIL, as a GPU step's host side mostly
waits) stands in for the model. Reported per batch: wall time inside
``next()`` and the loop thread's CPU time there, medians over the timed batches.

    python benchmarks/gpu_host_time.py [PHOTOS] [--latency-ms 20] [--step-ms 250] [--batch 16] [--json OUT]
Run it against another checkout with PYTHONPATH=that/checkout to compare.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import torch
from photos import print_result
from torch.utils.data import Subset

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.environ.get("FASTDATA_PHOTOS", os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=os.path.join(PHOTOS, "train"))
    ap.add_argument("--latency-ms", type=float, default=20.0, help="the fake decoder's time per call")
    ap.add_argument("--step-ms", type=float, default=250.0, help="the stand-in training step")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    import fastdata
    from fastdata import Prefetch, Workers, make_loader, transforms
    from fastdata.datasets import ImageFolder
    from fastdata.gpu import CPUDecoder, GPUDecode
    from fastdata.gpu.resample import chunks

    class Slow(CPUDecoder):
        def decode(self, encoded, device):
            time.sleep(args.latency_ms / 1000)  # the GPU decoder's host-side wait, as nvJPEG's batched call blocks
            return super().decode(encoded, device)

    folder = ImageFolder(args.photos, transform=transforms.Compose([transforms.RandomResizedCrop(args.size),
                                                                    transforms.RandomHorizontalFlip()]))
    n = (args.batches + 2) * args.batch
    data = Subset(folder, [i % len(folder) for i in range(n)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loader = make_loader(data, args.batch, seed=0, workers=Workers(2, kind="threads"),
                             decode=GPUDecode(backend=Slow()), prefetch=Prefetch(device="cpu", dtype=torch.float32))
    walls, cpus, padded_one, padded_grouped, padded_rounded = [], [], [], [], []
    try:
        from fastdata.gpu.resample import round_up
    except ImportError:  # a checkout from before the rounding
        round_up = None
    batches = iter(loader)
    next(batches)  # start-up
    for _ in range(args.batches):
        time.sleep(args.step_ms / 1000)
        w, c = time.perf_counter(), time.thread_time()
        next(batches)
        walls.append(1000 * (time.perf_counter() - w))
        cpus.append(1000 * (time.thread_time() - c))
        windows = loader.prefetcher.last.windows.numpy()
        area = float((windows[:, 2] * windows[:, 3]).sum())
        padded_one.append(len(windows) * windows[:, 2].max() * windows[:, 3].max() / area)
        groups = chunks(windows, 1 << 28)
        padded_grouped.append(sum(len(g) * windows[g, 2].max() * windows[g, 3].max() for g in groups) / area)
        if round_up is not None:  # as gathered: each group's rows and columns padded to a multiple of 32
            padded_rounded.append(sum(len(g) * round_up(windows[g, 2].max()) * round_up(windows[g, 3].max())
                                      for g in groups) / area)
    loader.close()
    result = {
        "fastdata": os.path.dirname(fastdata.__file__), "latency_ms": args.latency_ms, "step_ms": args.step_ms,
        "batch": args.batch, "batches": args.batches,
        "next_wall_ms_median": round(statistics.median(walls), 2), "next_cpu_ms_median": round(statistics.median(cpus), 2),
        "padded_over_used_one_group": round(float(np.mean(padded_one)), 3),
        "padded_over_used_grouped": round(float(np.mean(padded_grouped)), 3),
        "padded_over_used_as_gathered": round(float(np.mean(padded_rounded)), 3) if padded_rounded else None,
        "groups_per_batch": len(groups), "python": platform.python_version(), "torch": torch.__version__,
    }
    print_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
