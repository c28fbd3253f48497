"""Runtime wiring: the memory config of ``cogitator.yml`` and the :class:`Memory` facade."""
