"""The main process's share of ``decode="cuda"``: decode each batch in one
call, crop/resize/flip/normalise it with batched ops, one batch ahead on a
side stream (as :class:`~fastdata.loading.prefetch.CUDAPrefetcher` does).

Without CUDA the same code runs on the CPU with :class:`~fastdata.gpu.backends.CPUDecoder`;
only the decoder call and the stream handling differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch

from ..errors import ConfigError
from .backends import Decoder
from .batch import EncodedBatch
from .resample import chunks, crop_resize, pack

__all__ = ["GPUBatches"]

_log = logging.getLogger("fastdata.gpu")

Fallback = Callable[[tuple[int, int, int]], tuple[Any, Any]]


def _move(targets: Any, device: torch.device) -> Any:
    return targets.to(device, non_blocking=True) if isinstance(targets, torch.Tensor) else targets


class GPUBatches:
    """Iterate ``loader``'s :class:`EncodedBatch` es as finished image batches on ``device``.

    Output: ``images`` ``(N, 3, H, W)``: uint8 pixels when ``mean``, ``std``
    and ``dtype`` are all None, else ``dtype`` with ``(x - 255 mean) / (255 std)``
    (mean 0 and std 1 when omitted), computed in float32 as
    :class:`CUDAPrefetcher` does; ``targets`` moved to ``device``.

    Args:
        loader: yields :class:`EncodedBatch` (``EncodedCollate``'s output).
        device: where batches are finished.
        decoder: the JPEG decoder (its device must be ``device``'s type).
        fallback: runs the CPU path for a sample key the decoder rejects:
            ``(index, seed, epoch) -> (HWC uint8 pixels, target)`` (the dataset's
            ``on_error`` policy applies there).
        budget: elements of gathered source windows per resampling step.
    """

    def __init__(self, loader: Iterable[Any], *, device: torch.device, decoder: Decoder, fallback: Fallback,
                 mean: tuple[float, ...] | None = None, std: tuple[float, ...] | None = None,
                 dtype: torch.dtype | None = None, memory_format: torch.memory_format = torch.contiguous_format,
                 budget: int = 1 << 28) -> None:
        self.loader, self.device, self.decoder, self.fallback = loader, torch.device(device), decoder, fallback
        self.dtype, self.memory_format, self.budget = dtype, memory_format, int(budget)
        self.normalise = not (mean is None and std is None and dtype is None)
        mean3 = (mean or (0.0,)) * (3 if len(mean or (0.0,)) == 1 else 1)
        std3 = (std or (1.0,)) * (3 if len(std or (1.0,)) == 1 else 1)
        # as CUDAPrefetcher: per-channel tensors, sub then mul, bit-identical on CPU and GPU
        self._shift = torch.tensor([m * 255.0 for m in mean3], dtype=torch.float32).view(1, 3, 1, 1)
        self._factor = torch.tensor([1.0 / (s * 255.0) for s in std3], dtype=torch.float32).view(1, 3, 1, 1)
        self._stream: Any = None
        self._active: Iterator[Any] | None = None
        self.last: EncodedBatch | None = None  # the batch behind the last output (boxes, flips), for checks

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._active is not None:
            self._active.close()  # type: ignore[attr-defined]
            self._active = None
        self._stream = None

    def __iter__(self) -> Iterator[tuple[torch.Tensor, Any]]:
        if self._active is not None:
            self._active.close()  # type: ignore[attr-defined]
        self._active = self._cuda_pass() if self.device.type == "cuda" else self._cpu_pass()
        return self._active

    def _cpu_pass(self) -> Iterator[tuple[torch.Tensor, Any]]:
        for batch in self.loader:
            yield self.finish(batch)

    def _cuda_pass(self) -> Iterator[tuple[torch.Tensor, Any]]:  # pragma: no cover - needs CUDA
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=self.device)
        stream, batches = self._stream, iter(self.loader)

        def preload() -> tuple[torch.Tensor, Any] | None:
            batch = next(batches, None)
            if batch is None:
                return None
            with torch.cuda.stream(stream):
                return self.finish(batch)

        ahead = preload()
        while ahead is not None:
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(stream)
            images, targets = ahead
            images.record_stream(consumer)  # made on the side stream, used on the consumer's
            if isinstance(targets, torch.Tensor):
                targets.record_stream(consumer)
            ahead = preload()
            yield images, targets

    def finish(self, batch: EncodedBatch) -> tuple[torch.Tensor, Any]:
        """One batch, decoded and finished on ``self.device``."""
        if not isinstance(batch, EncodedBatch):
            raise ConfigError(f"decode='cuda' expects EncodedCollate's batches, got {type(batch).__name__}")
        dev, (oh, ow) = self.device, batch.out_size
        out = torch.empty((len(batch), 3, oh, ow), dtype=torch.float32, device=dev)
        if len(batch.gpu):
            images, rejected = self._decode(batch)
            if rejected:
                batch, images = self._on_cpu(batch, images, rejected)
        if len(batch.gpu):
            self._resample(batch, images, out)
        if len(batch.ready_at):
            ready = batch.ready.to(dev, non_blocking=True).permute(0, 3, 1, 2).to(torch.float32)
            out.index_copy_(0, batch.ready_at.to(dev, non_blocking=True), ready)
        self.last = batch
        return self._output(out), _move(batch.targets, dev)

    def _decode(self, batch: EncodedBatch) -> tuple[list[torch.Tensor | None], list[int]]:
        encoded = list(batch.data.tensor_split(batch.offsets[1:-1]))
        try:
            images: list[torch.Tensor | None] = list(self.decoder.decode(encoded, self.device))
        except Exception as exc:  # which sample(s)? only after a failed batch: one call each
            _log.debug("batch decode failed (%s); decoding its samples one at a time", exc)
            images = []
            for data in encoded:
                try:
                    images.append(self.decoder.decode([data], self.device)[0])
                except Exception:  # noqa: BLE001 - any decoder error sends the sample to the CPU path
                    images.append(None)
        expected = batch.sizes.tolist()
        rejected = [j for j, (image, size) in enumerate(zip(images, expected)) if image is None or self._shape(image) != size]
        return images, rejected

    def _shape(self, image: torch.Tensor) -> list[int]:
        if image.ndim != 3:
            return []
        c, h, w = image.shape if self.decoder.layout == "chw" else (image.shape[2], image.shape[0], image.shape[1])
        return [h, w] if c == 3 else []

    def _on_cpu(self, batch: EncodedBatch, images: list[Any], rejected: list[int]) -> tuple[EncodedBatch, list[Any]]:
        """The CPU path for each rejected sample; its pixels join ``ready``."""
        positions = batch.gpu[rejected]
        pixels, targets = [], batch.targets
        for j, position in zip(rejected, positions.tolist()):
            _log.warning("fastdata: the %s decoder rejected %s; decoded on the CPU", self.decoder.name, batch.names[position])
            image, target = self.fallback(tuple(batch.keys[position].tolist()))  # type: ignore[arg-type]
            pixels.append(torch.as_tensor(np.ascontiguousarray(image)))
            if isinstance(targets, torch.Tensor):
                targets[position] = torch.as_tensor(target, dtype=targets.dtype)
        keep = torch.ones(len(batch.gpu), dtype=torch.bool)
        keep[rejected] = False
        kept = keep.nonzero().flatten()
        lengths = (batch.offsets[1:] - batch.offsets[:-1])[kept]
        offsets = torch.zeros(len(kept) + 1, dtype=torch.int64)
        torch.cumsum(lengths, 0, out=offsets[1:])
        data = torch.cat([batch.data[batch.offsets[j]: batch.offsets[j + 1]] for j in kept.tolist()] or [batch.data[:0]])
        new = EncodedBatch(
            data=data, offsets=offsets, gpu=batch.gpu[kept], sizes=batch.sizes[kept], boxes=batch.boxes[kept],
            windows=batch.windows[kept], flips=batch.flips, drawn=batch.drawn,
            ready=torch.cat([batch.ready, torch.stack(pixels)]), ready_at=torch.cat([batch.ready_at, positions]),
            targets=targets, keys=batch.keys, names=batch.names,
        )
        return new, [images[j] for j in kept.tolist()]

    def _resample(self, batch: EncodedBatch, images: list[torch.Tensor], out: torch.Tensor) -> None:
        dev, layout = self.device, self.decoder.layout
        sizes, windows = batch.sizes, batch.windows
        cols = int(windows[:, 3].max())
        starts = torch.zeros(len(sizes), dtype=torch.int64)
        torch.cumsum(3 * sizes[:-1, 0] * sizes[:-1, 1], 0, out=starts[1:])
        flat = pack(images, 3 * cols)
        on = {name: t.to(dev, non_blocking=True) for name, t in (
            ("offsets", starts), ("sizes", sizes), ("boxes", batch.boxes), ("windows", windows),
            ("flips", batch.flips[batch.gpu]), ("at", batch.gpu),
        )}
        for group in chunks(windows.numpy(), self.budget):
            rows, cols = int(windows[group, 2].max()), int(windows[group, 3].max())
            part = {k: v for k, v in on.items()} if len(group) == len(sizes) else {
                k: v[torch.as_tensor(group).to(dev)] for k, v in on.items()
            }
            result = crop_resize(flat, part["offsets"], part["sizes"], part["boxes"], part["windows"], part["flips"],
                                 batch.out_size, rows, cols, layout)
            out.index_copy_(0, part["at"], result)

    def _output(self, out: torch.Tensor) -> torch.Tensor:
        if not self.normalise:
            return out.to(torch.uint8).contiguous(memory_format=self.memory_format)
        out = out.contiguous(memory_format=self.memory_format)
        if self._shift.device != out.device:  # moved on first use: CUDA is first touched here, never at set-up
            self._shift, self._factor = self._shift.to(out.device), self._factor.to(out.device)
        out.sub_(self._shift).mul_(self._factor)
        dtype = self.dtype or torch.float32
        return out if dtype == torch.float32 else out.to(dtype)
