"""``on_error``: corrupt samples raise with their location by default, and are
replaced (map-style) or dropped (streams) and counted under "skip"/"warn"."""

from __future__ import annotations

import warnings

import pytest
import torch
from dskit import CLASSES, KINDS, N, index_of, label_of, open_kind, samples, width_of, write_kind

from fastdata.datasets import RecordIODataset, RecordIOStream, TFRecordDataset
from fastdata.errors import ConfigError, DecodeError, FastDataError, FormatError
from fastdata.formats.dataset_writer import write_dataset

BAD = 9


@pytest.fixture(scope="module")
def truncated(corrupt_images):
    return (corrupt_images / "truncated_jpeg.jpg").read_bytes()  # generated: a progressive JPEG cut short


@pytest.fixture(scope="module", params=KINDS)
def corrupt(request, tmp_path_factory, truncated):
    kind = request.param
    return kind, write_kind(tmp_path_factory.mktemp(kind), kind, corrupt={BAD: truncated})


def test_raise_names_the_shard_and_record(corrupt):
    kind, root = corrupt
    ds = open_kind(root, kind)
    with pytest.raises(DecodeError) as info:
        ds[BAD]
    message = str(info.value)
    if kind == "folder":
        assert ds.samples[BAD][0] in message
    else:
        path, local = ds.locate(BAD)
        assert path in message and f"record {local}" in message
    assert ds.skipped == 0


def test_skip_returns_the_next_sample_and_counts(corrupt):
    kind, root = corrupt
    ds = open_kind(root, kind, on_error="skip")
    image, target = ds[BAD]
    assert (index_of(image), target) == (BAD + 1, label_of(BAD + 1))
    assert ds.skipped == 1
    assert index_of(ds[BAD + 1][0]) == BAD + 1 and ds.skipped == 1


def test_warn_warns_per_sample(corrupt):
    kind, root = corrupt
    ds = open_kind(root, kind, on_error="warn")
    with pytest.warns(RuntimeWarning, match="corrupt sample"):
        assert index_of(ds[BAD][0]) == BAD + 1
    assert ds.skipped == 1


def test_skips_in_workers_are_counted_in_the_parent(corrupt):
    kind, root = corrupt
    ds = open_kind(root, kind, on_error="skip", transform=width_of)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork")
    widths = [w for batch, _ in loader for w in batch.tolist()]
    assert widths == [i if i != BAD else BAD + 1 for i in range(N)]
    assert ds.skipped == 1


def test_bad_policy_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="on_error"):
        open_kind(write_kind(tmp_path, "folder", n=3), "folder", on_error="ignore")


def test_every_sample_bad_raises_instead_of_looping(tmp_path, truncated):
    root = write_kind(tmp_path, "recordio", n=4, corrupt={i: truncated for i in range(4)})
    ds = open_kind(root, "recordio", on_error="skip")
    with pytest.raises(FastDataError, match="consecutive"):
        ds[0]


def test_checksum_failure_is_a_format_error_or_a_counted_skip(tmp_path):
    write_dataset(tmp_path, "tfrecord", samples(), CLASSES, shard_bytes=10**6)
    ds = TFRecordDataset(tmp_path)
    path, local = ds.locate(BAD)
    from fastdata.formats.tfrecord import Reader

    offset = int(Reader(path).offsets[local])
    data = bytearray(open(path, "rb").read())
    data[offset + 12 + 40] ^= 0xFF  # inside record BAD's data: its CRC no longer matches
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(FormatError) as info:
        TFRecordDataset(tmp_path)[BAD]
    assert path in str(info.value) and f"record {local}" in str(info.value) and info.value.offset == offset
    skipping = TFRecordDataset(tmp_path, on_error="skip")
    assert index_of(skipping[BAD][0]) == BAD + 1 and skipping.skipped == 1


def test_stream_drops_and_counts(tmp_path, truncated):
    write_dataset(tmp_path, "recordio", samples(corrupt={BAD: truncated}), CLASSES, shard_bytes=1500)
    with pytest.raises(DecodeError):
        list(RecordIOStream(tmp_path, shuffle=False))
    stream = RecordIOStream(tmp_path, transform=width_of, on_error="skip")
    loader = torch.utils.data.DataLoader(stream, batch_size=None, num_workers=2, multiprocessing_context="fork")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "skip" only counts (and logs once)
        got = sorted(w for w, _ in loader)
    assert got == [i for i in range(N) if i != BAD] and stream.skipped == 1


def test_damaged_recordio_record_names_shard_and_record(tmp_path):
    write_dataset(tmp_path, "recordio", samples(), CLASSES, shard_bytes=1500)
    ds = RecordIODataset(tmp_path)
    path, local = ds.locate(BAD)
    from fastdata.formats.recordio import Reader

    offset = Reader(path).offset(local)
    data = bytearray(open(path, "rb").read())
    data[offset : offset + 4] = b"\0\0\0\0"  # the record's magic word
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(FormatError) as info:
        RecordIODataset(tmp_path)[BAD]
    assert path in str(info.value) and f"record {local}" in str(info.value)
    skipping = RecordIODataset(tmp_path, on_error="warn")
    with pytest.warns(RuntimeWarning, match=f"record {local}"):
        assert index_of(skipping[BAD][0]) == BAD + 1
