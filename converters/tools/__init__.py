"""The commands that look at shards rather than make them, for fastdata's
output and for files MXNet, TensorFlow or Caffe wrote: ``fastdata inspect``
(:mod:`.inspection`), ``fastdata verify`` (the :mod:`.verify` package, a
module for each thing it checks) and ``fastdata index``
(:mod:`.indexing`, which adds index or checksum files beside shards written
elsewhere and changes nothing else). :mod:`.probe` tells what is at a path:
a dataset directory, a split output or one shard.
"""
