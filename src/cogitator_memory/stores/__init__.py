"""Thread stores: the contract, the shared tree rules, and one module per engine."""

from .base import BaseMemoryAdapter, ChangeListener, ChangeReportingMemoryAdapter, MemoryAdapter
from .memory import InMemoryAdapter

__all__ = [
    "BaseMemoryAdapter",
    "ChangeListener",
    "ChangeReportingMemoryAdapter",
    "InMemoryAdapter",
    "MemoryAdapter",
]
