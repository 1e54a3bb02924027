"""``Workers(kind="auto")``: threads or worker processes, chosen from the dataset.

Threads win only when a sample's work runs with the GIL released: fastdata's
decode-aware transforms on the compiled crop decoder (about 85 % of a sample
outside the GIL, ``fastdata.loading.threaded``). Anything that keeps Python
busy per sample (a PIL/torchvision transform, a plain callable in a
``Compose``, the pure-Python decode) serialises threads on the GIL, where
processes still use every core. So "auto" picks threads only when it can see
the whole per-sample pipeline and all of it is of the first kind; everything
it cannot see goes to processes, the DataLoader's own behaviour.
"""

from __future__ import annotations

from typing import Any, Literal

from .streamed import is_stream

__all__ = ["choose_kind"]


def choose_kind(dataset: Any, *, seeding: str, context: str | None) -> tuple[Literal["threads", "processes"], str]:
    """``("threads" | "processes", why)`` for ``Workers(kind="auto")`` over ``dataset``."""
    if is_stream(dataset):
        return "processes", "a stream (threads read map-style datasets)"
    if seeding != "sample":
        return "processes", f"seeding={seeding!r} seeds per worker process"
    if context is not None:
        return "processes", f"context={context!r} names a process start method"
    owner = _transform_owner(dataset)
    if owner is None:
        return "processes", f"{type(dataset).__name__} has no transform= that fastdata can inspect"
    if not getattr(owner, "decode", True):
        return "processes", "decode=False: no decode-aware transform runs"
    transform = owner.transform
    if transform is None or not getattr(transform, "decode_aware", False):
        name = "no transform" if transform is None else f"transform {_name(transform)} is not decode-aware"
        return "processes", f"{name}: the decode runs in Python (PIL) and holds the GIL"
    held = _python_steps(transform)
    if held:
        return "processes", f"Python callable(s) {', '.join(held)} among the transforms hold the GIL"
    from ..decode.native import native_available, note_pure_path, wants_native

    if not wants_native(getattr(transform, "backend", "auto")):
        note_pure_path()  # here, before workers start, so that they do not each say it again
        how = "FASTDATA_NATIVE=0 chose it" if native_available() else "the compiled crop decoder is missing"
        return "processes", f"the crop decode is pure Python ({how}; fastdata.decode.native_status() says why and how)"
    return "threads", f"{_name(transform)} decodes with the compiled crop decoder, which releases the GIL"


def _transform_owner(dataset: Any) -> Any:
    # torch's Subset / ConcatDataset-like wrappers keep the real dataset in .dataset
    for _ in range(4):
        if hasattr(dataset, "transform"):
            return dataset
        dataset = getattr(dataset, "dataset", None)
        if dataset is None:
            return None
    return None


def _python_steps(transform: Any) -> list[str]:
    """Names of the steps of ``transform`` that are not fastdata transforms."""
    from ..transforms import Compose
    from ..transforms.base import Transform

    if isinstance(transform, Compose):
        return [n for t in transform.transforms for n in _python_steps(t)]
    return [] if isinstance(transform, Transform) else [_name(transform)]


def _name(obj: Any) -> str:
    from ..transforms import Compose

    if isinstance(obj, Compose):
        return f"Compose({', '.join(_name(t) for t in obj.transforms)})"
    kind = type(obj)
    if kind.__name__ == "function":
        return getattr(obj, "__name__", "a function")
    return kind.__name__
