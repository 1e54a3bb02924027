"""The variants ``fastdata bench`` times: baselines, fastdata, DALI; train, eval, raw reads, conversion.

Two grids. The default one is the comparison a user needs, in about a
minute: torchvision's recipe (or its PIL stand-in), fastdata's defaults over
the image folder and the default formats' shards, and DALI's CPU pipeline
when installed. ``--full`` (``Settings.full``) adds every other row: the same
PIL transforms through fastdata, the pytorch/examples recipe, the other kind
of workers, the decode limit, DALI per source and evaluation, raw record
reads and conversion.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np
import torch

from ..formats import Manifest, Sample, registry
from ..formats.dataset_writer import write_dataset
from . import baselines, plain_recordio
from .harness import Measured, Variant
from .targets import decode_aware_row, decode_limit_row

# Every registered format, in the order rows are built and shown (RESULTS.md's;
# the first is the decode-limit source and the plain-loop baseline); formats
# registered later follow.
_SHOWN_FIRST = ("recordio", "tfrecord", "lmdb")
FORMATS = tuple(sorted(registry.names(), key=lambda name: (*_SHOWN_FIRST, name).index(name)))
DEFAULT_FORMATS = ("recordio", "tfrecord")
"""The formats the default grid converts to and times (``--full``: all of :data:`FORMATS`)."""
Convert = Callable[..., None]  # (src, out, format, workers, resize=None, restart_markers=None)

CONVERT_IMAGES = 2000
"""Conversion rows convert at least this many files (the source's, hard-linked over again when fewer),
so that the part beyond start-up is long enough to measure."""
CONVERT_TINY = 8
"""...and a folder of this many, whose time is subtracted: start-up (pool, plan, manifest) is left out."""

GROUP_NOTES = {
    "read": "one core, no decoding; each pass reads the records over again until it has lasted the pass time",
    "convert": "images/s beyond start-up, in this process: a pass converts {n} files, then a folder of {k} "
               "(both from the page cache), until it has lasted the pass time; rate = ({n} - {k}) / (t_{n} - t_{k}). The "
               "plain loop and --passthrough do the same work (each JPEG's bytes as they are; fastdata adds "
               "checksums, checks and a manifest); (default) also rewrites each JPEG with restart markers",
}
"""What a group's figures are, said under the table and on the chart's panel (``{n}``/``{k}``: the convert sizes)."""


@dataclasses.dataclass
class Settings:
    src: str
    shards: dict[str, str]  # source label ("recordio", "recordio --resize 256") -> converted directory
    workers: int = 2
    batch_size: int = 32
    seed: int = 0
    dali: bool = True
    groups: tuple[str, ...] = ("train", "eval")
    convert: Convert | None = None
    scratch: str = ""
    pass_images: int = 0  # a timed pipeline pass reads whole epochs until it has read this many...
    pass_seconds: float = 0.0  # ...and lasted this long
    full: bool = False
    convert_images: int = CONVERT_IMAGES
    converted_files: int = 0  # set by build(): how many files the conversion rows convert


def drain(loader) -> int:
    n = 0
    for images, _ in loader:
        n += len(images)
    return n


class Steady(TypedDict):
    """The :class:`Variant` fields :func:`steady` fills."""

    run: Callable[[], int]
    warm: Callable[[], int]
    setup: Callable[[], None]
    teardown: Callable[[], None]


class Expected(TypedDict):
    """A :class:`Variant`'s up-front time estimates (its ``expect`` fields)."""

    expect: float
    expect_warm: float


class SteadyRow(Steady, Expected):
    """Both, for a row that times steady-state epochs."""


def steady(make: Callable[[], Iterable[Any]], min_items: int = 0, min_seconds: float = 0.0) -> Steady:
    """``run``/``warm``/``setup``/``teardown`` for a Variant that times steady-state epochs.

    ``setup`` (untimed) builds the loader with persistent workers and pulls
    one batch, so worker start-up is paid outside the timed pass, as it is
    amortised over a long training run; ``teardown`` shuts the workers down,
    so only one variant's processes are alive at a time. ``run`` reads whole
    epochs until it has ``min_items`` and has lasted ``min_seconds``: on a
    small set one epoch is a fraction of a second, where scheduling noise and
    the pipeline's fill and drain weigh more than in training, and two runs'
    ratios disagree more. ``warm`` (the warm-up pass) reads one epoch.
    """
    held: list[Any] = []

    def setup() -> None:
        loader = make()
        next(iter(loader))
        held.append(loader)

    def warm() -> int:
        return drain(held[0])

    run = repeated(warm, min_seconds, min_items)

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

    return {"run": run, "warm": warm, "setup": setup, "teardown": teardown}


def repeated(one_pass: Callable[[], int], min_seconds: float, min_items: int = 0) -> Callable[[], int]:
    """``one_pass`` over again until the whole has lasted ``min_seconds`` and
    counted ``min_items`` (at least once; never again after a pass of none)."""

    def run() -> int:
        t0 = time.perf_counter()
        n = one_pass()
        while n > 0 and (n < min_items or time.perf_counter() - t0 < min_seconds):
            n += one_pass()
        return n

    return run


def build(s: Settings) -> list[Variant]:
    out: list[Variant] = []
    if "train" in s.groups:
        out += _pipelines(s, train=True)
    if "eval" in s.groups:
        out += _pipelines(s, train=False)
    if "read" in s.groups:
        out += _raw_reads(s)
    if "convert" in s.groups and s.convert is not None:
        out += _conversions(s, s.convert)
    return out


# Rough seconds a step takes beyond its pass (the up-front estimate; the bar then learns the real ones):
# building the loader and starting its workers, the last epoch's overshoot, shutting it down.
_OVERHEAD = {"torch": 0.6, "threads": 0.25, "processes": 0.6, "dali": 1.3}
_EPOCH_GUESS = {"torch": 0.6, "threads": 0.2, "processes": 0.25, "dali": 0.4}


def _expect(s: Settings, kind: str) -> Expected:
    return {"expect": s.pass_seconds + _OVERHEAD[kind], "expect_warm": _EPOCH_GUESS[kind] + _OVERHEAD[kind]}


def _pipelines(s: Settings, *, train: bool) -> list[Variant]:
    from .. import ImageFolder, Workers, make_loader, open_dataset
    from ..loading import fast_collate
    from ..transforms import Compose, RandomHorizontalFlip, RandomResizedCrop, ResizedCenterCrop

    group = "train" if train else "eval"
    base = baselines.recipe_name()
    pil = baselines.train_transforms if train else baselines.eval_transforms

    def torch_loader(ds, collate) -> SteadyRow:
        return SteadyRow(**steady(lambda: torch.utils.data.DataLoader(
            ds, batch_size=s.batch_size, shuffle=train, num_workers=s.workers, collate_fn=collate, drop_last=False,
            persistent_workers=s.workers > 0), s.pass_images, s.pass_seconds), **_expect(s, "torch"))

    def fast(ds, workers=None) -> SteadyRow:
        # the defaults a user gets: make_loader(ds, batch_size, workers=N), no kind (auto)
        chosen = workers if isinstance(workers, Workers) else defaults(ds)[0]
        return SteadyRow(**steady(lambda: make_loader(ds, s.batch_size, train=train, workers=workers or s.workers,
                                                      seed=s.seed, rank=0, world_size=1), s.pass_images, s.pass_seconds),
                         **_expect(s, chosen.kind if chosen.count() else "threads"))

    def aware():
        return Compose([RandomResizedCrop(224), RandomHorizontalFlip()]) if train else ResizedCenterCrop(256, 224)

    def defaults(ds) -> tuple[Workers, str]:
        chosen, _ = Workers.of(s.workers).resolve(ds, "sample")
        kind = chosen.kind if chosen.count() else "main process"
        return chosen, f"defaults: make_loader(ds, {s.batch_size}, workers={s.workers}) -> {kind}"

    folder_aware = ImageFolder(s.src, transform=aware())
    rows = [Variant(base, group, **torch_loader(baselines.folder_dataset(s.src, pil(False)), fast_collate),
                    note=baselines.recipe_note(train))]
    if s.full:
        rows += [
            Variant(baselines.recipe_name(normalize=True), group,
                    **torch_loader(baselines.folder_dataset(s.src, pil(True)), None), baseline=base,
                    note=baselines.recipe_note(train, normalize=True)),
            Variant("fastdata ImageFolder, same PIL transforms", group, **fast(ImageFolder(s.src, transform=pil(False))),
                    baseline=base),
        ]
    rows.append(Variant(decode_aware_row("ImageFolder"), group, **fast(folder_aware), baseline=base,
                        note=defaults(folder_aware)[1]))
    for fmt, path in s.shards.items():
        if s.full:
            rows.append(Variant(f"fastdata {fmt}, same PIL transforms", group,
                                **fast(open_dataset(path, transform=pil(False))), baseline=base))
        ds = open_dataset(path, transform=aware())
        rows.append(Variant(decode_aware_row(fmt), group, **fast(ds), baseline=base, note=defaults(ds)[1]))
    if s.full and s.shards:  # the other kind of workers beside the defaults' choice, on the first format
        fmt, path = next(iter(s.shards.items()))
        chosen, _ = defaults(open_dataset(path, transform=aware()))
        if chosen.count():
            other: Literal["processes", "threads"] = "processes" if chosen.kind == "threads" else "threads"
            rows.append(Variant(f"{decode_aware_row(fmt)}, worker {other}", group,
                                **fast(open_dataset(path, transform=aware()), Workers(s.workers, kind=other)),
                                baseline=base, note=f"Workers({s.workers}, kind={other!r})"))
    if train and s.full:  # the decode-limit target: one source is enough (the first format, else the folder)
        source, path = next(iter(s.shards.items()), ("ImageFolder", ""))
        chosen, _ = defaults(open_dataset(path, transform=aware()) if path else folder_aware)
        full = baselines.FullDecode()
        ds = open_dataset(path, transform=full) if path else ImageFolder(s.src, transform=full)
        rows.append(Variant(decode_limit_row(source), group, **fast(ds, chosen), baseline=base,
                            note=f"the same loader (worker {chosen.kind}) decoding whole images and nothing else"))
    if s.dali and has_dali() and (train or s.full):
        from ..dali import DALILoader

        # the default grid: DALI on the first format, training (the target's row); --full: every source, eval too
        for fmt, path in list(s.shards.items())[: None if s.full else 1]:
            def dali(path: str = path) -> DALILoader:
                return DALILoader(path, s.batch_size, train=train, device="cpu", device_id=None,
                                  num_threads=s.workers, seed=s.seed)

            run = steady(dali, s.pass_images, s.pass_seconds)
            rows.append(Variant(f"DALI CPU {fmt}", group, **run, **_expect(s, "dali"), baseline=base,
                                note=f"{s.workers} threads, the same shards"))
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
        import nvidia.dali  # noqa: F401 -- imported only to see whether it imports
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
    timing: Expected = {"expect": s.pass_seconds + 0.1, "expect_warm": 0.15}
    # the third-party package on fastdata's TFRecord shards; the main job's extras leave it out: no row, no failure
    tf_base = "tfrecord package reader, sequential (small)" if _has_tfrecord_package() else None
    if tf_base:
        one = _tfrecord_package_pass(small["tfrecord"])
        rows.append(Variant(tf_base, "read", repeated(one, s.pass_seconds), warm=one, unit="rec", **timing))
    for fmt in FORMATS:
        for random in (True, False):
            kind = "random" if random else "sequential"
            one = _read_pass(small[fmt], random=random, seed=s.seed)
            rows.append(Variant(f"fastdata {fmt} {kind} (10k x 200 B)", "read", repeated(one, s.pass_seconds), warm=one,
                                unit="rec", baseline=tf_base, **timing))
    for fmt, path in s.shards.items():
        m = Manifest.read(path)
        per = sum(sh.bytes for sh in m.shards) / max(1, m.num_samples)
        one = _read_pass(path, random=True, seed=s.seed)
        rows.append(Variant(f"fastdata {fmt} random (dataset images)", "read", repeated(one, s.pass_seconds), warm=one,
                            unit="rec", bytes_per_item=per, note=f"{per / 1e3:,.0f} kB a record", **timing))
    return rows


def _has_tfrecord_package() -> bool:
    try:
        import tfrecord  # noqa: F401 -- imported only to see whether it imports
    except ImportError:
        return False
    return True


def _tfrecord_package_pass(path: str) -> Callable[[], int]:
    m = Manifest.read(path)
    shard = m.shards[0]

    def run() -> int:
        from tfrecord.reader import tfrecord_loader

        n = 0
        index = os.path.join(path, shard.index) if shard.index else None  # None: the package reads front to back
        for _ in tfrecord_loader(os.path.join(path, shard.file), index,
                                 {"image/encoded": "byte", "image/class/label": "int"}):
            n += 1
        return n

    return run


class ConvertTiming(TypedDict):
    """The :class:`Variant` fields of a conversion row."""

    run: Callable[[], Measured]
    expect: float


def _conversions(s: Settings, convert: Convert) -> list[Variant]:
    """Conversion rates beyond start-up (see :data:`GROUP_NOTES`): the plain loop
    and ``fastdata convert --passthrough`` do the same work (each JPEG's bytes as
    they are); the default conversion, where the compiled decoder makes it rewrite
    JPEGs with restart markers, does more, and its row says so."""
    from ..decode.native import native_available

    big, tiny = conversion_sources(s.src, Path(s.scratch) / "convert-src", s.convert_images)
    big_files, tiny_files = _jpegs(big), _jpegs(tiny)
    s.converted_files = len(big_files)
    if len(big_files) <= len(tiny_files):
        return []
    scratch = Path(s.scratch) / "convert"
    base = "plain Python im2rec --pass-through loop"
    n = len(big_files) - len(tiny_files)

    def plain_once(files: list[str], name: str) -> float:
        out = scratch / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        pairs = [(f, 0.0) for f in files]
        t0 = time.perf_counter()
        plain_recordio.write(pairs, out / "data.rec", out / "data.idx")
        dt = time.perf_counter() - t0
        shutil.rmtree(out, ignore_errors=True)  # thousands of images' copies: not kept
        return dt

    def plain() -> Measured:
        return beyond_start_up(lambda: plain_once(big_files, "plain"), lambda: plain_once(tiny_files, "plain-tiny"),
                               n, s.pass_seconds)

    def conv(fmt: str, workers: int, markers: bool) -> ConvertTiming:
        def once(src: Path, name: str) -> float:
            out = scratch / name
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            convert(str(src), str(out), fmt, workers, restart_markers=markers)
            dt = time.perf_counter() - t0
            shutil.rmtree(out, ignore_errors=True)
            return dt

        def run() -> Measured:
            tag = f"{fmt}-{workers}-{'rm' if markers else 'pt'}"
            return beyond_start_up(lambda: once(big, tag), lambda: once(tiny, tag + "-tiny"), n, s.pass_seconds)

        per_image = 1 / 1000 if markers else 1 / 8000
        return {"run": run, "expect": max(s.pass_seconds, len(big_files) * per_image / min(workers, 2)) + 0.5}

    rows = [Variant(base, "convert", plain, note="one process: read, IRHeader, append, .idx",
                    expect=max(s.pass_seconds, len(big_files) / 4000) + 0.3)]
    first = FORMATS[0]
    rows.append(Variant(f"fastdata convert {first} --passthrough, 1 worker", "convert", **conv(first, 1, False),
                        baseline=base))
    for fmt in FORMATS:
        rows.append(Variant(f"fastdata convert {fmt} --passthrough, {s.workers} workers", "convert",
                            **conv(fmt, s.workers, False), baseline=base))
    if native_available():
        rows.append(Variant(f"fastdata convert {first} (default), {s.workers} workers", "convert",
                            **conv(first, s.workers, True), baseline=base,
                            note="the default conversion: also rewrites each JPEG losslessly with restart markers"))
    return rows


def beyond_start_up(whole: Callable[[], float], tiny: Callable[[], float], items: int, min_seconds: float) -> Measured:
    """``items`` (the whole run's files less the tiny run's) over the time the whole run takes
    beyond the tiny one's, pairs of runs repeated until they have lasted ``min_seconds``."""
    t0 = time.perf_counter()
    done, spent, misses = 0, 0.0, 0
    while True:
        a, b = whole(), tiny()
        if a > b:
            spent += a - b
            done += items
        else:  # a hiccup in the tiny run: pair again, a few times
            misses += 1
            if misses > 3:
                raise RuntimeError(f"the whole run ({a:.3f} s) took no longer than the tiny one ({b:.3f} s): "
                                   "too few images to time conversion beyond start-up")
        if done and time.perf_counter() - t0 >= min_seconds:
            return Measured(done, spent)


def _jpegs(root: Path) -> list[str]:
    return sorted(str(p) for p in Path(root).rglob("*") if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg"))


def conversion_sources(src: str, where: Path, at_least: int) -> tuple[Path, Path]:
    """Two ImageFolder trees of ``src``'s JPEGs: one of at least ``at_least`` files (``src``
    itself when it has that many, else its files hard-linked over again), one of
    :data:`CONVERT_TINY`. Both are made once (``where`` names them by their size)."""
    files = _jpegs(Path(src))
    if not files:
        raise RuntimeError(f"{src}: no JPEGs to time conversion with")
    copies = -(-at_least // len(files))
    big = Path(src) if copies <= 1 else where / f"x{copies}-{len(files)}"
    tiny = where / f"tiny{CONVERT_TINY}-{len(files)}"
    for root, count, done in ((big, copies, big == Path(src)), (tiny, 0, False)):
        if done or (root / ".complete").exists():
            continue
        shutil.rmtree(root, ignore_errors=True)
        picked = [(f, c) for c in range(count) for f in files] if count else \
            [(f, 0) for f in (files[:: max(1, len(files) // CONVERT_TINY)])[:CONVERT_TINY]]
        for f, c in picked:
            rel = Path(f).relative_to(src)
            target = root / rel.parent / f"{rel.stem}_{c}{rel.suffix}"
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, target)
            except OSError:  # another filesystem: a copy
                shutil.copyfile(f, target)
        (root / ".complete").write_text("ok\n")
    return big, tiny
