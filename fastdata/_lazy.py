"""numpy imported where first used, not where a module is imported.

numpy's import costs 0.1-0.15 s, more than a pass-through conversion of a
thousand images, and the modules a conversion needs (RecordIO's writer and
index, the checksums) use it only for reading whole indexes or label vectors.
Such a module writes::

    if TYPE_CHECKING:
        import numpy as np
    else:
        np = lazy_numpy(globals())

and its first ``np.<name>`` imports numpy and rebinds the module's ``np`` to
it, so every later use is the plain module attribute.
"""

from __future__ import annotations

from typing import Any


def lazy_numpy(namespace: dict[str, Any]) -> Any:
    """A stand-in for ``numpy`` in ``namespace`` (a module's ``globals()``) under the name ``np``."""

    class _Numpy:
        def __getattr__(self, name: str) -> Any:
            import numpy

            namespace["np"] = numpy
            return getattr(numpy, name)

        def __repr__(self) -> str:
            return "<numpy, imported on first use>"

    return _Numpy()
