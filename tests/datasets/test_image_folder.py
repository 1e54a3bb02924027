"""ImageFolder follows torchvision's scan rules exactly and fails like it, with
the empty classes and accepted extensions in the message."""

from __future__ import annotations

import numpy as np
import pytest
from dskit import image_bytes

from fastdata.datasets import IMG_EXTENSIONS, ImageFolder
from fastdata.errors import ConfigError, FastDataError


def _tree(root, files):
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(image_bytes(len(rel) % 5))
    return root


def test_sorted_classes_sorted_files_nested_included(tmp_path):
    root = _tree(
        tmp_path,
        ["b/z.jpg", "b/A.PNG", "b/sub/deeper/x.jpeg", "b/sub/a.png", "a/2.jpg", "a/10.jpg", "a/notes.txt", "c_/1.webp"],
    )
    (root / "stray.jpg").write_bytes(b"not in a class")
    ds = ImageFolder(root, decode=False)
    assert ds.classes == ["a", "b", "c_"] and ds.class_to_idx == {"a": 0, "b": 1, "c_": 2}
    rel = [(p[len(str(root)) + 1 :], t) for p, t in ds.samples]
    assert rel == [
        ("a/10.jpg", 0),
        ("a/2.jpg", 0),
        ("b/A.PNG", 1),  # extensions match case-insensitively
        ("b/z.jpg", 1),
        ("b/sub/a.png", 1),  # os.walk order: a directory's files, then its sub-directories
        ("b/sub/deeper/x.jpeg", 1),
        ("c_/1.webp", 2),
    ]
    assert ds.imgs[-1] == ds.samples[-1] and ds.samples[1:3] == list(ds.samples)[1:3]
    assert isinstance(ds.targets, np.ndarray) and ds.targets.tolist() == [0, 0, 1, 1, 1, 1, 2]


def test_empty_classes_are_named_with_the_extensions(tmp_path):
    _tree(tmp_path, ["full/1.jpg", "empty1/readme.txt", "empty2/x.gif"])
    with pytest.raises(FastDataError) as info:
        ImageFolder(tmp_path)
    message = str(info.value)
    assert "empty1, empty2" in message and ".jpg" in message and ".webp" in message
    assert len(ImageFolder(tmp_path, allow_empty=True)) == 1


def test_no_class_directory(tmp_path):
    (tmp_path / "loose.jpg").write_bytes(image_bytes(0))
    with pytest.raises(FastDataError, match="class folder"):
        ImageFolder(tmp_path)
    with pytest.raises(FastDataError, match="no such directory"):
        ImageFolder(tmp_path / "missing")


def test_extensions_and_is_valid_file(tmp_path):
    _tree(tmp_path, ["a/1.jpg", "a/2.png", "b/3.PNG", "b/4.gif"])
    assert len(ImageFolder(tmp_path, extensions=(".png",))) == 2
    chosen = ImageFolder(tmp_path, is_valid_file=lambda p: p.endswith(("1.jpg", "4.gif")))
    assert [t for _, t in chosen.samples] == [0, 1]
    with pytest.raises(ConfigError, match="not both"):
        ImageFolder(tmp_path, extensions=(".png",), is_valid_file=lambda p: True)
    assert ".jpg" in IMG_EXTENSIONS and ".webp" in IMG_EXTENSIONS


def test_custom_loader_and_positional_transforms(tmp_path):
    _tree(tmp_path, ["a/1.jpg", "b/2.png"])
    ds = ImageFolder(tmp_path, str.upper, lambda t: -t, loader=lambda p: p[-5:])
    assert ds[1] == ("2.PNG", -1)
    assert ImageFolder(tmp_path, loader=lambda p: p, decode=False)[0][0] == image_bytes(len("a/1.jpg") % 5)


def test_paths_are_not_held_as_python_objects(tmp_path):
    _tree(tmp_path, [f"c{i % 3}/{i:04d}.png" for i in range(300)])
    ds = ImageFolder(tmp_path, decode=False)
    held = [v for v in vars(ds).values() if isinstance(v, (list, tuple)) and len(v) >= 300]
    assert not held, "per-sample Python lists make forked workers copy memory as they touch refcounts"
    assert ds.samples[299][0].endswith("0299.png") and ds.samples[-300][0].endswith("0000.png")
