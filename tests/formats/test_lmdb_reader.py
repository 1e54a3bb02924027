"""Reader and Writer over any LMDB: keys, positions, map growth, handles across processes."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil

import lmdb
import numpy as np
import pytest
import torch

from fastdata.errors import ConfigError, FastDataError, FormatError
from fastdata.formats.lmdb import MissingKeyError, Reader, Writer
from fastdata.formats.lmdb import _env as lmdb_env
from fastdata.formats.lmdb.keys import KeyIndex


def _items(n: int, seed: int = 0) -> dict[bytes, bytes]:
    rng = np.random.default_rng(seed)
    items = {}
    for i in range(n):  # keys of mixed length and value sizes that straddle LMDB's overflow threshold
        key = b"k%d/%s" % (i, rng.integers(0, 10**6, size=int(rng.integers(1, 4))).tobytes().hex().encode())
        items[key] = i.to_bytes(4, "little") + rng.integers(0, 256, size=int(rng.integers(0, 6000)), dtype=np.uint8).tobytes()
    return items


def _write(path, items, **kwargs) -> Writer:
    with Writer(path, **kwargs) as w:
        for k, v in items.items():  # insertion order is not key order: exercises the non-append path
            w.write(k, v)
    return w


def test_pypi_lmdb_is_what_the_package_imports():
    # the package is named fastdata.formats.lmdb; inside it `import lmdb` must still be py-lmdb
    assert lmdb_env.py_lmdb is lmdb and hasattr(lmdb, "Environment") and lmdb.__name__ == "lmdb"


def test_positions_keys_and_scan_agree(tmp_path):
    items = _items(300)
    _write(tmp_path / "db", items, commit_every=7)
    expected = sorted(items.items())
    r = Reader(tmp_path / "db")
    assert len(r) == 300
    assert list(r) == expected
    order = np.random.default_rng(1).permutation(300)
    assert [r[int(i)] for i in order] == [expected[i] for i in order]
    assert r[-1] == expected[-1] and r.key(0) == expected[0][0]
    for key, value in expected[::17]:
        assert r.get(key) == value and key in r
    assert not r._key_index().arithmetic
    with pytest.raises(IndexError):
        r[300]
    with pytest.raises(IndexError):
        r[-301]


def test_str_keys_and_missing_keys(tmp_path):
    with Writer(tmp_path / "db") as w:
        w.write("baboon", b"png bytes")
    r = Reader(tmp_path / "db")
    assert r.get("baboon") == r.get(b"baboon") == b"png bytes"
    assert r.get("comic", None) is None and "comic" not in r
    with pytest.raises(MissingKeyError) as info:
        r.get("comic")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, FastDataError)
    assert "comic" in str(err) and "data.mdb" in str(err)


def test_fixed_width_counting_keys_are_arithmetic(tmp_path):
    with Writer(tmp_path / "db") as w:
        for i in range(5, 2005):
            w.write(b"%09d" % i, b"v%d" % i)
    r = Reader(tmp_path / "db")
    index = r._key_index()
    assert index.arithmetic and index.nbytes == 0
    assert r[0] == (b"000000005", b"v5") and r[1999] == (b"000002004", b"v2004")
    assert [r[i] for i in range(0, 2000, 97)] == [x for j, x in enumerate(r) if j % 97 == 0]


def test_gaps_or_mixed_widths_fall_back_to_stored_keys(tmp_path):
    keys = [b"000000000", b"000000002", b"000000002x", b"000000003"]  # arithmetic would put 002 at position 2
    with Writer(tmp_path / "db") as w:
        for k in keys:
            w.write(k, k)
    r = Reader(tmp_path / "db")
    assert not r._key_index().arithmetic
    assert [r.key(i) for i in range(4)] == keys


def test_key_index_is_compact():
    class Txn:  # the part of an lmdb.Transaction that KeyIndex.scan uses
        def __init__(self, keys):
            self.keys = keys

        def cursor(self):
            return self

        def iternext(self, keys=True, values=False):
            return iter(self.keys)

    keys = [b"img_%08d.jpg" % (i * 3) for i in range(200_000)]
    index = KeyIndex.scan(Txn(keys))
    assert [index.key(i) for i in (0, 1, 123_456, 199_999)] == [keys[i] for i in (0, 1, 123_456, 199_999)]
    assert index.nbytes <= 200_000 * (16 + 4) + 4  # key bytes + int32 offsets, no per-key objects


def test_map_grows_from_a_tiny_map_size(tmp_path):
    items = {b"%05d" % i: bytes([i % 251]) * 3000 for i in range(800)}  # ~2.4 MB into a 32 KiB map
    w = _write(tmp_path / "db", items, map_size=32 << 10, commit_every=50)
    assert w.map_size >= 2 << 20
    r = Reader(tmp_path / "db")
    assert dict(r) == items


def test_a_single_value_bigger_than_the_map(tmp_path):
    with Writer(tmp_path / "db", map_size=16 << 10) as w:
        w.write(b"big", b"x" * (1 << 20))
    assert Reader(tmp_path / "db").get(b"big") == b"x" * (1 << 20)


def test_writer_refuses_duplicates_and_bad_keys(tmp_path):
    with Writer(tmp_path / "db", commit_every=2) as w:
        w.write(b"a", b"1")
        w.write(b"b", b"2")  # committed
        w.write(b"c", b"3")  # pending
        for dup in (b"a", b"c"):
            with pytest.raises(ConfigError, match="already in the database"):
                w.write(dup, b"again")
        for bad in (b"", b"k" * 600):
            with pytest.raises(ConfigError, match="keys must be"):
                w.write(bad, b"v")
    assert dict(Reader(tmp_path / "db")) == {b"a": b"1", b"b": b"2", b"c": b"3"}
    with pytest.raises(ConfigError):
        Writer(tmp_path / "x", commit_every=0)


def test_an_exception_drops_only_the_open_batch(tmp_path):
    with pytest.raises(RuntimeError), Writer(tmp_path / "db", commit_every=10) as w:
        for i in range(25):
            w.write(b"%03d" % i, b"v")
        raise RuntimeError("interrupted")
    assert len(Reader(tmp_path / "db")) == 20


def test_writer_appends_to_an_existing_database(tmp_path):
    _write(tmp_path / "db", {b"b": b"2", b"d": b"4"})
    _write(tmp_path / "db", {b"e": b"5", b"a": b"1"})
    assert dict(Reader(tmp_path / "db")) == {b"a": b"1", b"b": b"2", b"d": b"4", b"e": b"5"}
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Writer(tmp_path / "other"))


def test_path_may_be_the_directory_or_the_data_file_or_a_single_file(tmp_path):
    _write(tmp_path / "db", {b"k": b"v"})
    env = lmdb.open(str(tmp_path / "single.lmdb"), subdir=False)
    with env.begin(write=True) as txn:
        txn.put(b"k", b"single")
    env.close()
    assert Reader(tmp_path / "db").get(b"k") == b"v"
    assert Reader(tmp_path / "db" / "data.mdb").get(b"k") == b"v"
    assert Reader(tmp_path / "single.lmdb").get(b"k") == b"single"


def test_missing_or_foreign_paths_are_named(tmp_path):
    with pytest.raises(FormatError, match="no such file") as info:
        Reader(tmp_path / "nope.lmdb")
    assert "nope.lmdb" in str(info.value)
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(FormatError, match="no data.mdb"):
        Reader(tmp_path / "empty_dir")
    (tmp_path / "text.lmdb").write_text("hello, not an lmdb\n" * 1000)
    with pytest.raises(FormatError) as info:
        len(Reader(tmp_path / "text.lmdb"))
    assert "text.lmdb" in str(info.value) and "re-create" in str(info.value)


def test_readers_of_one_file_share_a_handle_and_create_no_lock_file(tmp_path, shared_data):
    db = tmp_path / "caffe"
    shutil.copytree(shared_data / "lmdb" / "caffe_raw_datum" / "test_lmdb", db)
    (db / "lock.mdb").unlink()
    a, b = Reader(db), Reader(db / "data.mdb")  # py-lmdb refuses a second open of one file in a process
    assert a[0] == b[0]
    a.close()
    assert b[7][0] == b"00000007_cr10.png"
    b.close()
    assert a[1][0] == b"00000001_c8.jpeg"  # reopens on use
    assert not (db / "lock.mdb").exists()


def test_real_png_values_lmdb(shared_data):
    r = Reader(shared_data / "lmdb" / "png_values" / "gt.lmdb")
    assert [r.key(i) for i in range(len(r))] == [b"baboon", b"comic"]
    assert r.get("comic").startswith(b"\x89PNG\r\n\x1a\n")


def test_pickles_as_a_path(tmp_path):
    _write(tmp_path / "db", _items(20))
    r = Reader(tmp_path / "db")
    r[3]  # open and index in this process first
    blob = pickle.dumps(r)
    assert len(blob) < 500 and b"lmdb.Environment" not in blob
    clone = pickle.loads(blob)
    assert list(clone) == list(r) and clone.verify is True


def _report_handles(reader, queue):
    before = reader._env  # inherited from the parent by fork()
    value = reader[2]
    queue.put((before is not None, reader._env is not before, lmdb_env._HANDLES.pid == os.getpid(), value))


def test_a_forked_child_opens_its_own_handle(tmp_path):
    _write(tmp_path / "db", _items(10))
    r = Reader(tmp_path / "db")
    expected = r[2]  # opened in the parent
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_report_handles, args=(r, queue))  # fork: args are inherited, not pickled
    child.start()
    inherited, replaced, registry_is_childs, value = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert inherited and replaced and registry_is_childs and value == expected
    assert r[2] == expected


class _Pairs(torch.utils.data.Dataset):
    def __init__(self, reader):
        self.reader = reader

    def __len__(self):
        return len(self.reader)

    def __getitem__(self, i):
        key, value = self.reader[i]
        return key + b"=" + value


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers(tmp_path, context):
    items = _items(40, seed=2)
    _write(tmp_path / "db", items)
    r = Reader(tmp_path / "db")
    r[0]  # a handle opened in the parent must not be used by forked children
    loader = torch.utils.data.DataLoader(
        _Pairs(r), batch_size=None, num_workers=2, multiprocessing_context=multiprocessing.get_context(context)
    )
    assert list(loader) == [k + b"=" + v for k, v in sorted(items.items())]
    assert r[5] == sorted(items.items())[5]  # the parent's handle still works
