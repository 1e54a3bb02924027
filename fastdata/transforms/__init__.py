"""uint8 image transforms that run in DataLoader workers before collation.

Every transform takes an :class:`EncodedImage` (encoded bytes plus a name),
an HWC uint8 ndarray or a PIL image, and returns HWC uint8 numpy (default,
what ``fast_collate`` packs) or a CHW uint8 torch tensor (``output="tensor"``).
Those with ``decode_aware = True`` (RandomResizedCrop, Resize, CenterCrop,
ResizedCenterCrop, and a Compose that starts with one) read the header of an
EncodedImage, decode only the region they need at the cheapest DCT scale and
resize it with an antialiased filter: in C when the compiled crop decoder is
built (``fastdata.decode.native_status()``), else in Python. Randomness comes only from
:func:`fastdata.rng.generator` or an explicit ``generator=``. Those whose work
is one crop also answer ``plan(...)`` with a :class:`CropPlan`, which every
executor (a worker's per-sample decode, loader threads' batch call, the GPU)
runs the same way.
"""

from __future__ import annotations

from ..decode.encoded import EncodedImage
from ..decode.plan import CropPlan
from .compose import Compose
from .crop import CenterCrop, RandomResizedCrop, sample_resized_crop
from .flip import RandomHorizontalFlip
from .planner import Planner, planner_of
from .resampling import hflip, resize, resize_backend
from .resizing import Resize, ResizedCenterCrop, resized_size

__all__ = [
    "CenterCrop",
    "Compose",
    "CropPlan",
    "EncodedImage",
    "Planner",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
    "ResizedCenterCrop",
    "hflip",
    "planner_of",
    "resize",
    "resize_backend",
    "resized_size",
    "sample_resized_crop",
]
