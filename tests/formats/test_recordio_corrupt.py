"""Damaged RecordIO files and indexes: always a FormatError naming file and offset, never bad data."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from fastdata.errors import FormatError
from fastdata.formats import Sample
from fastdata.formats.recordio import Reader, Writer, open_shard, write_shard

MAGIC = b"\x0a\x23\xd7\xce"


def make(tmp_path: Path, n: int = 8, seed: int = 0) -> tuple[Path, list[bytes], list[int]]:
    rng = np.random.default_rng(seed)
    payloads = [i.to_bytes(4, "little") + rng.bytes(int(rng.integers(20, 120))) for i in range(n)]
    payloads[3] = b"abcd" + MAGIC + b"tail" + MAGIC + b"!"  # a multi-part record in the middle
    rec = tmp_path / "d.rec"
    with Writer(rec) as writer:
        offsets = [writer.write(p) for p in payloads]
    return rec, payloads, offsets


def read_everything(rec: Path, index: Path | None = None, *, scan: bool = False) -> list[bytes]:
    if scan:
        idx = rec.with_suffix(".idx")
        if idx.exists():
            idx.unlink()
    return list(Reader(rec, index))


def error_offset(exc: FormatError) -> int:
    match = re.search(r"byte offset (\d+)", str(exc))
    assert match, f"no offset in {exc}"
    return int(match.group(1))


@pytest.mark.parametrize("scan", [False, True], ids=["idx", "scan"])
def test_truncated_last_record(tmp_path, scan):
    rec, _, offsets = make(tmp_path)
    size = rec.stat().st_size
    for cut in (1, 3, 4, 9, size - offsets[-1] - 4):
        os.truncate(rec, size - cut)
        with pytest.raises(FormatError) as info:
            read_everything(rec, scan=scan)
        assert str(rec) in str(info.value)
        assert error_offset(info.value) == offsets[-1] or "offset " + str(offsets[-1]) in str(info.value)


@pytest.mark.parametrize("record", [0, 3, 7])
@pytest.mark.parametrize("scan", [False, True], ids=["idx", "scan"])
def test_every_flipped_header_bit_is_caught(tmp_path, record, scan):
    rec, payloads, offsets = make(tmp_path)
    original = rec.read_bytes()
    index = rec.with_suffix(".idx").read_bytes()
    start = offsets[record]
    for pos in range(start, start + 8):
        for bit in range(8):
            damaged = bytearray(original)
            damaged[pos] ^= 1 << bit
            rec.write_bytes(bytes(damaged))
            rec.with_suffix(".idx").write_bytes(index)
            if grows_into_padding(int.from_bytes(original[start + 4 : start + 8], "little"), pos - start, bit):
                # RecordIO has no checksum: a length that grows into the record's own zero
                # padding is indistinguishable from a payload ending in zeros (see spec.md)
                got = read_everything(rec, scan=scan)[record]
                assert got.rstrip(b"\0") == payloads[record].rstrip(b"\0") and len(got) > len(payloads[record])
                continue
            with pytest.raises(FormatError) as info:
                read_everything(rec, scan=scan)
            assert str(rec) in str(info.value) and "byte offset" in str(info.value)


def grows_into_padding(lrecord: int, byte: int, bit: int) -> bool:
    length = lrecord & ((1 << 29) - 1)
    if byte != 4 or bit > 1 or lrecord >> 29 in (1, 2):  # continuation parts must stay 4-aligned
        return False
    new = length ^ (1 << bit)
    return new > length and (new + 3) & ~3 == (length + 3) & ~3


def test_flipped_continuation_part_header(tmp_path):
    rec, payloads, offsets = make(tmp_path)
    second_part = offsets[3] + 8 + 4  # record 3's first part holds 4 bytes
    original = rec.read_bytes()
    assert original[second_part : second_part + 4] == MAGIC
    for pos in range(second_part, second_part + 8):
        for bit in range(8):
            damaged = bytearray(original)
            damaged[pos] ^= 1 << bit
            rec.write_bytes(bytes(damaged))
            reader = Reader(rec)
            assert reader[2] == payloads[2] and reader[4] == payloads[4]  # neighbours unaffected
            with pytest.raises(FormatError) as info:
                reader[3]
            assert "key 3" in str(info.value) and str(rec) in str(info.value)


def test_index_pointing_at_garbage(tmp_path):
    rec, payloads, offsets = make(tmp_path)
    idx = tmp_path / "bad.idx"
    # aligned, inside a payload: the magic check fails on read, naming the key
    idx.write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(offsets[:5])) + f"5\t{offsets[5] + 8}\n")
    reader = Reader(rec, idx)
    assert reader[0] == payloads[0]
    with pytest.raises(FormatError) as info:
        reader[5]
    assert error_offset(info.value) == offsets[5] + 8 and "key 5" in str(info.value) and "magic" in str(info.value)
    # an index that skips a record: the record before the gap does not end where the next begins
    idx.write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(offsets) if k != 2))
    with pytest.raises(FormatError, match="next record starts") as info:
        Reader(rec, idx)[1]
    assert "key 1" in str(info.value)
    # unaligned, past the end, duplicated: refused when the index is loaded
    size = rec.stat().st_size
    for lines in (f"0\t{offsets[1] + 2}\n", f"0\t{size}\n", f"0\t{size - 4}\n", "0\t-8\n", "0\t0\n1\t0\n"):
        idx.write_text(lines)
        with pytest.raises(FormatError) as info:
            Reader(rec, idx)
        assert str(rec) in str(info.value) and "byte offset" in str(info.value)


def test_shortened_or_lengthened_length_field_with_index(tmp_path):
    rec, _, offsets = make(tmp_path)
    raw = bytearray(rec.read_bytes())
    for delta in (-4, -1, 1, 4, offsets[2] - offsets[1]):  # the last: swallow exactly the next record
        damaged = bytearray(raw)
        length = int.from_bytes(damaged[offsets[1] + 4 : offsets[1] + 8], "little") + delta
        damaged[offsets[1] + 4 : offsets[1] + 8] = length.to_bytes(4, "little")
        rec.write_bytes(bytes(damaged))
        reader = Reader(rec)
        with pytest.raises(FormatError) as info:
            reader[1]
        assert error_offset(info.value) == offsets[1] and "key 1" in str(info.value)


def test_image_shard_with_short_record(tmp_path):
    info = write_shard(tmp_path / "s.rec", [Sample(image=b"jpeg", label=1, id=5)])
    with Writer(tmp_path / "raw.rec") as writer:
        writer.write(b"too short", key=9)
    with pytest.raises(FormatError) as err:
        open_shard(tmp_path / "raw.rec").sample(0)
    assert "raw.rec" in str(err.value) and "key 9" in str(err.value) and "byte offset 0" in str(err.value)
    # flag says 9 labels, but the record ends first
    data = bytearray((tmp_path / info.file).read_bytes())
    data[8:12] = (9).to_bytes(4, "little")
    (tmp_path / "s.rec").write_bytes(bytes(data))
    with pytest.raises(FormatError, match="too short") as err:
        open_shard(tmp_path / "s.rec").sample(0)
    assert "key 5" in str(err.value)


def test_file_replaced_under_the_reader(tmp_path):
    rec, _, _ = make(tmp_path)
    reader = Reader(rec)
    reader.close()
    with open(rec, "ab") as f:
        f.write(b"\0" * 8)
    with pytest.raises(FormatError, match="changed"):
        reader[0]


def test_trailing_garbage_is_reported(tmp_path):
    rec, payloads, offsets = make(tmp_path)
    with open(rec, "ab") as f:
        f.write(b"\x01\x02\x03\x04" * 4)
    with pytest.raises(FormatError) as info:  # with the index: the last record does not end the file
        Reader(rec)[len(payloads) - 1]
    assert "key 7" in str(info.value)
    rec.with_suffix(".idx").unlink()
    with pytest.raises(FormatError, match="magic") as info:  # scanning: no record where one should start
        Reader(rec)
    assert error_offset(info.value) == offsets[-1] + 8 + ((len(payloads[-1]) + 3) & ~3)
