"""Whether the peers fastdata is timed against are installed (imported only to see)."""

from __future__ import annotations


def has_dali() -> bool:
    try:
        import nvidia.dali  # noqa: F401 -- imported only to see whether it imports
    except ImportError:
        return False
    return True


def has_tfrecord_package() -> bool:
    try:
        import tfrecord  # noqa: F401 -- imported only to see whether it imports
    except ImportError:
        return False
    return True
