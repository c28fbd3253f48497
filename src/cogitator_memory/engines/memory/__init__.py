"""The in-memory engine: threads (:mod:`.threads`) and embeddings (:mod:`.vectors`) in process memory."""
