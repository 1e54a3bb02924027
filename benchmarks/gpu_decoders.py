"""The GPU JPEG decoders alone, one batch call after another (no loader, no
resample): what each backend and setting gives on this GPU, and which
photos each one returns None for.

    python benchmarks/gpu_decoders.py PHOTO_FOLDER [--batch 256] [--calls 6] [--json OUT.json]

Variants: torchvision's batched ``decode_jpeg(device="cuda")`` (whole
images), and fastdata's ``NvImageCodecDecoder`` with 1, 2 and 4 threads,
whole images and ROI (the windows a RandomResizedCrop-like draw reads),
from pinned and pageable bytes. Each variant: one call to warm up, then
``--calls`` timed calls, the device synchronised before and after each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch


def _photos(folder: Path, batch: int) -> tuple[list[str], list[bytes]]:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    if not files:
        sys.exit(f"gpu_decoders: no JPEGs under {folder}")
    picked = [files[i % len(files)] for i in range(batch)]
    return [p.name for p in picked], [p.read_bytes() for p in picked]


def _windows(data: list[bytes], seed: int = 0) -> list[tuple[int, int, int, int]]:
    """RandomResizedCrop-like boxes (scale 0.08-1, ratio 3/4-4/3), as the windows the resample reads."""
    from fastdata.decode import read_info
    from fastdata.gpu.resample import window

    rng = np.random.default_rng(seed)
    sizes = np.array([(read_info(d).height, read_info(d).width) for d in data], dtype=np.int64)
    n = len(data)
    area = rng.uniform(0.08, 1.0, n) * sizes[:, 0] * sizes[:, 1]
    ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3), n))
    w = np.minimum(np.sqrt(area * ratio), sizes[:, 1])
    h = np.minimum(np.sqrt(area / ratio), sizes[:, 0])
    boxes = np.stack([rng.uniform(0, 1, n) * (sizes[:, 0] - h), rng.uniform(0, 1, n) * (sizes[:, 1] - w), h, w], 1)
    return [tuple(int(v) for v in row) for row in window(boxes, sizes, (224, 224))]


def _time(call, calls: int) -> tuple[float, list]:
    out = call()  # warm-up (decoders made, pre-allocated)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        out = call()
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_decoders: no CUDA device: nothing to time")
        return 0
    names, data = _photos(args.folder, args.batch)
    device = torch.device("cuda", torch.cuda.current_device())
    pageable = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    flat = torch.cat(pageable).pin_memory()
    pinned = list(flat.tensor_split(np.cumsum([len(d) for d in data])[:-1].tolist()))
    regions = _windows(data)
    rows: list[dict] = []

    def add(name: str, call) -> None:
        try:
            seconds, out = _time(call, args.calls)
        except Exception as exc:  # noqa: BLE001 - a variant that fails is a row that says so
            rows.append({"variant": name, "error": f"{type(exc).__name__}: {exc}"})
            print(f"{name:<44} failed: {type(exc).__name__}: {exc}", flush=True)
            return
        missing = sorted({names[i] for i, im in enumerate(out) if im is None})
        rows.append({"variant": name, "ms_per_call": round(1000 * seconds, 2),
                     "img_per_s": round(args.batch / seconds, 1), "none": missing})
        print(f"{name:<44} {1000 * seconds:8.2f} ms {args.batch / seconds:10.1f} img/s"
              + (f"  None: {missing}" if missing else ""), flush=True)

    try:
        from torchvision.io import ImageReadMode, decode_jpeg

        add("torchvision whole pinned", lambda: decode_jpeg(pinned, mode=ImageReadMode.RGB, device=device))
        add("torchvision whole pageable", lambda: decode_jpeg(pageable, mode=ImageReadMode.RGB, device=device))
    except ImportError as exc:
        rows.append({"variant": "torchvision", "error": str(exc)})
    try:
        from fastdata.gpu import NvImageCodecDecoder

        for threads in (1, 2, 4):
            whole = NvImageCodecDecoder(threads=threads, roi=False, batch_hint=args.batch)
            add(f"nvimgcodec whole threads={threads} pinned", lambda d=whole: d.decode(pinned, device))
            roi = NvImageCodecDecoder(threads=threads, roi=True, batch_hint=args.batch)
            add(f"nvimgcodec roi threads={threads} pinned", lambda d=roi: d.decode(pinned, device, regions=regions))
            whole.close(), roi.close()
        two = NvImageCodecDecoder(threads=2, roi=True, batch_hint=args.batch)
        add("nvimgcodec roi threads=2 pageable", lambda: two.decode(pageable, device, regions=regions))
        cuda = NvImageCodecDecoder(threads=2, roi=True, hw_load=0.0, batch_hint=args.batch)
        add("nvimgcodec roi threads=2 hw_load=0 (CUDA)", lambda: cuda.decode(pinned, device, regions=regions))
        two.close(), cuda.close()
    except Exception as exc:  # noqa: BLE001 - nvImageCodec missing or failing: said, not fatal
        rows.append({"variant": "nvimgcodec", "error": f"{type(exc).__name__}: {exc}"})
        print(f"nvimgcodec: {type(exc).__name__}: {exc}")
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "batch": args.batch,
                                         "calls": args.calls, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
