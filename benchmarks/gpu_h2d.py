"""GPU only: host-to-device throughput of uint8 batches (pinned vs pageable), copy/compute overlap
through CUDAPrefetcher, and torchvision's batched nvJPEG decode rate. Exits 0 with a message on a
machine without CUDA.

    python benchmarks/gpu_h2d.py [--batch 256] [--out DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera", "train")


def timed(fn, n=20):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_h2d: no CUDA device here; nothing measured")
        return 0
    shape = (args.batch, 3, 224, 224)
    pageable = torch.randint(0, 255, shape, dtype=torch.uint8)
    pinned = pageable.pin_memory()
    gb = pageable.numel() / 1e9
    t_page = timed(lambda: pageable.to("cuda", non_blocking=False))
    t_pin = timed(lambda: pinned.to("cuda", non_blocking=True))
    print(f"H2D uint8 batch {shape}: pageable {gb / t_page:.1f} GB/s, pinned {gb / t_pin:.1f} GB/s ({t_page / t_pin:.2f}x)")

    from fastdata import CUDAPrefetcher

    batches = [(pinned, torch.zeros(args.batch, dtype=torch.int64))] * 20
    w = torch.randn(4096, 4096, device="cuda")

    def compute():
        for _ in range(4):
            w @ w

    t_compute = timed(compute, 5)
    pre = CUDAPrefetcher(batches, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _x, _y in pre:
        compute()
    torch.cuda.synchronize()
    per = (time.perf_counter() - t0) / len(batches)
    print(f"prefetcher + compute: {per * 1e3:.2f} ms/batch vs compute alone {t_compute * 1e3:.2f} ms and copy alone "
          f"{t_pin * 1e3:.2f} ms: overlap hides {max(0.0, (t_compute + t_pin - per) / t_pin) * 100:.0f}% of the copy")
    try:
        from torchvision.io import decode_jpeg
    except ImportError:
        print("torchvision not installed: nvJPEG decode rate not measured")
        return 0
    files = sorted(glob.glob(os.path.join(PHOTOS, "*", "*.jp*g")))
    datas = [torch.frombuffer(bytearray(open(f, "rb").read()), dtype=torch.uint8) for f in files]
    t = timed(lambda: decode_jpeg(datas, device="cuda"), 5)
    print(f"torchvision decode_jpeg(device='cuda') batched: {len(datas) / t:.0f} img/s on {len(datas)} photos")
    return 0


if __name__ == "__main__":
    sys.exit(main())
