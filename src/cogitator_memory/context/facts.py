"""What ``include_facts`` sends under ``Known facts:``.

With an item store among the builder's deps (``memory_items``: a
:class:`~cogitator_memory.items.MemoryItems` or a store that keeps items; else a
``fact_adapter`` that keeps items, as every built-in store does), the facts are the memory items
the run sees (its agent, its user, its thread) that hold at the build's ``as_of``, as memory
knew them then:

- one state per slot: the one that started last, the narrowest scope on a tie (a user's value
  over the agent's shared one);
- instructions and preferences first, then the newest first;
- a state that replaced another value is sent with ``(previously: X)``, X the value of the
  state that started last before it (in a scope the run sees, not stale), unless that state
  ended on its own before it started (memory let it go) or holds the same value;
- a fact written through the ``FactAdapter`` is sent as its content, a core fact as
  ``key: value``, any other item as ``subject (attribute): value``.

A ``fact_adapter`` that keeps no items (any object with an async ``get_facts``, the
:class:`~cogitator_memory.context.FactSource` protocol) is read as well, its facts sent as their
``content`` in its order after the items' (a fact whose id an item already has is not repeated).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from .. import clock
from ..facts.core import core_key
from ..items import rules
from ..items.base import MemoryItemAdapter, is_memory_item_adapter
from ..items.facts import Fact, fact_of
from ..items.records import LAID_OUT_STATUSES, MemoryItem
from ..result import MemoryResult, unwrap

if TYPE_CHECKING:
    from .sources import ContextBuilderDeps

#: Item kinds sent before the others.
FIRST_KINDS = frozenset({"instruction", "preference"})


@dataclass(slots=True)
class FactLine:
    """One fact as a build sends it: the ``text`` of its line, the ``source_id`` of its block
    (the memory item's id, or the fact source's id for the fact) and the ``fact`` that goes into
    ``BuiltContext.facts``."""

    text: str
    source_id: str | None
    fact: Any


def items_of(deps: ContextBuilderDeps) -> MemoryItemAdapter | None:
    """The item store facts are read from: ``memory_items`` (a store, or a service's
    ``adapter``), else a ``fact_adapter`` that keeps items; ``None`` when there is none."""
    sources: tuple[Any, ...] = (deps.memory_items, deps.fact_adapter)
    for source in sources:
        if source is None:
            continue
        if is_memory_item_adapter(source):
            return cast(MemoryItemAdapter, source)
        inner = getattr(source, "adapter", None)
        if inner is not None and is_memory_item_adapter(inner):
            return cast(MemoryItemAdapter, inner)
        if source is deps.memory_items:
            raise TypeError("deps.memory_items must be a MemoryItems service or a MemoryItemAdapter")
    return None


def item_text(item: MemoryItem) -> str:
    """How an item is sent as a fact: a fact's content, a core fact's ``key: value``, else
    ``subject (attribute): value``."""
    made = fact_of(item)
    if made is not None:
        return made.content
    key = core_key(item)
    if key is not None:
        return f"{key}: {item.value}"
    head = f"{item.subject} ({item.attribute})" if item.attribute else item.subject
    return f"{head}: {item.value}"


def item_fact(item: MemoryItem) -> Fact:
    """The :class:`~cogitator_memory.items.facts.Fact` an item is sent as: its own fact when it
    holds one, else a fact read from the item (its id, its text, its kind as category)."""
    made = fact_of(item)
    if made is not None:
        return made
    return Fact(
        id=item.id,
        agent_id=item.scope.agent_id,
        content=item_text(item),
        category=item.kind,
        confidence=item.confidence,
        source="system" if item.trust == "system" else ("user" if item.trust == "user" else "inferred"),
        created_at=item.recorded_at,
        updated_at=item.recorded_at,
        expires_at=item.ends_at,
        metadata=dict(item.metadata),
        evidence=[e.model_copy() for e in item.evidence],
        item_id=item.id,
    )


def _narrowness(item: MemoryItem) -> int:
    scope = item.scope
    return sum(limit is not None for limit in (scope.user_id, scope.project_id, scope.thread_id))


def held_facts(items: Sequence[MemoryItem], as_of: datetime) -> list[tuple[MemoryItem, MemoryItem | None]]:
    """The items sent as facts at ``as_of``, in the order sent, each with the state it replaced
    when that is shown (see the module docstring). ``items`` are the active and superseded items
    the run sees, as recorded by ``as_of``."""
    known = [i for i in items if i.status in LAID_OUT_STATUSES and rules.known_at(i, as_of)]
    holding = rules.holding(known, as_of=as_of, known_at_time=as_of, relayout=True)
    chosen: dict[str, MemoryItem] = {}
    loose: list[MemoryItem] = []
    for item in holding:
        if item.attribute is None:
            loose.append(item)
            continue
        rank = (item.start, _narrowness(item), item.recorded_at, item.id)
        best = chosen.get(item.slot_key)
        if best is None or rank > (best.start, _narrowness(best), best.recorded_at, best.id):
            chosen[item.slot_key] = item
    states: dict[str, list[MemoryItem]] = defaultdict(list)
    for item in known:
        if item.attribute is not None and item.slot_key in chosen:
            states[item.slot_key].append(item)
    out: list[tuple[MemoryItem, MemoryItem | None]] = []
    for key, item in chosen.items():
        order = rules.layout_order(item)
        earlier = [s for s in states[key] if s.start < item.start and rules.layout_order(s) < order]
        before = max(earlier, key=rules.layout_order) if earlier else None
        if before is not None and (
            rules.same_value(before.value, item.value) or (before.ends_at is not None and before.ends_at <= item.start)
        ):
            before = None
        out.append((item, before))
    out += [(item, None) for item in loose]
    out.sort(key=lambda pair: (pair[0].start, pair[0].recorded_at, pair[0].id), reverse=True)
    out.sort(key=lambda pair: pair[0].kind not in FIRST_KINDS)
    return out


async def read_fact_lines(
    deps: ContextBuilderDeps,
    agent_id: str,
    user_id: str | None,
    thread_id: str,
    as_of: datetime | None,
    limit: int,
) -> list[FactLine]:
    """The facts of a build, in the order sent, at most ``limit`` from each source. ``as_of``
    ``None`` reads them as they hold now: at the clock's time, or at the newest record time when
    that is later (writes of one agent run a millisecond apart, so a burst of them records ahead
    of the clock, and the build that follows must see them)."""
    lines: list[FactLine] = []
    adapter = items_of(deps)
    if adapter is not None:
        scope: dict[str, Any] = {"agent_id": agent_id, "thread_id": thread_id}
        if user_id is not None:
            scope["user_id"] = user_id
        flt: dict[str, Any] = {"visible_to": scope, "statuses": sorted(LAID_OUT_STATUSES)}
        if as_of is not None:
            flt["known_at"] = as_of
        found: list[MemoryItem] = unwrap(await adapter.query_items(flt))
        at = as_of or max([clock.now(), *(i.recorded_at for i in found)])
        for item, before in held_facts(found, at)[:limit]:
            text = item_text(item)
            if before is not None:
                text += f" (previously: {before.value})"
            lines.append(FactLine(text, item.id, item_fact(item)))
    source: Any = deps.fact_adapter
    read = adapter is not None and (source is adapter or getattr(source, "adapter", None) is adapter)
    if source is not None and not read:
        got: Any = await source.get_facts(agent_id, user_id=user_id, limit=limit)
        facts = unwrap(got) if isinstance(got, MemoryResult) else got
        seen = {line.source_id for line in lines}
        for fact in facts or []:
            content = getattr(fact, "content", None)
            if not isinstance(content, str):
                continue
            source_id = str(getattr(fact, "id", "")) or None
            if source_id is not None and source_id in seen:
                continue
            lines.append(FactLine(content, source_id, fact))
    return lines


__all__ = ["FIRST_KINDS", "FactLine", "held_facts", "item_fact", "item_text", "items_of", "read_fact_lines"]
