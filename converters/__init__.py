"""The ``fastdata`` command line: converting image folders into shards, and looking at shards.

Installed as ``fastdata.converters`` (the source folder is ``converters/``);
the library itself never imports it. Subcommands (each has ``--help``):

* ``fastdata convert SRC OUT --format FMT`` (a registered format): an
  ImageFolder tree (or ``--list FILE --root DIR``, an im2rec list) into a
  dataset directory of shards plus ``manifest.json``. With
  ``--val-fraction F``, ``OUT/train`` and ``OUT/val`` are two such
  directories with the same classes. JPEGs that any decoder reads correctly
  as they are are kept, rewritten losslessly with restart markers unless
  ``--passthrough`` (then byte for byte); everything else is normalised once
  to an RGB JPEG (see :mod:`.normalize`). The output is the same for
  any ``--workers``, any number of nodes and after ``--resume``
  (:mod:`.plan`, :mod:`.state`).
* ``fastdata merge OUT``: write the manifest of a multi-node conversion.
* ``fastdata inspect PATH [--json]``, ``fastdata verify PATH [--decode]``,
  ``fastdata index FILE...``: for fastdata's output and for files MXNet,
  TensorFlow or Caffe wrote.
* ``fastdata bench ...``: hands over to ``fastdata.bench.cli``.

Exit status: 0 ok; 1 the command ran and found problems (skipped files,
failed verification); 2 error (``fastdata: error: ...`` on stderr, never a
traceback); 130 interrupted.

Modules: :mod:`.cli` (arguments), :mod:`.convert` (the conversion as a
whole), :mod:`.scan`, :mod:`.normalize`, :mod:`.plan`, :mod:`.pack`,
:mod:`.work`, :mod:`.parallel`, :mod:`.state`, :mod:`.report`, :mod:`.probe`,
:mod:`.inspection`, :mod:`.verification`, :mod:`.indexing`, :mod:`.units`.
"""
