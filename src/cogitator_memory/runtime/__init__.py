"""Runtime wiring: the memory config of ``cogitator.yml`` and one object that owns the memory.

:class:`MemoryConfig` is the ``memory:`` section (:func:`load_config` reads it, with errors
naming the key and line); :class:`Memory` builds the stores and services it names and gives
``add``, ``search``, ``build_context``, ``remember`` / ``recall`` / ``forget`` and ``history``;
:class:`SyncMemory` is the same API without ``asyncio``. See ``docs/runtime.md``.
"""

from .config import (
    CompactionConfig,
    ConfigError,
    ContextConfig,
    EmbeddingConfig,
    ExtractionConfig,
    FilesConfig,
    MemoryConfig,
    ModelConfig,
    VectorsConfig,
    load_config,
    parse_config,
)
from .memory import AddResult, Memory, SearchHit, message_format
from .sync import SyncMemory

__all__ = [
    "AddResult",
    "CompactionConfig",
    "ConfigError",
    "ContextConfig",
    "EmbeddingConfig",
    "ExtractionConfig",
    "FilesConfig",
    "Memory",
    "MemoryConfig",
    "ModelConfig",
    "SearchHit",
    "SyncMemory",
    "VectorsConfig",
    "load_config",
    "message_format",
    "parse_config",
]
