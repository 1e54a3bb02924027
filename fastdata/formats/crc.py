"""The CRC-32C every fastdata writer and checker uses, chosen once at import.

Where the compiled helpers are built and the CPU has a CRC instruction,
:data:`crc32c` is ``fastdata.formats._speedups.crc32c`` itself: no Python
frame per call, and no ``crc32c`` package import (whose ``__init__`` reads
``importlib.metadata`` for its version: ~27 ms of every ``fastdata convert``).
Elsewhere it is the crc32c package's function, imported on the first call, so
the answers are the same everywhere; :func:`describe` says which (and
``fastdata.formats.speedups.status()`` prints it).

Bind it at import (``from .crc import crc32c``): the choice never changes
while the process runs, and ``speedups.using(False)`` leaves it alone.
:data:`portable` is the package path, for tests and benchmarks to compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._compiled import module as _compiled

__all__ = ["crc32c", "describe", "hardware", "portable"]

hardware: str | None = getattr(_compiled, "crc32c_hardware", None)
"""The instruction set the compiled CRC uses (``"sse4.2"``), or None where
the package computes it (the helpers are not built, or the CPU or the build
has no CRC instruction)."""

_package: Callable[..., int] | None = None


def portable(data: Any, value: int = 0, /) -> int:
    """The crc32c package's ``crc32c(data, value)``, imported on the first call."""
    global _package, crc32c
    if _package is None:
        from crc32c import crc32c as package  # imported here: ~27 ms, paid only where it is needed

        _package = package
        if crc32c is portable:  # callers that look the name up here skip this frame from now on
            crc32c = package
    return _package(data, value)


crc32c: Callable[..., int] = _compiled.crc32c if _compiled is not None and hardware is not None else portable
"""``crc32c(data, value=0)``: the CRC-32C of the buffer ``data`` continuing
from ``value``, so ``crc32c(b, crc32c(a)) == crc32c(a + b)``; as the crc32c
package computes it."""


def describe() -> str:
    """A few words for a status line: which code computes CRC-32C."""
    if hardware is not None:
        return f"{hardware} instruction (compiled)"
    if _compiled is None:
        return "crc32c package (compiled helpers not built)"
    return "crc32c package (no CRC instruction on this CPU or in this build)"
