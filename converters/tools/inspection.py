"""``fastdata inspect PATH``: what a dataset directory or a shard holds, without reading it all."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from fastdata.formats import registry
from fastdata.formats.hooks import json_label
from fastdata.formats.images import image_kind

from .probe import (
    DATASET,
    SPLITS,
    Target,
    close_reader,
    identify,
    image_size,
    shard_opener,
)


def run(
    path: str, *, as_json: bool = False, records: int = 5, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Print a description of ``path``; returns 0, or 1 when a shard's file
    size differs from its manifest's (each such shard is named on stderr).
    Errors that stop the description raise FastDataError."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    report = describe(path, records=records)
    if as_json:
        print(json.dumps(report, indent=1, default=_jsonable), file=stdout)
    else:
        for line in _text(report):
            print(line, file=stdout)
    problems = _problems(report)
    for problem in problems:
        print(f"fastdata inspect: PROBLEM {problem}", file=stderr)
    return 1 if problems else 0


def _problems(report: dict[str, Any]) -> list[str]:
    if report["kind"] == SPLITS:
        return [p for sub in report["splits"].values() for p in _problems(sub)]
    return list(report.get("problems", []))


def describe(path: str, *, records: int = 5) -> dict[str, Any]:
    """A JSON-ready description of ``path`` (see :func:`run`)."""
    target = identify(path)
    if target.kind == SPLITS:
        return {
            "path": str(target.path),
            "kind": SPLITS,
            "format": target.format,
            "splits": {name: describe(str(d), records=records) for name, d in target.splits.items()},
        }
    if target.kind == DATASET:
        return _describe_dataset(target, records)
    return _describe_shard(target, records)


def _describe_dataset(target: Target, records: int) -> dict[str, Any]:
    m = target.manifest
    sizes = [size for _, size in m.shard_sizes(target.path)]
    shown: list[dict[str, Any]] = []
    for i, info in enumerate(m.shards):
        if len(shown) >= records:
            break
        if sizes[i] != info.bytes:
            continue  # its records cannot be trusted; the size problem is reported instead
        reader = shard_opener(target.path, m, i)()
        for j in range(min(len(reader), records - len(shown))):
            data, label = reader.sample(j)
            entry = {"shard": info.file, "position": j, "key": _key(reader, j), "label": json_label(label), "bytes": len(data)}
            if entry["key"] is None:
                del entry["key"]
            if isinstance(label, int) and 0 <= label < len(m.classes):
                entry["class"] = m.classes[label]
            shown.append(entry | _image(data))
        close_reader(reader)
    return {
        "path": str(target.path),
        "kind": DATASET,
        "format": m.format,
        "records": m.num_samples,
        "shards": [
            {"file": s.file, "records": s.records, "bytes": s.bytes, "file_bytes": size, "index": s.index}
            for s, size in zip(m.shards, sizes)
        ],
        "problems": [str(e) for e in m.size_problems(target.path)],
        "classes": m.classes,
        "label_base": m.label_base,
        "fastdata_version": m.fastdata_version,
        "extra": m.extra,
        "samples": shown,
    }


def _describe_shard(target: Target, records: int) -> dict[str, Any]:
    """One shard, described by its format's ``inspect`` hook."""
    report: dict[str, Any] = {"path": str(target.path), "kind": "shard", "format": target.format}
    if target.shard.compression:
        report["compression"] = target.shard.compression
    count, shown = registry.get(target.format).inspect(target.shard, records)
    report["records"] = count
    report["samples"] = [one.fields | (_image(one.image) if one.image is not None else {}) for one in shown]
    return report


def _key(reader: Any, j: int) -> Any:
    """The record's key where the format has one (RecordIO ``.idx`` key, LMDB key), else None."""
    if hasattr(reader, "key"):
        key = reader.key(j)
    elif hasattr(reader, "records") and hasattr(reader.records, "key"):
        key = reader.records.key(j)
    else:
        return None
    return key.decode("utf-8", "backslashreplace") if isinstance(key, bytes) else int(key)


def _image(data: bytes) -> dict[str, Any]:
    kind = image_kind(data)
    size = image_size(data) if kind != "?" else None
    out: dict[str, Any] = {"image_format": kind}
    if size is not None:
        out["width"], out["height"] = size
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _text(report: dict[str, Any], indent: str = "") -> list[str]:
    lines = []
    if report["kind"] == SPLITS:
        lines.append(f"{indent}{report['path']}: fastdata output with splits {', '.join(report['splits'])} ({report['format']})")
        for name, sub in report["splits"].items():
            lines.append(f"{indent}[{name}]")
            lines += _text(sub, indent + "  ")
        return lines
    if report["kind"] == DATASET:
        classes = report["classes"]
        lines.append(
            f"{indent}{report['path']}: fastdata dataset, format {report['format']}, {report['records']} records "
            f"in {len(report['shards'])} shard(s), {len(classes)} classes, label_base {report['label_base']}"
        )
        if classes:
            shown = ", ".join(f"{i}={c}" for i, c in enumerate(classes[:20]))
            lines.append(f"{indent}classes: {shown}{' ...' if len(classes) > 20 else ''}")
        # the first 10 shards, and any shard of the wrong size after them
        listed = [s for k, s in enumerate(report["shards"]) if k < 10 or s["file_bytes"] != s["bytes"]]
        for s in listed:
            index = f", index {s['index']}" if s["index"] else ""
            size = "missing" if s["file_bytes"] is None else f"{s['file_bytes']} bytes"
            wrong = f" -- WRONG SIZE: the manifest says {s['bytes']} bytes" if s["file_bytes"] != s["bytes"] else ""
            lines.append(f"{indent}  {s['file']}: {s['records']} records, {size}{index}{wrong}")
        if len(report["shards"]) > len(listed):
            lines.append(f"{indent}  ... {len(report['shards']) - len(listed)} more shards")
    else:
        comp = f", {report['compression']}-compressed" if report.get("compression") else ""
        lines.append(f"{indent}{report['path']}: {report['format']} file{comp}, {report['records']} records")
    if report["samples"]:
        lines.append(f"{indent}first {len(report['samples'])} record(s):")
        for entry in report["samples"]:
            lines.append(f"{indent}  " + ", ".join(f"{k}={_short(v)}" for k, v in entry.items()))
    return lines


def _short(value: Any) -> str:
    text = json.dumps(value, default=_jsonable, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."
