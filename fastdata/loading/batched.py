"""The loader threads' executor: a whole batch of plans in one compiled call.

With ``Workers(kind="threads")`` a batch is ``collate_fn([dataset[key] for
key in keys])`` unless the samples are planned crops
(:class:`~.sample_plans.SamplePlans`: a fastdata dataset whose transform answers
``plan``, per-sample seeding) collated by :class:`FastCollate`. Then each
sample is read and planned while holding the GIL, and one C call decodes
every sample straight into its slot of the batch with the GIL released
(:func:`fastdata.decode.batch.decode_batch`): the same batch bit for bit.
Profiled on 2 threads (py-spy --gil), the per-sample path held the GIL for
the sample's generator (a quarter of it), the record read, header, box and
plan, and for the transform, dataset and collate wrappers around them; this
path keeps the planning only, and writes NCHW slots with a SIMD copy
instead of NumPy's byte-by-byte transpose.

A sample the plan half leaves out, or the compiled decoder declines or fails
on, is built again by ``dataset[key]`` under the same key (same draws), so
the dataset's ``on_error`` policy, its messages and the pure-Python
fallback apply to it exactly as on the per-sample path.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from ..datasets.policy import DATA_ERRORS
from ..decode.batch import Request, batch_available, batch_request, decode_batch
from ..decode.native import wants_native
from .clock import NO_CLOCK, StageClock
from .collate import FastCollate, collate_targets, copy_image, empty_batch, image_source
from .sample_plans import PlannedSample, SamplePlans

__all__ = ["BatchedPlans"]


class BatchedPlans:
    """Builds the batch of a list of sample keys (see the module docstring).

    :meth:`of` returns None for a set-up it does not cover; the caller then
    keeps the per-sample path.
    """

    def __init__(self, plans: SamplePlans, collate: FastCollate) -> None:
        self.plans, self.keyed, self.collate = plans, plans.keyed, collate
        self.clock: StageClock = NO_CLOCK  # Loader.stats: read+plan, then the one decode+collate call

    @classmethod
    def of(cls, keyed: Any, collate_fn: Any) -> BatchedPlans | None:
        # Its own collate only: a user's collate_fn sees the samples themselves.
        if not batch_available() or type(collate_fn) is not FastCollate:
            return None
        plans = SamplePlans.of(keyed)
        if plans is None or not wants_native(getattr(plans.transform, "backend", "auto")):
            return None  # a transform asked for a pure-Python backend keeps it
        return cls(plans, collate_fn)

    def _per_sample(self, keys: list[Any]) -> Any:
        return self.collate([self.keyed[key] for key in keys])

    def __call__(self, keys: list[Any]) -> Any:
        clock = self.clock
        with clock.span("read+plan"):
            planned = self.plans.plans(keys)
        sizes = {p.plan.size for p in planned if p is not None}
        if len(sizes) != 1:
            with clock.span("redo"):
                return self._per_sample(keys)  # nothing planned, or sizes the collate will name in its error
        (h, w), = sizes
        with clock.span("decode+collate"):
            out = empty_batch((len(keys), 3, h, w), self.collate.memory_format, self.collate.pin_memory)
            hwc = out.permute(0, 2, 3, 1).numpy()
            items, redo = [], []
            for slot, p in enumerate(planned):
                request = _request(p) if p is not None else None
                if p is None or request is None:
                    redo.append(slot)
                else:
                    items.append((slot, p.data, request))
            redo += [items[position][0] for position, _, _ in decode_batch(hwc, items)]
        targets = [p.target if p is not None else None for p in planned]
        with clock.span("redo") if redo else contextlib.nullcontext():
            for slot in sorted(redo):
                image, targets[slot] = self.keyed[keys[slot]]
                src = image_source(image, slot)
                if src.shape != (3, h, w):
                    return self._per_sample(keys)  # its error names the sizes
                copy_image(out, hwc, slot, src, self.collate.memory_format == torch.channels_last)
        return out, collate_targets(targets)


def _request(p: PlannedSample) -> Request | None:
    plan = p.plan
    try:
        return batch_request(p.data, p.info, plan.box, min_size=plan.min_size, snap=plan.snap, flip=plan.flip,
                             name=p.name)
    except DATA_ERRORS:  # above max_pixels: dataset[key] raises or skips it as on_error says
        return None
