"""recordio format (being written)."""
