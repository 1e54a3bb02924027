"""Bit-identity guard: decode.native.decode_geometry's shortcut for upright images with
plain boxes (no validation, no frame changes) gives what its general path gives."""

from __future__ import annotations

import numpy as np
import pytest

from fastdata.decode import native
from fastdata.decode.info import ImageInfo
from fastdata.transforms.crop import sample_resized_crop


def _boxes(rs: np.random.Generator, height: int, width: int) -> list[tuple]:
    boxes = [sample_resized_crop(height, width, (0.08, 1.0), (3 / 4, 4 / 3), rs) for _ in range(40)]
    for _ in range(40):  # fractional edges, as ResizedCenterCrop plans them
        h, w = rs.uniform(1, height), rs.uniform(1, width)
        boxes.append((float(rs.uniform(0, height - h)), float(rs.uniform(0, width - w)), float(h), float(w)))
    return boxes + [(0, 0, height, width), (0.0, 0.0, float(height), float(width)), (height - 1, width - 1, 1, 1)]


@pytest.mark.parametrize("min_size", [None, (336, 336), (20, 301), (1, 1)])
@pytest.mark.parametrize("snap", [True, False])
def test_shortcut_matches_general_path(min_size, snap):
    rs = np.random.default_rng(7)
    for height, width in [(375, 500), (500, 333), (17, 9), (1200, 1601), (224, 224)]:
        info = ImageInfo(height, width, "JPEG")
        for box in _boxes(rs, height, width):
            assert native._plain(box, info)
            fast = native.decode_geometry(info, box, min_size, snap, "x")
            # a list box and a list min_size take the general path
            general = native.decode_geometry(info, list(box), None if min_size is None else list(min_size), snap, "x")
            assert repr(fast) == repr(general), (height, width, box)


def test_rotated_and_outside_boxes_take_the_general_path():
    assert not native._plain((0, 0, 10, 10), ImageInfo(5, 5, "JPEG"))
    assert not native._plain((np.int64(0), 0, 1, 1), ImageInfo(5, 5, "JPEG"))
    with pytest.raises(Exception, match="does not lie inside"):
        native.decode_geometry(ImageInfo(5, 5, "JPEG"), (0, 0, 10, 10), None, True, "x")
    rotated = ImageInfo(500, 375, "JPEG", orientation=6)
    assert native.decode_geometry(rotated, (10, 20, 100, 50), (30, 30), True, "x") == \
        native.decode_geometry(rotated, [10, 20, 100, 50], [30, 30], True, "x")
