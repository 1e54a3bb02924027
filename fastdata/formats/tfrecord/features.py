"""The ``tf.train.Example`` features of an image shard in TensorFlow's ImageNet
layout: the one place their names are spelled (the writer, both parsers, the
datasets and DALI's reader all take them from here)."""

from __future__ import annotations

IMAGE_KEY = "image/encoded"
FORMAT_KEY = "image/format"
LABEL_KEY = "image/class/label"
TEXT_KEY = "image/class/text"
FILENAME_KEY = "image/filename"
HEIGHT_KEY = "image/height"
WIDTH_KEY = "image/width"

# The order encode_sample writes them in (fastpath.py relies on it).
WRITE_ORDER = (IMAGE_KEY, FORMAT_KEY, LABEL_KEY, TEXT_KEY, FILENAME_KEY, HEIGHT_KEY, WIDTH_KEY)

LABEL_BASE = 1
"""What fastdata's writer (like TensorFlow's ImageNet scripts) stores for class 0
under :data:`LABEL_KEY`; a label vector is stored unshifted."""
