import json

import pytest

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats import Manifest, ShardInfo, registry
from fastdata.formats.dataset_writer import prepare_directory


def _manifest():
    shards = [ShardInfo("shard-00000.rec", 3, 300, "ab" * 32, "shard-00000.idx"), ShardInfo("shard-00001.rec", 2, 200, "cd" * 32, "shard-00001.idx")]
    return Manifest(format="recordio", shards=shards, classes=["ants", "bees"])


def test_round_trip_and_derived_fields(tmp_path):
    m = _manifest()
    m.write(tmp_path)
    doc = json.loads((tmp_path / "manifest.json").read_text())
    assert doc["num_samples"] == 5 and doc["class_to_idx"] == {"ants": 0, "bees": 1}
    back = Manifest.read(tmp_path)
    assert back == m
    assert not list(tmp_path.glob("*.partial"))


def test_unknown_version_is_refused_with_a_message(tmp_path):
    doc = json.loads(_manifest().to_json())
    doc["manifest_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match="manifest_version 99 is not supported"):
        Manifest.read(tmp_path)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"manifest_version": 1}'])
def test_malformed_manifest_is_refused(tmp_path, text):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ManifestError, match=str(tmp_path)):
        Manifest.read(tmp_path)


def test_count_mismatch_is_refused(tmp_path):
    doc = json.loads(_manifest().to_json())
    doc["num_samples"] = 6
    doc["manifest_version"] = 1  # an older manifest, without the checksum that refuses any edit first
    del doc["checksum"], doc["digests"]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match="disagrees"):
        Manifest.read(tmp_path)


def test_missing_manifest_says_how_to_fix(tmp_path):
    with pytest.raises(ManifestError, match="--resume"):
        Manifest.read(tmp_path)


def test_finished_directory_is_not_overwritten_by_default(tmp_path):
    _manifest().write(tmp_path)
    with pytest.raises(ConfigError, match="already holds a finished dataset"):
        prepare_directory(tmp_path)
    prepare_directory(tmp_path, overwrite=True)
    assert not (tmp_path / "manifest.json").exists()


def test_unknown_format_name():
    with pytest.raises(ConfigError, match="recordio"):
        registry.get("parquet")
