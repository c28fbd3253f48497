"""The candidates of a recall, asked of the store's recall index instead of read from threads.

:func:`gather_turns` asks the index's channels for the turns that may answer a query, across
every thread in scope: keywords (stemmed BM25, in the engine), the time the query names (said
then, or naming it) and, with an embedding store, meaning (the vectors of the message index,
searched by user and agent, not by thread). Each channel returns at most ``depth`` candidates;
the :class:`~cogitator_memory.recall.MemoryRetriever` then ranks those, and nothing else.

The turns come back as entries made from their records (:func:`record_entry`): what ranking
needs (text, who said it, when, where), not the stored entries. The caller reads the few it
returns (:func:`verified_turns`), which also drops turns deleted or redacted since they were
indexed, and copies of one turn that forks made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..index.records import MAX_CANDIDATES, RecallCandidate, RecallFilter, RecallRecord, record_id
from ..result import unwrap
from ..threads.records import REDACTED_KEY, MemoryEntry, Message, built_record
from ..vectors.base import nearest_ids
from ..vectors.records import VectorHit
from .query import QueryAnalysis
from .settings import DEFAULT_DEPTH

#: Turns the vector channel returns at most: twice what the retriever's vector ranking takes
#: (its ``depth``), the rest a pool its neighbour, hop and entity channels rank from (asking
#: for the retriever's depth alone lost .016 of R@10 on the held-out two-person chats).
DEPTH = 200
#: Records the keyword and time channels return at most unless told otherwise: what the
#: retriever's keyword ranking takes (asking for twice as many ranked the same on both quality
#: sets and cost a quarter of a search's time, reading and ranking records it did not use).
KEYWORD_DEPTH = DEFAULT_DEPTH
#: ``metadata.index`` of the message index's vectors (see :mod:`cogitator_memory.context.message_index`).
MESSAGES_INDEX = "messages"
_ROLES = frozenset({"user", "assistant", "system"})
#: The fields :func:`record_entry` gives (what validating them would mark as set; copied for
#: each record, whose set pydantic changes when a field is assigned).
_MESSAGE_SET = {"role", "content", "name"}
_ENTRY_SET = {"id", "thread_id", "seq", "token_count", "created_at", "message"}


async def nearest(
    vectors: Any, query_vector: Sequence[float], flt: RecallFilter, index: str, depth: int
) -> list[VectorHit]:
    """The ``depth`` vectors of ``index`` (``metadata.index``) nearest ``query_vector`` in the
    embedding store ``vectors``, scoped as ``flt`` is (agent, user, thread: the same rule), as
    hits with a ``source_id`` and a ``score`` (:func:`~cogitator_memory.vectors.base.nearest_ids`:
    ids and cosines only)."""
    scope: dict[str, Any] = {"metadata": {"index": index}}
    for key in ("agent_id", "user_id", "thread_id"):
        value = getattr(flt, key)
        if value is not None:
            scope[key] = value
    found: list[VectorHit] = unwrap(await nearest_ids(vectors, query_vector, limit=depth, threshold=-1.0, filter=scope))
    return found


@dataclass
class ChannelHits:
    """What the index's keyword and time channels found for one query, best first."""

    keyword: list[RecallCandidate] = field(default_factory=list)
    timed: list[RecallCandidate] = field(default_factory=list)


async def channel_hits(store: Any, query: str, flt: RecallFilter, analysis: QueryAnalysis, depth: int) -> ChannelHits:
    """Ask the index's keyword channel, and its time channel when the query names a time, for at
    most ``depth`` records each in ``flt``'s scope (one call each, whatever kinds it names; a
    ``depth`` past what a channel returns, :data:`~cogitator_memory.index.records.MAX_CANDIDATES`,
    asks for that many)."""
    depth = min(depth, MAX_CANDIDATES)
    keyword_call = store.recall_keyword(query, filter=flt, limit=depth)
    interval = analysis.interval
    if interval is None:
        return ChannelHits(unwrap(await keyword_call))
    keyword_res, time_res = await asyncio.gather(
        keyword_call, store.recall_time(interval.start, interval.end, filter=flt, limit=depth)
    )
    return ChannelHits(unwrap(keyword_res), unwrap(time_res))


@dataclass
class TurnCandidates:
    """What the index's channels found: the turns as entries (oldest first), the keyword
    channel's order (entry ids, best first), the cosines of the vector channel, the records."""

    history: list[MemoryEntry] = field(default_factory=list)
    keyword: list[str] = field(default_factory=list)
    cosines: dict[str, float] = field(default_factory=dict)
    records: dict[str, RecallRecord] = field(default_factory=dict)


def record_entry(record: RecallRecord) -> MemoryEntry:
    """An entry made from a turn's record, for ranking (see the module docs): built from the
    record's fields, valid already, without validating them again (a search makes a few
    hundred)."""
    role = record.role if record.role in _ROLES else "assistant"
    message = built_record(
        Message,
        {
            "role": role,
            "content": record.text,
            "name": record.name,
            "tool_calls": None,
            "tool_call_id": None,
            "cache_breakpoint": None,
        },
        _MESSAGE_SET.copy(),
    )
    fields = {
        "message": message,
        "token_count": 0,
        "type": "message",
        "event": None,
        "metadata": None,
        "tool_calls": None,
        "tool_results": None,
        "id": record.source_id,
        "thread_id": record.thread_id or "",
        "parent_id": None,
        "seq": record.seq or 0,
        "created_at": record.said_at,
    }
    return built_record(MemoryEntry, fields, _ENTRY_SET.copy())


async def gather_turns(
    store: Any,
    query: str,
    flt: RecallFilter,
    analysis: QueryAnalysis,
    *,
    vectors: Any = None,
    query_vector: Sequence[float] | None = None,
    depth: int = DEPTH,
    found: ChannelHits | None = None,
    near: Sequence[VectorHit] | None = None,
    keyword_depth: int = KEYWORD_DEPTH,
    near_records: Mapping[str, RecallRecord] | None = None,
) -> TurnCandidates:
    """The turns in ``flt``'s scope the index's channels find for ``query`` (see the module docs).
    ``vectors`` (an embedding store holding the message index's vectors) and ``query_vector``
    add the vector channel. ``found`` is what :func:`channel_hits` asked already (of every
    kind: the turns among it are taken), ``near`` what :func:`nearest` found already of the
    message index; what is not given is asked here, the channels side by side: the ``depth``
    nearest turns, the best ``keyword_depth`` records of the keyword and time channels.
    ``near_records`` are the records of ``near``'s turns read already (:func:`turn_records`)."""
    turn_flt = flt.model_copy(update={"kinds": ["turn"]})
    if near is None and vectors is not None and query_vector is not None:
        vector_call = nearest(vectors, query_vector, flt, MESSAGES_INDEX, depth)
        if found is None:
            asked, near = await asyncio.gather(
                channel_hits(store, query, turn_flt, analysis, keyword_depth), vector_call
            )
            found = asked
        else:
            near = await vector_call
    elif found is None:
        found = await channel_hits(store, query, turn_flt, analysis, keyword_depth)
    keyword = [c for c in found.keyword if c.record.kind == "turn"][:keyword_depth]
    timed = [c for c in found.timed if c.record.kind == "turn"][:keyword_depth]
    out = TurnCandidates()
    for candidate in keyword:
        out.records[candidate.record.source_id] = candidate.record
        out.keyword.append(candidate.record.source_id)
    for candidate in timed:
        out.records.setdefault(candidate.record.source_id, candidate.record)
    if near:
        for hit in near:
            out.cosines[hit.source_id] = hit.score
        missing = [s for s in out.cosines if s not in out.records]
        if near_records is not None:
            out.records.update((s, near_records[s]) for s in missing if s in near_records)
        else:
            out.records.update(await turn_records(store, missing, flt))
        out.cosines = {k: v for k, v in out.cosines.items() if k in out.records}
    ordered = sorted(out.records.values(), key=lambda r: (r.said_at, r.thread_id or "", r.seq or 0, r.id))
    out.history = [record_entry(r) for r in ordered]
    return out


async def turn_records(store: Any, source_ids: Sequence[str], flt: RecallFilter) -> dict[str, RecallRecord]:
    """The index's records of the turns ``source_ids`` (entry ids) of a status ``flt`` keeps, by
    entry id (a turn without one is left out)."""
    ids = [record_id("turn", s) for s in source_ids]
    out: dict[str, RecallRecord] = {}
    for start in range(0, len(ids), 1000):
        for record in unwrap(await store.get_recall_records(ids[start : start + 1000])):
            if record.status in flt.statuses:
                out[record.source_id] = record
    return out


async def verified_turns(store: Any, ids: Sequence[str]) -> dict[str, MemoryEntry]:
    """The stored entries of ``ids`` that are still there and not redacted, by id; of entries
    saying the same thing at the same time (a turn and the copies forks made of it), the first."""
    found = await asyncio.gather(*(store.get_entry(i) for i in ids))
    out: dict[str, MemoryEntry] = {}
    seen: set[tuple[Any, ...]] = set()
    for entry_id, result in zip(ids, found, strict=True):
        entry = unwrap(result)
        if entry is None or (entry.metadata or {}).get(REDACTED_KEY):
            continue
        message = entry.message
        key = (message.role if message else None, message.text if message else entry.id, entry.created_at)
        if key in seen:
            continue
        seen.add(key)
        out[entry_id] = entry
    return out


__all__ = [
    "DEPTH",
    "KEYWORD_DEPTH",
    "ChannelHits",
    "TurnCandidates",
    "channel_hits",
    "gather_turns",
    "nearest",
    "record_entry",
    "turn_records",
    "verified_turns",
]
