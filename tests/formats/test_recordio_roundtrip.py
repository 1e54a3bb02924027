"""RecordIO round trips over generated payloads: framing, indexes, headers, lists, shards."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from crc32c import crc32c

from fastdata.errors import FormatError
from fastdata.formats import Sample
from fastdata.formats.recordio import (
    FORMAT,
    IRHeader,
    Reader,
    Writer,
    framing,
    build_index,
    open_shard,
    pack,
    parse_index,
    read_lst,
    unpack,
    write_lst,
    write_shard,
)

MAGIC = b"\x0a\x23\xd7\xce"


def tricky_payloads(seed: int = 0) -> list[bytes]:
    """Random payloads (the index encoded in the first bytes) plus magic-word traps."""
    rng = np.random.default_rng(seed)
    out = [b"", MAGIC, MAGIC * 2, MAGIC + b"x", b"x" + MAGIC, b"abcd" + MAGIC, b"ab" + MAGIC + b"cd"]
    out += [MAGIC + b"1234" + MAGIC, b"\x00" * 3 + MAGIC + b"\x00" + MAGIC, MAGIC[:3], MAGIC * 3 + b"yz"]
    for i in range(60):
        body = bytearray(i.to_bytes(4, "little") + rng.bytes(int(rng.integers(0, 200))))
        for _ in range(int(rng.integers(0, 4))):  # plant magic words at aligned and unaligned offsets
            at = int(rng.integers(0, len(body) + 1))
            body[at:at] = MAGIC
        out.append(bytes(body))
    return out


def parts_on_disk(raw: bytes) -> list[tuple[int, int]]:
    """(cflag, length) of every part, read with no help from the library."""
    parts, pos = [], 0
    while pos < len(raw):
        magic, lrec = struct.unpack_from("<II", raw, pos)
        assert magic == 0xCED7230A
        parts.append((lrec >> 29, lrec & ((1 << 29) - 1)))
        pos += 8 + (((lrec & ((1 << 29) - 1)) + 3) & ~3)
    return parts


def test_round_trip_with_magic_words(tmp_path):
    payloads = tricky_payloads()
    with Writer(tmp_path / "a.rec") as writer:
        offsets = [writer.write(p) for p in payloads]
    raw = (tmp_path / "a.rec").read_bytes()
    assert len(raw) % 4 == 0
    reader = Reader(tmp_path / "a.rec")
    assert len(reader) == len(payloads)
    assert [reader[i] for i in range(len(reader))] == payloads
    assert [reader.offset(i) for i in range(len(reader))] == offsets
    # random access == sequential scan (no .idx) == iteration
    (tmp_path / "a.idx").rename(tmp_path / "hidden.idx")
    scanned = Reader(tmp_path / "a.rec")
    assert list(scanned) == payloads
    order = np.random.default_rng(1).permutation(len(payloads))
    assert [reader[int(i)] for i in order] == [payloads[i] for i in order]
    # no aligned magic word survives inside any part's data
    parts = parts_on_disk(raw)
    assert sum(flag in (0, 1) for flag, _ in parts) == len(payloads)
    assert all(length % 4 == 0 for flag, length in parts if flag in (1, 2))


def test_split_matches_dmlc_rules():
    # aligned magic: split and dropped; unaligned: kept; magic alone: two empty parts
    assert framing.cut_points(MAGIC) == [0]
    assert framing.cut_points(b"x" + MAGIC) == []
    assert framing.cut_points(b"abcd" + MAGIC + b"e") == [4]
    assert framing.cut_points(MAGIC * 2) == [0, 4]
    assert framing.cut_points(b"\x0a" + MAGIC + b"\x23\xd7\xce") == []
    assert parts_on_disk(b"".join(bytes(c) for c in framing.frame(MAGIC))) == [(1, 0), (3, 0)]
    assert parts_on_disk(b"".join(bytes(c) for c in framing.frame(b"abcd" + MAGIC + b"e"))) == [(1, 4), (3, 1)]
    assert parts_on_disk(b"".join(bytes(c) for c in framing.frame(b""))) == [(0, 0)]


def test_record_size_limit():
    class Huge:
        def __len__(self):
            return 1 << 29

    with pytest.raises(ValueError, match="2\\*\\*29"):
        framing.frame(Huge())


def test_keys_explicit_shuffled_and_build_index(tmp_path):
    payloads = tricky_payloads(2)
    keys = [int(k) for k in np.random.default_rng(0).permutation(len(payloads)) * 7 + 100]
    with Writer(tmp_path / "k.rec") as writer:
        for key, p in zip(keys, payloads):
            writer.write(p, key=key)
        with pytest.raises(ValueError, match="already used"):
            writer.write(b"dup", key=keys[0])
    reader = Reader(tmp_path / "k.rec")
    assert [reader.key(i) for i in range(len(reader))] == keys
    assert all(reader.get(k) == p for k, p in zip(keys, payloads))
    with pytest.raises(KeyError):
        reader.get(1)
    # default keys are positions; build_index reproduces the writer's index exactly
    with Writer(tmp_path / "p.rec") as writer:
        for p in payloads:
            writer.write(p)
    written = (tmp_path / "p.idx").read_bytes()
    build_index(tmp_path / "p.rec", tmp_path / "rebuilt.idx")
    assert (tmp_path / "rebuilt.idx").read_bytes() == written
    assert build_index(tmp_path / "p.rec") == tmp_path / "p.idx" and (tmp_path / "p.idx").read_bytes() == written


def test_reader_edges(tmp_path):
    with Writer(tmp_path / "e.rec"):
        pass
    empty = Reader(tmp_path / "e.rec")
    assert len(empty) == 0 and list(empty) == []
    with pytest.raises(IndexError):
        empty[0]
    with Writer(tmp_path / "x.rec") as writer:
        for i in range(5):
            writer.write(bytes([i]) * i)
    reader = Reader(tmp_path / "x.rec")
    assert reader[-1] == b"\x04" * 4 and reader[np.int64(2)] == b"\x02\x02"
    for bad in (5, -6):
        with pytest.raises(IndexError):
            reader[bad]
    reader.close()
    assert reader[3] == b"\x03" * 3  # reopens after close
    with pytest.raises(FileNotFoundError):
        Reader(tmp_path / "missing.rec")
    with pytest.raises(FileNotFoundError):
        Reader(tmp_path / "x.rec", tmp_path / "missing.idx")


def test_index_parsing_fast_and_tolerant_paths_agree(tmp_path):
    rng = np.random.default_rng(0)
    keys, offsets = rng.permutation(500), np.sort(rng.integers(0, 10**12, 500)) * 4
    strict = "".join(f"{k}\t{o}\n" for k, o in zip(keys, offsets))
    loose = "\n" + "".join(f" {k}  {o}\r\n" for k, o in zip(keys, offsets)) + "\n\n"
    (tmp_path / "s.idx").write_text(strict)
    (tmp_path / "l.idx").write_bytes(loose.encode())
    for name in ("s.idx", "l.idx"):
        got_keys, got_offsets = parse_index(tmp_path / name)
        assert got_keys.dtype == np.int64 and got_offsets.dtype == np.int64
        assert got_keys.tolist() == keys.tolist() and got_offsets.tolist() == offsets.tolist()
    (tmp_path / "n.idx").write_text("-3\t0\n")  # negative keys are legal for MXIndexedRecordIO
    assert parse_index(tmp_path / "n.idx")[0].tolist() == [-3]


@pytest.mark.parametrize("line", ["1\tabc\n", "1\t2\t3\n", "7\n", "1\t99999999999999999999999\n", "1.5\t8\n"])
def test_malformed_index_line_names_file_line_and_offset(tmp_path, line):
    (tmp_path / "bad.idx").write_text("0\t0\n" + line)
    with pytest.raises(FormatError) as info:
        parse_index(tmp_path / "bad.idx")
    message = str(info.value)
    assert "bad.idx" in message and "byte offset 4" in message
    if "99999" not in line:
        assert "line 2" in message


def test_irheader_pack_unpack():
    payload = pack(IRHeader(7, 3.0, 42, 9), b"image")  # flag follows the label, as in MXNet
    assert len(payload) == 24 + 5
    header, image = unpack(payload)
    assert header == IRHeader(0, 3.0, 42, 9) and image == b"image"
    header, image = unpack(pack(IRHeader(0, [1.5, -2.0, 3.25], 2**64 - 1, 0), MAGIC))
    assert header.flag == 3 and header.id == 2**64 - 1 and image == MAGIC
    assert header.label.dtype == np.float32 and header.label.tolist() == [1.5, -2.0, 3.25]
    assert unpack(pack(IRHeader(0, np.float32(0.5), 1, 0), b""))[0].label == 0.5
    with pytest.raises(ValueError):
        pack(IRHeader(0, 1.0, -1, 0), b"")
    with pytest.raises(ValueError, match="empty label"):
        pack(IRHeader(0, [], 1, 0), b"")
    for short in (b"", b"\x00" * 23, pack(IRHeader(0, [1.0] * 9, 1, 0), b"")[:-1]):
        with pytest.raises(FormatError):
            unpack(short)


def test_lst_round_trip(tmp_path):
    items = [(3, 2.0, "b/x y.jpg"), (0, 0.0, "a/1.jpg"), (9, (4.0, 5.0, 0.125, 1 / 3), "c/ü.png")]
    write_lst(tmp_path / "l.lst", items)
    text = (tmp_path / "l.lst").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "3\t2.000000\tb/x y.jpg"
    assert read_lst(tmp_path / "l.lst") == items
    with pytest.raises(ValueError):
        write_lst(tmp_path / "bad.lst", [(0, 1.0, "a\tb")])
    (tmp_path / "bad.lst").write_text("0\t1.0\ta.jpg\n1\tb.jpg\n")
    with pytest.raises(FormatError, match="line 2") as info:
        read_lst(tmp_path / "bad.lst")
    assert "bad.lst" in str(info.value) and "byte offset 12" in str(info.value)


def _samples(n: int, seed: int = 0) -> list[Sample]:
    rng = np.random.default_rng(seed)
    return [
        Sample(image=i.to_bytes(4, "little") + rng.bytes(int(rng.integers(0, 300))), label=i % 5, id=1000 + i)
        for i in range(n)
    ]


def test_write_shard(tmp_path):
    samples = _samples(25)
    info = write_shard(tmp_path / "shard-00000.rec", samples)
    rec = tmp_path / "shard-00000.rec"
    assert (info.file, info.index, info.records) == ("shard-00000.rec", "shard-00000.idx", 25)
    assert info.bytes == rec.stat().st_size and info.data_digest(None) == "crc32c:%08x" % crc32c(rec.read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard-00000.idx", "shard-00000.rec", "shard-00000.rec.crc"]
    reader = FORMAT.open_shard(rec)
    for i, s in enumerate(samples):
        image, label = reader.sample(i)
        assert image == s.image and label == s.label and type(label) is int
        assert reader.header(i) == IRHeader(0, float(s.label), s.id, 0)
        assert reader.records.key(i) == s.id
    # build_index(keys="id") reproduces write_shard's index
    build_index(rec, tmp_path / "again.idx", keys="id")
    assert (tmp_path / "again.idx").read_bytes() == (tmp_path / "shard-00000.idx").read_bytes()


def test_write_shard_labels(tmp_path):
    samples = [
        Sample(image=b"a", label=[1.0, 2.5], id=0),
        Sample(image=b"b", label=0.25, id=1),
        Sample(image=b"c", label=np.int64(4), id=2),
        Sample(image=MAGIC * 3, label=(7.0,), id=3),
    ]
    reader = open_shard(tmp_path / write_shard(tmp_path / "v.rec", samples).file)
    image, label = reader.sample(0)
    assert image == b"a" and label.dtype == np.float32 and label.tolist() == [1.0, 2.5]
    image, label = reader.sample(1)
    assert label.dtype == np.float32 and label.shape == (1,) and label[0] == np.float32(0.25)
    assert reader.sample(2) == (b"c", 4)
    image, label = reader.sample(3)
    assert image == MAGIC * 3 and label.tolist() == [7.0] and reader.header(3).flag == 1


def test_write_shard_failure_leaves_nothing(tmp_path):
    def broken():
        yield from _samples(3)
        raise RuntimeError("source died")

    with pytest.raises(RuntimeError):
        write_shard(tmp_path / "f.rec", broken())
    with pytest.raises(ValueError, match="already used"):
        write_shard(tmp_path / "g.rec", _samples(2) + _samples(1))
    assert list(tmp_path.iterdir()) == []
