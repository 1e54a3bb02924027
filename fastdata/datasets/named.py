"""The per-format dataset classes (``RecordIODataset``, ``TFRecordStream``...).

Each is the generic class (:class:`~fastdata.datasets.shards.FormatDataset`
or :class:`~fastdata.datasets.iterable.FormatStream`) with its format fixed
and the format's reader options (its ``FormatSpec.options`` dataclass) as
keywords. The format registry names them
(``fastdata.formats.registry.public_names()``) and this module makes each
from the registry on first use, so the options are written once, by the
format. Importing this module imports no format package; a class's first
use imports its format's.

Type checkers and IDEs (the package ships ``py.typed``) read the signatures
from ``named.pyi``; ``tests/datasets/test_named_classes.py`` checks that stub
against the registry and against the classes made here, name for name,
keyword for keyword, default for default.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from ..formats import registry
from .iterable import FormatStream
from .shards import FormatDataset

__all__ = sorted(registry.public_names())

_BASES: dict[str, type] = {"dataset": FormatDataset, "stream": FormatStream}
_MADE: dict[str, type] = {}


def public_class(format_name: str, kind: str = "dataset") -> type:
    """The class ``open_dataset`` gives for ``format_name``: its per-format
    class of ``kind`` ("dataset" or "stream") when the registry names one,
    else the generic class."""
    names = [n for n, found in registry.public_names().items() if found == (format_name, kind)]
    return per_format(names[0]) if names else _BASES[kind]


def per_format(name: str) -> type:
    """The class ``name`` the registry lists, made once per process.

    Raises:
        AttributeError: the registry lists no class ``name``.
    """
    found = registry.public_names().get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = _MADE.get(name)
    return made if made is not None else _MADE.setdefault(name, _made(name, *found))  # one class, whichever thread wins


def _made(name: str, format_name: str, kind: str) -> type:
    """``name``: the generic class of ``kind`` with ``format_name`` fixed,
    signed with the common keywords (less ``format``) and the format's options."""
    base = _BASES[kind]
    spec = registry.get(format_name)
    common = [
        p for p in inspect.signature(base).parameters.values() if p.name != "format" and p.kind is not p.VAR_KEYWORD
    ]
    options = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
        for f in dataclasses.fields(spec.options)
    ]
    signature = inspect.Signature(common + options)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:  # as a written-out signature would: format= (fixed here) or an option of another format is refused
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}.__init__() {exc}") from None
        base.__init__(self, *args, **kwargs)  # type: ignore[misc]

    __init__.__qualname__ = f"{name}.__init__"
    __init__.__module__ = __name__
    doc = (
        f"{base.__name__} over {format_name} shards ({', '.join(spec.suffixes)}): ``{name}(path, ...)`` is "
        f"``{base.__name__}(path, format={format_name!r}, ...)``.\n\n"
        f"Args: as for :class:`{base.__module__}.{base.__name__}`, plus the format's options "
        f"({spec.options.__name__}): {inspect.cleandoc(spec.options.__doc__ or '')}\n"
    )
    return type(
        name,
        (base,),
        {
            "fixed_format": format_name,
            "__init__": __init__,
            "__doc__": doc,
            "__module__": __name__,
            "__qualname__": name,
            "__signature__": signature,
        },
    )


def __getattr__(name: str) -> type:
    # RecordIODataset, TFRecordStream...: made on first use, importable and
    # picklable by name from this module.
    return per_format(name)
