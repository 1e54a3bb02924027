"""The registry's table: which package implements each format name.

The lowest piece of the registry, imported by :mod:`.registry` (which
re-exports :func:`names`, :func:`public_names` and ``_TABLE``) and by
:mod:`.manifest` (a manifest's shard sizes are its format's data files).
It imports no other module of the package, so neither side imports the other
through it; a format's package is imported on first lookup.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigError

# name: (package, public map-style class name, public streaming class name).
# The class names are those of the per-format classes written in fastdata.datasets.named
# (tests/datasets/test_named_classes.py holds the two equal).
_TABLE: dict[str, tuple[str, str | None, str | None]] = {
    "lmdb": ("fastdata.formats.lmdb", "LMDBDataset", None),
    "recordio": ("fastdata.formats.recordio", "RecordIODataset", "RecordIOStream"),
    "tfrecord": ("fastdata.formats.tfrecord", "TFRecordDataset", "TFRecordStream"),
}


def names() -> list[str]:
    """The registered format names, sorted."""
    return sorted(_TABLE)


def spec(name: str) -> Any:
    """The ``FORMAT`` (a :class:`~fastdata.formats.registry.FormatSpec`) of
    the package registered under ``name``; :func:`fastdata.formats.registry.get`
    is the typed door to it.

    Raises:
        ConfigError: no such format (the message lists the known ones).
    """
    try:
        module = _TABLE[name][0]
    except KeyError:
        raise ConfigError(f"unknown format {name!r}; choose one of {', '.join(names())}") from None
    return importlib.import_module(module).FORMAT


def public_names() -> dict[str, tuple[str, str]]:
    """``{class name: (format, "dataset" or "stream")}`` of the per-format
    classes, read from the table alone (no format package is imported)."""
    out = {}
    for name, (_, dataset, stream) in _TABLE.items():
        out.update({alias: (name, kind) for alias, kind in ((dataset, "dataset"), (stream, "stream")) if alias})
    return out
