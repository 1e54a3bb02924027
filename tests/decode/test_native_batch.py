"""decode_batch (fastdata/decode/_native/batch.c): the pixels of decode_resized
in every slot of an NHWC or NCHW batch, failures reported per item, bad
arguments refused before anything is decoded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fastdata.decode import native, read_info
from fastdata.decode.batch import batch_available, batch_request, decode_batch

pytestmark = pytest.mark.skipif(not batch_available(), reason="compiled crop decoder not built")

SIZE = (30, 44)


def _photos(photo_tree, edge_images, count=6):
    """Generated photos (tests/testkit.py), one stored turned (EXIF 6), one restart-marked."""
    files = sorted((photo_tree / "train").rglob("*.jpg"))[::16][:count]
    files.append(edge_images / "exif_orientation_jpeg" / "orientation_6.jpg")
    out = [f.read_bytes() for f in files]
    return out + [native.add_restarts(out[0])]


def _items(datas, seed=0):
    gen = np.random.default_rng(seed)
    items, expected = [], []
    for slot, data in enumerate(datas):
        info = read_info(data)
        h, w = info.height, info.width
        box = (float(gen.integers(0, h // 3)), float(gen.integers(0, w // 3)), h / 2, w / 2)
        flip = bool(gen.integers(0, 2))
        items.append((slot, data, batch_request(data, info, box, min_size=(45, 66), snap=True, flip=flip)))
        expected.append(native.decode_resized(data, info, box, SIZE, min_size=(45, 66), snap=True, flip=flip))
    return items, expected


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_every_slot_holds_what_decode_resized_gives(photo_tree, edge_images, memory_format):
    datas = _photos(photo_tree, edge_images)
    items, expected = _items(datas)
    batch = torch.zeros((len(datas) + 1, 3, *SIZE), dtype=torch.uint8).contiguous(memory_format=memory_format)
    order = items[::-1]  # slots are filled wherever the items say
    assert decode_batch(batch.permute(0, 2, 3, 1).numpy(), order) == []
    for slot, want in enumerate(expected):
        assert np.array_equal(batch[slot].permute(1, 2, 0).numpy(), want)
    assert int(batch[-1].sum()) == 0  # a slot no item names is not written


def test_a_corrupt_item_is_reported_and_the_others_decoded(photo_tree, edge_images):
    datas = _photos(photo_tree, edge_images, 3)
    items, expected = _items(datas[:3])
    truncated = datas[1][: len(datas[1]) // 3]
    items[1] = (1, truncated, items[1][2])
    items.append((3, b"not a jpeg at all", items[0][2]))
    out = np.zeros((4, *SIZE, 3), np.uint8)
    failed = decode_batch(out, items)
    assert [(position, status) for position, status, _ in failed] == [(1, native.cropdecode.STATUS_ERROR),
                                                                    (3, native.cropdecode.STATUS_ERROR)]
    assert all(message for _, _, message in failed)
    assert np.array_equal(out[0], expected[0]) and np.array_equal(out[2], expected[2])


def test_bad_arguments_are_refused(photo_tree, edge_images):
    datas = _photos(photo_tree, edge_images, 1)
    items, _ = _items(datas)
    request = items[0][2]
    out = np.zeros((2, *SIZE, 3), np.uint8)
    with pytest.raises(IndexError, match="slot 2 is outside the batch of 2"):
        decode_batch(out, [(0, datas[0], request), (2, datas[0], request)])
    with pytest.raises(IndexError, match="slot -1"):
        decode_batch(out, [(-1, datas[0], request)])
    for bad in (np.zeros((2, *SIZE, 4), np.uint8), np.zeros((2, *SIZE, 3), np.float32), np.zeros((*SIZE, 3), np.uint8),
                np.zeros((2, *SIZE, 3), np.uint8)[:, :, ::2], np.zeros((2, *SIZE, 3), np.uint8)[:, ::-1]):
        with pytest.raises(ValueError, match="out must be a writable"):
            decode_batch(bad, [])
    readonly = np.zeros((2, *SIZE, 3), np.uint8)
    readonly.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        decode_batch(readonly, [])
    with pytest.raises(TypeError):
        decode_batch(out, [(0, "text", request)])
    with pytest.raises(TypeError, match="each item is"):
        native.cropdecode.decode_batch(out, [(0, datas[0])], 0)
    bad_box = (request[0], request[1], (1e9, 0.0, 1.0, 1.0), request[3], request[4])
    [(position, status, _)] = decode_batch(out, [(0, datas[0], bad_box)])
    assert (position, status) == (0, native.cropdecode.STATUS_BADARG)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_copy_into_puts_an_image_in_its_slot(memory_format):
    from fastdata.decode.batch import copy_into

    rng = np.random.default_rng(0)
    big = rng.integers(0, 256, (40, 70, 3), dtype=np.uint8)
    batch = torch.zeros((3, 3, 21, 37), dtype=torch.uint8).contiguous(memory_format=memory_format)
    hwc = batch.permute(0, 2, 3, 1).numpy()
    image = big[5:26, 9:46]  # rows strided, pixels packed
    copy_into(hwc, 1, image)
    assert np.array_equal(batch[1].permute(1, 2, 0).numpy(), image)
    assert int(batch[0].sum()) == int(batch[2].sum()) == 0
    with pytest.raises(IndexError, match="slot 3 is outside the batch of 3"):
        copy_into(hwc, 3, image)
    with pytest.raises(ValueError, match=r"image is 21x36 \(HxW\), the batch's slots 21x37"):
        copy_into(hwc, 0, big[5:26, 9:45])
    with pytest.raises(ValueError, match="packed pixels"):
        copy_into(hwc, 0, big[5:26, 9:83:2])
