"""cogitator-memory: memory for AI agents.

Conversation threads stored as trees of entries, token counting, lineage checks and the
stores they live in. Start with :class:`SQLiteAdapter` (the embedded default) or
:class:`InMemoryAdapter`; see ``docs/`` for every capability.
"""

from .clock import frozen_clock
from .errors import (
    ConflictError,
    InvalidArgumentError,
    MemoryStoreError,
    MissingDriverError,
    NotConnectedError,
    NotFoundError,
    StoreUnavailableError,
)
from .lineage import evidence_on_path, verify_evidence, verify_evidence_in_memory
from .result import MemoryResult, err, ok, unwrap
from .stores.base import BaseMemoryAdapter, ChangeListener, ChangeReportingMemoryAdapter, MemoryAdapter
from .stores.factory import create_memory_adapter
from .stores.memory import InMemoryAdapter
from .stores.sqlite import SQLiteAdapter
from .stores.tree import REDACTED_TEXT, redacted_entry
from .tokens import (
    count_entry_tokens,
    count_message_tokens,
    count_messages_tokens,
    count_tokens,
    count_tool_calls_tokens,
    truncate_to_tokens,
)
from .types import (
    CONVERSATION_ENTRY_TYPES,
    FORK_OF_KEY,
    FORKED_FROM_KEY,
    FORKS_KEY,
    HISTORY_ENTRY_TYPES,
    MEMORY_AGENTS_KEY,
    MEMORY_USERS_KEY,
    REDACTED_KEY,
    USER_ID_KEY,
    ApprovalEvent,
    ChangeEvent,
    CheckedEvidence,
    CompactionEvent,
    CustomEvent,
    EntryRedaction,
    Evidence,
    FileRange,
    ImageBase64Part,
    ImageURLPart,
    InterruptEvent,
    LabelEvent,
    MemoryEntry,
    Message,
    ModelChangeEvent,
    NewMemoryEntry,
    TextPart,
    Thread,
    ThreadPage,
    ToolCall,
    ToolResult,
)

__version__ = "0.1.0"

__all__ = [
    "CONVERSATION_ENTRY_TYPES",
    "FORKED_FROM_KEY",
    "FORKS_KEY",
    "FORK_OF_KEY",
    "HISTORY_ENTRY_TYPES",
    "MEMORY_AGENTS_KEY",
    "MEMORY_USERS_KEY",
    "REDACTED_KEY",
    "REDACTED_TEXT",
    "USER_ID_KEY",
    "ApprovalEvent",
    "BaseMemoryAdapter",
    "ChangeEvent",
    "ChangeListener",
    "ChangeReportingMemoryAdapter",
    "CheckedEvidence",
    "CompactionEvent",
    "ConflictError",
    "CustomEvent",
    "EntryRedaction",
    "Evidence",
    "FileRange",
    "ImageBase64Part",
    "ImageURLPart",
    "InMemoryAdapter",
    "InterruptEvent",
    "InvalidArgumentError",
    "LabelEvent",
    "MemoryAdapter",
    "MemoryEntry",
    "MemoryResult",
    "MemoryStoreError",
    "Message",
    "MissingDriverError",
    "ModelChangeEvent",
    "NewMemoryEntry",
    "NotConnectedError",
    "NotFoundError",
    "SQLiteAdapter",
    "StoreUnavailableError",
    "TextPart",
    "Thread",
    "ThreadPage",
    "ToolCall",
    "ToolResult",
    "__version__",
    "count_entry_tokens",
    "count_message_tokens",
    "count_messages_tokens",
    "count_tokens",
    "count_tool_calls_tokens",
    "create_memory_adapter",
    "err",
    "evidence_on_path",
    "frozen_clock",
    "ok",
    "redacted_entry",
    "truncate_to_tokens",
    "unwrap",
    "verify_evidence",
    "verify_evidence_in_memory",
]
