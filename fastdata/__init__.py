"""fastdata: make PyTorch training stop waiting for data.

Public names are resolved lazily (PEP 562) so that ``import fastdata`` is
cheap and works with no optional extras installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors as _errors
from ._version import __version__ as __version__
from .errors import *  # noqa: F403 -- the exception classes, listed once: errors.__all__
from .formats import registry as _registry

# public name -> module that defines it
_LAZY = {
    "CUDAPrefetcher": "fastdata.loading.prefetch",
    "DALILoader": "fastdata.dali.iterator",
    "FormatDataset": "fastdata.datasets.shards",
    "FormatStream": "fastdata.datasets.iterable",
    "GPUDecode": "fastdata.loading.decode_choice",
    "ImageFolder": "fastdata.datasets.folder",
    "Prefetch": "fastdata.loading.settings",
    "Workers": "fastdata.loading.settings",
    "decode": "fastdata.decode",
    "fast_collate": "fastdata.loading.collate",
    "make_loader": "fastdata.loading.make",
    "open_dataset": "fastdata.datasets.open",
    "remote": "fastdata.remote",
    "seed_everything": "fastdata.loading.seeding",
    "seed_worker": "fastdata.loading.seeding",
    "watch": "fastdata.loading.watcher",
}
# RecordIODataset, TFRecordStream...: the per-format aliases the format registry lists
_LAZY.update(dict.fromkeys(_registry.public_names(), "fastdata.datasets"))

__all__ = sorted([*_errors.__all__, "__version__", *_LAZY])

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time the names resolve lazily below
    # "X as X": a re-export (PEP 484), not an unused import
    from . import decode as decode
    from . import remote as remote
    from .dali.iterator import DALILoader as DALILoader
    from .datasets import FormatDataset as FormatDataset
    from .datasets import FormatStream as FormatStream
    from .datasets import ImageFolder as ImageFolder
    from .datasets import LMDBDataset as LMDBDataset
    from .datasets import RecordIODataset as RecordIODataset
    from .datasets import RecordIOStream as RecordIOStream
    from .datasets import TFRecordDataset as TFRecordDataset
    from .datasets import TFRecordStream as TFRecordStream
    from .datasets import open_dataset as open_dataset
    from .loading.collate import fast_collate as fast_collate
    from .loading.decode_choice import GPUDecode as GPUDecode
    from .loading.make import make_loader as make_loader
    from .loading.prefetch import CUDAPrefetcher as CUDAPrefetcher
    from .loading.seeding import seed_everything as seed_everything
    from .loading.seeding import seed_worker as seed_worker
    from .loading.settings import Prefetch as Prefetch
    from .loading.settings import Workers as Workers
    from .loading.watcher import watch as watch


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastdata' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module.rsplit(".", 1)[-1] == name else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
