"""The Qdrant engine: embeddings (:mod:`.vectors`) through ``qdrant-client``."""
