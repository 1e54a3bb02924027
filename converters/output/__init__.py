"""What a conversion leaves in its output directory between runs: the done
record of each finished shard (:mod:`.record`, :class:`~.record.ShardRecord`)
and :mod:`.state`, which reads the directory (new, finished, unfinished or
not fastdata's), saves and checks the records, names every file a shard may
leave, and removes only what fastdata wrote.
"""
