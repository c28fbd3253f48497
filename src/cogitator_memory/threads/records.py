"""The records of the thread store: threads, entries, messages, events, evidence.

Records are pydantic v2 models. Optional fields never set are ``None`` and are left out when a
record is dumped (:meth:`Record.dump`, ``exclude_none``) or stored. Input records
(:class:`NewMemoryEntry`) accept a model or a plain ``dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ..clock import utc_field

# Well-known metadata keys (snake_case strings, constants for code that reads them).
USER_ID_KEY = "user_id"
AGENT_ID_KEY = "agent_id"
THREAD_ID_KEY = "thread_id"
FORK_OF_KEY = "fork_of"
FORKED_FROM_KEY = "forked_from"
FORKS_KEY = "memory_forks"
MEMORY_USERS_KEY = "memory_user_ids"
MEMORY_AGENTS_KEY = "memory_agent_ids"
STALE_BECAUSE_KEY = "stale_because"
ACTIVATED_AT_KEY = "activated_at"
REDACTED_KEY = "redacted"
COMPACTION_SUMMARY_KEY = "compaction_summary"
INDEX_KEY = "index"

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
EntryType: TypeAlias = Literal[
    "message", "tool_result", "model_change", "compaction", "approval", "interrupt", "label", "custom"
]
EventType: TypeAlias = Literal["model_change", "compaction", "approval", "interrupt", "label", "custom"]

ENTRY_TYPES: tuple[EntryType, ...] = (
    "message",
    "tool_result",
    "model_change",
    "compaction",
    "approval",
    "interrupt",
    "label",
    "custom",
)
EVENT_TYPES: frozenset[str] = frozenset({"model_change", "compaction", "approval", "interrupt", "label", "custom"})
#: What reads return when ``types`` is not given.
CONVERSATION_ENTRY_TYPES: tuple[EntryType, ...] = ("message", "tool_result")
#: What a reader of history needs: the conversation and the compactions that summarize it.
HISTORY_ENTRY_TYPES: tuple[EntryType, ...] = ("message", "tool_result", "compaction")


class Record(BaseModel):
    """Base of every record: strict about unknown fields, dumps without unset fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False, populate_by_name=True)

    def dump(self) -> dict[str, Any]:
        """A JSON-ready dict of the record, fields that are ``None`` left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def dump_json(self) -> str:
        """The record as JSON, fields that are ``None`` left out."""
        return self.model_dump_json(exclude_none=True)


class LazyFieldRecord(Record):
    """A record one field of which (``_lazy_field``) may be made when it is first needed.

    A store may hand out such a record with that field left out of its ``__dict__`` (and what
    it is made from, if anything, under a private key there: see :meth:`_make_lazy`). The first
    read of the field, and anything that reads the fields at once (dumps, ``==``, ``repr``,
    iteration, copies), makes it and keeps it, with the fields in their order, so that the record
    then reads, dumps and compares exactly as one made with the field. A record made with the
    field is untouched by all this. The field counts as set (``model_fields_set``) either way.
    """

    #: The field that may be made late.
    _lazy_field: ClassVar[str]

    def _make_lazy(self) -> Any:
        """The value of the lazy field, made from the record (called once, while it is missing)."""
        raise NotImplementedError

    def _lazy_value(self) -> Any:
        """The lazy field's value, made now (and kept) if it was not yet."""
        fields = self.__dict__
        name = self._lazy_field
        value = fields.get(name)
        if value is None:
            value = self._make_lazy()
            # In the fields' order, as on a record made with the field (dumps follow it), and
            # without any private key. A new dict put in place at once: a reader in another
            # thread never sees one half made.
            ordered = {
                field: value if field == name else fields[field]
                for field in type(self).__pydantic_fields__
                if field == name or field in fields
            }
            _set_dict(self, ordered)
        return value

    if not TYPE_CHECKING:  # as pydantic's own __getattr__, hidden from type checkers

        def __getattr__(self, name: str) -> Any:
            if name == self._lazy_field:
                return self._lazy_value()
            return super().__getattr__(name)

    # No return annotation: with one, pydantic would take it for the serialized schema.
    @model_serializer(mode="wrap")
    def _serialize_lazy(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        self._lazy_value()
        return handler(self)

    def __eq__(self, other: object) -> bool:
        self._lazy_value()
        if isinstance(other, LazyFieldRecord):
            other._lazy_value()
        return super().__eq__(other)

    def __iter__(self) -> Any:
        self._lazy_value()
        return super().__iter__()

    def __repr_args__(self) -> Any:
        self._lazy_value()
        return super().__repr_args__()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy of the record (pydantic's ``model_copy``), its lazy field made first."""
        self._lazy_value()
        return super().model_copy(update=update, deep=deep)


# --- messages ---------------------------------------------------------------------------


class TextPart(Record):
    """A text part of a message's content."""

    type: Literal["text"] = "text"
    text: str


class ImageURL(Record):
    """Where an image is, and the detail a model should see it at."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImageURLPart(Record):
    """An image given by URL (``https:`` or ``data:``)."""

    type: Literal["image_url"] = "image_url"
    image_url: ImageURL


class ImageBase64(Record):
    """Image bytes in base64 with their media type."""

    data: str
    media_type: str


class ImageBase64Part(Record):
    """An image given inline as base64."""

    type: Literal["image_base64"] = "image_base64"
    image_base64: ImageBase64


ContentPart: TypeAlias = Annotated[TextPart | ImageURLPart | ImageBase64Part, Field(discriminator="type")]


class ToolCall(Record):
    """A call of a tool that an assistant message asks for."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: The raw argument text a model produced when it could not be parsed.
    argument_error: str | None = None
    #: State a runtime keeps to replay the call (dropped by redaction).
    replay: dict[str, Any] | None = None


class ToolResult(Record):
    """What a tool call returned (or the error it failed with)."""

    call_id: str = Field(min_length=1)
    name: str | None = None
    result: Any = None
    error: str | None = None


class Message(Record):
    """A chat message: a role, text or content parts, and tool data.

    ``name`` is the sender's name (user messages) or the tool's name; ``tool_calls`` are the
    calls an assistant message asks for; ``tool_call_id`` names the call a tool message answers.
    """

    role: Role
    content: str | list[ContentPart] = ""
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    #: Set by the context builder on the messages a prompt cache should end at.
    cache_breakpoint: bool | None = None

    @property
    def text(self) -> str:
        """The text of the message: the content string, or its text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if isinstance(part, TextPart))


# --- session events -----------------------------------------------------------------------


class EventPayload(Record):
    """Base of event payloads. Payloads accept extra keys, kept as they are."""

    model_config = ConfigDict(extra="allow")


class ModelChangeEvent(EventPayload):
    """The model a thread runs on changed."""

    model: str = Field(min_length=1)
    previous_model: str | None = None
    provider: str | None = None


class CompactionEvent(EventPayload):
    """A compaction: ``summary`` stands in for the entries of the branch before ``first_kept_entry_id``."""

    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int | None = None
    strategy: str | None = None


class ApprovalEvent(EventPayload):
    """A person approved or refused a tool call."""

    approved: bool
    tool_call_id: str | None = None
    tool_name: str | None = None
    reason: str | None = None


class InterruptEvent(EventPayload):
    """A run was interrupted (paused for input, cancelled...)."""

    reason: str | None = None
    state: dict[str, Any] | None = None


class LabelEvent(EventPayload):
    """A bookmark on the branch (``target_id`` names the entry it marks, else the one before it)."""

    label: str = Field(min_length=1)
    target_id: str | None = None


class CustomEvent(EventPayload):
    """An event of the application's own, with a name and any JSON data."""

    name: str = Field(min_length=1)
    data: dict[str, Any] | None = None


EVENT_PAYLOADS: dict[str, type[EventPayload]] = {
    "model_change": ModelChangeEvent,
    "compaction": CompactionEvent,
    "approval": ApprovalEvent,
    "interrupt": InterruptEvent,
    "label": LabelEvent,
    "custom": CustomEvent,
}

AnyEvent: TypeAlias = ModelChangeEvent | CompactionEvent | ApprovalEvent | InterruptEvent | LabelEvent | CustomEvent


def _coerce_event(entry_type: str, event: Any) -> EventPayload | None:
    if event is None:
        return None
    cls = EVENT_PAYLOADS.get(entry_type)
    if cls is None:
        raise ValueError(f"an entry of type '{entry_type}' carries no event")
    if isinstance(event, cls):
        return event
    if isinstance(event, EventPayload):
        event = event.model_dump()
    return cls.model_validate(event)


# --- threads and entries ------------------------------------------------------------------


class Thread(Record):
    """A conversation: an agent's tree of entries, with metadata and the leaf of its active branch."""

    id: str
    agent_id: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    active_leaf_id: str | None = None


class EntryContent(Record):
    """What an entry holds, new or stored: message, event, tool data, metadata, tokens."""

    message: Message | None = None
    token_count: int | None = Field(default=None, ge=0, le=2**63 - 1)
    type: EntryType = "message"
    event: AnyEvent | None = None
    metadata: dict[str, Any] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_results: list[ToolResult] | None = None

    @field_validator("event", mode="before")
    @classmethod
    def _event_by_type(cls, event: Any, info: ValidationInfo) -> Any:
        # `type` is declared before `event`, so it has been validated already.
        entry_type = info.data.get("type", "message")
        if event is not None and entry_type in EVENT_PAYLOADS:
            return _coerce_event(entry_type, event)
        return event

    @model_validator(mode="after")
    def _check_shape(self) -> EntryContent:
        if self.type in EVENT_TYPES:
            if self.event is None:
                raise ValueError(f"an entry of type '{self.type}' needs an 'event' payload")
            expected = EVENT_PAYLOADS[self.type]
            if not isinstance(self.event, expected):
                raise ValueError(f"the event of a '{self.type}' entry must be a {expected.__name__}")
        else:
            if self.message is None:
                raise ValueError(f"an entry of type '{self.type}' needs a 'message'")
            if self.event is not None:
                raise ValueError(f"an entry of type '{self.type}' carries no 'event'")
        return self


class NewMemoryEntry(EntryContent):
    """What :meth:`add_entry` takes.

    ``parent_id`` writes after that entry instead of the active leaf; ``root=True`` writes a new
    root, an entry without a parent, even when the thread has entries (how the first message is
    edited: its new version starts a branch of its own); ``activate=False`` leaves the active leaf
    where it is. ``token_count`` defaults to the counted tokens of the message. ``id`` keeps an id
    of the caller's (an import keeping its ids); a store makes one (``entry_...``) when it is
    ``None``, and an id already taken fails the write with a ``ConflictError``. ``created_at``
    dates the entry when it was said (importing an older conversation: recall reads its time
    words from then, and finds it for a question about then); default the store's clock now.
    A naive datetime is taken as UTC; a time past now (by more than
    :data:`~cogitator_memory.threads.tree.CLOCK_SKEW`) is refused.
    """

    thread_id: str = Field(min_length=1)
    parent_id: str | None = None
    root: bool = False
    activate: bool = True
    id: str | None = None
    created_at: datetime | None = None

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return utc_field(value)


class MemoryEntry(EntryContent, LazyFieldRecord):
    """An entry of a thread: a message, a tool result or a session event, at a place in the tree.

    ``parent_id`` is ``None`` for a root; ``seq`` orders the entries of a thread in the order they
    were added.
    """

    id: str
    thread_id: str
    parent_id: str | None = None
    seq: int
    token_count: int = 0
    created_at: datetime

    @property
    def is_event(self) -> bool:
        """Whether this entry is a session event rather than part of the conversation."""
        return self.type in EVENT_TYPES

    # A store may hand out an entry whose token_count is not counted yet (the in-memory store's
    # add_entry, when no count is given: see docs/tokens.md); LazyFieldRecord counts it when
    # first needed.
    _lazy_field: ClassVar[str] = "token_count"

    def _make_lazy(self) -> int:
        from ..tokens import count_entry_tokens  # tokens imports this module

        return count_entry_tokens(self)


class ThreadPage(Record):
    """One page of :meth:`list_threads`; pass ``next_cursor`` back for the next page."""

    threads: list[Thread]
    next_cursor: str | None = None


class EntryRedaction(Record):
    """When and why an entry was redacted."""

    at: datetime
    reason: str | None = None

    @field_validator("at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime | None:
        return utc_field(value)


class FileRange(Record):
    """Lines of a memory file a piece of evidence quotes."""

    path: str
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)


class Evidence(Record):
    """What a derived memory stands on: a quote, word for word, of an entry, a tool call or a file."""

    entry_id: str | None = None
    tool_call_id: str | None = None
    file_range: FileRange | None = None
    quote: str


EvidenceStatus: TypeAlias = Literal["verified", "suggested"]


class CheckedEvidence(Record):
    """A piece of evidence with the outcome of checking its quote."""

    status: EvidenceStatus
    evidence: Evidence


class ChangeEvent(Record):
    """A change a store reports to its listeners (see :meth:`on_change`)."""

    type: Literal["entry-added", "entry-deleted", "entry-redacted", "thread-cleared", "thread-deleted"]
    thread_id: str
    entry_id: str | None = None
    entry: MemoryEntry | None = None


_R = TypeVar("_R", bound=Record)
_new_object = object.__new__
# The setters of a pydantic model's slots, called directly (faster than object.__setattr__).
_SLOTS = BaseModel.__dict__
_set_dict = _SLOTS["__dict__"].__set__
_set_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


def built_record(cls: type[_R], fields: dict[str, Any], fields_set: set[str] | None = None) -> _R:
    """The record of ``cls`` holding ``fields`` (which becomes its own), made without
    validation as validation makes it, for fields that are valid already (read back by a store,
    or taken from a checked record). ``fields`` must name every field of ``cls``;
    ``fields_set`` (the fields given) defaults to all of them. About a third of the cost of
    ``model_construct``."""
    record = _new_object(cls)
    _set_dict(record, fields)
    _set_fields_set(record, set(fields) if fields_set is None else fields_set)
    _set_extra(record, None)
    _set_private(record, None)
    return record


def copy_message(message: Message) -> Message:
    """A copy of ``message`` that shares nothing mutable with it.

    A message of plain text without tool calls holds only immutable values, so a shallow copy
    made without validation is enough (about half the cost of ``model_copy()``); any other is
    deep-copied.
    """
    if type(message) is not Message or not isinstance(message.content, str) or message.tool_calls:
        return message.model_copy(deep=True)
    return built_record(Message, message.__dict__.copy(), set(message.__pydantic_fields_set__))


def copy_entry(entry: MemoryEntry) -> MemoryEntry:
    """A copy of ``entry`` that shares nothing with it (rebuilt from its JSON, as stores do)."""
    return MemoryEntry.model_validate_json(MemoryEntry.__pydantic_serializer__.to_json(entry, exclude_none=True))


__all__ = [
    "ACTIVATED_AT_KEY",
    "AGENT_ID_KEY",
    "COMPACTION_SUMMARY_KEY",
    "CONVERSATION_ENTRY_TYPES",
    "ENTRY_TYPES",
    "EVENT_PAYLOADS",
    "EVENT_TYPES",
    "FORKED_FROM_KEY",
    "FORKS_KEY",
    "FORK_OF_KEY",
    "HISTORY_ENTRY_TYPES",
    "INDEX_KEY",
    "MEMORY_AGENTS_KEY",
    "MEMORY_USERS_KEY",
    "REDACTED_KEY",
    "STALE_BECAUSE_KEY",
    "THREAD_ID_KEY",
    "USER_ID_KEY",
    "AnyEvent",
    "ApprovalEvent",
    "ChangeEvent",
    "CheckedEvidence",
    "CompactionEvent",
    "ContentPart",
    "CustomEvent",
    "EntryContent",
    "EntryRedaction",
    "EntryType",
    "EventPayload",
    "EventType",
    "Evidence",
    "EvidenceStatus",
    "FileRange",
    "ImageBase64",
    "ImageBase64Part",
    "ImageURL",
    "ImageURLPart",
    "InterruptEvent",
    "LabelEvent",
    "MemoryEntry",
    "Message",
    "ModelChangeEvent",
    "NewMemoryEntry",
    "Record",
    "Role",
    "TextPart",
    "Thread",
    "ThreadPage",
    "ToolCall",
    "ToolResult",
    "built_record",
    "copy_entry",
    "copy_message",
]
