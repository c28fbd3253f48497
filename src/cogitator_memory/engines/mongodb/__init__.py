"""The MongoDB engine: threads (:mod:`.threads`)."""
