"""Everything between a dataset and the training step: uint8 collate, GPU
prefetch and normalisation, seeded workers, rank-sharded sampling and a
resumable loader over map-style datasets and streams. DALI pipelines live in
``fastdata.dali``; the order and seeds themselves in ``fastdata.order``."""

from .collate import FastCollate, fast_collate
from .loader import Loader
from .make import make_loader
from .prefetch import CUDAPrefetcher
from .sampler import ShardedSampler
from .seeding import WorkerSeeder, seed_everything, seed_worker
from .settings import Prefetch, Workers

__all__ = [
    "CUDAPrefetcher",
    "FastCollate",
    "Loader",
    "Prefetch",
    "ShardedSampler",
    "WorkerSeeder",
    "Workers",
    "fast_collate",
    "make_loader",
    "seed_everything",
    "seed_worker",
]
