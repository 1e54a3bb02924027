"""One shard of a dataset opened once for ``verify``, with what is checked
once per shard: its files exist, the data file's size and digest (over the
reader's own mapping, so the records read next find its pages in the page
cache), the digests of its index and checksum file (that one read once, for
its digest and for the CRCs the reader checks), and its record count."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

from fastdata.errors import FastDataError
from fastdata.formats import Manifest, checksums, registry

from ..probe import close_reader
from .digests import digest_note, read_listed, reader_matches
from .findings import Cut, Note, cannot_open
from .openers import open_surviving, sidecar_sums
from .records import Opened, ShardSource


def open_shard(spec: registry.FormatSpec, directory: Path, m: Manifest, sources: list[ShardSource], i: int) -> Opened:
    """Shard ``i`` of the dataset in ``directory`` opened, with its problems as a whole."""
    path = sources[i].path
    if not path.exists():
        return Opened(None, [Note(path, "shard listed in the manifest is missing: restore it or re-convert the dataset")])
    return _Shard(spec, directory, m, i, path).open()


class _Shard:
    """A shard that exists, being opened: what its size says (:attr:`cut`,
    or a note; :attr:`digest` is then not checked) and the notes found so far."""

    def __init__(self, spec: registry.FormatSpec, directory: Path, m: Manifest, i: int, path: Path) -> None:
        self.spec, self.directory, self.manifest, self.info, self.path = spec, directory, m, m.shards[i], path
        self.data_file = spec.data_file(path)
        self.size = self.data_file.stat().st_size if self.data_file.is_file() else -1
        self.notes: list[Note] = []
        self.cut: Cut | None = None
        self.digest: str | None = self.info.data_digest(spec.data_name)
        if 0 <= self.size < self.info.bytes:  # said once its records are read, with the ones that survive
            self.cut = Cut(self.data_file, self.size, self.info.bytes, self.info.records)
            self.digest = None
        elif self.size != self.info.bytes:
            self.notes.append(Note(
                self.data_file, f"size is {self.size} bytes, the manifest says {self.info.bytes}: the shard was "
                "replaced or appended to; restore it or re-convert the dataset",
            ))
            self.digest = None

    def open(self) -> Opened:
        options = self._options()
        crcs = self._checksums()
        reader, same = None, None
        try:
            opener = functools.partial(self.spec.open_shard, self.path, **options)
            if self.cut is not None:
                reader = open_surviving(opener, self.manifest.format, self.path, self.data_file)
            else:
                reader = opener()
            if self.digest is not None:
                same = reader_matches(reader, self.data_file, self.digest)
            n = len(reader)
        except (FastDataError, OSError) as exc:
            if reader is not None:
                close_reader(reader)
            if self.digest is not None and same is None:  # said even of a shard that will not open
                try:
                    same = checksums.matches(self.data_file, self.digest)
                except OSError:
                    pass
            return self._refused(exc, same)
        if same is False and self.digest is not None:
            self.notes.append(digest_note(self.data_file, self.digest))
        if crcs is not None and self.info.checksums and callable(use := getattr(reader, "use_checksums", None)):
            try:
                use(sidecar_sums(crcs, self.directory / self.info.checksums, n, max(self.size, 0), self.path,
                                 self.cut is not None))
            except FastDataError as exc:
                close_reader(reader)
                return Opened(None, [*self.notes, cannot_open(exc, self.path)], self.cut)
        if n != self.info.records and self.cut is None:  # a truncated shard's count is said with the records that survive
            self.notes.append(Note(self.path, f"holds {n} records, the manifest says {self.info.records}"))
        return Opened(reader, self.notes, self.cut)

    def _options(self) -> dict:
        """The format's options for this shard; its index, read once for its
        digest, is handed to a reader that takes one (parsed from these bytes)."""
        options = self.spec.shard_options(self.manifest)
        if self.info.index:
            data, problems = read_listed(self.directory, self.info.index, self.manifest.digest_of(self.info.index))
            self.notes += problems
            if data is not None and "index" in inspect.signature(self.spec.open_shard).parameters:
                options["index"] = checksums.FileBytes(self.directory / self.info.index, data)
        return options

    def _checksums(self) -> bytes | None:
        """The shard's checksum file, read once; None when it has none or it is damaged (it checks nothing then)."""
        if not self.info.checksums:
            return None
        crcs, problems = read_listed(self.directory, self.info.checksums, self.manifest.digest_of(self.info.checksums))
        self.notes += problems
        return None if problems else crcs

    def _refused(self, exc: BaseException, same: bool | None) -> Opened:
        if same is False and self.digest is not None:
            self.notes.append(digest_note(self.data_file, self.digest))
        return Opened(None, [*self.notes, cannot_open(exc, self.path)], self.cut)
