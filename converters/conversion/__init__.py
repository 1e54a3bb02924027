"""Running ``fastdata convert`` and ``fastdata merge``: :mod:`.convert` (the
conversion as a whole, from a :class:`~.request.ConvertRequest` to a finished
dataset directory), :mod:`.outdir` (start, resume, join or replace what OUT
holds), :mod:`.pack` (hands shards out to worker processes and records each
one done), :mod:`.tail` (cuts the last shards into pieces so that the
workers finish together), :mod:`.work` (what a worker does: write one
shard), :mod:`.normalize` (keep, rewrite or re-encode each image) and
:mod:`.report` (the progress bar and the summary).
"""
