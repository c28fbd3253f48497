"""What ``include_facts`` sends under ``Known facts:``.

With an item store among the builder's deps (``memory_items``: a
:class:`~cogitator_memory.items.MemoryItems` or a store that keeps items; else a
``fact_adapter`` that keeps items, as every built-in store does), the facts are the memory items
the run sees (its agent, its user, its thread) that hold at the build's ``as_of``, as memory
knew them then:

- one state per slot: the one that started last, the narrowest scope on a tie (a user's value
  over the agent's shared one);
- instructions and preferences first, then the newest first;
- a state that replaced another value is sent with ``(previously: X)``: X is the value the run
  saw just before the state started (the state of the slot that held then, in a scope the run
  sees, not stale), when it differs; a value that ended on its own before (memory let it go, a
  fact expired) held no longer, so nothing is shown for it;
- a fact written through the ``FactAdapter`` is sent as its content, a core fact as
  ``key: value``, any other item as ``subject (attribute): value``;
- every line is framed as data (:func:`~cogitator_memory.facts.prompt.prompt_line`: one line,
  control characters and headings neutralised, at most
  :data:`~cogitator_memory.facts.prompt.MAX_PROMPT_LINE_CHARS` characters); the fact in
  ``BuiltContext.facts`` keeps the text as stored.

A ``fact_adapter`` that keeps no items (any object with an async ``get_facts``, the
:class:`~cogitator_memory.context.FactSource` protocol) is read as well, its facts sent as their
``content`` in its order after the items' (a fact whose id an item already has is not repeated),
framed the same way.

With a build's input and a knowledge graph that keeps a recall index (every built-in graph
store), the facts ``remember`` saved (graph nodes of type ``fact``) that the input's words
match are sent too, after the items, best match first, at most :data:`REMEMBERED_LIMIT`: the
run's own and shared ones (a fact of another user never; without a user, only shared ones),
each as its text, its :class:`~cogitator_memory.graph.GraphNode` in ``BuiltContext.facts``.
(The spec leaves these to the ``recall`` tool; a fact the user asked to be remembered reaching
the next conversation's context is what users expect of one memory.)
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from ..facts.core import core_key
from ..facts.prompt import prompt_line
from ..index.base import is_recall_index
from ..index.build import FACT_TYPE, node_text
from ..index.records import RecallFilter
from ..items import rules
from ..items.base import MemoryItemAdapter, is_memory_item_adapter
from ..items.facts import Fact, fact_of, reading_time
from ..items.records import ITEM_KINDS, LAID_OUT_STATUSES, MemoryItem, start_order
from ..result import MemoryResult, unwrap

if TYPE_CHECKING:
    from .sources import ContextBuilderDeps

#: The facts saved with ``remember`` a build sends at most (those its input matches).
REMEMBERED_LIMIT = 8
#: Item kinds sent before the others.
FIRST_KINDS = frozenset({"instruction", "preference"})
_TICK = timedelta(microseconds=1)
#: The groups of kinds a present build reads apart, in the order sent.
_GROUPS = (sorted(FIRST_KINDS), sorted(set(ITEM_KINDS) - FIRST_KINDS))
#: The fewest states a present build reads of each group first.
_FIRST_PAGE = 64


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


def chosen_states(holding: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Of the states that hold (one per slot and scope), those sent as facts, in the order sent:
    one per slot across scopes (started last, the narrowest scope on a tie), then instructions
    and preferences first and the newest first."""
    chosen: dict[str, tuple[tuple[Any, ...], MemoryItem]] = {}
    out: list[MemoryItem] = []
    for item in holding:
        if item.attribute is None:
            out.append(item)
            continue
        key = item.slot_key
        rank = _rank(item)
        best = chosen.get(key)
        if best is None or rank > best[0]:
            chosen[key] = (rank, item)
    out += [item for _, item in chosen.values()]
    out.sort(key=lambda i: (i.start, i.recorded_at, i.id), reverse=True)
    out.sort(key=lambda i: i.kind not in FIRST_KINDS)
    return out


def _rank(item: MemoryItem) -> tuple[Any, ...]:
    return (item.start, _narrowness(item), item.recorded_at, item.id)


def just_before(item: MemoryItem) -> datetime:
    """The moment just before ``item`` started, when the state it replaced still held."""
    return item.start - _TICK if item.start > datetime.min.replace(tzinfo=UTC) else item.start


def replaced_state(item: MemoryItem, held_before: Sequence[MemoryItem]) -> MemoryItem | None:
    """The state ``item`` replaced, when it is shown: of ``held_before`` (the states of its slot
    that held just before it started, one per scope), the one the run saw then (started last,
    the narrowest scope on a tie), when its value differs. A value that ended on its own before
    (let go, expired) held no longer, so nothing is shown for it."""
    candidates = [s for s in held_before if s.id != item.id and s.start < item.start]
    if not candidates:
        return None
    before = max(candidates, key=_rank)
    return None if rules.same_value(before.value, item.value) else before


def held_facts(items: Sequence[MemoryItem], as_of: datetime) -> list[tuple[MemoryItem, MemoryItem | None]]:
    """The items sent as facts at ``as_of``, in the order sent, each with the state it replaced
    when that is shown (see the module docstring). ``items`` are the active and superseded items
    the run sees, as recorded by ``as_of``: each slot is laid out again from what was known then."""
    known = [i for i in items if i.status in LAID_OUT_STATUSES and rules.known_at(i, as_of)]
    holding = rules.holding(known, as_of=as_of, known_at_time=as_of, relayout=True)
    states: dict[str, list[MemoryItem]] = defaultdict(list)
    for item in known:
        if item.attribute is not None:
            states[item.slot_key].append(item)
    out: list[tuple[MemoryItem, MemoryItem | None]] = []
    for item in chosen_states(holding):
        before = None
        if item.attribute is not None:
            then = rules.holding(states[item.slot_key], as_of=just_before(item), known_at_time=as_of, relayout=True)
            before = replaced_state(item, then)
        out.append((item, before))
    return out


async def _sent_now(adapter: MemoryItemAdapter, scope: dict[str, Any], at: datetime, limit: int) -> list[MemoryItem]:
    """The first ``limit`` states sent as facts at ``at`` (not before the reading time), read
    without reading every state that holds: what :func:`chosen_states` of all of them would put
    first. Each group of kinds (instructions and preferences, then the rest) is read latest
    started first (``order="start"``), and every slot of what would be sent is read whole (its
    states in other scopes and kinds). When a group's page was full and a state left unread could
    still rank among those sent, the pages grow fourfold and are read again."""
    if limit <= 0:
        return []
    base = {"visible_to": scope, "statuses": sorted(LAID_OUT_STATUSES), "as_of": at}
    size = max(2 * limit, _FIRST_PAGE)
    while True:
        results = await asyncio.gather(
            *(adapter.query_items({**base, "kinds": kinds, "order": "start", "limit": size}) for kinds in _GROUPS)
        )
        pages: list[list[MemoryItem]] = [unwrap(result) for result in results]
        read = {item.id: item for page in pages for item in page}
        whole: set[str] = set()
        while True:
            holding = rules.holding(read.values(), as_of=at, known_at_time=at, relayout=False)
            sent = chosen_states(holding)[:limit]
            slots = {i.slot_key: i.slot for i in sent if i.attribute is not None and i.slot_key not in whole}
            if not slots:
                break
            more = unwrap(await adapter.query_items({**base, "slots": list(slots.values())}))
            read.update((item.id, item) for item in more)
            whole |= slots.keys()
        first = [item for item in sent if item.kind in FIRST_KINDS]
        if _read_enough(pages[0], size, first, limit) and (
            len(first) >= limit or _read_enough(pages[1], size, sent[len(first) :], limit - len(first))
        ):
            return sent
        size *= 4


def _read_enough(page: list[MemoryItem], size: int, sent: list[MemoryItem], quota: int) -> bool:
    """Whether no state of a group left unread by ``page`` (its ``size`` latest in
    :func:`~cogitator_memory.items.records.start_order`, oldest first) can be among the group's
    ``sent`` states (at most ``quota``): the group was read whole, or its quota is met by states
    that come after every one left unread in that order."""
    if quota <= 0 or len(page) < size:
        return True
    return len(sent) >= quota and start_order(page[0]) <= start_order(sent[-1])


async def _item_facts(
    adapter: MemoryItemAdapter, scope: dict[str, Any], as_of: datetime | None, limit: int
) -> list[tuple[MemoryItem, MemoryItem | None]]:
    """The items sent as facts, with the states they replaced. A build of the present (``as_of``
    not before the agent's reading time) reads the states that hold by their times, and for each
    sent slot the states that held just before its state started, so its cost follows what is
    sent, not the history; a build in the past reads every state known then and lays each slot
    out again from those."""
    statuses = sorted(LAID_OUT_STATUSES)
    now = reading_time(adapter, scope["agent_id"])
    if as_of is not None and as_of < now:
        found: list[MemoryItem] = unwrap(
            await adapter.query_items({"visible_to": scope, "statuses": statuses, "known_at": as_of})
        )
        return held_facts(found, as_of)[:limit]
    at = as_of or now
    sent = await _sent_now(adapter, scope, at, limit)
    # for each sent slot, the states that held just before its state started: one query each,
    # bounded by what held then (one query of the slots' whole histories would read every state
    # of a slot that changed thousands of times)
    slotted = [item for item in sent if item.attribute is not None]
    earlier = await asyncio.gather(
        *(
            adapter.query_items(
                {"visible_to": scope, "slot": item.slot, "statuses": statuses, "as_of": just_before(item)}
            )
            for item in slotted
        )
    )
    before: dict[str, MemoryItem | None] = {}
    for item, result in zip(slotted, earlier, strict=True):
        then: list[MemoryItem] = unwrap(result)
        before[item.id] = replaced_state(
            item, rules.holding(then, as_of=just_before(item), known_at_time=at, relayout=False)
        )
    return [(item, before.get(item.id)) for item in sent]


async def read_fact_lines(
    deps: ContextBuilderDeps,
    agent_id: str,
    user_id: str | None,
    thread_id: str,
    as_of: datetime | None,
    limit: int,
    query: str | None = None,
) -> list[FactLine]:
    """The facts of a build, in the order sent, at most ``limit`` from each source. ``as_of``
    ``None`` reads them as they hold now (see
    :func:`~cogitator_memory.items.facts.reading_time`: a burst of writes just before is seen).
    ``query`` (the build's input) picks the facts ``remember`` saved that are sent too."""
    lines: list[FactLine] = []
    adapter = items_of(deps)
    if adapter is not None:
        scope: dict[str, Any] = {"agent_id": agent_id, "thread_id": thread_id}
        if user_id is not None:
            scope["user_id"] = user_id
        for item, before in await _item_facts(adapter, scope, as_of, limit):
            text = item_text(item)
            if before is not None:
                text += f" (previously: {before.value})"
            lines.append(FactLine(prompt_line(text), item.id, item_fact(item)))
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
            line = prompt_line(content)
            if line:
                lines.append(FactLine(line, source_id, fact))
    if query is not None and query.strip():
        lines.extend(await remembered_lines(deps, agent_id, user_id, query, min(limit, REMEMBERED_LIMIT)))
    return lines


async def remembered_lines(
    deps: ContextBuilderDeps, agent_id: str, user_id: str | None, query: str, limit: int = REMEMBERED_LIMIT
) -> list[FactLine]:
    """The facts ``remember`` saved in the run's scope that ``query``'s words match (the graph's
    recall index, stemmed keywords), best first, at most ``limit``; each read again from the
    graph, so one deleted since it was indexed is not sent."""
    graph: Any = deps.graph_adapter
    if graph is None or limit <= 0 or not is_recall_index(graph):
        return []
    flt = RecallFilter(agent_id=agent_id, user_id=user_id, kinds=["graph_fact"], statuses=["active"])
    found = unwrap(await graph.recall_keyword(query, filter=flt, limit=limit * 4))
    ids = [
        c.record.source_id
        for c in found
        if c.record.role == FACT_TYPE and (c.record.user_id is None or c.record.user_id == user_id)
    ][:limit]
    nodes = await asyncio.gather(*(graph.get_node(i) for i in ids))
    lines: list[FactLine] = []
    for result in nodes:
        node = unwrap(result)
        if node is None:
            continue
        line = prompt_line(node_text(node))
        if line:
            lines.append(FactLine(line, node.id, node))
    return lines


__all__ = [
    "FIRST_KINDS",
    "REMEMBERED_LIMIT",
    "FactLine",
    "chosen_states",
    "held_facts",
    "item_fact",
    "item_text",
    "items_of",
    "just_before",
    "read_fact_lines",
    "remembered_lines",
    "replaced_state",
]
