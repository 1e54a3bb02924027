"""An image that does not decode at training time is named by shard, record and,
when the converter listed it (``sources.jsonl``), the file it was converted
from -- in map-style datasets and streams, raised or warned, every format."""

from __future__ import annotations

import io
import json
import re

import pytest
from PIL import Image

from fastdata.datasets import FormatDataset, FormatStream
from fastdata.errors import DecodeError
from fastdata.formats import Sample, registry
from fastdata.formats.dataset_writer import finish_dataset, shard_name

BROKEN = 2  # the record whose image does not decode


def _jpeg(i: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(out, "JPEG")
    return out.getvalue()


def _source(i: int) -> str:
    return f"/photos/cls/img_{i}.jpg"


def _write(directory, fmt: str, *, sources: bool):
    directory.mkdir()
    spec = registry.get(fmt)
    # a JPEG signature and then nothing a decoder can use: intact framing, undecodable image
    images = [_jpeg(i) if i != BROKEN else b"\xff\xd8\xff\xe0" + b"\x00" * 40 for i in range(4)]
    info = spec.write_shard(directory / shard_name(fmt, 0), [Sample(image=img, label=0, id=i) for i, img in enumerate(images)])
    extra = {}
    if sources:
        (directory / "sources.jsonl").write_text("".join(json.dumps(_source(i)) + "\n" for i in range(4)))
        extra["sources"] = "sources.jsonl"
    finish_dataset(directory, fmt, [info], ["cls"], extra=extra)
    return directory / info.file


def _stream(directory, **kwargs):
    return list(FormatStream(directory, shuffle=False, rank=0, world_size=1, **kwargs))


@pytest.mark.parametrize("fmt", registry.names())
def test_a_decode_error_names_the_source_file(tmp_path, fmt):
    shard = _write(tmp_path / "ds", fmt, sources=True)
    where = rf"{re.escape(str(shard))} record {BROKEN}.*\(source file {re.escape(_source(BROKEN))}\)"
    ds = FormatDataset(tmp_path / "ds")
    assert ds[BROKEN - 1][1] == 0  # the others decode
    with pytest.raises(DecodeError, match=where):
        ds[BROKEN]
    with pytest.raises(DecodeError, match=where):
        _stream(tmp_path / "ds")
    with pytest.warns(RuntimeWarning, match=where):
        assert len(_stream(tmp_path / "ds", on_error="warn")) == 3
    with pytest.warns(RuntimeWarning, match=where):
        assert FormatDataset(tmp_path / "ds", on_error="warn")[BROKEN] is not None


@pytest.mark.parametrize("fmt", registry.names())
def test_without_a_list_of_sources_the_error_names_shard_and_record(tmp_path, fmt):
    shard = _write(tmp_path / "ds", fmt, sources=False)
    for read in (lambda: FormatDataset(tmp_path / "ds")[BROKEN], lambda: _stream(tmp_path / "ds")):
        with pytest.raises(DecodeError, match=rf"{re.escape(str(shard))} record {BROKEN}") as caught:
            read()
        assert "source file" not in str(caught.value)
