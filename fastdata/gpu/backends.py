"""JPEG decoders for ``decode="cuda"`` behind one small interface.

A backend decodes a list of encoded JPEGs (1-D uint8 CPU tensors, views of
the batch's one buffer) in one call and returns one uint8 image tensor per
input, in its ``layout`` (``"chw"`` or ``"hwc"``), on its device; it raises
when any input fails (the caller then finds the culprits one at a time).
``accepts`` says which images the workers may send it at all.

* ``torchvision``: ``torchvision.io.decode_jpeg(list, device="cuda")``,
  batched nvJPEG (torchvision >= 0.20; A100/H100 use the hardware engine).
* ``nvimgcodec``: NVIDIA nvImageCodec (``pip install nvidia-nvimgcodec-cu12``
  or ``-cu13``), batched, on the caller's stream.
* ``cpu``: fastdata's own CPU decoder, one image after another: the stand-in
  that lets the same batch code run, and be tested, without a GPU.

A third GPU decoder (TorchCodec's ``decode_jpeg``, which replaces
torchvision's from 0.29) is one more class with ``decode`` and an entry in
:data:`BACKENDS`.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

import torch

from ..decode import decode
from ..errors import ConfigError, MissingDependencyError
from .plan import Accepts

__all__ = ["BACKENDS", "CPUDecoder", "Decoder", "NvImageCodecDecoder", "TorchvisionDecoder", "gpu_backend"]


class Decoder(Protocol):
    name: str
    layout: str
    accepts: Accepts

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]: ...


class TorchvisionDecoder:
    """Batched nvJPEG through torchvision.

    torchvision decodes on a private CUDA stream into memory it allocates on
    the caller's stream, and orders only its results after the call: memory
    the caller's stream freed but had not finished with could be overwritten
    (silent corruption was reported on H100). So the caller's stream is
    synchronised before each call. Progressive JPEGs would take nvJPEG's
    one-at-a-time path, so the workers keep them on the CPU.
    """

    name, layout = "torchvision", "chw"
    accepts = Accepts(progressive=False)

    def __init__(self) -> None:
        try:
            io = importlib.import_module("torchvision.io")
        except ImportError as exc:
            raise MissingDependencyError(f"the torchvision decoder needs torchvision >= 0.20 ({exc})") from exc
        self._decode, self._mode = io.decode_jpeg, io.ImageReadMode.RGB

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:  # pragma: no cover - CUDA
        torch.cuda.current_stream(device).synchronize()
        return list(self._decode(encoded, mode=self._mode, device=device))


class NvImageCodecDecoder:
    """Batched decode with NVIDIA nvImageCodec, ordered on the caller's stream."""

    name, layout = "nvimgcodec", "hwc"
    accepts = Accepts(progressive=True)

    def __init__(self) -> None:
        try:
            self._codec = importlib.import_module("nvidia.nvimgcodec")
        except ImportError as exc:
            raise MissingDependencyError(
                f"the nvimgcodec decoder needs pip install 'fastdata[gpu]' (nvidia-nvimgcodec-cu13; -cu12 for CUDA 12) ({exc})"
            ) from exc
        self._decoders: dict[int, Any] = {}

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:  # pragma: no cover - CUDA
        codec, index = self._codec, device.index or 0
        if index not in self._decoders:
            self._decoders[index] = codec.Decoder(device_id=index)
        params = codec.DecodeParams(color_spec=codec.ColorSpec.RGB, apply_exif_orientation=False)
        stream = torch.cuda.current_stream(device)
        images = self._decoders[index].decode([t.numpy() for t in encoded], params=params, cuda_stream=stream.cuda_stream)
        if any(image is None for image in images):
            raise RuntimeError("nvImageCodec could not decode every image of the batch")
        return [torch.as_tensor(image, device=device) for image in images]


class CPUDecoder:
    """fastdata's CPU decoder (libjpeg-turbo or Pillow), one image after
    another, in ``layout``; it takes what the torchvision backend takes, so
    the workers route exactly as they would for the GPU."""

    name = "cpu"
    accepts = TorchvisionDecoder.accepts

    def __init__(self, layout: str = "chw", backend: str = "auto") -> None:
        if layout not in ("chw", "hwc"):
            raise ConfigError(f"layout must be 'chw' or 'hwc', got {layout!r}")
        self.layout, self.backend = layout, backend

    def decode(self, encoded: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
        out = []
        for data in encoded:
            pixels = torch.from_numpy(decode(data.numpy().tobytes(), backend=self.backend))
            out.append(pixels.permute(2, 0, 1).contiguous() if self.layout == "chw" else pixels)
        return [t.to(device) for t in out]


BACKENDS: dict[str, type] = {"torchvision": TorchvisionDecoder, "nvimgcodec": NvImageCodecDecoder}
"""GPU decoders by name, in the order ``backend="auto"`` tries them."""


def gpu_backend(choice: str | Decoder) -> Decoder:
    """The decoder ``choice`` names (``"auto"``: the first of :data:`BACKENDS`
    that imports), or ``choice`` itself when it is a decoder object.

    Raises:
        MissingDependencyError: no GPU decoder is installed, or the named one is not.
        ConfigError: an unknown name.
    """
    if not isinstance(choice, str):
        return choice
    if choice == "cpu":
        return CPUDecoder()
    if choice != "auto":
        if choice not in BACKENDS:
            raise ConfigError(f"decode backend must be 'auto', 'cpu' or one of {sorted(BACKENDS)}, got {choice!r}")
        return BACKENDS[choice]()
    reasons = []
    for cls in BACKENDS.values():
        try:
            return cls()
        except MissingDependencyError as exc:
            reasons.append(str(exc))
    raise MissingDependencyError("decode='cuda' found no GPU JPEG decoder: " + "; ".join(reasons))

