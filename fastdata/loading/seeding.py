"""Seeds for DataLoader workers and the main process, as pure functions of
``(seed, epoch, rank, worker_id)`` (derived in :mod:`fastdata.order.seeds`).

Every stream a worker may draw from -- Python's ``random``, NumPy's global
state, torch's CPU generator and :func:`fastdata.rng.generator` -- is seeded
from those four numbers, so workers and ranks differ and reruns repeat.
"""

from __future__ import annotations

import os

import torch
from torch.utils.data import get_worker_info

from ..errors import ConfigError
from ..order import seeds
from ..order.generators import seed_process, seed_streams
from ..order.ranks import current_rank

__all__ = ["WorkerSeeder", "seed_everything", "seed_process", "seed_worker"]


def seed_worker(worker_id: int) -> None:
    """A ready-made ``worker_init_fn`` for a plain ``torch.utils.data.DataLoader``.

    The base seed is the one PyTorch drew for this epoch's workers
    (``get_worker_info().seed - worker_id``): it comes from the DataLoader's
    ``generator`` (or torch's global generator), so pass
    ``generator=torch.Generator().manual_seed(seed)`` -- or call
    :func:`seed_everything` first -- for reruns to repeat. The rank is read
    from the process group or ``$RANK``. With ``persistent_workers=True`` this
    runs once, so later epochs continue the same streams; ``make_loader``
    avoids that with per-sample seeds (see :class:`WorkerSeeder`).

    Raises:
        ConfigError: when called outside a DataLoader worker.
    """
    info = get_worker_info()
    if info is None:
        raise ConfigError("seed_worker is a DataLoader worker_init_fn; in the main process call seed_everything(seed)")
    seed_process(info.seed - worker_id, 0, current_rank(), worker_id)


class WorkerSeeder:
    """Picklable ``worker_init_fn`` seeding from an explicit ``(seed, epoch, rank)``.

    ``make_loader`` sets :attr:`epoch` before each epoch's workers start, so
    non-persistent workers get fresh streams every epoch; persistent workers
    are reseeded by :class:`fastdata.order.KeyScope` when a new epoch's first
    sample reaches them.
    """

    def __init__(self, seed: int, *, rank: int = 0, epoch: int = 0) -> None:
        self.seed = int(seed)
        self.rank = int(rank)
        self.epoch = int(epoch)

    def __call__(self, worker_id: int) -> None:
        seed_process(self.seed, self.epoch, self.rank, worker_id)

    def __repr__(self) -> str:
        return f"WorkerSeeder(seed={self.seed}, rank={self.rank}, epoch={self.epoch})"


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed the main process: ``random``, NumPy, torch (CPU and every GPU), fastdata.rng.

    Args:
        seed: any int; the same seed gives the same streams.
        deterministic: also make cuDNN deterministic (and turn off its
            benchmark autotuner), call ``torch.use_deterministic_algorithms(True)``
            and set ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` unless already set
            (cuBLAS needs it for reproducible results). Slower; ops without a
            deterministic version then raise. ``False`` leaves those flags alone.

    Returns:
        ``seed``, so ``seed = seed_everything(args.seed)`` reads well.

    ``PYTHONHASHSEED`` cannot be changed for a running interpreter; set it in
    the environment if set/dict iteration order of str keys matters to you.
    """
    seed = int(seed)
    seed_streams(*seeds.global_seeds(seed), seeds.main_generator(seed))
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True)
    return seed
