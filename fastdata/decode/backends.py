"""The JPEG decoders behind ``decode(backend=...)``, imported lazily.

* ``"simplejpeg"``: libjpeg-turbo 3 bundled in a PyPI wheel.
* ``"turbo"``: PyTurboJPEG 1.x over the system libturbojpeg.
* ``"pil"``: Pillow (its wheels also bundle libjpeg-turbo); always present.

``"auto"`` takes the first available in :data:`AUTO_ORDER`. Measured here
(244 hymenoptera photos, one core, bytes in memory, interleaved rounds):
simplejpeg ~1.04x PyTurboJPEG and ~1.4x Pillow for full decodes, and the
same order for 1/2 to 1/8 scaled ones.

Each backend decodes the stored frame (no orientation, no crop) to RGB at
1/n size. Truncation and other data-losing libjpeg warnings are errors; the
few warnings that lose no pixels libjpeg cannot recover (junk between
markers, a bad ICC or JFIF marker) raise :class:`RecoverableWarning`, and the
caller then decodes with Pillow, which accepts such files. Pillow itself
ignores libjpeg's warnings and raises only on truncation, so ``"pil"`` is
exactly as lenient as Pillow about corrupt scan data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from .._optional import require
from ..errors import DecodeError, MissingDependencyError
from . import pillow_image
from .info import ImageInfo

AUTO_ORDER = ("simplejpeg", "turbo", "pil")
BACKENDS = frozenset(AUTO_ORDER)

_log = logging.getLogger("fastdata.decode")

# libjpeg warnings after which the decoded pixels are still what the file holds.
_RECOVERABLE = (
    "extraneous bytes before marker",
    "unknown JFIF revision",
    "bad ICC marker",
    "Unknown Adobe color transform",
    "Invalid SOS parameters for sequential JPEG",
)

JpegDecoder = Callable[[bytes, ImageInfo, int, str], np.ndarray]


class RecoverableWarning(Exception):
    """libjpeg warned about damage that loses no pixels; decode with Pillow instead."""


def _check_warning(message: str, backend: str, name: str) -> DecodeError | RecoverableWarning:
    if any(text in message for text in _RECOVERABLE):
        return RecoverableWarning(message)
    return DecodeError(f"{name}: {backend} cannot decode this JPEG: {message}")


# ---- simplejpeg -------------------------------------------------------------


def _load_simplejpeg() -> JpegDecoder:
    sj = require("simplejpeg", extra="turbo", purpose="decode(backend='simplejpeg')")

    def decode(data: bytes, info: ImageInfo, n: int, name: str) -> np.ndarray:
        space = "CMYK" if info.mode == "CMYK" else "RGB"
        try:
            if n == 1:
                return sj.decode_jpeg(data, colorspace=space, strict=True)
            sh, sw = info.stored_size
            return sj.decode_jpeg(data, colorspace=space, min_height=-(-sh // n), min_width=-(-sw // n), strict=True)
        except ValueError as exc:
            raise _check_warning(str(exc), "simplejpeg", name) from exc

    return decode


# ---- PyTurboJPEG ------------------------------------------------------------


def _load_turbo() -> JpegDecoder:
    tj = require("turbojpeg", extra="turbo", purpose="decode(backend='turbo')", package="PyTurboJPEG")
    if not hasattr(tj.TurboJPEG, "_TurboJPEG__report_error"):
        raise MissingDependencyError(
            f"decode(backend='turbo') supports PyTurboJPEG 1.x; version {getattr(tj, '__version__', '?')} "
            "reports errors differently. Fix: pip install 'fastdata[turbo]' (pins PyTurboJPEG<2)"
        )

    class _Warned(Exception):
        pass

    turbo_jpeg: Any = tj.TurboJPEG  # a class of the module imported just now: a base the checker cannot see

    class StrictTurboJPEG(turbo_jpeg):
        # PyTurboJPEG turns libjpeg warnings (truncation!) into warnings.warn and
        # returns the half-filled buffer; raise instead. The name is the mangled
        # private method every 1.x version calls after a nonzero status.
        def _TurboJPEG__report_error(self, handle: Any) -> None:
            get_code = self._TurboJPEG__get_error_code
            message = self._TurboJPEG__get_error_string(handle)
            if get_code is not None and get_code(handle) == tj.TJERR_WARNING:
                raise _Warned(message)
            raise OSError(message)

    try:
        turbo = StrictTurboJPEG()
    except Exception as exc:  # library not found, or the wrong libturbojpeg ABI
        raise MissingDependencyError(
            f"decode(backend='turbo'): PyTurboJPEG could not load libturbojpeg ({type(exc).__name__}: {exc}). "
            "Fix: install libjpeg-turbo (e.g. apt install libturbojpeg0), or use backend='simplejpeg' "
            "(pip install 'fastdata[turbo]')"
        ) from exc
    flags = tj.TJFLAG_STOPONWARNING

    def decode(data: bytes, info: ImageInfo, n: int, name: str) -> np.ndarray:
        fmt = tj.TJPF_CMYK if info.mode == "CMYK" else tj.TJPF_RGB
        try:
            return turbo.decode(data, pixel_format=fmt, scaling_factor=None if n == 1 else (1, n), flags=flags)
        except _Warned as exc:
            raise _check_warning(str(exc), "libjpeg-turbo", name) from exc
        except OSError as exc:
            raise DecodeError(f"{name}: libjpeg-turbo cannot decode this JPEG: {exc}") from exc

    return decode


# ---- Pillow -------------------------------------------------------------------


def decode_pil(data: bytes, info: ImageInfo, n: int, name: str) -> np.ndarray:
    """Pillow JPEG decode at 1/n via ``draft`` (libjpeg's DCT scaling)."""
    img = pillow_image.open_image(data, name)
    with img:
        if n > 1:
            sh, sw = info.stored_size
            # draft picks the largest of 8/4/2/1 not above min(W // w, H // h): exactly n here.
            img.draft(None, (sw // n, sh // n))
        pillow_image.load(img, name)
        return pillow_image.to_rgb_array(img)


_loaders: dict[str, Callable[[], JpegDecoder]] = {
    "simplejpeg": _load_simplejpeg,
    "turbo": _load_turbo,
    "pil": lambda: decode_pil,
}
_loaded: dict[str, JpegDecoder | MissingDependencyError] = {}


def _load(name: str) -> JpegDecoder | MissingDependencyError:
    if name not in _loaded:
        try:
            _loaded[name] = _loaders[name]()
        except MissingDependencyError as exc:
            _loaded[name] = exc
    return _loaded[name]


def available_backends() -> list[str]:
    """Backends that load in this process, in ``"auto"`` preference order."""
    return [name for name in AUTO_ORDER if not isinstance(_load(name), MissingDependencyError)]


def get_backend(name: str) -> tuple[str, JpegDecoder]:
    """``(resolved name, decoder)`` for a backend name or ``"auto"``.

    Raises:
        ValueError: unknown name.
        MissingDependencyError: an explicitly named backend is not installed
            or cannot load; the message gives the pip command.
    """
    if name == "auto":
        if not _auto:
            chosen = available_backends()[0]
            skipped = "; ".join(f"{n}: {_loaded[n]}" for n in AUTO_ORDER[: AUTO_ORDER.index(chosen)])
            _log.debug("backend='auto' decodes JPEG with %r%s", chosen, f" (unavailable: {skipped})" if skipped else "")
            _auto[chosen] = _loaded[chosen]  # type: ignore[assignment]  # available_backends() names loaded ones only
        return next(iter(_auto.items()))
    if name not in BACKENDS:
        raise ValueError(f"unknown decode backend {name!r}; choose 'auto' or one of {sorted(BACKENDS)}")
    loaded = _load(name)
    if isinstance(loaded, MissingDependencyError):
        raise MissingDependencyError(str(loaded)) from loaded.__cause__
    return name, loaded


_auto: dict[str, JpegDecoder] = {}
