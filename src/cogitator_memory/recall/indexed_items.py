"""The memory items, core facts, graph facts and file sections a recall ranks, asked of the store's recall index.

:func:`indexed_items` takes what the index's keyword (and time) channels found of the kinds
other than turns and, with an embedding store, the items nearest the query's vector (their
vectors searched by user and agent), and reads the items behind them: a few hundred at most,
whatever the user holds. :meth:`Memory.search <cogitator_memory.runtime.Memory.search>` and a
``hybrid`` build's recall (:mod:`cogitator_memory.context.hybrid`) both rank these, not every item
of the scope.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..index.build import CORE_AGENT
from ..index.records import MAX_RECORD_BATCH, RecallFilter, RecallKind, RecallRecord, record_id
from ..items.records import MAX_VALUE_CHARS, MemoryItem, MemoryScope
from ..result import unwrap
from ..vectors.records import VectorHit
from ..vectors.similarity import cosines
from .indexed import DEPTH, ChannelHits, nearest
from .item_vectors import ITEMS_INDEX, item_vectors
from .query import QueryAnalysis

logger = logging.getLogger("cogitator_memory")

#: What :meth:`Memory.search` finds: turns (``"entry"``), memory items and core facts
#: (``"item"``), graph facts (``"fact"``: facts saved with ``remember``, graph nodes and edges)
#: and sections of memory files (``"file"``), as :attr:`SearchHit.kind` names them.
SearchKind = Literal["entry", "item", "fact", "file"]
SEARCH_KINDS: tuple[SearchKind, ...] = ("entry", "item", "fact", "file")
#: The kinds of recall records each kind of hit comes from.
RECORD_KINDS: dict[SearchKind, tuple[RecallKind, ...]] = {
    "entry": ("turn",),
    "item": ("item", "core_fact"),
    "fact": ("graph_fact",),
    "file": ("file_section",),
}
#: The kind of hit each kind of record other than a turn is.
HIT_KIND: dict[str, SearchKind] = {"item": "item", "core_fact": "item", "graph_fact": "fact", "file_section": "file"}
#: The kinds of records ranked by their text alone (no item behind them).
TEXT_KINDS = frozenset({"graph_fact", "file_section"})


def item_scope(flt: RecallFilter) -> RecallFilter:
    """The scope of the items' vectors: an item belongs to no thread."""
    return flt.model_copy(update={"thread_id": None})


@dataclass
class FoundItems:
    """The memory items, core facts and graph facts a search ranks (see :func:`indexed_items`)."""

    #: The items to rank (a graph fact as an item of subject "fact" holding its text).
    items: list[MemoryItem] = field(default_factory=list)
    #: The ids of the items that are graph facts.
    facts: set[str] = field(default_factory=set)
    #: The ids of the items that are memory-file sections.
    files: set[str] = field(default_factory=set)
    #: Item id -> cosine with the query's vector, for the items whose cosine can place them in
    #: the retriever's vector ranking.
    cosines: dict[str, float] = field(default_factory=dict)
    #: Item ids in the keyword channel's order (the index's BM25 over every record in scope).
    keyword: list[str] = field(default_factory=list)
    #: Item id -> the stemmed terms its record carries, each with its count (the retriever does
    #: not read them again).
    terms: dict[str, dict[str, int]] = field(default_factory=dict)


async def indexed_items(
    store: Any,
    found: ChannelHits,
    flt: RecallFilter,
    analysis: QueryAnalysis,
    *,
    vectors: Any = None,
    query_vector: Sequence[float] | None = None,
    service: Any = None,
    depth: int = DEPTH,
    kinds: Collection[SearchKind] = SEARCH_KINDS,
    near: Sequence[VectorHit] | None = None,
) -> FoundItems:
    """The memory items and core facts (``"item"`` in ``kinds``) and graph facts (``"fact"``)
    among what the index's channels ``found`` (keywords; time, when the query names one), and
    with ``vectors`` and ``query_vector`` the items' vectors searched by user and agent in
    ``flt``'s scope, as items to rank. Items are read from the store (active and superseded ones
    as stored); a graph fact is ranked as an item of subject "fact" holding its text.

    The vector search asks for the ``depth`` nearest items (the retriever's ranking depth: its
    vector ranking takes no more), and the cosines are those it returns. An item found by its
    words alone is looked up in the embedding store (its vector made by ``service`` when it has
    none, and kept) only when that search came back short (fewer than ``depth`` vectors in
    scope: the item has no vector yet) or the item is among the keyword channel's best
    ``depth``; below those, its cosine is under every one the vector search returned and cannot
    place it in the vector ranking, so it is not read. ``near`` is that search's hits when it
    was done already."""
    out = FoundItems()
    chosen = [*found.keyword, *found.timed]
    records: dict[str, RecallRecord] = {}
    for candidate in chosen:
        record = candidate.record
        if HIT_KIND.get(record.kind) in kinds:
            records.setdefault(record.source_id, record)
    out.keyword = list(dict.fromkeys(c.record.source_id for c in found.keyword if c.record.source_id in records))
    ids = [i for i in records if records[i].kind not in TEXT_KINDS]
    if near is None:
        near = []
        if "item" in kinds and vectors is not None and query_vector is not None:
            near = await nearest(vectors, query_vector, item_scope(flt), ITEMS_INDEX, depth)
    if near:
        out.cosines = {h.source_id: h.score for h in near if h.source_id}
        ids = list(dict.fromkeys([*ids, *out.cosines]))
    stored: list[MemoryItem] = unwrap(await store.get_items(ids)) if ids else []
    out.items = [i for i in stored if i.status in ("active", "superseded")]
    for item_id, record in records.items():
        if record.kind not in TEXT_KINDS:
            out.terms[item_id] = record.term_map()
            continue
        (out.files if record.kind == "file_section" else out.facts).add(item_id)
        out.terms[item_id] = record.term_map()
        out.items.append(
            MemoryItem(
                id=item_id,
                status="active",
                kind="fact",
                subject="file" if record.kind == "file_section" else "fact",
                value=record.text[:MAX_VALUE_CHARS],
                trust="user",
                scope=MemoryScope(
                    agent_id=record.agent_id or flt.agent_id or "default",
                    user_id=record.user_id,
                    thread_id=record.thread_id,
                ),
                recorded_at=record.said_at,
            )
        )
    unread_terms = [
        record_id("core_fact" if i.scope.agent_id == CORE_AGENT else "item", i.id)
        for i in out.items
        if i.id not in out.terms
    ]
    if unread_terms:  # items the vector search found: their records' terms (reading is cheaper than stemming)
        for start in range(0, len(unread_terms), MAX_RECORD_BATCH):
            for record in unwrap(await store.get_recall_records(unread_terms[start : start + MAX_RECORD_BATCH])):
                out.terms[record.source_id] = record.term_map()
    if vectors is not None and query_vector is not None and service is not None and "item" in kinds:
        short = len(near) < depth
        best = set(out.keyword[:depth])
        unread = [i for i in out.items if i.id not in out.facts and i.id not in out.cosines and (short or i.id in best)]
        if unread:
            try:
                known = await item_vectors(vectors, service, unread)
                ids = [i.id for i in unread if i.id in known]
                out.cosines.update(zip(ids, cosines(query_vector, [known[i] for i in ids]), strict=True))
            except Exception as exc:  # the items are still found by their words
                logger.warning("search: the items' vectors could not be read or made (%s)", exc)
    return out


__all__ = [
    "HIT_KIND",
    "RECORD_KINDS",
    "SEARCH_KINDS",
    "TEXT_KINDS",
    "FoundItems",
    "SearchKind",
    "indexed_items",
    "item_scope",
]
