"""What every format declares to the registry works on its own shards:
detection, the inspect / verify / index hooks, DALI's index files, options."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil

import pytest

from fastdata.errors import ConfigError, FastDataError, FormatError
from fastdata.formats import Manifest, registry
from fastdata.formats.hooks import Detected, FileCheck, ReaderOptions

from formatkit import data_file, make_samples, write

FORMATS = registry.names()


@pytest.fixture(params=FORMATS)
def fmt(request):
    return request.param


@pytest.fixture
def written(tmp_path, fmt) -> tuple[Manifest, list]:
    samples = make_samples(12, seed=2)
    return write(tmp_path / "ds", fmt, samples, shard_bytes=1500), samples


def _shard(tmp_path, manifest: Manifest, i: int = 0):
    return tmp_path / "ds" / manifest.shards[i].file


def test_detect_names_the_format_of_a_dataset_and_of_each_shard(tmp_path, fmt, written):
    manifest, _ = written
    found = registry.detect(tmp_path / "ds")
    assert (found.format, found.manifest) == (fmt, manifest) and found.is_dataset
    spec = registry.get(fmt)
    for i in range(len(manifest.shards)):
        shard = _shard(tmp_path, manifest, i)
        found = registry.detect(shard)
        assert (found.format, found.path, found.data_file) == (fmt, shard, spec.data_file(shard))
        assert not found.is_dataset and found.compression is None


def test_each_format_sniffs_its_own_bytes_and_no_other(tmp_path, written, fmt):
    manifest, _ = written
    head = data_file(tmp_path / "ds", manifest).read_bytes()[:64]
    sniffing = [name for name in FORMATS if registry.get(name).sniff is not None]
    assert [name for name in sniffing if registry.get(name).sniff(head)] == ([fmt] if fmt in sniffing else [])
    renamed = tmp_path / "no-suffix"
    shutil.copyfile(data_file(tmp_path / "ds", manifest), renamed)
    if fmt in sniffing:  # found by its bytes alone
        assert registry.detect(renamed).format == fmt
    else:  # declared: no signature, found by name only
        with pytest.raises(ConfigError, match=f"not {re.escape(registry.get(fmt).title)}"):
            registry.detect(renamed)


def test_detect_says_what_each_format_looks_for(tmp_path):
    (tmp_path / "notes.bin").write_bytes(b"hello, this is no dataset at all")
    with pytest.raises(ConfigError) as info:
        registry.detect(tmp_path / "notes.bin")
    for name in FORMATS:
        assert f"not {registry.get(name).title}" in str(info.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="not a fastdata dataset"):
        registry.detect(tmp_path / "empty")
    with pytest.raises(ConfigError, match="no such file"):
        registry.detect(tmp_path / "missing")


def test_inspect_shows_the_first_records(tmp_path, fmt, written):
    manifest, samples = written
    found = registry.detect(_shard(tmp_path, manifest))
    count, shown = registry.get(fmt).inspect(found, 2)
    assert count == manifest.shards[0].records and len(shown) == min(2, count)
    for position, entry in enumerate(shown):
        assert entry.fields["position"] == position and entry.image == samples[position].image


def _read_checked(check: FileCheck) -> list[bytes | None]:
    if check.stream is not None:
        return [check.image(record) for record in check.stream()]
    reader = check.records()
    return [reader.sample(j)[0] for j in range(len(reader))]


def test_verify_reads_a_clean_shard_and_fails_a_damaged_one(tmp_path, fmt, written):
    manifest, samples = written
    shard = _shard(tmp_path, manifest)
    check = registry.get(fmt).verify(registry.detect(shard))
    assert check.problems == () and (check.records is None) != (check.stream is None)
    assert _read_checked(check) == [s.image for s in samples[: manifest.shards[0].records]]
    path = data_file(tmp_path / "ds", manifest)
    os.truncate(path, path.stat().st_size - 5)
    check = registry.get(fmt).verify(registry.detect(shard))
    if not check.problems:
        with pytest.raises(FastDataError):
            _read_checked(check)


# Each spec must declare these (FormatSpec has no default for them); the tests
# below run over the formats whose answer is not None.
INDEXED = [name for name in FORMATS if registry.get(name).index is not None]
DALI = [name for name in FORMATS if registry.get(name).dali is not None]
FINALIZED = [name for name in FORMATS if registry.get(name).finalize is not None]


@pytest.mark.parametrize("fmt", INDEXED)
def test_index_hook_rebuilds_the_index_the_writer_wrote(tmp_path, fmt, written):
    manifest, _ = written
    spec = registry.get(fmt)
    for i, info in enumerate(manifest.shards):
        shard = _shard(tmp_path, manifest, i)
        assert spec.index.path(shard) == tmp_path / "ds" / info.index
        out = tmp_path / f"rebuilt-{i}.idx"
        assert spec.index.build(registry.detect(shard), out)
        assert out.read_bytes() == spec.index.path(shard).read_bytes()


@pytest.mark.parametrize("fmt", DALI)
def test_dali_index_files_exist_or_are_named_in_the_error(tmp_path, fmt, written):
    manifest, _ = written
    dali = registry.get(fmt).dali
    paths = dali.index_paths(tmp_path / "ds", manifest)
    assert dali.reader and all(os.path.isfile(p) for p in paths)
    if paths:
        os.remove(paths[-1])
        with pytest.raises(FormatError, match=re.escape(os.path.basename(paths[-1]))):
            dali.index_paths(tmp_path / "ds", manifest)


def test_finalize_comes_with_its_check(fmt):
    spec = registry.get(fmt)
    assert (spec.finalize is None) == (spec.check_finalized is None)


@pytest.mark.parametrize("fmt", FINALIZED)
def test_check_finalized_flags_what_finalize_wrote(tmp_path, fmt, written):
    manifest, _ = written
    spec = registry.get(fmt)
    assert spec.check_finalized(tmp_path / "ds", manifest) == []
    for name in manifest.extra.values():
        if isinstance(name, str) and (tmp_path / "ds" / name).is_file():
            os.remove(tmp_path / "ds" / name)
    assert spec.check_finalized(tmp_path / "ds", manifest) != []


def test_options_are_a_dataclass_with_defaults_that_open_every_shard(tmp_path, fmt, written):
    manifest, _ = written
    spec = registry.get(fmt)
    assert issubclass(spec.options, ReaderOptions) and dataclasses.is_dataclass(spec.options)
    for info in manifest.shards:
        reader = spec.open_shard(tmp_path / "ds" / info.file, **spec.shard_options(manifest))
        assert len(reader) == info.records
    with pytest.raises(ConfigError, match="no option"):
        spec.reader_options(no_such_option=1)


def test_detected_is_what_the_hooks_take(tmp_path, fmt, written):
    manifest, _ = written
    found = registry.detect(_shard(tmp_path, manifest))
    assert isinstance(found, Detected) and found.data_file.is_file()
