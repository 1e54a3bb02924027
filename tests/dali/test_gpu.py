"""GPU pipelines ("mixed": nvJPEG decode; "gpu": host decode, GPU augmentation). Skipped without CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from testkit import requires_dali
from dalikit import NUM_SAMPLES, identify, label, samples, write

from fastdata.dali import IMAGENET_MEAN, IMAGENET_STD, DALILoader

pytestmark = [
    requires_dali,
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return write(tmp_path_factory.mktemp("dali-gpu"), "tfrecord", samples())


@pytest.mark.parametrize("device", ["mixed", "gpu"])
@pytest.mark.parametrize("train", [False, True])
def test_gpu_pipeline_outputs_cuda_tensors_with_the_right_labels(directory, device, train):
    loader = DALILoader(directory, 4, train=train, device=device, device_id=0, num_threads=2)
    seen, labels = [], []
    for images, target in loader:
        assert images.is_cuda and target.is_cuda
        assert images.dtype == torch.float32 and images.shape[1:] == (3, 224, 224)
        seen += identify(images.cpu().numpy(), np.array(IMAGENET_MEAN), np.array(IMAGENET_STD))
        labels += target.cpu().tolist()
    assert labels == [label(i) for i in seen]
    if train:
        assert len(seen) == len(loader) * 4 and len(set(seen)) == len(seen)
    else:
        assert sorted(seen) == list(range(NUM_SAMPLES))


def test_auto_device_picks_the_gpu(directory):
    images, target = next(iter(DALILoader(directory, 4, train=False)))
    assert images.device == torch.device("cuda", torch.cuda.current_device())
