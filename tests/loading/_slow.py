"""A dataset slowed by a known per-sample delay, for the timing tests (Loader.stats, watch)."""

from __future__ import annotations

import time

import numpy as np
import torch

DELAY = 0.004  # seconds a sample takes


class Slow(torch.utils.data.Dataset):
    """``n`` tiny images, each ``delay`` seconds late (a sleep: threads and processes run it in parallel)."""

    def __init__(self, n: int, delay: float = DELAY) -> None:
        self.n, self.delay = n, delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        time.sleep(self.delay)
        return np.full((8, 8, 3), index % 256, dtype=np.uint8), index
