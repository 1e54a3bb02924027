"""fastdata's training pipeline over a converted directory for several worker counts and batch sizes.

    python benchmarks/workers.py SHARDS_DIR [--workers 0,1,2] [--batch-sizes 32,128] [--rounds 3]
    python benchmarks/workers.py --quick    # a check that it runs: 16 generated photos, 0 and 1 workers, 1 round

Without SHARDS_DIR it converts ``--generate`` photo-like JPEGs (``fastdata bench``'s
default set) to RecordIO in a temporary folder and times those.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from photos import as_dataset, photo_folder

from fastdata import make_loader, open_dataset
from fastdata.bench.harness import Variant, run_interleaved
from fastdata.bench.report import table, write_all
from fastdata.bench.suite import drain
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shards", nargs="?", help="a converted dataset directory (default: --generate generated photos)")
    ap.add_argument("--generate", type=int, default=240, metavar="N", help="photos to generate without SHARDS_DIR")
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--batch-sizes", default="32,128")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-results/workers")
    ap.add_argument("--quick", action="store_true",
                    help="a check that it runs, not a measurement: 16 photos, --workers 0,1 --batch-sizes 8, 1 round")
    args = ap.parse_args()
    if args.quick:
        args.generate, args.workers, args.batch_sizes, args.rounds = 16, "0,1", "8", 1
    if args.shards is not None and not Path(args.shards).is_dir():
        raise SystemExit(f"workers: {args.shards}: no such folder; give a dataset `fastdata convert` wrote, "
                         "or leave SHARDS_DIR out to time generated photos")
    source = args.shards or f"{args.generate} generated photos, as RecordIO"
    with tempfile.TemporaryDirectory(prefix="fastdata-workers-") as tmp:
        shards = args.shards
        if shards is None:
            shards = as_dataset(photo_folder("workers", None, args.generate, flag="SHARDS_DIR"), Path(tmp) / "shards")
        ds = open_dataset(shards, transform=Compose([RandomResizedCrop(224), RandomHorizontalFlip()]))
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
    write_all(results, {"shards": source}, args.out)


if __name__ == "__main__":
    main()
