"""The recall-index contract: :class:`RecallIndexAdapter` for users, :class:`RecallIndexMixin` for engines.

Every built-in thread store keeps a recall index beside its threads: the engine mixes
:class:`RecallIndexMixin` into its adapter class, in which every public call is written once
(argument checks, BM25's arithmetic, result wrapping), and implements these primitives over its
own indexes, each filtered by scope inside the engine (:func:`~cogitator_memory.index.records.record_in_scope`):

- ``_recall_put(records)``: insert or replace every record (by id) with its terms, all or none.
- ``_recall_get(ids)``: the stored records with those ids (any order, missing ones left out).
- ``_recall_delete(ids)``: delete them; how many existed.
- ``_recall_delete_scope(key, value)``: delete every record whose ``key`` (``"thread_id"`` or
  ``"user_id"``) is ``value``; how many existed.
- ``_recall_stats(terms)``: how many records the index holds, their total length in terms, and
  how many records hold each of ``terms`` (BM25's ``N``, ``avgdl`` and document frequencies).
- ``_recall_keyword(weights, avg_len, flt, limit, newest)``: the ``limit`` best records in scope by
  ``sum(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_len)))`` over the
  ``(term, idf)`` of ``weights`` (``k1 = 1.2``, ``b = 0.75``), best first, ties by id, with their
  scores; records holding none of the terms are not returned. With ``newest`` (a number;
  ``weights`` then holds one term) only the postings of the ``newest`` records holding the term
  that were indexed last are scored, whatever their scope (a record written again counts as
  indexed then); ``None``: every posting.
- ``_recall_time(start, end, flt, limit)``: the ``limit`` newest records in scope said in
  ``[start, end)`` or whose ``[time_start, time_end)`` overlaps it, newest ``said_at`` first
  (ties by id).
- ``_recall_count(flt)``: how many records are in scope.
- ``_recall_page(cursor, limit)``: about ``limit`` records from where ``cursor`` (``None``: the
  start) left off, in an order of the engine's own, and the cursor of the next page (``None``
  after the last). A walk of every page returns each record held throughout it once; a record
  written or deleted during the walk may be returned or not. The cursor is the engine's text.
- ``_recall_state_get(key)`` / ``_recall_state_set(key, value)``: a small string kept by the
  index for its writers (the indexer's progress), ``None`` when unset.

Each primitive runs as one atomic operation on the engine and gets checked arguments.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic_core import from_json

from ..clock import to_utc
from ..errors import InvalidArgumentError
from ..items.records import MemoryItem
from ..lifecycle import Capability
from ..result import MemoryResult, ok
from ..search.bm25 import BM25
from ..threads.records import built_record
from .build import (
    ITEM_KINDS,
    edge_record,
    file_section_ids,
    file_section_records,
    item_record,
    node_record,
    node_term,
)
from .records import (
    MAX_CANDIDATES,
    MAX_QUERY_TERMS,
    MAX_RECORD_BATCH,
    RECALL_KINDS,
    RECALL_PAGE,
    RECALL_STATUSES,
    RecallCandidate,
    RecallFilter,
    RecallPage,
    RecallPrune,
    RecallRecord,
    check_filter,
    check_ids,
    check_limit,
    check_records,
    counted_terms,
    record_id,
    unpack_counts,
)
from .terms import query_terms

#: The fields of :class:`RecallRecord`, all of them given to every record read back.
_FIELDS = set(RecallRecord.model_fields)


def _iso(value: str | None) -> datetime | None:
    return None if value is None else to_utc(datetime.fromisoformat(value))


def stored_record(row: Sequence[Any], moment: Callable[[Any], datetime], term_sep: str = " ") -> RecallRecord:
    """A record read back from an engine's row, valid when written, so built without validating
    it again. The row's columns: id, kind, agent, user, thread, status, said at, time start, time
    end, the terms joined by ``term_sep``, the JSON body (source id, role, name, seq, text,
    validity, lineage), the terms' counts (:func:`~cogitator_memory.index.records.pack_counts`;
    ``None`` for a record written before they were kept, whose terms column lists every
    occurrence: counted here); ``moment`` reads the engine's time columns."""
    body: dict[str, Any] = from_json(row[10])  # pydantic-core's parser: a fraction of json.loads' time
    terms: list[str] = row[9].split(term_sep) if row[9] else []
    packed = row[11]
    if packed is None:
        terms, counts = counted_terms(terms)
    else:
        counts = unpack_counts(packed)
    fields = {
        "id": row[0],
        "kind": row[1],
        "source_id": body["source_id"],
        "agent_id": row[2],
        "user_id": row[3],
        "thread_id": row[4],
        "role": body.get("role"),
        "name": body.get("name"),
        "seq": body.get("seq"),
        "text": body["text"],
        "terms": terms,
        "term_counts": counts,
        "said_at": moment(row[6]),
        "time_start": None if row[7] is None else moment(row[7]),
        "time_end": None if row[8] is None else moment(row[8]),
        "status": row[5],
        "valid_from": _iso(body.get("valid_from")),
        "valid_to": _iso(body.get("valid_to")),
        "lineage": body.get("lineage", []),
    }
    return built_record(RecallRecord, fields, _FIELDS)


logger = logging.getLogger("cogitator_memory")


def _candidate(record: RecallRecord, score: float) -> RecallCandidate:
    """A channel's candidate: the engine's record (valid already, not checked again) and its score."""
    return built_record(RecallCandidate, {"record": record, "score": float(score)})


def item_records(items: list[MemoryItem], fresh: Collection[str] = ()) -> tuple[list[RecallRecord], list[str]]:
    """What the recall index holds for written ``items``: the records to write, and the ids of
    the records to delete (of items recall never shows, such as suggested ones; ``fresh`` names
    items just added, which have none)."""
    records: list[RecallRecord] = []
    hidden: list[str] = []
    for item in items:
        record = item_record(item)
        if record is not None:
            records.append(record)
        elif item.id not in fresh:
            hidden.extend(record_id(k, item.id) for k in ITEM_KINDS)
    return records, hidden


def log_unindexed(count: int, exc: Exception) -> None:
    """Items were stored but their records could not be written (``cogitator-memory reindex`` writes them)."""
    logger.warning("recall index: %d items written but not indexed (%s); run reindex", count, exc)


@dataclass
class _GraphPlan:
    """What :meth:`RecallIndexMixin._recall_graph_plan` read before a graph write."""

    gone_edges: list[str] = field(default_factory=list)
    renamed: list[Any] = field(default_factory=list)


#: BM25's parameters for the recall index (the same on every store).
RECALL_BM25 = BM25(k1=1.2, b=0.75)
#: Past this many records, a query term held by more than half of them is not searched (its
#: weight is a small part of a rare term's, and its postings cost the most to read), unless
#: every term of the query is such.
COMMON_TERMS_FROM = 2000
#: Most postings a keyword search reads: the rarest terms of the query are searched, the more
#: common ones left out once their postings would pass this (the rarest term is always searched).
#: BM25 weighs a common term little; reading its postings is what grows with history. When even
#: the rarest term has more postings, only those of the records indexed last are read first
#: (see :meth:`RecallIndexMixin.recall_keyword`). A store's ``postings_budget`` attribute.
POSTINGS_BUDGET = 5_000
#: Deleted nodes whose edges' records one search of :meth:`RecallIndexMixin._recall_graph` looks for.
EDGE_LOOKUP_NODES = 100
#: The time channel's range over all time: what :meth:`RecallIndexMixin._recall_clear_graph`
#: reads an agent's graph-fact records by, a page at a time.
ALL_TIME = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))
#: The keys :meth:`RecallIndexMixin.delete_recall_scope` takes.
SCOPE_DELETE_KEYS = ("thread_id", "user_id")

RecordInput = RecallRecord | dict[str, Any]
FilterInput = RecallFilter | dict[str, Any] | None


@runtime_checkable
class RecallIndexAdapter(Protocol):
    """What every store with a recall index offers. All calls return a :class:`~cogitator_memory.MemoryResult`."""

    async def index_recall_records(self, records: Sequence[RecordInput]) -> MemoryResult[int]: ...
    async def get_recall_records(self, ids: Sequence[str]) -> MemoryResult[list[RecallRecord]]: ...
    async def delete_recall_records(self, ids: Sequence[str]) -> MemoryResult[int]: ...
    async def delete_recall_sources(self, source_ids: Sequence[str]) -> MemoryResult[int]: ...
    async def delete_recall_scope(
        self, *, thread_id: str | None = None, user_id: str | None = None
    ) -> MemoryResult[int]: ...
    async def recall_keyword(
        self, query: str, *, filter: FilterInput = None, limit: int = 200
    ) -> MemoryResult[list[RecallCandidate]]: ...
    async def recall_time(
        self, start: datetime, end: datetime, *, filter: FilterInput = None, limit: int = 200
    ) -> MemoryResult[list[RecallCandidate]]: ...
    async def count_recall_records(self, *, filter: FilterInput = None) -> MemoryResult[int]: ...
    async def list_recall_records(
        self, *, cursor: str | None = None, limit: int = RECALL_PAGE
    ) -> MemoryResult[RecallPage]: ...
    async def prune_recall_records(
        self, *, cursor: str | None = None, limit: int = RECALL_PAGE
    ) -> MemoryResult[RecallPrune]: ...
    async def get_recall_state(self, key: str) -> MemoryResult[str | None]: ...
    async def set_recall_state(self, key: str, value: str) -> MemoryResult[None]: ...


def is_recall_index(store: object) -> bool:
    """Whether ``store`` keeps a recall index (offers the calls of :class:`RecallIndexAdapter`)."""
    return isinstance(store, RecallIndexMixin | RecallIndexAdapter)


def length_terms(avg_len: float) -> tuple[float, float]:
    """BM25's length normalisation ``1 - b + b * length / avg_len`` as ``(fixed, per_length)``,
    so that an engine computes ``fixed + per_length * length`` (``avg_len`` 0: no normalisation)."""
    b = RECALL_BM25.b
    if avg_len > 0:
        return 1.0 - b, b / avg_len
    return 1.0, 0.0


def within_budget(terms: list[str], freqs: dict[str, int], budget: int = POSTINGS_BUDGET) -> list[str]:
    """The terms a keyword search reads, in their order: rarest first until their postings would
    pass ``budget`` (the rarest is always kept)."""
    kept: set[str] = set()
    total = 0
    for term in sorted(terms, key=lambda t: (freqs[t], t)):
        if kept and total + freqs[term] > budget:
            break
        kept.add(term)
        total += freqs[term]
    return [t for t in terms if t in kept]


def _check_time(name: str, value: object) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidArgumentError(name, "must be a timezone-aware datetime")
    return value


def _check_page(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RECORD_BATCH:
        raise InvalidArgumentError("limit", f"must be an integer from 1 to {MAX_RECORD_BATCH}, got {value!r}")
    return value


def _check_cursor(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 10_000:
        raise InvalidArgumentError("cursor", "must be a page's next_cursor (text) or None")
    return value


def _check_state_key(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise InvalidArgumentError("key", "must be non-empty text of at most 200 characters")
    return value


class RecallIndexMixin(ABC):
    """The public recall-index calls, written once over the engine's primitives (see the module docs).

    Mixed into a thread store's class before its base, it needs ``_require_connected()`` and
    ``_fail(operation, exc)`` from that base, and adds ``"recall-index"`` to its ``capabilities``.
    """

    capabilities: ClassVar[frozenset[Capability]]
    #: Most postings one keyword search reads (see :meth:`recall_keyword`); an instance may
    #: set its own.
    postings_budget: int = POSTINGS_BUDGET

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = getattr(cls, "capabilities", None)
        if isinstance(existing, frozenset) and "recall-index" not in existing:
            cls.capabilities = existing | {"recall-index"}

    if TYPE_CHECKING:  # provided by the class the mixin goes into

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    # ----- engine primitives ---------------------------------------------------------------

    @abstractmethod
    async def _recall_put(self, records: list[RecallRecord]) -> None:
        """Insert or replace every record by id, with its terms; all or none."""

    @abstractmethod
    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        """The stored records with these ids, in any order."""

    @abstractmethod
    async def _recall_delete(self, ids: list[str]) -> int:
        """Delete the records; how many existed."""

    @abstractmethod
    async def _recall_delete_scope(self, key: str, value: str) -> int:
        """Delete the records whose ``key`` (``thread_id`` or ``user_id``) is ``value``; how many existed."""

    @abstractmethod
    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        """(records, their total length in terms, records holding each term) over the whole index."""

    @abstractmethod
    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        """The best ``limit`` records in scope by BM25 over ``weights``; with ``newest``, over the
        postings of the term's ``newest`` records indexed last only (see the module docs)."""

    @abstractmethod
    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        """The newest ``limit`` records in scope said in, or naming a time overlapping, ``[start, end)``."""

    @abstractmethod
    async def _recall_count(self, flt: RecallFilter) -> int:
        """How many records are in scope."""

    @abstractmethod
    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        """About ``limit`` records from ``cursor`` on, and the next page's cursor (see the module docs)."""

    @abstractmethod
    async def _recall_state_get(self, key: str) -> str | None: ...

    @abstractmethod
    async def _recall_state_set(self, key: str, value: str) -> None: ...

    async def _recall_forget(self, *, entry_id: str | None = None, thread_id: str | None = None) -> None:
        """What the thread store calls before it deletes or redacts an entry, or deletes or
        clears a thread: the records of the entry (or the thread) go first, so forgotten text
        never stays searchable; a failure here fails that call and leaves the entry."""
        if entry_id is not None:
            await self._recall_delete([record_id("turn", entry_id)])
        if thread_id is not None:
            await self._recall_delete_scope("thread_id", thread_id)

    async def _recall_items(self, items: list[MemoryItem], *, fresh: Collection[str] = ()) -> None:
        """What the item store calls once items are written: their records written in one
        write (or, for items recall never shows, such as suggested ones, deleted). ``fresh``
        names items added by this write: a hidden one of those has no record to delete. The
        items are stored by then: a failure here is logged, not raised, and
        ``cogitator-memory reindex`` writes what is missing."""
        try:
            await self._recall_items_now(items, fresh)
        except Exception as exc:
            log_unindexed(len(items), exc)

    async def _recall_items_now(self, items: list[MemoryItem], fresh: Collection[str]) -> None:
        records, hidden = item_records(items, fresh)
        if hidden:
            await self._recall_delete_all(hidden)
        await self._recall_put_all(records)

    async def _recall_forget_items(self, ids: list[str]) -> None:
        """What the item store calls before items are deleted: their records go first."""
        await self._recall_delete([record_id(k, i) for i in ids for k in ITEM_KINDS])

    async def _recall_put_all(self, records: list[RecallRecord]) -> None:
        for start in range(0, len(records), MAX_RECORD_BATCH):
            await self._recall_put(records[start : start + MAX_RECORD_BATCH])

    async def _recall_delete_all(self, ids: list[str]) -> None:
        for start in range(0, len(ids), MAX_RECORD_BATCH):
            await self._recall_delete(ids[start : start + MAX_RECORD_BATCH])

    async def _recall_graph_plan(self, changes: Any) -> _GraphPlan:
        """What the graph store calls before a write: the edges the write deletes with their
        nodes (an engine deletes every edge touching a deleted node), and the nodes it renames
        (whose edges say their name), read from the graph as it is. An edge another writer adds
        to a node between this read and the node's deletion goes with the node too: its record
        is found after the write by the node's term (see :meth:`_recall_graph`)."""
        from ..graph.records import EdgeQuery

        graph: Any = self
        plan = _GraphPlan()
        if changes.delete_nodes:
            agents: dict[str, set[str]] = {}
            for node in await graph._get_nodes(list(changes.delete_nodes)):
                agents.setdefault(node.agent_id, set()).add(node.id)
            for agent, ids in sorted(agents.items()):
                touching = await graph._query_edges(EdgeQuery(agent_id=agent, node_ids=frozenset(ids)))
                plan.gone_edges.extend(e.id for e in touching)
        if changes.put_nodes:
            names = {n.id: n.name for n in await graph._get_nodes([n.id for n in changes.put_nodes])}
            plan.renamed.extend(n for n in changes.put_nodes if names.get(n.id, n.name) != n.name)
        return plan

    async def _recall_graph(self, changes: Any, plan: Any = None) -> None:
        """What the graph store calls after a write: the records of the nodes and edges written
        (and of the edges of renamed nodes, which say their names) are written, those of the
        nodes and edges deleted (the edges deleted with their nodes among them) deleted.

        Two writers on one node: an edge another writer added to a deleted node after
        :meth:`_recall_graph_plan` read its edges went with the node; its record, written by
        then, holds the node's term (:func:`~cogitator_memory.index.build.node_term`) and is
        found by it here (one bounded search, when nodes are deleted). Written later, it is
        taken out by its own writer, which reads its edges again once their records are written
        (one read by ids, when edges are written): an edge gone by then keeps no record. A
        writer updating nodes reads them again the same way (one read, when nodes are updated),
        so a node updated while another writer deletes it keeps no record either."""
        from ..graph.records import EdgeQuery

        graph: Any = self
        steps = plan if isinstance(plan, _GraphPlan) else _GraphPlan()
        nodes = [*changes.add_nodes, *changes.put_nodes]
        edges = {e.id: e for e in [*changes.add_edges, *changes.put_edges]}
        for node in steps.renamed:
            for edge in await graph._query_edges(EdgeQuery(agent_id=node.agent_id, node_ids=frozenset({node.id}))):
                edges.setdefault(edge.id, edge)
        gone = [*changes.delete_nodes, *changes.delete_edges, *steps.gone_edges]
        doomed = list(dict.fromkeys(record_id("graph_fact", i) for i in gone if i not in edges))
        await self._recall_delete_all(doomed)
        if changes.delete_nodes:
            await self._recall_drop_edges_of(list(changes.delete_nodes), set(edges))
        records = [node_record(n) for n in nodes]
        if edges:
            names = {n.id: n.name for n in nodes}
            ends = sorted({i for e in edges.values() for i in (e.source_id, e.target_id)} - set(names))
            for start in range(0, len(ends), MAX_RECORD_BATCH):
                names.update((n.id, n.name) for n in await graph._get_nodes(ends[start : start + MAX_RECORD_BATCH]))
            records.extend(edge_record(e, names) for e in edges.values())
        await self._recall_put_all(records)
        if edges:
            await self._recall_drop_gone(sorted(edges), graph._get_edges)
        if changes.put_nodes:
            await self._recall_drop_gone(sorted({n.id for n in changes.put_nodes}), graph._get_nodes)

    async def _recall_drop_edges_of(self, node_ids: list[str], written: set[str]) -> None:
        """After nodes were deleted: the records of edges naming them (by their node terms)
        whose edge is gone too, but for the edges ``written`` by this write."""
        graph: Any = self
        flt = RecallFilter(kinds=["graph_fact"], statuses=list(RECALL_STATUSES))
        for start in range(0, len(node_ids), EDGE_LOOKUP_NODES):
            weights = [(node_term(i), 1.0) for i in node_ids[start : start + EDGE_LOOKUP_NODES]]
            while True:
                found = await self._recall_keyword(weights, 0.0, flt, MAX_CANDIDATES)
                named = [r.source_id for r, _score in found if r.source_id not in written]
                held = {e.id for e in await graph._get_edges(named)} if named else set()
                stale = [record_id("graph_fact", i) for i in named if i not in held]
                if stale:
                    await self._recall_delete_all(stale)
                if len(found) < MAX_CANDIDATES or not stale:
                    break

    async def _recall_drop_gone(self, ids: list[str], read: Callable[[list[str]], Awaitable[list[Any]]]) -> int:
        """The records of the graph nodes or edges ``ids`` that ``read`` finds no more (another
        writer deleted them) are deleted; how many."""
        dropped = 0
        for start in range(0, len(ids), MAX_RECORD_BATCH):
            chunk = ids[start : start + MAX_RECORD_BATCH]
            held = {x.id for x in await read(chunk)}
            gone = [record_id("graph_fact", i) for i in chunk if i not in held]
            if gone:
                await self._recall_delete(gone)
                dropped += len(gone)
        return dropped

    async def _recall_clear_graph(self, agent_id: str) -> None:
        """What the graph store calls once it cleared an agent's graph: the agent's graph-fact
        records whose node or edge is gone are deleted, read a page of :data:`MAX_CANDIDATES` at
        a time (the time channel over all time), until a page holds none gone. Neither the graph
        nor the index is read whole, and an edge another writer adds while the graph is cleared
        keeps no record: written before this sweep reads, the sweep finds its edge gone; written
        after, its writer does (it reads its edges again once their records are written). A
        record of a node or edge written after the clear stays with it."""
        graph: Any = self

        async def held(ids: list[str]) -> list[Any]:  # a graph fact is a node or an edge
            nodes = await graph._get_nodes(ids)
            found = {n.id for n in nodes}
            rest = [i for i in ids if i not in found]
            return [*nodes, *(await graph._get_edges(rest) if rest else [])]

        flt = RecallFilter(agent_id=agent_id, kinds=["graph_fact"], statuses=list(RECALL_STATUSES))
        while True:
            page = await self._recall_time(ALL_TIME[0], ALL_TIME[1], flt, MAX_CANDIDATES)
            dropped = await self._recall_drop_gone([r.source_id for r in page], held)
            if not dropped or len(page) < MAX_CANDIDATES:
                return

    async def _recall_files(self, versions: list[Any], *, forgetting: bool = False) -> None:
        """What the file store calls once versions are written (or redacted, ``forgetting``):
        each file whose head is among them has its section records replaced (a deleted or
        redacted head has none; see :mod:`~cogitator_memory.index.build`). A failure after a
        write is logged (``cogitator-memory reindex`` writes what is missing); after a
        redaction or a deletion it is raised, so forgotten text is never left searchable unnoticed."""
        try:
            await self._recall_files_now(versions)
        except Exception as exc:
            if forgetting or any(v.is_deletion for v in versions):
                raise
            logger.warning(
                "recall index: %d file versions written but not indexed (%s); run reindex", len(versions), exc
            )

    async def _recall_files_now(self, versions: list[Any]) -> None:
        from ..files.records import FileHeadQuery

        files: Any = self
        written = {v.id for v in versions}
        places: dict[str, tuple[Any, set[str]]] = {}
        for version in versions:
            places.setdefault(version.scope_key, (version.scope, set()))[1].add(version.path)
        records: list[RecallRecord] = []
        before: list[str] = []  # the ids a file's earlier version may have records under
        for key, (scope, paths) in sorted(places.items()):
            query = FileHeadQuery(scope_keys=frozenset({key}), paths=frozenset(paths), prefix=None, content=True)
            for head in await files._find_file_heads(query):
                if head.id not in written:  # an older version written: the head's records stand
                    continue
                records.extend(file_section_records(head))
                if head.sequence > 1 or head.redacted is not None:  # a first version has no records to replace
                    before.extend(file_section_ids(scope, head.path))
        held: dict[str, RecallRecord] = {}  # read first (a read costs a fraction of a write)
        for start in range(0, len(before), MAX_RECORD_BATCH):
            held.update((r.id, r) for r in await self._recall_get(before[start : start + MAX_RECORD_BATCH]))
        kept = {r.id for r in records}
        await self._recall_delete_all([i for i in held if i not in kept])
        # a section whose text did not change keeps its record (and when it was first said)
        await self._recall_put_all([r for r in records if r.id not in held or held[r.id].text != r.text])

    # ----- public calls --------------------------------------------------------------------

    async def index_recall_records(self, records: Sequence[RecordInput]) -> MemoryResult[int]:
        """Insert or replace ``records`` (by id), all or nothing; how many were written. Each
        is checked whole (a bad one names its field, ``records[2].said_at``)."""
        try:
            self._require_connected()
            checked = check_records(records)
            if checked:
                await self._recall_put(checked)
            return ok(len(checked))
        except Exception as exc:
            return self._fail("index_recall_records", exc)

    async def get_recall_records(self, ids: Sequence[str]) -> MemoryResult[list[RecallRecord]]:
        """The records with ``ids``, in that order, missing ones left out."""
        try:
            self._require_connected()
            wanted = check_ids(ids, "ids")
            found = {r.id: r for r in await self._recall_get(wanted)} if wanted else {}
            return ok([found[i] for i in wanted if i in found])
        except Exception as exc:
            return self._fail("get_recall_records", exc)

    async def delete_recall_records(self, ids: Sequence[str]) -> MemoryResult[int]:
        """Delete the records with ``ids``; how many existed."""
        try:
            self._require_connected()
            wanted = check_ids(ids, "ids")
            return ok(await self._recall_delete(wanted) if wanted else 0)
        except Exception as exc:
            return self._fail("delete_recall_records", exc)

    async def delete_recall_sources(self, source_ids: Sequence[str]) -> MemoryResult[int]:
        """Delete every record (of any kind) of the sources ``source_ids``; how many existed."""
        try:
            self._require_connected()
            sources = check_ids(source_ids, "source_ids")
            ids = [record_id(kind, s) for s in sources for kind in RECALL_KINDS]
            return ok(await self._recall_delete(ids) if ids else 0)
        except Exception as exc:
            return self._fail("delete_recall_sources", exc)

    async def delete_recall_scope(
        self, *, thread_id: str | None = None, user_id: str | None = None
    ) -> MemoryResult[int]:
        """Delete every record of ``thread_id``, or of ``user_id`` (exactly one); how many existed."""
        try:
            self._require_connected()
            given = [(k, v) for k, v in (("thread_id", thread_id), ("user_id", user_id)) if v is not None]
            if len(given) != 1:
                raise InvalidArgumentError("thread_id", "give exactly one of thread_id and user_id")
            key, value = given[0]
            if not isinstance(value, str) or not value:
                raise InvalidArgumentError(key, "must be a non-empty id")
            return ok(await self._recall_delete_scope(key, value))
        except Exception as exc:
            return self._fail("delete_recall_scope", exc)

    async def recall_keyword(
        self, query: str, *, filter: FilterInput = None, limit: int = 200
    ) -> MemoryResult[list[RecallCandidate]]:
        """The records in scope that hold the terms of ``query`` (stemmed, see
        :mod:`~cogitator_memory.index.terms`), best BM25 first, at most ``limit``.

        The rarest terms are searched while their postings stay within the store's
        ``postings_budget`` (:data:`POSTINGS_BUDGET`; the rarest always). When the rarest alone
        has more, the search first scores only the budget's worth of its postings indexed last
        (the newest records holding it): at a million turns a common word's 50,000 postings
        cost a search 100-265 ms. If fewer than ``limit`` records in scope are among those,
        every posting is read, so a user with few records in a large shared index still finds
        them all. A search of other kinds than turns (items, facts, file sections) does the
        same: a user keeping 100,000 facts that share a word ("likes") read all of its postings,
        300-450 ms a search, against 16 ms for the budget's worth."""
        try:
            self._require_connected()
            if not isinstance(query, str):
                raise InvalidArgumentError("query", f"must be text, got {type(query).__name__}")
            flt = check_filter(filter)
            size = check_limit(limit)
            terms = query_terms(query, MAX_QUERY_TERMS)
            if not terms:
                return ok([])
            n_docs, total, freqs = await self._recall_stats(terms)
            present = [t for t in terms if freqs.get(t)]
            if not present or n_docs == 0:
                return ok([])
            if n_docs >= COMMON_TERMS_FROM:
                telling = [t for t in present if freqs[t] * 2 <= n_docs]
                present = telling or present
            budget = self.postings_budget
            present = within_budget(present, freqs, budget)
            weights = [(t, BM25.idf(n_docs, freqs[t])) for t in present]
            avg_len = total / n_docs
            found: list[tuple[RecallRecord, float]] = []
            if len(present) == 1 and freqs[present[0]] > budget:
                found = await self._recall_keyword(weights, avg_len, flt, size, budget)
            if len(found) < size:
                found = await self._recall_keyword(weights, avg_len, flt, size)
            return ok([_candidate(r, s) for r, s in found])
        except Exception as exc:
            return self._fail("recall_keyword", exc)

    async def recall_time(
        self, start: datetime, end: datetime, *, filter: FilterInput = None, limit: int = 200
    ) -> MemoryResult[list[RecallCandidate]]:
        """The records in scope said during ``[start, end)`` or naming a time that overlaps it,
        newest first, at most ``limit`` (the score is ``said_at`` as seconds since the epoch)."""
        try:
            self._require_connected()
            begin = _check_time("start", start)
            stop = _check_time("end", end)
            if stop <= begin:
                raise InvalidArgumentError("end", "must be after start")
            flt = check_filter(filter)
            size = check_limit(limit)
            found = await self._recall_time(begin, stop, flt, size)
            return ok([_candidate(r, r.said_at.timestamp()) for r in found])
        except Exception as exc:
            return self._fail("recall_time", exc)

    async def count_recall_records(self, *, filter: FilterInput = None) -> MemoryResult[int]:
        """How many records are in scope (every status given in the filter; default active and superseded)."""
        try:
            self._require_connected()
            return ok(await self._recall_count(check_filter(filter)))
        except Exception as exc:
            return self._fail("count_recall_records", exc)

    async def list_recall_records(
        self, *, cursor: str | None = None, limit: int = RECALL_PAGE
    ) -> MemoryResult[RecallPage]:
        """A page of every record the index holds, about ``limit`` (at most
        :data:`~cogitator_memory.index.records.MAX_RECORD_BATCH`) in the engine's own order,
        from where ``cursor`` (a page's ``next_cursor``; ``None`` for the first page) left off.
        Walked to the end, it returns each record held throughout the walk once."""
        try:
            self._require_connected()
            size = _check_page(limit)
            records, after = await self._recall_page(_check_cursor(cursor), size)
            return ok(RecallPage(records=records, next_cursor=after))
        except Exception as exc:
            return self._fail("list_recall_records", exc)

    async def prune_recall_records(
        self, *, cursor: str | None = None, limit: int = RECALL_PAGE
    ) -> MemoryResult[RecallPrune]:
        """Check a page of records (:meth:`list_recall_records`) against their sources and
        delete those whose source the store no longer holds (see
        :mod:`~cogitator_memory.index.orphans`); walk the pages with ``next_cursor``."""
        from .orphans import orphan_ids

        try:
            self._require_connected()
            size = _check_page(limit)
            records, after = await self._recall_page(_check_cursor(cursor), size)
            gone = await orphan_ids(self, records)
            removed = 0
            for start in range(0, len(gone), MAX_RECORD_BATCH):
                removed += await self._recall_delete(gone[start : start + MAX_RECORD_BATCH])
            return ok(RecallPrune(checked=len(records), removed=removed, next_cursor=after))
        except Exception as exc:
            return self._fail("prune_recall_records", exc)

    async def get_recall_state(self, key: str) -> MemoryResult[str | None]:
        """The string kept under ``key`` (``None`` when unset)."""
        try:
            self._require_connected()
            return ok(await self._recall_state_get(_check_state_key(key)))
        except Exception as exc:
            return self._fail("get_recall_state", exc)

    async def set_recall_state(self, key: str, value: str) -> MemoryResult[None]:
        """Keep ``value`` under ``key`` (for the index's writers: how far they got)."""
        try:
            self._require_connected()
            name = _check_state_key(key)
            if not isinstance(value, str) or len(value) > 10_000:
                raise InvalidArgumentError("value", "must be text of at most 10,000 characters")
            await self._recall_state_set(name, value)
            return ok(None)
        except Exception as exc:
            return self._fail("set_recall_state", exc)


__all__ = [
    "COMMON_TERMS_FROM",
    "POSTINGS_BUDGET",
    "RECALL_BM25",
    "RecallIndexAdapter",
    "RecallIndexMixin",
    "is_recall_index",
    "item_records",
    "length_terms",
    "log_unindexed",
    "stored_record",
    "within_budget",
]
