"""Threads: the conversation-tree capability.

:mod:`.records` holds its records (threads, entries, messages, events), :mod:`.base` the
``MemoryAdapter`` protocol users type against and the ``BaseMemoryAdapter`` that store authors
subclass, :mod:`.tree` the engine-independent tree rules. Engines implement it in
``cogitator_memory.engines.<engine>.threads``; nothing here imports an engine.
"""

from . import tree
from .base import BaseMemoryAdapter, ChangeListener, ChangeReportingMemoryAdapter, MemoryAdapter

__all__ = ["BaseMemoryAdapter", "ChangeListener", "ChangeReportingMemoryAdapter", "MemoryAdapter", "tree"]
