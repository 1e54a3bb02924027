"""Human-friendly sizes for command-line options (``256M``, ``1G``) and back."""

from __future__ import annotations

import re

from fastdata.errors import ConfigError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Parse a byte count such as ``"1048576"``, ``"256M"``, ``"1.5G"`` or ``"64KiB"``.

    Suffixes are binary (K = 1024). Raises :class:`ConfigError` for anything
    else, or for a size that is not positive.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError(f"cannot read {text!r} as a size in bytes; write it like 262144, 256K, 256M or 1G")
    value = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if value <= 0:
        raise ConfigError(f"size {text!r} must be positive")
    return value


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``: short, for summaries."""
    if abs(n) < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if abs(n) < 1024 or unit == "TiB":
            break
    return f"{n:.1f} {unit}"
