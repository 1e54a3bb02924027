"""The CPU side of a GPU decode: many planned crops in one compiled call.

Used where samples that could go to the GPU decoder are cropped on the CPU
instead: the CPU share of a hybrid decode, in the workers
(:class:`~fastdata.gpu.samples.GPUSamples`), and images the GPU decoder refused,
in the main process (:mod:`fastdata.gpu.executor`). Either way the plans
were drawn before (same boxes and flips) and one
:func:`~fastdata.decode.batch.decode_batch` call crops them all with the GIL
released, the pixels of ``decode="cpu"`` bit for bit. What that call leaves
(no compiled decoder, a pure-Python backend asked for, input it declines)
is executed per sample by :meth:`Source.execute`, which gives the same
pixels; what fails there too is returned for ``dataset[key]``, so the
dataset's ``on_error`` policy sees it.
"""

from __future__ import annotations

import numpy as np

from ..datasets.policy import DATA_ERRORS
from ..decode import EncodedImage
from ..decode.batch import Request, batch_available, batch_request, decode_batch
from ..decode.native import wants_native
from ..loading.sample_plans import PlannedSample
from ..transforms.base import Source

__all__ = ["crop_batch"]


def crop_batch(samples: list[PlannedSample], size: tuple[int, int], backend: str = "auto") -> tuple[np.ndarray, list[int]]:
    """The samples' plans executed on the CPU.

    Args:
        samples: planned samples, every plan of output ``size``.
        size: ``(height, width)``.
        backend: the transform's decode backend (a pure-Python one is kept).

    Returns:
        uint8 ``(len(samples), height, width, 3)`` pixels, and the positions
        neither the batch call nor the per-sample path could make (their
        rows are zeros; the caller builds them with ``dataset[key]``).
    """
    out = np.zeros((len(samples), *size, 3), dtype=np.uint8)
    left = list(range(len(samples)))
    if samples and batch_available() and wants_native(backend):
        items, left = [], []
        for slot, p in enumerate(samples):
            request = _request(p)
            if request is None:
                left.append(slot)
            else:
                items.append((slot, p.data, request))
        left += [items[position][0] for position, _, _ in decode_batch(out, items)]
    failed = []
    for slot in sorted(left):
        p = samples[slot]
        try:
            out[slot] = Source(EncodedImage(p.data, p.name), backend).execute(p.plan)
        except DATA_ERRORS:
            failed.append(slot)
    return out, failed


def _request(p: PlannedSample) -> Request | None:
    plan = p.plan
    try:
        return batch_request(p.data, p.info, plan.box, min_size=plan.min_size, snap=plan.snap, flip=plan.flip,
                             name=p.name)
    except DATA_ERRORS:  # above max_pixels: the per-sample path raises it, and dataset[key] then decides
        return None
