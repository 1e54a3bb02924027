"""One tiny JPEG decoded at set-up: proof that a GPU decoder really decodes on
this machine (a torchvision build without nvJPEG imports fine, then fails or
falls back on every batch)."""

from __future__ import annotations

import base64

import torch

# 16x8 pixels of solid (200, 100, 50), baseline 4:2:0, as Pillow writes it at quality 90.
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYIDAoMDAsKCwsNDhIQDQ4RDgsLEBYQERMUFRUVDA8X"
    "GBYUGBIUFRT/2wBDAQMEBAUEBQkFBQkUDQsNFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBT/wAAR"
    "CAAIABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEG"
    "E1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWG"
    "h4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEB"
    "AQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYk"
    "NOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0"
    "tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCpRRRX4ef0gf/Z"
)
SIZE, COLOUR = (8, 16), (200, 100, 50)


def probe(decoder, device: torch.device) -> str | None:
    """None when ``decoder`` turns :data:`JPEG` into the right pixels on
    ``device``, else why not (one line)."""
    try:
        [image] = decoder.decode([torch.frombuffer(bytearray(JPEG), dtype=torch.uint8)], device)
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    if image is None:
        return "it returned no image for a valid JPEG"
    if image.device.type != device.type:
        return f"it decoded on {image.device}, not {device}"
    pixels = image if decoder.layout == "hwc" else image.permute(1, 2, 0)
    if tuple(pixels.shape) != (*SIZE, 3):
        return f"it gave shape {tuple(image.shape)} for a {SIZE[1]}x{SIZE[0]} RGB JPEG"
    centre = pixels[SIZE[0] // 2, SIZE[1] // 2].int().cpu().tolist()
    if max(abs(a - b) for a, b in zip(centre, COLOUR)) > 8:
        return f"it gave colour {centre} where the JPEG holds {list(COLOUR)}"
    return None


REGION = (2, 4, 4, 8)  # (top, left, rows, cols) inside the 8x16 test JPEG


def probe_roi(decoder, device: torch.device) -> str | None:
    """None when ``decoder`` (one with ``roi``) decodes :data:`REGION` of
    :data:`JPEG` to the region's shape and colour on ``device``, else why not."""
    try:
        [image] = decoder.decode([torch.frombuffer(bytearray(JPEG), dtype=torch.uint8)], device, regions=[REGION])
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return f"raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    if image is None:
        return "returned no image"
    pixels = image if decoder.layout == "hwc" else image.permute(1, 2, 0)
    if tuple(pixels.shape) != (REGION[2], REGION[3], 3):
        return f"gave shape {tuple(image.shape)} for a {REGION[3]}x{REGION[2]} region"
    centre = pixels[REGION[2] // 2, REGION[3] // 2].int().cpu().tolist()
    if max(abs(a - b) for a, b in zip(centre, COLOUR)) > 8:
        return f"gave colour {centre} where the JPEG holds {list(COLOUR)}"
    return None
