"""What a dataset does with a corrupt sample: ``on_error="raise" | "skip" | "warn"``.

* ``"raise"`` (default): the :class:`~fastdata.errors.FormatError` or
  :class:`~fastdata.errors.DecodeError` propagates; its message names the shard
  and the record index or key (or the file, for folders).
* ``"skip"``: a map-style dataset returns the next readable sample instead
  (index ``i + 1``, ``i + 2``, ... wrapping around, so the replacement is
  deterministic); a stream drops the sample. Either way the skip is counted in
  ``dataset.skipped`` and the first one in each process is logged.
* ``"warn"``: as ``"skip"``, plus a :class:`RuntimeWarning` per skipped sample.

Only data errors are covered; a bug in a transform still raises.
``dataset.skipped`` sums the skips of this process and of the DataLoader
workers it started (the counters live in shared memory).
"""

from __future__ import annotations

import logging
import warnings

from ..errors import ConfigError, DecodeError, FormatError
from ._shared import MAX_WORKERS, SharedSlots, process_slot

POLICIES = ("raise", "skip", "warn")
DATA_ERRORS = (FormatError, DecodeError)

_log = logging.getLogger("fastdata.datasets")


def check_policy(on_error: str) -> str:
    if on_error not in POLICIES:
        raise ConfigError(f"on_error must be one of {', '.join(map(repr, POLICIES))}, got {on_error!r}")
    return on_error


class SkipCounter:
    """Counts skipped samples across a dataset's processes and reports them."""

    def __init__(self, on_error: str) -> None:
        self.on_error = check_policy(on_error)
        # shared memory holds a file descriptor: only policies that skip need it
        self._slots = SharedSlots(MAX_WORKERS + 1) if on_error != "raise" else None
        self._logged = False

    @property
    def total(self) -> int:
        return self._slots.total() if self._slots is not None else 0

    def record(self, exc: Exception, replacement: str) -> None:
        """Count one skipped sample whose error was ``exc``."""
        if self._slots is None:
            raise RuntimeError("SkipCounter.record called under on_error='raise'")  # a bug in the caller
        self._slots.add(process_slot())
        message = f"fastdata: skipped a corrupt sample ({exc}); {replacement}"
        if self.on_error == "warn":
            warnings.warn(message, RuntimeWarning, stacklevel=3)
        elif not self._logged:
            _log.warning("%s (further skips are only counted in dataset.skipped)", message)
        self._logged = True
