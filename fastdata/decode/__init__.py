"""Image decoding: encoded bytes -> upright RGB uint8 ``(H, W, 3)`` arrays.

``decode(data, backend="auto", min_size=, crop=, name=, max_pixels=)`` with
libjpeg-turbo (simplejpeg or PyTurboJPEG, from ``pip install 'fastdata[turbo]'``)
or Pillow; ``read_info(data)`` reads size and orientation from the header only.
Backends are imported on first use, so importing this package is cheap.

``decode_resized`` is the compiled crop decoder behind the decode-aware
transforms (built at install time when the libjpeg headers are present);
``native_status()`` says whether it is in use, and how to get it if not.
"""

from __future__ import annotations

from .backends import AUTO_ORDER, available_backends
from .decoder import DEFAULT_MAX_PIXELS, decode, decode_region, decode_view
from .encoded import EncodedImage
from .info import ImageInfo, read_info
from .native import crop_decoder, decode_resized, native_available, native_status
from .orientation import box_to_stored, box_to_upright, orient
from .pillow_image import BACKGROUND
from .scaling import SCALE_DENOMINATORS, scale_denominator

__all__ = [
    "AUTO_ORDER",
    "BACKGROUND",
    "DEFAULT_MAX_PIXELS",
    "SCALE_DENOMINATORS",
    "EncodedImage",
    "ImageInfo",
    "available_backends",
    "box_to_stored",
    "box_to_upright",
    "crop_decoder",
    "decode",
    "decode_region",
    "decode_resized",
    "decode_view",
    "native_available",
    "native_status",
    "orient",
    "read_info",
    "scale_denominator",
]
