"""Core facts: a few key/value facts about the user, always sent in the system prompt.

A core fact ``key`` is the slot ``(user, core:<key>)`` of ``system`` memory items in one scope
(``{"agent_id": "core"}`` by default), written through :class:`~cogitator_memory.items.MemoryItems`:
a new value supersedes the current one and the history keeps every value, the same value again
changes nothing, and :meth:`CoreFacts.delete` lets the value go (ends it) without deleting it.

:class:`CoreFacts` works over any store that keeps items;
:class:`~cogitator_memory.engines.sqlite.core_facts.CoreFactsStore` is the spec's store, opened
on a SQLite file (``path=``) or connection (``db=``) or given a store (``adapter=``), which also
moves the tables of the earlier key/value store into items. See ``docs/facts.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from .. import clock as package_clock
from ..errors import InvalidArgumentError, NotConnectedError
from ..items.base import MemoryItemAdapter, is_memory_item_adapter
from ..items.records import MAX_ATTRIBUTE_CHARS, MAX_VALUE_CHARS, MemoryItem, MemoryScope, check_scope
from ..items.service import MemoryItems
from ..result import unwrap
from ..threads.records import Record
from ..threads.values import has_surrogate
from .prompt import MAX_PROMPT_CORE_FACTS, prompt_lines

#: The prefix of a core fact's attribute: the key ``name`` is the attribute ``core:name``.
CORE_PREFIX = "core:"
#: The subject of every core fact (they are about the user).
CORE_SUBJECT = "user"
#: The scope core facts live in unless another is given.
DEFAULT_CORE_SCOPE: Mapping[str, str] = {"agent_id": "core"}
#: The longest key (the attribute holds the prefix too).
MAX_KEY_CHARS = MAX_ATTRIBUTE_CHARS - len(CORE_PREFIX)


class FactHistoryEntry(Record):
    """One value a core fact had: ``value``, when it was ``set_at``, and when it ``ended_at``
    (replaced by the next value or let go; ``None`` while it holds)."""

    value: str
    set_at: datetime
    ended_at: datetime | None = None


def check_key(name: str, value: object) -> str:
    """A core fact key: a non-empty string without control characters, at most
    :data:`MAX_KEY_CHARS` long. Keys compare as slots do: case and spacing aside."""
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidArgumentError(name, "must not be empty")
    if len(value) > MAX_KEY_CHARS:
        raise InvalidArgumentError(name, f"must be at most {MAX_KEY_CHARS} characters")
    if not value.isprintable() or has_surrogate(value):
        raise InvalidArgumentError(name, "must not contain control characters or lone surrogates")
    return value


def check_value(name: str, value: object) -> str:
    """A core fact value: a non-empty string of at most the item value limit."""
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidArgumentError(name, "must not be empty (delete(key) lets a value go)")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidArgumentError(name, f"must be at most {MAX_VALUE_CHARS} characters")
    if "\x00" in value or has_surrogate(value):
        raise InvalidArgumentError(name, "must not contain NUL characters or lone surrogates")
    return value


def core_key(item: MemoryItem) -> str | None:
    """The key of the core fact an item holds a value of, or ``None`` for any other item."""
    attribute = item.attribute
    if item.trust != "system" or attribute is None or not attribute.startswith(CORE_PREFIX):
        return None
    return attribute[len(CORE_PREFIX) :]


class CoreFacts:
    """Core facts over a store that keeps items (see the module docstring).

    ``adapter`` is any :class:`~cogitator_memory.items.base.MemoryItemAdapter`; ``scope`` the
    scope the facts live in (a :class:`~cogitator_memory.items.MemoryScope` or a dict, default
    ``{"agent_id": "core"}``); ``clock`` the time source of the writes (default
    :func:`cogitator_memory.clock.now`). Call :meth:`initialize` (or use ``async with``) before
    the rest: it connects a store that is not connected yet, and :meth:`close` disconnects it
    again (a store that was connected is left as it was).
    """

    def __init__(
        self,
        *,
        adapter: MemoryItemAdapter,
        scope: MemoryScope | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not is_memory_item_adapter(adapter):
            raise InvalidArgumentError("adapter", f"must keep memory items (a MemoryItemAdapter), got {adapter!r}")
        self.adapter = adapter
        self.scope = check_scope("scope", dict(DEFAULT_CORE_SCOPE) if scope is None else scope)
        if clock is not None and not callable(clock):
            raise InvalidArgumentError("clock", "must be a function returning the current datetime")
        self._clock = clock or package_clock.now
        self.items = MemoryItems(adapter=adapter, clock=clock)
        self._ready = False
        self._connected_here = False

    # ----- lifecycle -------------------------------------------------------------------------

    async def initialize(self) -> None:
        """Connect the store when it is not connected and prepare it; calling again does nothing."""
        if self._ready:
            return
        if getattr(self.adapter, "connected", True) is False:
            connect = getattr(self.adapter, "connect", None)
            if connect is None:
                raise NotConnectedError("the core facts store's adapter is not connected")
            unwrap(await connect())
            self._connected_here = True
        try:
            await self._prepare()
        except BaseException:
            await self.close()
            raise
        self._ready = True

    async def _prepare(self) -> None:
        """What a store does once connected, before the first call (nothing here)."""

    async def close(self) -> None:
        """Disconnect the store when :meth:`initialize` connected it. Safe to call twice."""
        self._ready = False
        if self._connected_here:
            self._connected_here = False
            disconnect = getattr(self.adapter, "disconnect", None)
            if disconnect is not None:
                unwrap(await disconnect())

    async def __aenter__(self) -> Self:
        await self.initialize()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def now(self) -> datetime:
        """The current time of this store's clock (aware UTC)."""
        return package_clock.to_utc(self._clock())

    def _require_ready(self) -> None:
        if not self._ready:
            raise NotConnectedError("core facts are not initialized: call initialize() first (or use async with)")

    def _slot(self, key: str) -> tuple[str, str]:
        return (CORE_SUBJECT, CORE_PREFIX + key)

    # ----- calls -----------------------------------------------------------------------------

    async def set(self, key: str, value: str) -> None:
        """Set ``key`` to ``value``: a new value supersedes the current one (kept in the
        history), the same value again changes nothing."""
        self._require_ready()
        checked = check_key("key", key)
        text = check_value("value", value)
        subject, attribute = self._slot(checked)
        await self.items.add(
            {
                "kind": "fact",
                "subject": subject,
                "attribute": attribute,
                "value": text,
                "trust": "system",
                "scope": self.scope,
            }
        )

    async def get(self, key: str) -> str | None:
        """The value ``key`` has now, or ``None`` (never set, or let go)."""
        self._require_ready()
        checked = check_key("key", key)
        for item in await self.items.query(self.scope, slot=self._slot(checked), exact=True):
            if core_key(item) is not None:
                return item.value
        return None

    async def get_all(self) -> dict[str, str]:
        """Every key with a value now, ordered by key."""
        self._require_ready()
        found: dict[str, str] = {}
        for item in await self.items.query(self.scope, subject=CORE_SUBJECT, exact=True):
            key = core_key(item)
            if key is not None:
                found[key] = item.value
        return dict(sorted(found.items()))

    async def get_history(self, key: str) -> list[FactHistoryEntry]:
        """Every value ``key`` had, oldest first (the one it has now last, with no end)."""
        self._require_ready()
        checked = check_key("key", key)
        states = await self.items.history(self.scope, self._slot(checked))
        return [
            FactHistoryEntry(value=s.value, set_at=s.start, ended_at=s.valid_to)
            for s in states
            if core_key(s) is not None
        ]

    async def delete(self, key: str) -> None:
        """Let the value of ``key`` go: it no longer holds, and the history keeps it. A key
        without a value is fine."""
        self._require_ready()
        checked = check_key("key", key)
        await self.items.let_go(self.scope, self._slot(checked))

    async def format_for_prompt(self) -> str:
        """One ``key: value`` line per core fact, ordered by key (``""`` when there is none), each
        framed as data by :func:`~cogitator_memory.facts.prompt.prompt_line` (control characters
        and headings neutralised, at most :data:`~cogitator_memory.facts.prompt.MAX_PROMPT_LINE_CHARS`
        characters); at most :data:`~cogitator_memory.facts.prompt.MAX_PROMPT_CORE_FACTS` facts,
        a last line counting the others."""
        facts = await self.get_all()
        return "\n".join(prompt_lines((f"{key}: {value}" for key, value in facts.items()), MAX_PROMPT_CORE_FACTS))


__all__ = [
    "CORE_PREFIX",
    "CORE_SUBJECT",
    "DEFAULT_CORE_SCOPE",
    "MAX_KEY_CHARS",
    "CoreFacts",
    "FactHistoryEntry",
    "check_key",
    "check_value",
    "core_key",
]
