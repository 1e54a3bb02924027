"""The JPEG room on the ground floor: what the bytes of a JPEG header mean,
with no decoding, no NumPy and no libjpeg.

:mod:`.markers` walks the marker segments and names the marker sets;
``_native/markers.h`` is the same walk in C, a header that both compiled
extensions (``fastdata.decode._cropdecode`` and ``fastdata.formats._speedups``)
include, so either builds without the other. :mod:`fastdata.decode` (headers,
the crop decoder) and :mod:`fastdata.formats` with the converter's check stand
on it; it imports only :mod:`fastdata.errors`.
"""
