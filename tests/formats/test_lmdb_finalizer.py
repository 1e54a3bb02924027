"""A Reader finalised by the garbage collector must never wait on a lock (issue #9, item 2).

A GC pass can run a finaliser at any allocation, including one made by code
that holds the handle table's lock (opening an environment allocates). If the
finaliser then takes that lock, the thread waits on itself forever.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fastdata.formats.lmdb import Reader, Writer
from fastdata.formats.lmdb import _env as lmdb_env

CAFFE_LMDB = Path("/work/shared/data/lmdb/caffe_raw_datum/test_lmdb")

# A deadlock must fail the test, not hang the suite: run the repro in a child with a timeout.
_REPRO = textwrap.dedent(
    """
    import gc, sys
    from fastdata.formats.lmdb import Reader
    from fastdata.formats.lmdb import _env

    gc.disable()  # only the collection below may run the finaliser
    r = Reader(sys.argv[1])
    r[0]
    r.cycle = r  # only the cycle collector can free it
    del r
    with _env._HANDLES.lock:  # stands for an allocation inside acquire() triggering a GC pass
        gc.collect()
    r2 = Reader(sys.argv[1])  # the table is still usable, and the dropped handle was closed
    assert len(r2) > 0 and r2[0][0]
    assert len(_env._HANDLES.envs) == 1, _env._HANDLES.envs
    print("ok")
    """
)


def _run_repro(path: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", _REPRO, str(path)], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: a Reader finalised by gc.collect() under the handle lock waited on that lock")


def _small_lmdb(tmp_path: Path) -> Path:
    with Writer(tmp_path / "db") as w:
        for i in range(5):
            w.write(b"%03d" % i, b"v%d" % i)
    return tmp_path / "db"


@pytest.mark.parametrize("source", ["caffe", "generated"])
def test_gc_finaliser_under_handle_lock_does_not_deadlock(tmp_path, source):
    if source == "caffe":
        if not CAFFE_LMDB.is_dir():
            pytest.skip(f"{CAFFE_LMDB} not present")
        path = CAFFE_LMDB
    else:
        path = _small_lmdb(tmp_path)
    proc = _run_repro(path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_dropped_reader_closes_its_environment(tmp_path):
    path = _small_lmdb(tmp_path)
    r = Reader(path)
    assert r[0] == (b"000", b"v0")
    token = r._token
    env = lmdb_env._HANDLES.envs[token][0]
    del r  # refcount drop: the finaliser queues the release, the next table operation performs it
    lmdb_env.drain()
    assert token not in lmdb_env._HANDLES.envs
    with pytest.raises(Exception):
        env.stat()  # closed
    again = Reader(path)  # py-lmdb would refuse a second open of a still-open environment
    assert again[1] == (b"001", b"v1")
    again.close()
