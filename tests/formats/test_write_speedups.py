"""The compiled write helpers (fastdata.formats._speedups) against their
portable twins and the plain reference: the magic-word search, CRC32C
combining, and RecordIO records written from an IRHeader and an image as
two parts. Every answer must be identical on both paths."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from crc32c import crc32c

from fastdata.formats import checksums, speedups
from fastdata.formats.recordio import framing
from fastdata.formats.recordio.irheader import IRHeader, pack, pack_header
from fastdata.formats.recordio.writer import Writer

MAGIC = framing.MAGIC_BYTES
PATHS = ["compiled", "portable"]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest):
    if request.param == "compiled" and not speedups.available():
        pytest.skip(f"compiled write helpers not built: {speedups.status()}")
    with speedups.using(request.param == "compiled"):
        yield request.param


def _planted(rng: random.Random, size: int) -> bytes:
    """Random bytes with magic words at aligned and unaligned offsets, near both ends."""
    data = bytearray(rng.randbytes(size))
    for _ in range(rng.randrange(4)):
        if size >= 4:
            at = rng.choice([0, size - 4, rng.randrange(size - 3), size - 4 - (size % 4)])
            data[at : at + 4] = MAGIC
    return bytes(data)


def test_magic_cuts_match_bytes_find_on_random_data(path):
    rng = random.Random(20)
    sizes = list(range(0, 80)) + [255, 256, 257, 258, 259, 260, 1023, 4096 + 3, 65 * 256 + 1]
    for size in sizes:
        for _ in range(20):
            data = _planted(rng, size)
            want = framing._cut_points_find(data)
            assert framing.cut_points(data) == want, (size, data)
            assert framing.cut_points(bytearray(data)) == want
            assert framing.cut_points(memoryview(data)) == want


def test_magic_cuts_find_every_aligned_word_and_no_unaligned_one(path):
    data = MAGIC * 300 + b"x" + MAGIC * 2 + b"yyy" + MAGIC + b"zz"  # the tail is 3 unaligned then 1 aligned
    want = framing._cut_points_find(data)
    assert want[:300] == list(range(0, 1200, 4)) and want[300:] == [1212]
    assert framing.cut_points(data) == want
    shifted = b"\0" + MAGIC * 100  # all unaligned
    assert framing.cut_points(shifted) == [] == framing._cut_points_find(shifted)


def test_magic_cuts_on_photos(path, photo_tree: Path):
    photos = sorted((photo_tree / "val").glob("*/*"))[:60]  # generated JPEGs (tests/testkit.py)
    assert photos
    for photo in photos:
        data = photo.read_bytes()
        assert framing.cut_points(data) == framing._cut_points_find(data), photo


@pytest.mark.parametrize("len2", [0, 1, 2, 3, 4, 5, 7, 31, 64, 1000, 4097, (1 << 20) + 3])
def test_combine_equals_crc_of_the_concatenation(path, len2):
    rng = random.Random(len2)
    for len1 in (0, 1, 3, 24, 1001):
        a, b = rng.randbytes(len1), rng.randbytes(len2)
        assert checksums.combine(crc32c(a), crc32c(b), len2) == crc32c(a + b), (len1, len2)


def test_combine_compiled_and_python_agree_on_random_values():
    if not speedups.available():
        pytest.skip(speedups.status())
    rng = random.Random(7)
    for _ in range(2000):
        crc1, crc2 = rng.getrandbits(32), rng.getrandbits(32)
        len2 = rng.choice([rng.randrange(64), rng.getrandbits(20), rng.getrandbits(40), 2**63 - 1])
        assert speedups.native.crc32c_combine(crc1, crc2, len2) == checksums._combine_py(crc1, crc2, len2)


@pytest.mark.parametrize("args", [(-1, 0, 0), (1 << 32, 0, 0), (0, 1 << 32, 0), (0, 0, -1)])
def test_combine_refuses_values_that_are_not_crcs_or_lengths(path, args):
    with pytest.raises(ValueError, match="crc32c_combine"):
        checksums.combine(*args)


def _labels(rng: random.Random):
    return rng.choice([3, 2.5, [1.0, 2.0, 3.0], np.arange(9, dtype=np.float32)])


def _records(rng: random.Random) -> list[tuple[bytes, bytes]]:
    """(head, body) pairs, including magic words in the IRHeader (as its id and label) and in the body."""
    magic_id = int.from_bytes(MAGIC * 2, "little")
    magic_label = np.frombuffer(MAGIC, "<f4")[0]
    records = [
        (pack_header(IRHeader(0, 1, magic_id, 0)), b"jpeg"),
        (pack_header(IRHeader(0, magic_label, 5, 0)), rng.randbytes(33)),
        (pack_header(IRHeader(0, 1, 6, 0)), b""),
        (pack_header(IRHeader(0, 1, 7, 0)), MAGIC),
        (pack_header(IRHeader(0, [2.0, float(magic_label)], 8, 0)), MAGIC + b"x"),
        (b"", b""),
        (b"", MAGIC * 3),
    ]
    for i in range(200):
        records.append((pack_header(IRHeader(0, _labels(rng), 100 + i, 0)), _planted(rng, rng.randrange(600))))
    return records


def test_frame_parts_frames_like_frame_of_the_joined_payload(path):
    for head, body in _records(random.Random(3)):
        chunks, whole = framing.frame_parts(head, body)
        assert b"".join(map(bytes, chunks)) == b"".join(map(bytes, framing.frame(head + body)))
        assert whole == (not framing._cut_points_find(head + body))


def test_frame_parts_refuses_a_head_off_the_4_byte_grid(path):
    with pytest.raises(ValueError, match="multiple of 4"):
        framing.frame_parts(b"abc", b"d")


def test_write_parts_writes_the_bytes_and_checksums_of_write(path, tmp_path: Path):
    records = _records(random.Random(11))
    with Writer(tmp_path / "parts.rec", checksums=True) as parts, Writer(tmp_path / "joined.rec", checksums=True) as joined:
        for n, (head, body) in enumerate(records):
            assert parts.write_parts(head, body, key=n) == joined.write(head + body, key=n)
    for suffix in (".rec", ".idx"):
        assert (tmp_path / f"parts{suffix}").read_bytes() == (tmp_path / f"joined{suffix}").read_bytes()
    assert parts.crcs == joined.crcs == [crc32c(head + body) for head, body in records]
    assert parts.file_crc == joined.file_crc == crc32c((tmp_path / "parts.rec").read_bytes())


def test_both_paths_write_the_same_shard(tmp_path: Path):
    if not speedups.available():
        pytest.skip(speedups.status())
    records = _records(random.Random(5))
    out = {}
    for mode in PATHS:
        with speedups.using(mode == "compiled"), Writer(tmp_path / f"{mode}.rec", checksums=True) as writer:
            for n, (head, body) in enumerate(records):
                writer.write_parts(head, body, key=n)
        out[mode] = ((tmp_path / f"{mode}.rec").read_bytes(), writer.crcs, writer.file_crc)
    assert out["compiled"] == out["portable"]


def test_pack_is_pack_header_then_the_data():
    for header in (IRHeader(0, 3, 1, 2), IRHeader(0, 0.5, 2**64 - 1, 0), IRHeader(2, [1.0, 2.0], 3, 0)):
        head = pack_header(header)
        assert len(head) % 4 == 0
        assert pack(header, b"img") == head + b"img"


def test_status_names_the_path_in_use(monkeypatch):
    with speedups.using(False):
        assert "portable" in speedups.status()
    monkeypatch.setattr(speedups, "_compiled", None)
    monkeypatch.setattr(speedups, "native", None)
    monkeypatch.setattr(speedups, "_why", "fastdata.formats._speedups is not built (test)")
    assert "not built" in speedups.status() and "C compiler" in speedups.status()
    with pytest.raises(RuntimeError, match="not available"):
        with speedups.using(True):
            pass


def test_the_compiled_helpers_are_built_in_a_checkout_with_a_compiler():
    """A checkout installed with `pip install -e .` has the extension: a silent
    fall back to the portable path would show here, not only in timings."""
    import os
    import shutil
    import sysconfig

    if os.environ.get("FASTDATA_NO_NATIVE", "") not in ("", "0"):
        pytest.skip("FASTDATA_NO_NATIVE is set: the build skips the extensions on purpose")
    if not (shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc")):
        pytest.skip("no C compiler: the portable path is expected")
    assert speedups.available(), speedups.status()
    assert speedups.status().startswith("compiled (fastdata.formats._speedups); CRC32C: ")


@pytest.mark.parametrize("name", ["im2rec_passthrough", "multilabel", "multipart"])
def test_write_parts_reproduces_mxnet_files(path, shared_data: Path, tmp_path: Path, name: str):
    """Each MXNet-written record, split into IRHeader (with labels) and the rest,
    written again with write_parts: the same .rec, byte for byte."""
    from fastdata.formats.recordio import Reader, unpack

    vectors = shared_data / "vectors"
    reader = Reader(vectors / f"{name}.rec")
    with Writer(tmp_path / "out.rec", checksums=True) as writer:
        for i in range(len(reader)):
            payload = reader[i]
            if name == "multipart":  # raw payloads, no IRHeader: split anywhere on the 4-byte grid
                cut = min(len(payload) & ~3, 8)
                head, body = payload[:cut], payload[cut:]
            else:
                header, body = unpack(payload)
                head = pack_header(header)
                assert head + body == payload
            writer.write_parts(head, body, key=reader.key(i))
    written = (tmp_path / "out.rec").read_bytes()
    assert written == (vectors / f"{name}.rec").read_bytes()
    assert writer.file_crc == crc32c(written)
    assert writer.crcs == [crc32c(reader[i]) for i in range(len(reader))]


def test_write_shard_packs_class_indexes_directly_with_the_same_bytes_and_errors():
    from fastdata.errors import ConfigError
    from fastdata.formats.recordio.shards import _head, _header
    from fastdata.formats.sample import Sample

    for label, key in [(0, 0), (1, 5), (999, 2**64 - 1), (2**60, 3), (True, 1), (2.5, 1), ([1.0, 2.0], 4)]:
        sample = Sample(b"x", label, key)
        assert _head(sample) == pack_header(_header(sample)), (label, key)
    for key in (-1, 2**64):
        with pytest.raises(ConfigError, match="out of range"):
            _head(Sample(b"x", 1, key))


def _index_cases(rng: random.Random) -> list[tuple[bytes, int, int]]:
    """.idx texts as write_shard writes them, and damaged ones, with bases and shard sizes."""
    cases = []
    for _ in range(1500):
        offsets = sorted(rng.sample(range(0, 10_000, 4), rng.randint(0, 30)))
        data = "".join(f"{rng.randint(0, 10 ** rng.randint(0, 12))}\t{o}\n" for o in offsets).encode()
        if data and rng.random() < 0.5:
            at = rng.randrange(len(data))
            data = data[:at] + bytes([rng.choice(b"0129\t\n x-")]) + data[at + 1 :]
        cases.append((data, rng.choice([0, 4, 10**15]), rng.choice([10_000, 5_000, 1])))
    return cases + [
        (b"007\t0\n", 0, 10),  # a key with leading zeros: written as a plain decimal
        (b"1\t0", 0, 10),  # no final newline
        (b"\n", 0, 10),
        (b"1\t8\n2\t8\n", 0, 10),  # offsets that do not increase
        (b"1\t6\n", 0, 10),  # off the 4-byte grid
        (b"1\t4\n", 2**64 - 2, 10),  # past 64 bits once shifted: Python's ints decide
        (b"99999999999999999999999\t4\n", 0, 10),
        (b"1\t4\n", 0, 2**70),
    ]


def test_dali_index_shift_is_the_same_on_both_paths(tmp_path: Path):
    """What dali.idx is built from: each shard's .idx with its offsets moved (or None, when the
    text is not one write_shard wrote), the same bytes from the compiled and the portable path."""
    from fastdata.formats.recordio.shards import _shifted_lines

    if not speedups.available():
        pytest.skip(f"compiled write helpers not built: {speedups.status()}")
    index = tmp_path / "x.idx"
    refused = 0
    for data, base, size in _index_cases(random.Random(5)):
        index.write_bytes(data)
        compiled = _shifted_lines(index, base, size)
        with speedups.using(False):
            portable = _shifted_lines(index, base, size)
        assert compiled == portable, (data, base, size)
        refused += compiled is None
    assert 500 < refused < 1500  # both kinds were tried
    index.write_bytes(b"3\t0\n9\t12\n")
    assert _shifted_lines(index, 100, 20) == b"3\t100\n9\t112\n"
