"""The MongoDB engine: the connection and adapter class (:mod:`.adapter`), threads (:mod:`.threads`),
memory items (:mod:`.items`) and memory files (:mod:`.files`)."""
