"""``make_loader(decode=...)``: the spellings, and the GPU decode's settings.

The settings are plain data and live here, beside :class:`Workers` and
:class:`Prefetch`; the executor that runs them is in :mod:`fastdata.gpu`,
which registers itself (:mod:`.executors`), so this package never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union

from ..errors import ConfigError

__all__ = ["DecodeChoice", "GPUDecode"]

_MODES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class GPUDecode:
    """Options of the GPU decode (``make_loader(decode=GPUDecode(...))``;
    ``decode="cuda"`` is ``GPUDecode()``).

    Args:
        mode: ``"cuda"`` (the GPU decode; on a machine without CUDA the same
            batch code runs on the CPU after a warning) or ``"auto"`` (the GPU
            decode when a CUDA device, a GPU decoder and a supported transform
            are there, else the CPU path).
        backend: ``"auto"`` (torchvision's nvJPEG, then nvImageCodec),
            ``"torchvision"``, ``"nvimgcodec"``, ``"cpu"`` or a decoder object
            (see :mod:`fastdata.gpu.backends`).
        budget: elements of gathered source pixels per resampling step
            (bounds the memory a batch of very large photos takes).
    """

    mode: Literal["cuda", "auto"] = "cuda"
    backend: Any = "auto"  # a name, or an object of the fastdata.gpu.backends.Decoder protocol
    budget: int = 1 << 28

    def __post_init__(self) -> None:
        if self.mode not in ("cuda", "auto"):
            raise ConfigError(f"GPUDecode(mode=...) must be 'cuda' or 'auto', got {self.mode!r}")
        if self.budget < 1:
            raise ConfigError(f"GPUDecode(budget=...) must be >= 1, got {self.budget}")

    @classmethod
    def of(cls, value: DecodeChoice) -> GPUDecode | None:
        """``make_loader``'s ``decode`` argument as settings; None for ``"cpu"``."""
        if isinstance(value, GPUDecode):
            return value
        if value not in _MODES:
            raise ConfigError(f"decode must be one of {_MODES} or fastdata.gpu.GPUDecode(...), got {value!r}")
        return None if value == "cpu" else cls(mode=value)  # type: ignore[arg-type]


DecodeChoice = Union[Literal["cpu", "cuda", "auto"], GPUDecode]
