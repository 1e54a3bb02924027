"""The plain im2rec loop (``fastdata bench``'s and ``benchmarks/convert_scaling.py``'s conversion
baseline) is im2rec --pass-through's work, byte for byte."""

from __future__ import annotations

from fastdata.bench import plain_recordio
from fastdata.formats.recordio.irheader import IRHeader, pack
from fastdata.formats.recordio.writer import Writer


def test_the_plain_loop_writes_what_the_recordio_writer_writes(small_folder, tmp_path):
    files = sorted(str(p) for p in small_folder.rglob("*.jpg"))[:5]
    magic = tmp_path / "magic.jpg"  # payloads holding the magic word, aligned and not, are split as dmlc does
    magic.write_bytes(b"\xff\xd8\0\0" + b"\x0a\x23\xd7\xce" * 3 + b"xx\x0a\x23\xd7\xce\xff\xd9")
    files.append(str(magic))
    pairs = [(path, float(n % 3)) for n, path in enumerate(files)]
    first = 7  # the key of the first record: a forked part of the loop starts where the one before it stopped
    assert plain_recordio.write(pairs, tmp_path / "a.rec", tmp_path / "a.idx", first_key=first) == len(files)
    with Writer(tmp_path / "b.rec", tmp_path / "b.idx") as w:
        for key, (path, label) in enumerate(pairs, first):
            w.write(pack(IRHeader(0, label, key, 0), open(path, "rb").read()), key=key)
    assert (tmp_path / "a.rec").read_bytes() == (tmp_path / "b.rec").read_bytes()
    assert (tmp_path / "a.idx").read_text() == (tmp_path / "b.idx").read_text()
