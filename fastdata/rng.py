"""fastdata's own random streams for augmentation: never the global NumPy state.

Two ways a transform gets randomness, both pure functions of seeds (derived
in :mod:`fastdata.order.seeds`):

* per process: :func:`generator` returns this process's generator. In a
  DataLoader worker it is reseeded by :func:`fastdata.seed_worker` from
  ``(seed, epoch, rank, worker_id)``; without that it derives from
  ``torch.initial_seed()``, which PyTorch already makes distinct per worker.
* per sample: a sampler that yields :class:`SampleKey` instead of ``int``
  makes the dataset run that sample's transforms under
  :func:`sample_generator` ``(seed, epoch, index)``, so augmentation depends
  on the sample alone and not on which worker happened to load it
  (:func:`sample_scope` is what a dataset wraps its work in).

The names live in :mod:`fastdata.order`; this module is their public address.
"""

from .order.generators import SampleKey, generator, sample_scope, set_generator, use, using
from .order.seeds import sample_generator, worker_generator

__all__ = ["SampleKey", "generator", "sample_generator", "sample_scope", "set_generator", "use", "using", "worker_generator"]
