"""add_restarts's fast path: it cuts the source's own entropy-coded data into
restart segments, so everything but the DC code at the start of each segment
(and DC tables that lack codes for those values) is the source's, byte for
byte, and damaged data is still refused. test_native_restarts.py checks the
pixels of both paths on every shared photo."""

from __future__ import annotations

import numpy as np
import pytest
from test_native_restarts import SOURCES, header, jpeg, photo, pixels

from fastdata.decode import native

pytestmark = pytest.mark.skipif(native.cropdecode is None, reason="compiled crop decoder not built")


def marker_segments(data: bytes) -> list[tuple[int, bytes]]:
    """(marker code, payload) of each segment before the entropy-coded data, SOS included."""
    out, i = [], 2
    while True:
        code, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        out.append((code, data[i + 4:i + 2 + length]))
        i += 2 + length
        if code == 0xDA:
            return out


def huffman_tables(data: bytes) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    """(class, id) -> (counts per code length, values), the last definition of each."""
    tables = {}
    for code, s in marker_segments(data):
        while code == 0xC4 and s:
            n = sum(s[1:17])
            tables[(s[0] >> 4, s[0] & 15)] = (s[1:17], s[17:17 + n])
            s = s[17 + n:]
    return tables


def codes(bits: bytes, vals: bytes) -> dict[int, str]:
    """Each symbol's canonical Huffman code, as a bit string."""
    out, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(bits[length - 1]):
            out.setdefault(vals[k], format(code, f"0{length}b"))
            code, k = code + 1, k + 1
        code <<= 1
    return out


def test_every_marker_before_the_scan_is_copied_and_a_dri_added():
    src = photo(150, 260)
    data = jpeg(src, quality=90, exif=src.getexif(), comment=b"kept", dpi=(300, 300))
    out = native.add_restarts(data, chunks=4)
    assert out is not None
    before, after = marker_segments(data), marker_segments(out)
    assert [c for c, _ in after] == [c for c, _ in before[:-1]] + [0xDD, 0xDA]
    assert after[:-2] == before[:-1] and after[-1] == before[-1]  # these tables have every DC code already
    np.testing.assert_array_equal(pixels(out), pixels(data))


def test_fitted_tables_gain_the_missing_dc_codes_and_keep_their_own():
    """An optimised table has codes only for the DC differences the image has;
    a segment starts with a whole DC value, whose size may not be among them."""
    for data in (jpeg(photo(203, 331), quality=85, optimize=True),
                 jpeg(photo(170, 233).convert("L"), quality=95, optimize=True)):
        out = native.add_restarts(data, chunks=24)
        assert out is not None
        np.testing.assert_array_equal(pixels(out), pixels(data))
        old, new = huffman_tables(data), huffman_tables(out)
        assert old.keys() == new.keys()
        grew = 0
        for key, (bits, vals) in old.items():
            was, now = codes(bits, vals), codes(*new[key])
            assert {s: now[s] for s in was} == was, key  # every old code unchanged
            if key[0] == 0:
                assert set(range(12)) <= set(now), key
                grew += len(now) > len(was)
            else:
                assert now == was, key
        assert grew, "the fixture's tables should have lacked some DC codes"


@pytest.mark.parametrize("resegment", [True, False], ids=["cut", "libjpeg"])
def test_damaged_scans_are_refused_by_both_paths(resegment):
    data = SOURCES["420"]
    scan = header(data)[1]
    mid = (scan + len(data)) // 2
    damaged = {
        "truncated": data[:mid],
        "ends early": data[:mid] + b"\xff\xd9",
        "bad Huffman code": data[:mid] + b"\xff\x00" * 8 + data[mid + 16:],
        "bytes before EOI": data[:-2] + bytes(range(1, 101)) + b"\xff\xd9",
        "a second SOI in the scan": data[:mid] + b"\xff\xd8" + data[mid:],
    }
    previous = native.cropdecode._set_resegment(resegment)
    try:
        for what, bad in damaged.items():
            assert native.add_restarts(bad) is None, what
        assert native.add_restarts(data) is not None
    finally:
        native.cropdecode._set_resegment(previous)


def test_bytes_after_eoi_are_dropped():
    data = SOURCES["444"]
    out = native.add_restarts(data + b"trailing junk")
    assert out is not None and out.endswith(b"\xff\xd9") and b"trailing junk" not in out
    np.testing.assert_array_equal(pixels(out), pixels(data))


@pytest.mark.parametrize("save", [{"restart_marker_blocks": 3}, {"restart_marker_rows": 1},
                                  {"restart_marker_blocks": 7, "optimize": True}], ids=["3", "row", "7-optimised"])
def test_sources_with_restart_markers_are_cut_anew(save):
    """The source's own restart markers go; its DC values after them are re-coded
    where no new segment starts."""
    data = jpeg(photo(203, 331), quality=85, **save)
    kept = [(c, p) for c, p in marker_segments(data) if c not in (0xC4, 0xDD)]
    for chunks in (1, 5, 24):
        out = native.add_restarts(data, chunks=chunks)
        assert out is not None
        np.testing.assert_array_equal(pixels(out), pixels(data))
        assert [c for c, _ in marker_segments(out)].count(0xDD) == 1
        assert [(c, p) for c, p in marker_segments(out) if c not in (0xC4, 0xDD)] == kept
        assert {k: t for k, t in huffman_tables(out).items() if k[0] == 1} == \
            {k: t for k, t in huffman_tables(data).items() if k[0] == 1}
        again = native.add_restarts(out, chunks=3)
        assert again is not None
        np.testing.assert_array_equal(pixels(again), pixels(data))


def two_block_gray_jpeg(scan: bytes, ac: bytes = b"\x01" + bytes(15) + b"\x00") -> bytes:
    """8x16 grey JPEG with a DC table of one code ('0': 0) and this AC table
    (counts per length, values; default: '0': EOB)."""

    def segment(marker: int, payload: bytes) -> bytes:
        return bytes([0xFF, marker]) + (len(payload) + 2).to_bytes(2, "big") + payload

    one_code = b"\x01" + bytes(15)
    return b"".join([b"\xff\xd8", segment(0xDB, b"\x00" + bytes([1] * 64)),
                     segment(0xC0, b"\x08\x00\x08\x00\x10\x01\x01\x11\x00"),
                     segment(0xC4, b"\x00" + one_code + b"\x00" + b"\x10" + ac),
                     segment(0xDA, b"\x01\x01\x00\x00\x3f\x00"), scan, b"\xff\xd9"])


def test_a_code_only_the_extended_dc_table_has_is_a_bad_code_in_the_source():
    """The added DC codes are for the output; read with them, damaged source
    data would parse differently from libjpeg (which reads a bad code)."""
    good = two_block_gray_jpeg(b"\x0f")  # 0 0 | 0 0, then padding
    out = native.add_restarts(good, chunks=2)
    assert out is not None
    np.testing.assert_array_equal(pixels(out), pixels(good))
    bad = two_block_gray_jpeg(b"\x21\x7f")  # 0 0 | 10000 (category 1 in the extended table) 1 0
    for resegment in (True, False):
        previous = native.cropdecode._set_resegment(resegment)
        try:
            assert native.add_restarts(bad, chunks=2) is None, resegment
        finally:
            native.cropdecode._set_resegment(previous)


def test_an_ac_value_beyond_8_bit_range_is_kept_or_refused_never_changed():
    """A 15-bit AC value (decoders take it; baseline encoders never write it):
    the fast path copies its bits; libjpeg's re-encode must refuse it (with the
    standard tables it wrote it without a code: other pixels, found by the fuzz)."""
    ac = b"\x01\x01" + bytes(14) + b"\x00\x0f"  # '0': EOB, '10': 15-bit value
    data = two_block_gray_jpeg(b"\x58\x00\x07", ac)  # 0 10 110000000000000 (24576) 0 | 0 0, padding
    assert pixels(data).std() > 0  # it decodes (to black and white)
    out = native.add_restarts(data, chunks=2)
    assert out is not None
    np.testing.assert_array_equal(pixels(out), pixels(data))
    previous = native.cropdecode._set_resegment(False)
    try:
        assert native.add_restarts(data, chunks=2) is None
    finally:
        native.cropdecode._set_resegment(previous)
