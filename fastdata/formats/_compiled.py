"""The compiled write helpers (``fastdata.formats._speedups``), or None where
they were not built; imported here once so that :mod:`.crc` and
:mod:`.speedups` both read it without importing each other."""

from __future__ import annotations

from types import ModuleType

NAME = "fastdata.formats._speedups"

module: ModuleType | None
try:
    from . import _speedups
except ImportError as exc:  # not built: no compiler at install time, or a source tree not built in place
    module = None
    why = f"{NAME} is not built ({exc})"
else:
    module = _speedups
    why = ""
