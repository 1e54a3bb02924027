"""``inspect`` and ``verify`` of a URL without an object store: a dataset
served over HTTP from a local folder (Python's own server), copied into a
temporary folder by remote_io.materialized and checked there; what is
printed names the URL, never the copy, and the copy is gone afterwards.

The commands run in a child process: fsspec's HTTP client keeps an event-loop
thread for the life of the process, and a second thread makes every later
test's conversion spawn its workers instead of forking them."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading

import pytest
from convkit import flip_byte, make_folder, run_cli

pytest.importorskip("aiohttp", reason="HTTP reads need fastdata[remote]")


@pytest.fixture()
def served(tmp_path, capsys):
    """``(folder, url)``: ``folder/ds`` holds a 3-shard RecordIO dataset, served at ``url``."""
    make_folder(tmp_path / "src", {"a": 5, "b": 4})
    code, _, err = run_cli(capsys, "convert", tmp_path / "src", tmp_path / "www" / "ds", "--format", "recordio",
                           "--shards", "3", "--workers", "1", "--passthrough", "-q")
    assert code == 0, err
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "www"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield tmp_path / "www" / "ds", f"http://127.0.0.1:{server.server_address[1]}/ds"
    server.shutdown()
    server.server_close()


@pytest.fixture()
def temp_root(tmp_path):
    """Where the temporary copies go (the child's TMPDIR), so that the test can see them removed."""
    root = tmp_path / "tmp"
    root.mkdir()
    return root


def cli(temp_root, *args: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "fastdata.converters.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(temp_root)}, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_verify_and_inspect_of_a_url_name_the_url_and_leave_no_copy(served, temp_root):
    folder, url = served
    code, out, err = cli(temp_root, "verify", url)
    assert code == 0, err
    assert f"fastdata verify: {url}: OK, 9 records in 3 shard(s) read" in out
    code, out, err = cli(temp_root, "inspect", url, "--records", "2")
    assert code == 0, err
    assert out.startswith(f"{url}: fastdata dataset, format recordio, 9 records in 3 shard(s)")
    assert str(temp_root) not in out + err and "fastdata-remote-" not in out + err
    assert list(temp_root.iterdir()) == []


def test_verify_of_a_url_reports_damage_with_the_url(served, temp_root):
    folder, url = served
    shard = sorted(folder.glob("*.rec"))[1]
    flip_byte(shard)
    code, out, _ = cli(temp_root, "verify", url)
    assert code == 1
    assert f"fastdata verify: PROBLEM {url}/{shard.name}: crc32c differs from the manifest's" in out
    assert f"fastdata verify: {url}: 2 problem(s) found" in out
    assert list(temp_root.iterdir()) == []


def test_verify_of_a_url_whose_manifest_was_edited_is_damage_found(served, temp_root):
    folder, url = served
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"records"', '"recordz"', 1))
    code, out, _ = cli(temp_root, "verify", url)
    assert code == 1
    assert f"fastdata verify: PROBLEM {url}/manifest.json: its content does not match its checksum" in out
    assert out.endswith(f"fastdata verify: {url}: 1 problem(s) found (0 records in 0 shard(s) read; "
                        "1 damaged manifest(s): their shards were not read)\n")
    code, _, err = cli(temp_root, "inspect", url)
    assert code == 2 and f"{url}/manifest.json: its content does not match its checksum" in err
    assert list(temp_root.iterdir()) == []
