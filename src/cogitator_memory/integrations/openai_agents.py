"""The OpenAI Agents SDK's ``Session`` over cogitator-memory threads: :class:`CogitatorSession`.

A session is a thread (``thread_id = session_id``) of a :class:`~cogitator_memory.runtime.Memory`,
so the conversation is a tree (``rewind``, forks), is compacted when the memory's config asks,
feeds memory items when extraction is on, is searched by ``Memory.search`` and is forgotten by
the cascade. Each SDK item is one entry; the item itself is kept word for word in the entry's
metadata (``metadata["openai_agents_item"]``), so ``get_items`` returns exactly what was added:

=====================================================  =====================================
SDK item                                               entry
=====================================================  =====================================
``{"role": "user" | "assistant" | "system", ...}``     a ``message`` of that role, its text
``{"role": "developer", ...}``                         a ``system`` message
``{"type": "function_call", call_id, name, ...}``      an assistant message calling the tool
``{"type": "function_call_output", call_id, output}``  a ``tool_result`` answering the call
anything else (reasoning, hosted tool calls, ...)      a ``custom`` event ``openai_agents_item``
=====================================================  =====================================

Events are not sent to a model by ``build_context`` nor searched, so items with no text (a
reasoning item) stay out of prompts and the index and still come back from ``get_items``.
Entries written by other means (``Memory.add``) come back as SDK items made from the entry.
After a compaction, ``get_items`` returns the summary (a user message) and what follows it,
as ``Memory.history`` does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import InvalidArgumentError, MissingDriverError
from ..result import unwrap
from ..threads import tree

try:
    from agents.items import TResponseInputItem
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
except ImportError:  # pragma: no cover - exercised in a subprocess without the extra
    raise MissingDriverError("CogitatorSession", "agents", "openai-agents") from None

if TYPE_CHECKING:
    from ..threads.records import MemoryEntry

#: Metadata key of an entry holding the SDK item it was made from.
ITEM_KEY = "openai_agents_item"
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal"})


def _text_of(content: Any) -> str:
    """The text of an SDK message's ``content``: the string, or its text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    if isinstance(content, Sequence):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
                value = part.get("text", part.get("refusal"))
                if isinstance(value, str):
                    texts.append(value)
    return "\n".join(texts)


def _call_arguments(raw: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"arguments": {}}
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            fields["arguments"] = parsed
        else:
            fields["argument_error"] = raw
    return fields


def item_entry(where: str, item: Any, thread_id: str) -> dict[str, Any]:
    """The entry (``add_entry``'s fields) that keeps the SDK ``item``; raises
    :class:`InvalidArgumentError` naming ``where`` for an item that is no JSON object."""
    if not isinstance(item, Mapping):
        raise InvalidArgumentError(where, f"must be a dict (an SDK input item), got {type(item).__name__}")
    raw = tree.check_metadata(where, item)
    metadata = {ITEM_KEY: raw}
    kind, role = raw.get("type"), raw.get("role")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer"):
        message = {"role": "system" if role == "developer" else role, "content": _text_of(raw.get("content"))}
        return {"thread_id": thread_id, "type": "message", "message": message, "metadata": metadata}
    if kind == "function_call" and _ids(raw, "call_id", "name"):
        call = {"id": raw["call_id"], "name": raw["name"], **_call_arguments(raw.get("arguments"))}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return {"thread_id": thread_id, "type": "message", "message": message, "metadata": metadata}
    if kind == "function_call_output" and _ids(raw, "call_id"):
        output = raw.get("output")
        text = output if isinstance(output, str) else _text_of(output) or json.dumps(output, ensure_ascii=False)
        message = {"role": "tool", "content": text, "tool_call_id": raw["call_id"]}
        return {"thread_id": thread_id, "type": "tool_result", "message": message, "metadata": metadata}
    event = {"name": ITEM_KEY, "data": {"type": str(kind or role or "unknown")}}
    return {"thread_id": thread_id, "type": "custom", "event": event, "metadata": metadata}


def _ids(raw: Mapping[str, Any], *keys: str) -> bool:
    return all(isinstance(raw.get(k), str) and raw[k] for k in keys)


def entry_items(entry: MemoryEntry) -> list[dict[str, Any]]:
    """The SDK items an entry stands for: the item it keeps, else items made from its message
    (text, tool calls, tool results)."""
    kept = (entry.metadata or {}).get(ITEM_KEY)
    if isinstance(kept, dict):
        return [kept]
    from ..context.history import compaction_of, entry_messages, summary_message

    if compaction_of(entry) is not None:
        return [{"role": "user", "content": summary_message(entry).text}]
    out: list[dict[str, Any]] = []
    for message in entry_messages(entry):
        if message.role == "tool":
            out.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": message.text})
            continue
        if message.text or not message.tool_calls:
            out.append({"role": message.role, "content": message.text})
        for call in message.tool_calls or ():
            arguments = call.argument_error if call.argument_error is not None else json.dumps(call.arguments)
            out.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments})
    return out


def _view(path: list[MemoryEntry]) -> list[MemoryEntry]:
    """The compacted view of a branch read with every type: the newest compaction, the entries
    it keeps and those after it (as ``Memory.history``), with the SDK's items kept as events."""
    from ..context.history import compaction_of

    def shown(entry: MemoryEntry) -> bool:
        return not entry.is_event or ITEM_KEY in (entry.metadata or {})

    last = next((i for i in range(len(path) - 1, -1, -1) if compaction_of(path[i]) is not None), -1)
    if last < 0:
        return [e for e in path if shown(e)]
    event = compaction_of(path[last])
    assert event is not None
    start = last
    if event.first_kept_entry_id is not None:
        start = next((i for i in range(last - 1, -1, -1) if path[i].id == event.first_kept_entry_id), last)
    return [path[last], *(e for e in path[start:last] if shown(e)), *(e for e in path[last + 1 :] if shown(e))]


class CogitatorSession(SessionABC):
    """The OpenAI Agents SDK's ``Session`` kept as a thread of a :class:`~cogitator_memory.runtime.Memory`.

    ``session_id`` is the thread's id; ``memory`` a connected ``Memory``; ``user_id`` whose
    conversation it is (kept in the thread's metadata: ``Memory.search`` and ``forget_user``
    find it; a thread of another user is refused); ``agent_id`` whose thread it is when made
    (default the memory's). ``session_settings`` as the SDK's (``limit``: the newest items
    ``get_items`` returns by default). See the module docs for how items map to entries.
    """

    def __init__(
        self,
        session_id: str,
        memory: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        from ..runtime.memory import Memory

        if not isinstance(memory, Memory):
            raise InvalidArgumentError("memory", f"must be a Memory, got {type(memory).__name__}")
        self.session_id = tree.check_id("session_id", session_id)
        self.memory: Memory = memory
        self.user_id = tree.check_optional_id("user_id", user_id)
        self.agent_id = tree.check_id("agent_id", agent_id) if agent_id is not None else memory.agent_id
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )

    def _lock(self) -> asyncio.Lock:
        """The memory's lock of this thread: adds of ``Memory.add`` and of sessions take turns."""
        return self.memory.thread_lock(self.session_id)

    async def _path(self) -> list[MemoryEntry]:
        adapter: Any = self.memory.adapter
        if unwrap(await adapter.get_thread(self.session_id)) is None:
            return []
        found: list[MemoryEntry] = unwrap(await adapter.get_path(self.session_id, types="all", include_tool_calls=True))
        return _view(found)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation as SDK items, oldest first (the newest ``limit`` when given, else
        the settings' limit)."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted is not None and (isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 0):
            raise InvalidArgumentError("limit", f"must be a non-negative integer, got {wanted!r}")
        if wanted == 0:
            return []
        items = [item for entry in await self._path() for item in entry_items(entry)]
        if wanted is not None:
            items = items[-wanted:]
        return cast(list[TResponseInputItem], items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Add ``items`` after the conversation, all or none; then index, compact and extract
        as ``Memory.add`` does (a failure of those is logged, the items stay)."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
            raise InvalidArgumentError("items", "must be a list of SDK input items")
        new = [item_entry(f"items[{i}]", item, self.session_id) for i, item in enumerate(items)]
        if not new:
            return
        memory = self.memory
        adapter: Any = memory.adapter
        async with self._lock():
            existing = unwrap(await adapter.get_thread(self.session_id))
            if existing is not None:
                owner = (existing.metadata or {}).get("user_id")
                if self.user_id is not None and owner is not None and owner != self.user_id:
                    raise InvalidArgumentError("session_id", f"{self.session_id} is another user's thread")
            else:
                metadata = {"user_id": self.user_id} if self.user_id is not None else None
                unwrap(await adapter.create_thread(self.agent_id, metadata=metadata, thread_id=self.session_id))
            written: list[MemoryEntry] = []
            try:
                for entry in new:
                    written.append(unwrap(await adapter.add_entry(entry)))
            except BaseException:
                for done in reversed(written):
                    await adapter.delete_entry(done.id)
                if existing is None:
                    await adapter.delete_thread(self.session_id)
                raise
        if memory.indexer is not None:
            await memory.indexer.flush()
        await memory.after_write(self.session_id, written, agent_id=self.agent_id, user_id=self.user_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the newest item out of the session (with what was derived from it) and return it."""
        async with self._lock():
            path = await self._path()
            if not path:
                return None
            last = path[-1]
            items = entry_items(last)
            await self.memory.delete_entries([last.id])
        return cast(TResponseInputItem, items[-1]) if items else None

    async def clear_session(self) -> None:
        """Delete the thread and everything derived from it (``Memory.delete_thread``)."""
        async with self._lock():
            if unwrap(await self.memory.adapter.get_thread(self.session_id)) is not None:
                await self.memory.delete_thread(self.session_id)


__all__ = ["ITEM_KEY", "CogitatorSession", "entry_items", "item_entry"]
