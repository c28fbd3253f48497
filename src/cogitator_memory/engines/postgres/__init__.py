"""The PostgreSQL engine: the connection and adapter class (:mod:`.adapter`), the one migration list
of the schema (:mod:`.schema`), threads (:mod:`.threads`) and pgvector embeddings (:mod:`.vectors`)."""
