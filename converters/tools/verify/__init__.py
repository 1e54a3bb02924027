"""``fastdata verify PATH [--decode]``: read everything, report every problem with its place.

By what each module checks:

* :mod:`.command`: what is at ``PATH`` (a dataset, ``OUT/train`` + ``OUT/val``,
  one shard), the summary line and the exit status. A damaged or edited
  manifest (not JSON, unknown fields, its checksum) is a problem found
  (exit 1), as a damaged shard is; a path that is missing or of no known
  format, an unfinished conversion or a manifest of a newer version is an
  error (exit 2, one line), as for ``inspect``.
* :mod:`.dataset`: a dataset directory: each shard, every other file the
  manifest lists (indexes, record checksums, the DALI index, the list of
  source files) against its recorded digest, int labels against the classes,
  the format's ``check_finalized`` hook (RecordIO's DALI index covers every
  record), and one source file named per record.
* :mod:`.shard`: one shard opened once: exists, size (a truncated one is a
  :class:`.findings.Cut`), digest, index and checksum file, record count.
* :mod:`.digests`: a listed file read once for its digest and its use; a
  data file's digest over the mapping its records are then read through.
* :mod:`.openers`: picklable openers for a truncated shard (the records it
  still holds) and for a shard with a checksum file.
* :mod:`.records`: every record read (and, with ``--decode``, decoded in
  worker processes), findings back in task order.
* :mod:`.report`: those findings printed shard by shard (a truncated shard's
  lost records as one line).
* :mod:`.single`: one shard file, fastdata's or another tool's (the format's
  ``verify`` hook, then every record).
* :mod:`.findings`: the counts, a :class:`.findings.Note` (a file's problem),
  a :class:`.findings.RecordProblem` (a record's) and how each is printed.

Each shard is opened once and its bytes read once, shard after shard, so the
pages a digest pulled in are still cached when the records are read, even
for a dataset larger than memory.
"""
