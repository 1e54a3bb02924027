"""The pipelines users have today, to compare fastdata against.

With torchvision installed these are the real thing: the apex ImageNet
recipe (``ImageFolder`` + PIL + ``RandomResizedCrop`` + flip, collated as
uint8) and the pytorch/examples recipe (the same with ``ToTensor`` +
``Normalize`` in the workers). Without it, PIL stand-ins that do the same
work (same crop sampling, Pillow bilinear resize, same folder walk) replace
them, and the report labels them as such.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from PIL import Image

from ..image_files import IMG_EXTENSIONS
from ..rng import generator
from ..transforms import sample_resized_crop

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
EXTS = IMG_EXTENSIONS  # torchvision's: no .gif


def has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401 -- imported only to see whether it imports
    except Exception:  # noqa: BLE001 -- torchvision imports torch ops that may fail to load
        return False
    return True


def torchvision_version() -> str:
    import torchvision

    return str(torchvision.__version__)


class PILFolder(torch.utils.data.Dataset):
    """torchvision.datasets.ImageFolder's walk and loader, with nothing of fastdata's."""

    def __init__(self, root: str, transform=None) -> None:
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = [
            (os.path.join(dp, f), i)
            for i, c in enumerate(classes)
            for dp, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True))
            for f in sorted(files)
            if f.lower().endswith(EXTS)
        ]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        path, target = self.samples[i]
        with open(path, "rb") as f:
            img = Image.open(f).convert("RGB")
        return (self.transform(img) if self.transform else img), target


class PILRandomResizedCrop:
    def __init__(self, size: int = 224) -> None:
        self.size = size

    def __call__(self, img: Image.Image) -> Image.Image:
        top, left, h, w = sample_resized_crop(img.height, img.width, (0.08, 1.0), (3 / 4, 4 / 3), generator())
        return img.resize((self.size, self.size), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h))


class PILFlip:
    def __call__(self, img: Image.Image) -> Image.Image:
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if generator().random() < 0.5 else img


class PILResizeCenterCrop:
    def __init__(self, resize: int = 256, crop: int = 224) -> None:
        self.resize, self.crop = resize, crop

    def __call__(self, img: Image.Image) -> Image.Image:
        w, h = img.size
        if w <= h:
            nw, nh = self.resize, int(self.resize * h / w)
        else:
            nw, nh = int(self.resize * w / h), self.resize
        img = img.resize((nw, nh), Image.Resampling.BILINEAR)
        left, top = round((nw - self.crop) / 2.0), round((nh - self.crop) / 2.0)
        return img.crop((left, top, left + self.crop, top + self.crop))


class PILToNormalizedTensor:
    """``ToTensor`` + ``Normalize`` (float CHW in the worker)."""

    def __call__(self, img: Image.Image) -> torch.Tensor:
        arr = np.asarray(img, dtype=np.float32) / 255.0
        return torch.from_numpy(((arr - MEAN) / STD).transpose(2, 0, 1).copy())


class Chain:
    def __init__(self, *steps) -> None:
        self.steps = steps

    def __call__(self, img):
        for step in self.steps:
            img = step(img)
        return img


class FullDecode:
    """The decode limit: fastdata's decoder on the whole image and nothing else.

    A full-decode pipeline can go no faster than this; decode-aware transforms
    beat it by decoding less (a DCT-scaled or cropped region). One pixel is
    kept so that batches collate.
    """

    decode_aware = True  # receive the encoded bytes, as the decode-aware transforms do

    def __call__(self, image) -> np.ndarray:
        from ..decode import decode

        return np.ascontiguousarray(decode(image.data, name=image.name or None)[:1, :1])


def recipe_name(normalize: bool = False) -> str:
    """The baseline row's label: what it is, in the table and the chart alike."""
    name = "torchvision's recipe" if has_torchvision() else "PIL stand-in for torchvision's recipe"
    return name + (" + ToTensor+Normalize" if normalize else "")


def recipe_note(train: bool, normalize: bool = False) -> str:
    """What the baseline row does (the table's note)."""
    steps = "RandomResizedCrop(224) + flip" if train else "Resize(256) + CenterCrop(224)"
    who = ("pytorch/examples" if normalize else "apex") if train else ("pytorch/examples" if normalize else "eval")
    out = "float32 normalised in the workers" if normalize else "uint8 collate"
    if has_torchvision():
        return f"torchvision {torchvision_version()} ImageFolder + {steps}, {out} ({who})"
    return f"torchvision not installed: PIL doing its work (ImageFolder walk, {steps}), {out}"


def train_transforms(normalize: bool):
    """The baseline's training transforms: torchvision's when installed, else the PIL stand-ins."""
    if has_torchvision():
        import torchvision.transforms as T

        steps = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
        if normalize:
            steps += [T.ToTensor(), T.Normalize(MEAN.tolist(), STD.tolist())]
        return T.Compose(steps)
    steps = [PILRandomResizedCrop(224), PILFlip()]
    return Chain(*steps, PILToNormalizedTensor()) if normalize else Chain(*steps)


def eval_transforms(normalize: bool):
    if has_torchvision():
        import torchvision.transforms as T

        steps = [T.Resize(256), T.CenterCrop(224)]
        if normalize:
            steps += [T.ToTensor(), T.Normalize(MEAN.tolist(), STD.tolist())]
        return T.Compose(steps)
    steps = [PILResizeCenterCrop(256, 224)]
    return Chain(*steps, PILToNormalizedTensor()) if normalize else Chain(*steps)


def folder_dataset(root: str, transform):
    if has_torchvision():
        from torchvision.datasets import ImageFolder

        return ImageFolder(root, transform=transform)
    return PILFolder(root, transform=transform)
