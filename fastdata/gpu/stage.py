"""The main process's share of ``decode="cuda"``: decode each batch in one
call on a thread of its own, then crop/resize/flip/normalise it with batched
ops on a second thread (each an :class:`~fastdata.gpu.ahead.Ahead`), a batch
behind the decode and ``depth`` batches ahead of the training loop, whose
thread only waits on an event per batch. See :meth:`GPUBatches._produce` for
the streams and why decoded images are held.

Without CUDA the same code, threads included, runs on the CPU with
:class:`~fastdata.gpu.backends.CPUDecoder`; only the decoder call and the
stream handling differ.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..errors import ConfigError
from ..loading.clock import named_range
from ..loading.normalise import affine, move_targets
from .ahead import Ahead
from .backends import Decoder, cuda_device
from .batch import EncodedBatch
from .device_times import DeviceTimes
from .resample import both_weights, chunks, crop_resize, pack, round_up
from .share import BatchCost, CPUShare, ShareController

__all__ = ["GPUBatches"]

_log = logging.getLogger("fastdata.gpu")

Fallback = Callable[[tuple[int, int, int]], tuple[Any, Any]]


_WEIGHTS_BYTES = 64 << 20


def _runs(groups: list[np.ndarray], windows: np.ndarray, out_size: tuple[int, int]) -> list[list[tuple[int, int]]]:
    """Consecutive groups, as (start, stop) slices of the group-ordered samples, in
    runs whose filter weights (made for the run's tallest and widest window)
    stay within 64 MiB."""
    runs: list[list[tuple[int, int]]] = []
    first, rows, cols = 0, 0, 0
    for group in groups:
        a, b = first, first + len(group)
        r, c = max(rows, int(windows[a:b, 2].max())), max(cols, int(windows[a:b, 3].max()))
        if runs and runs[-1] and (b - runs[-1][0][0]) * (out_size[0] * r + out_size[1] * c) * 4 <= _WEIGHTS_BYTES:
            runs[-1].append((a, b))
            rows, cols = r, c
        else:
            runs.append([(a, b)])
            rows, cols = int(windows[a:b, 2].max()), int(windows[a:b, 3].max())
        first = b
    return runs


def _rebased(batch: EncodedBatch) -> EncodedBatch:
    """The batch's geometry for images decoded as their windows only (a
    decoder with ``roi``): each image is its window, so sizes become the
    windows' and boxes move by the windows' corners; the filter reads the
    same pixels with the same weights (a window covers the filter's support)."""
    w = batch.windows
    corner = torch.zeros_like(batch.boxes)
    corner[:, :2] = w[:, :2].to(batch.boxes.dtype)
    windows = torch.cat([torch.zeros_like(w[:, :2]), w[:, 2:]], dim=1)
    return replace(batch, sizes=w[:, 2:].clone(), boxes=batch.boxes - corner, windows=windows)


def _on(stream: Any) -> Any:
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()


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
        depth: finished batches held ahead of the training loop.
        chosen: why this decoder (for ``repr``).
        share: the hybrid's CPU share the workers read (None: no split).
        controller: steers ``share`` from each batch's costs (None: it stays as set).
    """

    decodes = True

    def __init__(self, loader: Iterable[Any], *, device: torch.device, decoder: Decoder, fallback: Fallback,
                 mean: tuple[float, ...] | None = None, std: tuple[float, ...] | None = None,
                 dtype: torch.dtype | None = None, memory_format: torch.memory_format = torch.contiguous_format,
                 budget: int = 1 << 28, depth: int = 2, chosen: str = "", share: CPUShare | None = None,
                 controller: ShareController | None = None) -> None:
        self.loader, self.device, self.decoder, self.fallback = loader, torch.device(device), decoder, fallback
        self.depth, self.chosen, self.share, self.controller = int(depth), chosen, share, controller
        self.times: defaultdict[str, float] = defaultdict(float)  # host seconds by step, and "batches"
        self.device_clock = DeviceTimes()  # Loader.stats: the device's seconds per step (CUDA events)
        self.dtype, self.memory_format, self.budget = dtype, memory_format, int(budget)
        self.normalise = not (mean is None and std is None and dtype is None)
        # made here on the CPU; moved on first use (CUDA is first touched there)
        self._shift, self._factor = affine(mean, std, scale=255.0, channels=3)
        self._streams: Any = None
        self._active: Generator[tuple[torch.Tensor, Any], None, None] | None = None
        self.last: EncodedBatch | None = None  # the batch behind the last output (boxes, flips), for checks

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # any iterable is wrapped; len() needs a sized one, as len() does

    @property
    def cpu_share(self) -> float | None:
        """The share of GPU-decodable samples the workers crop on the CPU now (None: no split)."""
        return self.share.get() if self.share is not None else None

    def __repr__(self) -> str:
        why = f"; {self.chosen}" if self.chosen else ""
        split = ""
        if self.share is not None and (self.controller is not None or self.share.get() > 0):
            split = f"; CPU share {self.share.get():.2f} ({'controlled' if self.controller is not None else 'fixed'})"
        return f"GPUBatches({self.decoder.name} decoder on {self.device}{split}{why})"

    def close(self) -> None:
        if self._active is not None:
            self._active.close()
            self._active = None
        self._streams = None
        getattr(self.decoder, "close", lambda: None)()  # nvImageCodec's decoder threads

    def __iter__(self) -> Iterator[tuple[torch.Tensor, Any]]:
        if self._active is not None:
            self._active.close()
        self._active = self._pass()
        return self._active

    def _pass(self) -> Generator[tuple[torch.Tensor, Any], None, None]:
        streams = None
        if self.device.type == "cuda":
            self.device = cuda_device(self.device)
            if self._streams is None:  # (decode, work)
                self._streams = (torch.cuda.Stream(device=self.device), torch.cuda.Stream(device=self.device))
            streams = self._streams
        # iter() here, not on the thread: worker processes are started from the training loop's thread, as before
        ahead = Ahead(self._produce(iter(self.loader), streams), self.depth, "fastdata-gpu-stage")
        try:
            for images, targets, batch, ready in ahead:
                if ready is not None:  # pragma: no cover - needs CUDA
                    consumer = torch.cuda.current_stream(self.device)
                    consumer.wait_event(ready)
                    images.record_stream(consumer)  # made on the side stream, used on the consumer's
                    if isinstance(targets, torch.Tensor):
                        targets.record_stream(consumer)
                self.last = batch
                yield images, targets
        finally:
            ahead.close()

    def _decoded(self, batches: Iterator[Any], stream: Any) -> Iterator[tuple[EncodedBatch, list[Any], Any]]:
        """The decode thread: each batch's images decoded (rejected samples done
        on the CPU path), with the event after its decode on ``stream``."""
        clock = time.perf_counter
        while True:
            t0 = clock()
            batch = next(batches, None)
            self.times["wait"] += clock() - t0
            if batch is None:
                return
            if not isinstance(batch, EncodedBatch):
                raise ConfigError(f"decode='cuda' expects EncodedCollate's batches, got {type(batch).__name__}")
            batch, images = self._decode_batch(batch, stream)
            decoded = None
            if stream is not None:  # pragma: no cover - needs CUDA
                decoded = torch.cuda.Event()
                decoded.record(stream)
            yield batch, images, decoded

    def _produce(self, batches: Iterator[Any], streams: Any) -> Iterator[tuple[torch.Tensor, Any, EncodedBatch, Any]]:
        """The resample thread: each batch finished, with the event that says so.

        Decoding runs on a thread of its own, a batch ahead: the decoder's call
        (most of it host work inside nvJPEG, without the GIL) overlaps this
        thread's kernel launches. On CUDA the decoders run with a stream of their
        own as the current one, which carries no kernels, so their guard (a
        synchronise of it) never waits; the resample runs on the work stream.
        The decoded images are only let go once an event after their last reader
        has completed: the decoders write without waiting for our streams, so
        memory freed while a queued kernel still reads it must not reach them
        (torchvision's allocator blocks or nvImageCodec's pool).
        """
        decode, work = streams if streams is not None else (None, None)
        decoded = Ahead(self._decoded(batches, decode), 1, "fastdata-gpu-decode")
        held: deque[tuple[Any, list[Any]]] = deque()
        try:
            for batch, images, done in decoded:
                if work is None:
                    yield (*self._assembled(batch, images), batch, None)
                    continue
                work.wait_event(done)  # pragma: no cover - needs CUDA from here on
                with torch.cuda.stream(work):
                    out, targets = self._assembled(batch, images)
                ready = torch.cuda.Event()
                ready.record(work)
                held.append((ready, images))
                while held and (len(held) > 4 or held[0][0].query()):
                    held[0][0].synchronize()  # immediate when query() said so; beyond 4 batches, wait
                    held.popleft()
                yield out, targets, batch, ready
        finally:
            decoded.close()

    def finish(self, batch: EncodedBatch) -> tuple[torch.Tensor, Any]:
        """One batch, decoded and finished on ``self.device``, on the current stream."""
        images, targets, self.last, _ = self._finish(batch)
        return images, targets

    def stage_times(self) -> dict[str, float]:
        """Host milliseconds per batch on the stage's two threads, by step (``wait``:
        for the workers' next batch; ``decode``: inside the decoder's call;
        ``cpu``: rejected samples on the CPU path; ``resample``: launching the
        crop/resize/normalise), over the batches finished so far."""
        n = max(1, int(self.times["batches"]))
        return {k: round(1000 * v / n, 3) for k, v in self.times.items() if k != "batches"} | {"batches": n}

    def device_times(self) -> dict[str, float]:
        """Device seconds by step (``decode``, ``resample``) over the batches
        whose events have completed; empty off CUDA. The events are on the
        stage's decode and work streams: ``decode`` covers the decoder's own
        work where the decoder orders it on that stream (nvImageCodec is given
        it); a decoder that runs on a private stream and returns synchronised
        shows there as the gap between the events. Not yet checked on a GPU."""
        return self.device_clock.totals()

    def _finish(self, batch: EncodedBatch) -> tuple[torch.Tensor, Any, EncodedBatch, list[Any]]:
        if not isinstance(batch, EncodedBatch):
            raise ConfigError(f"decode='cuda' expects EncodedCollate's batches, got {type(batch).__name__}")
        batch, images = self._decode_batch(batch, None)
        return (*self._assembled(batch, images), batch, images)

    def _decode_batch(self, batch: EncodedBatch, stream: Any) -> tuple[EncodedBatch, list[Any]]:
        clock, gpu, seconds = time.perf_counter, len(batch.gpu), 0.0
        images: list[Any] = []
        if gpu:
            t0 = clock()
            with _on(stream), named_range("fastdata.gpu.decode"):
                started = self.device_clock.start(self.device)
                images, rejected = self._decode(batch)
                self.device_clock.stop("decode", started)
            t1 = clock()
            self.times["decode"] += t1 - t0
            if getattr(self.decoder, "roi", False):
                batch = _rebased(batch)
            if rejected:
                batch, images = self._on_cpu(batch, images, rejected)
            seconds = clock() - t0
            self.times["cpu"] += seconds - (t1 - t0)
        if self.controller is not None:
            self.controller.observe(BatchCost(gpu, seconds, batch.by_share, batch.share_s, batch.other_s))
        return batch, images

    def _assembled(self, batch: EncodedBatch, images: list[Any]) -> tuple[torch.Tensor, Any]:
        t0 = time.perf_counter()
        # float32 throughout, whatever autocast the caller runs under (bmm would
        # otherwise hand bf16 to a float32 buffer)
        with torch.autocast(self.device.type, enabled=False), named_range("fastdata.gpu.resample"):
            started = self.device_clock.start(self.device)
            result = self._assemble(batch, images, self.device, *batch.out_size)
            self.device_clock.stop("resample", started)
        self.times["resample"] += time.perf_counter() - t0
        self.times["batches"] += 1
        return result

    def _assemble(self, batch: EncodedBatch, images: list[Any], dev: torch.device, oh: int, ow: int) -> tuple[torch.Tensor, Any]:
        out = torch.empty((len(batch), 3, oh, ow), dtype=torch.float32, device=dev, memory_format=self.memory_format)
        if len(batch.gpu):
            self._resample(batch, images, out)
        if len(batch.ready_at):
            ready = batch.ready.to(dev, non_blocking=True).permute(0, 3, 1, 2).to(torch.float32)
            out.index_copy_(0, batch.ready_at.to(dev, non_blocking=True), ready)
        return self._output(out), move_targets(batch.targets, dev)

    def _decode(self, batch: EncodedBatch) -> tuple[list[torch.Tensor | None], list[int]]:
        encoded = list(batch.data.tensor_split(batch.offsets[1:-1]))
        if getattr(self.decoder, "roi", False):  # only the windows the resampling reads
            regions: list[Any] | None = [tuple(w) for w in batch.windows.tolist()]
            expected = batch.windows[:, 2:4].tolist()
        else:
            regions, expected = None, batch.sizes.tolist()
        images = self._decode_parts(encoded, regions)
        rejected = [j for j, (image, size) in enumerate(zip(images, expected)) if image is None or self._shape(image) != size]
        return images, rejected

    def _decode_parts(self, encoded: list[torch.Tensor], regions: list[Any] | None = None) -> list[torch.Tensor | None]:
        """One call for the whole list; when it raises (torchvision does for one
        bad image), each half again: one bad file costs about 2 log2(N) calls, not N.
        ``regions``: ``(top, left, rows, cols)`` per image for a decoder with ``roi``."""
        try:
            if regions is None:
                images = list(self.decoder.decode(encoded, self.device))
            else:
                images = list(self.decoder.decode(encoded, self.device, regions=regions))  # type: ignore[call-arg]  # roi decoders only
            if len(images) == len(encoded):
                return images
            failure = f"{len(images)} images for {len(encoded)} inputs"
        except Exception as exc:  # noqa: BLE001 - any decoder error: find the sample(s), send them to the CPU path
            failure = f"{type(exc).__name__}: {exc}"
        if len(encoded) == 1:
            return [None]
        _log.debug("the %s decoder failed a call of %d (%s); splitting it", self.decoder.name, len(encoded), failure)
        half = len(encoded) // 2
        head, tail = (None, None) if regions is None else (regions[:half], regions[half:])
        return self._decode_parts(encoded[:half], head) + self._decode_parts(encoded[half:], tail)

    def _shape(self, image: torch.Tensor) -> list[int]:
        if image.ndim != 3:
            return []
        c, h, w = image.shape if self.decoder.layout == "chw" else (image.shape[2], image.shape[0], image.shape[1])
        return [h, w] if c == 3 else []

    def _on_cpu(self, batch: EncodedBatch, images: list[Any], rejected: list[int]) -> tuple[EncodedBatch, list[Any]]:
        """The CPU path for the rejected samples, all in one batched call where the
        fallback has one (``fallback.many``); their pixels join ``ready``."""
        positions = batch.gpu[rejected]
        pixels, targets = [], batch.targets
        rows = [tuple(batch.keys[position].tolist()) for position in positions.tolist()]
        for position in positions.tolist():
            _log.warning("fastdata: the %s decoder rejected %s; decoded on the CPU", self.decoder.name, batch.names[position])
        many = getattr(self.fallback, "many", None)
        done = many(rows) if many is not None else [self.fallback(row) for row in rows]
        for position, (image, target) in zip(positions.tolist(), done):
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
        new = replace(
            batch, data=data, offsets=offsets, gpu=batch.gpu[kept], sizes=batch.sizes[kept], boxes=batch.boxes[kept],
            windows=batch.windows[kept], ready=torch.cat([batch.ready, torch.stack(pixels)]),
            ready_at=torch.cat([batch.ready_at, positions]), targets=targets,
        )
        return new, [images[j] for j in kept.tolist()]

    def _resample(self, batch: EncodedBatch, images: list[torch.Tensor], out: torch.Tensor) -> None:
        dev, layout, sizes = self.device, self.decoder.layout, batch.sizes
        starts = torch.zeros(len(sizes), dtype=torch.int64)
        torch.cumsum(3 * sizes[:-1, 0] * sizes[:-1, 1], 0, out=starts[1:])
        flat = pack(images, 3 * round_up(int(batch.windows[:, 3].max())))
        groups = chunks(batch.windows.numpy(), self.budget)
        order = torch.from_numpy(np.concatenate(groups))
        # the samples in group order, in two copies to the device (pinned: no wait on the
        # stream's earlier work); each group is then a slice
        ints = torch.cat([starts[:, None], sizes, batch.windows, batch.flips[batch.gpu][:, None].long(),
                          batch.gpu[:, None]], dim=1)[order]
        boxes = batch.boxes[order].to(torch.float32)
        if dev.type == "cuda":  # pragma: no cover - needs CUDA
            ints, boxes = ints.pin_memory(), boxes.pin_memory()
        ints, boxes = ints.to(dev, non_blocking=True), boxes.to(dev, non_blocking=True)
        windows, flips = batch.windows[order], ints[:, 7].bool()
        for run in _runs(groups, windows.numpy(), batch.out_size):
            # the filter weights of several groups in one go: most of a group's kernel launches were these
            first, stop = run[0][0], run[-1][1]
            r = round_up(int(windows[first:stop, 2].max()))
            c = round_up(int(windows[first:stop, 3].max()))
            g = ints[first:stop]
            wy, wx = both_weights(g[:, 1:3], boxes[first:stop], g[:, 3:7], flips[first:stop], batch.out_size, r, c)
            for a, b in run:
                part, local = slice(a, b), slice(a - first, b - first)
                rows, cols = round_up(int(windows[part, 2].max())), round_up(int(windows[part, 3].max()))
                g = ints[part]
                result = crop_resize(flat, g[:, 0], g[:, 1:3], boxes[part], g[:, 3:7], flips[part], batch.out_size,
                                     rows, cols, layout, wy[local], wx[local])
                out.index_copy_(0, g[:, 8], result)

    def _output(self, out: torch.Tensor) -> torch.Tensor:
        # out is already in memory_format: these keep it, with no layout copy
        if not self.normalise:
            return out.to(torch.uint8)
        if self._shift.device != out.device:  # moved on first use: CUDA is first touched here, never at set-up
            self._shift, self._factor = self._shift.to(out.device), self._factor.to(out.device)
        out.sub_(self._shift).mul_(self._factor)
        dtype = self.dtype or torch.float32
        return out if dtype == torch.float32 else out.to(dtype)
