"""``fastdata bench``'s conversion baseline is im2rec --pass-through's work, byte for byte."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # fastdata.bench imports it

from fastdata.bench.suite import _raw_recordio_append  # noqa: E402
from fastdata.formats.recordio.irheader import IRHeader, pack  # noqa: E402
from fastdata.formats.recordio.writer import Writer  # noqa: E402


def test_the_plain_loop_writes_what_the_recordio_writer_writes(small_folder, tmp_path):
    files = sorted(str(p) for p in small_folder.rglob("*.jpg"))[:5]
    magic = tmp_path / "magic.jpg"  # payloads holding the magic word, aligned and not, are split as dmlc does
    magic.write_bytes(b"\xff\xd8\0\0" + b"\x0a\x23\xd7\xce" * 3 + b"xx\x0a\x23\xd7\xce\xff\xd9")
    files.append(str(magic))
    _raw_recordio_append(files, tmp_path / "a.rec", tmp_path / "a.idx")
    with Writer(tmp_path / "b.rec", tmp_path / "b.idx") as w:
        for key, path in enumerate(files):
            w.write(pack(IRHeader(0, 0.0, key, 0), open(path, "rb").read()), key=key)
    assert (tmp_path / "a.rec").read_bytes() == (tmp_path / "b.rec").read_bytes()
    assert (tmp_path / "a.idx").read_text() == (tmp_path / "b.idx").read_text()
