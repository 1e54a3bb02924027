"""Training throughput of ResNet-50 (bf16, channels_last) fed by each loader,
as img/s and % of the same model on synthetic data; or, with --decode-only,
the loaders alone (decode + RandomResizedCrop + flip + normalise); or, with
--memory-epochs N, the GPU memory after each of N epochs of one loader.

A feed is ``name[:workers[:backend]]`` (workers default to --workers):

  synthetic                        one batch already on the GPU (no workers)
  torchvision[:N]                  ImageFolder + DataLoader, N worker processes
  fastdata-cpu[:N]                 decode="cpu"; Workers(N), kind "auto" (threads
                                   with the compiled crop decoder, else processes)
  fastdata-cpu-threads[:N]         ... kind="threads"; -processes: kind="processes"
  fastdata-cuda[:N[:BACKEND]]      decode="cuda" (workers read bytes, the GPU
                                   decodes), kind "auto" (processes);
                                   BACKEND: auto, torchvision, nvimgcodec or cpu
                                   (decode=GPUDecode(backend=BACKEND))
  fastdata-cuda-threads / fastdata-cuda-processes[:N[:BACKEND]]   explicit kind
  fastdata-hybrid[-threads|-processes][:N[:BACKEND]]
                                   the hybrid: decode=GPUDecode(cpu_share="auto",
                                   backend=BACKEND): the workers crop a share of each
                                   batch on the CPU, the GPU decodes the rest, and a
                                   controller settles the share (the row's cpu_share)
  dali[:N]                         DALI's GPU pipeline over RecordIO shards, N threads

e.g. --feeds synthetic,torchvision:15,fastdata-cpu:8,fastdata-cuda-processes:2:nvimgcodec,fastdata-hybrid-processes:4

--cores N pins the whole process, and so every worker it starts, to N of its
cores (os.sched_setaffinity, before CUDA or any worker starts; torch's own
threads to N): what one GPU of an 8-GPU node gets. Every row records
core_budget (N, or null unpinned) and cpu_share (the share of the GPU
decode's samples cropped on the CPU at the end of the timed steps: 0 for
fastdata-cuda, the settled share for fastdata-hybrid, 1 for fastdata-cpu,
null for the others).

On CUDA a feed's untimed warm-up is at least 2 x its workers + 2 steps: the
workers' first batches all land at once, and timing them would flatter a
feed with many workers. A feed that raises is recorded as {"feed": ..., "error": "Type: message"} and
the others still run (the exit status is then 1); each loader is closed
before the next starts. The JSON is rewritten after every feed, so a run cut
short still leaves the feeds done so far. Prints a table.

Without CUDA it runs a tiny model for a few steps on the CPU (decode="cuda"
then takes its CPU fallback, and so does backend="nvimgcodec") and exits 0,
so CI keeps the script alive.

    python benchmarks/gpu_train.py [PHOTOS] [--batch 256] [--steps 40] [--workers 4] [--feeds ...] [--json OUT.json]
    python benchmarks/gpu_train.py --decode-only ...
    python benchmarks/gpu_train.py --memory-epochs 5 --feeds fastdata-cuda-processes:4 --epoch-batches 16 ...
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch.utils.data import Subset

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.environ.get("FASTDATA_PHOTOS", os.path.join(HERE, "..", "..", "shared", "data", "photos", "hymenoptera"))
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
FEEDS = ("synthetic", "torchvision", "fastdata-cpu", "fastdata-cuda-threads", "fastdata-cuda-processes", "dali")
FAMILIES = ("synthetic", "torchvision", "fastdata-cpu", "fastdata-cuda", "fastdata-hybrid", "dali")
GPU_FAMILIES = ("fastdata-cuda", "fastdata-hybrid")  # decode on the GPU: they take a backend
HYBRID_SETTLE = 16  # untimed steps before a hybrid feed is timed: its share settles within 12 batches
KINDS = ("auto", "threads", "processes")
BACKEND_NAMES = ("auto", "torchvision", "nvimgcodec", "cpu")


@dataclass(frozen=True)
class FeedSpec:
    """One ``name[:workers[:backend]]`` feed."""

    spec: str  # as given
    family: str  # one of FAMILIES
    kind: str | None  # the fastdata Workers kind; None for the others
    workers: int  # CPU workers (processes or threads); 0 for synthetic
    backend: str | None  # fastdata-cuda/-hybrid's decoder ("auto": the first that proves itself); "cpu" for fastdata-cpu


def parse_feed(text: str, default_workers: int) -> FeedSpec:
    """``name[:workers[:backend]]`` as a :class:`FeedSpec`.

    Raises:
        ValueError: an unknown name, kind or backend, a bad worker count, or
            a backend or worker count the feed does not take.
    """
    spec = text.strip()
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"feed {spec!r}: expected name[:workers[:backend]]")
    name, count, backend = parts[0], parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else ""
    family, kind = name, None
    for base in ("fastdata-cpu", "fastdata-cuda", "fastdata-hybrid"):
        if name == base or name.startswith(base + "-"):
            family, kind = base, name[len(base) + 1:] or "auto"
            if kind not in KINDS:
                raise ValueError(f"feed {spec!r}: worker kind must be one of {KINDS}, got {kind!r}")
    if family not in FAMILIES:
        raise ValueError(f"feed {spec!r}: unknown name {name!r} (one of {', '.join(FAMILIES)}, fastdata-*-threads/-processes)")
    if count:
        if family == "synthetic":
            raise ValueError(f"feed {spec!r}: synthetic takes no workers")
        try:
            workers = int(count)
        except ValueError:
            raise ValueError(f"feed {spec!r}: workers must be an integer, got {count!r}") from None
        if workers < 0:
            raise ValueError(f"feed {spec!r}: workers must be >= 0, got {workers}")
    else:
        workers = 0 if family == "synthetic" else int(default_workers)
    if backend and family not in GPU_FAMILIES:
        raise ValueError(f"feed {spec!r}: only fastdata-cuda and fastdata-hybrid take a backend")
    if family in GPU_FAMILIES:
        backend = backend or "auto"
        if backend not in BACKEND_NAMES:
            raise ValueError(f"feed {spec!r}: backend must be one of {BACKEND_NAMES}, got {backend!r}")
    return FeedSpec(spec, family, kind, workers, backend or ("cpu" if family == "fastdata-cpu" else None))


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=os.path.join(PHOTOS, "train"), help="an ImageFolder tree")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=40, help="timed steps per feed")
    ap.add_argument("--warmup", type=int, default=8,
                    help="untimed steps first; on CUDA at least 2 x workers + 2 per feed (past the workers' first round)")
    ap.add_argument("--workers", type=int, default=4, help="CPU workers per loader where a feed names none")
    ap.add_argument("--feeds", default=None,
                    help=f"comma-separated name[:workers[:backend]] (default {','.join(FEEDS)}; "
                         "with --memory-epochs fastdata-cuda-processes)")
    ap.add_argument("--model", choices=("resnet50", "tiny"), default="resnet50")
    ap.add_argument("--decode-only", action="store_true", help="time the loaders alone, no model")
    ap.add_argument("--memory-epochs", type=int, default=0, metavar="N",
                    help="instead: N epochs of the (one) feed, GPU memory after each")
    ap.add_argument("--epoch-batches", type=int, default=16, help="batches per epoch with --memory-epochs")
    ap.add_argument("--cores", type=int, default=0, metavar="N",
                    help="pin the whole process and its workers to N of its cores (0: unpinned)")
    ap.add_argument("--feed-timeout", type=float, default=0,
                    help="seconds one feed may take before it is recorded as an error and the next starts (0: none)")
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
        out["cuda"] = str(torch.version.cuda)
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
    return Subset(folder, repeated(len(folder), samples))


def repeated(length: int, samples: int) -> list[int]:
    """``samples`` indices of ``length`` items, the whole list over and over (an epoch of ``samples``)."""
    return (list(range(length)) * max(1, math.ceil(samples / length)))[:samples]


def endless(loader):
    while True:
        yield from loader


class Feed:
    """An endless iterator of (images, targets) on the device, and what to close after it."""

    def __init__(self, batches, loader: Any = None, **info: Any) -> None:
        self.batches, self.loader, self.info = batches, loader, info

    def __next__(self):
        return next(self.batches)

    def __iter__(self):
        return self

    def close(self) -> None:
        """Stop the generator, the loader and its workers (fastdata's close();
        a torch DataLoader's persistent workers by hand)."""
        close = getattr(self.batches, "close", None)
        if close is not None:
            close()
        loader, self.batches, self.loader = self.loader, None, None
        if loader is None:
            return
        if hasattr(loader, "close"):
            loader.close()
        else:
            workers = getattr(loader, "_iterator", None)
            if workers is not None and hasattr(workers, "_shutdown_workers"):
                workers._shutdown_workers()
                loader._iterator = None


def fastdata_loader(spec: FeedSpec, args: argparse.Namespace, device: torch.device, samples: int):
    from fastdata import Prefetch, Workers, make_loader, transforms

    prefetch = Prefetch(device=device, mean=MEAN, std=STD, dtype=torch.bfloat16, memory_format=torch.channels_last)
    train = transforms.Compose([transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()])
    workers = Workers(spec.workers) if spec.kind in (None, "auto") else Workers(spec.workers, kind=spec.kind)
    data = dataset(args.photos, train, samples)
    if spec.family == "fastdata-cpu":
        return make_loader(data, args.batch, workers=workers, prefetch=prefetch)
    from fastdata.gpu import GPUDecode

    if spec.family == "fastdata-hybrid":
        decode: Any = GPUDecode(backend=spec.backend or "auto", cpu_share="auto")
    elif spec.backend in (None, "auto"):
        decode = "cuda"
    else:
        decode = GPUDecode(backend=spec.backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the CPU fallback's notice, when there is no GPU
        return make_loader(data, args.batch, decode=decode, prefetch=prefetch, workers=workers)


def loader_info(loader: Any) -> dict[str, Any]:
    """What a fastdata loader chose: its workers (kind and why) and its GPU decoder."""
    info: dict[str, Any] = {}
    if getattr(loader, "workers", None):
        info["workers_chosen"] = str(loader.workers)
    decoder = getattr(getattr(loader, "prefetcher", None), "decoder", None)
    if decoder is not None:
        info["decoder"] = getattr(decoder, "name", type(decoder).__name__)
    return info


def feed(spec: FeedSpec, args: argparse.Namespace, device: torch.device, samples: int) -> Feed | str:
    """The feed ``spec`` names, or a reason it cannot run here."""
    if spec.family == "synthetic":
        x = torch.randn(args.batch, 3, args.size, args.size, device=device).to(torch.bfloat16, memory_format=torch.channels_last)
        return Feed(itertools.repeat((x, torch.randint(0, 2, (args.batch,), device=device))))
    if spec.family in ("fastdata-cpu", *GPU_FAMILIES):
        loader = fastdata_loader(spec, args, device, samples)
        return Feed(endless(loader), loader, **loader_info(loader))
    if spec.family == "torchvision":
        try:
            import torchvision
            from torchvision import transforms as T
        except ImportError:
            return "torchvision is not installed"
        tf = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
        folder = torchvision.datasets.ImageFolder(args.photos, transform=tf)
        data = Subset(folder, repeated(len(folder), samples))
        loader = torch.utils.data.DataLoader(data, args.batch, shuffle=True, num_workers=spec.workers, drop_last=True,
                                             pin_memory=device.type == "cuda", persistent_workers=spec.workers > 0)
        return Feed(((x.to(device, non_blocking=True).to(torch.bfloat16, memory_format=torch.channels_last),
                      y.to(device, non_blocking=True)) for x, y in endless(loader)), loader)
    if spec.family == "dali":
        return dali_feed(spec, args, device)
    return f"unknown feed {spec.spec!r}"


def dali_feed(spec: FeedSpec, args: argparse.Namespace, device: torch.device) -> Feed | str:
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
    loader = DALILoader(os.path.join(out, "rec"), args.batch, device="mixed", num_threads=max(1, spec.workers),
                        crop=Crop(size=args.size))  # nvJPEG decode, augmentation on the GPU
    return Feed(((x.to(memory_format=torch.channels_last).to(torch.bfloat16), y) for x, y in endless(loader)), loader)


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


class FeedTimeout(Exception):
    """A feed ran past --feed-timeout."""


class time_limit:
    """Raise :class:`FeedTimeout` in the main thread after ``seconds`` (0: never)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def _fire(self, *_: Any) -> None:
        raise FeedTimeout(f"the feed ran past --feed-timeout {self.seconds:g} s")

    def __enter__(self) -> time_limit:
        if self.seconds > 0:
            self._old = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def release(device: torch.device) -> None:
    """Between feeds: collect what the last one left and give back cached GPU memory."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def write_json(path: str | None, result: dict[str, Any]) -> None:
    if not path:
        return
    tmp = f"{path}.partial"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def process_gpu_mib() -> tuple[float | None, str | None, str]:
    """This process's GPU memory in MiB as the driver sees it, where it came
    from ("nvidia-smi" or "pynvml"), and a note when it was not found."""
    pid, notes = os.getpid(), []
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
        seen = []
        for line in done.stdout.splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) >= 2 and fields[0].isdigit():
                seen.append(int(fields[0]))
                if int(fields[0]) == pid:
                    try:
                        return float(fields[1]), "nvidia-smi", ""
                    except ValueError:
                        notes.append(f"nvidia-smi: used_memory {fields[1]!r}")
        notes.append(f"nvidia-smi lists pids {seen}, not {pid}" if seen
                     else f"nvidia-smi lists no process (rc {done.returncode})")
    except (OSError, subprocess.SubprocessError) as exc:
        notes.append(f"nvidia-smi: {error_text(exc)}")
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            for i in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.pid == pid and proc.usedGpuMemory is not None:
                        return proc.usedGpuMemory / 2**20, "pynvml", ""
            notes.append("pynvml: this pid not listed")
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - not installed, no driver...
        notes.append(f"pynvml: {error_text(exc)}")
    return None, None, "; ".join(notes)


def memory_run(args: argparse.Namespace, spec: FeedSpec, device: torch.device) -> tuple[dict[str, Any], bool]:
    """``args.memory_epochs`` epochs of ``spec`` (a fastdata feed), each
    ``args.epoch_batches`` batches; after each, the GPU memory. Returns the
    result and whether it failed."""
    cuda = device.type == "cuda"
    result: dict[str, Any] = {
        "mode": "memory", "feed": spec.spec, "spec": asdict(spec), "device": str(device), "args": vars(args),
        "versions": versions(), "epochs": [], "epochs_reserved_mib": [], "epochs_process_mib": [],
        "epochs_device_used_mib": [], "process_mib_source": None,
    }
    if spec.family not in ("fastdata-cpu", *GPU_FAMILIES):
        result["error"] = f"ValueError: --memory-epochs measures a fastdata feed, not {spec.spec!r}"
        return result, True
    loader = None
    try:
        loader = fastdata_loader(spec, args, device, args.epoch_batches * args.batch)
        result.update(loader_info(loader))
        print(f"\nmemory: {spec.spec}, {len(loader)} batches of {args.batch} per epoch, {device}")
        print(f"{'epoch':>5}{'batches':>9}{'img/s':>10}{'reserved MiB':>14}{'process MiB':>13}{'device MiB':>12}")
        for epoch in range(args.memory_epochs):
            start, count = time.perf_counter(), 0
            with time_limit(args.feed_timeout):
                for _x, _y in loader:
                    count += 1
            if cuda:
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            reserved = torch.cuda.memory_reserved() / 2**20 if cuda else None
            allocated = torch.cuda.memory_allocated() / 2**20 if cuda else None
            used = None
            if cuda:
                free, total = torch.cuda.mem_get_info()
                used = (total - free) / 2**20
            process, source, note = process_gpu_mib()
            row = {"epoch": epoch + 1, "batches": count, "seconds": round(seconds, 3),
                   "img_s": round(count * args.batch / seconds, 1) if seconds > 0 else None,
                   "reserved_mib": reserved, "allocated_mib": allocated, "process_mib": process,
                   "device_used_mib": used}
            if note:
                row["process_note"] = note
            result["epochs"].append(row)
            result["epochs_reserved_mib"].append(reserved)
            result["epochs_process_mib"].append(process)
            result["epochs_device_used_mib"].append(used)
            result["process_mib_source"] = result["process_mib_source"] or source
            write_json(args.json, result)
            fmt = lambda v: "-" if v is None else f"{v:,.1f}"  # noqa: E731
            print(f"{epoch + 1:>5}{count:>9}{fmt(row['img_s']):>10}{fmt(reserved):>14}{fmt(process):>13}{fmt(used):>12}"
                  + (f"  ({note})" if note else ""))
        return result, False
    except Exception as exc:  # noqa: BLE001 - recorded, the JSON still written
        traceback.print_exc()
        result["error"] = error_text(exc)
        return result, True
    finally:
        if loader is not None:
            try:
                loader.close()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
        del loader
        release(device)


def pin_cores(count: int) -> list[int] | None:
    """Pin this process (and what it starts later) to ``count`` of its
    allowed cores, the lowest-numbered, and torch's threads to as many; the
    cores, or None where it cannot (no sched_setaffinity, fewer cores)."""
    if count <= 0 or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if count > len(allowed):
        print(f"gpu_train: --cores {count}: only {len(allowed)} cores here; unpinned", file=sys.stderr)
        return None
    cores = allowed[:count]
    os.sched_setaffinity(0, cores)
    torch.set_num_threads(count)
    return cores


def cpu_share(spec: FeedSpec, loader: Any) -> float | None:
    """The share of the GPU decode's samples the CPU took (see the module docstring)."""
    if spec.family == "fastdata-cpu":
        return 1.0
    stats = getattr(loader, "stats", None)
    share = stats().cpu_share if callable(stats) else None
    return round(share, 4) if share is not None else None


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    cores = pin_cores(args.cores)  # first: CUDA's and the workers' threads inherit the mask
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:  # keep CI's run short: a tiny model, small batches, a few steps
        print("gpu_train: no CUDA device; a tiny model for a few steps on the CPU (no GPU figures)")
        args.model, args.batch, args.size = "tiny", min(args.batch, 8), min(args.size, 64)
        args.steps, args.warmup, args.workers = min(args.steps, 3), min(args.warmup, 1), min(args.workers, 2)
        args.memory_epochs, args.epoch_batches = min(args.memory_epochs, 3), min(args.epoch_batches, 2)
    if args.feeds is None:
        args.feeds = "fastdata-cuda-processes" if args.memory_epochs else ",".join(FEEDS)
    specs: list[FeedSpec | tuple[str, str]] = []  # a bad spec: (text, why)
    for text in (t for t in args.feeds.split(",") if t.strip()):
        try:
            spec = parse_feed(text, args.workers)
        except ValueError as exc:
            specs.append((text.strip(), error_text(exc)))
            print(f"gpu_train: {exc}", file=sys.stderr)
            continue
        if not cuda and spec.family != "synthetic":
            spec = FeedSpec(spec.spec, spec.family, spec.kind, min(spec.workers, 2), spec.backend)
        specs.append(spec)
    if args.memory_epochs:
        if len(specs) != 1 or not isinstance(specs[0], FeedSpec):
            print(f"gpu_train: --memory-epochs takes one valid feed, got {args.feeds!r}", file=sys.stderr)
            return 2
        result, failed = memory_run(args, specs[0], device)
        write_json(args.json, result)
        return 1 if failed else 0
    if args.model == "resnet50" and not args.decode_only:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            print("gpu_train: torchvision is not installed, so a tiny model stands in for ResNet-50")
            args.model = "tiny"
    mode = "decode-only" if args.decode_only else f"train {args.model} bf16 channels_last"
    specs = [s for s in specs if not (args.decode_only and isinstance(s, FeedSpec) and s.family == "synthetic")]
    samples = (max([args.warmup] + [2 * s.workers + 2 for s in specs if isinstance(s, FeedSpec)]) + args.steps + 2) * args.batch
    step = (lambda x, y: None) if args.decode_only else model_and_step(args.model, device, 2)
    rows: list[dict[str, Any]] = []
    budget = len(cores) if cores else None
    result = {"mode": mode, "device": str(device), "args": vars(args), "versions": versions(), "rows": rows,
              "core_budget": budget, "cores": cores}
    for spec in specs:
        if not isinstance(spec, FeedSpec):
            rows.append({"feed": spec[0], "error": spec[1]})
            continue
        row: dict[str, Any] = {"feed": spec.spec, "family": spec.family, "kind": spec.kind, "workers": spec.workers,
                               "backend": spec.backend, "img_s": None, "pct_synthetic": None, "core_budget": budget,
                               "cpu_share": None}
        rows.append(row)
        batches: Feed | str | None = None
        try:
            with time_limit(args.feed_timeout):
                batches = feed(spec, args, device, samples)
                if isinstance(batches, str):
                    row["skipped"] = batches
                    continue
                row.update(batches.info)
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                # the workers' first round lands at once (workers x prefetch batches): past it before timing
                row["warmup"] = max(args.warmup, 2 * spec.workers + 2) if spec.workers and cuda else args.warmup
                if spec.family == "fastdata-hybrid" and cuda:  # the share settles first (tests/gpu: within 12 batches)
                    row["warmup"] = max(row["warmup"], HYBRID_SETTLE)
                stage = getattr(batches.loader, "prefetcher", None)
                if hasattr(stage, "times"):
                    stage.times.clear()  # the stage's host time per batch over the timed steps alone
                row["img_s"] = round(timed(batches, step, row["warmup"], args.steps, args.batch, device), 1)
                row["cpu_share"] = cpu_share(spec, batches.loader)
                controller = getattr(stage, "controller", None)
                if controller is not None and controller.target is not None:  # where it was heading
                    row["share_target"] = round(controller.target, 4)
                if hasattr(stage, "stage_times"):
                    row["stage_ms"] = stage.stage_times()
                    print(f"gpu_train: {spec.spec}: stage thread, host ms per batch: {row['stage_ms']}")
            if cuda:
                row["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
        except Exception as exc:  # noqa: BLE001 - one feed's failure is recorded; the others still run
            print(f"gpu_train: feed {spec.spec} failed:", file=sys.stderr)
            traceback.print_exc()
            row["error"] = error_text(exc)
        finally:
            if isinstance(batches, Feed):
                try:
                    with time_limit(30 if args.feed_timeout else 0):
                        batches.close()
                except Exception:  # noqa: BLE001
                    traceback.print_exc()
            del batches
            release(device)
            base = next((r["img_s"] for r in rows if r.get("family") == "synthetic" and r.get("img_s")), None)
            for r in rows:
                if base and r.get("img_s"):
                    r["pct_synthetic"] = round(100 * r["img_s"] / base, 1)
            write_json(args.json, result)
    pinned = f", pinned to {budget} cores {cores}" if budget else ""
    print(f"\n{mode}, batch {args.batch}, {args.size}px, {args.steps} timed steps, {device}{pinned}")
    print(f"{'feed':<40}{'img/s':>10}{'% synth':>9}{'workers':>9}{'peak MB':>9}{'share':>7}  decoder / workers chosen")
    for r in rows:
        if "error" in r:
            print(f"{r['feed']:<40}  ERROR: {r['error']}")
        elif "skipped" in r:
            print(f"{r['feed']:<40}  skipped: {r['skipped']}")
        else:
            pct = r["pct_synthetic"] if r["pct_synthetic"] is not None else float("nan")
            chosen = " / ".join(str(r[k]) for k in ("decoder", "workers_chosen") if r.get(k))
            share = "-" if r.get("cpu_share") is None else f"{r['cpu_share']:.2f}"
            print(f"{r['feed']:<40}{r['img_s']:>10,.1f}{pct:>9.1f}{r['workers']:>9}{r.get('gpu_peak_mb', 0):>9}{share:>7}  {chosen}")
    write_json(args.json, result)
    failed = [r["feed"] for r in rows if "error" in r]
    if failed:
        print(f"gpu_train: {len(failed)} feed(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
