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
  to an RGB JPEG (see :mod:`.conversion.normalize`). The output is the same for
  any ``--workers``, any number of nodes and after ``--resume``
  (:mod:`.planning.layout`, :mod:`.output.state`).
* ``fastdata merge OUT``: write the manifest of a multi-node conversion.
* ``fastdata inspect PATH [--json]``, ``fastdata verify PATH [--decode]``,
  ``fastdata index FILE...``: for fastdata's output and for files MXNet,
  TensorFlow or Caffe wrote.
* ``fastdata bench ...``: hands over to ``fastdata.bench.cli``.

Exit status: 0 ok; 1 the command ran and found problems (skipped files,
failed verification); 2 error (``fastdata: error: ...`` on stderr, never a
traceback); 130 interrupted.

Layout, by what each part is about (each sub-package's docstring says more):

* :mod:`.planning`: what a conversion writes, decided before any image is
  read (:mod:`.planning.scan`, :mod:`.planning.layout`).
* :mod:`.conversion`: running it (:mod:`.conversion.convert`,
  :mod:`.conversion.request`, :mod:`.conversion.outdir`,
  :mod:`.conversion.pack`, :mod:`.conversion.schedule`, :mod:`.conversion.jobs`,
  :mod:`.conversion.tail`, :mod:`.conversion.work`,
  :mod:`.conversion.normalize`, :mod:`.conversion.report`).
* :mod:`.output`: what the output directory holds between runs
  (:mod:`.output.state`, and :mod:`.output.record`, each finished shard's record).
* :mod:`.workers`: worker processes (:mod:`.workers.pool`, the protocol
  every pool follows; :mod:`.workers.forkpool`, :mod:`.workers.parallel`).
* :mod:`.tools`: ``inspect``, ``verify`` and ``index`` (:mod:`.tools.probe`,
  :mod:`.tools.inspection`, :mod:`.tools.verify` (a package: one module
  for each thing it checks), :mod:`.tools.indexing`).
* At the top: :mod:`.cli` (arguments), :mod:`.exits` (exit statuses),
  :mod:`.units` (sizes such as ``256M``), :mod:`.jpeg_check` (the structural
  JPEG check), :mod:`.remote_io` (the commands on URLs) and
  :mod:`.bench_convert` (``fastdata bench``).

Every ``__init__`` holds only its docstring: a spawned worker imports
:mod:`.conversion.work` through them and pays for nothing else.
"""
