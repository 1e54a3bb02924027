"""Tiny generated image datasets for the dataset tests (FFCV's trick: each
image's width encodes its index, exactly, whatever the codec).

Sample ``i``: ``8 + i`` pixels wide, a PNG for even ``i`` and a JPEG for odd
``i``, in class ``i * NUM_CLASSES // n`` (so sorted folder order == index order).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image

from fastdata.formats import Sample, registry
from fastdata.formats.dataset_writer import write_dataset

N = 24
NUM_CLASSES = 3
CLASSES = ["ant", "bee", "cow"]
SHARD_BYTES = 1500  # several shards of ~5 samples each
FORMATS = tuple(registry.names())
KINDS = ("folder", *FORMATS)


def image_bytes(i: int) -> bytes:
    value = (i * 37) % 256
    pixels = np.full((8 + i % 3, 8 + i, 3), (value, 255 - value, 90), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG" if i % 2 == 0 else "JPEG", quality=90)
    return buf.getvalue()


def label_of(i: int, n: int = N) -> int:
    return i * NUM_CLASSES // n


def index_of(image: Image.Image) -> int:
    """The sample index an image (PIL or HWC array) encodes."""
    width = image.shape[1] if isinstance(image, np.ndarray) else image.size[0]
    return width - 8


def filename(i: int, n: int = N) -> str:
    return f"{CLASSES[label_of(i, n)]}/img{i:03d}.{'png' if i % 2 == 0 else 'jpg'}"


def samples(n: int = N, *, corrupt: dict[int, bytes] | None = None) -> list[Sample]:
    corrupt = corrupt or {}
    return [
        Sample(
            image=corrupt.get(i, image_bytes(i)),
            label=label_of(i, n),
            id=i,
            filename=filename(i, n),
            class_text=CLASSES[label_of(i, n)],
        )
        for i in range(n)
    ]


def write_folder(root: Path, n: int = N, *, corrupt: dict[int, bytes] | None = None) -> Path:
    for s in samples(n, corrupt=corrupt):
        path = root / s.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(s.image)
    return root


def write_kind(root: Path, kind: str, n: int = N, *, corrupt: dict[int, bytes] | None = None) -> Path:
    """Write ``n`` samples as ``kind`` (``"folder"`` or a format) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        return write_folder(root, n, corrupt=corrupt)
    write_dataset(root, kind, samples(n, corrupt=corrupt), CLASSES, shard_bytes=SHARD_BYTES)
    return root


def open_kind(root: Path, kind: str, **kwargs):
    """``kind``'s map-style dataset: ImageFolder, or the generic class over a format."""
    from fastdata.datasets import FormatDataset, ImageFolder

    if kind == "folder":
        return ImageFolder(os.fspath(root), **kwargs)
    return FormatDataset(os.fspath(root), format=kind, **kwargs)


def open_stream(root: Path, fmt: str, **kwargs):
    """The streaming dataset over ``fmt``'s shards at ``root``."""
    from fastdata.datasets import FormatStream

    return FormatStream(os.fspath(root), format=fmt, **kwargs)


# Picklable transforms (spawn workers import this module by name).
def width_of(image) -> int:
    return index_of(image)


def plus_100(target: int) -> int:
    return target + 100


def draw(image) -> tuple[int, float]:
    """A transform whose output shows the augmentation generator in force."""
    from fastdata import rng

    return index_of(image), float(rng.generator().random())


def worker_rss(_image) -> tuple[int, int]:
    """(pid, VmRSS in kB) of the process running the transform."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return os.getpid(), int(line.split()[1])
    return os.getpid(), -1
