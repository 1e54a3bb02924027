"""What the per-record checksums cost: on write, on raw reads, on a training pipeline.

    python benchmarks/checksum_cost.py PHOTO_DIR [--copies 4] [--rounds 3] [--out bench-results/checksums]

PHOTO_DIR is an image folder (e.g. ../shared/data/photos/hymenoptera/train);
its JPEGs are converted once per format into a scratch directory. Variants
are timed interleaved (``fastdata.bench.harness``), each against its twin
that reads the same shards with the checksum check switched off:

* ``write``: ``write_shard`` of the photos (pass-through) with the
  checksums and digests as fastdata writes them, against the same writer
  without them (and against the SHA-256 read-back of the files it replaced);
* ``raw``: ``reader.sample(i)`` over every record, RecordIO and LMDB;
* ``train``: ``make_loader`` with RandomResizedCrop(224) + flip, 2 workers,
  batch 32, over the RecordIO and LMDB datasets.

``--micro`` instead prints CPU microseconds per image (``time.process_time``,
median of interleaved rounds: steadier than wall time on a shared machine)
for the RecordIO writer with and without checksums (no fsync, in /dev/shm
when there is one), SHA-256 of the same bytes, and ``sample(i)`` reads
unchecked and checked.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from unittest import mock

from fastdata import make_loader, open_dataset
from fastdata.bench.harness import Variant, run_interleaved
from fastdata.bench.report import table, write_all
from fastdata.bench.suite import drain
from fastdata.formats import Sample, checksums, registry
from fastdata.formats._atomic import sha256_file
from fastdata.formats.dataset_writer import write_dataset
from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

FORMATS = ("recordio", "lmdb")


def photos(folder: Path, copies: int) -> tuple[list[Sample], list[str]]:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    classes = sorted({p.parent.name for p in files})
    data = [(p.read_bytes(), classes.index(p.parent.name)) for p in files] * copies
    return [Sample(img, label, id=i) for i, (img, label) in enumerate(data)], classes


def unchecked(ds):
    """The same dataset with the record check switched off (its checksum files ignored)."""
    ds.shards.checks = [(files, None) for files, _ in ds.shards.checks]
    ds.shards.close()
    return ds


def raw_pass(ds) -> int:
    shards = ds.shards
    n = 0
    for k in range(len(shards.paths)):
        reader = shards.reader(k)
        for i in range(int(shards.counts[k])):
            reader.sample(i)
            n += 1
    return n


def no_checksums():
    """Patch the writers to skip every checksum and digest (what write_shard cost before, minus the SHA-256)."""
    from fastdata.formats.recordio import writer as rw
    from fastdata.formats.tfrecord import writer as tw

    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(tw, "crc32c", lambda data, value=0: 0))
    stack.enter_context(mock.patch.object(checksums, "write", lambda path, crcs, size: Path(path).touch() or "x"))
    stack.enter_context(mock.patch.object(checksums, "file_digest", lambda path, *a, **k: "x"))
    real_init = rw.Writer.__init__
    stack.enter_context(mock.patch.object(rw.Writer, "__init__", lambda self, *a, checksums=False, **k: real_init(self, *a, **k)))
    return stack


def write_variants(samples: list[Sample], scratch: Path) -> list[Variant]:
    out = []
    for fmt in ("recordio", "tfrecord"):
        spec = registry.get(fmt)
        target = scratch / f"w.{fmt}"

        def plain(spec=spec, target=target):
            with no_checksums():
                spec.write_shard(target, samples)
            return len(samples)

        def checked(spec=spec, target=target):
            spec.write_shard(target, samples)
            return len(samples)

        def sha(spec=spec, target=target):
            with no_checksums():
                spec.write_shard(target, samples)
            sha256_file(target)
            return len(samples)

        base = f"write {fmt}, no checksums"
        out += [
            Variant(base, f"write {fmt}", plain),
            Variant(f"write {fmt}, CRC32C per record + file", f"write {fmt}", checked, baseline=base),
            Variant(f"write {fmt}, SHA-256 read back (before)", f"write {fmt}", sha, baseline=base),
        ]
    return out


def micro(samples: list[Sample], classes: list[str], rounds: int) -> None:
    import hashlib
    import os
    import statistics
    import time

    from fastdata.formats.recordio.irheader import IRHeader, pack
    from fastdata.formats.recordio.writer import Writer

    payloads = [pack(IRHeader(0, float(s.label), s.id, 0), s.image) for s in samples]
    where = "/dev/shm" if os.path.isdir("/dev/shm") else None

    def write(flag):
        with tempfile.TemporaryDirectory(dir=where) as tmp, Writer(Path(tmp) / "x.rec", checksums=flag) as w:
            for i, p in enumerate(payloads):
                w.write(p, key=i)
            if flag:
                checksums.encode(w.crcs, 0)

    def sha():
        for p in payloads:
            hashlib.sha256(p).digest()

    with tempfile.TemporaryDirectory(dir=where) as tmp:
        readers = {}
        for fmt in FORMATS:
            write_dataset(Path(tmp) / fmt, fmt, samples, classes, shard_bytes=1 << 40)
            ds = open_dataset(Path(tmp) / fmt, decode=False)
            readers[fmt] = (ds.shards.reader(0), ds.shards.reader(0)._crcs)

        def read(fmt, on):
            reader, crcs = readers[fmt]
            reader.use_checksums(crcs if on else None)
            for i in range(len(reader)):
                reader.sample(i)

        jobs = {"write recordio, no checksums": lambda: write(False), "write recordio, checksums": lambda: write(True),
                "SHA-256 of the payloads (what conversion did before)": sha}
        for fmt in FORMATS:
            jobs[f"sample(i) {fmt}, unchecked"] = lambda f=fmt: read(f, False)
            jobs[f"sample(i) {fmt}, checked"] = lambda f=fmt: read(f, True)
        times: dict[str, list[float]] = {name: [] for name in jobs}
        for _ in range(rounds):
            for name, job in jobs.items():
                start = time.process_time()
                job()
                times[name].append((time.process_time() - start) / len(samples) * 1e6)
    mean = sum(len(s.image) for s in samples) / len(samples)
    print(f"CPU us per image ({len(samples)} images, mean {mean / 1e3:.1f} kB), median of {rounds} interleaved rounds:")
    for name, values in times.items():
        print(f"  {name:55s} {statistics.median(values):8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("photos", type=Path)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip", default="", help="comma list of groups to leave out: write,raw,train")
    ap.add_argument("--out", default="bench-results/checksums")
    ap.add_argument("--micro", action="store_true", help="CPU time per image instead (see the module docstring)")
    args = ap.parse_args()
    samples, classes = photos(args.photos, args.copies)
    if args.micro:
        micro(samples, classes, max(args.rounds, 5))
        return
    skip = set(filter(None, args.skip.split(",")))
    variants: list[Variant] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        if "write" not in skip:
            variants += write_variants(samples, scratch)
        transform = Compose([RandomResizedCrop(224), RandomHorizontalFlip()])
        for fmt in FORMATS:
            path = scratch / fmt
            write_dataset(path, fmt, samples, classes, shard_bytes=32 << 20)
            if "raw" not in skip:
                on, off = open_dataset(path, decode=False), unchecked(open_dataset(path, decode=False))
                base = f"raw {fmt}, unchecked"
                variants += [
                    Variant(base, f"raw {fmt}", lambda d=off: raw_pass(d), unit="rec"),
                    Variant(f"raw {fmt}, checked", f"raw {fmt}", lambda d=on: raw_pass(d), baseline=base, unit="rec"),
                ]
            if "train" not in skip:
                on, off = open_dataset(path, transform=transform), unchecked(open_dataset(path, transform=transform))
                base = f"train {fmt}, unchecked"

                def loader(d):
                    return drain(make_loader(d, 32, workers=args.workers, rank=0, world_size=1, drop_last=False))

                variants += [
                    Variant(base, f"train {fmt}", lambda d=off: loader(d)),
                    Variant(f"train {fmt}, checked", f"train {fmt}", lambda d=on: loader(d), baseline=base),
                ]
        results = run_interleaved(variants, rounds=args.rounds, progress=lambda m: print(m, file=sys.stderr))
    print(table(results))
    write_all(results, {"photos": str(args.photos), "copies": args.copies, "images": len(samples)}, args.out)


if __name__ == "__main__":
    main()
