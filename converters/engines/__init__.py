"""Writing a dataset from an engine's own data: a Spark DataFrame (:mod:`.spark`)."""
