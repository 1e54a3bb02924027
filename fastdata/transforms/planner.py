"""Finding a transform's planner: the one question executors ask of a transform.

A loader executes plans (:class:`~fastdata.decode.plan.CropPlan`) in batch,
on loader threads or on the GPU, only for a transform that answers ``plan``;
any other (a user's callable, a flip alone, a chain that goes on after its
crop) runs whole, sample by sample. No type is switched on: a new
decode-aware transform that answers ``plan`` and ``output_size`` runs on
every executor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..decode.plan import CropPlan

Planner = Callable[[int, int, int, "np.random.Generator | None"], "CropPlan | None"]
"""``plan(height, width, orientation, generator)``: see :class:`~fastdata.transforms.base.Transform`."""


def planner_of(transform: Any) -> Planner | None:
    """``transform.plan`` when it has one, else None."""
    plan = getattr(transform, "plan", None)
    return plan if callable(plan) else None
