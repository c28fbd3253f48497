"""Store-independent rules of threads and entries, written once for every store.

Argument checks, redaction, forks, tool-call stripping, metadata filters and cursors are plain
functions without I/O; each store's module only translates reads and writes to its engine.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from ..clock import to_micros, to_utc
from ..errors import InvalidArgumentError
from ..ids import entry_id as new_entry_id
from ..tokens import count_entry_tokens
from . import values
from .records import (
    CONVERSATION_ENTRY_TYPES,
    ENTRY_TYPES,
    EVENT_TYPES,
    FORK_OF_KEY,
    FORKED_FROM_KEY,
    FORKS_KEY,
    MEMORY_AGENTS_KEY,
    MEMORY_USERS_KEY,
    REDACTED_KEY,
    USER_ID_KEY,
    CompactionEvent,
    EntryRedaction,
    EventPayload,
    LabelEvent,
    MemoryEntry,
    Message,
    NewMemoryEntry,
    TextPart,
    Thread,
    ToolCall,
    ToolResult,
    built_record,
)

#: What redaction puts in place of text, tool-call arguments and tool results.
REDACTED_TEXT = "[redacted]"
MAX_ID_LENGTH = 256
#: Metadata keys of a thread that a fork does not copy.
FORK_DROPPED_KEYS = frozenset({FORKS_KEY, FORKED_FROM_KEY, "paused_run"})


# --- argument checks ----------------------------------------------------------------------


def check_id(name: str, value: object) -> str:
    """A non-empty string id of at most 256 characters without control characters."""
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    if not value or value.isspace():
        raise InvalidArgumentError(name, "must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidArgumentError(name, f"must be at most {MAX_ID_LENGTH} characters")
    if not value.isprintable():
        raise InvalidArgumentError(name, "must not contain control characters")
    return value


#: The ``user_id`` of a search filter (of the recall index or of an embedding store: the same
#: scoping rule) that lets through only what belongs to no user, the shared memory. No user can
#: have this id: ids are printable (:func:`check_id`) and it is a control character, so every
#: user's record is "another user's". Used where a caller serves the shared memory (an MCP server
#: started without a user, ``Memory.search(shared_only=True)``, the ``recall`` tool of a scope
#: without a user), so that other users' records take no candidate slots.
NO_USER = "\x01"


def check_filter_user(name: str, value: object) -> str | None:
    """A filter's ``user_id``: like :func:`check_optional_id`, and :data:`NO_USER` passes."""
    return NO_USER if value == NO_USER else check_optional_id(name, value)


def check_optional_id(name: str, value: object) -> str | None:
    """Like :func:`check_id`, but ``None`` passes."""
    return None if value is None else check_id(name, value)


def check_metadata(name: str, value: object) -> dict[str, Any]:
    """A dict with string keys whose values a store can keep (JSON, 64-bit integers, no NaN,
    infinity or lone surrogates, at most :data:`~.values.MAX_JSON_DEPTH` levels deep, see
    :mod:`.values`); returns a deep copy."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a dict, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidArgumentError(name, f"keys must be strings, got {key!r}")
    copied: dict[str, Any] = values.json_copy(name, dict(value))
    return copied


#: Thread metadata keys the package reads as an id (``None`` passes: no one).
THREAD_ID_KEYS: tuple[str, ...] = (USER_ID_KEY,)
#: Thread metadata keys the package reads as a list of ids (``None`` passes: none).
THREAD_ID_LIST_KEYS: tuple[str, ...] = (MEMORY_USERS_KEY, MEMORY_AGENTS_KEY, FORKS_KEY)


def check_thread_metadata(name: str, value: object) -> dict[str, Any]:
    """A thread's metadata as :func:`check_metadata` has it, with the keys the package reads
    itself checked: ``user_id`` an id, ``memory_user_ids``, ``memory_agent_ids`` and
    ``memory_forks`` lists of ids (:func:`check_id`); the error names the key
    (``metadata.memory_forks[0]``)."""
    meta = check_metadata(name, value)
    for key in THREAD_ID_KEYS:
        if meta.get(key) is not None:
            check_id(f"{name}.{key}", meta[key])
    for key in THREAD_ID_LIST_KEYS:
        listed = meta.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list):
            raise InvalidArgumentError(f"{name}.{key}", f"must be a list of ids, got {type(listed).__name__}")
        for i, one in enumerate(listed):
            check_id(f"{name}.{key}[{i}]", one)
    return meta


def check_limit(name: str, value: object, *, allow_zero: bool = True) -> int:
    """A non-negative int below 2**63 (``bool`` refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(name, f"must be an integer, got {type(value).__name__}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InvalidArgumentError(name, f"must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    if value > values.MAX_INT:
        raise InvalidArgumentError(name, f"must be below 2**63, got {value}")
    return value


#: The largest ``limit`` a read passes to a store: a larger one reads every entry all the same,
#: and every engine takes this one as it is (Lua numbers are doubles).
MAX_READ_LIMIT = 2**31 - 1


def check_read_limit(name: str, value: object) -> int:
    """The ``limit`` of a read of entries: :func:`check_limit`, 0 for all; values above
    :data:`MAX_READ_LIMIT`, which read every entry too, become it."""
    return min(check_limit(name, value), MAX_READ_LIMIT)


def check_datetime(name: str, value: object) -> datetime | None:
    """``None`` or a datetime, made aware UTC."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgumentError(name, f"must be a datetime, got {type(value).__name__}")
    try:
        return to_utc(value)
    except OverflowError:
        raise InvalidArgumentError(name, f"{value.isoformat()} is outside the datetimes UTC can express") from None


#: How far past the store's clock the time an entry was said may be: the clocks of the
#: machine that dated it and of the store's may differ by this much.
CLOCK_SKEW = timedelta(minutes=5)


def check_said_at(name: str, value: object, now: datetime) -> datetime | None:
    """``None`` or the time an entry was said, made aware UTC (naive: UTC); refused when it is
    later than ``now`` by more than :data:`CLOCK_SKEW` (a message is said before it is stored)."""
    when = check_datetime(name, value)
    if when is not None and when > now + CLOCK_SKEW:
        raise InvalidArgumentError(
            name, f"{when.isoformat()} is in the future (now is {now.isoformat()}): date an entry when it was said"
        )
    return when


def check_types(value: object) -> frozenset[str] | None:
    """The entry types a read returns: ``None`` (message and tool_result), ``"all"`` or a list.

    Returns ``None`` for every type.
    """
    if value is None:
        return frozenset(CONVERSATION_ENTRY_TYPES)
    if value == "all":
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        raise InvalidArgumentError("types", "must be 'all' or a list of entry types")
    chosen = []
    for item in value:
        if item not in ENTRY_TYPES:
            raise InvalidArgumentError("types", f"unknown entry type {item!r}; known: {', '.join(ENTRY_TYPES)}")
        chosen.append(item)
    if not chosen:
        raise InvalidArgumentError("types", "must name at least one entry type")
    return frozenset(chosen)


def validation_error(argument: str, exc: ValidationError) -> InvalidArgumentError:
    """An :class:`InvalidArgumentError` naming the first field pydantic refused."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
    name = f"{argument}.{where}" if where else argument
    message = str(first.get("msg", "invalid"))
    message = message.removeprefix("Value error, ")
    return InvalidArgumentError(name, message)


# --- cursors ------------------------------------------------------------------------------


_MIN_US = to_micros(datetime.min.replace(tzinfo=UTC))
_MAX_US = to_micros(datetime.max.replace(tzinfo=UTC))


def encode_cursor(updated_at: datetime, thread_id: str) -> str:
    """An opaque cursor after a thread in (updated_at desc, id desc) order."""
    raw = json.dumps([to_micros(updated_at), thread_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object) -> tuple[int, str]:
    """The (updated_at in microseconds, id) a cursor of :func:`encode_cursor` stands after."""
    if not isinstance(cursor, str) or not cursor:
        raise InvalidArgumentError("cursor", "must be a next_cursor returned by list_threads")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        micros, thread_id = json.loads(raw)
        if isinstance(micros, bool) or not isinstance(micros, int) or not _MIN_US <= micros <= _MAX_US:
            raise ValueError
        check_id("cursor", thread_id)
    except (ValueError, TypeError, binascii.Error, RecursionError):
        raise InvalidArgumentError("cursor", "is not a cursor returned by list_threads") from None
    return micros, thread_id


# --- metadata filters ---------------------------------------------------------------------


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values that also compares types: ``1 != True``, ``1 != "1"``, ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def metadata_matches(metadata: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether every key of ``wanted`` is in ``metadata`` with an equal value of the same type."""
    return all(not (key not in metadata or not json_equal(metadata[key], value)) for key, value in wanted.items())


# --- entries ------------------------------------------------------------------------------


def strip_tool_calls(entry: MemoryEntry) -> MemoryEntry:
    """The entry without tool calls and tool results (what reads return by default)."""
    message = entry.message
    if entry.tool_calls is None and entry.tool_results is None and (message is None or not message.tool_calls):
        return entry
    update: dict[str, Any] = {"tool_calls": None, "tool_results": None}
    if message is not None and message.tool_calls:
        update["message"] = message.model_copy(update={"tool_calls": None})
    return entry.model_copy(update=update)


def type_allowed(entry_type: str, types: frozenset[str] | None) -> bool:
    """Whether a read with ``types`` (from :func:`check_types`) returns an entry of this type."""
    return types is None or entry_type in types


def counted(new: NewMemoryEntry, token_count: int | None) -> int:
    """``token_count``, or when it is ``None`` the counted tokens of ``new``: the count a store
    that writes it down stores for an entry :meth:`add_entry` was given without one."""
    return count_entry_tokens(new) if token_count is None else token_count


def build_entry(
    new: NewMemoryEntry, entry_id: str, parent_id: str | None, seq: int, token_count: int | None, now: datetime
) -> MemoryEntry:
    """The stored entry :meth:`add_entry` makes of ``new`` at its place in the tree. With
    ``token_count=None`` its tokens are counted when first read (see :class:`MemoryEntry`)."""
    given = new.__dict__
    message, metadata, calls, results = given["message"], given["metadata"], given["tool_calls"], given["tool_results"]
    kind = given["type"]
    if (
        type(message) is Message
        and given["event"] is None
        and kind in _MESSAGE_TYPES
        and (metadata is None or type(metadata) is dict)
        and (calls is None or (type(calls) is list and all(type(c) is ToolCall for c in calls)))
        and (results is None or (type(results) is list and all(type(r) is ToolResult for r in results)))
    ):
        # What validation makes of fields that are valid already (a checked record): the same
        # objects, new top-level containers, the fields given set. Built directly, for half the
        # cost of validating them again; anything else (events, a record changed after it was
        # checked) is validated below.
        fields_set = _ALWAYS_SET.copy()
        if metadata is not None:
            fields_set.add("metadata")
        if calls is not None:
            fields_set.add("tool_calls")
        if results is not None:
            fields_set.add("tool_results")
        built = {
            "message": message,
            "token_count": token_count,
            "type": kind,
            "event": None,
            "metadata": None if metadata is None else dict(metadata),
            "tool_calls": None if calls is None else list(calls),
            "tool_results": None if results is None else list(results),
            "id": entry_id,
            "thread_id": given["thread_id"],
            "parent_id": parent_id,
            "seq": seq,
            "created_at": now,
        }
        if token_count is None:  # left out: counted when first read
            del built["token_count"]
        return built_record(MemoryEntry, built, fields_set)
    fields: dict[str, Any] = {
        "id": entry_id,
        "thread_id": new.thread_id,
        "parent_id": parent_id,
        "seq": seq,
        "type": new.type,
        "message": message,
        "token_count": counted(new, token_count),
        "created_at": now,
    }
    for name in ("metadata", "event", "tool_calls", "tool_results"):  # unset fields stay unset
        value = getattr(new, name)
        if value is not None:
            fields[name] = value
    return MemoryEntry.model_validate(fields)


_MESSAGE_TYPES = frozenset(CONVERSATION_ENTRY_TYPES)
_ALWAYS_SET = {"id", "thread_id", "parent_id", "seq", "type", "message", "token_count", "created_at"}


def redacted_entry(entry: MemoryEntry, redaction: EntryRedaction) -> MemoryEntry:
    """The entry as :meth:`redact_entry` leaves it.

    Text, tool-call arguments and tool results become :data:`REDACTED_TEXT`; the place, parent,
    role and call ids stay; a user message loses its sender name, tool calls their replay state
    and argument error; ``metadata["redacted"]`` records when and why. Refuses an event entry.
    """
    if entry.type in EVENT_TYPES:
        raise InvalidArgumentError("entry_id", f"'{entry.id}' is a {entry.type} event, which cannot be redacted")
    message = entry.message
    new_message: Message | None = None
    if message is not None:
        content: str | list[Any]
        content = REDACTED_TEXT if isinstance(message.content, str) else [TextPart(text=REDACTED_TEXT)]
        new_message = Message(
            role=message.role,
            content=content,
            name=None if message.role == "user" else message.name,
            tool_calls=_redact_calls(message.tool_calls),
            tool_call_id=message.tool_call_id,
        )
    record: dict[str, Any] = {"at": redaction.at.isoformat()}
    if redaction.reason is not None:
        record["reason"] = redaction.reason
    metadata = dict(entry.metadata or {})
    metadata[REDACTED_KEY] = record
    return entry.model_copy(
        update={
            "message": new_message,
            "tool_calls": _redact_calls(entry.tool_calls),
            "tool_results": _redact_results(entry.tool_results),
            "metadata": metadata,
        }
    )


def _redact_calls(calls: list[ToolCall] | None) -> list[ToolCall] | None:
    if calls is None:
        return None
    return [ToolCall(id=call.id, name=call.name, arguments={"redacted": REDACTED_TEXT}) for call in calls]


def _redact_results(results: list[ToolResult] | None) -> list[ToolResult] | None:
    if results is None:
        return None
    return [ToolResult(call_id=r.call_id, name=r.name, result=REDACTED_TEXT) for r in results]


def with_entry_ids_mapped(event: EventPayload | None, ids: Mapping[str, str]) -> EventPayload | None:
    """``event`` with the entries it names (a compaction's first kept entry, a label's target)
    renamed by ``ids`` (old id -> new id), for copies of a branch; ids not in ``ids`` are kept."""
    if isinstance(event, CompactionEvent):
        kept = event.first_kept_entry_id
        if kept is not None and kept in ids:
            return event.model_copy(update={"first_kept_entry_id": ids[kept]})
    elif isinstance(event, LabelEvent):
        target = event.target_id
        if target is not None and target in ids:
            return event.model_copy(update={"target_id": ids[target]})
    return event


def fork_records(
    origin: Thread, path: Sequence[MemoryEntry], new_thread_id: str, now: datetime
) -> tuple[Thread, list[MemoryEntry]]:
    """The new thread and the copied entries of a fork of ``origin`` along ``path``.

    Each copy gets a new id, keeps its type, message, event and tool data, and names its
    original in ``metadata["fork_of"]``; events that name an entry of the path (a compaction's
    first kept entry, a label's target) name its copy. The thread names its origin in
    ``metadata["forked_from"]``.
    """
    metadata = {k: v for k, v in origin.metadata.items() if k not in FORK_DROPPED_KEYS}
    at_entry = path[-1].id if path else None
    metadata[FORKED_FROM_KEY] = {"thread_id": origin.id, "entry_id": at_entry}
    ids = {entry.id: new_entry_id() for entry in path}
    copies: list[MemoryEntry] = []
    parent: str | None = None
    for seq, entry in enumerate(path, start=1):
        copy_id = ids[entry.id]
        entry_metadata = dict(entry.metadata or {})
        entry_metadata[FORK_OF_KEY] = entry.id
        update: dict[str, Any] = {
            "id": copy_id,
            "thread_id": new_thread_id,
            "parent_id": parent,
            "seq": seq,
            "metadata": entry_metadata,
        }
        event = with_entry_ids_mapped(entry.event, ids)
        if event is not entry.event:
            update["event"] = event
        copies.append(entry.model_copy(update=update, deep=True))
        parent = copy_id
    thread = Thread(
        id=new_thread_id,
        agent_id=origin.agent_id,
        metadata=metadata,
        created_at=now,
        updated_at=now,
        active_leaf_id=parent,
    )
    return thread, copies


def with_fork_listed(metadata: Mapping[str, Any], fork_id: str) -> dict[str, Any]:
    """``metadata`` with ``fork_id`` appended to its ``memory_forks`` list."""
    updated = dict(metadata)
    forks = updated.get(FORKS_KEY)
    forks = list(forks) if isinstance(forks, list) else []
    if fork_id not in forks:
        forks.append(fork_id)
    updated[FORKS_KEY] = forks
    return updated
