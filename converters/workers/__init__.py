"""Worker processes: the :class:`~.pool.Pool` protocol and its :class:`~.pool.WorkerDied`
(:mod:`.pool`), the pool forked from this process (:mod:`.forkpool`), and
:mod:`.parallel`, which picks the forked or a spawned pool (:func:`~.parallel.worker_pool`),
keeps workers from outliving a killed converter, and offers the order-preserving
map ``verify --decode`` uses. Nothing here knows about images or shards; the
conversion, the scan's stat workers and the read-only tools use it.
"""
