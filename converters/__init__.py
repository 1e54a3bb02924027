"""The ``fastdata`` command line: converting image folders into shards and inspecting them.

Installed as ``fastdata.converters``; the library itself never imports it.
"""
