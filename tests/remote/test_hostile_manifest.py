"""A dataset's manifest is untrusted: every name it gives must stay inside the
dataset. Each hostile manifest below has a valid checksum (whoever writes a
manifest can recompute it) and is served from a local folder, nginx and an
S3 bucket; each must be refused with a ManifestError naming the field and
the name, with nothing written or removed outside the cache."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from remotekit import make_dataset, upload

import fastdata
from fastdata.errors import ManifestError
from fastdata.formats.manifest import MANIFEST_NAME, _checksum
from fastdata.formats.names import check_name, inside, name_problem
from fastdata.remote import RetryPolicy, localize

TOKEN = f"fastdata-hostile-{uuid.uuid4().hex[:8]}"  # every name aimed outside carries it
QUICK = RetryPolicy(total_seconds=5.0, first_delay=0.1, max_delay=0.5, timeout=3.0)
UP = "../" * 16


def _hostile(kind: str, target: Path) -> tuple[str, str, callable]:
    """(field named in the error, the name, how to put it into a manifest's JSON)."""
    def extra(key, name):
        return lambda doc: doc["extra"].__setitem__(key, name)

    def shard(field, name):
        return lambda doc: doc["shards"][0].__setitem__(field, name)

    def digest(name):
        return lambda doc: doc["digests"].__setitem__(name, "crc32c:00000000")

    outside = f"{target}/{TOKEN}-{kind}"
    return {
        "dotdot-extra": ("extra.sources", UP + outside.lstrip("/"), extra("sources", UP + outside.lstrip("/"))),
        "absolute-extra": ("extra.targets", outside, extra("targets", outside)),
        "percent-dots": ("extra.dali_index", f"%2e%2e/%2e%2e/{TOKEN}", extra("dali_index", f"%2e%2e/%2e%2e/{TOKEN}")),
        "backslash-index": ("shards[0].index", f"..\\..\\{TOKEN}", shard("index", f"..\\..\\{TOKEN}")),
        "nul-checksums": ("shards[0].checksums", f"{TOKEN}\x00.crc", shard("checksums", f"{TOKEN}\x00.crc")),
        "dotdot-shard": ("shards[0].file", f"sub/../../{TOKEN}", shard("file", f"sub/../../{TOKEN}")),
        "digest-key": ("digests", f"../{TOKEN}", digest(f"../{TOKEN}")),
        "drive": ("extra.sources", f"C:/{TOKEN}", extra("sources", f"C:/{TOKEN}")),
        "sizes-key": ("extra.sizes", f"/{TOKEN}", extra("sizes", {f"/{TOKEN}": 1})),
    }[kind]


KINDS = ["dotdot-extra", "absolute-extra", "percent-dots", "backslash-index", "nul-checksums", "dotdot-shard",
         "digest-key", "drive", "sizes-key"]


def _rewrite(directory: Path, change) -> None:
    """Apply ``change`` to the manifest's JSON and give it a valid checksum again."""
    path = directory / MANIFEST_NAME
    doc = json.loads(path.read_text())
    doc.pop("checksum")
    change(doc)
    doc["checksum"] = _checksum(doc)
    path.write_text(json.dumps(doc, indent=1))


def _writable_places(*roots: Path) -> set[str]:
    """Every path under ``roots`` (recursively) plus the top level of the
    machine's usual writable places: what a hostile write or delete would change."""
    seen = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            seen.update(os.path.join(dirpath, n) for n in dirnames + filenames)
    for top in ("/tmp", "/var/tmp", os.path.expanduser("~"), os.getcwd(), "/"):
        try:
            seen.update(os.path.join(top, n) for n in os.listdir(top) if TOKEN in n)
        except OSError:
            pass
    return seen


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A small valid RecordIO dataset to make hostile copies of."""
    root = tmp_path_factory.mktemp("clean")
    make_dataset(root / "ds", "recordio", n=12, shards=3)
    return root / "ds"


def _hostile_copy(clean: Path, where: Path, kind: str, target: Path) -> tuple[Path, str, str]:
    copy = where / kind
    shutil.copytree(clean, copy)
    field, name, change = _hostile(kind, target)
    _rewrite(copy, change)
    return copy, field, name


def _expect_refused(call, field: str, name: str, watched: tuple[Path, ...], cache: Path | None) -> None:
    before = _writable_places(*watched)
    with pytest.raises(ManifestError) as caught:
        call()
    message = str(caught.value)
    assert field in message and repr(name) in message, message
    after = _writable_places(*watched)
    assert after == before, f"changed outside the cache: {sorted(after ^ before)}"
    if cache is not None:  # and nothing of the hostile dataset was fetched into the cache either
        assert not [p for p in cache.rglob("*") if p.is_file() and not p.name.endswith((".lock", ".json", ".jsonl"))]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_local_manifest_is_refused(clean, tmp_path, kind):
    target = tmp_path / "outside"
    target.mkdir()
    copy, field, name = _hostile_copy(clean, tmp_path, kind, target)
    _expect_refused(lambda: fastdata.open_dataset(copy, decode=False), field, name, (tmp_path,), None)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_manifest_over_http_is_refused(clean, nginx, tmp_path, kind):
    target = tmp_path / "outside"
    target.mkdir()
    site = f"hostile-{uuid.uuid4().hex[:6]}"
    copy, field, name = _hostile_copy(clean, nginx.root / site, kind, target)
    cache = tmp_path / "cache"
    _expect_refused(lambda: localize(f"{nginx.url}/{site}/{kind}", cache_dir=cache, retry=QUICK), field, name,
                    (tmp_path, nginx.root), cache)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_manifest_in_a_bucket_is_refused(clean, s3, tmp_path, kind):
    target = tmp_path / "outside"
    target.mkdir()
    copy, field, name = _hostile_copy(clean, tmp_path / "local", kind, target)
    fs = s3.client()
    if not fs.exists("fastdata-hostile"):
        fs.mkdir("fastdata-hostile")
    prefix = f"fastdata-hostile/{kind}-{uuid.uuid4().hex[:6]}"
    upload(fs, copy, prefix)
    cache = tmp_path / "cache"
    _expect_refused(lambda: localize(f"s3://{prefix}", cache_dir=cache, retry=QUICK), field, name,
                    (tmp_path,), cache)


def _serve(clean: Path, nginx, name: str) -> str:
    shutil.copytree(clean, nginx.root / name)
    return f"{nginx.url}/{name}"


def test_a_symlink_in_the_cache_is_not_followed_out(clean, nginx, tmp_path):
    """A link left in the cache where a shard or a download will go: the shard
    is refused (ManifestError) and the file the link points at keeps its bytes."""
    url = _serve(clean, nginx, f"links-{uuid.uuid4().hex[:6]}")
    cache = tmp_path / "cache"
    directory = Path(localize(url, cache_dir=cache, retry=QUICK))
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    (directory / "shard-00000.rec").symlink_to(victim)
    (directory / "shard-00001.rec.partial").symlink_to(victim)  # a download must not write through it
    with pytest.raises(ManifestError, match=r"shard-00000\.rec.*outside the dataset directory"):
        fastdata.RecordIODataset(str(directory), decode=False)
    (directory / "shard-00000.rec").unlink()
    ds = fastdata.RecordIODataset(str(directory), decode=False)
    counts = [s.records for s in fastdata.formats.manifest.Manifest.read(directory).shards]
    assert ds[counts[0]][0]  # shard 1: its .partial link was replaced by a real download
    assert victim.read_text() == "the user's file"
    assert not (directory / "shard-00001.rec.partial").is_symlink()
    assert not (directory / "shard-00000.rec").exists()  # shard 0 was never needed


def test_a_changed_manifest_does_not_delete_through_a_link(clean, nginx, tmp_path):
    """The cache deletes the old manifest's files when it changes; a link where
    one of them was must not take a user's file with it."""
    name = f"changed-{uuid.uuid4().hex[:6]}"
    url = _serve(clean, nginx, name)
    cache = tmp_path / "cache"
    directory = Path(localize(url, cache_dir=cache, retry=QUICK))
    extras = fastdata.formats.manifest.Manifest.read(directory).extra_files()
    assert extras, "the test needs a dataset with an extra file (RecordIO's DALI index)"
    sources = extras[0]
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (directory / sources).unlink()
    (directory / sources).symlink_to(victim)
    _rewrite(nginx.root / name, lambda doc: doc["extra"].__setitem__("note", "changed"))
    localize(url, cache_dir=cache, retry=QUICK)
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("name", ["a", "shard-00000.rec", "train/shard-00001.idx", "lmdb-0/data.mdb", "x.y-z_1"])
def test_plain_names_pass(name, tmp_path):
    assert name_problem(name) is None
    assert check_name(name, "f", "m") == name
    assert inside(tmp_path, name) == tmp_path / name


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "a\x00b", "C:x",
                                  "%2e%2e/x", "a?b", "a#b", "a\nb", 7, None])
def test_hostile_names_fail(name):
    assert name_problem(name) is not None
    with pytest.raises(ManifestError, match="not a file inside the dataset"):
        check_name(name, "extra.sources", "manifest.json")


def test_inside_follows_links_in_the_directory_too(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "ds" / "sub").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ManifestError, match="outside the dataset directory"):
        inside(tmp_path / "ds", "sub/x")
    link = tmp_path / "link-to-ds"
    link.symlink_to(tmp_path / "ds")  # the dataset directory itself may be a link
    assert inside(link, "x") == link / "x"


def test_an_entry_to_delete_may_be_a_link_but_not_behind_one(tmp_path):
    from fastdata.formats.names import entry_inside

    (tmp_path / "ds").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "ds" / "sub").symlink_to(tmp_path / "elsewhere")
    assert entry_inside(tmp_path / "ds", "sub") == tmp_path / "ds" / "sub"  # the link itself
    with pytest.raises(ManifestError, match="outside the dataset directory"):
        entry_inside(tmp_path / "ds", "sub/x")


def test_a_manifest_that_is_not_text_is_refused_by_name(clean, nginx, tmp_path):
    site = f"binary-{uuid.uuid4().hex[:6]}"
    shutil.copytree(clean, nginx.root / site)
    (nginx.root / site / MANIFEST_NAME).write_bytes(b'{"manifest_version": 2, \xff\xfe}')
    with pytest.raises(ManifestError, match=rf"{site}/manifest.json: not UTF-8 text"):
        localize(f"{nginx.url}/{site}", cache_dir=tmp_path / "cache", retry=QUICK)
