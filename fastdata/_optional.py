"""Lazy imports of optional backends, failing with the pip command that fixes them."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError


def require(module: str, *, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra.

    Args:
        module: importable module name, e.g. ``"turbojpeg"``.
        extra: the fastdata extra that installs it, e.g. ``"turbo"``.
        purpose: what needs it, for the message.
        package: the PyPI name when it differs from the module name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = package or module
        raise MissingDependencyError(
            f"{purpose} needs the optional package {name!r}, which is not installed "
            f"or failed to load ({exc}). Fix: pip install 'fastdata[{extra}]'"
        ) from exc
