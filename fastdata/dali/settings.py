"""A DALI pipeline's grouped settings: crop geometry, normalisation, reading.

Each is a small frozen dataclass checked when it is made, so a bad value fails
where it is written, not inside a DALI thread. None of them imports DALI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..loading.settings import IMAGENET_MEAN, IMAGENET_STD, unit_channels

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "Crop", "Normalize", "Reading"]

DTYPES = {"float32": "FLOAT", "float": "FLOAT", "float16": "FLOAT16", "half": "FLOAT16"}
"""Output dtype names (or torch dtypes' names) -> ``nvidia.dali.types`` attribute."""

_WAS_255 = ", as Prefetch does: the unit changed, fastdata.dali took 0-255 before"


def check_positive(owner: str, **values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{owner}: {name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class Crop:
    """Where the output images come from.

    Training: a random-resized crop (``random_area`` of the image,
    ``random_aspect_ratio``), fused into the decode, resized to ``size`` x
    ``size``. Evaluation: the shorter side resized to ``resize_shorter``, then
    a centre crop of ``size``.
    """

    size: int = 224
    resize_shorter: int = 256
    random_area: tuple[float, float] = (0.08, 1.0)
    random_aspect_ratio: tuple[float, float] = (3 / 4, 4 / 3)

    def __post_init__(self) -> None:
        check_positive("Crop", size=self.size, resize_shorter=self.resize_shorter)
        if self.resize_shorter < self.size:
            raise ConfigError(
                f"Crop(resize_shorter={self.resize_shorter}) must be >= size ({self.size}) for the centre crop to fit"
            )
        for name in ("random_area", "random_aspect_ratio"):
            low, high = (float(v) for v in getattr(self, name))
            if not 0 < low <= high:
                raise ConfigError(f"Crop({name}=...) must be (low, high) with 0 < low <= high, got {(low, high)}")
            object.__setattr__(self, name, (low, high))


@dataclass(frozen=True)
class Normalize:
    """Output images are ``(x / 255 - mean) / std`` per RGB channel, x the 0..255 pixel.

    ``mean``/``std`` are in 0-1 units, as for :class:`fastdata.Prefetch`
    (default: ImageNet's, ``IMAGENET_MEAN``/``IMAGENET_STD``); values above 1
    (the 0-255 units this module took before) are refused.
    ``dtype``: ``"float32"`` or ``"float16"`` (or the torch dtype).
    """

    mean: Sequence[float] = IMAGENET_MEAN
    std: Sequence[float] = IMAGENET_STD
    dtype: Any = "float32"

    def __post_init__(self) -> None:
        mean = unit_channels("Normalize", "mean", self.mean, _WAS_255)
        std = unit_channels("Normalize", "std", self.std, _WAS_255)
        if mean is None or std is None or len(mean) != 3 or len(std) != 3 or 0 in std:
            raise ConfigError(f"Normalize needs 3 values (RGB) for mean and std, std no zero; got {mean}, {std}")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        if self.dtype_name not in DTYPES:
            raise ConfigError(f"Normalize(dtype=...) must be float32 or float16, got {self.dtype!r}")

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def in_pixels(self) -> tuple[list[float], list[float]]:
        """``(mean, std)`` in the 0..255 units DALI's normalise op works in."""
        return [m * 255 for m in self.mean], [s * 255 for s in self.std]


@dataclass(frozen=True)
class Reading:
    """How the reader feeds the pipeline.

    Args:
        shuffle: shuffle within a ``shuffle_buffer``-sample window; None =
            the pipeline's ``train``. DALI shuffles locally, so a dataset
            stored in class order needs a shuffled conversion or a larger buffer.
        shuffle_buffer: samples held for shuffling (DALI's ``initial_fill``).
        prefetch_queue_depth: batches DALI prepares ahead.
    """

    shuffle: bool | None = None
    shuffle_buffer: int = 1024
    prefetch_queue_depth: int = 2

    def __post_init__(self) -> None:
        check_positive("Reading", shuffle_buffer=self.shuffle_buffer, prefetch_queue_depth=self.prefetch_queue_depth)
