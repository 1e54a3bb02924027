"""``fastdata convert URL OUT``: an image folder in object storage (here a
``file://`` URL, the same code path as ``s3://`` through fsspec) converts to
the bytes of the same folder on disk; a re-run fetches only what is missing;
a hostile listing writes nothing outside the copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastdata.bench.default_data import default_dataset
from fastdata.converters.cli import main
from fastdata.converters.remote_source import fetch_source, list_source, source_dir
from fastdata.errors import ConfigError
from fastdata.remote.store import Store

CONVERT = ["--format", "recordio", "--shards", "3", "--workers", "1", "-q"]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where the source copy goes
    return default_dataset(24, root=tmp_path / "photos")


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_url_source_converts_to_the_bytes_of_the_folder(folder, tmp_path):
    assert main(["convert", str(folder), str(tmp_path / "from-disk"), *CONVERT]) == 0
    assert main(["convert", folder.as_uri(), str(tmp_path / "from-url"), *CONVERT]) == 0
    disk, url = _files(tmp_path / "from-disk"), _files(tmp_path / "from-url")
    assert disk.keys() == url.keys()
    # the shards and indexes are the same bytes; the list of sources names the objects' URLs
    assert [n for n in disk if disk[n] != url[n]] == ["manifest.json", "sources.jsonl"]
    source = json.loads(url["manifest.json"])["extra"]["converter"]["source"]
    assert source["url"] == folder.as_uri()
    listed = [json.loads(line) for line in url["sources.jsonl"].decode().splitlines()]
    assert listed == [folder.as_uri() + p[len(str(folder)):] for p in map(json.loads, disk["sources.jsonl"].decode().splitlines())]
    assert not source_dir(folder.as_uri()).exists()  # the copy is removed once the conversion finished
    assert main(["verify", str(tmp_path / "from-url"), "-q"]) == 0


def test_a_skipped_file_is_named_by_its_url_not_the_local_copy(folder, tmp_path, capsys):
    damaged = sorted(folder.rglob("*.jpg"))[3]
    damaged.write_bytes(b"not a JPEG")
    capsys.readouterr()
    assert main(["convert", folder.as_uri(), str(tmp_path / "out"), *CONVERT]) == 1  # shards written, a file skipped
    err = capsys.readouterr().err
    assert f"  {folder.as_uri()}/{damaged.relative_to(folder).as_posix()}: " in err
    assert str(source_dir(folder.as_uri())) not in err


def test_a_second_fetch_downloads_only_what_is_missing(folder, monkeypatch):
    fetched = []
    real = Store.download
    monkeypatch.setattr(Store, "download", lambda self, name, local: (fetched.append(name), real(self, name, local)))
    local = fetch_source(folder.as_uri(), quiet=True)
    first = len(fetched)
    assert first == sum(1 for p in folder.rglob("*") if p.is_file())
    victim = sorted(p for p in local.rglob("*.jpg"))[0]
    victim.unlink()
    fetch_source(folder.as_uri(), quiet=True)
    assert fetched[first:] == [victim.relative_to(local).as_posix()]


@pytest.mark.parametrize("name", ["../../outside.jpg", "/etc/outside.jpg", "a/../../outside.jpg"])
@pytest.mark.parametrize("lay_out", [fetch_source, list_source], ids=["fetched", "listed"])
def test_an_object_named_outside_the_folder_is_refused(folder, tmp_path, monkeypatch, name, lay_out):
    monkeypatch.setattr(Store, "listing", lambda self: {"cats/a.jpg": 3, name: 3})
    monkeypatch.setattr(Store, "download", lambda self, n, local: pytest.fail(f"downloaded {n}"))
    with pytest.raises(ConfigError, match=r"object .*outside\.jpg.* not a plain relative name"):
        lay_out(folder.as_uri(), quiet=True)
    assert not list(tmp_path.rglob("outside.jpg"))


def test_a_listing_holds_each_objects_size_and_no_byte(folder, monkeypatch):
    monkeypatch.setattr(Store, "download", lambda self, n, local: pytest.fail(f"downloaded {n}"))
    local = list_source(folder.as_uri(), quiet=True)
    objects = {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*") if p.is_file()}
    listed = {p.relative_to(local).as_posix(): p for p in local.rglob("*") if p.is_file()}
    assert {n: p.stat().st_size for n, p in listed.items()} == objects
    assert all(p.read_bytes().count(0) == p.stat().st_size for p in listed.values())  # sizes only
    assert local != source_dir(folder.as_uri())  # never taken for a download


def test_an_empty_url_says_so(folder, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["convert", empty.as_uri(), str(tmp_path / "out"), *CONVERT]) == 2
    assert "no objects there" in capsys.readouterr().err


def test_a_task_reads_a_listed_object_from_the_bucket_and_skips_one_gone_since(folder, tmp_path):
    import shutil

    from fastdata.converters.conversion.work import read_item, use_source
    from fastdata.converters.planning.scan import SkippedFile

    bucket = tmp_path / "bucket"
    shutil.copytree(folder, bucket)
    local = list_source(bucket.as_uri(), quiet=True)
    kept, gone = sorted(p.relative_to(bucket).as_posix() for p in bucket.rglob("*.jpg"))[:2]
    (bucket / gone).unlink()
    use_source((str(local), bucket.as_uri()))
    try:
        assert read_item(str(local / kept)) == (bucket / kept).read_bytes()  # the object, not the sparse stand-in
        with pytest.raises(SkippedFile) as caught:
            read_item(str(local / gone))
        assert caught.value.path == f"{bucket.as_uri()}/{gone}" and "gone from the bucket" in caught.value.reason
    finally:
        use_source(None)
    assert read_item(str(local / kept)) == b"\0" * (bucket / kept).stat().st_size  # a plain file again
