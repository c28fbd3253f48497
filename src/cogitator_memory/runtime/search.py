"""``Memory.search``: one search over everything a user's memory holds.

Turns, memory items, core facts and graph facts (what ``remember`` saved) come from the store's
recall index: every thread of the user, not a window of recent ones
(:func:`~cogitator_memory.recall.indexed.gather_turns`, :func:`~cogitator_memory.recall.indexed_items.indexed_items`). The
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
from collections.abc import Awaitable, Collection
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo
from typing import Any, Literal, Protocol

from ..embeddings import cooldown
from ..embeddings.cooldown import cooling, mark_failed, mark_working
from ..errors import InvalidArgumentError, MemoryStoreError
from ..index.base import is_recall_index
from ..index.build import turn_text
from ..index.records import RecallFilter, RecallRecord
from ..items.records import MemoryItem
from ..jobs import given
from ..recall.indexed import (
    DEPTH,
    MESSAGES_INDEX,
    ChannelHits,
    TurnCandidates,
    channel_hits,
    gather_turns,
    nearest,
    turn_records,
    verified_turns,
)
from ..recall.indexed_items import (
    RECORD_KINDS,
    SEARCH_KINDS,
    FoundItems,
    SearchKind,
    indexed_items,
    item_scope,
)
from ..recall.item_vectors import ITEMS_INDEX
from ..recall.query import QueryAnalysis, analyze_query_async
from ..recall.retriever import MemoryRetriever, RecallHit
from ..result import unwrap
from ..threads.records import USER_ID_KEY
from ..vectors.records import VectorHit


class Searched(Protocol):
    """What a search reads of the memory it searches (a :class:`~cogitator_memory.runtime.Memory`):
    its stores, its indexers and its retriever."""

    adapter: Any
    embedding_service: Any
    message_index: Any
    indexer: Any
    vectors: Any
    retriever: MemoryRetriever


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
    stopped holding), a graph fact (``kind="fact"``: a fact saved with ``remember``, a graph node
    or edge) or a section of a memory file (``kind="file"``, its text starting with the file's
    path), with its text and score (higher is better)."""

    kind: Literal["entry", "item", "fact", "file"]
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


async def check_reader(memory: Searched, thread_id: str, user_id: str | None) -> None:
    """Refuse (:class:`InvalidArgumentError`) a read of ``thread_id`` for ``user_id`` when the
    thread is another user's. A thread of no user, a missing thread, or a call for no user
    passes."""
    if user_id is None:
        return
    thread = unwrap(await memory.adapter.get_thread(thread_id))
    owner = (thread.metadata or {}).get(USER_ID_KEY) if thread is not None else None
    if owner is not None and owner != user_id:
        raise InvalidArgumentError("thread_id", f"{thread_id} is another user's thread")


async def _query_vector(memory: Searched, query: str) -> list[float] | None:
    """The query's vector, once the turns added a moment ago are embedded (waiting at most
    :data:`VECTOR_WAIT` seconds for them); ``None``, with a warning, when the embedding service
    fails: the search goes on by keywords, time and names. For :data:`~cogitator_memory.embeddings.cooldown.EMBEDDING_COOLDOWN`
    seconds after a failure the service is not asked (nor waited for): ``None`` at once, with
    a warning."""
    assert memory.message_index is not None
    service = memory.embedding_service
    ago = cooling(service)
    if ago is not None:
        logger.warning(
            "search: the embedding service failed %.0f s ago; searching by keywords, time and names "
            "(it is asked again %.0f s after the failure)",
            ago,
            cooldown.EMBEDDING_COOLDOWN,
        )
        return None
    memory.message_index.retry_failed()  # turns whose embedding failed earlier, in the background
    try:
        await asyncio.wait_for(asyncio.shield(memory.message_index.flush()), VECTOR_WAIT)
    except TimeoutError:
        logger.warning("search: turns added a moment ago are still being embedded; searching without them")
    try:
        vector = list(await service.embed(query))
    except Exception as exc:
        mark_failed(service)
        logger.warning(
            "search: the embedding service failed (%s); searching by keywords, time and names "
            "(searches skip it for %.0f s)",
            exc,
            cooldown.EMBEDDING_COOLDOWN,
        )
        return None
    mark_working(service)
    return vector


def check_kinds(kinds: object) -> tuple[SearchKind, ...]:
    """The kinds a search returns (:data:`SEARCH_KINDS` for ``None``); raises
    :class:`InvalidArgumentError` for anything else than a non-empty collection of them."""
    if kinds is None:
        return SEARCH_KINDS
    if isinstance(kinds, str) or not isinstance(kinds, Collection) or not kinds:
        raise InvalidArgumentError("kinds", f"must be a non-empty list of {', '.join(SEARCH_KINDS)}")
    for kind in kinds:
        if kind not in SEARCH_KINDS:
            raise InvalidArgumentError("kinds", f"must hold only {', '.join(SEARCH_KINDS)}, got {kind!r}")
    return tuple(k for k in SEARCH_KINDS if k in kinds)


async def search_memory(
    memory: Searched,
    query: str,
    *,
    agent: str,
    user: str | None,
    thread_id: str | None,
    limit: int,
    kinds: Collection[SearchKind] | None = None,
    anchor: datetime | None = None,
    time_zone: str | tzinfo = "UTC",
) -> list[SearchHit]:
    """The hits of :meth:`Memory.search` (arguments checked by it; see the module docs).
    ``kinds`` (default all of :data:`SEARCH_KINDS`) names the kinds of hits wanted: the
    channels of the others do not run (``("item",)``: no turn is read, and no turn's vector
    searched). With ``thread_id`` only turns are searched. ``anchor`` (default now) and
    ``time_zone`` are when and where the query is read (the time it names)."""
    wanted = check_kinds(kinds)
    if thread_id is not None:
        await check_reader(memory, thread_id, user)
        wanted = tuple(k for k in wanted if k == "entry")
        if not wanted:
            return []
    store: Any = memory.adapter
    if not is_recall_index(store):
        raise MemoryStoreError(
            f"the {memory.adapter.provider} store keeps no recall index: search needs one "
            "(mix RecallIndexMixin into the store; every built-in store has it)"
        )
    analysis = await analyze_query_async(query, anchor, time_zone)
    if not analysis.search:
        return []
    if memory.indexer is not None:
        await memory.indexer.ready()
    flt = RecallFilter(agent_id=agent, user_id=user, thread_id=thread_id)
    depth = memory.retriever.settings.depth
    meaning = _Meaning()
    by_meaning = "entry" in wanted or "item" in wanted
    keyword_call = _keyword_channels(store, query, flt, analysis, wanted, depth)
    near_records: dict[str, RecallRecord] | None = None
    if by_meaning and memory.message_index is not None and memory.embedding_service is not None:
        # the query's embedding (off the event loop) and the vector searches it starts while the
        # store answers the keyword channel
        meaning, found, near_records = await _beside_keywords(
            keyword_call, _by_meaning(memory, query, flt, wanted, depth), store, flt
        )
    else:
        found = await keyword_call
    query_vector = meaning.vector
    vectors = memory.vectors if query_vector is not None else None
    # the turns' and the items' records are read side by side
    turn_call = (
        gather_turns(
            store,
            query,
            flt,
            analysis,
            vectors=vectors,
            query_vector=query_vector,
            found=found,
            near=meaning.turns,
            keyword_depth=depth,
            near_records=near_records,
        )
        if "entry" in wanted
        else given(TurnCandidates())
    )
    item_call = (
        indexed_items(
            store,
            found,
            flt,
            analysis,
            vectors=vectors,
            query_vector=query_vector,
            service=memory.embedding_service,
            depth=depth,
            kinds=wanted,
            near=meaning.items,
        )
        if "item" in wanted or "fact" in wanted or "file" in wanted
        else given(FoundItems())
    )
    candidates, items = await asyncio.gather(turn_call, item_call)
    ranked = await memory.retriever.retrieve(
        query,
        history=candidates.history,
        cosines=candidates.cosines,
        keyword_hits=candidates.keyword,
        turn_terms={rid: r.term_map() for rid, r in candidates.records.items()},
        items=items.items,
        item_cosines=items.cosines,
        item_keyword_hits=items.keyword,
        item_terms=items.terms,
        limit=min(100, limit * 2),
        analysis=analysis,
    )
    turn_ids = [h.id for h in ranked.hits if h.entry is not None]
    stored = await verified_turns(store, turn_ids) if turn_ids else {}
    made = [_hit(hit, stored, items.facts, items.files) for hit in ranked.hits]
    return _current_first([h for h in made if h is not None], items.items)[:limit]


async def _beside_keywords(
    keyword_call: Awaitable[ChannelHits], meaning_call: Awaitable[_Meaning], store: Any, flt: RecallFilter
) -> tuple[_Meaning, ChannelHits, dict[str, RecallRecord] | None]:
    """The keyword channels and the search by meaning side by side; when the nearest turns are
    found while the keyword channels are still asked, their records are read meanwhile (all of
    them: which ones the keyword channels return too is not known yet), else (``None``) those
    the keyword channels did not return are read after them."""
    keywords = asyncio.ensure_future(keyword_call)
    early: asyncio.Future[dict[str, RecallRecord]] | None = None
    try:
        meaning = await meaning_call
        if meaning.turns and not keywords.done():
            early = asyncio.ensure_future(turn_records(store, [h.source_id for h in meaning.turns], flt))
        found = await keywords
        return meaning, found, (await early if early is not None else None)
    except BaseException:
        for task in (keywords, early):
            if task is None:
                continue
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()  # retrieved: the error raised is the first one
        raise


@dataclass(frozen=True, slots=True)
class _Meaning:
    """The query's vector and the vector channels' hits it found (``None``: not searched)."""

    vector: list[float] | None = None
    turns: list[VectorHit] | None = None
    items: list[VectorHit] | None = None


async def _by_meaning(
    memory: Searched, query: str, flt: RecallFilter, wanted: Collection[SearchKind], depth: int
) -> _Meaning:
    """The query's vector and, with an embedding store, the nearest turns (:data:`DEPTH`) and
    items (``depth``) to it, searched side by side as soon as the vector is made."""
    vector = await _query_vector(memory, query)
    vectors = memory.vectors
    if vector is None or vectors is None:
        return _Meaning(vector)
    turn_call = nearest(vectors, vector, flt, MESSAGES_INDEX, DEPTH) if "entry" in wanted else given(None)
    item_call = nearest(vectors, vector, item_scope(flt), ITEMS_INDEX, depth) if "item" in wanted else given(None)
    turns, items = await asyncio.gather(turn_call, item_call)
    return _Meaning(vector, turns, items)


async def _keyword_channels(
    store: Any,
    query: str,
    flt: RecallFilter,
    analysis: QueryAnalysis,
    wanted: Collection[SearchKind],
    depth: int,
) -> ChannelHits:
    """The index's keyword (and time) channels for the kinds ``wanted``: turns and the other
    kinds asked apart, side by side, each for ``depth`` candidates (the retriever's ranking
    depth: its keyword ranking takes no more), so neither crowds the other out and no more
    records are read than the ranking uses."""
    others = [r for k in wanted if k != "entry" for r in RECORD_KINDS[k]]
    calls = []
    if "entry" in wanted:
        calls.append(channel_hits(store, query, flt.model_copy(update={"kinds": ["turn"]}), analysis, depth))
    if others:
        calls.append(channel_hits(store, query, flt.model_copy(update={"kinds": others}), analysis, depth))
    found = await asyncio.gather(*calls)
    if len(found) == 1:
        return found[0]
    return ChannelHits(
        keyword=[c for hits in found for c in hits.keyword], timed=[c for hits in found for c in hits.timed]
    )


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


def _hit(hit: RecallHit, stored: dict[str, Any], facts: set[str], files: set[str]) -> SearchHit | None:
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
    if hit.id in facts or hit.id in files:
        kind: SearchKind = "file" if hit.id in files else "fact"
        return SearchHit(kind=kind, id=hit.id, text=item.value, score=hit.score, created_at=item.recorded_at)
    held_to = item.valid_to or item.ends_at if item.status == "superseded" else None
    return SearchHit(
        kind="item", id=hit.id, text=hit.text, score=hit.score, created_at=item.recorded_at, valid_to=held_to
    )


__all__ = [
    "SEARCH_KINDS",
    "FoundItems",
    "SearchHit",
    "SearchKind",
    "check_kinds",
    "check_reader",
    "indexed_items",
    "search_memory",
]
