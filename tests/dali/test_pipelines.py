"""DALI CPU pipelines over each converted format: right images, right labels, every sample once."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from testkit import requires_dali
from dalikit import FORMATS, NUM_SAMPLES, identify, label, samples, write

from fastdata.dali import IMAGENET_MEAN, IMAGENET_STD, Crop, DALILoader, Normalize, build_pipeline
from fastdata.errors import ConfigError
from fastdata.order.seeds import pipeline_seed

pytestmark = requires_dali
MEAN = np.array(IMAGENET_MEAN)
STD = np.array(IMAGENET_STD)
BATCH = 4


@pytest.fixture(scope="module", params=FORMATS)
def dataset(request, tmp_path_factory):
    """One 14-sample, 3-shard dataset per format, written once per module."""
    return write(tmp_path_factory.mktemp(f"dali-{request.param}"), request.param, samples())


def epoch(loader: DALILoader) -> tuple[list[int], list[int], list[int]]:
    """One epoch: (sample index by colour, label, batch size) per image/batch; checks shapes and dtypes.

    Batches are identified only after the epoch, so a loader that reused one
    output buffer for the next batch would fail here.
    """
    batches = list(loader)
    seen, labels, sizes = [], [], []
    for images, target in batches:
        assert images.dtype == torch.float32 and images.shape[1:] == (3, 224, 224)
        assert target.dtype == torch.int64 and target.shape == (images.shape[0],)
        seen += identify(images.numpy(), MEAN, STD)
        labels += target.tolist()
        sizes.append(images.shape[0])
    return seen, labels, sizes


def test_eval_reads_every_sample_once_with_its_label_for_two_epochs(dataset):
    loader = DALILoader(dataset, BATCH, train=False, num_threads=1)
    assert len(loader) == 4  # ceil(14 / 4)
    for _ in range(2):
        seen, labels, sizes = epoch(loader)
        assert sorted(seen) == list(range(NUM_SAMPLES))
        assert labels == [label(i) for i in seen]  # 0-based, tfrecord's 1-based storage undone
        assert sizes == [4, 4, 4, 2]  # PARTIAL: the padded samples are trimmed


def test_train_full_batches_no_repeats_labels_match(dataset):
    loader = DALILoader(dataset, BATCH, train=True, num_threads=2, seed=3)
    assert len(loader) == NUM_SAMPLES // BATCH
    for _ in range(2):
        seen, labels, sizes = epoch(loader)
        assert sizes == [BATCH] * len(loader)  # DROP: no partial batch
        assert len(set(seen)) == len(seen)
        assert labels == [label(i) for i in seen]


def test_train_without_drop_last_keeps_the_partial_batch_even_below_one_batch(tmp_path):
    directory = write(tmp_path, "tfrecord", samples(6), shards=2)
    for batch in (4, 16):  # a partial last batch; a batch larger than the whole dataset
        loader = DALILoader(directory, batch, train=True, drop_last=False, num_threads=1)
        assert len(loader) == -(-6 // batch)
        for _ in range(2):
            seen, labels, sizes = epoch(loader)
            assert sorted(seen) == list(range(6)) and labels == [label(i) for i in seen]
            assert sizes == [4, 2] if batch == 4 else sizes == [6]


def test_sharded_eval_covers_all_samples_disjointly(dataset):
    loaders = [DALILoader(dataset, BATCH, train=False, num_threads=1, shard_id=r, num_shards=2) for r in range(2)]
    parts = [epoch(loader)[0] for loader in loaders]
    assert sorted(parts[0] + parts[1]) == list(range(NUM_SAMPLES))
    assert not set(parts[0]) & set(parts[1])
    assert [len(p) for p in parts] == [7, 7]


def test_sharded_train_ranks_yield_the_same_number_of_batches(tmp_path):
    # 13 samples over 2 ranks: shards of 6 and 7; DROP keeps both ranks at 6 // 4 = 1 batch
    directory = write(tmp_path, "recordio", samples(13))
    loaders = [DALILoader(directory, BATCH, train=True, num_threads=1, shard_id=r, num_shards=2) for r in range(2)]
    assert [len(x) for x in loaders] == [1, 1]
    counts = [sum(1 for _ in x) for x in loaders]
    assert counts == [1, 1]


def test_train_augments_differently_per_seed_but_reproducibly(tmp_path):
    directory = write(tmp_path, "recordio", samples(8), shards=1)

    def first(seed):
        images, target = next(iter(DALILoader(directory, BATCH, train=True, num_threads=1, seed=seed)))
        return images, target

    a, b, c = first(1), first(1), first(2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1]) or not torch.equal(a[0], c[0])


def test_break_resumes_the_unfinished_epoch(tmp_path):
    directory = write(tmp_path, "lmdb", samples(10), shards=2)
    loader = DALILoader(directory, BATCH, train=False, num_threads=1)
    first = []
    for images, _ in loader:
        first += identify(images.numpy(), MEAN, STD)
        break
    rest = epoch(loader)[0]
    assert sorted(first + rest) == list(range(10))
    assert sorted(epoch(loader)[0]) == list(range(10))  # and the next loop is a whole epoch


def test_float16_output(tmp_path):
    directory = write(tmp_path, "recordio", samples(4), shards=1)
    loader = DALILoader(
        directory, 4, train=False, num_threads=1, normalize=Normalize(dtype=torch.float16), crop=Crop(64, 72)
    )
    images, target = next(iter(loader))
    assert images.dtype == torch.float16 and images.shape == (4, 3, 64, 64)
    counts = collections.Counter(identify(images.float().numpy(), MEAN, STD))
    assert counts == collections.Counter(range(4))


def test_shards_default_to_the_torch_distributed_rank(tmp_path, monkeypatch):
    directory = write(tmp_path, "recordio", samples(10), shards=2)
    explicit = epoch(DALILoader(directory, BATCH, train=False, num_threads=1, shard_id=1, num_shards=2))[0]
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: 1)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda group=None: 2)
    assert epoch(DALILoader(directory, BATCH, train=False, num_threads=1))[0] == explicit
    assert sorted(explicit) == list(range(5, 10))
    with pytest.raises(ConfigError, match="every rank would read the same samples"):
        DALILoader(directory, BATCH, shard_id=0, num_shards=1)
    with pytest.raises(ConfigError, match="every rank would read the same samples"):
        DALILoader(directory, BATCH, train=False, shard_id=0, num_shards=1)  # refused for evaluation too


def test_a_torchrun_launch_without_a_process_group_is_refused(tmp_path, monkeypatch):
    directory = write(tmp_path, "recordio", samples(4), shards=1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match=r"WORLD_SIZE=2.*init_process_group.*pass shard_id= and num_shards="):
        DALILoader(directory, 2, num_threads=1)
    assert len(DALILoader(directory, 2, num_threads=1, shard_id=1, num_shards=2)) == 1


def test_each_shard_seeds_its_pipeline_from_the_order_package(tmp_path):
    directory = write(tmp_path, "recordio", samples(4), shards=1)
    for rank in range(2):
        pipe = build_pipeline(directory, 2, seed=7, shard_id=rank, num_shards=2)
        assert pipe.seed == pipeline_seed(7, rank) == 7 + rank  # the value DALI got before fastdata.order


def test_mean_and_std_are_in_0_1_units(tmp_path):
    directory = write(tmp_path, "tfrecord", samples(4), shards=1)
    plain = Normalize(mean=(0, 0, 0), std=(1, 1, 1))

    def first(normalize):
        return next(iter(DALILoader(directory, 4, train=False, num_threads=1, normalize=normalize)))[0].numpy()

    raw, imagenet = first(plain), first(Normalize())
    assert raw.min() >= 0 and raw.max() <= 1  # x / 255: scaled by 255 once, not twice or never
    assert sorted(identify(raw, np.zeros(3), np.ones(3))) == [0, 1, 2, 3]
    back = imagenet * STD[None, :, None, None] + MEAN[None, :, None, None]
    assert np.abs(back - raw).max() < 1e-5
