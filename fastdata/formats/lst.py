"""im2rec's ``.lst`` list files: ``index<TAB>label[<TAB>label...]<TAB>relpath``.

A list of image files with their labels, not a shard format: ``fastdata
convert --list`` reads one as its source, and RecordIO's ``class_names``
hook reads the one beside an im2rec ``.rec``. Here, beside the formats,
so neither has to import the other.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable, Sequence

from ..errors import FormatError

LstLabel = float | tuple[float, ...]


def read_lst(path: str | os.PathLike[str]) -> list[tuple[int, LstLabel, str]]:
    """Parse a ``.lst`` file.

    Returns:
        ``(index, label, relpath)`` per line in file order; ``label`` is a
        float when the line has one label, else a tuple of floats. Blank
        lines are skipped.

    Raises:
        FormatError: a line with fewer than three tab-separated fields, or a
            non-numeric index or label (names the line and its byte offset).
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    items: list[tuple[int, LstLabel, str]] = []
    pos = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.rstrip(b"\r")
        if line.strip():
            fields = [field.strip() for field in line.split(b"\t")]
            try:
                if len(fields) < 3:
                    raise ValueError("fewer than 3 fields")
                labels = tuple(float(x) for x in fields[1:-1])
                items.append((int(fields[0]), labels[0] if len(labels) == 1 else labels, fields[-1].decode("utf-8")))
            except (ValueError, UnicodeDecodeError) as exc:
                raise FormatError(
                    f"line {number} is {line[:80]!r}, expected 'index<TAB>label...<TAB>path' ({exc})",
                    path=path, offset=pos,
                ) from None
        pos += len(raw) + 1
    return items


def write_lst(path: str | os.PathLike[str], items: Iterable[tuple[int, float | Sequence[float], str]]) -> None:
    """Write ``(index, label or labels, relpath)`` items as a ``.lst`` file.

    Integral labels are written as im2rec does (``2.000000``); other values
    with full float precision.

    Raises:
        ValueError: a path containing a tab or newline, or no label.
    """
    lines = []
    for index, label, relpath in items:
        labels = [label] if isinstance(label, (int, float, numbers.Real)) else list(label)
        if not labels:
            raise ValueError(f"item {index} ({relpath!r}) has no label")
        if any(c in relpath for c in "\t\n\r"):
            raise ValueError(f"item {index}: path {relpath!r} contains a tab or newline, which .lst cannot hold")
        text = "\t".join(_format_label(float(x)) for x in labels)
        lines.append(f"{int(index)}\t{text}\t{relpath}\n")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(lines))


def _format_label(x: float) -> str:
    return f"{x:f}" if x.is_integer() else repr(x)
