"""Where a decode="cuda" batch's time goes: torch.profiler over 20 steps of one
feed (decode-only, or ResNet-50 training), after a warm-up, and the stage
thread's own host time per step. Prints the profiler's tables (by GPU time, by
host time) and writes them to --out.

    python benchmarks/gpu_profile.py [PHOTOS] [--feed fastdata-cuda-processes:4] [--train] [--out profile.txt]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_train  # noqa: E402  (beside this file)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photos", nargs="?", default=os.path.join(gpu_train.PHOTOS, "train"))
    ap.add_argument("--feed", default="fastdata-cuda-processes:4")
    ap.add_argument("--train", action="store_true", help="profile ResNet-50 training steps, not the loader alone")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=12)
    ap.add_argument("--rows", type=int, default=25)
    ap.add_argument("--out")
    ap.add_argument("--cpu", action="store_true", help="without CUDA: profile the CPU fallback (a check of this script)")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    if not cuda and not args.cpu:
        print("gpu_profile: no CUDA device: nothing to profile")
        return 0
    device = torch.device("cuda" if cuda else "cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    opts = gpu_train.parse([args.photos, "--batch", str(args.batch)])
    spec = gpu_train.parse_feed(args.feed, 4)
    samples = (args.warmup + args.steps + 4) * args.batch
    batches = gpu_train.feed(spec, opts, device, samples)
    if isinstance(batches, str):
        print(f"gpu_profile: {args.feed}: {batches}")
        return 1
    step = gpu_train.model_and_step("resnet50" if cuda else "tiny", device, 2) if args.train else (lambda x, y: None)
    try:
        for _ in range(args.warmup):
            step(*next(batches))
        sync()
        stage = getattr(batches.loader, "prefetcher", None)
        if hasattr(stage, "times"):
            stage.times.clear()
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(args.steps):
                with torch.profiler.record_function("step: next batch"):
                    x, y = next(batches)
                with torch.profiler.record_function("step: model"):
                    step(x, y)
            sync()
        table = prof.key_averages()
        text = [f"{args.feed} {'train resnet50' if args.train else 'decode-only'}, batch {args.batch}, "
                f"{args.steps} profiled steps, {torch.cuda.get_device_name() if cuda else 'CPU'}"]
        if hasattr(stage, "stage_times"):
            text.append(f"stage thread, host ms per batch: {stage.stage_times()}")
        if cuda:
            text.append("== by GPU time ==")
            try:
                text.append(table.table(sort_by="device_time_total", row_limit=args.rows, max_name_column_width=60))
            except (AttributeError, KeyError, ValueError):
                text.append(table.table(sort_by="cuda_time_total", row_limit=args.rows, max_name_column_width=60))
        text.append("== by host time ==")
        text.append(table.table(sort_by="cpu_time_total", row_limit=args.rows, max_name_column_width=60))
        report = "\n".join(text)
        print(report)
        if args.out:
            with open(args.out, "a") as f:
                f.write(report + "\n\n")
    finally:
        batches.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
