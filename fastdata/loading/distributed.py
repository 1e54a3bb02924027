"""Which shard this process reads, and the refusal to let ranks read the same data."""

from __future__ import annotations

import os
from typing import Literal

import torch

from ..errors import ConfigError

__all__ = ["Distributed", "resolve_shard"]

Distributed = Literal["auto"] | bool | tuple[int, int]


def _group() -> tuple[int, int] | None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return int(torch.distributed.get_rank()), int(torch.distributed.get_world_size())
    return None


def resolve_shard(distributed: Distributed, *, train: bool) -> tuple[int, int]:
    """``(rank, world_size)`` for ``distributed``:

    * ``"auto"``: the initialised process group's, else ``(0, 1)``.
    * ``True``: the process group's; raises if none is initialised.
    * ``False``: ``(0, 1)``: this process reads every sample.
    * ``(rank, world_size)``: as given (no process group needed).

    Raises:
        ConfigError: for training, whenever ranks would read identical data: a
            process group of world size > 1 with ``distributed=False``, or
            torchrun's ``WORLD_SIZE`` > 1 with no process group under "auto".
    """
    group = _group()
    if isinstance(distributed, tuple):
        if len(distributed) != 2:
            raise ConfigError(f"distributed=(rank, world_size) needs two ints, got {distributed!r}")
        rank, world = (int(v) for v in distributed)
        if world < 1 or not 0 <= rank < world:
            raise ConfigError(f"distributed=(rank, world_size) needs 0 <= rank < world_size, got {distributed!r}")
        return rank, world
    if distributed == "auto":
        if group is not None:
            return group
        env_world = os.environ.get("WORLD_SIZE", "1")
        if train and env_world.isdigit() and int(env_world) > 1:
            raise ConfigError(
                f"WORLD_SIZE={env_world} (a torchrun launch?) but no torch.distributed process group is "
                "initialised, so every rank would train on the same samples: call "
                "torch.distributed.init_process_group() before make_loader, or pass "
                "distributed=(rank, world_size)"
            )
        return 0, 1
    if distributed is True:
        if group is None:
            raise ConfigError(
                "distributed=True but no torch.distributed process group is initialised: call "
                "torch.distributed.init_process_group() first, or pass distributed=(rank, world_size)"
            )
        return group
    if distributed is False:
        if train and group is not None and group[1] > 1:
            raise ConfigError(
                f"distributed=False under a process group of {group[1]} ranks: every rank would train on the "
                "same samples in the same order. Use distributed='auto' (shards by rank); for evaluation "
                "on every rank pass train=False"
            )
        return 0, 1
    raise ConfigError(f"distributed must be 'auto', True, False or (rank, world_size), got {distributed!r}")
