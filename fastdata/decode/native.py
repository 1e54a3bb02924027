"""The compiled crop decoder: decode only a JPEG's crop box and resize it in C.

``fastdata.decode._cropdecode`` (built from ``_native/`` by ``pip install``
when a C compiler and the libjpeg headers are present) decodes the box at the
best DCT scale (libjpeg's ``scale_denom``), only its iMCU columns
(``jpeg_crop_scanline``) and rows (``jpeg_skip_scanlines`` above it, stopping
after its last row), then resamples it with Pillow's antialiased BILINEAR
filter straight into an output buffer, the GIL released.

The geometry (box in the stored frame, DCT scale, pixels covering the box,
snapping) is planned here with the same functions as the pure-Python path,
so both cut the same pixels for the same box. The decode-aware transforms
use this path when it is built (``backend="auto"``); ``backend="native"``
requires it, and any named decoder (``"simplejpeg"``, ``"turbo"``, ``"pil"``)
or ``FASTDATA_NATIVE=0`` in the environment selects the pure-Python path.
Input the extension does not take (not JPEG, CMYK/YCCK, files libjpeg warns
about but Pillow accepts) goes to the pure-Python path automatically.

libjpeg must Huffman-decode every MCU above a crop's last row, full width.
A baseline JPEG with restart markers every MCU row or every few MCUs
(:func:`add_restarts`, ``fastdata convert --restart-markers``) lets the
extension hand libjpeg only the restart segments that cover the crop, for the
same pixels.

Measured on hymenoptera/train (one core, bytes in memory): see
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any, cast

import numpy as np

from ..errors import DecodeError, MissingDependencyError
from . import build_status
from .decoder import DEFAULT_MAX_PIXELS, check_pixels, jpeg_scale, scaled_region, stored_box
from .info import ImageInfo, is_jpeg
from .orientation import box_to_stored, box_to_upright
from .scaling import scale_denominator, snap_box

#: The compiled extension module (``fastdata.decode._cropdecode``), None when
#: it is not built or cannot load (:func:`native_status` says why).
cropdecode: Any
try:
    cropdecode = importlib.import_module(f"{__package__}._cropdecode")
    _IMPORT_ERROR, _FIX = "", build_status.INSTALL_HINT
except ImportError as exc:  # not built (no compiler, no headers, a source tree shadowing the install) or not loadable
    cropdecode = None
    _IMPORT_ERROR, _FIX = build_status.import_failure(exc)

ENV = "FASTDATA_NATIVE"
HINT = build_status.INSTALL_HINT

_log = logging.getLogger("fastdata.decode")
_disabled = os.environ.get(ENV, "").strip().lower() in ("0", "false", "no", "off")


def native_available() -> bool:
    """True when the compiled crop decoder is built and importable."""
    return cropdecode is not None


def native_status() -> str:
    """One line: which crop-decode path the decode-aware transforms use with
    ``backend="auto"``, and how to get the compiled one when it is missing."""
    if cropdecode is None:
        return f"pure Python (no compiled crop decoder: {_IMPORT_ERROR}); for the fast path, {_FIX}"
    where = f"compiled: fastdata.decode._cropdecode over {cropdecode.LIBRARY} (libjpeg API {cropdecode.JPEG_LIB_VERSION})"
    if _disabled:
        return f"pure Python ({ENV}=0 is set; {where} is built)"
    return where


def note_pure_path() -> None:
    """Log once per process tree that decode-aware transforms take the pure
    path because the extension is missing (not when ``FASTDATA_NATIVE=0``
    chose it): called by the first such sample, and by ``make_loader``
    before it starts workers, so that they inherit the silence."""
    if cropdecode is None:
        build_status.note_pure_path(lambda: f"{_IMPORT_ERROR}; for the fast path, {_FIX}")


def crop_decoder(backend: str = "auto") -> str:
    """``"compiled"`` or ``"python"``: the path a decode-aware transform with
    this ``backend`` takes for baseline/progressive RGB and grayscale JPEGs.

    Raises:
        MissingDependencyError: ``backend="native"`` without the extension.
    """
    return "compiled" if wants_native(backend) else "python"


def wants_native(backend: str) -> bool:
    """Whether ``backend`` selects the compiled path (checked per sample; cheap)."""
    if backend == "auto":
        return cropdecode is not None and not _disabled
    if backend == "native":
        if cropdecode is None:
            raise MissingDependencyError(f"backend='native' needs the compiled crop decoder ({_IMPORT_ERROR}); {_FIX}")
        return True
    return False


def decode_geometry(
    info: ImageInfo, box: tuple[float, float, float, float] | None, min_size: Any, snap: bool, label: str
) -> tuple[int, tuple[int, int, int, int], tuple[float, float, float, float]]:
    """``(n, region, sub)`` for the extension: the 1/n decode, the stored-frame
    pixels ``(top, left, height, width)`` it decodes, and the box inside them.

    The same arithmetic as ``decode_region`` + ``snap_box`` of the pure path:
    with ``snap`` the box edges are rounded to whole decoded pixels in the
    upright frame (RandomResizedCrop), else kept fractional (exact resize).
    """
    o = info.orientation
    if o == 1 and _plain(box, info) and (min_size is None or _plain_size(min_size)):
        # Most photos: stored upright, a checked box. Skipping the validation
        # and the frame changes saves most of this call's time (the loader
        # threads' batch planning holds the GIL for it); the result is the same.
        stored = cast("tuple[float, float, float, float]", box)  # what _plain checked
        n = 1 if min_size is None else scale_denominator(stored[2], stored[3], min_size[0], min_size[1])
    else:
        stored = stored_box(box, info, label)
        n = jpeg_scale(info, stored, min_size)
    sh, sw = info.stored_size
    sub, (y0, y1, x0, x1) = scaled_region(stored, info, (-(-sh // n), -(-sw // n)), n)
    rh, rw = y1 - y0, x1 - x0
    if not snap:
        return n, (y0, x0, rh, rw), sub
    if o == 1:
        st, sl, bh, bw = snap_box(sub, (rh, rw))
    else:
        upright = (rw, rh) if o >= 5 else (rh, rw)
        # an int box maps to ints (box_to_stored only swaps and subtracts): int() tells the type checker
        st, sl, bh, bw = map(int, box_to_stored(snap_box(box_to_upright(sub, o, upright), upright), o, (rh, rw)))
    return n, (y0 + st, x0 + sl, bh, bw), (0.0, 0.0, float(bh), float(bw))


def _plain(box: Any, info: ImageInfo) -> bool:
    """A tuple of 4 Python ints/floats inside the image: what ``stored_box`` accepts without a word."""
    if type(box) is not tuple or len(box) != 4:
        return False
    t, l, h, w = box
    kinds = (int, float)
    if type(t) not in kinds or type(l) not in kinds or type(h) not in kinds or type(w) not in kinds:
        return False
    eps = 1e-6
    return not (t < -eps or l < -eps or h <= 0 or w <= 0 or t + h > info.height + eps or l + w > info.width + eps)


def _plain_size(size: Any) -> bool:
    return type(size) is tuple and len(size) == 2 and type(size[0]) is int and type(size[1]) is int \
        and size[0] > 0 and size[1] > 0


RESTART_CHUNKS = 24


def add_restarts(data: bytes, *, chunks: int = RESTART_CHUNKS) -> bytes | None:
    """The JPEG losslessly rewritten with restart markers, or ``None`` to keep it as is.

    A restart marker every ``MCUs per row / d`` MCUs, ``d`` the largest
    divisor of the MCUs per row up to ``chunks`` (one MCU per segment when
    the row splits poorly); the DCT coefficients, so the pixels, and every
    APPn/COM marker (EXIF orientation, ICC) are kept. The compiled crop
    decoder then decodes only the segments covering a crop: on
    hymenoptera/train (one core, ``benchmarks/decode_backends.py``),
    RandomResizedCrop(224)+flip 1.33x, Resize(256)+CenterCrop(224) 1.15x the
    compiled path on the original files.

    How: the source's own entropy-coded data is cut into segments (one
    Huffman-decoding pass; only the first DC value of each segment is coded
    anew, and DC tables fitted to the image gain codes for the values that
    needs). On hymenoptera/train that costs 0.6 of a full decode per photo
    (1.2 ms) and makes the files 3.7% larger (``benchmarks/transcode.py``).
    What it declines (several scans, bytes it does not expect between the
    scan and EOI, no room in a DC table) libjpeg re-encodes, 4x slower, with
    Huffman tables fitted to the image.

    Returns ``None`` for what it does not rewrite: progressive, arithmetic,
    12-bit, CMYK/YCCK, subsampled grayscale, or damaged data (which the
    decoders then report as before).

    Raises:
        MissingDependencyError: the compiled extension is not built.
    """
    if cropdecode is None:
        raise MissingDependencyError(f"restart markers need the compiled crop decoder ({_IMPORT_ERROR}); {_FIX}")
    if not is_jpeg(data):
        return None
    out = cropdecode.add_restarts(data, chunks)
    return out if isinstance(out, bytes) else None


def decode_resized(
    data: bytes,
    info: ImageInfo,
    box: tuple[float, float, float, float] | None,
    size: tuple[int, int],
    *,
    min_size: Any = None,
    snap: bool = True,
    flip: bool = False,
    name: str | None = None,
    max_pixels: int | None = DEFAULT_MAX_PIXELS,
    out: np.ndarray | None = None,
) -> np.ndarray | None:
    """Upright ``box`` of a JPEG resized to ``size = (height, width)``, mirrored if ``flip``.

    Args:
        data: the JPEG bytes; ``info``: :func:`~fastdata.decode.read_info` of them.
        box: ``(top, left, height, width)`` in upright full-size pixels
            (fractional edges allowed), ``None`` for the whole image.
        min_size: decode at the smallest DCT scale keeping the box at least this
            (upright ``(height, width)``); ``None``: full scale.
        snap: round the box edges to whole decoded pixels first (as
            RandomResizedCrop does); else resample the exact box.
        out: write here instead of a new array: a writable ``(height, width, 3)``
            uint8 array with packed pixels (e.g. a slot of a channels-last batch).

    Returns:
        The pixels (``out`` if given), or ``None`` when this input is for the
        pure-Python path (not a JPEG, CMYK/YCCK, a libjpeg warning that Pillow
        accepts, a header libjpeg reads differently).

    Raises:
        DecodeError: corrupt or truncated data within the rows decoded, or an
            image above ``max_pixels``; the message starts with ``name``.
    """
    label = name or f"image ({len(data)} bytes)"
    if cropdecode is None or info.format != "JPEG" or info.mode == "CMYK" or not is_jpeg(data):
        return None
    check_pixels(info, max_pixels, label)
    n, region, sub = decode_geometry(info, box, min_size, snap, label)
    if out is None:
        out = np.empty((size[0], size[1], 3), np.uint8)
    failed = cropdecode.decode_resized(data, out, n, region, sub, info.orientation, flip, max_pixels or 0)
    if failed is None:
        return out
    status, message = failed
    if status == cropdecode.STATUS_ERROR:
        raise DecodeError(f"{label}: libjpeg-turbo cannot decode this JPEG: {message}")
    if status == cropdecode.STATUS_TOO_LARGE:
        raise DecodeError(f"{label}: {message} (a decompression bomb guard; pass a larger max_pixels, or None, if the image is trusted)")
    if status == cropdecode.STATUS_NOMEM:
        raise DecodeError(f"{label}: {message}")
    _log.debug("%s: compiled crop decoder declined (%s); using the pure-Python path", label, message)
    return None
