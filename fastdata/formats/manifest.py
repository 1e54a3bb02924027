"""``manifest.json``: the versioned description of a converted dataset directory.

It is written last, after every shard has its final name, so a directory with
a manifest is complete and one without is not.

The size of every small file it lists (each shard's index and checksum file,
the :data:`FILE_EXTRAS` files) is recorded under ``extra["sizes"]``
(:data:`SIZES_EXTRA`), so a reader of a remote dataset downloads each with
one GET, checked against that size and its digest, without asking the
server for its size first. The sizes live in ``extra`` rather than in a new
field or a new ``manifest_version`` on purpose: a fastdata that predates them
refuses unknown top-level and shard fields and unknown versions, but takes
any ``extra`` key, so it still reads a dataset written with sizes; the
manifest's checksum covers ``extra`` like the rest. A manifest without them
(version 1, or version 2 written before them) is read as before, and a
remote reader then asks the server for each small file's size.
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
from .names import check_name, inside
from .sample import ShardInfo
from .table import spec

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 2
"""Version 2 added the manifest's own ``checksum``, per-file ``digests`` and
the shards' checksum files; version 1 manifests (sha256 per shard, no
checksum of their own) are still read and verified."""
READS_VERSIONS = (1, 2)
_FIELDS = frozenset((
    "manifest_version", "format", "fastdata_version", "num_samples", "classes", "class_to_idx",
    "label_base", "shards", "extra", "digests", "checksum",
))

#: ``extra`` keys whose value is the name of a file beside the shards that
#: fastdata wrote (a format's finalize hook or the converter): the DALI index,
#: the targets ``.npy``, the record-to-source-file list.
FILE_EXTRAS = ("dali_index", "targets", "sources")

#: ``extra`` key: ``{file: bytes}`` of every file :meth:`Manifest.files` lists
#: but the shards' data files (whose size is ``ShardInfo.bytes``); see the module doc.
SIZES_EXTRA = "sizes"


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
        digests: ``{file: "crc32c:..."}`` of the files named in ``extra``
            (:data:`FILE_EXTRAS`), filled in by :meth:`write`; each shard's
            files have theirs in its :class:`ShardInfo`.

    The JSON also holds ``checksum``: the CRC32C of everything else in it
    (keys sorted, compact), checked by :meth:`from_json`, so no field of a
    manifest (classes, label base, shards, extra...) changes unnoticed.
    """

    format: str
    shards: list[ShardInfo]
    classes: list[str]
    label_base: int = 0
    fastdata_version: str = __version__
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    digests: dict[str, str] = dataclasses.field(default_factory=dict)

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
        return (
            [s.file for s in self.shards]
            + [s.index for s in self.shards if s.index]
            + [s.checksums for s in self.shards if s.checksums]
        )

    def size_of(self, name: str) -> int | None:
        """The recorded size in bytes of the small file ``name`` (an index, a
        checksum file, a :data:`FILE_EXTRAS` file), or None when the manifest
        does not record it (it predates :data:`SIZES_EXTRA`)."""
        sizes = self.extra.get(SIZES_EXTRA)
        size = sizes.get(name) if isinstance(sizes, dict) else None
        return size if type(size) is int else None

    def digest_of(self, name: str) -> str | None:
        """The recorded digest of file ``name`` (relative to the directory), or None."""
        if name in self.digests:
            return self.digests[name]
        for info in self.shards:
            if name in info.digests:
                return info.digests[name]
        return None

    def sources_file(self, directory: str | os.PathLike[str]) -> Path | None:
        """The converter's list of source files (``extra["sources"]``: line ``i``
        is the JSON string of the file sample ``i`` came from), or None."""
        name = self.extra.get("sources")
        return self.path_of(directory, name) if isinstance(name, str) else None

    def path_of(self, directory: str | os.PathLike[str], name: str) -> Path:
        """``directory / name`` for a name this manifest gives, refused when it
        resolves outside ``directory`` (see :func:`fastdata.formats.names.inside`)."""
        return inside(directory, name)

    def shard_sizes(self, directory: str | os.PathLike[str]) -> list[tuple[Path, int | None]]:
        """``(data file, its size now)`` per shard, in manifest order; the size
        is None when the file is missing. The data file is the format's
        (an LMDB shard directory's ``data.mdb``), whose size the manifest records."""
        data_file = spec(self.format).data_file
        out: list[tuple[Path, int | None]] = []
        for info in self.shards:
            path = self.path_of(directory, data_file(Path(info.file)).as_posix())
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
            "digests": self.digests,
        }
        doc["checksum"] = _checksum(doc)
        return json.dumps(doc, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "manifest") -> Manifest:
        """Parse and check a manifest's text (or bytes).

        Raises:
            ManifestError: naming ``source``: not UTF-8, not JSON, not a
                manifest, a version this fastdata does not read, a field of
                the wrong type, or content that does not match its checksum.
        """
        doc = _document(text, source)
        try:
            m = cls(
                format=_typed(doc["format"], str, "format"),
                shards=[_shard(s) for s in _typed(doc["shards"], list, "shards")],
                classes=[_typed(c, str, "classes[]") for c in _typed(doc["classes"], list, "classes")],
                label_base=_typed(doc.get("label_base", 0), int, "label_base"),
                fastdata_version=str(doc.get("fastdata_version", "?")),
                extra=_typed(doc.get("extra", {}), dict, "extra"),
                digests=_typed(doc.get("digests", {}), dict, "digests"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{source}: missing or malformed field ({exc}); {_FIX}", damaged=True) from None
        _check_totals(m, doc, source)
        m.check_names(source)
        return m

    def check_names(self, source: str = "manifest") -> None:
        """Every file name this manifest gives is a plain relative name inside
        the dataset (see :mod:`fastdata.formats.names`).

        Raises:
            ManifestError: naming ``source``, the field and the name.
        """
        for i, info in enumerate(self.shards):
            for field in ("file", "index", "checksums"):
                name = getattr(info, field)
                if name is not None or field == "file":
                    check_name(name, f"shards[{i}].{field}", source)
            for name in info.digests:
                check_name(name, f"shards[{i}].digests", source)
        for key in FILE_EXTRAS:
            if key in self.extra and self.extra[key] is not None:
                check_name(self.extra[key], f"extra.{key}", source)
        for name in self.digests:
            check_name(name, "digests", source)
        sizes = self.extra.get("sizes")
        for name in sizes if isinstance(sizes, dict) else ():
            check_name(name, "extra.sizes", source)

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``manifest.json`` into ``directory`` (atomically), after
        recording the digest of each file named in ``extra`` and the size of
        every small file (:data:`SIZES_EXTRA`)."""
        from .checksums import file_digest

        directory = Path(directory)
        self.digests = {n: file_digest(directory / n) for n in self.extra_files() if (directory / n).is_file()}
        data = {s.file for s in self.shards}
        small = [n for n in self.files() if n not in data and (directory / n).is_file()]
        self.extra.pop(SIZES_EXTRA, None)
        if small:
            self.extra[SIZES_EXTRA] = {n: (directory / n).stat().st_size for n in small}
        path = directory / MANIFEST_NAME
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
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ManifestError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        return cls.from_json(data, source=str(path))


_FIX = "restore it from a copy of the dataset or re-run the conversion"


def _checksum(doc: dict[str, Any]) -> str:
    """CRC32C of ``doc`` as compact JSON with sorted keys: independent of layout."""
    from .crc import crc32c

    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"crc32c:{crc32c(canonical.encode('ascii')):08x}"


def _typed(value: Any, kind: type, name: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{name} should be {kind.__name__}, got {type(value).__name__}")
    return value


def _shard(doc: Any) -> ShardInfo:
    doc = _typed(doc, dict, "shards[]")
    info = ShardInfo(**doc)
    _typed(info.file, str, "shards[].file")
    for name in ("records", "bytes"):
        if _typed(getattr(info, name), int, f"shards[].{name}") < 0:
            raise ValueError(f"shards[].{name} is negative")
    for name in ("sha256", "index", "checksums"):
        if getattr(info, name) is not None:
            _typed(getattr(info, name), str, f"shards[].{name}")
    _typed(info.digests, dict, "shards[].digests")
    return info  # its names are checked with the rest by Manifest.check_names


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


def _document(text: str | bytes, source: str) -> dict[str, Any]:
    """A manifest's text parsed into its JSON object, its version supported,
    its fields known and its checksum matched (the checksum field removed)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{source}: not UTF-8 text (byte {exc.start} is damaged); {_FIX}", damaged=True) from None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"{source}: not valid JSON ({exc}); {_FIX}", damaged=True) from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: expected a JSON object; {_FIX}", damaged=True)
    if "manifest_version" not in doc:
        raise ManifestError(f"{source}: not a fastdata manifest (it has no manifest_version field)", damaged=True)
    version = doc.get("manifest_version")
    if type(version) is not int or version not in READS_VERSIONS:
        raise ManifestError(
            f"{source}: manifest_version {version!r} is not supported by fastdata {__version__} "
            f"(it reads versions {', '.join(map(str, READS_VERSIONS))}); upgrade fastdata or re-convert the dataset"
        )
    unknown = sorted(set(doc) - _FIELDS)
    if unknown:
        raise ManifestError(f"{source}: unknown field(s) {', '.join(map(repr, unknown))} (damaged?); {_FIX}", damaged=True)
    if "checksum" in doc or version >= 2:
        stored = doc.pop("checksum", None)
        if stored != _checksum(doc):
            raise ManifestError(
                f"{source}: its content does not match its checksum ({stored!r}): the manifest was edited or "
                f"damaged after conversion; {_FIX}",
                damaged=True,
            )
    return doc


def _check_totals(m: Manifest, doc: dict[str, Any], source: str) -> None:
    """The totals a manifest repeats (sizes, num_samples, class_to_idx) agree
    with what it was built from."""
    sizes = m.extra.get(SIZES_EXTRA, {})
    if not isinstance(sizes, dict) or any(type(v) is not int or v < 0 for v in sizes.values()):
        raise ManifestError(f"{source}: extra.{SIZES_EXTRA} should map file names to byte counts; {_FIX}",
                            damaged=True)
    if "num_samples" in doc and doc["num_samples"] != m.num_samples:
        raise ManifestError(
            f"{source}: num_samples {doc['num_samples']} disagrees with the shard record counts ({m.num_samples})",
            damaged=True,
        )
    if "class_to_idx" in doc and doc["class_to_idx"] != m.class_to_idx:
        raise ManifestError(f"{source}: class_to_idx disagrees with classes; {_FIX}", damaged=True)
