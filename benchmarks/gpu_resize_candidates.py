"""Batched crop + resize + flip candidates for decode="cuda", timed and
compared with the CPU transforms path on the same boxes (runs on the CPU;
on a GPU machine add --device cuda).

* matrices: fastdata.gpu.resample (separable Pillow BILINEAR weights, antialiased), what decode="cuda" uses;
* grid_sample: affine_grid + grid_sample (bilinear, no antialiasing) over the same gathered windows;
* roi_align: torchvision.ops.roi_align (sampling_ratio=-1) when torchvision is installed.

Pixels: mean and max |diff| in grey levels from decode="cpu" (the DCT-scaled
compiled crop decoder), over every photo of the folder, RandomResizedCrop +
flip and Resize + CenterCrop. Time: ms per batch of the resampling step alone
(decoded images already packed), interleaved rounds, median.

    python benchmarks/gpu_resize_candidates.py [PHOTOS/train] [--size 224] [--batch 32] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F

from fastdata import make_loader, transforms
from fastdata.datasets import ImageFolder
from fastdata.gpu import CPUDecoder
from fastdata.gpu.resample import crop_resize, gather_rows, pack

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera", "train")


def grid_sample(flat, offsets, sizes, boxes, windows, flips, out, rows, cols, layout):
    src = gather_rows(flat, offsets, sizes, windows, rows, cols, layout).to(torch.float32)
    t, l, h, w = boxes.T.to(torch.float32)
    y0, x0 = windows[:, 0].to(torch.float32), windows[:, 1].to(torch.float32)
    sign = 1.0 - 2.0 * flips.to(torch.float32)
    theta = torch.zeros(len(boxes), 2, 3, device=flat.device)
    theta[:, 0, 0], theta[:, 0, 2] = sign * w / cols, 2 * (l - x0 + w / 2) / cols - 1
    theta[:, 1, 1], theta[:, 1, 2] = h / rows, 2 * (t - y0 + h / 2) / rows - 1
    grid = F.affine_grid(theta, (len(boxes), 3, *out), align_corners=False)
    return F.grid_sample(src, grid, mode="bilinear", align_corners=False).round_().clamp_(0, 255)


def roi_align(flat, offsets, sizes, boxes, windows, flips, out, rows, cols, layout):
    from torchvision.ops import roi_align as tv_roi_align

    src = gather_rows(flat, offsets, sizes, windows, rows, cols, layout).to(torch.float32)
    t, l, h, w = boxes.T.to(torch.float32)
    y0, x0 = windows[:, 0].to(torch.float32), windows[:, 1].to(torch.float32)
    rois = torch.stack([torch.arange(len(boxes), dtype=torch.float32, device=flat.device), l - x0, t - y0,
                        l - x0 + w, t - y0 + h], 1)
    res = tv_roi_align(src, rois, out, spatial_scale=1.0, sampling_ratio=-1, aligned=True)
    return torch.where(flips.view(-1, 1, 1, 1), res.flip(3), res).round_().clamp_(0, 255)


def candidates() -> dict:
    out = {"matrices": crop_resize, "grid_sample": grid_sample}
    try:
        import torchvision.ops  # noqa: F401

        out["roi_align"] = roi_align
    except ImportError:
        pass
    return out


def batches(root: str, transform, batch: int, train: bool, device: torch.device):
    """(inputs for a candidate, the CPU path's uint8 batch) per batch, same seed."""
    folder = ImageFolder(root, transform=transform)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gpu = make_loader(folder, batch, seed=0, workers=0, train=train, decode="cuda")
    cpu = make_loader(folder, batch, seed=0, workers=0, train=train)
    decoder = CPUDecoder()
    for encoded, (reference, _) in zip(gpu.dataloader, cpu, strict=True):
        keep = torch.ones(len(encoded), dtype=torch.bool)
        keep[encoded.ready_at] = False  # finished by the CPU path in the worker: not a candidate's work
        images = decoder.decode(list(encoded.data.tensor_split(encoded.offsets[1:-1])), device)
        cols = int(encoded.windows[:, 3].max())
        sizes = encoded.sizes
        starts = torch.zeros(len(sizes), dtype=torch.int64)
        torch.cumsum(3 * sizes[:-1, 0] * sizes[:-1, 1], 0, out=starts[1:])
        args = (pack(images, 3 * cols), starts.to(device), sizes.to(device), encoded.boxes.to(device),
                encoded.windows.to(device), encoded.flips[encoded.gpu].to(device), encoded.out_size,
                int(encoded.windows[:, 2].max()), cols, decoder.layout)
        yield args, reference[keep]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=PHOTOS)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    pipelines = {
        "train": (transforms.Compose([transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()]), True),
        "eval": (transforms.Compose([transforms.Resize(args.size * 8 // 7), transforms.CenterCrop(args.size)]), False),
    }
    rows = []
    for pipeline, (transform, train) in pipelines.items():
        work = list(batches(args.photos, transform, args.batch, train, device))
        for name, fn in candidates().items():
            diffs = torch.cat([(fn(*a).cpu() - ref.float()).abs().flatten() for a, ref in work])
            rows.append({"pipeline": pipeline, "candidate": name, "mean_abs_diff": round(diffs.mean().item(), 3),
                         "max_abs_diff": int(diffs.max()), "within_4": round((diffs <= 4).float().mean().item(), 4),
                         "ms": []})
        for _ in range(args.rounds):  # interleaved: each round times every candidate once
            for row, fn in zip(rows[-len(candidates()):], candidates().values()):
                sync()
                start = time.perf_counter()
                for a, _ in work:
                    fn(*a)
                sync()
                row["ms"].append(1000 * (time.perf_counter() - start) / len(work))
    print(f"{'pipeline':<8}{'candidate':<13}{'mean|d|':>9}{'max|d|':>8}{'<=4':>8}{'ms/batch':>10}")
    for r in rows:
        r["ms_median"] = round(statistics.median(r.pop("ms")), 2)
        print(f"{r['pipeline']:<8}{r['candidate']:<13}{r['mean_abs_diff']:>9.3f}{r['max_abs_diff']:>8}"
              f"{r['within_4']:>8.4f}{r['ms_median']:>10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
