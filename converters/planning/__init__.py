"""Deciding what a conversion writes before any image is read: :mod:`.scan`
finds the source images (an ImageFolder tree or an im2rec list, with their
sizes), and :mod:`.plan` fixes from the scan and the options alone which
file goes into which split, shard and position. The plan alone decides the
output bytes, which is why they are the same for any ``--workers``, any
number of nodes and after ``--resume``.
"""
