"""The cluster engines a conversion's shard jobs may run on (``fastdata convert --engine``).

An engine is a :class:`.pool.Pool` whose workers are the engine's tasks
(:class:`.raypool.RayPool`, :class:`.sparkpool.SparkPool`); the plan, the
shard jobs, the records and the manifest stay as they are, so the output is
byte for byte that of ``fastdata convert`` on one machine. Neither engine
is imported until it is asked for: they are the extras ``fastdata[ray]`` and
``fastdata[spark]``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from fastdata.errors import ConfigError

from .pool import Pool

#: The engines ``--engine`` accepts.
ENGINES = ("ray", "spark")
#: Ray's switch that keeps a cluster started by ``ray.init()`` on 127.0.0.1
#: (Ray's default on macOS and Windows, where it does not run clusters).
LOCAL_ONLY = ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def connect(engine: str) -> int:
    """Join the engine's cluster (or start a local one) and return its CPUs.

    Ray: ``ray.init()``, which joins the cluster named by ``RAY_ADDRESS`` (set
    by ``ray start`` and Ray's job submission) or starts one on this machine.
    Spark: the active ``SparkSession``, else a new one (``spark-submit`` gives
    it its master; alone it is ``local[*]``); its CPUs are
    ``defaultParallelism``.

    Raises:
        ConfigError: an unknown engine, or its extra is not installed.
    """
    if engine == "ray":
        # No cluster named: the one Ray starts here serves this machine only, so it need not listen
        # on the machine's network address. Ray reads the switch when it is first imported, and the
        # processes it starts inherit it; it is taken back once started, else a cluster this process
        # starts later (``ray start`` of a test, a notebook) would refuse its second node.
        alone = not os.environ.get("RAY_ADDRESS") and LOCAL_ONLY[0] not in os.environ
        if alone:
            os.environ[LOCAL_ONLY[0]] = LOCAL_ONLY[1]
        try:
            ray = _need("ray", "ray")
            if not ray.is_initialized():
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        finally:
            if alone:
                del os.environ[LOCAL_ONLY[0]]
        return max(1, int(ray.cluster_resources().get("CPU", 1)))
    if engine == "spark":
        _need("pyspark", "spark")
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession() or SparkSession.builder.appName("fastdata convert").getOrCreate()
        return max(1, session.sparkContext.defaultParallelism)
    raise ConfigError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")


#: A test hook, not an option: "1" makes :func:`several_machines` say yes, so that the
#: tests run the path of a cluster of several machines on the one machine they have.
SEVERAL_MACHINES_VARIABLE = "FASTDATA_TEST_SEVERAL_MACHINES"


def several_machines(engine: str) -> bool:
    """Whether ``engine``'s cluster (joined by :func:`connect`) spans several
    machines, whose tasks do not see this machine's folders: then a URL SRC
    is read by the tasks from the bucket and their shards come back here
    (:mod:`.shipping`), instead of staging both in a folder of this machine."""
    connect(engine)
    if os.environ.get(SEVERAL_MACHINES_VARIABLE) == "1":
        return True
    if engine == "ray":
        import ray

        return len({n.get("NodeManagerAddress") for n in ray.nodes() if n.get("Alive")}) > 1
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    return session is not None and not (session.sparkContext.master or "").startswith("local")


def engine_pool(engine: str, workers: int, init: Callable[..., None], *, report: bool = False,
                args: tuple = ()) -> Pool:
    """A pool of at most ``workers`` tasks of ``engine`` at a time, each worker
    process running ``init(None, *args)`` once (see :func:`connect` for how it
    finds its cluster)."""
    connect(engine)
    if engine == "ray":
        from .raypool import RayPool

        return RayPool(workers, init, report=report, args=args)
    from .sparkpool import SparkPool

    return SparkPool(workers, init, report=report, args=args)


def _need(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"--engine {extra} needs {module}: pip install 'fastdata[{extra}]'") from None
