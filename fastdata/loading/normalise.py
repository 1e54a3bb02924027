"""What both main-process stages do to a finished batch: normalise its uint8
pixels and move its targets. :class:`~fastdata.loading.prefetch.CUDAPrefetcher`
(CPU-decoded batches) and :class:`~fastdata.gpu.stage.GPUBatches`
(GPU-decoded ones) use these, so the two paths give bit-identical numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..errors import ConfigError


def affine(
    mean: Sequence[float] | None,
    std: Sequence[float] | None,
    *,
    scale: float,
    channels: int,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(shift, factor)``, float32 ``(1, channels, 1, 1)`` tensors with which
    ``(x - shift) * factor`` is ``(x / scale - mean) / std`` per channel.

    ``mean`` and ``std`` hold one value or one per channel (None: 0 and 1).
    Full per-channel tensors, never a 1-element one: TensorIterator may turn
    division by a CPU scalar into a reciprocal multiply on one device and not
    the other, while sub and mul by these are exact on both.

    Raises:
        ConfigError: ``mean`` or ``std`` has another number of values.
    """
    mean = tuple(mean) if mean is not None else (0.0,)
    std = tuple(std) if std is not None else (1.0,)
    for name, values in (("mean", mean), ("std", std)):
        if len(values) not in (1, channels):
            raise ConfigError(f"{name} has {len(values)} values but the images have {channels} channels")
    def per_channel(values: list[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float32).view(1, channels, 1, 1).to(device or "cpu")

    shift = [m * scale for m in (mean * channels if len(mean) == 1 else mean)]
    factor = [1.0 / (s * scale) for s in (std * channels if len(std) == 1 else std)]
    return per_channel(shift), per_channel(factor)


def move_targets(targets: Any, device: torch.device) -> Any:
    """``targets`` on ``device`` (asynchronously from pinned memory) when a
    tensor; anything else (a detection dict, say) as it is."""
    return targets.to(device, non_blocking=True) if isinstance(targets, torch.Tensor) else targets
