"""A training job whose storage goes away: 8 worker processes, the default
retry budget. Prints one JSON line: how long the job took to stop, and why.

Run by tests/remote/test_shared_outcome.py in the background from the start
of the test session (it waits out a whole budget, 120 s, mostly asleep), so
the suite does not wait for it in series. Serves its dataset with Python's
own HTTP server on 127.0.0.1, which it then shuts (connections refused).
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from PIL import Image

import fastdata
from fastdata.errors import RemoteError
from fastdata.formats import Sample
from fastdata.formats.dataset_writer import write_dataset
from fastdata.remote import RetryPolicy, localize


def jpeg(i: int) -> bytes:
    pixels = np.random.default_rng(i).integers(0, 256, size=(24, 24, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="fastdata-budget-") as work:
        root = Path(work)
        samples = [Sample(image=jpeg(i), label=i % 2, id=i, filename=f"{i}.jpg") for i in range(64)]
        write_dataset(root / "www" / "ds", "recordio", samples, ["a", "b"], shard_bytes=8 * 1024)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root / "www")))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        directory = localize(f"http://127.0.0.1:{server.server_address[1]}/ds", cache_dir=root / "cache")
        server.shutdown()
        server.server_close()  # the storage is gone: every request is refused from now on
        ds = fastdata.RecordIODataset(directory, decode=False)
        loader = fastdata.make_loader(ds, 4, train=False, workers=fastdata.Workers(num=8, kind="processes"),
                                      collate_fn=lambda batch: batch)
        start = time.monotonic()
        error = ""
        try:
            for _ in loader:
                pass
        except RemoteError as exc:
            error = str(exc)
        elapsed = time.monotonic() - start
        loader.close()
    print(json.dumps({"elapsed": elapsed, "budget": RetryPolicy().total_seconds, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
