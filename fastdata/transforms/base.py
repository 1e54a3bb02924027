"""What every fastdata transform shares: accepting the three input kinds and
returning HWC numpy or CHW torch uint8."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..decode import EncodedImage, ImageInfo, decode_view, read_info
from ..decode.pillow_image import to_rgb_array

OUTPUTS = ("numpy", "tensor")


class Source:
    """One input image: an :class:`EncodedImage` (decoded lazily, only the
    region asked for), an HWC uint8 ndarray, or a PIL image.

    ``height``/``width`` are the upright size (EXIF orientation applied for
    encoded input; arrays and PIL images are taken as they are).
    """

    __slots__ = ("array", "backend", "encoded", "height", "info", "width")

    def __init__(self, image: Any, backend: str = "auto") -> None:
        self.backend = backend
        self.encoded: EncodedImage | None = None
        self.info: ImageInfo | None = None
        self.array: np.ndarray | None = None
        if isinstance(image, EncodedImage):
            self.encoded = image
            self.info = read_info(image.data, name=image.name or None)
            self.height, self.width = self.info.height, self.info.width
            return
        if isinstance(image, np.ndarray):
            self.array = _check_array(image)
        elif _is_pil(image):
            self.array = to_rgb_array(image)
        else:
            raise TypeError(
                f"fastdata transforms take EncodedImage, an HWC uint8 numpy array or a PIL image, "
                f"not {type(image).__name__}"
            )
        self.height, self.width = self.array.shape[:2]

    def region(self, box: tuple[int, int, int, int], min_size: tuple[int, int] | None = None) -> np.ndarray:
        """Pixels of upright ``box = (top, left, height, width)``, maybe a view.

        Encoded JPEGs are decoded at the smallest DCT scale keeping the region
        at least ``min_size``; the result is then smaller than ``box``.
        """
        if self.encoded is None:
            t, l, h, w = box
            return self.array[t : t + h, l : l + w]  # type: ignore[index]
        whole = box == (0, 0, self.height, self.width)
        return decode_view(
            self.encoded.data,
            backend=self.backend,
            min_size=min_size,
            crop=None if whole else box,
            name=self.encoded.name or None,
            info=self.info,
        )

    def full(self) -> np.ndarray:
        return self.region((0, 0, self.height, self.width))


def to_output(arr: np.ndarray, output: str) -> Any:
    """HWC uint8 ndarray -> the requested output (C-contiguous either way)."""
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    if output == "numpy":
        return arr
    import torch

    return torch.from_numpy(arr if arr.flags.writeable else arr.copy()).permute(2, 0, 1).contiguous()


def check_output(output: str) -> str:
    if output not in OUTPUTS:
        raise ValueError(f"output must be 'numpy' (HWC uint8 ndarray) or 'tensor' (CHW uint8 torch tensor), got {output!r}")
    return output


def as_size(size: Any, what: str = "size") -> tuple[int, int]:
    """An int or (height, width) as a positive (height, width) pair."""
    if isinstance(size, (int, np.integer)):
        size = (size, size)
    try:
        h, w = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an int or (height, width), got {size!r}") from None
    if h <= 0 or w <= 0:
        raise ValueError(f"{what} must be positive, got {size!r}")
    return h, w


class Transform:
    """Base of fastdata's transforms: ``apply`` maps a :class:`Source` to HWC
    uint8; ``__call__`` accepts any input kind and converts the output."""

    decode_aware = False
    output = "numpy"
    backend = "auto"

    def apply(self, src: Source) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, image: Any) -> Any:
        src = image if isinstance(image, Source) else Source(image, self.backend)
        return to_output(self.apply(src), self.output)


def _check_array(arr: np.ndarray) -> np.ndarray:
    if arr.dtype != np.uint8:
        raise TypeError(f"expected a uint8 image array, got dtype {arr.dtype} (convert or clip it first)")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 3):
        raise TypeError(f"expected an HWC image array with 1 or 3 channels, got shape {arr.shape}")
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    return arr


def _is_pil(obj: Any) -> bool:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a core dependency
        return False
    return isinstance(obj, Image.Image)
