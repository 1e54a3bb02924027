"""lmdb format (being written)."""
