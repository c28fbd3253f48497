"""Runtime wiring: the memory config of ``cogitator.yml`` and one object that owns the memory.

:class:`MemoryConfig` is the ``memory:`` section (:func:`load_config` reads it, with errors
naming the key and line); :class:`Memory` builds the stores and services it names and gives
``add``, ``search``, ``build_context``, ``remember`` / ``recall`` / ``forget`` and ``history``;
:class:`SyncMemory` is the same API without ``asyncio``. See ``docs/runtime.md``.
"""

from .config import (
    BriefConfig,
    CompactionConfig,
    ConfigError,
    ConsolidationConfig,
    ContextConfig,
    EmbeddingConfig,
    ExtractionConfig,
    FilesConfig,
    MemoryConfig,
    ModelConfig,
    ObservationsConfig,
    VectorsConfig,
    load_config,
    parse_config,
)
from .memory import AddError, AddResult, ConsolidationReport, Memory, SearchHit, message_format
from .sync import SyncMemory

__all__ = [
    "AddError",
    "AddResult",
    "BriefConfig",
    "CompactionConfig",
    "ConfigError",
    "ConsolidationConfig",
    "ConsolidationReport",
    "ContextConfig",
    "EmbeddingConfig",
    "ExtractionConfig",
    "FilesConfig",
    "Memory",
    "MemoryConfig",
    "ModelConfig",
    "ObservationsConfig",
    "SearchHit",
    "SyncMemory",
    "VectorsConfig",
    "load_config",
    "message_format",
    "parse_config",
]
