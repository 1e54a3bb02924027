import pytest
import torch

from fastdata.errors import ConfigError
from fastdata.loading import make_loader


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(4))


def test_streams_are_refused_with_the_way_to_load_them():
    with pytest.raises(ConfigError, match="set_epoch"):
        make_loader(_Stream(), 2, num_workers=0, distributed=False)
