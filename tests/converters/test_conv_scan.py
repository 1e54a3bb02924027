"""Folder and list scanning: torchvision's class rule, walk order, and what is skipped or ignored."""

from __future__ import annotations

import os

import pytest
from fastdata.converters.planning.scan import (
    DEFAULT_EXTENSIONS,
    normalize_extensions,
    scan_folder,
    scan_list,
)
from fastdata.converters.units import format_bytes, parse_size

from fastdata.errors import ConfigError


def torchvision_classes(root) -> list[str]:
    # torchvision.datasets.folder.find_classes, verbatim rule
    return sorted(entry.name for entry in os.scandir(root) if entry.is_dir())


def torchvision_files(class_dir, extensions) -> list[str]:
    # torchvision.datasets.folder.make_dataset's walk for one class
    out = []
    for root, _, fnames in sorted(os.walk(class_dir, followlinks=True)):
        for fname in sorted(fnames):
            if fname.lower().endswith(extensions):
                out.append(os.path.join(root, fname))
    return out


def test_parse_size():
    assert parse_size("1048576") == 1 << 20
    assert parse_size("256M") == 256 << 20
    assert parse_size("1g") == 1 << 30
    assert parse_size("64KiB") == 64 << 10
    assert parse_size("1.5G") == 3 << 29
    for bad in ("", "12X", "-1M", "0", "M"):
        with pytest.raises(ConfigError):
            parse_size(bad)
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12) == "12 B"


def test_extensions_are_normalised():
    assert normalize_extensions(["JPG", ".png", " jpeg "]) == (".jpg", ".png", ".jpeg")
    with pytest.raises(ConfigError, match="--exts"):
        normalize_extensions(["", " "])


def _touch(path, data=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_classes_and_order_follow_torchvision(tmp_path):
    src = tmp_path / "src"
    names = ["b", "A", "a_1", "Z z", "é-ü", "10", "9"]
    for i, name in enumerate(names):
        _touch(src / name / f"{i}.jpg")
        _touch(src / name / "nested" / "deeper" / "n.JPG")
        _touch(src / name / "nested b" / "m.png")
        _touch(src / name / "nested" / "a.jpeg")
    scan = scan_folder(src)
    assert scan.classes == torchvision_classes(src)
    for label, name in enumerate(scan.classes):
        got = [it.path for it in scan.items if it.label == label]
        assert got == torchvision_files(src / name, DEFAULT_EXTENSIONS)
    assert all(it.rel == os.path.relpath(it.path, src).replace(os.sep, "/") for it in scan.items)


def test_hidden_other_extensions_symlinks_and_loops(tmp_path):
    src, outside = tmp_path / "src", tmp_path / "outside"
    _touch(src / "cat" / "a.jpg")
    _touch(src / "cat" / ".hidden.jpg")
    _touch(src / "cat" / "notes.txt")
    _touch(src / "cat" / ".ipynb_checkpoints" / "a-checkpoint.jpg")
    _touch(src / ".git" / "x.jpg")
    _touch(src / "README.md")
    _touch(outside / "real.jpg", b"real")
    os.symlink(outside / "real.jpg", src / "cat" / "linked.jpg")
    os.symlink(outside, src / "dog")  # a class folder that is a symlink
    os.symlink(src / "cat", src / "cat" / "loop")  # would recurse forever
    os.symlink(tmp_path / "missing.jpg", src / "cat" / "broken.jpg")
    _touch(src / "cat" / "empty.jpg", b"")
    scan = scan_folder(src)
    assert scan.classes == ["cat", "dog"]
    rels = [it.rel for it in scan.items]
    assert rels == ["cat/a.jpg", "cat/linked.jpg", "dog/real.jpg"]
    assert [it.size for it in scan.items][1] == 4
    skipped = {os.path.basename(p): r for p, r in scan.skipped}
    assert "broken symlink" in skipped["broken.jpg"]
    assert skipped["empty.jpg"] == "empty file (0 bytes)"
    ignored = {os.path.basename(p): r for p, r in scan.ignored}
    assert ignored[".hidden.jpg"] == "hidden file"
    assert "not in --exts" in ignored["notes.txt"]
    assert "hidden" in ignored[".ipynb_checkpoints"] and "hidden" in ignored[".git"]
    assert "symlink loop" in ignored["loop"]
    assert "not inside a class folder" in ignored["README.md"]


def test_bad_sources(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        scan_folder(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no class folders"):
        scan_folder(tmp_path / "empty")
    _touch(tmp_path / "list.lst")
    with pytest.raises(ConfigError, match="--list FILE"):
        scan_folder(tmp_path / "list.lst")
    _touch(tmp_path / "txt" / "a" / "x.txt")
    with pytest.raises(ConfigError, match="found no images"):
        scan_folder(tmp_path / "txt")


def test_empty_class_is_an_error_unless_allowed(tmp_path):
    _touch(tmp_path / "a" / "1.jpg")
    _touch(tmp_path / "b" / "readme.txt")
    (tmp_path / "c").mkdir()
    with pytest.raises(ConfigError, match=r"no images .*: b, c"):
        scan_folder(tmp_path)
    scan = scan_folder(tmp_path, allow_empty_classes=True)
    assert scan.classes == ["a", "b", "c"] and len(scan.items) == 1


def test_list_labels(tmp_path):
    _touch(tmp_path / "x" / "a.jpg")
    _touch(tmp_path / "b.jpg")
    scan = scan_list(tmp_path / "l.lst", tmp_path, [(7, (3.0,), "x/a.jpg"), (2, (0.0,), "b.jpg"), (1, (1.0,), "gone.jpg")])
    assert scan.classes == ["0", "1", "2", "3"]
    assert [(it.rel, it.label) for it in scan.items] == [("x/a.jpg", 3), ("b.jpg", 0)]
    assert scan.skipped and "gone.jpg" in scan.skipped[0][0]
    vec = scan_list(tmp_path / "l.lst", tmp_path, [(0, (0.5, 2.0), "b.jpg")])
    assert vec.classes == [] and vec.items[0].label == (0.5, 2.0)
    with pytest.raises(ConfigError, match="negative"):
        scan_list(tmp_path / "l.lst", tmp_path, [(0, (-1.0,), "b.jpg")])
    with pytest.raises(ConfigError, match="no entries"):
        scan_list(tmp_path / "l.lst", tmp_path, [])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_each_file_is_stat_once_and_non_files_are_skipped_with_their_reason(tmp_path, monkeypatch):
    """The scan's inline stat (one call per image file) agrees with the reasons ``_stat_file`` gives."""
    _touch(tmp_path / "a" / "big.jpg", b"x" * 1234)
    _touch(tmp_path / "a" / "deep" / "small.png", b"yz")
    os.mkfifo(tmp_path / "a" / "pipe.jpg")
    _touch(tmp_path / "a" / "zero.jpg", b"")
    calls = []
    real_stat = os.stat

    def counting_stat(path, *args, **kwargs):
        calls.append(os.fspath(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    scan = scan_folder(tmp_path)
    assert [(it.rel, it.label, it.size) for it in scan.items] == [("a/big.jpg", 0, 1234), ("a/deep/small.png", 0, 2)]
    assert all(it.path == str(tmp_path / it.rel) for it in scan.items)
    assert dict((os.path.basename(p), r) for p, r in scan.skipped) == {
        "pipe.jpg": "not a regular file", "zero.jpg": "empty file (0 bytes)"}
    assert sorted(os.path.basename(c) for c in calls if c.endswith(("big.jpg", "small.png"))) == ["big.jpg", "small.png"]
    with pytest.raises(AttributeError):
        scan.items[0].size = 1  # SourceItem stays immutable


def test_a_file_whose_first_stat_fails_is_kept_when_it_is_there_after_all(tmp_path, monkeypatch):
    _touch(tmp_path / "a" / "1.jpg", b"abc")
    real_stat, failed = os.stat, []

    def flaky_stat(path, *args, **kwargs):
        if os.fspath(path).endswith("1.jpg") and not failed:
            failed.append(path)
            raise FileNotFoundError(2, "No such file or directory")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", flaky_stat)
    scan = scan_folder(tmp_path)
    assert failed and not scan.skipped and [(it.rel, it.size) for it in scan.items] == [("a/1.jpg", 3)]


def test_the_garbage_collector_is_paused_only_while_items_are_made(tmp_path):
    import gc

    from fastdata.converters.planning.scan import without_gc

    _touch(tmp_path / "a" / "1.jpg")
    assert gc.isenabled()
    seen = []
    with without_gc():
        seen.append(gc.isenabled())
    scan_folder(tmp_path)
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ConfigError), without_gc():
        raise ConfigError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        scan_folder(tmp_path)
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def _mixed_tree(root):
    """Classes with nested folders, hidden and foreign files, empty files, a FIFO and a broken link."""
    for c, n in (("ants", 23), ("bees", 17), ("cats", 0)):
        (root / c).mkdir(parents=True)
        for i in range(n):
            _touch(root / c / ("deep" if i % 5 == 0 else "") / f"{i:03d}.jpg", b"x" * (i + 1))
    _touch(root / "ants" / "zero.jpg", b"")
    _touch(root / "bees" / ".hidden.jpg", b"h")
    _touch(root / "bees" / "notes.txt", b"t")
    os.mkfifo(root / "bees" / "pipe.jpg")
    os.symlink(root / "nowhere.jpg", root / "ants" / "broken.jpg")


def _scanned(root, **kwargs):
    s = scan_folder(root, allow_empty_classes=True, **kwargs)
    return s.classes, list(s.items), s.skipped, s.ignored


def test_stat_workers_give_the_same_scan(tmp_path, monkeypatch):
    """A large folder's stats spread over forked workers (here: any folder, in slices of 3 files)
    give the same items, skips and ignored files, in the same order, as the scan alone."""
    from fastdata.converters.planning import scan
    from fastdata.converters.workers import forkpool

    _mixed_tree(tmp_path)
    alone = _scanned(tmp_path)
    pools = []
    real = forkpool.ForkPool.__init__

    def spy(self, workers, *args, **kwargs):
        pools.append(workers)
        real(self, workers, *args, **kwargs)

    monkeypatch.setattr(forkpool.ForkPool, "__init__", spy)
    monkeypatch.setattr(scan, "PARALLEL_STAT_FROM", 8)
    monkeypatch.setattr(scan, "STAT_TASK", 3)
    assert _scanned(tmp_path, workers=3) == alone and pools == [3]
    monkeypatch.setattr(scan, "PARALLEL_STAT_FROM", 10_000)
    assert _scanned(tmp_path, workers=3) == alone and pools == [3]  # below it: no pool


def _stat_slice_then_die(d, start, stop):
    os.kill(os.getpid(), 9)


def test_a_stat_worker_killed_by_the_os_leaves_the_scan_to_do_it(tmp_path, monkeypatch):
    from fastdata.converters.planning import scan

    _mixed_tree(tmp_path)
    alone = _scanned(tmp_path)
    monkeypatch.setattr(scan, "PARALLEL_STAT_FROM", 8)
    monkeypatch.setattr(scan, "_stat_slice", _stat_slice_then_die)
    assert _scanned(tmp_path, workers=2) == alone
