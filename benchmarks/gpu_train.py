"""Training throughput of ResNet-50 (bf16, channels_last) fed by each loader,
as img/s and % of the same model on synthetic data; or, with --decode-only,
the loaders alone (decode + RandomResizedCrop + flip + normalise).

Feeds: synthetic (one batch already on the GPU), torchvision (ImageFolder +
DataLoader, when torchvision is installed), fastdata-cpu (decode in worker
threads), fastdata-cuda (workers read bytes, the GPU decodes: threads and
processes), dali (DALI's GPU pipeline over RecordIO shards, when DALI is
installed). Prints a table and writes JSON (machine and versions included).

Without CUDA it runs a tiny model for a few steps on the CPU (decode="cuda"
then takes its CPU fallback) and exits 0, so CI keeps the script alive.

    python benchmarks/gpu_train.py [PHOTOS] [--batch 256] [--steps 40] [--workers 4] [--json OUT.json]
    python benchmarks/gpu_train.py --decode-only ...
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import torch
from torch.utils.data import Subset

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.environ.get("FASTDATA_PHOTOS", os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera"))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FEEDS = ("synthetic", "torchvision", "fastdata-cpu", "fastdata-cuda-threads", "fastdata-cuda-processes", "dali")


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=os.path.join(PHOTOS, "train"), help="an ImageFolder tree")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=40, help="timed steps per feed")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--workers", type=int, default=4, help="CPU workers (threads or processes) per loader")
    ap.add_argument("--feeds", default=",".join(FEEDS), help=f"comma-separated subset of {','.join(FEEDS)}")
    ap.add_argument("--model", choices=("resnet50", "tiny"), default="resnet50")
    ap.add_argument("--decode-only", action="store_true", help="time the loaders alone, no model")
    ap.add_argument("--json", help="write the results here")
    return ap.parse_args(argv)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "torch": torch.__version__, "platform": platform.platform()}
    for name in ("torchvision", "nvidia.dali", "nvidia.nvimgcodec", "fastdata"):
        try:
            out[name] = getattr(__import__(name, fromlist=["_"]), "__version__", "?")
        except ImportError:
            pass
    out["cpus"] = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name()
    return out


def model_and_step(name: str, device: torch.device, classes: int):
    if name == "resnet50":
        from torchvision.models import resnet50

        model = resnet50(num_classes=classes)
    else:
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                    torch.nn.Flatten(), torch.nn.Linear(8, classes))
    model = model.to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def dataset(root: str, transform, samples: int):
    from fastdata.datasets import ImageFolder

    folder = ImageFolder(root, transform=transform)
    repeat = max(1, math.ceil(samples / len(folder)))
    return Subset(folder, list(range(len(folder))) * repeat)


def endless(loader):
    while True:
        yield from loader


def feed(name: str, args: argparse.Namespace, device: torch.device, samples: int):
    """An endless iterator of (images, targets) on ``device``, or a reason it cannot run."""
    from fastdata import Prefetch, Workers, make_loader, transforms

    prefetch = Prefetch(device=device, mean=MEAN, std=STD, dtype=torch.bfloat16, memory_format=torch.channels_last)
    train = transforms.Compose([transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()])
    if name == "synthetic":
        x = torch.randn(args.batch, 3, args.size, args.size, device=device).to(torch.bfloat16, memory_format=torch.channels_last)
        return itertools.repeat((x, torch.randint(0, 2, (args.batch,), device=device)))
    if name == "fastdata-cpu":
        return endless(make_loader(dataset(args.photos, train, samples), args.batch, workers=Workers(args.workers, kind="threads"),
                                   prefetch=prefetch))
    if name.startswith("fastdata-cuda"):
        kind = name.rsplit("-", 1)[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the CPU fallback's notice, when there is no GPU
            return endless(make_loader(dataset(args.photos, train, samples), args.batch, decode="cuda", prefetch=prefetch,
                                       workers=Workers(args.workers, kind=kind)))
    if name == "torchvision":
        try:
            import torchvision
            from torchvision import transforms as T
        except ImportError:
            return "torchvision is not installed"
        tf = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
        folder = torchvision.datasets.ImageFolder(args.photos, transform=tf)
        data = Subset(folder, list(range(len(folder))) * max(1, math.ceil(samples / len(folder))))
        loader = torch.utils.data.DataLoader(data, args.batch, shuffle=True, num_workers=args.workers, drop_last=True,
                                             pin_memory=device.type == "cuda", persistent_workers=args.workers > 0)
        return ((x.to(device, non_blocking=True).to(torch.bfloat16, memory_format=torch.channels_last),
                 y.to(device, non_blocking=True)) for x, y in endless(loader))
    if name == "dali":
        return dali_feed(args, device, samples)
    return f"unknown feed {name!r}"


def dali_feed(args: argparse.Namespace, device: torch.device, samples: int):
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return "DALI is not installed"
    if device.type != "cuda":
        return "DALI's GPU pipeline needs CUDA"
    from fastdata.dali import Crop, DALILoader

    out = tempfile.mkdtemp(prefix="gpu_train_dali_")
    # cwd: not the checkout, whose source tree would shadow the installed fastdata.converters
    subprocess.run([sys.executable, "-m", "fastdata.converters.cli", "convert", os.path.abspath(args.photos), "rec",
                    "--format", "recordio"], check=True, stdout=subprocess.DEVNULL, cwd=out)
    loader = DALILoader(os.path.join(out, "rec"), args.batch, device="mixed", num_threads=args.workers,
                        crop=Crop(size=args.size))  # nvJPEG decode, augmentation on the GPU
    return ((x.to(memory_format=torch.channels_last).to(torch.bfloat16), y) for x, y in endless(loader))


def timed(batches, step, warmup: int, steps: int, batch: int, device: torch.device) -> float:
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        step(*next(batches))
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step(*next(batches))
    sync()
    return steps * batch / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:  # keep CI's run short: a tiny model, small batches, a few steps
        print("gpu_train: no CUDA device; a tiny model for a few steps on the CPU (no GPU figures)")
        args.model, args.batch, args.size = "tiny", min(args.batch, 8), min(args.size, 64)
        args.steps, args.warmup, args.workers = min(args.steps, 3), min(args.warmup, 1), min(args.workers, 2)
    if args.model == "resnet50":
        try:
            import torchvision  # noqa: F401
        except ImportError:
            print("gpu_train: torchvision is not installed, so a tiny model stands in for ResNet-50")
            args.model = "tiny"
    names = [n for n in args.feeds.split(",") if n and not (args.decode_only and n == "synthetic")]
    samples = (args.warmup + args.steps + 2) * args.batch
    step = (lambda x, y: None) if args.decode_only else model_and_step(args.model, device, 2)
    rows = []
    for name in names:
        batches = feed(name, args, device, samples)
        if isinstance(batches, str):
            rows.append({"feed": name, "skipped": batches})
            continue
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        rate = timed(batches, step, args.warmup, args.steps, args.batch, device)
        workers = 0 if name == "synthetic" else args.workers
        row = {"feed": name, "img_s": round(rate, 1), "cpu_workers": workers}
        if device.type == "cuda":
            row["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
        rows.append(row)
        del batches
    base = next((r["img_s"] for r in rows if r["feed"] == "synthetic" and "img_s" in r), None)
    for r in rows:
        if base and "img_s" in r:
            r["pct_synthetic"] = round(100 * r["img_s"] / base, 1)
    mode = "decode-only" if args.decode_only else f"train {args.model} bf16 channels_last"
    print(f"\n{mode}, batch {args.batch}, {args.size}px, {args.steps} timed steps, {device}")
    print(f"{'feed':<26}{'img/s':>10}{'% synth':>9}{'workers':>9}{'peak MB':>9}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['feed']:<26}  skipped: {r['skipped']}")
        else:
            print(f"{r['feed']:<26}{r['img_s']:>10,.1f}{r.get('pct_synthetic', float('nan')):>9.1f}{r['cpu_workers']:>9}"
                  f"{r.get('gpu_peak_mb', 0):>9}")
    result = {"mode": mode, "device": str(device), "args": vars(args), "versions": versions(), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
