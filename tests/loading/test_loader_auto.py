"""Workers(kind="auto"), the default: threads exactly when the per-sample work
releases the GIL (fastdata's decode-aware transforms on the compiled crop
decoder), processes otherwise; the loader's repr says which and why."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, Subset

from fastdata import Workers, make_loader, transforms
from fastdata.datasets import ImageFolder
from fastdata.decode import native
from fastdata.loading.threaded import ThreadedBatches

from ._data import write_records

needs_compiled = pytest.mark.skipif(not native.native_available(), reason=f"needs the compiled crop decoder: {native.native_status()}")


def _photos(photo_tree, transform, count: int = 8):
    folder = ImageFolder(photo_tree / "train", transform=transform)
    return Subset(folder, list(range(0, len(folder), len(folder) // count))[:count])


def _crop():
    return transforms.Compose([transforms.RandomResizedCrop(32), transforms.RandomHorizontalFlip()])


def test_auto_is_the_default_kind():
    assert Workers().kind == "auto" and Workers.of(2).kind == "auto"


@needs_compiled
def test_decode_aware_transforms_on_the_compiled_decoder_get_threads(photo_tree):
    with make_loader(_photos(photo_tree, _crop()), 4, seed=1, workers=2) as auto:
        assert isinstance(auto.dataloader, ThreadedBatches)
        text = repr(auto)
        assert "2 threads (auto:" in text and "compiled crop decoder" in text and "RandomResizedCrop" in text
        got = [(x.clone(), y.clone()) for x, y in auto]
    with make_loader(_photos(photo_tree, _crop()), 4, seed=1, workers=Workers(2, kind="processes")) as procs:
        want = list(procs)
    assert all(torch.equal(a, c) and torch.equal(b, d) for (a, b), (c, d) in zip(got, want, strict=True))


def test_the_pure_python_decoder_gets_processes(photo_tree, monkeypatch):
    monkeypatch.setattr(native, "_disabled", True)
    with make_loader(_photos(photo_tree, _crop()), 4, workers=2) as loader:
        assert isinstance(loader.dataloader, DataLoader) and loader.dataloader.num_workers == 2
        assert "2 processes (auto: the crop decode is pure Python" in repr(loader)


@pytest.mark.parametrize(
    ("transform", "why"),
    [
        (None, "no transform: the decode runs in Python (PIL)"),
        (lambda image: image, "transform <lambda> is not decode-aware"),
        (transforms.Compose([transforms.RandomResizedCrop(32), lambda x: x]), "Python callable(s) <lambda>"),
    ],
)
def test_python_held_transforms_get_processes(photo_tree, transform, why):
    with make_loader(_photos(photo_tree, transform), 4, workers=2) as loader:
        assert isinstance(loader.dataloader, DataLoader) and loader.dataloader.num_workers == 2
        assert "2 processes (auto:" in repr(loader) and why in repr(loader)


def test_what_threads_cannot_do_gets_processes(tmp_path, photo_tree):
    from fastdata import open_dataset

    stream = open_dataset(write_records(tmp_path / "s", 12), streaming=True)
    with make_loader(stream, 4, workers=2) as loader:
        assert "processes (auto: a stream" in repr(loader)
    with make_loader(_photos(photo_tree, _crop()), 4, workers=2, seeding="worker") as loader:
        assert "processes (auto: seeding='worker'" in repr(loader)
    with make_loader(_photos(photo_tree, _crop()), 4, workers=Workers(2, context="spawn")) as loader:
        assert "processes (auto: context='spawn'" in repr(loader)


def test_an_explicit_kind_and_no_workers_are_said_as_they_are(photo_tree):
    with make_loader(_photos(photo_tree, None), 4, workers=Workers(2, kind="threads")) as loader:
        assert isinstance(loader.dataloader, ThreadedBatches) and "2 threads (kind='threads')" in repr(loader)
    with make_loader(_photos(photo_tree, _crop()), 4, workers=0) as loader:
        assert "workers=0 (samples load in the main process)" in repr(loader)
