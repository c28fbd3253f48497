"""The SQLite engine (the embedded default): the connection (:mod:`.db`), the one migration list of
the file (:mod:`.schema`), threads (:mod:`.threads`) and embeddings (:mod:`.vectors`)."""
