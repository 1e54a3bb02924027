"""A batch as the workers hand it to the GPU: one byte buffer with offsets,
the planned geometry as small tensors, and the pixels of samples the CPU
finished. Built by :class:`EncodedCollate` in the worker; no per-sample
tensor crosses the process boundary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

from ..errors import ConfigError
from ..loading.collate import collate_targets
from ..order.generators import SampleKey
from .resample import window
from .samples import GPUSample

__all__ = ["EncodedBatch", "EncodedCollate"]


@dataclass
class EncodedBatch:
    """Everything the main process needs to finish a batch of ``N`` samples.

    ``M`` samples go to the GPU decoder (``gpu``), ``N - M`` arrive finished
    (``ready``). Tensors are CPU tensors (pinned after :meth:`pin_memory`).

    Attributes:
        data: uint8, the encoded bytes of the ``M`` samples back to back.
        offsets: int64 ``(M + 1,)``: sample ``j``'s bytes are ``data[offsets[j]:offsets[j + 1]]``.
        gpu: int64 ``(M,)``: their positions in the batch.
        sizes: int64 ``(M, 2)``: height and width from the header.
        boxes: float64 ``(M, 4)``: source boxes ``(top, left, height, width)``.
        windows: int64 ``(M, 4)``: the source pixels the resampling reads, ``(top, left, rows, cols)``.
        flips: bool ``(N,)``; drawn: float64 ``(N, 4)``, the boxes as drawn.
        ready: uint8 ``(N - M, H, W, 3)`` finished pixels; ``ready_at``: int64, their positions.
        targets: the collated targets; keys: int64 ``(N, 3)`` sample keys (or -1).
        names: the records, for messages.
        by_share: how many of the ``ready`` samples the hybrid's CPU share
            cropped in the worker (``share_s`` seconds there); ``other_s``:
            the worker's other seconds on the batch (reading, planning,
            finishing images the GPU does not take). Read by the share's controller.
        pin_data: :meth:`pin_memory` pins ``data`` too (the decoder copies
            the encoded bytes to the device, and a pageable source costs it a staging copy).
    """

    data: torch.Tensor
    offsets: torch.Tensor
    gpu: torch.Tensor
    sizes: torch.Tensor
    boxes: torch.Tensor
    windows: torch.Tensor
    flips: torch.Tensor
    drawn: torch.Tensor
    ready: torch.Tensor
    ready_at: torch.Tensor
    targets: Any
    keys: torch.Tensor
    names: list[str]
    by_share: int = 0
    share_s: float = 0.0
    other_s: float = 0.0
    pin_data: bool = False

    def __len__(self) -> int:
        return len(self.names)

    @property
    def out_size(self) -> tuple[int, int]:
        return int(self.ready.shape[1]), int(self.ready.shape[2])

    def pin_memory(self) -> EncodedBatch:
        """The same batch, the tensors copied to the device pinned (torch's
        DataLoader and the threads call this). ``data`` only with ``pin_data``:
        nvJPEG copies the encoded bytes to the device itself, from pageable
        memory through a staging copy (137 ms of host time over 20 steps in
        the first GPU run's profile); a decoder that reads them on the host
        alone is not given one more copy of every byte for nothing."""
        pinned = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in pinned.items():
            if isinstance(value, torch.Tensor) and (name != "data" or self.pin_data):
                pinned[name] = value.pin_memory()
        return replace(self, **pinned)


def _key_row(key: Any) -> tuple[int, int, int]:
    if isinstance(key, SampleKey):
        return int(key.index), int(key.seed), int(key.epoch)
    return (int(key), -1, -1)


def _bytes_buffer(total: int) -> torch.Tensor:
    if get_worker_info() is not None:  # a worker process: straight into shared memory, as FastCollate does
        return torch.empty(0, dtype=torch.uint8).set_(torch.UntypedStorage._new_shared(total), 0, (total,), (1,))
    return torch.empty(total, dtype=torch.uint8)


def _pixels_buffer(shape: tuple[int, ...]) -> torch.Tensor:
    """uint8 ``shape``, in shared memory in a worker process (the hybrid's CPU
    share fills it with up to most of a batch's pixels: no copy on the way out)."""
    return _bytes_buffer(int(np.prod(shape))).view(shape)


class EncodedCollate:
    """``collate_fn`` of ``decode="cuda"``: ``[GPUSample, ...]`` -> :class:`EncodedBatch`.

    Args:
        size: the output ``(height, width)`` every sample has.
        pin_data: the batches' ``pin_data`` (the GPU decoder copies the encoded bytes).

    Raises:
        ConfigError: items that are not :class:`GPUSample` (the dataset's
            transform was replaced after ``make_loader``?), or of another size.
    """

    def __init__(self, size: tuple[int, int], pin_data: bool = False) -> None:
        self.size, self.pin_data = (int(size[0]), int(size[1])), bool(pin_data)

    def __repr__(self) -> str:
        return f"EncodedCollate(size={self.size}, pin_data={self.pin_data})"

    def _checked(self, batch: Sequence[Any]) -> list[GPUSample]:
        if len(batch) == 0:
            raise ConfigError("decode='cuda' got an empty batch")
        for position, item in enumerate(batch):
            if not isinstance(item, GPUSample):
                raise ConfigError(
                    f"decode='cuda': sample {position} is not a planned sample ({type(item).__name__}); "
                    "the dataset's transform must stay as make_loader found it"
                )
            size = tuple(item.plan.size) if item.plan is not None else tuple(item.pixels.shape[:2])  # type: ignore[union-attr]  # no plan: pixels
            if size != self.size:
                raise ConfigError(
                    f"decode='cuda': {item.name} is {size[0]}x{size[1]} after its transform, not "
                    f"{self.size[0]}x{self.size[1]} like the rest of the batch"
                )
        return list(batch)

    def __call__(self, batch: Sequence[Any]) -> EncodedBatch:
        items = self._checked(batch)
        gpu = [i for i, p in enumerate(items) if p.pixels is None]
        lengths = np.array([len(items[i].data) for i in gpu], dtype=np.int64)  # type: ignore[arg-type]  # no pixels: bytes
        offsets = np.zeros(len(gpu) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = _bytes_buffer(int(offsets[-1]))
        view = data.numpy()
        for j, i in enumerate(gpu):
            view[offsets[j] : offsets[j + 1]] = np.frombuffer(items[i].data, dtype=np.uint8)  # type: ignore[arg-type]  # no pixels: bytes
        sizes = np.array([items[i].size for i in gpu], dtype=np.int64).reshape(-1, 2)
        boxes = np.array([items[i].box for i in gpu], dtype=np.float64).reshape(-1, 4)
        ready_at = [i for i, p in enumerate(items) if p.pixels is not None]
        ready_t = _pixels_buffer((len(ready_at), *self.size, 3))
        ready = ready_t.numpy()
        for j, i in enumerate(ready_at):
            ready[j] = items[i].pixels
        return EncodedBatch(
            data=data,
            offsets=torch.from_numpy(offsets),
            gpu=torch.tensor(gpu, dtype=torch.int64),
            sizes=torch.from_numpy(sizes),
            boxes=torch.from_numpy(boxes),
            windows=torch.from_numpy(window(boxes, sizes, self.size)),
            flips=torch.tensor([p.plan is not None and p.plan.flip for p in items], dtype=torch.bool),
            drawn=torch.tensor([p.plan.box if p.plan is not None else p.box for p in items], dtype=torch.float64),
            ready=ready_t,
            ready_at=torch.tensor(ready_at, dtype=torch.int64),
            targets=collate_targets([p.target for p in items]),
            keys=torch.tensor([_key_row(p.key) for p in items], dtype=torch.int64),
            names=[p.name for p in items],
            by_share=sum(p.by_share for p in items),
            share_s=float(sum(p.seconds for p in items if p.by_share)),
            other_s=float(sum(p.seconds for p in items if not p.by_share) + sum(p.plan_s for p in items)),
            pin_data=self.pin_data,
        )
