"""Tiny generated datasets for the format conformance and fuzz tests.

Each payload starts with a JPEG signature (so sniffing readers treat it as an
image) and then encodes its own index, so any mix-up shows as a mismatch.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from fastdata.formats import Manifest, Sample, registry
from fastdata.formats.dataset_writer import write_dataset

JPEG_SOI = b"\xff\xd8\xff\xe0"


def payload(i: int, rng: np.random.Generator) -> bytes:
    body = rng.integers(0, 256, size=int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
    return JPEG_SOI + i.to_bytes(4, "little") + body


def make_samples(n: int, seed: int = 0, num_classes: int = 3) -> list[Sample]:
    rng = np.random.default_rng(seed)
    return [
        Sample(image=payload(i, rng), label=int(rng.integers(0, num_classes)), id=i, filename=f"c/{i}.jpg", class_text="c")
        for i in range(n)
    ]


def write(tmp: Path, fmt: str, samples: list[Sample], shard_bytes: int = 2000) -> Manifest:
    return write_dataset(tmp, fmt, samples, [f"class{i}" for i in range(3)], shard_bytes=shard_bytes)


def open_all(directory: Path, manifest: Manifest):
    """A reader per shard, opened with the options the format reads from the manifest."""
    spec = registry.get(manifest.format)
    return [spec.open_shard(os.path.join(directory, s.file), **spec.shard_options(manifest)) for s in manifest.shards]


def read_all(directory: Path, manifest: Manifest) -> list[tuple[bytes, int]]:
    out = []
    for reader in open_all(directory, manifest):
        out.extend((bytes(img), int(label)) for img, label in (reader.sample(i) for i in range(len(reader))))
    return out


def data_file(directory: Path, manifest: Manifest, shard: int = 0) -> Path:
    """The file whose bytes hold shard ``shard``'s records."""
    return registry.get(manifest.format).data_file(Path(directory) / manifest.shards[shard].file)
