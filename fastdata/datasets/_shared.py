"""Small integer slots in shared memory, seen by a dataset's DataLoader workers.

A dataset is copied into every worker, so a plain attribute set in the main
process (``set_epoch``) never reaches persistent workers, and a counter bumped
in a worker (skipped samples) never reaches the main process. A shared int64
tensor fixes both: fork inherits the mapping, spawn sends it through torch's
multiprocessing reductions. Plain ``pickle`` copies the values instead.
Each instance holds one file descriptor while alive (torch's default sharing
strategy), so datasets create them only when needed.
"""

from __future__ import annotations

import torch
import torch.utils.data

MAX_WORKERS = 255


class SharedSlots:
    """``size`` int64 slots; each process should write only its own slot."""

    def __init__(self, size: int) -> None:
        self._t = torch.zeros(size, dtype=torch.int64)
        try:
            self._t.share_memory_()
        except RuntimeError:  # no usable /dev/shm: values stay per process
            pass

    def __getitem__(self, k: int) -> int:
        return int(self._t[k])

    def __setitem__(self, k: int, value: int) -> None:
        self._t[k] = int(value)

    def add(self, k: int, value: int = 1) -> None:
        self._t[k] += int(value)

    def total(self) -> int:
        return int(self._t.sum())


def process_slot() -> int:
    """0 in the main process, ``1 + worker id`` in a DataLoader worker."""
    info = torch.utils.data.get_worker_info()
    return 0 if info is None else 1 + min(info.id, MAX_WORKERS - 1)
