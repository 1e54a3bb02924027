"""NVIDIA nvImageCodec as the GPU decoder (``GPUDecode(backend="nvimgcodec")``).

What the first GPU run's profile asked of it (issue 37), against
nvImageCodec 0.9's Python API (``nvidia.nvimgcodec``):

* **explicit backends, the hardware engine first**: ``Decoder(backends=[
  Backend(BackendKind.HW_GPU_ONLY, load_hint=hw_load), Backend(BackendKind.GPU_ONLY)])``;
  what the engine refuses (progressive JPEGs, odd subsamplings) is decoded
  with CUDA. No CPU backend: the CPU cores are the workers' (the hybrid's CPU share).
* **pre-allocated** for the batch and the photos' typical size
  (``nvjpeg_hw_decoder:preallocate_batch_size``, ``..._width_hint``,
  ``..._height_hint`` options; the hints are the median size of the first
  batch a thread decodes, unless ``size_hint`` is given).
* **per-image ROI** from the plan: each image's window (the source pixels
  the resampling reads) as ``code_stream.get_sub_code_stream(region=Region(...))``.
  With nvJPEG < 13.2 the hardware decoder refuses a region of a JPEG with
  subsampled chroma unless ``enable_roi_fancy_upsampling=1`` (its warning:
  the region's 1-pixel edge may differ), and every such image went to CUDA
  decode instead: half the rate in the first run on 2026-11-27 (H200: 4,296
  img/s against torchvision's 7,983). A window's edge pixels lie at its filter's support,
  where the weights are 0 (or at the image's own edge, which the full decode
  has too), so that edge never reaches the output: the option is set.
* **one decoder per thread, on ``threads`` threads**: the batch is cut into
  that many parts, each decoded by its own thread's decoder on its own CUDA
  stream, so the per-image waits inside nvJPEG overlap; the caller's stream
  then waits for each part's event.
* the encoded bytes are copied to the device by the decoder
  (``copies_encoded``): the loader pins them.

The hardware engine writes without waiting for earlier work on the
caller's stream (H100), so ``guard`` synchronises that stream first.
nvImageCodec is imported on first use; ``codec=`` takes a module object
with the same names (the tests' stand-in).
"""

from __future__ import annotations

import importlib
import os
import statistics
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from ..errors import ConfigError, MissingDependencyError
from .samples import Accepts

__all__ = ["NvImageCodecDecoder"]

INSTALL = ("pip install 'fastdata[gpu]' (nvidia-nvimgcodec-cu13[nvjpeg]; nvidia-nvimgcodec-cu12 for CUDA 12), "
           "or use backend='torchvision'")


def _module(codec: Any) -> Any:
    if codec is not None:
        return codec
    try:
        return importlib.import_module("nvidia.nvimgcodec")
    except ImportError as exc:
        raise MissingDependencyError(f"the nvimgcodec decoder needs nvImageCodec: {INSTALL} ({exc})") from exc


class NvImageCodecDecoder:
    """Batched decode with nvImageCodec (see the module docstring).

    Args:
        guard: synchronise the caller's stream before each call.
        cpu: decode with nvImageCodec's CPU backend into host memory (checks
            on machines without a GPU; not a fast path).
        threads: decoder threads (each with its own decoder and stream), >= 1.
        hw_load: the hardware engine's ``load_hint``: the fraction of each
            part it takes (the rest: CUDA decode).
        roi: decode each image's window only (the stage passes ``regions``).
        batch_hint: images per call the decoders pre-allocate for (the
            loader's batch size; each thread takes its part).
        size_hint: ``(height, width)`` to pre-allocate for; None: the median
            of the first batch a thread decodes.
        codec: the ``nvidia.nvimgcodec`` module or a stand-in (None: import it).

    Raises:
        MissingDependencyError: nvImageCodec is not installed.
        ConfigError: a bad ``threads`` or ``hw_load``.
    """

    name, layout = "nvimgcodec", "hwc"
    accepts = Accepts(progressive=True)
    copies_encoded = True

    def __init__(self, guard: bool = True, cpu: bool = False, *, threads: int = 2, hw_load: float = 1.0,
                 roi: bool = True, batch_hint: int = 256, size_hint: tuple[int, int] | None = None,
                 codec: Any = None) -> None:
        if threads < 1:
            raise ConfigError(f"NvImageCodecDecoder(threads=...) must be >= 1, got {threads}")
        if not 0.0 <= hw_load <= 1.0:
            raise ConfigError(f"NvImageCodecDecoder(hw_load=...) must be in 0..1, got {hw_load}")
        self._codec = codec = _module(codec)
        self.guard, self.cpu, self.threads, self.hw_load, self.roi = guard, cpu, int(threads), float(hw_load), roi
        self.batch_hint, self.size_hint = int(batch_hint), size_hint
        self.params = codec.DecodeParams(color_spec=codec.ColorSpec.SRGB, apply_exif_orientation=False)
        self._local = threading.local()  # this thread's decoder (and CUDA stream), by device index
        self._pools: list[ThreadPoolExecutor] = []  # one thread each: part i always runs on thread i
        self._lock = threading.Lock()
        _LIVE.add(self)

    def __repr__(self) -> str:
        return (f"NvImageCodecDecoder(threads={self.threads}, hw_load={self.hw_load}, roi={self.roi}"
                + (", cpu=True" if self.cpu else "") + ")")

    def backends(self) -> list[Any]:
        """The nvImageCodec backends, in the order they are tried."""
        codec, kind = self._codec, self._codec.BackendKind
        if self.cpu:
            return [codec.Backend(kind.CPU_ONLY)]
        return [codec.Backend(kind.HW_GPU_ONLY, load_hint=self.hw_load), codec.Backend(kind.GPU_ONLY)]

    def options(self, part: int, size: tuple[int, int]) -> str:
        """The decoder options string: the hardware decoder pre-allocated for
        ``part`` images of ``size`` ``(height, width)``."""
        height, width = size
        options = [f"preallocate_batch_size={max(1, part)}", f"preallocate_width_hint={max(1, width)}",
                   f"preallocate_height_hint={max(1, height)}"] + (["enable_roi_fancy_upsampling=1"] if self.roi else [])
        return " ".join(f"nvjpeg_hw_decoder:{o}" for o in options)

    def _decoder(self, device: torch.device, streams: list[Any], sizes: list[tuple[int, int]] | None) -> Any:
        """This thread's decoder for ``device``, made on first use with the
        pre-allocation of the batch it first sees (``sizes``, or the streams' own)."""
        codec, local = self._codec, self._local
        decoders = local.__dict__.setdefault("decoders", {})
        index = -1 if self.cpu or device.type != "cuda" else int(device.index or 0)
        if index not in decoders:
            size = self.size_hint or _median(sizes if sizes is not None else _sizes(streams))
            part = -(-self.batch_hint // self.threads)
            device_id = codec.NVIMGCODEC_DEVICE_CPU_ONLY if self.cpu else index
            decoders[index] = codec.Decoder(device_id=device_id, backends=self.backends(),
                                            options="" if self.cpu else self.options(part, size))
        return decoders[index]

    def _stream(self, data: torch.Tensor, region: tuple[int, int, int, int] | None) -> Any:
        """The code stream of one image (its window with ``region``), or None where nvImageCodec refuses it."""
        codec = self._codec
        try:
            stream = codec.CodeStream(data.numpy())
            if region is None:
                return stream
            top, left, rows, cols = (int(v) for v in region)
            return stream.get_sub_code_stream(region=codec.Region(top, left, top + rows, left + cols))
        except Exception:  # noqa: BLE001 - nvImageCodec's parse errors are RuntimeErrors; the image goes to the CPU
            return None

    def _part(self, streams: list[Any], sizes: list[tuple[int, int]] | None, device: torch.device) -> tuple[list[Any], Any]:
        """One thread's part: decoded on this thread's decoder, and the event after it (CUDA)."""
        decoder = self._decoder(device, streams, sizes)
        if self.cpu or device.type != "cuda":
            return decoder.decode(streams, params=self.params), None
        with torch.cuda.device(device):  # pragma: no cover - needs CUDA from here on
            cuda_streams = self._local.__dict__.setdefault("streams", {})
            if device not in cuda_streams:
                cuda_streams[device] = torch.cuda.Stream(device=device)
            stream = cuda_streams[device]
            images = decoder.decode(streams, params=self.params, cuda_stream=stream.cuda_stream)
            done = torch.cuda.Event()
            done.record(stream)
            return images, done

    def _executors(self) -> list[ThreadPoolExecutor]:
        with self._lock:
            if not self._pools:
                self._pools = [ThreadPoolExecutor(1, thread_name_prefix=f"fastdata-nvimgcodec-{i}")
                               for i in range(self.threads)]
            return self._pools

    def close(self) -> None:
        """Stop the decoder threads; their decoders go with them (made again on
        the next call). Also done before every fork of this process: a worker
        forked while nvImageCodec's threads lived died at once with SIGSEGV
        in the first run on 2026-11-27 (``test_prefetch_to_cuda_equals_the_cpu_path``)."""
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            pool.shutdown(wait=True)

    def decode(self, encoded: list[torch.Tensor], device: torch.device,
               regions: list[tuple[int, int, int, int]] | None = None) -> list[torch.Tensor | None]:
        """One image per input, None where nvImageCodec could not decode it;
        with ``regions`` (``(top, left, rows, cols)`` each, and ``roi``) only those pixels."""
        device = torch.device(device)
        windows = regions if regions is not None and self.roi else None
        every = [self._stream(t, windows[i] if windows is not None else None) for i, t in enumerate(encoded)]
        kept = [i for i, s in enumerate(every) if s is not None]
        streams = [every[i] for i in kept]
        sizes = [(int(windows[i][2]), int(windows[i][3])) for i in kept] if windows is not None else None
        if device.type == "cuda" and self.guard and not self.cpu:  # pragma: no cover - needs CUDA
            torch.cuda.current_stream(device).synchronize()
        step = -(-len(streams) // self.threads) if streams else 1
        cuts = [(a, min(a + step, len(streams))) for a in range(0, len(streams), step)]
        pools = self._executors() if cuts else []
        parts = [f.result() for f in [pool.submit(self._part, streams[a:b], sizes[a:b] if sizes else None, device)
                                      for pool, (a, b) in zip(pools, cuts)]]
        decoded: list[Any] = []
        for part, done in parts:
            if done is not None:  # pragma: no cover - needs CUDA
                torch.cuda.current_stream(device).wait_event(done)
            decoded.extend(part)
        images: list[torch.Tensor | None] = [None] * len(encoded)
        for i, im in zip(kept, decoded):
            images[i] = None if im is None else _tensor(im, device, self.cpu)
        return images


_LIVE: weakref.WeakSet[NvImageCodecDecoder] = weakref.WeakSet()


def _close_all() -> None:
    for decoder in list(_LIVE):
        decoder.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_close_all)


def _sizes(streams: list[Any]) -> list[tuple[int, int]]:
    out = []
    for stream in streams:
        try:
            out.append((int(stream.height), int(stream.width)))
        except Exception:  # noqa: BLE001 - a header nvImageCodec cannot read: no hint from it
            continue
    return out


def _median(sizes: list[tuple[int, int]]) -> tuple[int, int]:
    """The median ``(height, width)``; 224 x 224 with nothing to go on."""
    if not sizes:
        return 224, 224
    return int(statistics.median(h for h, _ in sizes)), int(statistics.median(w for _, w in sizes))


def _tensor(image: Any, device: torch.device, host: bool) -> torch.Tensor:
    if device.type == "cuda" and not host:  # pragma: no cover - needs CUDA
        return torch.as_tensor(image, device=device)
    return torch.from_numpy(np.ascontiguousarray(np.asarray(image.cpu()))).to(device)
