"""What kind of image file a payload holds, from its first bytes (no decoding)."""

from __future__ import annotations

_SIGNATURES = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"P6", "PPM"),
    (b"P5", "PPM"),
)


def image_kind(data: bytes | bytearray | memoryview) -> str:
    """``"JPEG"``, ``"PNG"``, ``"GIF"``, ``"BMP"``, ``"TIFF"``, ``"WEBP"``,
    ``"PPM"`` from the magic bytes, ``"?"`` when none matches."""
    head = bytes(data[:12])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    for magic, kind in _SIGNATURES:
        if head.startswith(magic):
            return kind
    return "?"
