"""Engines on this machine for ``engine_convert.py`` and the engine tests (``tests/engines``): a two-node Ray
cluster (``ray start --head`` and a second ``ray start --address``, on
127.0.0.1 only) and a Spark ``local[2,2]`` session, each stopped by the
process ids it started."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: What an engine test says when its engine is not installed (CI installs them: .ci/run).
MISSING = "needs {what}: pip install -e '.[{extra}]' (CI installs it: .ci/run)"


#: Ports Ray's components take by default whatever else is chosen (GCS, dashboard, client server,
#: dashboard agent): a free port the kernel offers may be one of them (CI once got 52365 for the GCS)
RAY_DEFAULT_PORTS = frozenset({6379, 8265, 10001, 52365})


def free_port(avoid: frozenset[int] = RAY_DEFAULT_PORTS) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port


class RayNodes:
    """A local Ray cluster of ``nodes`` nodes with one CPU each, each node a
    ``ray start --block`` in a process group of its own, so that a node can
    be made to leave (:meth:`kill_node`) and everything is stopped by id."""

    def __init__(self, logs: Path, *, nodes: int = 2, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen] = []
        self._started = time.time()
        self._logs = logs
        # RAY_AUTH_MODE: a token in ~/.ray (left by any local ray.init) would turn token checks on for the
        # nodes and not every client sends it; on loopback there is nothing to guard
        self._env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", **(env or {})}
        # `fastdata convert --engine ray` in this process may have set Ray's one-machine switch
        # (engines.LOCAL_ONLY); a second node started with it refuses to join
        self._env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        ray_cli = str(Path(sys.executable).with_name("ray"))
        self._cli = ray_cli if os.path.exists(ray_cli) else shutil.which("ray") or "ray"
        try:
            for n in range(nodes):
                self._start(n)
        except BaseException:
            self.stop()
            raise

    def _start(self, n: int) -> None:
        # each node's dashboard agent on a port of its own, not both on the default 52365
        common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
                  f"--dashboard-agent-listen-port={free_port()}"]
        if n == 0:
            args = ["--head", f"--port={self.port}", "--include-dashboard=false", "--disable-usage-stats"]
        else:
            args = [f"--address={self.address}"]
        log = open(self._logs / f"ray-node-{n}.log", "wb")
        self.nodes.append(subprocess.Popen([self._cli, "start", *args, *common], stdout=log, stderr=subprocess.STDOUT,
                                           env=self._env, start_new_session=True))
        if n == 0:
            _wait_for_port(self.port, self.nodes[0], self._logs / "ray-node-0.log")

    def connect(self, timeout: float = 120.0) -> None:
        """``ray.init`` this process into the cluster and wait for every node to join."""
        import ray

        self._auth = os.environ.get("RAY_AUTH_MODE")
        os.environ["RAY_AUTH_MODE"] = "disabled"  # as the nodes were started
        ray.init(address=self.address, log_to_driver=False, configure_logging=False)
        deadline = time.monotonic() + timeout
        while sum(node["Alive"] for node in ray.nodes()) < len(self.nodes):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray cluster at {self.address} has {ray.nodes()} after {timeout} s")
            time.sleep(0.2)

    def group(self, n: int) -> set[int]:
        """The process ids of node ``n``: its ``ray start`` and every process
        below it (Ray's worker processes are in sessions of their own, so not
        in its process group)."""
        parents = _parents()
        found = {self.nodes[n].pid}
        grew = True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in found} - found
            found |= more
            grew = bool(more)
        return found

    def kill_node(self, n: int) -> None:
        """Node ``n`` leaves at once: SIGKILL to every one of its processes."""
        _kill_all(self.group(n))
        self.nodes[n].wait(30)

    def stop(self) -> None:
        """Stop every node, the workers first (``ray start --block`` stops its
        node's processes on SIGTERM); then SIGKILL whatever is left of each group."""
        try:
            import ray

            ray.shutdown()
        except ImportError:
            pass
        if getattr(self, "_auth", "unset") != "unset":
            if self._auth is None:
                os.environ.pop("RAY_AUTH_MODE", None)
            else:
                os.environ["RAY_AUTH_MODE"] = self._auth
        everything = set().union(*(self.group(n) for n in range(len(self.nodes))))
        for node in reversed(self.nodes):
            if node.poll() is None and not _signal_group(node, signal.SIGTERM, 5):
                continue
            _signal_group(node, signal.SIGKILL, 10)
        _kill_all(everything)  # workers in sessions of their own, should one outlive its raylet
        # what `ray stop` removes: else a later ray.init() without an address tries to join this dead cluster
        marker = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        try:
            if marker.stat().st_mtime >= self._started:
                marker.unlink()
        except OSError:
            pass


def _signal_group(node: subprocess.Popen, sig: int, timeout: float) -> bool:
    """Send ``sig`` to ``node``'s process group and give the node ``timeout``
    seconds to exit; False when the group is gone (the node already reaped: no wait)."""
    try:
        os.killpg(node.pid, sig)
    except ProcessLookupError:
        return False
    try:
        node.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    return True


def _parents() -> dict[int, int]:
    """Every process's parent, by pid."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ray start exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the Ray head did not open port {port} in {timeout} s: {log.read_text(errors='replace')[-2000:]}")


def task_processes(nodes: RayNodes, n: int | None = None) -> list[int]:
    """The Ray worker processes running a shard task now (their title is
    ``ray::_ray_task``), on node ``n`` or any."""
    groups = set().union(*(nodes.group(k) for k in (range(len(nodes.nodes)) if n is None else [n])))
    found = []
    for pid in groups:
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if title.startswith(b"ray::_ray_task"):
            found.append(pid)
    return found


def spark_session(cores: int = 2, attempts: int = 2, **conf: str):
    """A Spark session on this machine: ``local[cores,attempts]`` (a failed
    task is tried ``attempts`` times), on 127.0.0.1, without its web UI."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # read when the JVM starts: every Spark socket on loopback
    builder = (SparkSession.builder.master(f"local[{cores},{attempts}]").appName("fastdata tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "512m").config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.python.worker.reuse", "true"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    return session
