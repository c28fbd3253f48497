"""Engines: one folder per storage engine (``memory``, ``sqlite``, ``postgres``, ``redis``,
``mongodb``, ``qdrant``), each holding its connection, its schema and one module per capability it
implements. Engines import the capability contracts (``threads``, ``vectors``, ...); the contracts
never import an engine. :mod:`.factory` creates a store by name and imports only that engine.
"""
