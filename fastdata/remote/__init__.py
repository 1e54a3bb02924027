"""Datasets in object storage: ``s3://``, ``gs://``, ``http(s)://`` and any
protocol fsspec knows, read through a local shard cache.

Every dataset class and ``open_dataset`` accept a URL directly (shards are
cached under :func:`default_cache_dir`); :func:`localize` chooses the cache
directory, its size limit, the retry budget and fsspec options. Needs the
``remote`` extra: ``pip install 'fastdata[remote]'``.
"""

from .cache import read_log
from .mirror import default_cache_dir, localize
from .retry import RetryPolicy
from .urls import is_url

__all__ = ["RetryPolicy", "default_cache_dir", "is_url", "localize", "read_log"]
