"""``Memory.search``: one search over everything a user's memory holds.

Turns, memory items, core facts and graph facts (what ``remember`` saved) come from the store's
recall index: every thread of the user, not a window of recent ones
(:func:`~cogitator_memory.recall.indexed.gather_turns`, :func:`indexed_items`). The
:class:`~cogitator_memory.recall.MemoryRetriever` ranks those candidates together; the turns it
returns are read from the store (gone or redacted ones dropped, fork copies merged).

Who may read what is decided here, once, for every surface that searches through
:class:`~cogitator_memory.runtime.Memory` (Python, CLI, MCP, REST): a search for a user reads
that user's turns and items and the shared ones (of no user), never another user's; a
``thread_id`` that is another user's thread is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..context.strategies import cosines
from ..errors import InvalidArgumentError, MemoryStoreError
from ..index.base import is_recall_index
from ..index.build import turn_text
from ..index.records import RecallFilter
from ..items.records import MemoryItem, MemoryScope
from ..recall.indexed import DEPTH, ChannelHits, channel_hits, gather_turns, nearest, verified_turns
from ..recall.item_vectors import ITEMS_INDEX, item_vectors
from ..recall.query import QueryAnalysis, analyze_query_async
from ..recall.retriever import RecallHit
from ..result import unwrap
from ..threads.records import USER_ID_KEY

if TYPE_CHECKING:
    from .memory import Memory

logger = logging.getLogger("cogitator_memory")

#: Seconds a search waits for the vectors of turns added a moment ago.
VECTOR_WAIT = 2.0
#: What the score of a memory item that no longer holds, and of the turns that said it, is
#: multiplied by: the current value comes first.
SUPERSEDED_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One thing :meth:`Memory.search` found: a turn (``kind="entry"``, with its ``thread_id``),
    a memory item or core fact (``kind="item"``; ``valid_to`` says when one that no longer holds
    stopped holding) or a fact saved with ``remember`` (``kind="fact"``), with its text and score
    (higher is better)."""

    kind: Literal["entry", "item", "fact"]
    id: str
    text: str
    score: float
    thread_id: str | None = None
    created_at: datetime | None = None
    #: When a memory item that no longer holds stopped holding (``None`` while it holds).
    valid_to: datetime | None = None

    def dump(self) -> dict[str, Any]:
        """The hit as JSON-ready data."""
        return {
            "kind": self.kind,
            "id": self.id,
            "text": self.text,
            "score": self.score,
            "thread_id": self.thread_id,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
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


async def indexed_items(
    store: Any,
    found: ChannelHits,
    flt: RecallFilter,
    analysis: QueryAnalysis,
    *,
    vectors: Any = None,
    query_vector: Sequence[float] | None = None,
) -> tuple[list[MemoryItem], set[str]]:
    """The memory items, core facts and graph facts among what the index's channels ``found``
    (keywords; time, when the query names one), and with ``vectors`` and ``query_vector`` the
    items' vectors searched by user and agent in ``flt``'s scope, as items to rank, and the ids
    of those that are graph facts. Items are read from the store (active and superseded ones
    as stored); a graph fact is ranked as an item of subject "fact" holding its text."""
    chosen = [*found.keyword, *found.timed]
    ids = list(dict.fromkeys(c.record.source_id for c in chosen if c.record.kind in ("item", "core_fact")))
    if vectors is not None and query_vector is not None:
        near = await nearest(vectors, query_vector, flt.model_copy(update={"thread_id": None}), ITEMS_INDEX, DEPTH)
        ids = list(dict.fromkeys([*ids, *(h.source_id for h in near if h.source_id)]))
    stored: list[MemoryItem] = unwrap(await store.get_items(ids)) if ids else []
    items = [i for i in stored if i.status in ("active", "superseded")]
    facts: set[str] = set()
    for candidate in found.keyword:
        record = candidate.record
        if record.kind != "graph_fact" or record.source_id in facts:
            continue
        facts.add(record.source_id)
        items.append(
            MemoryItem(
                id=record.source_id,
                status="active",
                kind="fact",
                subject="fact",
                value=record.text,
                trust="user",
                scope=MemoryScope(
                    agent_id=record.agent_id or flt.agent_id or "default",
                    user_id=record.user_id,
                    thread_id=record.thread_id,
                ),
                recorded_at=record.said_at,
            )
        )
    return items, facts


async def _query_vector(memory: Memory, query: str) -> list[float] | None:
    """The query's vector, once the turns added a moment ago are embedded (waiting at most
    :data:`VECTOR_WAIT` seconds for them); ``None``, with a warning, when the embedding service
    fails: the search goes on by keywords, time and names."""
    assert memory.message_index is not None
    memory.message_index.retry_failed()  # turns whose embedding failed earlier, in the background
    try:
        await asyncio.wait_for(asyncio.shield(memory.message_index.flush()), VECTOR_WAIT)
    except TimeoutError:
        logger.warning("search: turns added a moment ago are still being embedded; searching without them")
    try:
        return list(await memory.embedding_service.embed(query))
    except Exception as exc:
        logger.warning("search: the embedding service failed (%s); searching by keywords, time and names", exc)
        return None


async def search_memory(
    memory: Memory, query: str, *, agent: str, user: str | None, thread_id: str | None, limit: int
) -> list[SearchHit]:
    """The hits of :meth:`Memory.search` (arguments checked by it; see the module docs)."""
    if thread_id is not None:
        await check_reader(memory, thread_id, user)
    store: Any = memory.adapter
    if not is_recall_index(store):
        raise MemoryStoreError(
            f"the {memory.adapter.provider} store keeps no recall index: search needs one "
            "(mix RecallIndexMixin into the store; every built-in store has it)"
        )
    analysis = await analyze_query_async(query)
    if not analysis.search:
        return []
    if memory.indexer is not None:
        await memory.indexer.ready()
    flt = RecallFilter(agent_id=agent, user_id=user, thread_id=thread_id)
    query_vector = None
    if memory.message_index is not None and memory.embedding_service is not None:
        query_vector = await _query_vector(memory, query)
    kinds = ["turn"] if thread_id is not None else None  # items, facts: only when not in one thread
    found = await channel_hits(store, query, flt.model_copy(update={"kinds": kinds}), analysis, 2 * DEPTH)
    candidates = await gather_turns(
        store,
        query,
        flt,
        analysis,
        vectors=memory.vectors if query_vector is not None else None,
        query_vector=query_vector,
        found=found,
    )
    items: list[MemoryItem] = []
    facts: set[str] = set()
    item_cos: dict[str, float] = {}
    if thread_id is None:
        vectors = memory.vectors if query_vector is not None else None
        items, facts = await indexed_items(store, found, flt, analysis, vectors=vectors, query_vector=query_vector)
        real = [i for i in items if i.id not in facts]
        if vectors is not None and query_vector is not None and real:
            try:
                known = await item_vectors(vectors, memory.embedding_service, real)
                ids = [i.id for i in real if i.id in known]
                item_cos = dict(zip(ids, cosines(query_vector, [known[i] for i in ids]), strict=True))
            except Exception as exc:  # the items are still found by their words
                logger.warning("search: the items' vectors could not be read or made (%s)", exc)
    ranked = await memory.retriever.retrieve(
        query,
        history=candidates.history,
        cosines=candidates.cosines,
        keyword_hits=candidates.keyword,
        turn_terms={rid: r.terms for rid, r in candidates.records.items()},
        items=items,
        item_cosines=item_cos,
        limit=min(100, limit * 2),
        analysis=analysis,
    )
    turn_ids = [h.id for h in ranked.hits if h.entry is not None]
    stored = await verified_turns(store, turn_ids) if turn_ids else {}
    made = [_hit(hit, stored, facts) for hit in ranked.hits]
    return _current_first([h for h in made if h is not None], items)[:limit]


def _current_first(hits: list[SearchHit], items: list[MemoryItem]) -> list[SearchHit]:
    """``hits`` with a value that no longer holds, and the turns that said it, below what holds
    now: their score times :data:`SUPERSEDED_WEIGHT`, and under the score of their slot's
    current value when that is among the hits."""
    by_id = {i.id: i for i in items}
    score_of = {h.id: h.score for h in hits}
    current: dict[str, float] = {}  # slot key -> the best score of a value that holds
    for item in items:
        if item.status == "active" and item.id in score_of:
            current[item.slot_key] = max(current.get(item.slot_key, 0.0), score_of[item.id])
    cap: dict[str, float] = {}  # hit id -> the score it must stay under
    for item in items:
        if item.status != "superseded":
            continue
        ceiling = current.get(item.slot_key, float("inf"))
        for hit_id in [item.id, *(e.entry_id for e in item.evidence if e.entry_id)]:
            cap[hit_id] = min(cap.get(hit_id, float("inf")), ceiling)
    out: list[SearchHit] = []
    for hit in hits:
        if hit.id in cap and (hit.kind == "entry" or hit.id in by_id):
            lowered = hit.score * SUPERSEDED_WEIGHT
            ceiling = cap[hit.id]
            if lowered >= ceiling:
                lowered = ceiling * 0.99
            hit = replace(hit, score=lowered)
        out.append(hit)
    out.sort(key=lambda h: -h.score)  # stable: the retriever's order among equals
    return out


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
    item = hit.item
    if hit.id in facts:
        return SearchHit(kind="fact", id=hit.id, text=item.value, score=hit.score, created_at=item.recorded_at)
    held_to = item.valid_to or item.ends_at if item.status == "superseded" else None
    return SearchHit(
        kind="item", id=hit.id, text=hit.text, score=hit.score, created_at=item.recorded_at, valid_to=held_to
    )


__all__ = ["SearchHit", "check_reader", "indexed_items", "search_memory"]
