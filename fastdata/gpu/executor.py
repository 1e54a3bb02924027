"""``make_loader(decode="cuda" | "auto" | GPUDecode(...))``: the GPU executor.

Registered with :func:`fastdata.loading.executors.register_executor` when
this package is imported. Its workers read and plan (:class:`GPUSamples`),
collate encoded bytes (:class:`EncodedCollate`), and the main process
decodes and resamples each batch (:class:`GPUBatches`).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils.data import Dataset

from ..errors import ConfigError, MissingDependencyError
from ..loading.decode_choice import GPUDecode
from ..loading.executors import DecodeRequest
from ..loading.keyed import KeyedDataset
from ..loading.sample_plans import SamplePlans
from ..loading.streamed import is_stream
from ..order.generators import SampleKey, Seeding
from .backends import CPUDecoder, Decoder, cuda_device, gpu_backend
from .batch import EncodedCollate
from .cpu_crops import crop_batch
from .samples import GPUSamples, hwc, sample_plans
from .share import CPUShare, ShareController
from .stage import GPUBatches

__all__ = ["GPUExecutor", "gpu_executor"]

_log = logging.getLogger("fastdata.gpu")


class _CPUPath:
    """The CPU path in the main process, for samples the GPU decoder rejected."""

    def __init__(self, dataset: Any, seeding: Seeding, rank: int) -> None:
        self.keyed = KeyedDataset(dataset, seeding=seeding, rank=rank)
        self.plans = SamplePlans.of(self.keyed)
        self.backend = getattr(self.plans.transform, "backend", "auto") if self.plans is not None else "auto"

    @staticmethod
    def _key(row: tuple[int, int, int]) -> Any:
        index, seed, epoch = row
        return SampleKey(index, seed, epoch) if seed >= 0 else index

    def __call__(self, row: tuple[int, int, int]) -> tuple[Any, Any]:
        image, target = self.keyed[self._key(row)]
        return hwc(image), target

    def many(self, rows: list[tuple[int, int, int]]) -> list[tuple[Any, Any]]:
        """The samples of ``rows``: planned again (the same draws), then one
        batched CPU crop call for them all; what it cannot make, one by one."""
        keys = [self._key(row) for row in rows]
        planned = self.plans.plans(keys) if self.plans is not None else [None] * len(keys)
        ready = {i: p for i, p in enumerate(planned) if p is not None}
        sizes = {p.plan.size for p in ready.values()}
        out: list[tuple[Any, Any] | None] = [None] * len(keys)
        if len(sizes) == 1:
            pixels, failed = crop_batch(list(ready.values()), sizes.pop(), self.backend)
            for j, (i, p) in enumerate(ready.items()):
                if j not in failed:
                    out[i] = (pixels[j], p.target)
        return [done if done is not None else self(row) for done, row in zip(out, rows)]


class GPUExecutor:
    """The pieces of :class:`~fastdata.loading.executors.Executor` for a GPU decode."""

    planning_only = True

    def __init__(self, settings: GPUDecode, request: DecodeRequest, decoder: Decoder, device: torch.device,
                 chosen: str, size: tuple[int, int]) -> None:
        self.settings, self.decoder, self.device, self.chosen, self.size = settings, decoder, device, chosen, size
        self.fallback = _CPUPath(request.dataset, request.seeding, request.rank)
        start = settings.starting_share()
        self.share = CPUShare(start)  # the workers read it; the stage's controller (if any) writes it

    def feed(self, keyed: KeyedDataset) -> Dataset:
        return GPUSamples(keyed, self.decoder.accepts, self.share)

    def collate(self, *, memory_format: torch.memory_format, pin: bool) -> Callable[[list[Any]], Any]:
        return EncodedCollate(self.size, pin_data=bool(getattr(self.decoder, "copies_encoded", False)))

    def batches(self, feed: Dataset, collate: Callable[[list[Any]], Any]) -> None:
        return None

    def stage(self, batches: Iterable[Any], prefetch: Any) -> GPUBatches:
        """The main-process stage over ``batches``, output as ``prefetch`` says (None: uint8)."""
        options: dict[str, Any] = {}
        if prefetch is not None:
            options = {"mean": prefetch.mean, "std": prefetch.std, "dtype": prefetch.dtype,
                       "memory_format": prefetch.memory_format}
        controller = None
        if self.settings.controlled:
            controller = ShareController(self.share, _workers(batches), bounds=self.settings.share_bounds)
        return GPUBatches(batches, device=self.device, decoder=self.decoder, fallback=self.fallback,
                          budget=self.settings.budget, chosen=self.chosen, share=self.share, controller=controller,
                          **options)


def _workers(batches: Any) -> int:
    """The worker processes or threads that build ``batches`` (0: the main process)."""
    threads = getattr(batches, "threads", None)
    return int(threads) if threads is not None else int(getattr(batches, "num_workers", 0))


def _output_size(transform: Any) -> tuple[int, int]:
    size = getattr(transform, "output_size", None)
    if size is None:
        raise ConfigError(
            f"decode='cuda' makes batches of one size on the GPU, and {transform!r} gives each image its own "
            "(Resize(int)); give the output size, e.g. Resize((224, 224)), or use decode='cpu'"
        )
    return size


def gpu_executor(settings: GPUDecode, request: DecodeRequest) -> GPUExecutor | None:
    """The GPU executor, or None for the CPU one (``mode="auto"`` where the GPU decode cannot run).

    Raises:
        ConfigError: ``decode="cuda"`` with a stream, a ``collate_fn``, a
            dataset or transform it cannot run.
        MissingDependencyError: ``decode="cuda"`` with CUDA but no GPU decoder.
    """
    prefetch = request.prefetch
    device = prefetch.target() if prefetch is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if settings.mode == "auto":
        try:
            return _build(settings, request, device) if device.type == "cuda" else None
        except (ConfigError, MissingDependencyError) as exc:
            _log.info("decode='auto': decoding on the CPU (%s)", exc)
            return None
    if device.type != "cuda":
        where = "Prefetch(device=...) is the CPU" if torch.cuda.is_available() else "no CUDA device here"
        warnings.warn(
            f"decode='cuda': {where}, so the same batch code runs on the CPU (slow; use decode='cpu')",
            RuntimeWarning, stacklevel=4,
        )
    return _build(settings, request, device)


def _build(settings: GPUDecode, request: DecodeRequest, device: torch.device) -> GPUExecutor:
    if is_stream(request.dataset):
        raise ConfigError("decode='cuda' reads map-style datasets: open the dataset without streaming=True")
    if request.collate_fn is not None:
        raise ConfigError("decode='cuda' collates encoded bytes itself: drop collate_fn (or use decode='cpu')")
    # refused before CUDA is touched: what the workers will plan
    size = _output_size(sample_plans(KeyedDataset(request.dataset, seeding=request.seeding, rank=request.rank)).transform)
    if device.type == "cuda":
        # the index now ("cuda" = the current device, set by then under torchrun); "auto" proves its decoder
        # with one tiny decode, which initialises CUDA here (the workers never use it)
        device = cuda_device(device)
        decoder, chosen = gpu_backend(settings.backend, device)
    elif isinstance(settings.backend, str):
        decoder, chosen = CPUDecoder(), "no CUDA: fastdata's CPU decoder stands in"
    else:
        decoder, chosen = settings.backend, "the decoder object passed"
    return GPUExecutor(settings, request, decoder, device, chosen, size)
