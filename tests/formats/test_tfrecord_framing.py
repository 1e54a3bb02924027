"""TFRecord framing, index files, compression and corruption handling."""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
import struct
import tracemalloc
import zlib
from pathlib import Path

import crc32c
import numpy as np
import pytest

from fastdata.errors import ConfigError, FormatError
from fastdata.formats import tfrecord as tfr
from fastdata.formats.tfrecord import framing
from fastdata.formats.tfrecord.framing import masked_crc


def payload(i: int) -> bytes:
    """Record ``i``'s bytes: its index, then a length that varies with it (FFCV's trick)."""
    return struct.pack("<I", i) + bytes([i % 251]) * (i * 7 % 300)


def write(path: Path, n: int = 20, index: bool = False) -> list[bytes]:
    records = [payload(i) for i in range(n)]
    with tfr.Writer(path, index=index) as w:
        for r in records:
            w.write(r)
    return records


def flip(path: Path, byte: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[byte] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_mask_matches_the_reference_definition():
    crc = crc32c.crc32c(b"hello")
    assert masked_crc(b"hello") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32
    # A known TFRecord header: 8 zero bytes (empty record) masked as TensorFlow writes it.
    assert tfr.frame(b"") == bytes(8) + struct.pack("<I", masked_crc(bytes(8))) + struct.pack("<I", masked_crc(b""))


def test_round_trip_random_access_equals_sequential(tmp_path):
    path = tmp_path / "a.tfrecord"
    records = write(path, 50)
    reader = tfr.Reader(path)
    assert len(reader) == 50
    assert list(reader) == records
    order = np.random.default_rng(0).permutation(50)
    assert [reader[int(i)] for i in order] == [records[i] for i in order]
    assert reader[-1] == records[-1]
    assert reader[np.int64(3)] == records[3]
    assert reader.offsets.dtype == np.int64 and reader.sizes.dtype == np.int64
    assert (reader.sizes == [len(r) + 16 for r in records]).all()
    with pytest.raises(IndexError, match="50 records"):
        reader[50]
    with pytest.raises(TypeError):
        reader["0"]


def test_writer_index_equals_tfrecord2idx_and_build_index(tmp_path):
    from tfrecord.tools.tfrecord2idx import create_index

    path = tmp_path / "a.tfrecord"
    write(path, 30, index=True)
    create_index(str(path), str(tmp_path / "ref.idx"))
    ours = Path(tfr.default_index_path(path))
    assert ours.name == "a.tfrecord.idx"
    assert ours.read_bytes() == (tmp_path / "ref.idx").read_bytes()
    built = tfr.build_index(path, tmp_path / "built.idx")
    assert Path(built).read_bytes() == (tmp_path / "ref.idx").read_bytes()
    offsets, sizes = tfr.read_index(ours)
    assert list(offsets[:2]) == [0, len(payload(0)) + 16]
    assert sizes.sum() == path.stat().st_size


def test_index_given_default_and_scan_agree(tmp_path):
    path = tmp_path / "a.tfrecord"
    records = write(path, 10)
    scanned = tfr.Reader(path)
    assert [scanned[i] for i in range(10)] == records
    tfr.build_index(path, tmp_path / "other.idx")
    assert list(tfr.Reader(path, index=tmp_path / "other.idx")) == records
    tfr.build_index(path)  # default name: picked up automatically
    by_default = tfr.Reader(path)
    assert len(by_default) == 10 and by_default[9] == records[9]
    with pytest.raises(ConfigError, match="build_index"):
        tfr.Reader(path, index=tmp_path / "missing.idx")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tfrecord"
    write(path, 0, index=True)
    assert path.stat().st_size == 0 and Path(tfr.default_index_path(path)).read_text() == ""
    reader = tfr.Reader(path)
    assert len(reader) == 0 and list(reader) == []


def test_stale_index_is_refused(tmp_path):
    path = tmp_path / "a.tfrecord"
    write(path, 5, index=True)
    with open(path, "ab") as f:  # appended after the index was written
        f.write(tfr.frame(b"late"))
    with pytest.raises(FormatError, match="stale") as info:
        len(tfr.Reader(path))
    assert info.value.path == tfr.default_index_path(path)
    Path(tfr.default_index_path(path)).write_text("0 12\nnot numbers\n")
    with pytest.raises(FormatError, match="line 2"):
        len(tfr.Reader(path))


def _record_offset(path: Path, i: int) -> int:
    return int(tfr.Reader(path, index=None).offsets[i])


@pytest.mark.parametrize(
    ("where", "message"),
    [(0, "length CRC"), (8, "length CRC"), (12, "data CRC"), ("crc", "data CRC")],
    ids=["length", "length-crc", "data", "data-crc"],
)
@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "scanned"])
def test_flipped_bit_names_file_and_offset(tmp_path, where, message, indexed):
    path = tmp_path / "a.tfrecord"
    records = write(path, 6, index=indexed)
    offset = _record_offset(path, 3)
    byte = offset + 12 + len(records[3]) if where == "crc" else offset + where
    flip(path, byte, bit=3 if where == 0 else 0)  # bit 3 of the length: a 8-byte change, still "in range"
    reader = tfr.Reader(path)
    with pytest.raises(FormatError, match=message) as info:
        list(reader)
    err = info.value
    assert err.path == str(path) and err.offset == offset
    assert str(path) in str(err) and f"byte offset {offset}" in str(err)
    with pytest.raises(FormatError):
        tfr.build_index(path, tmp_path / "x.idx")
    # the records before the damaged one still read
    if indexed or where not in (0, 8):
        assert tfr.Reader(path)[2] == records[2]


def test_verify_false_skips_crc_checks(tmp_path):
    path = tmp_path / "a.tfrecord"
    records = write(path, 4, index=True)
    offset = _record_offset(path, 1)
    flip(path, offset + 12 + len(records[1]))  # data CRC
    flip(path, offset + 8)  # length CRC
    assert list(tfr.Reader(path, verify=False)) == records
    flip(path, offset + 13)  # data byte 1
    damaged = tfr.Reader(path, verify=False)[1]
    assert damaged != records[1] and len(damaged) == len(records[1])
    with pytest.raises(FormatError):
        tfr.Reader(path)[1]


@pytest.mark.parametrize("cut", [1, 4, 5, 14])
@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "scanned"])
def test_truncated_last_record(tmp_path, cut, indexed):
    path = tmp_path / "a.tfrecord"
    write(path, 5, index=indexed)
    size = path.stat().st_size
    os.truncate(path, size - cut)
    with pytest.raises(FormatError) as info:
        list(tfr.Reader(path))
    assert str(path) in str(info.value)
    if not indexed:
        assert info.value.offset == _record_offset_from_header_walk(path, 4)


def _record_offset_from_header_walk(path: Path, i: int) -> int:
    data = path.read_bytes()
    pos = 0
    for _ in range(i):
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return pos


@pytest.mark.timeout(20)
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_huge_length_fails_fast(tmp_path, compress):
    length = struct.pack("<Q", 1 << 62)
    bogus = length + struct.pack("<I", masked_crc(length)) + b"x" * 100  # valid length CRC, absurd length
    path = tmp_path / ("huge.tfrecord.gz" if compress else "huge.tfrecord")
    data = tfr.frame(b"ok") + bogus
    path.write_bytes(gzip.compress(data) if compress else data)
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="claims|ends after") as info:
            list(tfr.Reader(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a gzip stream cannot say its length first: it is read in chunks, at most one at a time held
    assert peak < (framing._CHUNK if compress else 0) + (1 << 20), f"{peak} bytes allocated for a {len(data)}-byte file"
    assert info.value.offset == 18


@pytest.mark.parametrize("kind", ["gzip", "zlib"])
def test_compressed_files_read_sequentially(tmp_path, kind):
    plain = tmp_path / "a.tfrecord"
    records = write(plain, 25)
    packed = gzip.compress(plain.read_bytes()) if kind == "gzip" else zlib.compress(plain.read_bytes())
    for name, compression in [("a.tfrecord.gz" if kind == "gzip" else "a.tfrecord.zz", None), ("nosuffix", None), ("forced", kind.upper())]:
        path = tmp_path / name
        path.write_bytes(packed)
        assert tfr.detect_compression(path, compression) == kind
        reader = tfr.Reader(path, compression=compression)
        assert list(reader) == records and len(reader) == 25 and reader.compressed
        with pytest.raises(ConfigError, match="decompress"):
            reader[0]
        with pytest.raises(ConfigError, match="compressed"):
            tfr.build_index(path)
    copy = tmp_path / "copy.tfrecord"
    assert tfr.decompress(tmp_path / "nosuffix", copy) == 25
    assert copy.read_bytes() == plain.read_bytes()
    assert tfr.Reader(copy)[24] == records[24]


def test_corrupt_gzip_stream(tmp_path):
    plain = tmp_path / "a.tfrecord"
    write(plain, 25)
    data = bytearray(gzip.compress(plain.read_bytes()))
    path = tmp_path / "a.tfrecord.gz"
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(FormatError, match=str(path.name)):
        list(tfr.Reader(path))


def test_bad_arguments(tmp_path):
    with pytest.raises(ConfigError, match="no such"):
        tfr.Reader(tmp_path / "missing.tfrecord")
    path = tmp_path / "a.tfrecord"
    write(path, 2)
    with pytest.raises(ConfigError, match="compression"):
        tfr.Reader(path, compression="lz4")
    with pytest.raises(TypeError, match="encode_example"):
        tfr.Writer(tmp_path / "b.tfrecord").write({"a": 1})


def test_pickle_keeps_settings_only_and_reopens(tmp_path):
    path = tmp_path / "a.tfrecord"
    records = write(path, 8)
    reader = tfr.Reader(path, verify=False)
    assert reader[1] == records[1]  # opened: mmap and offsets exist
    state = reader.__getstate__()
    assert state == {"path": str(path), "index": None, "compression": None, "verify": False}
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.verify is False and clone[7] == records[7]


def test_reopens_after_fork(tmp_path):
    path = tmp_path / "a.tfrecord"
    records = write(path, 8)
    reader = tfr.Reader(path)
    assert reader[0] == records[0]
    parent_map = reader._mm
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: must map the file itself, then read correctly
        ok = reader[5] == records[5] and reader._mm is not parent_map and reader._pid == os.getpid()
        os.write(write_end, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert reader._mm is parent_map  # the parent's map is untouched


def test_reads_tensorflow_written_files(shared_data):
    import json

    vectors = shared_data / "vectors"
    expected = json.loads((vectors / "tensorflow_expected.json").read_text())
    shards = [vectors / f"train-0000{i}-of-00002.tfrecord" for i in range(2)]
    assert [len(tfr.Reader(p)) for p in shards] == expected["shards"]
    gz = tfr.Reader(vectors / "train-gzip.tfrecord.gz")
    assert len(gz) == expected["records"]
    assert list(gz) == [r for p in shards for r in tfr.Reader(p)]


def test_index_equals_tfrecord2idx_on_tensorflow_files(shared_data, tmp_path):
    from tfrecord.tools.tfrecord2idx import create_index

    sources = [shared_data / "vectors" / f"train-0000{i}-of-00002.tfrecord" for i in range(2)]
    sources.append(shared_data / "tfrecord" / "pytorch_data" / "example.tfrecord")
    sources.append(shared_data / "tfrecord" / "pytorch_data" / "sequence_example.tfrecord")
    for src in sources:
        local = tmp_path / src.name
        shutil.copy(src, local)  # the shared folder is read-only: index a copy
        create_index(str(local), str(tmp_path / "ref.idx"))
        ours = tfr.build_index(local)
        assert Path(ours).read_bytes() == (tmp_path / "ref.idx").read_bytes(), src.name
