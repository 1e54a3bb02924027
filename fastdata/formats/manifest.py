"""``manifest.json``: the versioned description of a converted dataset directory.

It is written last, after every shard has its final name, so a directory with
a manifest is complete and one without is not.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import FormatError, ManifestError
from ._atomic import write_text_atomic
from .sample import ShardInfo

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1

#: ``extra`` keys whose value is the name of a file beside the shards that
#: fastdata wrote (a format's finalize hook or the converter): the DALI index,
#: the targets ``.npy``, the record-to-source-file list.
FILE_EXTRAS = ("dali_index", "targets", "sources")


@dataclasses.dataclass
class Manifest:
    """Everything a reader needs to open a dataset directory.

    Attributes:
        format: registry name (``"recordio"``, ``"tfrecord"``, ``"lmdb"``).
        shards: one :class:`ShardInfo` per shard, in sample order.
        classes: class names; ``classes[i]`` is the class of label ``i``.
        label_base: what the format stores for class 0 (TFRecord written in
            TensorFlow's ImageNet convention stores 1-based labels); readers
            subtract it so datasets return ``class_to_idx`` labels.
        extra: format- or tool-specific settings (e.g. the DALI index file).
    """

    format: str
    shards: list[ShardInfo]
    classes: list[str]
    label_base: int = 0
    fastdata_version: str = __version__
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def num_samples(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def files(self) -> list[str]:
        """Every file of the dataset but ``manifest.json``, relative to its
        directory: shards, their indexes and the files named in :data:`FILE_EXTRAS`."""
        return list(dict.fromkeys(self._shard_files())) + self.extra_files()

    def extra_files(self) -> list[str]:
        """The files named in :data:`FILE_EXTRAS` that are not also a shard or an index."""
        taken = set(self._shard_files())
        names = [self.extra[k] for k in FILE_EXTRAS if isinstance(self.extra.get(k), str)]
        return [n for n in dict.fromkeys(names) if n not in taken]

    def _shard_files(self) -> list[str]:
        return [s.file for s in self.shards] + [s.index for s in self.shards if s.index]

    def sources_file(self, directory: str | os.PathLike[str]) -> Path | None:
        """The converter's list of source files (``extra["sources"]``: line ``i``
        is the JSON string of the file sample ``i`` came from), or None."""
        name = self.extra.get("sources")
        return Path(directory) / name if isinstance(name, str) else None

    def shard_sizes(self, directory: str | os.PathLike[str]) -> list[tuple[Path, int | None]]:
        """``(data file, its size now)`` per shard, in manifest order; the size
        is None when the file is missing. The data file is the format's
        (an LMDB shard directory's ``data.mdb``), whose size the manifest records."""
        from .registry import get  # the registry imports this module

        spec = get(self.format)
        out = []
        for info in self.shards:
            path = spec.data_file(Path(directory) / info.file)
            try:
                out.append((path, path.stat().st_size))
            except OSError:
                out.append((path, None))
        return out

    def size_problems(self, directory: str | os.PathLike[str]) -> list[FormatError]:
        """One error per shard whose file is missing or not the manifest's size;
        each names the file, both sizes and the fix."""
        out = []
        for (path, size), info in zip(self.shard_sizes(directory), self.shards):
            if size == info.bytes:
                continue
            what = "is missing" if size is None else f"is {size} bytes but the manifest says {info.bytes}"
            out.append(
                FormatError(
                    f"shard {what} (truncated or changed after conversion)",
                    path=path,
                    hint=f"run `fastdata verify {os.fspath(directory)}` to check every shard, "
                    "and re-convert the dataset to repair it",
                )
            )
        return out

    def check_shard_sizes(self, directory: str | os.PathLike[str]) -> None:
        """Compare each shard file's size with the manifest's (one ``stat`` per shard).

        Raises:
            FormatError: the first shard that is missing, truncated or replaced
                (see :meth:`size_problems`), saying how many others are.
        """
        problems = self.size_problems(directory)
        if len(problems) == 1:
            raise problems[0]
        if problems:
            first = problems[0]
            raise FormatError(f"{first.reason}; {len(problems) - 1} other shard(s) differ too", path=first.path, hint=first.hint)

    def to_json(self) -> str:
        doc = {
            "manifest_version": MANIFEST_VERSION,
            "format": self.format,
            "fastdata_version": self.fastdata_version,
            "num_samples": self.num_samples,
            "classes": list(self.classes),
            "class_to_idx": self.class_to_idx,
            "label_base": self.label_base,
            "shards": [dataclasses.asdict(s) for s in self.shards],
            "extra": self.extra,
        }
        return json.dumps(doc, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, *, source: str = "manifest") -> Manifest:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{source}: not valid JSON ({exc}); re-run the conversion") from exc
        if not isinstance(doc, dict):
            raise ManifestError(f"{source}: expected a JSON object")
        if "manifest_version" not in doc:
            raise ManifestError(f"{source}: not a fastdata manifest (it has no manifest_version field)")
        version = doc.get("manifest_version")
        if version != MANIFEST_VERSION:
            raise ManifestError(
                f"{source}: manifest_version {version!r} is not supported by fastdata {__version__} "
                f"(it reads version {MANIFEST_VERSION}); upgrade fastdata or re-convert the dataset"
            )
        try:
            shards = [ShardInfo(**s) for s in doc["shards"]]
            m = cls(
                format=doc["format"],
                shards=shards,
                classes=list(doc["classes"]),
                label_base=int(doc.get("label_base", 0)),
                fastdata_version=doc.get("fastdata_version", "?"),
                extra=dict(doc.get("extra", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{source}: missing or malformed field ({exc!r}); re-run the conversion") from exc
        if "num_samples" in doc and doc["num_samples"] != m.num_samples:
            raise ManifestError(
                f"{source}: num_samples {doc['num_samples']} disagrees with the shard record counts ({m.num_samples})"
            )
        return m

    def write(self, directory: str | os.PathLike[str]) -> Path:
        path = Path(directory) / MANIFEST_NAME
        write_text_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> Manifest:
        path = Path(directory)
        if path.is_dir():
            path = path / MANIFEST_NAME
        if not path.is_file():
            raise ManifestError(
                f"{path}: no manifest; this is not a finished fastdata dataset directory "
                "(convert it with `fastdata convert`, or resume an interrupted conversion with --resume)"
            )
        return cls.from_json(path.read_text(encoding="utf-8"), source=str(path))


def source_at(sources_file: str | os.PathLike[str] | None, index: int) -> str | None:
    """Line ``index`` of a sources file (see :meth:`Manifest.sources_file`), or
    None when there is none. Reads up to that line: meant for error messages."""
    if sources_file is None or index < 0:
        return None
    try:
        with open(sources_file, encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i == index:
                    return str(json.loads(line))
    except (OSError, ValueError):
        pass  # only decoration for a message
    return None
