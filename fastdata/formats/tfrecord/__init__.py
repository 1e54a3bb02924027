"""tfrecord format (being written)."""
