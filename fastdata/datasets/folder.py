"""``ImageFolder``: torchvision's class-per-directory dataset, with fastdata's
decode path, seeding and error policy.

The scan follows torchvision exactly (sorted class directories; within a
class, ``os.walk`` with symlinks followed, directories and files sorted, so
nested files are included) so indices and targets match torchvision's.
Paths are kept in one byte buffer plus an offset array rather than a list of
Python tuples: workers that touch them do not copy-on-write a million refcounted
objects (the classic "DataLoader memory grows" problem).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError, FastDataError
from ..image_files import IMG_EXTENSIONS, has_image_extension
from .base import MapDataset
from .imaging import Transform, build_item
from .stages import stage


def find_classes(directory: str | os.PathLike[str]) -> tuple[list[str], dict[str, int]]:
    """Sorted names of the sub-directories of ``directory`` and their indices.

    Raises:
        FastDataError: ``directory`` is missing or has no sub-directory.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FastDataError(f"{directory}: no such directory (ImageFolder needs root/<class>/<image> files)")
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FastDataError(f"{directory}: couldn't find any class folder (ImageFolder needs root/<class>/<image>)")
    return classes, {name: i for i, name in enumerate(classes)}


def scan(
    directory: str,
    class_to_idx: dict[str, int],
    *,
    extensions: Sequence[str] | None,
    is_valid_file: Callable[[str], bool] | None,
    allow_empty: bool = False,
) -> Iterator[tuple[str, int]]:
    """Yield ``(path, class index)`` in torchvision's ``make_dataset`` order."""
    if extensions is not None and is_valid_file is not None:
        raise ConfigError("pass either extensions or is_valid_file to ImageFolder, not both")
    if is_valid_file is None:
        suffixes = tuple(e.lower() for e in (extensions or ()))

        def is_valid_file(path: str) -> bool:
            return has_image_extension(path, suffixes)

    empty = set(class_to_idx)
    for name in sorted(class_to_idx, key=class_to_idx.__getitem__):
        for root, _, fnames in sorted(os.walk(os.path.join(directory, name), followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    empty.discard(name)
                    yield path, class_to_idx[name]
    if empty and not allow_empty:
        accepted = (
            f"Supported extensions are: {', '.join(extensions)}" if extensions else "no file passed is_valid_file"
        )
        raise FastDataError(f"{directory}: found no valid file for the classes {', '.join(sorted(empty))}. {accepted}")


class _Samples(Sequence):
    """``dataset.samples`` as torchvision has it: ``(path, target)`` pairs, made on demand."""

    def __init__(self, dataset: ImageFolder) -> None:
        self._ds = dataset

    def __len__(self) -> int:
        return len(self._ds)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._ds.path(i), int(self._ds.targets[i])


class ImageFolder(MapDataset):
    """Images laid out as ``root/<class>/**/<file>``, a drop-in for
    ``torchvision.datasets.ImageFolder``.

    Args:
        root: the directory holding one sub-directory per class.
        transform: applied to the PIL RGB image; a transform with
            ``decode_aware = True`` gets ``EncodedImage(file_bytes, path)`` instead.
        target_transform: applied to the int target.
        extensions: accepted file suffixes (case-insensitive); default
            torchvision's ``IMG_EXTENSIONS`` (:mod:`fastdata.image_files`, the
            rule ``fastdata convert`` follows too) unless ``is_valid_file`` is given.
        is_valid_file: ``f(path) -> bool`` choosing files instead of ``extensions``.
        loader: ``f(path) -> image`` replacing fastdata's reading and decoding
            when ``decode`` is True; ``transform`` then gets its output.
        allow_empty: accept classes with no file (torchvision's ``allow_empty``).
        decode: False returns ``(file_bytes, target)`` with no transform.
        on_error: ``"raise"``, ``"skip"`` or ``"warn"`` for unreadable images
            (see :mod:`fastdata.datasets.policy`).

    Attributes:
        classes, class_to_idx, samples / imgs (``(path, target)`` sequence),
        targets (int64 array), root, extensions.

    Raises:
        FastDataError: no class directory, or a class with no valid file (the
            message lists the empty classes and the accepted extensions).
        DecodeError: a corrupt image under ``on_error="raise"``, naming the file.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        extensions: Sequence[str] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        loader: Callable[[str], Any] | None = None,
        allow_empty: bool = False,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None:
        super().__init__(transform=transform, target_transform=target_transform, decode=decode, on_error=on_error)
        self.root = os.fspath(root)
        if extensions is None and is_valid_file is None:
            extensions = IMG_EXTENSIONS
        self.extensions = tuple(extensions) if extensions is not None else None
        self.loader = loader
        self.classes, self.class_to_idx = find_classes(self.root)
        paths: list[bytes] = []
        targets: list[int] = []
        found = scan(
            self.root,
            self.class_to_idx,
            extensions=self.extensions,
            is_valid_file=is_valid_file,
            allow_empty=allow_empty,
        )
        for path, target in found:
            paths.append(os.fsencode(path))
            targets.append(target)
        lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
        self._path_ends = np.cumsum(lengths)
        self._path_bytes = np.frombuffer(b"".join(paths), dtype=np.uint8)
        self.targets = np.asarray(targets, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.targets)

    def path(self, index: int) -> str:
        """File path of sample ``index``."""
        if index < 0:
            index += len(self)
        end = int(self._path_ends[index])
        start = int(self._path_ends[index - 1]) if index > 0 else 0
        return os.fsdecode(self._path_bytes[start:end].tobytes())

    @property
    def samples(self) -> Sequence[tuple[str, int]]:
        return _Samples(self)

    imgs = samples

    def encoded(self, index: int) -> tuple[bytes, Any, str]:
        path = self.path(index)
        with open(path, "rb") as f:
            return f.read(), int(self.targets[index]), path

    reports_stages = True  # Loader.stats: "read", then "decode+transform" (fastdata.datasets.stages)

    def planner(self) -> Any:
        return None if self.loader is not None else super().planner()  # a loader= opens files its own way

    def _item(self, index: int) -> tuple[Any, Any]:
        if self.loader is not None and self.decode:
            with stage("read+decode+transform"):  # a loader= reads and decodes in one call
                image, target = self.loader(self.path(index)), int(self.targets[index])
                if self.transform is not None:
                    image = self.transform(image)
                if self.target_transform is not None:
                    target = self.target_transform(target)
            return image, target
        with stage("read"):
            data, target, path = self.encoded(index)
        with stage("decode+transform"):
            return build_item(
                data,
                target,
                path,
                decode=self.decode,
                transform=self.transform,
                target_transform=self.target_transform,
            )
