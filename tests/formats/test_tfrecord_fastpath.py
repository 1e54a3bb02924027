"""The fast reader of fastdata's own Example layout (tfrecord/fastpath.py) against the general parser.

Whenever the fast path accepts a record it must give exactly what the general
parser gives; any deviation from the layout must make it step aside.
"""

from __future__ import annotations

import random
import struct
import time

import numpy as np
import pytest

from fastdata.errors import FormatError
from fastdata.formats import tfrecord as tfr
from fastdata.formats.sample import Sample
from fastdata.formats.tfrecord.example_find import find_features
from fastdata.formats.tfrecord.fastpath import image_and_label

KEYS = (tfr.IMAGE_KEY.encode(), tfr.LABEL_KEY.encode())


def general(shard: tfr.ShardReader, record: bytes, i: int = 0):
    """What sample() returned before the fast path: the general parser's answer."""
    return shard._decode(record, i)


def varied_samples() -> list[Sample]:
    """Sizes chosen to hit one-, two- and three-byte varints in every length and the label."""
    out = []
    i = 0
    for label in (0, 5, 126, 127, 1000, 16382, 16383, 2**40):
        for size in (0, 3, 120, 200, 5000, 70000):
            for filename, text, height in (("a.jpg", "", 0), ("d/" + "f" * 200 + ".jpg", "cat" * 50, 100000)):
                image = b"\xff\xd8\xff" + struct.pack("<I", i) + bytes([i % 256]) * size
                out.append(Sample(image=image, label=label, id=i, filename=filename, class_text=text, height=height, width=7))
                i += 1
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    samples = varied_samples()
    path = tmp_path_factory.mktemp("fast") / "s.tfrecord"
    tfr.write_shard(path, samples)
    return path, samples


def test_fast_path_takes_every_fastdata_record_and_agrees(written):
    path, samples = written
    shard = tfr.open_shard(path)
    reader = shard.reader
    for i, s in enumerate(samples):
        record = reader[i]
        assert image_and_label(record) == (s.image, s.label + 1)
        assert shard.sample(i) == general(shard, record, i) == (s.image, s.label)


def test_label_base_and_other_keys_are_honoured(written):
    path, samples = written
    zero = tfr.open_shard(path, label_base=0)
    assert [zero.sample(i)[1] for i in range(5)] == [s.label + 1 for s in samples[:5]]
    other = tfr.open_shard(path, label_key="image/height")  # not the fast layout's key: general parser
    assert other.sample(1) == (samples[1].image, samples[1].height)


def test_foreign_tensorflow_files_agree(shared_data):
    files = sorted((shared_data / "vectors").glob("*.tfrecord"))
    assert files
    for path in files:
        shard = tfr.open_shard(path)
        for i in range(len(shard)):
            record = shard.reader[i]
            fast = image_and_label(record)
            want = general(shard, record, i)
            assert shard.sample(i) == want
            if fast is not None:
                assert (fast[0], fast[1] - 1) == want


def _entries(record: bytes) -> list[bytes]:
    """The raw map entries (tag, length, body) of a fastdata Example, in order."""
    from fastdata.formats._protowire import decode_varint as _varint

    pos = _varint(record, 1)[1]
    out = []
    while pos < len(record):
        m, s = _varint(record, pos + 1)
        out.append(record[pos : s + m])
        pos = s + m
    return out


def _example(entries: list[bytes]) -> bytes:
    from fastdata.formats._protowire import len_field

    return len_field(1, b"".join(entries))


def _base_record() -> bytes:
    return tfr.encode_sample(Sample(image=b"\xff\xd8\xff" + b"x" * 197, label=41, id=0, filename="0.jpg"))


def _deviations() -> dict[str, bytes]:
    base = _base_record()
    e = _entries(base)
    assert len(e) == 7 and image_and_label(_example(e)) == (b"\xff\xd8\xff" + b"x" * 197, 42)
    label_again = tfr.encode_example({tfr.LABEL_KEY: [9]})[2:]  # a repeated key: the last one wins
    image_again = tfr.encode_example({tfr.IMAGE_KEY: b"other"})[2:]
    return {
        "reordered": _example([e[2], e[0], e[1], *e[3:]]),
        "sorted keys (TensorFlow)": _example(sorted(e, key=lambda x: x[2:])),
        "extra feature": _example([*e, tfr.encode_example({"extra": 1.5})[2:]]),
        "missing width": _example(e[:-1]),
        "label repeated at the end": _example([*e, label_again]),
        "image repeated at the end": _example([*e, image_again]),
        "label vector": tfr.encode_example({tfr.IMAGE_KEY: b"i", "image/format": b"", tfr.LABEL_KEY: [1, 2]}),
        "float label": tfr.encode_sample(Sample(image=b"i", label=[0.5, 1.0], id=0)),
        "negative label": tfr.encode_sample(Sample(image=b"i", label=-5, id=0)),
        "two features fields": base + base,
        "SequenceExample": base + b"\x12\x00",
        "truncated": base[:-1],
        "tail value field of another type": base.replace(b"image/width\x12", b"image/width\x1a"),
        "tail value field too short": base.replace(b"image/width\x12\x05", b"image/width\x12\x04"),
        "empty": b"",
    }


@pytest.mark.parametrize("name", sorted(_deviations()))
def test_deviating_records_fall_back_to_the_general_parser(tmp_path, name):
    record = _deviations()[name]
    assert image_and_label(record) is None
    path = tmp_path / "dev.tfrecord"
    with tfr.Writer(path) as w:  # valid CRCs: only the Example deviates
        w.write(record)
    shard = tfr.open_shard(path)
    try:
        want = general(shard, record)
    except FormatError as exc:
        with pytest.raises(FormatError) as got:
            shard.sample(0)
        assert str(got.value) == str(exc) and got.value.offset == 0 and str(path) in str(got.value)
        return
    got = shard.sample(0)
    assert type(got[1]) is type(want[1]) and got[0] == want[0] and np.array_equal(got[1], want[1])


def test_repeated_label_wins_through_fallback(tmp_path):
    path = tmp_path / "rep.tfrecord"
    with tfr.Writer(path) as w:
        w.write(_deviations()["label repeated at the end"])
    assert tfr.open_shard(path).sample(0)[1] == 8


def test_mutated_records_never_disagree():
    """Flip, insert and delete bytes of valid records: the fast path says None or the parser's answer."""
    rng = random.Random(0)
    bases = [tfr.encode_sample(s) for s in varied_samples()[::7] if len(s.image) < 6000]
    accepted = 0
    for _ in range(3000):
        rec = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(rec))
            op = rng.random()
            if op < 0.6:
                rec[pos] = rng.randrange(256)
            elif op < 0.8:
                rec.insert(pos, rng.randrange(256))
            else:
                del rec[pos]
        rec = bytes(rec)
        fast = image_and_label(rec)
        if fast is None:
            continue
        accepted += 1
        found = find_features(rec, KEYS)  # must not raise: the fast path accepted the record
        image, label = found[KEYS[0]], found[KEYS[1]]
        assert image[0] == "bytes" and image[1] == [fast[0]]
        assert label[0] == "int64" and tfr.example_parse.int64_list(label[1]) == [fast[1]]
    assert accepted > 100  # flips inside image bytes and values keep the layout


@pytest.mark.slow
def test_rate_report_fast_and_general_agree(tmp_path):
    """Reports records/s of sample() and of the general parser (``-s`` to see); asserts only equality."""
    rng = np.random.default_rng(0)
    n = 10000
    samples = [Sample(image=b"\xff\xd8\xff" + rng.bytes(197), label=i % 1000, id=i, filename=f"{i}.jpg") for i in range(n)]
    tfr.write_shard(tmp_path / "b.tfrecord", samples)
    shard = tfr.open_shard(tmp_path / "b.tfrecord")
    order = rng.integers(0, n, 50000).tolist()
    records = [shard.reader[i] for i in range(n)]
    fast = [shard.sample(i) for i in order]
    slow = [general(shard, records[i], i) for i in order]
    assert fast == slow == [(samples[i].image, samples[i].label) for i in order]
    rates = {}
    for _ in range(3):  # interleaved rounds, best of each
        for name, fn in (("sample", shard.sample), ("general", lambda i: general(shard, shard.reader[i], i))):
            start = time.process_time()
            for i in order:
                fn(i)
            rates[name] = max(rates.get(name, 0), len(order) / max(time.process_time() - start, 1e-9))
    print(f"\ntfrecord sample(i): {rates['sample']:,.0f}/s; general parser: {rates['general']:,.0f}/s")
