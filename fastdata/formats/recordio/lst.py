"""The class names of an im2rec ``.rec`` from its ``.lst`` (the registry's
``class_names`` hook); the list files themselves are :mod:`fastdata.formats.lst`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import FormatError
from ..lst import read_lst, write_lst

__all__ = ["class_names", "read_lst", "write_lst"]


def class_names(readers: Sequence[Any]) -> list[str] | None:
    """Class names of one im2rec ``.rec`` (the registry's ``class_names``
    hook): from the ``.lst`` beside it, the first directory of each path, when
    every integer label ``0..K-1`` maps to exactly one; else None."""
    if len(readers) != 1:
        return None
    lst = Path(readers[0].path).with_suffix(".lst")
    if not lst.is_file():
        return None
    names: dict[int, str] = {}
    try:
        for _, label, relpath in read_lst(lst):
            if not isinstance(label, float) or not label.is_integer() or "/" not in relpath:
                return None
            name = relpath.split("/", 1)[0]
            if names.setdefault(int(label), name) != name:
                return None
    except (FormatError, OSError):  # a broken .lst only costs the class names
        return None
    if sorted(names) != list(range(len(names))) or len(set(names.values())) != len(names):
        return None
    return [names[i] for i in range(len(names))]
