"""``Memory.search``: one search over everything a user's memory holds.

Turns come from the store's recall index (every thread of the user, not a window of recent
ones: :func:`~cogitator_memory.recall.indexed.gather_turns`), memory items and core facts from
the item store, facts saved with ``remember`` from the knowledge graph's text index. The
:class:`~cogitator_memory.recall.MemoryRetriever` ranks those candidates together; the turns it
returns are read from the store (gone or redacted ones dropped, fork copies merged).

Who may read what is decided here, once, for every surface that searches through
:class:`~cogitator_memory.runtime.Memory` (Python, CLI, MCP, REST): a search for a user reads
that user's turns and items and the shared ones (of no user), never another user's; a
``thread_id`` that is another user's thread is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidArgumentError
from ..index.build import CORE_AGENT, turn_text
from ..index.records import RecallFilter
from ..index.terms import ROOT_LENGTH
from ..items.records import MemoryItem, MemoryScope
from ..recall.indexed import gather_turns, verified_turns
from ..recall.query import analyze_query
from ..recall.retriever import RecallHit
from ..result import unwrap
from ..search.tokenizer import index_terms
from ..threads.records import USER_ID_KEY

if TYPE_CHECKING:
    from .memory import Memory

#: ``type`` of the graph nodes ``remember`` saves (see :mod:`cogitator_memory.tools.memory`).
FACT_TYPE = "fact"
#: Words of the query whose roots are looked up in the graph's text index.
FACT_WORDS = 4
#: Facts read from the graph at most per search.
FACT_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One thing :meth:`Memory.search` found: a turn (``kind="entry"``, with its ``thread_id``),
    a memory item or core fact (``kind="item"``) or a fact saved with ``remember``
    (``kind="fact"``), with its text and score (higher is better)."""

    kind: Literal["entry", "item", "fact"]
    id: str
    text: str
    score: float
    thread_id: str | None = None
    created_at: datetime | None = None

    def dump(self) -> dict[str, Any]:
        """The hit as JSON-ready data."""
        return {
            "kind": self.kind,
            "id": self.id,
            "text": self.text,
            "score": self.score,
            "thread_id": self.thread_id,
            "created_at": self.created_at.isoformat() if self.created_at else None,
        }


async def check_reader(memory: Memory, thread_id: str, user_id: str | None) -> None:
    """Refuse (:class:`InvalidArgumentError`) a read of ``thread_id`` for ``user_id`` when the
    thread is another user's. A thread of no user, a missing thread, or a call for no user
    passes."""
    if user_id is None:
        return
    thread = unwrap(await memory.adapter.get_thread(thread_id))
    owner = (thread.metadata or {}).get(USER_ID_KEY) if thread is not None else None
    if owner is not None and owner != user_id:
        raise InvalidArgumentError("thread_id", f"{thread_id} is another user's thread")


async def _graph_facts(memory: Memory, scope: MemoryScope, words: list[str]) -> list[MemoryItem]:
    """The facts ``remember`` saved in the scope that hold a root of one of the query's longest
    words, as items (subject "fact", the fact as value) so they rank with the others."""
    graph = memory.graph
    if graph is None or not words:
        return []
    chosen = sorted(dict.fromkeys(words), key=len, reverse=True)[:FACT_WORDS]
    found: dict[str, Any] = {}
    for word in chosen:
        root = word[: max(ROOT_LENGTH, 3)] if word.isascii() and word.isalpha() else word
        nodes = unwrap(
            await graph.query_nodes(
                {
                    "agent_id": scope.agent_id,
                    "visible_to": scope,
                    "types": [FACT_TYPE],
                    "text": root,
                    "limit": FACT_CANDIDATES,
                }
            )
        )
        for node in nodes:
            found.setdefault(node.id, node)
    items: list[MemoryItem] = []
    for node in found.values():
        text = node.description or node.name
        items.append(
            MemoryItem(
                id=node.id,
                status="active",
                kind="fact",
                subject="fact",
                value=text,
                trust="user",
                scope=node.scope,
                recorded_at=node.updated_at,
            )
        )
    return items


async def search_memory(
    memory: Memory, query: str, *, agent: str, user: str | None, thread_id: str | None, limit: int
) -> list[SearchHit]:
    """The hits of :meth:`Memory.search` (arguments checked by it; see the module docs)."""
    if thread_id is not None:
        await check_reader(memory, thread_id, user)
    store: Any = memory.adapter
    analysis = analyze_query(query)
    if not analysis.search:
        return []
    if memory.indexer is not None:
        await memory.indexer.ready()
    flt = RecallFilter(agent_id=agent, user_id=user, thread_id=thread_id)
    query_vector = None
    if memory.message_index is not None and memory.embedding_service is not None:
        await memory.message_index.flush()  # read your writes: turns added a moment ago
        query_vector = await memory.embedding_service.embed(query)
    candidates = await gather_turns(
        store,
        query,
        flt,
        analysis,
        vectors=memory.vectors if query_vector is not None else None,
        query_vector=query_vector,
    )
    scope = MemoryScope(agent_id=agent, user_id=user)
    items: list[MemoryItem] = []
    facts: set[str] = set()
    if thread_id is None:
        statuses = ["active", "superseded"]
        items = unwrap(
            await store.query_items({"visible_to": scope, "statuses": statuses, "known_at": analysis.anchor})
        )
        core = MemoryScope(agent_id=CORE_AGENT, user_id=user)
        items += unwrap(
            await store.query_items({"visible_to": core, "statuses": statuses, "known_at": analysis.anchor})
        )
        graph_facts = await _graph_facts(memory, scope, index_terms(query))
        facts = {i.id for i in graph_facts}
        items += graph_facts
    found = await memory.retriever.retrieve(
        query,
        history=candidates.history,
        cosines=candidates.cosines,
        keyword_hits=candidates.keyword,
        items=items,
        limit=min(100, limit * 2),
        analysis=analysis,
    )
    turn_ids = [h.id for h in found.hits if h.entry is not None]
    stored = await verified_turns(store, turn_ids) if turn_ids else {}
    hits: list[SearchHit] = []
    for hit in found.hits:
        made = _hit(hit, stored, facts)
        if made is not None:
            hits.append(made)
        if len(hits) == limit:
            break
    return hits


def _hit(hit: RecallHit, stored: dict[str, Any], facts: set[str]) -> SearchHit | None:
    if hit.entry is not None:
        entry = stored.get(hit.id)
        if entry is None:
            return None
        return SearchHit(
            kind="entry",
            id=hit.id,
            text=turn_text(entry),
            score=hit.score,
            thread_id=entry.thread_id,
            created_at=entry.created_at,
        )
    assert hit.item is not None
    if hit.id in facts:
        return SearchHit(kind="fact", id=hit.id, text=hit.item.value, score=hit.score, created_at=hit.item.recorded_at)
    return SearchHit(kind="item", id=hit.id, text=hit.text, score=hit.score, created_at=hit.item.recorded_at)


__all__ = ["SearchHit", "check_reader", "search_memory"]
