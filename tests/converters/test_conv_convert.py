"""``fastdata convert`` end to end, in every format: on Pillow's own edge-case test images
(../shared/data), and on generated folders (tests/testkit.py: photo-like JPEGs, the same
edge cases, a small three-class folder) for everything that is not about a third-party file."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from convkit import manifest_json, read_back, rgb, run_cli, tree
from PIL import Image

from fastdata.formats import registry, tfrecord

FORMATS = registry.names()


# Each edge-case folder: (where it is, the upright picture the EXIF-turned files show, the CMYK file).
EDGE_SOURCES = {
    "pillow": ("shared_data", "photos/edgecases", "rgb_jpeg/hopper.jpg", "cmyk_jpeg/pil_sample_cmyk.jpg"),
    "generated": ("edge_images", "", "rgb_jpeg/upright.jpg", "cmyk_jpeg/cmyk.jpg"),
}


@pytest.mark.parametrize("source", sorted(EDGE_SOURCES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_edgecases_load_back_as_upright_rgb(request, tmp_path, capsys, fmt, source):
    """Pillow's own test images (third-party files), and the generated folder of the same cases."""
    fixture, folder, upright_file, cmyk_file = EDGE_SOURCES[source]
    src = request.getfixturevalue(fixture) / folder
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "out", "--format", fmt, "--workers", "1", "--shards", "2")
    assert code == 0, err
    assert "25 images" in out and "normalised: 17 image(s)" in out and "exif-orientation 7" in out
    m, samples = read_back(tmp_path / "out")
    assert len(samples) == 25 and m.classes == sorted(os.listdir(src))
    by_class: dict[str, list[np.ndarray]] = {}
    for data, label in samples:
        img = Image.open(__import__("io").BytesIO(data))
        img.load()
        assert img.format == "JPEG"
        pixels = np.asarray(img.convert("RGB"), np.int16)
        assert pixels.ndim == 3 and pixels.shape[2] == 3
        by_class.setdefault(m.classes[label], []).append(pixels)
    upright = rgb((src / upright_file).read_bytes())
    oriented = by_class["exif_orientation_jpeg"]
    assert len(oriented) == 7
    for pixels in oriented:
        assert np.abs(pixels - upright).mean() < 10
    (cmyk,) = by_class["cmyk_jpeg"]
    pillow = np.asarray(Image.open(src / cmyk_file).convert("RGB"), np.int16)
    assert np.abs(cmyk - pillow).mean() < 10
    normalised = manifest_json(tmp_path / "out")["extra"]["converter"]["normalised"]
    assert normalised["cmyk-jpeg"] == 1 and normalised["png-to-jpeg"] == 9


@pytest.mark.parametrize("fmt", FORMATS)
def test_labels_follow_class_to_idx_and_jpegs_pass_through(small_folder, tmp_path, capsys, fmt):
    src = small_folder
    code, _, err = run_cli(capsys, "convert", src, tmp_path / "out", "--passthrough", "--format", fmt, "--shards", "3", "-q")
    assert code == 0, err
    classes = sorted(e.name for e in os.scandir(src) if e.is_dir())
    class_to_idx = {c: i for i, c in enumerate(classes)}
    by_bytes = {p.read_bytes(): class_to_idx[p.parent.name] for p in src.glob("*/*.jpg")}
    m, samples = read_back(tmp_path / "out")
    assert m.classes == classes and m.label_base == (1 if fmt == "tfrecord" else 0)
    assert len(samples) == len(by_bytes) == 13
    for data, label in samples:
        assert data in by_bytes, "pass-through image bytes must equal a source file"
        assert label == by_bytes[data]
    order = [by_bytes[d] for d, _ in samples]
    assert order != sorted(order)  # shuffled by default


def test_tfrecord_stores_imagenet_keys(small_folder, tmp_path, capsys):
    src = small_folder
    assert run_cli(capsys, "convert", src, tmp_path / "o", "--passthrough", "--format", "tfrecord", "--no-shuffle", "-q")[0] == 0
    m = manifest_json(tmp_path / "o")
    records = list(tfrecord.Reader(tmp_path / "o" / m["shards"][0]["file"]))
    first = tfrecord.parse_example(records[0])
    assert first["image/filename"] == [b"cat/cat_00.jpg"] and first["image/class/text"] == [b"cat"]
    assert int(first["image/class/label"][0]) == 1  # TensorFlow's ImageNet convention: class 0 stored as 1
    assert (int(first["image/height"][0]), int(first["image/width"][0])) == (56, 55)
    assert first["image/encoded"][0] == (src / "cat" / "cat_00.jpg").read_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_is_identical_for_any_worker_count(edge_images, tmp_path, capsys, fmt):
    src = edge_images
    common = ["--format", fmt, "--shard-size", "96K", "--val-fraction", "0.2", "--seed", "5", "-q"]
    assert run_cli(capsys, "convert", src, tmp_path / "w1", "--workers", "1", *common)[0] == 0
    assert run_cli(capsys, "convert", src, tmp_path / "w2", "--workers", "2", *common)[0] == 0
    one, two = tree(tmp_path / "w1"), tree(tmp_path / "w2")
    assert one == two
    assert "train/manifest.json" in one and "val/manifest.json" in one
    assert not any(name.startswith(".fastdata") or name.endswith(".partial") for name in one)
    train, val = read_back(tmp_path / "w1" / "train")[1], read_back(tmp_path / "w1" / "val")[1]
    assert len(train) + len(val) == 25 and len(val) == 4


@pytest.mark.parametrize("fmt", FORMATS)
def test_shards_cut_into_pieces_join_to_the_same_bytes(edge_images, tmp_path, capsys, monkeypatch, fmt):
    """Three workers, two shards: the formats that can join cut shards into pieces (pieces of any
    size: --test-min-piece 1), some with every image skipped, and the output stays the same."""
    from fastdata.converters.conversion import tail

    cut: list[tuple[str, int, int]] = []
    real = tail.Tail.take

    def spy(self, want):
        task = real(self, want)
        if task.pieces != 1:
            cut.append((task.shard.key, task.piece, task.pieces))
        return task

    monkeypatch.setattr(tail.Tail, "take", spy)
    src = tmp_path / "src"
    shutil.copytree(edge_images, src)
    for n in range(6):  # a run of unreadable files: a piece of them is all skipped
        (src / "zzz_bad" / f"{n}.jpg").parent.mkdir(exist_ok=True)
        (src / "zzz_bad" / f"{n}.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    common = ["--format", fmt, "--shards", "2", "--no-shuffle", "--allow-skips", "-q"]
    assert run_cli(capsys, "convert", src, tmp_path / "w1", "--workers", "1", *common)[0] == 0
    assert cut == []
    assert run_cli(capsys, "convert", src, tmp_path / "w3", "--workers", "3", "--test-min-piece", "1", *common)[0] == 0
    assert bool(cut) == (fmt != "lmdb")  # LMDB's B-tree cannot be joined: whole shards
    assert tree(tmp_path / "w1") == tree(tmp_path / "w3")
    assert not (tmp_path / "w3" / ".fastdata-state").exists()


def _shards_of(counts, size=1 << 20):
    from fastdata.converters.planning.layout import ShardPlan
    from fastdata.converters.planning.scan import SourceItem

    return [
        ShardPlan("", g, f"shard-{g:05d}.rec", [SourceItem(f"/x/{g}/{i}", f"{g}/{i}", 0, size) for i in range(n)],
                  list(range(n)))
        for g, n in enumerate(counts)
    ]


def _simulate(shards, workers, slower=None):
    """Tasks as write_shards hands them out to workers that write a byte a second, but
    for the whole shards in ``slower`` (index -> how many times longer they take, which no
    plan made ahead can know): returns the tasks, who ran each, and when each worker is done."""
    from fastdata.converters.conversion.tail import Tail, Task, tail_start

    cut = tail_start(shards, workers, True)
    free = [0.0] * workers
    tasks, who = [], []

    def run(task, factor=1.0):
        w = min(range(workers), key=lambda k: (free[k], k))  # the first free worker takes it
        tasks.append(task)
        who.append(w)
        free[w] += task.size * factor

    for g, shard in enumerate(shards[:cut]):
        run(Task(shard, 0, len(shard.items)), (slower or {}).get(g, 1.0))
    tail = Tail(shards[cut:])
    while tail:
        now = min(free)
        loads = [f - now for f in free if f > now]  # what the others still have to write
        run(tail.next_for(loads, workers - len(loads)))
    return tasks, who, free


def test_the_tail_is_cut_where_workers_come_free():
    from fastdata.converters.conversion.tail import tail_start

    mib = 1 << 20
    shards = _shards_of([64, 64, 64, 64, 64, 64, 31])
    assert tail_start(shards, 1, True) == tail_start(shards, 2, False) == 7  # whole shards only
    assert tail_start(shards, 2, True) == 5 and tail_start(shards, 16, True) == 0
    tasks, _, free = _simulate(shards, 2)
    # five whole shards leave one worker a shard behind: the other takes shard 5, then both share shard 6
    assert [(t.shard.index, t.start, t.stop, t.piece, t.pieces) for t in tasks[5:]] == [
        (5, 0, 64, 0, 1), (6, 0, 15, 0, 0), (6, 15, 31, 1, 2)]
    assert max(free) - min(free) <= 1 * mib
    for workers in (2, 16):  # every item once, in order; pieces numbered, the last says how many
        tasks, _, free = _simulate(shards, workers)
        assert [(t.shard.index, i) for t in tasks for i in range(t.start, t.stop)] == [
            (s.index, i) for s in shards for i in range(len(s.items))]
        for t in tasks:
            assert t.pieces == (t.piece + 1 if t.stop == len(t.shard.items) else 0)
            assert t.pieces == 1 or t.stop - t.start >= 4  # no piece below 4 MiB (the default)
        assert sum(t.piece > 0 for t in tasks) <= workers - 1  # a cut where a worker's share ends


@pytest.mark.parametrize("workers", [2, 3, 5, 8, 16, 64])
@pytest.mark.parametrize("counts", [[64] * 7 + [31], [10, 200, 3, 50, 50, 1, 120], [30] * 40, [500]])
def test_the_tail_leaves_the_workers_level(workers, counts):
    """Whatever the shard sizes, the last worker finishes within two of the smallest
    pieces and an item of the ideal, with about a cut per worker (where its share ends)."""
    mib = 1 << 20
    tasks, _, free = _simulate(_shards_of(counts), workers)
    assert sum(t.piece > 0 for t in tasks) <= workers + 1
    assert max(free) <= sum(counts) * mib / workers + (2 * 4 + 1) * mib


@pytest.mark.parametrize("slower", [{3: 1.3}, {4: 1.3}, {2: 0.7, 3: 1.2}])
def test_a_shard_that_runs_long_does_not_leave_one_worker_both_pieces(slower):
    """The cut is made when a worker comes free, so a whole shard that took longer than its bytes
    say (a busy machine) does not leave one worker writing both pieces of a shard in turn, which a
    plan made ahead did when the order in which workers came free turned round."""
    shards = _shards_of([590, 592, 611, 602, 615, 592, 301], size=111_000)
    tasks, who, free = _simulate(shards, 2, slower)
    by_shard = {}
    for task, worker in zip(tasks, who):
        by_shard.setdefault(task.shard.index, []).append(worker)
    assert all(len(set(ws)) == len(ws) for ws in by_shard.values())
    assert max(free) - min(free) <= 4 << 20


def test_val_split_is_disjoint_and_complete(small_folder, tmp_path, capsys):
    src = small_folder
    code, out, _ = run_cli(capsys, "convert", src, tmp_path / "o", "--passthrough", "--format", "tfrecord", "--val-fraction", "0.25")
    assert code == 0 and "splits: train 10, val 3" in out
    (m_train, train), (m_val, val) = read_back(tmp_path / "o" / "train"), read_back(tmp_path / "o" / "val")
    assert m_train.classes == m_val.classes == ["cat", "dog", "zebra_7"]
    train_bytes, val_bytes = {d for d, _ in train}, {d for d, _ in val}
    assert not train_bytes & val_bytes
    assert train_bytes | val_bytes == {p.read_bytes() for p in src.glob("*/*.jpg")}
    assert sorted(lab for _, lab in val) == [0, 1, 2]  # one per class


def test_photo_folder_train_with_two_workers(photo_tree, tmp_path, capsys):
    src = photo_tree / "train"  # generated photos (tests/testkit.py), with a GIF and a .jpeg among them
    ants, bees = (sum(1 for _ in (src / cls).iterdir()) for cls in ("ants", "bees"))
    # GIF is not taken by default (torchvision's rule, see below); --exts opts in and it is normalised
    exts = ["--exts", "jpg,jpeg,gif"]
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "h", "--passthrough", "--format", "recordio", "--workers", "2", "--shard-size", "2M", *exts)
    assert code == 0, err
    assert "gif-to-jpeg 1" in out and f"per class: ants {ants}, bees {bees}" in out
    m, samples = read_back(tmp_path / "h")
    assert m.num_samples == ants + bees and len(m.shards) >= 3 and m.classes == ["ants", "bees"]
    sources = {p.read_bytes(): p for p in src.glob("*/*")}
    passed = [d for d, _ in samples if d in sources]
    assert len(passed) == ants + bees - 1  # every JPEG byte for byte; only the GIF was re-encoded
    for data, label in samples:
        if data in sources:
            assert label == ["ants", "bees"].index(sources[data].parent.name)


def test_converted_folder_has_the_samples_of_image_folder(photo_tree, tmp_path, capsys):
    """One rule for what counts as an image: the converter takes exactly the files
    fastdata.ImageFolder (and torchvision's) takes, so counts and order agree."""
    from testkit import PHOTO_GIF

    from fastdata.datasets import ImageFolder

    src = photo_tree / "train"
    folder = ImageFolder(src, decode=False)
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "h", "--passthrough", "--format", "lmdb", "--no-shuffle")
    assert code == 0, err
    m, samples = read_back(tmp_path / "h")
    assert m.num_samples == len(folder) == sum(1 for p in src.glob("*/*")) - 1  # all but the GIF
    assert [d for d, _ in samples] == [folder[i][0] for i in range(len(folder))]
    assert [lab for _, lab in samples] == folder.targets.tolist()
    assert f"{PHOTO_GIF.rsplit('/', 1)[1]}: extension '.gif' not in --exts" in out


def test_list_input_keeps_list_order_and_labels(shared_data, tmp_path, capsys):
    lst = shared_data / "vectors" / "im2rec_passthrough.lst"
    root = shared_data / "vectors" / "images"
    code, _, err = run_cli(capsys, "convert", "--list", lst, "--root", root, tmp_path / "o", "--passthrough", "--format", "recordio", "-q")
    assert code == 0, err
    m, samples = read_back(tmp_path / "o")
    lines = [line.split("\t") for line in lst.read_text().splitlines()]
    assert [d for d, _ in samples] == [(root / rel.strip()).read_bytes() for _, _, rel in lines]
    assert [lab for _, lab in samples] == [int(float(lab)) for _, lab, _ in lines]
    assert m.classes == ["0", "1", "2"]


def test_resize_and_summary(small_folder, tmp_path, capsys):
    src = small_folder
    code, out, _ = run_cli(capsys, "convert", src, tmp_path / "o", "--format", "lmdb", "--resize", "60", "--workers", "2")
    assert code == 0 and "resized" in out
    for data, _ in read_back(tmp_path / "o")[1]:
        assert min(Image.open(__import__("io").BytesIO(data)).size) <= 60


@pytest.mark.parametrize("fmt", FORMATS)
def test_fastdata_datasets_return_class_to_idx_labels(small_folder, tmp_path, capsys, fmt):
    import fastdata

    src = small_folder
    assert run_cli(capsys, "convert", src, tmp_path / "o", "--format", fmt, "--shards", "2", "-q")[0] == 0
    ds = fastdata.open_dataset(tmp_path / "o")
    labels = sorted(int(ds[i][1]) for i in range(len(ds)))
    assert labels == [0] * 4 + [1] * 5 + [2] * 4  # 1-based on disk for tfrecord, 0-based here


def test_progress_bar_only_on_a_terminal():
    import io

    from fastdata.converters.conversion.report import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    bar = Progress(10, stream=tty)
    bar(4, 4_000_000)
    bar(6, 6_000_000)
    bar.close()
    assert "10/10" in tty.getvalue() and "img/s" in tty.getvalue() and "MB/s" in tty.getvalue()
    assert (bar.images, bar.bytes) == (10, 10_000_000)
    for stream, enabled in ((io.StringIO(), True), (Terminal(), False)):
        quiet = Progress(10, stream=stream, enabled=enabled)
        quiet(10, 1)
        quiet.close()
        assert stream.getvalue() == ""


@pytest.mark.parametrize("fmt", registry.names())
def test_label_vectors_go_only_into_formats_that_declare_them(small_folder, tmp_path, capsys, fmt):
    from fastdata.formats.lst import write_lst

    root = small_folder
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jpg"))[:3]
    write_lst(tmp_path / "v.lst", [(i, (1.0, 0.5), rel) for i, rel in enumerate(files)])
    code, _, err = run_cli(capsys, "convert", "--list", tmp_path / "v.lst", "--root", root, tmp_path / "o", "--format", fmt, "-q")
    if registry.get(fmt).label_vectors:
        assert code == 0, err
        assert [np.ravel(lab).tolist() for _, lab in read_back(tmp_path / "o")[1]] == [[1.0, 0.5]] * 3
    else:
        takes = " or ".join(n for n in registry.names() if registry.get(n).label_vectors)
        assert code == 2 and f"the {fmt} format holds one int label per image; use --format {takes}" in err


def test_spawned_workers_write_the_same_bytes(edge_images, tmp_path, capsys, monkeypatch):
    """Forked workers inherit the shards their tasks name; spawned ones (another thread was running)
    get a pickled copy at start-up: same output, pieces included."""
    from fastdata.converters.workers import parallel

    src = edge_images
    common = ["--format", "recordio", "--shards", "3", "-q", "--test-min-piece", "1"]
    assert run_cli(capsys, "convert", src, tmp_path / "forked", "--workers", "2", *common)[0] == 0
    monkeypatch.setattr(parallel, "start_method", lambda: "spawn")
    assert run_cli(capsys, "convert", src, tmp_path / "spawned", "--workers", "2", *common)[0] == 0
    assert tree(tmp_path / "forked") == tree(tmp_path / "spawned")
