"""fastdata's training pipeline over a converted directory for several worker counts and batch sizes.

    python benchmarks/workers.py SHARDS_DIR [--workers 0,1,2] [--batch-sizes 32,128] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys

from fastdata import make_loader, open_dataset
from fastdata.bench.harness import Variant, run_interleaved
from fastdata.bench.report import table, write_all
from fastdata.bench.suite import drain
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("shards")
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--batch-sizes", default="32,128")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-results/workers")
    args = ap.parse_args()
    ds = open_dataset(args.shards, transform=Compose([RandomResizedCrop(224), RandomHorizontalFlip()]))
    variants = []
    for bs in (int(b) for b in args.batch_sizes.split(",")):
        first = None
        for w in (int(x) for x in args.workers.split(",")):
            name = f"batch {bs}, {w} workers"
            variants.append(Variant(name, f"batch {bs}", lambda w=w, bs=bs: drain(make_loader(
                ds, bs, workers=w, rank=0, world_size=1, drop_last=False)), baseline=first))
            first = first or name
    results = run_interleaved(variants, rounds=args.rounds, progress=lambda m: print(m, file=sys.stderr))
    print(table(results))
    write_all(results, {"shards": args.shards}, args.out)


if __name__ == "__main__":
    main()
