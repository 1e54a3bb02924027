"""Tiny converted datasets for the DALI tests: flat-colour JPEGs whose colour names their index.

A flat colour survives JPEG, any crop, resize and flip, so the mean colour of
an output image identifies which sample DALI read, and its label can be
checked against the one written for that sample.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from fastdata.formats import Sample, registry
from fastdata.formats.dataset_writer import write_dataset

# Every registered format must declare its DALI reader or None (FormatSpec has
# no default for it); the DALI tests run over those that declare one.
FORMATS = [name for name in registry.names() if registry.get(name).dali is not None]
NUM_SAMPLES = 14  # not a multiple of the batch size or shard count: partial batches and uneven shards
NUM_CLASSES = 3
CLASSES = [f"class{i}" for i in range(NUM_CLASSES)]


def colour(i: int) -> tuple[int, int, int]:
    """Sample ``i``'s colour: red steps 17 apart, so colours stay distinct after JPEG."""
    return (10 + 17 * i, 240 - 11 * i, (97 * i) % 200 + 30)


def label(i: int) -> int:
    return (i * 7) % NUM_CLASSES


def jpeg(rgb: tuple[int, int, int], size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, rgb).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def samples(n: int = NUM_SAMPLES) -> list[Sample]:
    # sizes vary (some smaller than the 224 output, some not square) to exercise resize and crop
    return [
        Sample(image=jpeg(colour(i), (40 + 23 * i, 300 - 13 * i)), label=label(i), id=i, filename=f"c/{i}.jpg")
        for i in range(n)
    ]


def write(directory: Path, fmt: str, items: list[Sample], shards: int = 3) -> Path:
    """Write ``items`` in about ``shards`` shards; returns the directory."""
    total = sum(len(s.image) for s in items)
    write_dataset(directory, fmt, items, CLASSES, shard_bytes=max(1, total // shards + 1))
    return directory


def identify(images: np.ndarray, mean: np.ndarray, std: np.ndarray) -> list[int]:
    """The sample index of each normalised (N, 3, H, W) image, by nearest colour (refuses far matches).

    ``mean``/``std`` in 0-1 units, as the pipeline takes them.
    """
    rgb = 255 * (images * std[None, :, None, None] + mean[None, :, None, None]).mean(axis=(2, 3))
    table = np.array([colour(i) for i in range(NUM_SAMPLES)], dtype=np.float64)
    dist = np.abs(rgb[:, None, :] - table[None, :, :]).max(axis=2)
    found = dist.argmin(axis=1)
    assert (dist[np.arange(len(found)), found] < 6).all(), f"colours match no sample: {rgb.round(1)}"
    return found.tolist()


