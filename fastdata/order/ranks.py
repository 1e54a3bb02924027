"""Which rank this process is and how many ranks read: one resolver for every entry point.

The vocabulary is ``rank`` / ``world_size``. Older spellings -- ``make_loader``'s
``distributed=`` and DALI's ``shard_id`` / ``num_shards`` -- are resolved here
too (``names`` and ``spelled`` only change the words of the errors), so every
entry point refuses the same mistakes: ranks that would read the same samples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError

__all__ = ["Distributed", "Place", "current_rank", "from_distributed", "resolve_place"]

Distributed = Literal["auto"] | bool | tuple[int, int]


def _group() -> tuple[int, int] | None:
    """``(rank, world_size)`` of the initialised torch.distributed group, else None."""
    try:
        import torch.distributed as dist
    except ImportError:  # a torch built without distributed support
        return None
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return None


@dataclass(frozen=True)
class Place:
    """This process's rank among ``world_size`` readers; ``explicit`` when the caller gave it."""

    rank: int = 0
    world_size: int = 1
    explicit: bool = False

    def check_unchanged(self, what: str) -> None:
        """Refuse a place found before ``init_process_group`` that the group now contradicts."""
        group = _group()
        if not self.explicit and group is not None and group[1] != self.world_size:
            raise ConfigError(
                f"{what} was created for world_size {self.world_size} but torch.distributed now has "
                f"{group[1]} ranks; create it after init_process_group()"
            )


def resolve_place(
    rank: int | None = None,
    world_size: int | None = None,
    *,
    train: bool = True,
    require_group: bool = False,
    names: tuple[str, str] = ("rank", "world_size"),
    spelled: str | None = None,
) -> Place:
    """The :class:`Place` for ``rank`` and ``world_size``: as given, else the
    process group's, else ``(0, 1)``.

    Args:
        rank, world_size: both or neither.
        train: refuse set-ups in which ranks would train on the same samples
            (evaluation on every rank is allowed).
        require_group: neither given means "the process group's", which must exist.
        names: the caller's words for rank and world size, for the errors.
        spelled: how the caller's user wrote it (``"distributed=False"``), for the errors.

    Raises:
        ConfigError: one of the two given; ``rank`` out of range; for
            training, ``world_size=1`` under a process group of several ranks,
            or ``WORLD_SIZE > 1`` (a torchrun launch) with no process group yet.
    """
    a, b = names
    group = _group()
    if rank is None and world_size is None:
        if group is not None:
            return Place(*group)
        if require_group:
            raise ConfigError(
                f"{spelled or 'distributed=True'} but no torch.distributed process group is initialised: call "
                f"torch.distributed.init_process_group() first, or pass {a}= and {b}="
            )
        launched = os.environ.get("WORLD_SIZE", "1")
        if train and launched.isdigit() and int(launched) > 1:
            raise ConfigError(
                f"WORLD_SIZE={launched} (a torchrun launch?) but no torch.distributed process group is "
                "initialised, so every rank would read the same samples: call "
                f"torch.distributed.init_process_group() first, or pass {a}= and {b}="
            )
        return Place()
    if rank is None or world_size is None:
        raise ConfigError(
            f"pass both {a} and {b}, or neither (then torch.distributed decides); got {a}={rank}, {b}={world_size}"
        )
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ConfigError(f"need 0 <= {a} < {b}, got {a}={rank}, {b}={world_size}: {a} {rank} is out of range")
    if train and world_size == 1 and group is not None and group[1] > 1:
        raise ConfigError(
            f"{spelled or f'{b}=1'} under a torch.distributed group of {group[1]} ranks: every rank would read "
            f"the same samples in the same order. Leave {a} and {b} unset to shard by rank; "
            "to evaluate on every rank pass train=False"
        )
    return Place(rank, world_size, explicit=True)


def from_distributed(distributed: Distributed, *, train: bool) -> Place:
    """``make_loader``'s older ``distributed=`` spelling, resolved by :func:`resolve_place`:
    ``"auto"`` (the group's, else one rank), ``True`` (the group's, which must
    exist), ``False`` (this process reads everything) or ``(rank, world_size)``."""
    spelled = f"distributed={distributed!r}"
    if isinstance(distributed, tuple):
        if len(distributed) != 2:
            raise ConfigError(f"distributed=(rank, world_size) needs two ints, got {distributed!r}")
        return resolve_place(*distributed, train=train, spelled=spelled)
    if distributed == "auto" or distributed is True:
        return resolve_place(train=train, require_group=distributed is True, spelled=spelled)
    if distributed is False:
        return resolve_place(0, 1, train=train, spelled=spelled)
    raise ConfigError(f"distributed must be 'auto', True, False or (rank, world_size), got {distributed!r}")


def current_rank() -> int:
    """This process's rank as far as it is known: the group's, else ``$RANK`` (torchrun), else 0."""
    group = _group()
    if group is not None:
        return group[0]
    value = os.environ.get("RANK", "0")
    return int(value) if value.isdigit() else 0
