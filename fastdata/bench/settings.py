"""What a ``fastdata bench`` run times: the formats, the conversion sizes,
the group notes and the :class:`Settings` every row is built from."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..formats import registry

_SHOWN_FIRST = ("recordio", "tfrecord", "lmdb")
FORMATS = tuple(sorted(registry.names(), key=lambda name: (*_SHOWN_FIRST, name).index(name)))
DEFAULT_FORMATS = ("recordio", "tfrecord")
"""The formats the default grid converts to and times (``--full``: all of :data:`FORMATS`)."""
Convert = Callable[..., None]  # (src, out, format, workers, resize=None, restart_markers=None)

CONVERT_IMAGES = 2000
"""Conversion rows convert at least this many files (the source's, hard-linked over again when fewer),
so that the part beyond start-up is long enough to measure."""
CONVERT_TINY = 8
"""...and a folder of this many, whose time is subtracted: start-up (pool, plan, manifest) is left out."""

GROUP_NOTES = {
    "read": "one core, no decoding; each pass reads the records over again until it has lasted the pass time",
    "convert": "images/s beyond start-up, in this process: a pass converts {n} files, then a folder of {k} "
               "(both from the page cache), until it has lasted the pass time; rate = ({n} - {k}) / (t_{n} - t_{k}). The "
               "plain loop and --passthrough do the same work (each JPEG's bytes as they are; fastdata adds "
               "checksums, checks and a manifest); (default) also rewrites each JPEG with restart markers",
}
"""What a group's figures are, said under the table and on the chart's panel (``{n}``/``{k}``: the convert sizes)."""


@dataclasses.dataclass
class Settings:
    src: str
    shards: dict[str, str]  # source label ("recordio", "recordio --resize 256") -> converted directory
    workers: int = 2
    batch_size: int = 32
    seed: int = 0
    dali: bool = True
    groups: tuple[str, ...] = ("train", "eval")
    convert: Convert | None = None
    scratch: str = ""
    pass_images: int = 0  # a timed pipeline pass reads whole epochs until it has read this many...
    pass_seconds: float = 0.0  # ...and lasted this long
    full: bool = False
    convert_images: int = CONVERT_IMAGES
    converted_files: int = 0  # set by build(): how many files the conversion rows convert
