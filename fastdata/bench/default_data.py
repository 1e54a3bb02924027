"""The embedded default benchmark dataset: photo-like JPEGs generated on first use.

No download: images are synthesised deterministically (smooth colour fields,
edges and sensor-like noise, ImageNet-like sizes and JPEG settings: q90, 4:2:0,
roughly 5 bits per pixel) into an ImageFolder tree in the user's cache.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image

VERSION = 1
CLASSES = ("meadow", "street")
SIZES = [(500, 375), (375, 500), (500, 333), (640, 480), (400, 300), (800, 600)]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdata" / "bench"


def default_dataset(num_images: int = 240, root: str | os.PathLike[str] | None = None) -> Path:
    """Return the ImageFolder root of the default set, generating it if needed."""
    root = Path(root) if root else cache_dir() / f"default-v{VERSION}-{num_images}"
    done = root / ".complete"
    if done.exists():
        return root
    rng = np.random.default_rng(20261121)
    for i in range(num_images):
        cls = CLASSES[i % len(CLASSES)]
        (root / cls).mkdir(parents=True, exist_ok=True)
        w, h = SIZES[int(rng.integers(len(SIZES)))]
        (root / cls / f"{cls}_{i:04d}.jpg").write_bytes(_photo(rng, w, h, i % len(CLASSES)))
    done.write_text("ok\n")
    return root


def _photo(rng: np.random.Generator, w: int, h: int, kind: int) -> bytes:
    # low-frequency colour field, upsampled: skies, walls, lawns
    coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(coarse).resize((w, h), Image.Resampling.BICUBIC), dtype=np.float32)
    # mid-frequency texture: foliage, gravel
    tex = np.asarray(Image.fromarray(rng.integers(0, 256, size=(h // 3, w // 3), dtype=np.uint8)).resize((w, h), Image.Resampling.BILINEAR), dtype=np.float32)
    img += (tex[..., None] - 128.0) * (0.35 if kind == 0 else 0.2)
    # hard edges: buildings, horizons
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        x1, y1 = min(w, x0 + int(rng.integers(20, w // 2))), min(h, y0 + int(rng.integers(20, h // 2)))
        img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * 0.5 + rng.integers(0, 256, size=3) * 0.5
    img += rng.normal(0.0, 12.0, size=img.shape)  # sensor noise
    out = io.BytesIO()
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90, subsampling="4:2:0")
    return out.getvalue()
