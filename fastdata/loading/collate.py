"""uint8 batch assembly: each sample is copied once, straight into the batch.

PyTorch's ``default_collate`` stacks float tensors that ``ToTensor`` already
made (a copy and a 4x larger batch); here images stay uint8 and float
conversion plus normalisation happen later on the GPU
(:class:`fastdata.loading.prefetch.CUDAPrefetcher`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

from ..decode.batch import copy_into as _copy_into
from ..errors import ConfigError

__all__ = ["FastCollate", "fast_collate"]


class ImageSource:
    """One image as a NumPy view plus its layout; only PIL input is copied here."""

    __slots__ = ("array", "chw")

    def __init__(self, array: np.ndarray, chw: bool) -> None:
        self.array = array  # HxW (grayscale), HxWxC or, when chw, CxHxW
        self.chw = chw

    @property
    def shape(self) -> tuple[int, int, int]:
        """(C, H, W) of the output, with grayscale broadcast to 3 channels."""
        a = self.array
        if a.ndim == 2:
            return (3, a.shape[0], a.shape[1])
        return (a.shape[0], a.shape[1], a.shape[2]) if self.chw else (a.shape[2], a.shape[0], a.shape[1])


def image_source(image: Any, position: int) -> ImageSource:
    """``image`` (a uint8 array, CHW tensor or PIL image) as an :class:`ImageSource`.

    Raises:
        ConfigError: naming sample ``position``: not on the CPU, another type
            or dtype, or a shape that is not an image.
    """
    chw = False
    if isinstance(image, torch.Tensor):
        if image.device.type != "cpu":
            raise ConfigError(f"fast_collate: sample {position} is on {image.device}; datasets should return CPU images")
        array, chw = image.detach().numpy(), image.ndim == 3
    elif isinstance(image, np.ndarray):
        array = image
    elif hasattr(image, "mode") and hasattr(image, "getbands"):  # PIL.Image without importing PIL
        if image.mode not in ("L", "RGB", "RGBA"):
            image = image.convert("RGB")
        # Pillow stores RGB as 4-byte pixels, so this repacking copy cannot be avoided.
        array = np.asarray(image)
    else:
        raise ConfigError(
            f"fast_collate: sample {position} has image type {type(image).__name__}; "
            "expected an HWC uint8 numpy array, a CHW uint8 tensor or a PIL image"
        )
    if array.dtype != np.uint8:
        raise ConfigError(
            f"fast_collate: sample {position} has dtype {array.dtype}; it collates uint8 images only "
            "(drop ToTensor/Normalize from the transform: the prefetcher converts and normalises on the GPU)"
        )
    if array.ndim not in (2, 3):
        raise ConfigError(f"fast_collate: sample {position} has shape {tuple(array.shape)}; expected HxW, HxWxC or CxHxW")
    if array.ndim == 3 and array.shape[0 if chw else 2] == 1:  # HxWx1 or 1xHxW: grayscale
        array, chw = (array[0] if chw else array[:, :, 0]), False
    return ImageSource(array, chw)


def copy_image(out: torch.Tensor, dest_hwc: np.ndarray, i: int, src: ImageSource, channels_last: bool) -> None:
    """``src`` into slot ``i`` of the batch ``out`` (``dest_hwc``: the same memory as an NHWC NumPy view)."""
    # Fastest of the routes measured for each (input, output) layout pair on
    # one core: plain memcpy where layouts agree, else one strided pass. An
    # RGB array into an NCHW batch (the usual case) is a transpose; the
    # compiled decoder's SIMD copy does it with the GIL released (a whole
    # 32 x 224 x 224 collate: 84 us an image against NumPy's 143, busy machine).
    a = src.array
    if _copy_into is not None and a.ndim == 3 and not src.chw and a.shape[2] == 3 and a.strides[1:] == (3, 1):
        _copy_into(dest_hwc, i, a)
    elif a.ndim == 2:
        if channels_last:
            for c in range(dest_hwc.shape[3]):  # a broadcast copy is 5x slower here
                dest_hwc[i, :, :, c] = a
        else:
            np.copyto(dest_hwc[i].transpose(2, 0, 1), a[None])
    elif src.chw:
        out[i].copy_(torch.from_numpy(a))
    else:
        np.copyto(dest_hwc[i], a)


def _mismatch(shapes: list[tuple[int, int, int]]) -> ConfigError:
    groups: dict[tuple[int, int, int], list[int]] = {}
    for position, shape in enumerate(shapes):
        groups.setdefault(shape, []).append(position)
    parts = []
    for (c, h, w), positions in groups.items():
        shown = ", ".join(map(str, positions[:8])) + (", ..." if len(positions) > 8 else "")
        parts.append(f"{c}x{h}x{w} (CxHxW) at sample {shown}")
    return ConfigError(
        "fast_collate needs every image of a batch to have one size, got " + "; ".join(parts)
        + " (add a resize/crop transform that gives one output size)"
    )


def empty_batch(shape: tuple[int, int, int, int], memory_format: torch.memory_format, pin: bool) -> torch.Tensor:
    """An uninitialised uint8 ``(N, C, H, W)`` batch: in shared memory in a
    worker process, else pinned when ``pin`` and CUDA is there."""
    n, c, h, w = shape
    stride = (c * h * w, 1, w * c, c) if memory_format == torch.channels_last else (c * h * w, h * w, w, 1)
    if get_worker_info() is not None:
        # Allocate in shared memory as default_collate does, so sending the
        # batch to the main process does not copy it again.
        storage = torch.UntypedStorage._new_shared(n * c * h * w)
        return torch.empty(0, dtype=torch.uint8).set_(storage, 0, shape, stride)
    if pin and torch.cuda.is_available():
        return torch.empty_strided(shape, stride, dtype=torch.uint8, pin_memory=True)
    return torch.empty_strided(shape, stride, dtype=torch.uint8)


def _is_integral(target: Any) -> bool:
    if isinstance(target, (bool, int, np.integer)):
        return True
    if isinstance(target, torch.Tensor) and target.ndim == 0:
        return not target.is_floating_point() and not target.is_complex()
    return isinstance(target, np.ndarray) and target.ndim == 0 and np.issubdtype(target.dtype, np.integer)


def collate_targets(targets: Sequence[Any]) -> torch.Tensor:
    """Targets as one tensor: int64 ``(N,)`` for class indices, else float32.

    Floats give ``(N,)`` float32; label vectors (lists, arrays, tensors of
    one shape) give ``(N, K...)`` float32. Raises ConfigError on mixed shapes.
    """
    if all(_is_integral(t) for t in targets):
        return torch.tensor([int(t) for t in targets], dtype=torch.int64)
    arrays = []
    for t in targets:
        a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        arrays.append(a)
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        detail = ", ".join(f"sample {i}: {a.shape}" for i, a in enumerate(arrays[:8]))
        raise ConfigError(f"fast_collate: targets of one batch must share a shape, got {detail}")
    try:
        return torch.from_numpy(np.stack(arrays).astype(np.float32, copy=False))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"fast_collate: targets must be numbers or numeric vectors ({exc})") from exc


class FastCollate:
    """``collate_fn`` turning ``[(image, target), ...]`` into ``(images, targets)``.

    Images: HWC uint8 NumPy arrays, CHW uint8 tensors or PIL images (a 2-D,
    HxWx1 or 1xHxW image is broadcast to 3 channels). Output ``images`` is a
    uint8 ``(N, C, H, W)`` tensor in ``memory_format`` (``channels_last``
    makes the HWC copy a plain memcpy); ``targets`` comes from
    :func:`collate_targets`. In a DataLoader worker the batch is allocated
    in shared memory; in the main process with ``pin_memory=True`` and CUDA
    available it is allocated pinned. Each sample is copied exactly once.

    Raises:
        ConfigError: images of different sizes (naming sizes and positions),
            non-uint8 images, an empty batch or items that are not pairs.
    """

    def __init__(self, *, memory_format: torch.memory_format = torch.contiguous_format, pin_memory: bool = False) -> None:
        if memory_format not in (torch.contiguous_format, torch.channels_last):
            raise ConfigError(f"memory_format must be torch.contiguous_format or torch.channels_last, got {memory_format}")
        self.memory_format = memory_format
        self.pin_memory = bool(pin_memory)

    def __repr__(self) -> str:
        return f"FastCollate(memory_format={self.memory_format}, pin_memory={self.pin_memory})"

    def __call__(self, batch: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
        if len(batch) == 0:
            raise ConfigError("fast_collate got an empty batch")
        sources, targets = [], []
        for position, item in enumerate(batch):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise ConfigError(f"fast_collate: sample {position} is a {type(item).__name__}, expected an (image, target) pair")
            sources.append(image_source(item[0], position))
            targets.append(item[1])
        shapes = [s.shape for s in sources]
        if len(set(shapes)) != 1:
            raise _mismatch(shapes)
        channels_last = self.memory_format == torch.channels_last
        out = empty_batch((len(sources), *shapes[0]), self.memory_format, self.pin_memory)
        dest_hwc = out.permute(0, 2, 3, 1).numpy()  # a view of the same memory
        for i, src in enumerate(sources):
            copy_image(out, dest_hwc, i, src, channels_last)
        return out, collate_targets(targets)


fast_collate = FastCollate()
"""The default :class:`FastCollate`: contiguous NCHW, no pinning."""
