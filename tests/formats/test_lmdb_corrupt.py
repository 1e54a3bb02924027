"""Damaged LMDB shards raise FormatError naming the file (and key); they never crash or hang.

liblmdb trusts every page pointer, so reading a damaged file directly can
kill the process (SIGBUS past the end of the file, SIGSEGV past the map).
The risky cases run in a child process so that a crash fails the test
instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from fastdata.errors import FormatError
from fastdata.formats import Sample
from fastdata.formats.lmdb import Writer, encode_datum, open_shard, write_shard


def _shard(tmp_path, n=400):
    samples = [Sample(image=b"\xff\xd8\xff" + i.to_bytes(4, "little") * (1 + i % 300), label=i % 5, id=i) for i in range(n)]
    write_shard(tmp_path / "clean.lmdb", samples)
    return tmp_path / "clean.lmdb"


def _copy_with(tmp_path, clean, name, mutate):
    target = tmp_path / name
    shutil.copytree(clean, target)
    data = bytearray((target / "data.mdb").read_bytes())
    mutate(data)
    (target / "data.mdb").write_bytes(bytes(data))
    return target


def _read_all(path, **options):
    reader = open_shard(path, **options)
    return [reader.sample(i) for i in range(len(reader))]


def test_a_value_that_is_not_a_datum_names_its_key(tmp_path):
    with Writer(tmp_path / "db") as w:
        w.write(b"000000000", encode_datum(b"\xff\xd8\xff", 1))
        w.write(b"000000001", b"\x0b\x99 garbage \x00\x01")  # starts like a protobuf group: not a Datum
    reader = open_shard(tmp_path / "db")
    assert reader.sample(0) == (b"\xff\xd8\xff", 1)
    with pytest.raises(FormatError) as info:
        reader.sample(1)
    text = str(info.value)
    assert "data.mdb" in text and "000000001" in text and "not a caffe.Datum" in text


def test_truncated_file(tmp_path):
    clean = _shard(tmp_path)
    for keep in (0, 4096, 3 * 4096, os.path.getsize(clean / "data.mdb") // 2):
        bad = _copy_with(tmp_path, clean, f"cut{keep}.lmdb", lambda d, keep=keep: d.__delitem__(slice(keep, None)))
        for verify in (True, False):  # the size check against the meta page works without lmdb.verify too
            with pytest.raises(FormatError) as info:
                _read_all(bad, verify=verify)
            assert f"cut{keep}.lmdb" in str(info.value)


def test_not_an_lmdb_at_all(tmp_path):
    clean = _shard(tmp_path)
    bad = _copy_with(tmp_path, clean, "junk.lmdb", lambda d: d.__setitem__(slice(0, None), os.urandom(len(d))))
    for verify in (True, False):
        with pytest.raises(FormatError, match="junk.lmdb") as info:
            _read_all(bad, verify=verify)
        assert "re-create" in str(info.value)


def _root_page(data: bytearray) -> tuple[int, int]:
    """``(page number, page size)`` of the main B-tree root, from the newer meta page (LMDB 0.9, 64-bit)."""
    metas = []
    for page in (0, 1):
        base = page * 4096  # meta pages come first, whatever the page size
        psize = struct.unpack_from("<I", data, base + 40)[0]  # the free DB's md_pad holds the page size
        root, _, txnid = struct.unpack_from("<QQQ", data, base + 128)
        metas.append((txnid, root, psize))
    _, root, psize = max(metas)
    return root, psize


CHILD = textwrap.dedent(
    """
    import json, sys
    from fastdata.errors import FormatError
    from fastdata.formats.lmdb import open_shard
    results = []
    for path, verify in json.loads(sys.argv[1]):
        try:
            reader = open_shard(path, verify=verify)
            for i in range(len(reader)):
                reader.sample(i)
            results.append("ok")
        except FormatError as exc:
            results.append("FormatError: " + str(exc))
    print(json.dumps(results))
    """
)


def _read_in_child(cases):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([[str(p), v] for p, v in cases])], check=False, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"the reader died (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def test_damaged_btree_pages_raise_instead_of_crashing(tmp_path):
    clean = _shard(tmp_path)

    def wrong_root_type(d):
        root, psize = _root_page(d)
        struct.pack_into("<H", d, root * psize + 10, 0)  # the root page's flags: neither branch nor leaf

    def huge_node_offsets(d):  # every node pointer of the root page aims far past its page
        root, psize = _root_page(d)
        lower = struct.unpack_from("<H", d, root * psize + 12)[0]
        for at in range(root * psize + 16, root * psize + lower, 2):
            struct.pack_into("<H", d, at, 0xFFF0)

    cases = []
    for name, mutate in (("type", wrong_root_type), ("offsets", huge_node_offsets)):
        bad = _copy_with(tmp_path, clean, f"{name}.lmdb", mutate)
        cases += [(bad, True), (bad, False)]
    results = _read_in_child(cases)
    for (path, verify), result in zip(cases, results):
        if verify or path.name == "type.lmdb":  # liblmdb itself notices a wrong page type
            assert result.startswith("FormatError") and path.name in result, (path.name, verify, result)
    # with verify=True the structural check names the damage before liblmdb sees the file
    assert "damaged LMDB" in results[0] and "damaged LMDB" in results[2]


def test_random_damage_never_crashes(tmp_path):
    clean = _shard(tmp_path, n=150)
    size = os.path.getsize(clean / "data.mdb")
    cases = []
    for seed in range(24):
        rng = __import__("random").Random(seed)

        def scribble(d, rng=rng):
            for _ in range(rng.randrange(1, 40)):
                at = rng.randrange(0, size - 16)
                d[at : at + 16] = rng.randbytes(16)

        cases.append((_copy_with(tmp_path, clean, f"r{seed}.lmdb", scribble), True))
    results = _read_in_child(cases)
    assert all(r == "ok" or r.startswith("FormatError") for r in results)
    assert sum(r.startswith("FormatError") for r in results) >= 5  # most scribbles hit metadata, not payload
