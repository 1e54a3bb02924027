"""Bad directories, bad arguments and a missing DALI fail with fastdata errors that name the fix."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from conftest import requires_dali
from dalikit import samples, write
from PIL import Image

import fastdata.dali
from fastdata.dali import DALILoader, build_pipeline
from fastdata.errors import ConfigError, DecodeError, FormatError, ManifestError, MissingDependencyError
from fastdata.formats import Sample


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
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match="'webdataset' has no DALI reader.*recordio"):
        build_pipeline(tmp_path, batch_size=2)


@requires_dali
def test_no_manifest(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        build_pipeline(tmp_path, batch_size=2)


@requires_dali
def test_missing_recordio_dali_index_names_file_and_fix(tiny):
    index = tiny["recordio"] / "dali.idx"
    saved = index.read_bytes()
    index.unlink()
    try:
        with pytest.raises(FormatError, match=r"dali\.idx.*does not exist.*write_dali_index") as info:
            build_pipeline(tiny["recordio"], batch_size=2)
        assert info.value.path.endswith("dali.idx")
    finally:
        index.write_bytes(saved)


@requires_dali
def test_missing_tfrecord_index_names_file_and_fix(tiny):
    index = tiny["tfrecord"] / "shard-00001.tfrecord.idx"
    saved = index.read_bytes()
    index.unlink()
    try:
        with pytest.raises(FormatError, match=r"shard-00001\.tfrecord\.idx.*does not exist.*build_index"):
            DALILoader(tiny["tfrecord"], 2, train=False)
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
        ({"resize_shorter": 200}, "resize_shorter"),
        ({"dtype": "int8"}, "dtype must be"),
        ({"batch_size": 0}, "batch_size must be a positive int"),
    ],
)
def test_bad_arguments(tiny, kwargs, message):
    args = {"batch_size": 2, **kwargs}
    with pytest.raises(ConfigError, match=message):
        build_pipeline(tiny["recordio"], **args)


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
