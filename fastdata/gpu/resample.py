"""Crop + antialiased resize + flip of a whole batch of differently sized
images with a few batched tensor ops (no per-image loop).

The decoded images lie back to back in one flat uint8 buffer. For each
sample the source rows its crop needs are gathered as fixed-length segments
of that buffer (one indexing op over an ``unfold`` view, so no padded canvas
of whole images is ever built), and then resampled with two batched matrix
products: ``Wy @ rows @ Wx^T``. Row ``i`` of ``Wx`` holds Pillow's BILINEAR
weights (a triangle widened by the shrink factor, which is what makes it
antialiased, renormalised at the image edge) for output column ``i``, so
this is the separable filter Pillow, torchvision's ``antialias=True`` and
fastdata's CPU transforms use; a flip is ``Wx`` with its rows reversed.
Segment columns past an image's edge (the next row's pixels) get weight 0.

Candidates measured on the CPU (``benchmarks/gpu_resize_candidates.py``):
``affine_grid`` + ``grid_sample`` (bilinear, no antialiasing) is cheaper
but aliases when it shrinks; these matrices give the CPU path's filter.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["GROUP_WASTE", "both_weights", "chunks", "crop_resize", "gather_rows", "pack", "padding", "round_up", "weights", "window"]

LAYOUTS = ("chw", "hwc")


def window(boxes: np.ndarray, sizes: np.ndarray, out_size: tuple[int, int]) -> np.ndarray:
    """``(top, left, rows, cols)`` of the source pixels each box's filter reads.

    Args:
        boxes: float ``(M, 4)`` ``(top, left, height, width)``; sizes: int ``(M, 2)`` ``(H, W)``.
        out_size: ``(height, width)`` of the output.
    """
    out = np.zeros((len(boxes), 4), dtype=np.int64)
    for axis, (start, length, limit, n) in enumerate(
        ((boxes[:, 0], boxes[:, 2], sizes[:, 0], out_size[0]), (boxes[:, 1], boxes[:, 3], sizes[:, 1], out_size[1]))
    ):
        support = np.maximum(length / n, 1.0)
        first = np.clip(np.floor(start - support), 0, limit - 1).astype(np.int64)
        stop = np.clip(np.ceil(start + length + support), first + 1, limit).astype(np.int64)
        out[:, axis], out[:, axis + 2] = first, stop - first
    return out


GROUP_WASTE = 1.6
"""How much padding a resample group may add (:func:`chunks`). The
first run on 2026-11-27 (H200) spent 33-70 ms of host time per batch of 256 launching the
resample, and each group is about 20 launches; RandomResizedCrop's windows over
the hymenoptera photos make 15 groups at 1.3 (padding 1.29x) and 4 at 1.6
(1.59x): the device has the time (its whole resample was about 1.5 ms a batch),
the launching thread has not. Measured at 1.6 (its rerun): that thread's
host time 12-45 ms a batch, decode-only over torchvision 12,846 img/s (7,983 at
1.3); the cost: GPU memory took one more step after the second epoch (+1.7 %)."""


def chunks(windows: np.ndarray, budget: int, waste: float = GROUP_WASTE) -> list[np.ndarray]:
    """Sample positions in groups resampled together. A group is padded to its
    tallest and widest window, so each group keeps ``count x rows x cols``
    within ``waste`` times the pixels its windows hold, and ``3 x`` that
    within ``budget`` elements. Greedy over the windows sorted by height,
    then width: one huge photo never pads the others to its size."""
    if len(windows) == 0:
        return [np.arange(0)]
    rows, cols = windows[:, 2].astype(np.int64), windows[:, 3].astype(np.int64)
    order = np.lexsort((-cols, -rows))  # tallest first, the widest first among equals
    groups: list[np.ndarray] = []
    group: list[int] = []
    used, top, wide = 0, 0, 0
    for i in order.tolist():
        r, c = int(rows[i]), int(cols[i])
        t, w = max(top, r), max(wide, c)
        padded = (len(group) + 1) * t * w
        if group and (padded > waste * (used + r * c) or 3 * padded > budget):
            groups.append(np.array(group))
            group, used, t, w = [], 0, r, c
        group.append(i)
        used, top, wide = used + r * c, t, w
    groups.append(np.array(group))
    return groups


def padding(windows: np.ndarray, groups: list[np.ndarray]) -> float:
    """Padded source pixels resampled over those the windows hold (1.0: no waste)."""
    used = float((windows[:, 2] * windows[:, 3]).sum())
    padded = sum(len(g) * int(windows[g, 2].max()) * int(windows[g, 3].max()) for g in groups if len(g))
    return padded / used if used else 1.0


ROUND = 32
"""Gathered windows are padded to a multiple of this many rows and columns, and
the packed buffer to a multiple of :data:`PACK_ROUND` bytes: a few sizes that
the caching allocator reuses from batch to batch, instead of a new size each
time, which grew its reserve over the first epochs."""
PACK_ROUND = 4 << 20


def round_up(n: int, to: int = ROUND) -> int:
    return -(-int(n) // to) * to


def pack(images: list[torch.Tensor], pad: int) -> torch.Tensor:
    """The images back to back in one flat buffer, plus at least ``pad`` zero
    bytes at the end so every row segment that :func:`gather_rows` reads exists."""
    parts = [t.reshape(-1) for t in images]
    used = sum(int(t.numel()) for t in parts)
    parts.append(torch.zeros(round_up(used + pad, PACK_ROUND) - used, dtype=torch.uint8, device=images[0].device))
    return torch.cat(parts)


def gather_rows(flat: torch.Tensor, offsets: torch.Tensor, sizes: torch.Tensor, windows: torch.Tensor,
                rows: int, cols: int, layout: str) -> torch.Tensor:
    """uint8 ``(M, 3, rows, cols)``: each sample's window rows (clamped to the
    image) from ``cols`` columns at the window's left edge onwards.

    Args:
        flat: the packed images (:func:`pack`, ``pad >= 3 * cols``).
        offsets: int64 ``(M,)`` where each image starts in ``flat``.
        sizes, windows: int64 ``(M, 2)`` and ``(M, 4)`` on ``flat``'s device.
        layout: ``"chw"`` (planar, torchvision's nvJPEG output) or ``"hwc"`` (interleaved).
    """
    dev, m = flat.device, len(offsets)
    height, width = sizes[:, 0:1], sizes[:, 1:2]
    y = torch.minimum(windows[:, 0:1] + torch.arange(rows, device=dev), height - 1)  # (M, rows)
    if layout == "chw":
        start = y * width + windows[:, 1:2]  # (M, rows), within one plane
        planes = torch.arange(3, device=dev).view(1, 3, 1) * (height * width).view(m, 1, 1)
        start = offsets.view(m, 1, 1) + planes + start.view(m, 1, rows)
        segments = flat.unfold(0, cols, 1)
        return segments[start.reshape(-1)].view(m, 3, rows, cols)
    start = offsets.view(m, 1) + (y * width + windows[:, 1:2]) * 3
    segments = flat.unfold(0, cols * 3, 1)
    return segments[start.reshape(-1)].view(m, rows, cols, 3).permute(0, 3, 1, 2)


def weights(start: torch.Tensor, length: torch.Tensor, limit: torch.Tensor, first: torch.Tensor, count: int,
            out: int, flips: torch.Tensor | None = None) -> torch.Tensor:
    """float32 ``(M, out, count)``: Pillow's BILINEAR weights of source pixels
    ``first .. first + count - 1`` for ``out`` samples over ``[start, start + length)``.

    Pixels at or past ``limit`` (the image's size) get 0; rows are
    renormalised, as Pillow does at an edge; with ``flips`` the output order
    is reversed for those samples.
    """
    # float32 (no float64 on the device: slow on most GPUs): coordinates are
    # taken relative to the window's first pixel, so they stay small and exact
    dev, f32 = start.device, torch.float32
    scale = length.to(f32) / out
    support = scale.clamp(min=1.0)
    centers = (start - first).to(f32)[:, None] + (torch.arange(out, device=dev, dtype=f32) + 0.5) * scale[:, None]
    offsets = torch.arange(count, device=dev)
    pixels = first[:, None] + offsets  # (M, count)
    x = (offsets.to(f32)[None, None, :] + 0.5 - centers[:, :, None]) / support[:, None, None]
    w = (1.0 - x.abs()).clamp_(min=0.0)
    w *= (pixels < limit[:, None]).unsqueeze(1)
    w /= w.sum(dim=2, keepdim=True).clamp_(min=1e-12)
    if flips is not None:
        w = torch.where(flips.view(-1, 1, 1), w.flip(1), w)
    return w


def both_weights(sizes: torch.Tensor, boxes: torch.Tensor, windows: torch.Tensor, flips: torch.Tensor,
                 out_size: tuple[int, int], rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`weights` down (``(M, H, rows)``) and across (``(M, W, cols)``, flips applied)."""
    oh, ow = out_size
    return (weights(boxes[:, 0], boxes[:, 2], sizes[:, 0], windows[:, 0], rows, oh),
            weights(boxes[:, 1], boxes[:, 3], sizes[:, 1], windows[:, 1], cols, ow, flips))


def crop_resize(flat: torch.Tensor, offsets: torch.Tensor, sizes: torch.Tensor, boxes: torch.Tensor,
                windows: torch.Tensor, flips: torch.Tensor, out_size: tuple[int, int], rows: int, cols: int,
                layout: str, wy: torch.Tensor | None = None, wx: torch.Tensor | None = None) -> torch.Tensor:
    """float32 ``(M, 3, H, W)``: each box resampled to ``out_size``, mirrored
    where ``flips``, rounded to whole grey levels in 0..255 (the values a
    uint8 CPU pipeline would hold). Every argument as in :func:`gather_rows`
    and :func:`weights`, on one device; ``rows``/``cols`` at least the
    largest window. ``wy``/``wx``: :func:`both_weights` made for at least
    ``rows``/``cols`` source pixels (made for several groups at once: fewer
    kernel launches; a weight's place is relative to its window's start)."""
    oh, ow = out_size
    src = gather_rows(flat, offsets, sizes, windows, rows, cols, layout).to(torch.float32)
    if wy is None or wx is None:
        wy, wx = both_weights(sizes, boxes, windows, flips, out_size, rows, cols)
    wy, wx = wy[:, :, :rows], wx[:, :, :cols]
    m = len(offsets)
    tmp = torch.bmm(src.reshape(m, 3 * rows, cols), wx.transpose(1, 2))  # (M, 3*rows, ow)
    tmp = tmp.view(m, 3, rows, ow).permute(0, 2, 1, 3).reshape(m, rows, 3 * ow)
    out = torch.bmm(wy, tmp).view(m, oh, 3, ow).permute(0, 2, 1, 3)
    return out.round_().clamp_(0.0, 255.0)

