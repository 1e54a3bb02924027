"""Deciding, per image, between storing the file's bytes and re-encoding it once.

Pass-through keeps a JPEG as it is (byte for byte, or with restart markers
added losslessly: see below) when every reader will decode it correctly: Pillow reads it as RGB or grayscale and its EXIF
orientation is 1 or absent. Everything else is normalised to a baseline RGB
JPEG once, at conversion time, so that no decoder later has to know about it:

* CMYK/YCCK JPEGs (libjpeg-turbo's fast paths cannot turn them into RGB):
  Pillow's CMYK->RGB conversion;
* any other format (PNG, GIF, BMP, WebP, TIFF, ...), palette and bilevel modes;
* 16-bit samples: scaled to 8 bits (``v * 255 / 65535``, not clipped);
* transparency (alpha channel, PNG ``tRNS``, GIF transparent colour):
  composited over :data:`BACKGROUND` (white);
* EXIF orientation 2-8: pixels turned upright, the tag dropped (re-encoded
  images carry no EXIF);
* on request: ``resize`` (shorter side, only shrinks, Lanczos) and an explicit
  ``quality`` (every image re-encoded).

With ``restart_markers`` every baseline JPEG stored (passed through or
re-encoded) is then losslessly rewritten with restart markers (same DCT
coefficients, so the same pixels, every APPn/COM marker kept), which lets the
compiled crop decoder decode only the part of the file a crop covers; JPEGs it
does not rewrite (progressive, damaged, ...) are stored as before.

Validity of a pass-through JPEG is decided by its structure
(:mod:`.jpeg_check`: markers, frame header, EXIF, EOI at the end; no pixel is
decoded), which is ~10x faster than decoding. Files that check cannot vouch for,
and every file with ``verify_decode``, are decoded: a pass-through JPEG with
libjpeg's 1/8 DCT scaling (every entropy-coded byte is still read, so a
truncated file fails). Anything re-encoded is decoded in full.
"""

from __future__ import annotations

import dataclasses
import io
import re
import warnings
from typing import TYPE_CHECKING

from ..jpeg_check import passthrough_size
from ..planning.scan import SkippedFile

if TYPE_CHECKING:
    from PIL import Image

# Pillow is imported where an image is decoded, not with this module: a
# pass-through conversion stores JPEGs the structural check vouches for and
# never decodes one, and Pillow's import is ~11 ms of every command's start-up.

#: What transparent pixels are composited over.
BACKGROUND = (255, 255, 255)
DEFAULT_QUALITY = 90
#: The reason a stored JPEG carries when it was rewritten with restart markers
#: (lossless: not a normalisation, counted apart in the summary).
RESTART_REASON = "restart-markers"

_JPEG_FORMATS = ("JPEG", "MPO")  # MPO: camera JPEGs with extra frames appended; decoders read frame 0
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N", "I")
_TRANSPOSE = {  # EXIF orientation -> the name of Pillow's Image.Transpose that makes the image upright
    2: "FLIP_LEFT_RIGHT",
    3: "ROTATE_180",
    4: "FLIP_TOP_BOTTOM",
    5: "TRANSPOSE",
    6: "ROTATE_270",
    7: "TRANSVERSE",
    8: "ROTATE_90",
}


@dataclasses.dataclass(frozen=True)
class EncodeOptions:
    """How images are stored.

    Attributes:
        resize: shrink so the shorter side is this many pixels; None keeps sizes.
        quality: JPEG quality (1-95) for every image that is re-encoded.
        reencode: re-encode every image at ``quality`` (an explicit ``--quality``).
        verify_decode: decode every pass-through JPEG too (``--verify-decode``),
            catching damage inside the entropy-coded data that a structural
            check cannot see; ~10x slower. Stored bytes are the same either way
            for every file that decodes.
        restart_markers: rewrite every stored baseline JPEG with restart
            markers (``--restart-markers``; needs the compiled crop decoder).
    """

    resize: int | None = None
    quality: int = DEFAULT_QUALITY
    reencode: bool = False
    verify_decode: bool = False
    restart_markers: bool = False


@dataclasses.dataclass(frozen=True)
class Prepared:
    """An image ready to store: its bytes, upright size, and why it was
    re-encoded (empty ``reasons`` means the source bytes are stored as they are)."""

    data: bytes
    height: int
    width: int
    reasons: tuple[str, ...] = ()


def prepare(data: bytes, path: str, options: EncodeOptions = EncodeOptions()) -> Prepared:
    """Validate one image file's bytes and return what to store.

    Raises:
        SkippedFile: the bytes are empty, not an image, truncated or corrupt;
            the reason says which (Pillow's own message included).
    """
    if not data:
        raise SkippedFile(path, "empty file (0 bytes)")
    prepared = _prepare(data, path, options)
    return with_restart_markers(prepared) if options.restart_markers else prepared


def with_restart_markers(prepared: Prepared) -> Prepared:
    """``prepared`` rewritten with restart markers, or as it is when the
    transcode declines it (not a baseline JPEG, or data libjpeg warns about)."""
    from fastdata.decode.native import add_restarts

    marked = add_restarts(prepared.data)
    if marked is None:
        return prepared
    return Prepared(marked, prepared.height, prepared.width, (*prepared.reasons, RESTART_REASON))


def _prepare(data: bytes, path: str, options: EncodeOptions) -> Prepared:
    kept = stored_as_is(data, options)
    if kept is not None:
        return kept
    from PIL import Image, ImageFile

    if ImageFile.LOAD_TRUNCATED_IMAGES:  # someone relaxed Pillow globally; we must not accept truncated files
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    with warnings.catch_warnings():
        # Pillow warns on corrupt EXIF blocks and huge images; the image itself may be fine.
        warnings.simplefilter("ignore")
        try:
            img = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:
            raise SkippedFile(path, f"refused by Pillow's decompression-bomb guard: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - Pillow raises many types on hostile input
            what = "truncated image file" if "truncated" in str(exc).lower() else "not an image Pillow can read"
            raise SkippedFile(path, f"{what} ({_describe(exc)})") from None
        try:
            return _prepare_open(img, data, options)
        except SkippedFile as exc:
            raise SkippedFile(path, exc.reason) from None
        except Image.DecompressionBombError as exc:
            raise SkippedFile(path, f"refused by Pillow's decompression-bomb guard: {exc}") from None
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - decoder failure on untrusted bytes: recorded, not hidden
            raise SkippedFile(path, f"corrupt or truncated {img.format or 'image'} ({_describe(exc)})") from None


def stored_as_is(data: bytes, options: EncodeOptions = EncodeOptions()) -> Prepared | None:
    """The file's own bytes when the structural check vouches for them (no decode), else None.

    None means "decide by decoding" (:func:`prepare`), not "invalid".
    """
    if options.reencode or options.verify_decode:
        return None
    size = passthrough_size(data)
    if size is None or (options.resize is not None and min(size) > options.resize):
        return None
    return Prepared(data, size[0], size[1])


def _describe(exc: BaseException) -> str:
    text = re.sub(r"\s*<_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def orientation_of(img: Image.Image) -> int:
    """EXIF orientation 1-8; 1 when absent, unreadable or out of range."""
    try:
        value = img.getexif().get(0x0112, 1)
    except Exception:  # noqa: BLE001 - a corrupt EXIF block does not make the pixels wrong
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def _prepare_open(img: Image.Image, data: bytes, options: EncodeOptions) -> Prepared:
    from PIL import Image

    width, height = img.size
    if width <= 0 or height <= 0:
        raise SkippedFile("", f"image has no pixels ({width}x{height})")
    is_jpeg = img.format in _JPEG_FORMATS
    orientation = orientation_of(img)
    shrink = options.resize is not None and min(width, height) > options.resize
    if is_jpeg and img.mode in ("RGB", "L") and orientation == 1 and not shrink and not options.reencode:
        # Decode at 1/8 scale: the whole entropy-coded stream is still parsed.
        img.draft(img.mode, (max(1, width // 8), max(1, height // 8)))
        img.load()
        return Prepared(data, height, width)

    reasons = []
    target = _target_size(width, height, options.resize) if shrink and options.resize is not None else None
    if target is not None and is_jpeg:
        img.draft(img.mode, (target[0] * 2, target[1] * 2))  # DCT-scale big photos; stays >= 2x the target
    img.load()
    if not is_jpeg:
        reasons.append(f"{(img.format or 'unknown').lower()}-to-jpeg")
    elif img.mode in ("CMYK", "YCCK"):
        reasons.append("cmyk-jpeg")
    elif img.mode not in ("RGB", "L"):
        reasons.append(f"jpeg-mode-{img.mode.lower()}")
    icc = img.info.get("icc_profile") if img.mode == "RGB" else None  # a CMYK or gray profile no longer fits
    rgb = to_rgb(img, reasons)
    if orientation != 1:
        rgb = rgb.transpose(Image.Transpose[_TRANSPOSE[orientation]])
        reasons.append("exif-orientation")
    if target is not None:
        size = target if orientation < 5 else (target[1], target[0])
        rgb = rgb.resize(size, Image.Resampling.LANCZOS)
        reasons.append("resized")
    elif options.reencode and not reasons:
        reasons.append("quality")
    out = io.BytesIO()
    rgb.save(out, "JPEG", quality=options.quality, icc_profile=icc)
    return Prepared(out.getvalue(), rgb.height, rgb.width, tuple(reasons))


def _target_size(width: int, height: int, short: int) -> tuple[int, int]:
    if width <= height:
        return short, max(1, round(height * short / width))
    return max(1, round(width * short / height)), short


def to_rgb(img: Image.Image, reasons: list[str]) -> Image.Image:
    """Any Pillow mode -> 8-bit RGB, alpha composited over :data:`BACKGROUND`."""
    from PIL import Image

    transparency = img.info.get("transparency")
    if img.mode in _SIXTEEN_BIT:
        import numpy as np  # only 16-bit images need it; workers start faster without

        arr = np.asarray(img).astype(np.int64)
        gray = Image.fromarray(((np.clip(arr, 0, 65535) * 255 + 32767) // 65535).astype(np.uint8), "L")
        reasons.append("16bit-to-8bit")
        if isinstance(transparency, int):
            gray.putalpha(Image.fromarray(np.where(arr == transparency, 0, 255).astype(np.uint8), "L"))
        img = gray
        transparency = None
    if img.mode in _ALPHA_MODES or transparency is not None:
        rgba = img.convert("RGBA")
        if rgba.getextrema()[3][0] < 255:  # type: ignore[misc]  # Pillow types one band's (low, high) too; RGBA has 4 pairs
            reasons.append("alpha-on-white")
        background = Image.new("RGBA", rgba.size, (*BACKGROUND, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img if img.mode == "RGB" else img.convert("RGB")
