"""What memory believes about a user now, with where each belief came from and what it replaced:
the data of the inspector's user view (``GET /api/users/{user_id}``) and of every state of a
scope's slots (``GET /api/items/states``).

Everything is read through the calls the rest of the package uses: the items a scope holds now
are :meth:`MemoryItems.query <cogitator_memory.items.MemoryItems.query>` (what ``build_context``
reads); every state of their slots, superseded and stale ones included, is the item store's own
query (any status, any time), grouped by slot. Core facts are the ``system`` items of the
``core`` agent (see :mod:`cogitator_memory.facts.core`), graph facts and entities the nodes and
edges of the knowledge graph the user's scope sees. A user's threads are found as the forget
finds them (:func:`~cogitator_memory.cascade.find_user_threads`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ...cascade import find_user_threads
from ...cascade.derived import chunks
from ...cascade.entries import listed_ids
from ...cascade.service import CORE_AGENT
from ...facts.core import core_key
from ...items.records import ITEM_STATUSES, MemoryItem, MemoryScope, visible_scope_keys
from ...items.rules import layout_order
from ...items.service import MemoryItems
from ...result import unwrap
from ...threads import tree
from ...threads.records import MEMORY_AGENTS_KEY
from ...tools.memory import FACT_TYPE

MAX_STATES = 2000
"""The most item states (or graph nodes) one view reads per agent; past it the view says
``truncated``."""


def _state(item: MemoryItem, held: set[str], starts: dict[datetime, MemoryItem]) -> dict[str, Any]:
    row: dict[str, Any] = {"item": item, "held_now": item.id in held}
    if item.status == "superseded" and item.valid_to is not None:
        after = starts.get(item.valid_to)
        if after is not None and after.id != item.id:
            row["replaced_by"] = {"id": after.id, "value": after.value}
    key = core_key(item)
    if key is not None:
        row["core_key"] = key
    return row


async def slot_states(items: MemoryItems, scope: MemoryScope, *, limit: int = MAX_STATES) -> dict[str, Any]:
    """Every state of every slot ``scope`` sees, grouped by slot and scope, newest first, each
    marked ``held_now`` when :meth:`MemoryItems.query` reads it now, a superseded one with what
    ``replaced_by`` it; slots holding now come first. An item without an attribute is a slot of
    its own (its values do not replace each other)."""
    every: list[MemoryItem] = unwrap(
        await items.adapter.query_items({"visible_to": scope, "statuses": list(ITEM_STATUSES), "limit": limit + 1})
    )
    truncated = len(every) > limit
    every = every[:limit]
    held = {i.id for i in await items.query(scope)}
    groups: dict[tuple[str, str], list[MemoryItem]] = {}
    for item in every:
        slot = item.slot_key if item.attribute else f"item:{item.id}"
        groups.setdefault((item.scope_key, slot), []).append(item)
    slots: list[dict[str, Any]] = []
    for states in groups.values():
        states.sort(key=layout_order)
        starts = {s.start: s for s in states if s.status in ("active", "superseded")}
        first = states[-1]
        slots.append(
            {
                "subject": first.subject,
                "attribute": first.attribute,
                "scope": first.scope,
                "shared": first.scope.user_id is None,
                "held_now": any(s.id in held for s in states),
                "states": [_state(s, held, starts) for s in reversed(states)],
            }
        )
    slots.sort(key=lambda s: (not s["held_now"], s["subject"].casefold(), (s["attribute"] or "").casefold()))
    return {"slots": slots, "truncated": truncated}


async def _graph(graph: Any, scope: MemoryScope, limit: int) -> dict[str, Any]:
    nodes = unwrap(await graph.query_nodes({"agent_id": scope.agent_id, "visible_to": scope, "limit": limit + 1}))
    truncated = len(nodes) > limit
    nodes = nodes[:limit]
    visible = set(visible_scope_keys(scope))
    edges: dict[str, Any] = {}
    for part in chunks([n.id for n in nodes]):
        for edge in unwrap(await graph.query_edges({"agent_id": scope.agent_id, "node_ids": part})):
            if edge.scope_key in visible:
                edges[edge.id] = edge
    names = {n.id: n.name for n in nodes}
    shown = [
        n.model_dump(exclude={"embedding"}, exclude_none=True) | {"shared": n.scope.user_id is None} for n in nodes
    ]
    return {
        "facts": [n for n in shown if n["type"] == FACT_TYPE],
        "entities": [n for n in shown if n["type"] != FACT_TYPE],
        "relations": [
            {"edge": e, "source": names.get(e.source_id, e.source_id), "target": names.get(e.target_id, e.target_id)}
            for e in sorted(edges.values(), key=lambda e: e.created_at)
        ],
        "truncated": truncated,
    }


def _agents(first: Iterable[str], threads: Iterable[Any]) -> list[str]:
    out = list(first)
    for thread in threads:
        out.extend([thread.agent_id, *listed_ids(thread, MEMORY_AGENTS_KEY)])
    return list(dict.fromkeys(a for a in out if a != CORE_AGENT))


async def user_view(
    memory: Any, user_id: str, *, agent_id: str | None = None, limit: int = MAX_STATES
) -> dict[str, Any]:
    """What memory believes about ``user_id`` now, for ``agent_id`` (default the memory's) and
    the agents of the user's threads: their ``threads`` (newest first), ``core_facts``, and by
    agent the ``items`` (every state of each slot, see :func:`slot_states`) and the ``graph``
    (``facts`` that ``remember`` saved, ``entities``, ``relations``) their scope sees. The
    user's own records and the agent's shared ones both show, each marked ``shared`` or not."""
    user = tree.check_id("user_id", user_id)
    agent = memory.agent_id if agent_id is None else tree.check_id("agent_id", agent_id)
    found = await find_user_threads(memory.adapter, user)
    threads = sorted([*found.owned, *found.joined], key=lambda t: t.updated_at, reverse=True)
    agents = _agents([agent], threads)
    core = await slot_states(memory.items, MemoryScope(agent_id=CORE_AGENT, user_id=user), limit=limit)
    by_agent: list[dict[str, Any]] = []
    for name in agents:
        scope = MemoryScope(agent_id=name, user_id=user)
        shown: dict[str, Any] = {"agent_id": name, "items": await slot_states(memory.items, scope, limit=limit)}
        if memory.graph is not None:
            shown["graph"] = await _graph(memory.graph, scope, limit)
        by_agent.append(shown)
    owned = {t.id for t in found.owned}
    return {
        "user_id": user,
        "threads": [
            {
                "id": t.id,
                "agent_id": t.agent_id,
                "title": (t.metadata or {}).get("title"),
                "updated_at": t.updated_at,
                "owned": t.id in owned,
            }
            for t in threads
        ],
        "core_facts": core,
        "agents": by_agent,
        "graph_enabled": memory.graph is not None,
    }


__all__ = ["MAX_STATES", "slot_states", "user_view"]
