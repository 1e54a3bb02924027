"""The contract every map-style dataset keeps (torchvision's ImageFolder
behaviour plus fastdata's), checked once per dataset class on generated data."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest
import torch
from dskit import CLASSES, KINDS, N, draw, image_bytes, index_of, label_of, open_kind, plus_100, width_of, write_kind
from PIL import Image

import fastdata
from fastdata import rng
from fastdata.datasets import FormatDataset, FormatStream, open_dataset
from fastdata.datasets.named import public_class
from fastdata.errors import FastDataError
from fastdata.formats import registry
from fastdata.transforms import EncodedImage


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    return {kind: write_kind(tmp_path_factory.mktemp(kind), kind) for kind in KINDS}


@pytest.fixture(params=KINDS)
def written(request, roots):
    return request.param, roots[request.param]


def test_classes_targets_and_length(written):
    kind, root = written
    ds = open_kind(root, kind)
    assert len(ds) == N
    assert ds.classes == CLASSES
    assert ds.class_to_idx == {c: i for i, c in enumerate(CLASSES)}
    targets = np.asarray(ds.targets)
    assert targets.dtype.kind == "i" and targets.shape == (N,)
    assert targets.tolist() == [label_of(i) for i in range(N)]


def test_items_are_pil_rgb_images_in_index_order(written):
    kind, root = written
    ds = open_kind(root, kind)
    for i in range(N):
        image, target = ds[i]
        assert isinstance(image, Image.Image) and image.mode == "RGB"
        assert (index_of(image), target) == (i, label_of(i))
    assert index_of(ds[-1][0]) == N - 1 and index_of(ds[np.int64(3)][0]) == 3
    with pytest.raises(IndexError):
        ds[N]
    with pytest.raises(IndexError):
        ds[-N - 1]


def test_decode_false_returns_the_source_bytes(written):
    kind, root = written
    ds = open_kind(root, kind, decode=False, transform=width_of, target_transform=plus_100)
    for i in range(N):
        data, target = ds[i]
        assert bytes(data) == image_bytes(i) and target == label_of(i)


def test_transforms_apply(written):
    kind, root = written
    ds = open_kind(root, kind, transform=width_of, target_transform=plus_100)
    assert [ds[i] for i in (0, 5, N - 1)] == [(i, label_of(i) + 100) for i in (0, 5, N - 1)]


def test_sample_key_runs_the_transform_under_its_own_generator(written):
    kind, root = written
    ds = open_kind(root, kind, transform=draw)
    a = ds[rng.SampleKey(4, seed=7, epoch=0)][0]
    assert a == ds[rng.SampleKey(4, seed=7, epoch=0)][0]
    assert a[0] == 4 and a[1] == rng.sample_generator(7, 0, 4).random()
    assert a != ds[rng.SampleKey(4, seed=7, epoch=1)][0]
    with rng.use(np.random.Generator(np.random.Philox(3))):
        plain = ds[4][0][1]
    assert plain == np.random.Generator(np.random.Philox(3)).random()


def test_decode_aware_transform_gets_encoded_bytes(written):
    kind, root = written
    seen = []

    class Probe:
        decode_aware = True

        def __call__(self, encoded):
            seen.append(encoded)
            return "probed"

    ds = open_kind(root, kind, transform=Probe())
    assert ds[3] == ("probed", label_of(3))
    (encoded,) = seen
    assert isinstance(encoded, EncodedImage)
    assert bytes(encoded.data) == image_bytes(3)
    assert encoded.name  # errors raised while decoding name the sample


def test_fastdata_transforms_decode_only_what_they_need(written):
    kind, root = written
    from fastdata.transforms import Compose, RandomHorizontalFlip, RandomResizedCrop

    ds = open_kind(root, kind, transform=Compose([RandomResizedCrop(6), RandomHorizontalFlip()]))
    image, target = ds[rng.SampleKey(5, seed=1, epoch=2)]
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.shape == (6, 6, 3)
    assert target == label_of(5)
    assert np.array_equal(image, ds[rng.SampleKey(5, seed=1, epoch=2)][0])


def test_pickles_small_and_equal(written):
    kind, root = written
    ds = open_kind(root, kind, transform=width_of)
    ds[0]  # opens readers in this process: they must not be pickled
    blob = pickle.dumps(ds)
    assert len(blob) < 4000 + 60 * N, "a dataset should pickle paths and settings, not data"
    clone = pickle.loads(blob)
    assert [clone[i] for i in range(N)] == [ds[i] for i in range(N)]


def _load_all(ds, context: str) -> tuple[list[int], list[int]]:
    loader = torch.utils.data.DataLoader(ds, batch_size=5, num_workers=2, multiprocessing_context=context)
    widths, targets = [], []
    for batch_widths, batch_targets in loader:
        widths += batch_widths.tolist()
        targets += batch_targets.tolist()
    return widths, targets


def test_dataloader_fork_workers(written):
    kind, root = written
    ds = open_kind(root, kind, transform=width_of)
    ds[0]  # readers opened in the parent must not be shared with the forked workers
    assert _load_all(ds, "fork") == (list(range(N)), [label_of(i) for i in range(N)])


def test_dataloader_spawn_workers_every_class(roots):
    # One spawn loader over all classes at once: starting spawn workers costs seconds.
    parts = [open_kind(roots[kind], kind, transform=width_of) for kind in KINDS]
    widths, targets = _load_all(torch.utils.data.ConcatDataset(parts), "spawn")
    assert widths == list(range(N)) * len(KINDS)
    assert targets == [label_of(i) for i in range(N)] * len(KINDS)


# format -> the registry's public (alias) name for its map-style and streaming classes
ALIASES = {(fmt, kind): name for name, (fmt, kind) in registry.public_names().items()}


def test_open_dataset_picks_the_class(written):
    kind, root = written
    ds = open_dataset(root, decode=False)
    expected = "ImageFolder" if kind == "folder" else ALIASES.get((kind, "dataset"), "FormatDataset")
    assert type(ds).__name__ == expected
    assert bytes(ds[7][0]) == image_bytes(7)


@pytest.mark.parametrize("alias", sorted(registry.public_names()))
def test_per_format_names_are_the_generic_classes_with_the_format_fixed(alias, roots):
    fmt, kind = registry.public_names()[alias]
    cls = getattr(fastdata, alias)
    assert issubclass(cls, {"dataset": FormatDataset, "stream": FormatStream}[kind]) and cls.fixed_format == fmt
    assert cls is getattr(fastdata.datasets, alias) is public_class(fmt, kind) and pickle.loads(pickle.dumps(cls)) is cls
    options = [f.name for f in dataclasses.fields(registry.get(fmt).options)]
    assert set(options) <= set(inspect.signature(cls).parameters) and cls.__doc__
    ds = cls(roots[fmt], decode=False)
    assert (ds.format, len(ds)) == (fmt, N)
    with pytest.raises(TypeError, match="format"):  # the format is fixed: no format= in the signature
        cls(roots[fmt], format=fmt)


@pytest.mark.parametrize("kind", registry.names())
def test_a_converters_targets_file_is_used(tmp_path, kind):
    from fastdata.formats import Manifest

    root = write_kind(tmp_path, kind, n=6)
    manifest = Manifest.read(root)
    manifest.extra["targets"] = "targets.npy"
    manifest.write(root)
    np.save(root / "targets.npy", np.array([2, 2, 1, 1, 0, 0]))  # not the stored labels: proves which is read
    assert open_kind(root, kind).targets.tolist() == [2, 2, 1, 1, 0, 0]
    np.save(root / "targets.npy", np.array([0, 1]))
    with pytest.raises(FastDataError, match="targets.npy"):
        _ = open_kind(root, kind).targets
