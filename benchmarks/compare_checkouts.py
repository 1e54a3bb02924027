"""Before/after: the same loader pipeline from two checkouts of fastdata, interleaved in one run.

Each variant runs in its own process (a checkout is put first on sys.path), so two versions of the
library are timed against the same converted directory, alternately, round by round:

    git worktree add /tmp/before <commit>
    python benchmarks/compare_checkouts.py DATA --variant before=/tmp/before \
        --variant after=. --variant after-pure=.:FASTDATA_NATIVE=0 --rounds 3

Steady-state img/s of make_loader (2 workers, batch 32, persistent workers, one untimed warm-up
epoch) with decode-aware RandomResizedCrop(224)+flip (train) or Resize(256)+CenterCrop(224) (eval).
Writes JSON (with machine and versions) and prints a table of medians and ratios to the first variant.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import fastdata
from fastdata import make_loader, open_dataset
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop
data, pipe, epochs, workers = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
train = pipe == "train"
tf = Compose([RandomResizedCrop(224), RandomHorizontalFlip()]) if train else ResizedCenterCrop(256, 224)
ds = open_dataset(data, transform=tf)
try:  # the settings-object API (0.x after issue #10) ...
    loader = make_loader(ds, 32, train=train, seed=0, workers=fastdata.Workers(num=workers, persistent=True))
except (TypeError, AttributeError):  # ... or the flat keywords before it
    loader = make_loader(ds, 32, train=train, seed=0, num_workers=workers, persistent_workers=True)
for _ in loader:
    pass
n, t0 = 0, time.perf_counter()
for _ in range(epochs):
    for images, _ in loader:
        n += images.shape[0]
status = getattr(getattr(fastdata, "decode", None), "native_status", None)
print(json.dumps({"img_s": n / (time.perf_counter() - t0), "file": fastdata.__file__,
                  "crop_decode": status() if status else "pure Python (no compiled path)"}))
"""


def _variant(text: str) -> tuple[str, str, dict[str, str]]:
    name, _, rest = text.partition("=")
    path, *env = rest.split(":")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"--variant NAME=PATH[:VAR=VALUE...], got {text!r}")
    return name, os.path.abspath(path), dict(e.split("=", 1) for e in env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="a converted dataset directory both checkouts can read")
    ap.add_argument("--variant", type=_variant, action="append", required=True)
    ap.add_argument("--pipes", default="train,eval")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="compare_checkouts.json")
    args = ap.parse_args()
    runs: dict[str, list[float]] = {}
    info: dict[str, str] = {}
    for _ in range(args.rounds):
        for pipe in args.pipes.split(","):
            for name, path, env in args.variant:
                cmd = [sys.executable, "-c", CHILD, path, args.data, pipe, str(args.epochs), str(args.workers)]
                done = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, check=False)
                if done.returncode:
                    print(f"{name} {pipe} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
                    return 1
                row = json.loads(done.stdout.strip().splitlines()[-1])
                runs.setdefault(f"{pipe} {name}", []).append(row["img_s"])
                info[name] = f"{row['file']}; {row['crop_decode']}"
    first = args.variant[0][0]
    print(f"{'pipeline':<28}{'median':>9}{'min':>9}{'max':>9}  x {first}")
    for key, vals in runs.items():
        pipe = key.split()[0]
        base = statistics.median(runs[f"{pipe} {first}"])
        print(f"{key:<28}{statistics.median(vals):9.1f}{min(vals):9.1f}{max(vals):9.1f}  {statistics.median(vals) / base:.2f}")
    with open(args.out, "w") as f:
        json.dump({"runs": runs, "variants": info, "args": vars(args) | {"variant": args.variant},
                   "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                               "python": platform.python_version()}, "when": time.strftime("%Y-%m-%d %H:%M")},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
