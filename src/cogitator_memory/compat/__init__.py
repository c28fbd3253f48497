"""Drop-ins for the memory APIs agents are built with, over :class:`~cogitator_memory.runtime.Memory`.

:class:`Mem0Compat` (``memory.mem0``) answers mem0's ``Memory`` calls in mem0's shapes;
:class:`SyncMem0Compat` (``sync_memory.mem0``) is its synchronous twin. See ``docs/mem0.md``.
"""

from .mem0 import Mem0Compat, SyncMem0Compat, is_mem0_memory, mem0_id, memory_dict, memory_text
from .mem0_filters import CompiledFilter, compile_filters

__all__ = [
    "CompiledFilter",
    "Mem0Compat",
    "SyncMem0Compat",
    "compile_filters",
    "is_mem0_memory",
    "mem0_id",
    "memory_dict",
    "memory_text",
]
