"""What every fastdata transform shares: accepting the three input kinds and
returning HWC numpy or CHW torch uint8."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..decode import EncodedImage, ImageInfo, decode_region, decode_view, read_info
from ..decode.native import decode_resized, note_pure_path, wants_native
from ..decode.pillow_image import to_rgb_array
from ..decode.plan import CropPlan
from ..decode.scaling import snap_box
from .resampling import hflip, resize

OUTPUTS = ("numpy", "tensor")

DCT_MARGIN = 1.5
"""Decode-aware transforms ask the JPEG decoder for at least this many times
the output size before resizing. A DCT-scaled decode is sharper than Pillow's
bilinear (torchvision's antialias) filter, and a final resize by less than
~1.5x does not blur it to match (the measurement: benchmarks/RESULTS.md,
"Figures behind the code's constants")."""


def dct_min_size(size: tuple[int, int]) -> tuple[int, int]:
    """The ``min_size`` a decode-aware transform requests for output ``size``."""
    return math.ceil(size[0] * DCT_MARGIN), math.ceil(size[1] * DCT_MARGIN)


class Source:
    """One input image: an :class:`EncodedImage` (decoded lazily, only the
    region asked for), an HWC uint8 ndarray, or a PIL image.

    ``height``/``width`` are the upright size (EXIF orientation applied for
    encoded input; arrays and PIL images are taken as they are).
    """

    __slots__ = ("array", "backend", "encoded", "height", "info", "native", "width")

    def __init__(self, image: Any, backend: str = "auto") -> None:
        # "native" means the compiled crop decoder; its pure fallback is "auto".
        self.native = wants_native(backend)
        self.backend = "auto" if backend == "native" else backend
        self.encoded: EncodedImage | None = None
        self.info: ImageInfo | None = None
        self.array: np.ndarray | None = None
        if isinstance(image, EncodedImage):
            self.encoded = image
            self.info = read_info(image.data, name=image.name or None)
            self.height, self.width = self.info.height, self.info.width
            if not self.native and backend == "auto":
                note_pure_path()  # once: the extension is missing, and pip hid why
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

    def region(
        self, box: tuple[float, float, float, float], min_size: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """Pixels covering upright ``box = (top, left, height, width)`` (edges may
        be fractional), and the box located in them as floats.

        Encoded JPEGs are decoded at the smallest DCT scale keeping the box at
        least ``min_size``, so the pixels may be smaller than ``box``.
        """
        if self.encoded is None:
            t, l, h, w = box
            y0, x0 = math.floor(t + 1e-9), math.floor(l + 1e-9)
            y1, x1 = math.ceil(t + h - 1e-9), math.ceil(l + w - 1e-9)
            return self.array[y0:y1, x0:x1], (t - y0, l - x0, h, w)  # type: ignore[index]  # set when encoded is not
        whole = tuple(box) == (0, 0, self.height, self.width)
        return decode_region(
            self.encoded.data,
            None if whole else box,
            backend=self.backend,
            min_size=min_size,
            name=self.encoded.name or None,
            info=self.info,
        )

    def resized(
        self,
        box: tuple[float, float, float, float],
        size: tuple[int, int],
        *,
        min_size: tuple[int, int] | None = None,
        snap: bool = True,
        flip: bool = False,
    ) -> np.ndarray:
        """Upright ``box`` resized (antialiased) to ``size``, mirrored if ``flip``.

        Encoded JPEGs go to the compiled crop decoder when it is in use
        (see :func:`fastdata.decode.native_status`), everything else to
        :meth:`region` + ``resize``. ``snap`` rounds the box's edges to whole
        decoded pixels first (RandomResizedCrop); ``min_size`` as in :meth:`region`.
        """
        if self.native and self.encoded is not None:
            arr = decode_resized(
                self.encoded.data, self.info, box, size,  # type: ignore[arg-type]  # info is read with encoded
                min_size=min_size, snap=snap, flip=flip, name=self.encoded.name or None,
            )
            if arr is not None:
                return arr
        pixels, sub = self.region(box, min_size)
        out = resize(pixels, size, box=snap_box(sub, pixels.shape[:2]) if snap else sub)
        return hflip(out) if flip else out

    @property
    def orientation(self) -> int:
        """The EXIF orientation of encoded input (1 = upright); arrays are taken as they are."""
        return self.info.orientation if self.info is not None else 1

    def execute(self, plan: CropPlan) -> np.ndarray:
        """The pixels ``plan`` asks for: the per-sample executor of a plan."""
        return self.resized(plan.box, plan.size, min_size=plan.min_size, snap=plan.snap, flip=plan.flip)

    def full(self) -> np.ndarray:
        if self.encoded is None:
            return self.array  # type: ignore[return-value]  # set when encoded is not (__init__)
        return decode_view(self.encoded.data, backend=self.backend, name=self.encoded.name or None, info=self.info)


def to_output(arr: np.ndarray, output: str) -> Any:
    """HWC uint8 ndarray -> the requested output, C-contiguous and writable
    either way (Pillow-backed arrays are read-only; torch warns on those)."""
    if not (arr.flags.c_contiguous and arr.flags.writeable):
        arr = np.array(arr, order="C")
    if output == "numpy":
        return arr
    import torch

    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


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
    uint8; ``__call__`` accepts any input kind and converts the output.

    A transform whose whole work is one crop of the decoded image also answers
    ``plan(height, width, orientation, generator) -> CropPlan | None`` (its
    random draws, made from the header's upright size; None for an image it
    must see whole, such as a centre crop that needs zero padding) and
    ``output_size``, the ``(height, width)`` of every output (None when it
    depends on the image). :func:`fastdata.transforms.planner_of` finds it.
    Both are read with ``getattr`` (absent: not planned), so a transform
    answers them as it likes: an attribute or a read-only property.
    """

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
