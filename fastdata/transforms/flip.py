"""RandomHorizontalFlip on uint8 pixels."""

from __future__ import annotations

import numpy as np

from .. import rng
from .base import Source, Transform, check_output
from .resampling import hflip


class RandomHorizontalFlip(Transform):
    """Mirror left-right with probability ``p``.

    Not decode-aware (flipping needs every pixel): encoded input is decoded
    whole. ``generator``, ``output`` and ``backend`` as in
    :class:`RandomResizedCrop`.
    """

    def __init__(
        self,
        p: float = 0.5,
        *,
        generator: np.random.Generator | None = None,
        output: str = "numpy",
        backend: str = "auto",
    ) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p}")
        self.p = float(p)
        self.generator = generator
        self.output = check_output(output)
        self.backend = backend

    def draw(self) -> bool:
        """Whether this sample is mirrored (one draw; Compose's fused crop+flip plans with it too)."""
        # Draw even when p is 0 or 1, so the stream does not depend on p.
        return bool((self.generator or rng.generator()).random() < self.p)

    def apply(self, src: Source) -> np.ndarray:
        arr = src.full()
        return hflip(arr) if self.draw() else arr

    def __repr__(self) -> str:
        return f"RandomHorizontalFlip(p={self.p})"
