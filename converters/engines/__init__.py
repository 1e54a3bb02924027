"""Writing a dataset from an engine's own data: a Spark DataFrame (:mod:`.spark`), a Ray Data
``Dataset`` (:mod:`.ray`); the task attempt and the commit both use are :mod:`.commit`'s."""
