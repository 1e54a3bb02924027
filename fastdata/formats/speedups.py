"""Which code does the per-record arithmetic of writing shards: the compiled
helpers (``fastdata.formats._speedups``) or their portable Python twins.

The compiled module needs nothing but a C compiler at install time; without
one the install still succeeds, shards come out byte for byte the same, and
writing costs more CPU per record (the magic-word search and a second CRC32C
pass over every payload). :func:`status` says which path is in use and why,
and ``fastdata bench`` prints it, so a slow path is never silent.

Callers read :data:`native` at each call (None means the portable path);
:func:`using` switches it, for tests and benchmarks that compare the two.
CRC-32C itself is chosen once at import, by :mod:`.crc`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

from . import crc
from ._compiled import NAME
from ._compiled import module as _compiled
from ._compiled import why as _why

native: ModuleType | None = _compiled
"""The compiled module in use, or None for the portable path."""

FIX = "a C compiler at install time builds it (pip install -e . in a checkout, or reinstall fastdata)"


def available() -> bool:
    """Whether the compiled helpers were built and import."""
    return _compiled is not None


def status() -> str:
    """One line: which path writes records (and which code computes CRC-32C),
    and how to get the compiled one if it is missing."""

    if native is not None:
        path = f"compiled ({NAME})"
    elif _compiled is not None:
        path = "portable Python path (switched off with fastdata.formats.speedups.using(False))"
    else:
        path = f"portable Python path, more CPU per record: {_why}; {FIX}"
    return f"{path}; CRC32C: {crc.describe()}"


@contextlib.contextmanager
def using(compiled: bool) -> Iterator[None]:
    """Within the block, write with the compiled helpers (``True``) or the
    portable path (``False``).

    Raises:
        RuntimeError: ``True`` asked where the compiled module is not built.
    """
    global native
    if compiled and _compiled is None:
        raise RuntimeError(f"the compiled write helpers are not available: {_why}; {FIX}")
    before, native = native, (_compiled if compiled else None)
    try:
        yield
    finally:
        native = before
