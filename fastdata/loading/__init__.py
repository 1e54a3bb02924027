"""Everything between a map-style dataset and the training step: uint8
collate, GPU prefetch and normalisation, seeded workers, rank-sharded
sampling and a resumable loader. DALI pipelines live in ``fastdata.dali``."""

from .collate import FastCollate, fast_collate
from .loader import Loader, make_loader
from .prefetch import CUDAPrefetcher
from .sampler import ShardedSampler
from .seeding import WorkerSeeder, seed_everything, seed_worker

__all__ = [
    "CUDAPrefetcher",
    "FastCollate",
    "Loader",
    "ShardedSampler",
    "WorkerSeeder",
    "fast_collate",
    "make_loader",
    "seed_everything",
    "seed_worker",
]
