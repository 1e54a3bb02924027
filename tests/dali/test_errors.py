"""Bad directories, bad arguments and a missing DALI fail with fastdata errors that name the fix."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest
from testkit import requires_dali
from dalikit import FORMATS, samples, write
from PIL import Image

import fastdata.dali
from fastdata.dali import Crop, DALILoader, Normalize, Reading, build_pipeline
from fastdata.errors import ConfigError, DecodeError, FormatError, ManifestError, MissingDependencyError
from fastdata.formats import Manifest, Sample, registry


def test_missing_dali_raises_missing_dependency_with_the_pip_command(monkeypatch, tmp_path):
    for name in [m for m in sys.modules if m == "nvidia.dali" or m.startswith("nvidia.dali.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "nvidia.dali", None)  # makes `import nvidia.dali` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'fastdata\[dali\]'"):
        build_pipeline(tmp_path, batch_size=2)
    with pytest.raises(MissingDependencyError):
        DALILoader(tmp_path, 2)
    assert fastdata.dali.DALILoader is DALILoader  # the package itself imported fine


def test_importing_fastdata_dali_does_not_import_dali():
    code = "import sys, fastdata.dali; print(sorted(m for m in sys.modules if m.startswith('nvidia')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return {fmt: write(tmp_path_factory.mktemp(fmt), fmt, samples(4), shards=2) for fmt in ("recordio", "tfrecord")}


@requires_dali
def test_unknown_format_in_manifest(tiny, tmp_path):
    doc = json.loads((tiny["recordio"] / "manifest.json").read_text())
    doc["format"] = "webdataset"
    doc["manifest_version"] = 1  # an older manifest: a newer one's checksum refuses the edit first
    del doc["checksum"], doc["digests"]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match="'webdataset' has no DALI reader.*recordio"):
        build_pipeline(tmp_path, batch_size=2)


@requires_dali
def test_no_manifest(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        build_pipeline(tmp_path, batch_size=2)


@requires_dali
@pytest.mark.parametrize(
    "fmt, name, fix",
    [("recordio", "dali.idx", "write_dali_index"), ("tfrecord", "shard-00001.tfrecord.idx", "build_index")],
)
def test_missing_index_names_file_and_fix(tiny, fmt, name, fix):
    index = tiny[fmt] / name
    saved = index.read_bytes()
    index.unlink()
    try:
        with pytest.raises(FormatError, match=rf"{re.escape(name)}.*does not exist.*{fix}") as info:
            DALILoader(tiny[fmt], 2, train=False)
        assert info.value.path == str(index)
    finally:
        index.write_bytes(saved)


@requires_dali
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"shard_id": 1}, "both shard_id and num_shards"),
        ({"shard_id": 2, "num_shards": 2}, "shard_id < num_shards"),
        ({"num_shards": 9, "shard_id": 0}, "9 shards for 4 samples"),
        ({"device": "gpu"}, "pass device_id"),
        ({"device": "tpu"}, "device must be one of"),
        ({"batch_size": 0}, "batch_size must be a positive int"),
        ({"crop": 64}, r"crop must be fastdata\.dali\.Crop\(\.\.\.\), got int"),
    ],
)
def test_bad_arguments(tiny, kwargs, message):
    args = {"batch_size": 2, **kwargs}
    with pytest.raises(ConfigError, match=message):
        build_pipeline(tiny["recordio"], **args)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Crop(resize_shorter=200), r"resize_shorter=200\) must be >= size \(224\)"),
        (lambda: Crop(size=0), "size must be a positive int"),
        (lambda: Crop(random_area=(0.5, 0.1)), "random_area"),
        (lambda: Normalize(dtype="int8"), "must be float32 or float16"),
        (lambda: Normalize(mean=(0.5, 0.5)), "3 values"),
        (lambda: Normalize(std=(0.2, 0.0, 0.2)), "std no zero"),
        (lambda: Reading(shuffle_buffer=0), "shuffle_buffer must be a positive int"),
    ],
    ids=["resize_shorter", "size", "area", "dtype", "two-means", "zero-std", "buffer"],
)
def test_bad_settings_fail_where_they_are_written(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


@pytest.mark.parametrize("name", ["mean", "std"])
def test_mean_std_in_0_255_units_are_refused_saying_the_unit_changed(name):
    # fastdata.dali took 0-255 units before; silently accepting them would normalise to garbage
    old = {"mean": (123.675, 116.28, 103.53), "std": (58.395, 57.12, 57.375)}[name]
    with pytest.raises(ConfigError, match=r"looks like 0-255 units.*takes 0-1 units.*the unit changed.*divide by 255"):
        Normalize(**{name: old})
    assert Normalize(**{name: [v / 255 for v in old]}).in_pixels()[name == "std"] == pytest.approx(list(old))


@requires_dali
@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_shard_is_refused_naming_it(tmp_path, fmt):
    directory = write(tmp_path, fmt, samples(6), shards=2)
    shard = Manifest.read(directory).shards[-1]
    data = registry.get(fmt).data_file(directory / shard.file)  # an LMDB shard's data.mdb
    with open(data, "r+b") as f:
        f.truncate(shard.bytes - 10)
    with pytest.raises(FormatError, match=rf"is {shard.bytes - 10} bytes but the manifest says {shard.bytes}") as info:
        DALILoader(directory, 2, train=False, num_threads=1)
    assert info.value.path == str(data) and "fastdata verify" in str(info.value)


@requires_dali
def test_undecodable_image_raises_decode_error(tmp_path):
    gif = io.BytesIO()
    Image.new("P", (8, 8)).save(gif, "GIF")
    write(tmp_path, "recordio", [*samples(2), Sample(image=gif.getvalue(), label=0, id=2)], shards=1)
    with pytest.raises(DecodeError, match="could not decode.*not GIF") as info:
        list(DALILoader(tmp_path, 3, train=False, num_threads=1))
    assert str(tmp_path) in str(info.value)


@requires_dali
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"train": True}, r"4 samples over 1 shard\(s\) give 4 per shard, not one full batch of 5.*train=True"),
        ({"train": False, "drop_last": True}, r"not one full batch of 5.*drop_last=True"),
        ({"train": True, "shard_id": 1, "num_shards": 2, "batch_size": 3}, r"give 2 per shard.*batch of 3"),
    ],
    ids=["train", "drop_last", "sharded"],
)
def test_dropped_last_batch_with_less_than_one_batch_per_shard_names_the_fix(tiny, kwargs, message):
    # DALI's own error here blames last_batch_policy=PARTIAL and names neither the data nor the fix
    args = {"batch_size": 5, "num_threads": 1, **kwargs}
    with pytest.raises(ConfigError, match=message) as info:
        DALILoader(tiny["recordio"], args.pop("batch_size"), **args)
    assert str(tiny["recordio"]) in str(info.value) and "drop_last=False" in str(info.value)
