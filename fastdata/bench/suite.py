"""The variants ``fastdata bench`` times: baselines, fastdata, DALI; train, eval, raw reads, conversion."""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ..formats import Manifest, Sample, registry
from ..formats.dataset_writer import write_dataset
from . import baselines
from .harness import Variant
from .targets import decode_aware_row, decode_limit_row

# Every registered format, in the order rows are built and shown (RESULTS.md's;
# the first is the decode-limit source and the plain-loop baseline); formats
# registered later follow.
_SHOWN_FIRST = ("recordio", "tfrecord", "lmdb")
FORMATS = tuple(sorted(registry.names(), key=lambda name: (_SHOWN_FIRST + (name,)).index(name)))
Convert = Callable[..., None]  # (src, out, format, workers, resize=None)


@dataclasses.dataclass
class Settings:
    src: str
    shards: dict[str, str]  # format -> converted directory
    workers: int = 2
    batch_size: int = 32
    seed: int = 0
    dali: bool = True
    groups: tuple[str, ...] = ("train", "eval", "read", "convert")
    convert: Convert | None = None
    scratch: str = ""
    pass_images: int = 0  # a timed pipeline pass reads whole epochs until it has read this many


def drain(loader) -> int:
    n = 0
    for images, _ in loader:
        n += len(images)
    return n


def steady(make: Callable[[], object], min_items: int = 0) -> dict[str, Callable[[], object]]:
    """``run``/``setup``/``teardown`` for a Variant that times steady-state epochs.

    ``setup`` (untimed) builds the loader with persistent workers and pulls
    one batch, so worker start-up is paid outside the timed pass, as it is
    amortised over a long training run; ``teardown`` shuts the workers down,
    so only one variant's processes are alive at a time. ``run`` reads whole
    epochs until it has ``min_items``: on a small set one epoch is a fraction
    of a second, where scheduling noise and the pipeline's fill and drain
    weigh more than in training, and two runs' ratios disagree more.
    """
    held: list[object] = []

    def setup() -> None:
        loader = make()
        next(iter(loader))
        held.append(loader)

    def run() -> int:
        n = drain(held[0])
        while 0 < n < min_items:
            n += drain(held[0])
        return n

    def teardown() -> None:
        loader = held.pop()
        close = getattr(loader, "close", None)
        if close is not None:
            close()
        else:
            shutdown = getattr(getattr(loader, "_iterator", None), "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
        del loader

    return {"run": run, "setup": setup, "teardown": teardown}


def build(s: Settings) -> list[Variant]:
    out: list[Variant] = []
    if "train" in s.groups:
        out += _pipelines(s, train=True)
    if "eval" in s.groups:
        out += _pipelines(s, train=False)
    if "read" in s.groups:
        out += _raw_reads(s)
    if "convert" in s.groups and s.convert is not None:
        out += _conversions(s)
    return out


def _pipelines(s: Settings, *, train: bool) -> list[Variant]:
    from .. import ImageFolder, Workers, make_loader, open_dataset
    from ..loading import fast_collate
    from ..transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop

    group = "train" if train else "eval"
    tv = baselines.has_torchvision()
    note = "" if tv else "PIL stand-in (torchvision not installed)"
    base = f"{'apex' if train else 'torchvision'} recipe: ImageFolder+PIL, uint8 collate"
    pil = baselines.train_transforms if train else baselines.eval_transforms

    def torch_loader(ds, collate):
        return steady(lambda: torch.utils.data.DataLoader(
            ds, batch_size=s.batch_size, shuffle=train, num_workers=s.workers, collate_fn=collate, drop_last=False,
            persistent_workers=s.workers > 0), s.pass_images)

    def fast(ds, workers=None):
        # the defaults a user gets: make_loader(ds, batch_size, workers=N), no kind (auto)
        return steady(lambda: make_loader(ds, s.batch_size, train=train, workers=workers or s.workers,
                                             seed=s.seed, rank=0, world_size=1), s.pass_images)

    def aware():
        return Compose([RandomResizedCrop(224), RandomHorizontalFlip()]) if train else ResizedCenterCrop(256, 224)

    def defaults(ds) -> tuple[Workers, str]:
        chosen, _ = Workers.of(s.workers).resolve(ds, "sample")
        kind = chosen.kind if chosen.count() else "main process"
        return chosen, f"defaults: make_loader(ds, {s.batch_size}, workers={s.workers}) -> {kind}"

    folder_aware = ImageFolder(s.src, transform=aware())
    rows = [
        Variant(base, group, **torch_loader(baselines.folder_dataset(s.src, pil(False)), fast_collate), note=note),
        Variant("pytorch/examples recipe: + ToTensor+Normalize", group,
                **torch_loader(baselines.folder_dataset(s.src, pil(True)), None), baseline=base, note=note),
        Variant("fastdata ImageFolder, same PIL transforms", group, **fast(ImageFolder(s.src, transform=pil(False))), baseline=base),
        Variant(decode_aware_row("ImageFolder"), group, **fast(folder_aware), baseline=base, note=defaults(folder_aware)[1]),
    ]
    for fmt, path in s.shards.items():
        rows.append(Variant(f"fastdata {fmt}, same PIL transforms", group, **fast(open_dataset(path, transform=pil(False))), baseline=base))
        ds = open_dataset(path, transform=aware())
        rows.append(Variant(decode_aware_row(fmt), group, **fast(ds), baseline=base, note=defaults(ds)[1]))
    if s.shards:  # the other kind of workers beside the defaults' choice, on the first format
        fmt, path = next(iter(s.shards.items()))
        chosen, _ = defaults(open_dataset(path, transform=aware()))
        if chosen.count():
            other = "processes" if chosen.kind == "threads" else "threads"
            rows.append(Variant(f"{decode_aware_row(fmt)}, worker {other}", group,
                                **fast(open_dataset(path, transform=aware()), Workers(s.workers, kind=other)),
                                baseline=base, note=f"Workers({s.workers}, kind={other!r})"))
    if train:  # the decode-limit target: one source is enough (the first format, else the folder)
        source, path = next(iter(s.shards.items()), ("ImageFolder", ""))
        chosen, _ = defaults(open_dataset(path, transform=aware()) if path else folder_aware)
        full = baselines.FullDecode()
        ds = open_dataset(path, transform=full) if path else ImageFolder(s.src, transform=full)
        rows.append(Variant(decode_limit_row(source), group, **fast(ds, chosen), baseline=base,
                            note=f"the same loader (worker {chosen.kind}) decoding whole images and nothing else"))
    if s.dali and has_dali():
        from ..dali import DALILoader

        for fmt, path in s.shards.items():
            run = steady(lambda path=path: DALILoader(path, s.batch_size, train=train, device="cpu", device_id=None,
                                                         num_threads=s.workers, seed=s.seed), s.pass_images)
            rows.append(Variant(f"DALI CPU {fmt}", group, **run, baseline=base))
    return rows


def missing_peers(s: Settings) -> dict[str, str]:
    """The peers this run cannot time, each with what adds it (or why it is left out)."""
    out = {}
    if not baselines.has_torchvision() and ("train" in s.groups or "eval" in s.groups):
        out["torchvision"] = ("not installed: the baselines are PIL stand-ins doing the same work; "
                              "pip install torchvision (the build matching your torch) for the real ones")
    if ("train" in s.groups or "eval" in s.groups) and s.shards:
        if not s.dali:
            out["DALI"] = "left out (--no-dali)"
        elif not has_dali():
            out["DALI"] = "not installed: pip install 'fastdata[dali]' adds it (NVIDIA DALI; its CPU pipeline needs no GPU)"
    if "read" in s.groups and not _has_tfrecord_package():
        out["tfrecord package"] = "not installed: pip install tfrecord (in fastdata's test extra) adds its reader row"
    return out


def has_dali() -> bool:
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        return False
    return True


def _readers(path: str):
    m = Manifest.read(path)
    spec = registry.get(m.format)
    return [spec.open_shard(os.path.join(path, sh.file), **spec.shard_options(m)) for sh in m.shards]


def _read_pass(path: str, *, random: bool, seed: int) -> Callable[[], int]:
    readers = _readers(path)
    pairs = np.array([(r, i) for r, reader in enumerate(readers) for i in range(len(reader))], dtype=np.int64)
    if random:
        pairs = pairs[np.random.default_rng(seed).permutation(len(pairs))]
    pairs_list = pairs.tolist()

    def run() -> int:
        for r, i in pairs_list:
            readers[r].sample(i)
        return len(pairs_list)

    return run


def small_records(scratch: str, n: int = 10_000, size: int = 200) -> dict[str, str]:
    """~10k small records per format, the per-core raw-read benchmark's data."""
    rng = np.random.default_rng(0)
    samples = [Sample(image=b"\xff\xd8\xff\xe0" + rng.bytes(size), label=int(i % 10), id=i) for i in range(n)]
    out = {}
    for fmt in FORMATS:
        d = os.path.join(scratch, f"small-{fmt}")
        if not os.path.exists(os.path.join(d, "manifest.json")):
            write_dataset(d, fmt, samples, [str(c) for c in range(10)], shard_bytes=1 << 40, overwrite=True)
        out[fmt] = d
    return out


def _raw_reads(s: Settings) -> list[Variant]:
    rows = []
    small = small_records(s.scratch)
    # the third-party package on fastdata's TFRecord shards; the main job's extras leave it out: no row, no failure
    tf_base = "tfrecord package reader, sequential (small)" if _has_tfrecord_package() else None
    if tf_base:
        rows.append(Variant(tf_base, "read", _tfrecord_package_pass(small["tfrecord"]), unit="rec"))
    for fmt in FORMATS:
        for random in (True, False):
            kind = "random" if random else "sequential"
            rows.append(Variant(f"fastdata {fmt} {kind} (10k x 200 B)", "read", _read_pass(small[fmt], random=random, seed=s.seed),
                                unit="rec", baseline=tf_base, note="one core"))
    for fmt, path in s.shards.items():
        m = Manifest.read(path)
        per = sum(sh.bytes for sh in m.shards) / max(1, m.num_samples)
        rows.append(Variant(f"fastdata {fmt} random (dataset images)", "read", _read_pass(path, random=True, seed=s.seed),
                            unit="rec", bytes_per_item=per, note="one core"))
    return rows


def _has_tfrecord_package() -> bool:
    try:
        import tfrecord  # noqa: F401
    except ImportError:
        return False
    return True


def _tfrecord_package_pass(path: str) -> Callable[[], int]:
    m = Manifest.read(path)
    shard = m.shards[0]

    def run() -> int:
        from tfrecord.reader import tfrecord_loader

        n = 0
        for _ in tfrecord_loader(os.path.join(path, shard.file), os.path.join(path, shard.index),
                                 {"image/encoded": "byte", "image/class/label": "int"}):
            n += 1
        return n

    return run


def _conversions(s: Settings) -> list[Variant]:
    files = sorted(str(p) for p in Path(s.src).rglob("*") if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg"))
    scratch = Path(s.scratch) / "convert"
    first = FORMATS[0]
    base = "plain Python im2rec --pass-through loop"

    def plain() -> int:
        out = scratch / "plain"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        _raw_recordio_append(files, out / "data.rec", out / "data.idx")
        return len(files)

    def conv(fmt: str, workers: int) -> Callable[[], int]:
        def run() -> int:
            out = scratch / f"{fmt}-{workers}"
            shutil.rmtree(out, ignore_errors=True)
            s.convert(s.src, str(out), fmt, workers)
            return Manifest.read(out).num_samples
        return run

    rows = [Variant(base, "convert", plain, note="JPEGs only, one process: read, IRHeader, append, .idx; no hashing")]
    for fmt in FORMATS:
        rows.append(Variant(f"fastdata convert {fmt}, {s.workers} workers", "convert", conv(fmt, s.workers), baseline=base))
    rows.append(Variant(f"fastdata convert {first}, 1 worker", "convert", conv(first, 1), baseline=base))
    return rows


_MAGIC = (0xCED7230A).to_bytes(4, "little")
_IR = struct.Struct("<IfQQ")  # flag, label, id, id2: MXNet's IRHeader
_PART = struct.Struct("<II")  # magic, cflag << 29 | length


def _raw_recordio_append(files: list[str], rec: Path, idx: Path) -> None:
    """What im2rec --pass-through does, in plain Python: each file's bytes after an
    IRHeader, framed as RecordIO (split at aligned magic words), plus the ``.idx``.
    No checksums, no checks, no fsync: the floor a converter is compared with."""
    pos = 0
    with open(rec, "wb", buffering=1 << 20) as r, open(idx, "w", encoding="ascii") as x:
        for key, path in enumerate(files):
            with open(path, "rb") as f:
                data = _IR.pack(0, 0.0, key, 0) + f.read()
            cuts = [c for c in _find_all(data) if c % 4 == 0]
            starts, ends = [0, *(c + 4 for c in cuts)], [*cuts, len(data)]
            x.write(f"{key}\t{pos}\n")
            for n, (a, b) in enumerate(zip(starts, ends)):
                flag = 0 if not cuts else 1 if n == 0 else 3 if n == len(cuts) else 2
                pad = b"\0" * (-(b - a) % 4)
                pos += r.write(_PART.pack(0xCED7230A, flag << 29 | (b - a)) + data[a:b] + pad)


def _find_all(data: bytes) -> list[int]:
    found, at = [], data.find(_MAGIC)
    while at >= 0:
        found.append(at)
        at = data.find(_MAGIC, at + 1)
    return found
