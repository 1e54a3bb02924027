"""Which files of an image folder are images: one rule for ``fastdata convert``
and :class:`fastdata.ImageFolder`, so a converted folder has the samples, the
order and the count that the folder dataset (and torchvision's) has.

The extensions are torchvision's ``IMG_EXTENSIONS``. GIF is not among them
even though fastdata decodes GIFs (first frame): taking them by default would
make a converted folder differ from ``torchvision.datasets.ImageFolder`` over
the same files (hymenoptera's ``train/ants/imageNotFound.gif`` placeholder
gives 245 samples instead of torchvision's 244). Opt in on both sides:
``--exts jpg,jpeg,png,gif`` / ``ImageFolder(root, extensions=IMG_EXTENSIONS + (".gif",))``.
"""

from __future__ import annotations

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_image_extension(name: str, extensions: tuple[str, ...] = IMG_EXTENSIONS) -> bool:
    """True when ``name`` ends with one of ``extensions`` (lower-case, with the dot), ignoring case."""
    return name.lower().endswith(extensions)
