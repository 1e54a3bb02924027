"""Helpers for the converter tests: run the CLI in-process, read datasets back, build tiny folders."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
from fastdata.converters import cli
from fastdata.converters.tools.probe import shard_opener
from PIL import Image

from fastdata.formats.manifest import Manifest


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``fastdata ARGV`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def read_back(directory: Path) -> tuple[Manifest, list[tuple[bytes, object]]]:
    """Every (image bytes, label) of a dataset directory, in shard order."""
    m = Manifest.read(directory)
    samples = []
    for i in range(len(m.shards)):
        reader = shard_opener(directory, m, i)()
        samples += [reader.sample(j) for j in range(len(reader))]
    return m, samples


def tree(directory: Path) -> dict[str, bytes]:
    """relative path -> bytes of every file below ``directory``."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def rgb(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    assert img.mode == "RGB" or img.mode == "L"
    return np.asarray(img.convert("RGB"), dtype=np.int16)


def jpeg(index: int, size: tuple[int, int] = (24, 16), quality: int = 95) -> bytes:
    """A small JPEG whose colour encodes ``index`` (FFCV's trick: the payload names the sample)."""
    colour = ((index * 37) % 256, (index * 91) % 256, (index * 53) % 256)
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "JPEG", quality=quality)
    return out.getvalue()


def make_folder(root: Path, layout: dict[str, int]) -> dict[str, bytes]:
    """``{class: count}`` -> an ImageFolder of tiny JPEGs; returns relpath -> bytes."""
    files = {}
    n = 0
    for cls, count in layout.items():
        (root / cls).mkdir(parents=True, exist_ok=True)
        for k in range(count):
            data = jpeg(n)
            rel = f"{cls}/img_{k:03d}.jpg"
            (root / rel).write_bytes(data)
            files[rel] = data
            n += 1
    return files


def manifest_json(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


def flip_byte(path: Path, mask: int = 0xFF) -> None:
    """Damage ``path`` in place: the byte in its middle XORed with ``mask`` (same size, another CRC)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= mask
    path.write_bytes(bytes(data))
