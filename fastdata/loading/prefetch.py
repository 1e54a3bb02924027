"""Host-to-GPU copy and normalisation of uint8 batches, overlapped with training.

The apex ``data_prefetcher`` this replaces was pasted into hundreds of
repositories with a new CUDA stream per epoch; here one stream lives as long
as the prefetcher, and the same class runs (without streams) on a CPU-only
machine so the arithmetic is tested everywhere.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Any

import torch

from ..errors import ConfigError
from .normalise import affine, move_targets

__all__ = ["CUDAPrefetcher"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_FORMATS = (torch.preserve_format, torch.contiguous_format, torch.channels_last)


def per_channel(name: str, values: Sequence[float] | None) -> tuple[float, ...] | None:
    """``values`` (a sequence, array or tensor) as a tuple of floats; None stays None."""
    if values is None:
        return None
    out = tuple(float(v) for v in (values.tolist() if hasattr(values, "tolist") else values))
    if not out:
        raise ConfigError(f"{name} must have one value per channel, got none")
    return out


class CUDAPrefetcher:
    """Iterate ``loader``'s ``(uint8 images, targets)`` as normalised float batches on ``device``.

    Output: ``images`` float ``(N, C, H, W)`` in ``dtype`` and ``memory_format``
    with ``(x / scale - mean) / std`` per channel (x = uint8 pixel value),
    computed in float32 as ``(x - mean*scale) * (1 / (std*scale))`` and then
    cast, so the CPU and GPU give bit-identical results; ``targets`` unchanged
    except moved to ``device`` (when a tensor).

    Units of ``mean``/``std``: with the default ``scale=255.0`` they are in
    0-1 units (torchvision's ``(0.485, 0.456, 0.406)``/``(0.229, 0.224, 0.225)``);
    pass ``scale=1.0`` for 0-255 units (apex/timm's ``(123.675, 116.28, 103.53)``/
    ``(58.395, 57.12, 57.375)``). Omit both for ``x / scale`` alone.

    On CUDA: one side stream, created on first use and kept until
    :meth:`close`; copies are ``non_blocking`` (truly asynchronous when the
    loader pins memory, as ``make_loader`` does); the next batch is copied and
    normalised on that stream while the caller trains on the current one,
    whose stream waits for it (``wait_stream``) and owns its memory
    (``record_stream``). Without CUDA (or with ``device="cpu"``) the same
    numbers are computed on the CPU, one batch at a time.

    Args:
        loader: any iterable of ``(images, targets)``; ``len(self)`` needs ``len(loader)``.
        device: ``None`` = the current CUDA device if available, else CPU.
        mean, std: per-channel (or one) values in the units above.
        scale: divisor applied to pixel values first (see units above).
        dtype: ``torch.float32``, ``torch.float16`` or ``torch.bfloat16``.
        memory_format: output layout; ``preserve_format`` keeps the loader's.

    Raises:
        ConfigError: bad dtype/format/units, zero std, a CUDA device without
            CUDA, or batches that are not uint8 ``(N, C, H, W)`` pairs.
    """

    decodes = False  # the workers decoded: this only copies and normalises

    def __init__(
        self,
        loader: Iterable[Any],
        *,
        device: str | torch.device | None = None,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        scale: float = 255.0,
        dtype: torch.dtype = torch.float32,
        memory_format: torch.memory_format = torch.preserve_format,
    ) -> None:
        if dtype not in _DTYPES:
            raise ConfigError(f"dtype must be one of {_DTYPES}, got {dtype}")
        if memory_format not in _FORMATS:
            raise ConfigError(f"memory_format must be one of {_FORMATS}, got {memory_format}")
        if not scale > 0:
            raise ConfigError(f"scale must be > 0, got {scale}")
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
        device = torch.device(device)
        if device.type == "cuda":
            if not torch.cuda.is_available():
                raise ConfigError(f"device {device} requested but CUDA is not available (use device=None or 'cpu')")
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
        self.loader, self.device, self.dtype, self.memory_format = loader, device, dtype, memory_format
        self.mean, self.std, self.scale = per_channel("mean", mean), per_channel("std", std), float(scale)
        self._check_units()
        self._stream: torch.cuda.Stream | None = None
        self._constants: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._active: Generator[tuple[torch.Tensor, torch.Tensor], None, None] | None = None

    def _check_units(self) -> None:
        if self.std is not None and any(s == 0 for s in self.std):
            raise ConfigError(f"std must not contain 0, got {self.std}")
        if self.mean is None:
            return
        if self.scale == 255.0 and max(self.mean) > 1.0:
            raise ConfigError(
                f"mean {self.mean} looks like 0-255 units but scale=255.0 means 0-1 units; pass scale=1.0 "
                "(or divide mean and std by 255)"
            )
        if self.scale == 1.0 and all(0 < m < 1 for m in self.mean) and all(abs(s) < 1 for s in self.std or (1.0,)):
            raise ConfigError(
                f"mean {self.mean} looks like 0-1 units but scale=1.0 means 0-255 units; pass scale=255.0"
            )

    @property
    def stream(self) -> torch.cuda.Stream | None:
        """The side stream (``None`` on the CPU path or before first use)."""
        return self._stream

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # any iterable is wrapped; len() needs a sized one, as len() does

    def __enter__(self) -> CUDAPrefetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the current pass (shutting its loader iterator) and release the stream."""
        if self._active is not None:
            self._active.close()
            self._active = None
        self._stream = None
        self._constants.clear()

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if self._active is not None:
            self._active.close()
        self._active = self._cuda_pass() if self.device.type == "cuda" else self._cpu_pass()
        return self._active

    def _affine(self, channels: int) -> tuple[torch.Tensor, torch.Tensor]:
        constants = self._constants.get(channels)
        if constants is None:
            constants = affine(self.mean, self.std, scale=self.scale, channels=channels, device=self.device)
            self._constants[channels] = constants
        return constants

    def _convert(self, images: torch.Tensor) -> torch.Tensor:
        if images.dtype != torch.uint8 or images.ndim != 4:
            raise ConfigError(
                f"CUDAPrefetcher expects uint8 (N, C, H, W) images (fast_collate's output), got {images.dtype} "
                f"{tuple(images.shape)}"
            )
        images = images.to(self.device, non_blocking=True)
        if self.mean is None and self.std is None and self.scale == 1.0:
            return images.to(dtype=self.dtype, memory_format=self.memory_format)
        shift, factor = self._affine(images.shape[1])
        out = images.to(dtype=torch.float32, memory_format=self.memory_format)
        out.sub_(shift).mul_(factor)
        return out if self.dtype == torch.float32 else out.to(self.dtype)

    @staticmethod
    def _split(batch: Any) -> tuple[torch.Tensor, Any]:
        if not isinstance(batch, (tuple, list)) or len(batch) != 2:
            raise ConfigError(f"CUDAPrefetcher expects (images, targets) batches, got {type(batch).__name__}")
        return batch[0], batch[1]

    def _cpu_pass(self) -> Generator[tuple[torch.Tensor, torch.Tensor], None, None]:
        for batch in self.loader:
            images, targets = self._split(batch)
            yield self._convert(images), move_targets(targets, self.device)

    def _cuda_pass(self) -> Generator[tuple[torch.Tensor, torch.Tensor], None, None]:  # pragma: no cover - needs CUDA
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=self.device)
        stream = self._stream
        batches = iter(self.loader)

        def preload() -> tuple[torch.Tensor, torch.Tensor] | None:
            try:
                images, targets = self._split(next(batches))
            except StopIteration:
                return None
            with torch.cuda.stream(stream):
                return self._convert(images), move_targets(targets, self.device)

        ahead = preload()
        while ahead is not None:
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(stream)
            images, targets = ahead
            # Made on the side stream, used on the consumer's: without this the
            # allocator could hand their memory to the next copy too early.
            images.record_stream(consumer)
            if isinstance(targets, torch.Tensor):
                targets.record_stream(consumer)
            ahead = preload()
            yield images, targets
