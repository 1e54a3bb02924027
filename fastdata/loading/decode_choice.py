"""``make_loader(decode=...)``: the spellings, and the GPU decode's settings.

The settings are plain data and live here, beside :class:`Workers` and
:class:`Prefetch`; the executor that runs them is in :mod:`fastdata.gpu`,
which registers itself (:mod:`.executors`), so this package never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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
        cpu_share: the hybrid decode: the fraction of each batch's
            GPU-decodable samples that the workers crop on the CPU with the
            compiled crop decoder while the GPU decodes the rest (both keep
            every sample's crop and flip). A number in 0..1 fixes it;
            ``"auto"`` lets a controller move it each batch towards where
            both sides take the same time, within ``share_bounds``; None
            (the default) is 0 for ``mode="cuda"`` and ``"auto"`` for
            ``mode="auto"``.
        share_bounds: ``(low, high)``: the range a controlled share stays in.
    """

    mode: Literal["cuda", "auto"] = "cuda"
    backend: Any = "auto"  # a name, or an object of the fastdata.gpu.backends.Decoder protocol
    budget: int = 1 << 28
    cpu_share: float | Literal["auto"] | None = None
    share_bounds: tuple[float, float] = (0.05, 0.95)

    def __post_init__(self) -> None:
        if self.mode not in ("cuda", "auto"):
            raise ConfigError(f"GPUDecode(mode=...) must be 'cuda' or 'auto', got {self.mode!r}")
        if self.budget < 1:
            raise ConfigError(f"GPUDecode(budget=...) must be >= 1, got {self.budget}")
        share = self.cpu_share
        if share is not None and share != "auto" and (
                isinstance(share, (bool, str)) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0):
            raise ConfigError(f"GPUDecode(cpu_share=...) must be a number in 0..1, 'auto' or None, got {share!r}")
        lo, hi = self.share_bounds
        if not 0.0 <= lo <= hi <= 1.0:
            raise ConfigError(f"GPUDecode(share_bounds=...) must be (low, high) with 0 <= low <= high <= 1, "
                              f"got {self.share_bounds!r}")

    @property
    def controlled(self) -> bool:
        """Whether a controller moves the CPU share (``"auto"``, the default of ``mode="auto"``)."""
        return self.cpu_share == "auto" or (self.cpu_share is None and self.mode == "auto")

    def starting_share(self) -> float:
        """The CPU share of the first batches (a controlled one starts at
        0.3, a third of the way to an even split, within ``share_bounds``)."""
        if self.controlled:
            lo, hi = self.share_bounds
            return min(hi, max(lo, 0.3))
        return float(self.cpu_share or 0.0)

    @classmethod
    def of(cls, value: DecodeChoice) -> GPUDecode | None:
        """``make_loader``'s ``decode`` argument as settings; None for ``"cpu"``."""
        if isinstance(value, GPUDecode):
            return value
        if value not in _MODES:
            raise ConfigError(f"decode must be one of {_MODES} or fastdata.gpu.GPUDecode(...), got {value!r}")
        return None if value == "cpu" else cls(mode=value)


DecodeChoice = Literal["cpu", "cuda", "auto"] | GPUDecode
