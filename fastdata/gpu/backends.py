"""JPEG decoders for ``decode="cuda"`` behind one small interface.

A backend decodes a list of encoded JPEGs (1-D uint8 CPU tensors, views of
the batch's one buffer) in one call and returns one uint8 image tensor per
input, in its ``layout`` (``"chw"`` or ``"hwc"``), on its device; it raises
when any input fails (the caller then finds the culprits one at a time).
``accepts`` says which images the workers may send it at all.

* ``torchvision``: ``torchvision.io.decode_jpeg(list, device="cuda")``,
  batched nvJPEG (torchvision >= 0.20; A100/H100 use the hardware engine);
  ``"auto"`` tries it first (measured: :data:`BACKENDS`).
* ``nvimgcodec``: NVIDIA nvImageCodec (``pip install nvidia-nvimgcodec-cu12``
  or ``-cu13``): the hardware engine first, pre-allocated, per-image ROI,
  one decoder per thread on two threads (:mod:`.nvimgcodec`).
* ``cpu``: fastdata's own CPU decoder, one image after another: the stand-in
  that lets the same batch code run, and be tested, without a GPU.

A third GPU decoder (TorchCodec's ``decode_jpeg``, which replaces
torchvision's from 0.29) is one more class with ``decode`` and an entry in
:data:`BACKENDS`.
"""

from __future__ import annotations

import importlib
from typing import Protocol

import torch

from ..decode import decode
from ..errors import ConfigError, MissingDependencyError
from .nvimgcodec import NvImageCodecDecoder
from .probe import probe, probe_roi
from .samples import Accepts

__all__ = ["BACKENDS", "CPUDecoder", "Decoder", "NvImageCodecDecoder", "TorchvisionDecoder", "cuda_device", "gpu_backend"]


class Decoder(Protocol):
    """``decode`` returns one entry per input: its image, or None for an
    input it could not decode; it may instead raise when the whole call fails
    (torchvision does for one bad image), and the caller then splits the batch.

    Two optional attributes (read with ``getattr``, False when absent):
    ``roi`` -- ``decode`` takes ``regions=[(top, left, rows, cols), ...]`` and
    returns those pixels only; ``copies_encoded`` -- it copies the encoded
    bytes to the device itself, so the loader pins them."""

    name: str
    layout: str
    accepts: Accepts

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor | None]: ...


def cuda_device(device: torch.device | str) -> torch.device:
    """``device`` with its index: ``"cuda"`` is the current device, resolved
    once, so that every rank decodes on its own GPU and torchvision, which
    rebuilds its global decoder whenever the device it is given differs
    (``"cuda"`` against ``"cuda:0"``), always gets the same one."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


class TorchvisionDecoder:
    """Batched nvJPEG through torchvision.

    torchvision decodes on a private CUDA stream into memory it allocates on
    the caller's stream: memory that the caller's stream freed but whose
    last readers are still queued there could be overwritten (silent
    corruption was reported on H100). So with ``guard`` the caller's stream
    is synchronised before each call; the stage calls from its own thread,
    so this never blocks the training loop. Progressive JPEGs would take
    nvJPEG's one-at-a-time path, so the workers keep them on the CPU.
    """

    name, layout = "torchvision", "chw"
    accepts = Accepts(progressive=False)
    copies_encoded = True  # nvJPEG's host-to-device copy of the bitstream (the first GPU run's profile)

    def __init__(self, guard: bool = True) -> None:
        try:
            io = importlib.import_module("torchvision.io")
        except ImportError as exc:
            raise MissingDependencyError(f"the torchvision decoder needs torchvision >= 0.20 ({exc})") from exc
        self._decode, self._mode, self.guard = io.decode_jpeg, io.ImageReadMode.RGB, guard

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor | None]:  # pragma: no cover - CUDA
        if self.guard:
            torch.cuda.current_stream(device).synchronize()
        return list(self._decode(encoded, mode=self._mode, device=device))


class CPUDecoder:
    """fastdata's CPU decoder (libjpeg-turbo or Pillow), one image after
    another, in ``layout``; it takes what the torchvision backend takes, so
    the workers route exactly as they would for the GPU. With ``roi`` it
    returns each image's region only (the stage's ROI path, checked without a GPU)."""

    name = "cpu"
    accepts = TorchvisionDecoder.accepts

    def __init__(self, layout: str = "chw", backend: str = "auto", roi: bool = False) -> None:
        if layout not in ("chw", "hwc"):
            raise ConfigError(f"layout must be 'chw' or 'hwc', got {layout!r}")
        self.layout, self.backend, self.roi = layout, backend, roi

    def decode(self, encoded: list[torch.Tensor], device: torch.device,
               regions: list[tuple[int, int, int, int]] | None = None) -> list[torch.Tensor | None]:
        out = []
        for i, data in enumerate(encoded):
            pixels = torch.from_numpy(decode(data.numpy().tobytes(), backend=self.backend))
            if regions is not None:
                top, left, rows, cols = regions[i]
                pixels = pixels[top: top + rows, left: left + cols]
            out.append(pixels.permute(2, 0, 1).contiguous() if self.layout == "chw" else pixels.contiguous())
        return [t.to(device) for t in out]


BACKENDS: dict[str, type] = {"torchvision": TorchvisionDecoder, "nvimgcodec": NvImageCodecDecoder}
"""GPU decoders by name, in the order ``backend="auto"`` tries them. torchvision's
batched nvJPEG first: on an H200 (the rerun of 2026-11-27) it decoded 256 photos in
16.6 ms (15,416 img/s) against nvImageCodec's best 23.4 ms (whole images, one
thread; ROI 26.3 ms; 2 and 4 threads slower still), and fed the loader's
decode-only pipeline at 12,846 img/s against 7,504
(``benchmarks/results/gpu_decoders-2026-11-27.json``, ``gpu_check-2026-11-27.json``);
the first GPU run (H100) had the same order. nvImageCodec where torchvision
is not installed or fails its proof."""


def gpu_backend(choice: str | Decoder, device: torch.device | None = None) -> tuple[Decoder, str]:
    """The decoder ``choice`` names, or ``choice`` itself when it is a decoder
    object, and why it was chosen (one line, for ``repr(loader)``).

    ``"auto"`` takes the first of :data:`BACKENDS` that imports AND decodes a
    tiny JPEG right on ``device`` (:func:`~fastdata.gpu.probe.probe`): a
    torchvision built without nvJPEG imports, then fails every batch. A
    decoder with ``roi`` must also decode a region of it right
    (:func:`~fastdata.gpu.probe.probe_roi`), or it decodes whole images.

    Raises:
        MissingDependencyError: no GPU decoder works here, or the named one is not installed.
        ConfigError: an unknown name.
    """
    if not isinstance(choice, str):
        return choice, "the decoder object passed"
    if choice == "cpu":
        return CPUDecoder(), "backend='cpu'"
    if choice != "auto":
        if choice not in BACKENDS:
            raise ConfigError(f"decode backend must be 'auto', 'cpu' or one of {sorted(BACKENDS)}, got {choice!r}")
        return BACKENDS[choice](), f"backend={choice!r}"
    reasons = []
    for name, cls in BACKENDS.items():
        try:
            decoder = cls()
        except MissingDependencyError:
            reasons.append(f"{name}: not installed")
            continue
        failed = probe(decoder, device) if device is not None else None
        if failed is None:
            if getattr(decoder, "roi", False) and device is not None:
                roi_failed = probe_roi(decoder, device)
                if roi_failed is not None:
                    decoder.roi = False
                    reasons.append(f"{name}: whole images (its region decode {roi_failed})")
            tried = f" ({'; '.join(reasons)})" if reasons else ""
            return decoder, f"auto: the first that decoded a test JPEG on {device}{tried}" if device else "auto"
        reasons.append(f"{name}: {failed}")
    raise MissingDependencyError(
        "decode='cuda' found no GPU JPEG decoder that works here (" + "; ".join(reasons) + "): install torchvision "
        "with nvJPEG or pip install 'fastdata[gpu]', or use decode='cpu'"
    )
