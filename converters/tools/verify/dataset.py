"""``verify`` of a dataset directory: every shard (:mod:`.shard`), every
other file the manifest lists (indexes, record checksums, the DALI index, the
list of source files) against its recorded digest, every record (:mod:`.report`),
the list of source files against the record count, and what the format's
``finalize`` wrote (its ``check_finalized`` hook)."""

from __future__ import annotations

import functools
import itertools

from fastdata.formats import registry

from ..probe import Target, shard_opener
from .digests import read_listed
from .findings import Findings
from .openers import open_listed, open_surviving, shorter
from .records import ShardSource, SourceFiles
from .report import check_all
from .shard import open_shard

CLASSES_SHOWN = 20  # classes named in the per-class line


def verify_dataset(target: Target, findings: Findings) -> None:
    m, directory = target.manifest, target.path
    spec = registry.get(m.format)
    starts = list(itertools.accumulate((s.records for s in m.shards), initial=0))  # first record of each shard
    sources = _sources(target)
    findings.shards += len(m.shards)
    findings.listed += starts[-1]
    source_files = _check_listed_files(target, findings)
    prepare = functools.partial(open_shard, spec, directory, m, sources)
    labels = check_all(sources, prepare, m.num_samples, findings, m.classes, lambda k, j: source_files.at(starts[k] + j))
    if source_files.path is not None and (problem := source_files.problem(m.num_samples)):
        findings.problem(source_files.path, problem)
    for where, problem in spec.check_finalized(directory, m) if spec.check_finalized else ():
        findings.problem(where, problem)
    if not findings.quiet and m.classes:
        shown = ", ".join(f"{c} {labels.get(k, 0)}" for k, c in enumerate(m.classes[:CLASSES_SHOWN]))
        more = " ..." if len(m.classes) > CLASSES_SHOWN else ""
        print(f"fastdata verify: {directory}: per class: {shown}{more}", file=findings.stdout)


def _sources(target: Target) -> list[ShardSource]:
    """Each shard with the opener a ``--decode`` worker calls: one that reads
    what a truncated shard still holds, and checks its checksum file, as
    :func:`.open_shard` does in this process."""
    m, directory = target.manifest, target.path
    spec = registry.get(m.format)
    sources = []
    for i, info in enumerate(m.shards):
        opener = shard_opener(directory, m, i)
        data_file = spec.data_file(directory / info.file)
        cut = shorter(data_file, info.bytes)
        if cut:
            opener = functools.partial(open_surviving, opener, m.format, directory / info.file, data_file)
        if info.checksums:  # workers load it themselves; this process reads it once, in open_shard
            opener = functools.partial(
                open_listed, opener, directory / info.checksums, m.digest_of(info.checksums),
                data_file, directory / info.file, cut,
            )
        sources.append(ShardSource(directory / info.file, opener))
    return sources


def _check_listed_files(target: Target, findings: Findings) -> SourceFiles:
    """Check the digest of each file the manifest lists beside the shards;
    returns the list of source files (its bytes kept when read here)."""
    m, directory = target.manifest, target.path
    own_checks = {m.extra.get("sources"), m.extra.get("dali_index")}  # their absence is reported later
    source_files = SourceFiles(m.sources_file(directory))
    for name in m.extra_files():
        if (directory / name).is_file() or name not in own_checks:
            data, problems = read_listed(directory, name, m.digests.get(name))
            for note in problems:
                findings.note(note)
            if name == m.extra.get("sources") and data is not None:
                source_files.data = data  # read once, for its digest and its names
    return source_files
