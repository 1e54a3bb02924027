"""The fast reader of fastdata's own Datum layout (lmdb/fastpath.py) against the general path.

Whenever the fast path accepts a value it must give exactly what the general
path gives; any deviation from the layout must make it step aside.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from fastdata.errors import FormatError
from fastdata.formats.lmdb import Writer, encode_datum, open_shard, write_shard
from fastdata.formats.lmdb.fastpath import image_and_label
from fastdata.formats.sample import Sample


def general(shard, i: int):
    """What sample() returned before the fast path."""
    key = shard.key(i)
    return shard.reader.read(key, shard._parse_general, key)


def varied_samples() -> list[Sample]:
    out = []
    i = 0
    for label in (0, 1, 127, 128, 16383, 16384, 2**31 - 1):
        for size in (0, 5, 120, 200, 20000, 70000):
            for height, width in ((0, 0), (480, 640), (1, 300000)):
                image = b"\xff\xd8\xff" + i.to_bytes(4, "little") + bytes([i % 256]) * size
                out.append(Sample(image=image, label=label, id=i, height=height, width=width))
                i += 1
    return out


def test_fast_path_takes_every_fastdata_value_and_agrees(tmp_path):
    samples = varied_samples()
    write_shard(tmp_path / "s.lmdb", samples)
    shard = open_shard(tmp_path / "s.lmdb")
    for i, s in enumerate(samples):
        assert shard.reader.read(shard.key(i), image_and_label) == (s.image, s.label)
        assert shard.sample(i) == general(shard, i) == (s.image, s.label)


def test_foreign_lmdbs_agree(shared_data):
    for path in (shared_data / "lmdb/caffe_raw_datum/test_lmdb", shared_data / "lmdb/png_values/gt.lmdb"):
        shard = open_shard(path)
        assert len(shard) > 0
        for i in range(len(shard)):
            assert shard.reader.read(shard.key(i), image_and_label) is None  # raw datums, bare PNGs
            got, want = shard.sample(i), general(shard, i)
            assert got == want and isinstance(got[0], bytes)


def _deviations() -> dict[str, bytes]:
    base = encode_datum(b"\xff\xd8\xffimg", 7, encoded=True)
    assert image_and_label(base) == (b"\xff\xd8\xffimg", 7)
    return {
        "negative label": encode_datum(b"\xff\xd8\xffimg", -3, encoded=True),  # ten-byte varint, int32 rule
        "raw datum": encode_datum(bytes(12), 7, encoded=False, channels=3, height=2, width=2),
        "channels set": encode_datum(b"\xff\xd8\xffimg", 7, encoded=True, channels=3),
        "float_data": encode_datum(b"\xff\xd8\xffimg", 7, encoded=True, float_data=[1.0]),
        "encoded false": base[:-1] + b"\x00",
        "label repeated": base[:-2] + b"\x28\x09" + base[-2:],
        "data repeated": base[:-2] + b"\x22\x01z" + base[-2:],
        "unknown field": b"\x48\x01" + base,
        "data runs past the end": base.replace(b"\x22\x06", b"\x22\x40"),
        "label overlong varint": base.replace(b"\x28\x07", b"\x28" + b"\xff" * 10 + b"\x01"),
        "bare image": b"\xff\xd8\xff" + base,
        "too short": b"\x38\x01",
    }


@pytest.mark.parametrize("name", sorted(_deviations()))
def test_deviating_values_fall_back_to_the_general_path(tmp_path, name):
    value = _deviations()[name]
    path = tmp_path / "dev.lmdb"
    with Writer(path) as w:
        w.write(b"000000000", value)
    shard = open_shard(path)
    fast = image_and_label(value)
    try:
        want = general(shard, 0)
    except FormatError as exc:
        assert fast is None
        with pytest.raises(FormatError) as got:
            shard.sample(0)
        assert str(got.value) == str(exc) and got.value.key == b"000000000"
        return
    assert shard.sample(0) == want
    if name == "negative label":
        assert fast == want == (b"\xff\xd8\xffimg", -3)
    else:
        assert fast is None


def test_repeated_label_wins_through_fallback(tmp_path):
    with Writer(tmp_path / "rep.lmdb") as w:
        w.write(b"000000000", _deviations()["label repeated"])
    assert open_shard(tmp_path / "rep.lmdb").sample(0)[1] == 9


def test_mutated_values_never_disagree():
    """Flip, insert and delete bytes of valid values: the fast path says None or the general answer."""
    from fastdata.formats.lmdb.datum import decode_datum

    rng = random.Random(0)
    bases = [encode_datum(s.image, s.label, encoded=True, height=s.height, width=s.width) for s in varied_samples()[::5]]
    bases = [b for b in bases if len(b) < 3000]
    accepted = 0
    for _ in range(4000):
        value = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(value))
            op = rng.random()
            if op < 0.6:
                value[pos] = rng.randrange(256)
            elif op < 0.8:
                value.insert(pos, rng.randrange(256))
            else:
                del value[pos]
        value = bytes(value)
        fast = image_and_label(memoryview(value))
        if fast is None:
            continue
        accepted += 1
        datum = decode_datum(value)  # must not raise: the fast path accepted the value
        assert datum.encoded and (datum.data, datum.label) == fast
    assert accepted > 100


@pytest.mark.slow
def test_rate_report_fast_and_general_agree(tmp_path):
    """Reports records/s of sample() and of the general path (``-s`` to see); asserts only equality."""
    rng = np.random.default_rng(0)
    n = 10000
    samples = [Sample(image=b"\xff\xd8\xff" + rng.bytes(197), label=i % 1000, id=i) for i in range(n)]
    write_shard(tmp_path / "b.lmdb", samples)
    shard = open_shard(tmp_path / "b.lmdb")
    order = rng.integers(0, n, 50000).tolist()
    assert [shard.sample(i) for i in order] == [general(shard, i) for i in order] == [(samples[i].image, samples[i].label) for i in order]
    rates = {}
    for _ in range(3):  # interleaved rounds, best of each
        for name, fn in (("sample", shard.sample), ("general", lambda i: general(shard, i))):
            start = time.process_time()
            for i in order:
                fn(i)
            rates[name] = max(rates.get(name, 0), len(order) / max(time.process_time() - start, 1e-9))
    print(f"\nlmdb sample(i): {rates['sample']:,.0f}/s; general path: {rates['general']:,.0f}/s")
