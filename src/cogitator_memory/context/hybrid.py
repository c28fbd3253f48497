"""The recall of the ``hybrid`` strategy: older turns and memory items searched for the turn.

The history keeps the newest messages, as ``recent`` does; the turns older than what it keeps
and the memory items the run sees are searched with a
:class:`~cogitator_memory.recall.MemoryRetriever`, and what is found goes into the ``recall``
partition: turns under ``Earlier in this conversation:``, items under ``From memory:`` (each
with the time it held when it no longer holds).

Turns are sent as exchanges, not fragments: each found turn whole, dated, with the turns that
make it readable (:meth:`HybridRecall.exchange`: the answer of a question, the turn a reply
answers, a short reply and what it replies to). :func:`fit_recall` fills the room in three
passes: the found turns whole, with the neighbours of at most ``recall.neighbour_tokens``, by
rank over tokens (a budget holds more of the turns that answer); then, best first, the longer
neighbours whole where the room left holds them, else their opening (whole sentences, marked
``[...]``); then, for a found turn too long to fit whole, its passage of about
``recall.turn_tokens`` holding most of the input's terms (``...`` marking what was left out).
No turn is cut without a mark, and the blocks sent never hold more than the partition's room.
The turns sent come in conversation order.

Which turns are searched: without a message index, the newest ``recall.window`` (200) turns
older than the history kept; with one, every turn of the branch (read once per thread and kept
up to date from the newest entries each build reads), the vector channel fed by a search of the
index. Without an embedding service, or when embedding fails (an API answering 429, a vector
size mismatch), the search runs without vectors and the failure is a ``relevance`` error.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..facts.prompt import prompt_line
from ..index.base import is_recall_index
from ..index.records import RecallFilter
from ..items.base import is_memory_item_adapter
from ..items.records import MemoryItem, MemoryScope
from ..recall.indexed import ChannelHits, channel_hits, gather_turns, verified_turns
from ..recall.indexed_items import FoundItems, SearchKind, indexed_items
from ..recall.item_search import item_text
from ..recall.item_vectors import item_vectors
from ..recall.query import QueryAnalysis
from ..recall.retriever import MemoryRetriever, RecallHit
from ..recall.speakers import said_by
from ..result import unwrap
from ..threads.base import BaseMemoryAdapter
from ..threads.records import CONVERSATION_ENTRY_TYPES, MemoryEntry
from ..tokens import count_tokens
from .assembler import Assembly, ContextAssembler, Fit, Fitter, fit_in_order
from .config import ContextPartition, RecallSettings
from .history import HistoryWindow, TokenCache
from .message_index import entry_text
from .passages import best_passage, opening
from .records import ContextBlock, ContextBuildError, DropReason
from .strategies import cosines, fit_recent

#: What a build's recall asks the recall index for besides turns: memory items.
_ITEMS_ONLY: tuple[SearchKind, ...] = ("item",)

if TYPE_CHECKING:
    from .sources import ContextBuilderDeps

#: The headings of the sections recall fills.
TURNS_HEADING = "Earlier in this conversation:"
OTHER_HEADING = "From other conversations:"
ITEMS_HEADING = "From memory:"
#: The most turns of the user's other conversations one build recalls.
OTHER_LIMIT = 5
#: A recalled user turn this short (tokens) is a reply: it comes with the turn it replies to.
SHORT_REPLY = 30
#: The least room (tokens) in which a neighbour's opening is tried: a date, a role, a few words.
OPENING_LEAST = 20
#: Turns of the branch kept per builder for recall with a message index (least lately used
#: threads are dropped past it).
MAX_KEPT_TURNS = 200_000


@dataclass(slots=True)
class RecalledTurns:
    """What a recall block of turns holds: the ``hits``, the turns it recalls (found, or of their
    exchange, sent whole or, ``passages``, as the passage of a turn longer than
    ``recall.turn_tokens``), and the ``entries`` shown, in conversation order (``opened``: the
    ids of neighbours sent as their opening, marked ``[...]``).

    ``form`` makes the other forms of the same exchange, when :func:`fit_recall` has room for
    them (made once, when first asked): :meth:`fuller` (more of its longer neighbours) and
    :meth:`passage` (its found turns as passages, about ``passage_tokens`` tokens);
    ``whole_tokens`` is at most what its whole form takes (its longer neighbours' own tokens
    over its own)."""

    hits: list[MemoryEntry]
    entries: list[MemoryEntry]
    passages: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)
    form: Callable[[str], ContextBlock] | None = field(default=None, repr=False, compare=False)
    passage_tokens: int = 0
    whole_tokens: int = 0
    made: dict[str, ContextBlock] = field(default_factory=dict, repr=False, compare=False)

    def _make(self, kind: str) -> ContextBlock | None:
        if self.form is None:
            return None
        if kind not in self.made:
            self.made[kind] = self.form(kind)
        return self.made[kind]

    def fuller(self, kind: str, tokens: int) -> ContextBlock | None:
        """The form with more of the longer neighbours than a block of ``tokens`` tokens holds:
        ``whole`` (them whole) or ``open`` (their openings); ``None`` when it holds no more."""
        block = self._make(kind)
        return block if block is not None and block.tokens > tokens else None

    def passage(self) -> ContextBlock | None:
        """The form with the found turns longer than ``recall.turn_tokens`` as passages, if any."""
        return self._make("passage") if self.passage_tokens > 0 else None


@dataclass(slots=True)
class OtherTurn:
    """What a recall block of a turn said in another conversation of the user holds."""

    entry: MemoryEntry


@dataclass(slots=True)
class RecallPlan:
    """What hybrid recall found for one build: the ``blocks`` of the recall partition, best
    first, and what it searched."""

    blocks: list[ContextBlock] = field(default_factory=list)
    searched: int = 0


@dataclass(slots=True)
class _Branch:
    entries: list[MemoryEntry] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)


def item_holds(item: MemoryItem, at: datetime) -> bool:
    """Whether the item's state still holds at ``at`` (not closed by a later one, not ended)."""
    end = item.valid_to or item.ends_at
    return item.start <= at and (end is None or end > at)


@functools.lru_cache(maxsize=65_536)
def _date(moment: datetime, zone: ZoneInfo) -> str:
    """How a recalled turn is dated (a turn recalled again is dated from what is kept)."""
    local = moment.astimezone(zone)
    return local.strftime("%a %d %b %Y %H:%M")


def _day(moment: datetime, zone: ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%d %b %Y")


def item_line(item: MemoryItem, as_of: datetime, zone: ZoneInfo) -> str:
    """How an item is sent under ``From memory:``: its subject, attribute and value, and the
    time it held when it no longer holds at ``as_of``."""
    head = f"{item.subject} ({item.attribute})" if item.attribute else item.subject
    line = prompt_line(f"{head}: {item.value}")
    if not item_holds(item, as_of):
        end = item.valid_to or item.ends_at
        if end is not None and end <= as_of:
            line += f" [held {_day(item.start, zone)} to {_day(end, zone)}; no longer holds]"
        elif item.start > as_of:
            line += f" [from {_day(item.start, zone)}]"
    return line


class HybridRecall:
    """The recall of one :class:`~cogitator_memory.context.ContextBuilder` (see the module docs).

    Keeps, per thread, the branch's turns for recall with a message index; the items' vectors
    are kept in the embedding store, not in the process.
    """

    def __init__(self, deps: ContextBuilderDeps, settings: RecallSettings, tokens: TokenCache) -> None:
        self.deps = deps
        self.settings = settings
        self.tokens = tokens
        self.retriever = MemoryRetriever(settings, reranker=deps.reranker)
        self._branches: OrderedDict[str, _Branch] = OrderedDict()

    # ----- the turns searched --------------------------------------------------------------------

    async def older_turns(
        self, thread_id: str, leaf_id: str | None, window: HistoryWindow, keep_from: int
    ) -> tuple[list[MemoryEntry], Mapping[str, int] | None]:
        """The turns older than ``window.entries[keep_from]``, oldest first: the newest
        ``settings.window`` of them without a message index, all of the branch with one (then
        with their places, by id)."""
        entries = window.entries
        older_read = list(entries[:keep_from])
        if self.deps.message_index is not None:
            branch = await self._branch(thread_id, leaf_id, window)
            if entries and keep_from < len(entries):
                at = branch.pos.get(entries[keep_from].id)
                if at is not None:
                    return branch.entries[:at], branch.pos
            return branch.entries[: len(branch.entries) - (len(entries) - keep_from)], branch.pos
        want = self.settings.window
        if len(older_read) >= want or not entries:
            return older_read[-want:], None
        memory = self.deps.memory_adapter
        first = entries[0].id
        where: dict[str, Any] = {
            "thread_id": thread_id,
            "before": first,
            "limit": want - len(older_read),
            "types": CONVERSATION_ENTRY_TYPES,
            "include_tool_calls": True,
        }
        if isinstance(memory, BaseMemoryAdapter):
            found = await memory.get_path(**where, copy=False)
        else:
            found = await memory.get_path(**where)
        return [*unwrap(found), *older_read], None

    async def _branch(self, thread_id: str, leaf_id: str | None, window: HistoryWindow) -> _Branch:
        """Every turn of the branch, oldest first, kept up to date from the newest entries read."""
        cached = self._branches.get(thread_id)
        newest = window.entries
        if cached is not None and newest:
            for j in range(len(newest) - 1, -1, -1):
                at = cached.pos.get(newest[j].id)
                if at is None:
                    continue
                if at != len(cached.entries) - 1:
                    cached.entries = cached.entries[: at + 1]
                    cached.pos = {e.id: i for i, e in enumerate(cached.entries)}
                for entry in newest[j + 1 :]:
                    cached.pos[entry.id] = len(cached.entries)
                    cached.entries.append(entry)
                self._branches.move_to_end(thread_id)
                return cached
        memory = self.deps.memory_adapter
        where: dict[str, Any] = {
            "thread_id": thread_id,
            "leaf_id": leaf_id,
            "types": CONVERSATION_ENTRY_TYPES,
            "include_tool_calls": True,
        }
        if isinstance(memory, BaseMemoryAdapter):
            path = unwrap(await memory.get_path(**where, copy=False))
        else:
            path = unwrap(await memory.get_path(**where))
        branch = _Branch(list(path), {e.id: i for i, e in enumerate(path)})
        self._branches[thread_id] = branch
        self._branches.move_to_end(thread_id)
        while len(self._branches) > 1 and sum(len(b.entries) for b in self._branches.values()) > MAX_KEPT_TURNS:
            self._branches.popitem(last=False)
        return branch

    def forget(self, thread_id: str) -> None:
        """Drop what is kept of a thread (read again at its next build)."""
        self._branches.pop(thread_id, None)

    # ----- vectors -------------------------------------------------------------------------------

    async def turn_cosines(
        self,
        thread_id: str,
        turns: Sequence[MemoryEntry],
        vector: Sequence[float],
        embed_turns: Any,
    ) -> dict[str, float]:
        """Cosines of the turns with the input: from a search of the message index when there is
        one, else by embedding the turns (``embed_turns``, cached per entry by the builder)."""
        index = self.deps.message_index
        if index is None:
            known: dict[str, Any] = await embed_turns(turns)
            ids = list(known)
            return dict(zip(ids, cosines(vector, [known[i] for i in ids]), strict=True))
        index.use(thread_id)
        hits = await index.search(thread_id, vector, limit=self.settings.search_limit)
        return {h.source_id: float(h.score) for h in hits}

    async def item_cosines(self, items: Sequence[MemoryItem], vector: Sequence[float]) -> dict[str, float]:
        """Cosines of the items with the input. Each item's vector is made once and kept in the
        embedding store (:mod:`cogitator_memory.recall.item_vectors`); without an embedding
        store that can keep them, the items are embedded at each build."""
        service = self.deps.embedding_service
        if service is None or not items:
            return {}
        store = self.deps.embedding_adapter
        if store is not None and callable(getattr(store, "get_by_sources", None)):
            known = await item_vectors(store, service, items)
        else:
            made = await service.embed_batch([item_text(i) for i in items])
            known = {i.id: list(v) for i, v in zip(items, made, strict=True)}
        ids = [i for i in (item.id for item in items) if i in known]
        return dict(zip(ids, cosines(vector, [known[i] for i in ids]), strict=True))

    # ----- items ---------------------------------------------------------------------------------

    def _item_store(self) -> Any:
        """The item store of ``deps.memory_items`` (a store, or a service's ``adapter``); ``None``
        without one. Raises ``TypeError`` for anything else."""
        source = self.deps.memory_items
        if source is None:
            return None
        adapter = source if is_memory_item_adapter(source) else getattr(source, "adapter", None)
        if adapter is None or not is_memory_item_adapter(adapter):
            raise TypeError("deps.memory_items must be a MemoryItems service or a MemoryItemAdapter")
        return adapter

    def item_filter(self, agent_id: str | None, user_id: str | None, as_of: datetime | None) -> RecallFilter | None:
        """The scope a build asks the recall index for the items it ranks, or ``None`` when it
        reads every item the run sees instead (:meth:`read_items`): the items are asked of the
        index when the store that keeps them keeps it too, the run has an agent and a user, and
        the build is of the present (``as_of`` not given: the index holds what is known now, a
        build in the past lays the items out as known then)."""
        memory = self.deps.memory_adapter
        if as_of is not None or agent_id is None or user_id is None or self._item_store() is not memory:
            return None
        if not is_recall_index(memory):
            return None
        # items only: core facts are the system prompt's (``Memory.build_context``), and of another agent
        return RecallFilter(agent_id=agent_id, user_id=user_id, kinds=["item"])

    async def item_channels(self, flt: RecallFilter, analysis: QueryAnalysis) -> ChannelHits:
        """What the recall index's keyword (and time) channels find of the items in ``flt``'s
        scope (asked while the input is embedded: they need no vector)."""
        return await channel_hits(self.deps.memory_adapter, analysis.text, flt, analysis, self.retriever.settings.depth)

    async def indexed_items(
        self,
        flt: RecallFilter,
        thread_id: str,
        analysis: QueryAnalysis,
        found: ChannelHits,
        vector: Sequence[float] | None,
    ) -> FoundItems:
        """The items a build ranks, found through the recall index (:func:`~cogitator_memory.recall.indexed_items.indexed_items`):
        those the channels ``found`` and, with the input's ``vector``, the nearest items by
        their vectors, at most a few hundred whatever the user holds; an item of another thread
        of the user is left out (the run does not see it)."""
        store = self.deps.embedding_adapter
        vectors = store if vector is not None and callable(getattr(store, "get_by_sources", None)) else None
        out = await indexed_items(
            self.deps.memory_adapter,
            found,
            flt,
            analysis,
            vectors=vectors,
            query_vector=vector,
            service=self.deps.embedding_service,
            depth=self.retriever.settings.depth,
            kinds=_ITEMS_ONLY,
        )
        assert flt.agent_id is not None
        viewer = MemoryScope(agent_id=flt.agent_id, user_id=flt.user_id, thread_id=thread_id)
        unseen = {i.id for i in out.items if not viewer.sees(i.scope)}
        if unseen:
            out.items = [i for i in out.items if i.id not in unseen]
            out.keyword = [i for i in out.keyword if i not in unseen]
            out.cosines = {k: v for k, v in out.cosines.items() if k not in unseen}
        return out

    async def read_items(self, agent_id: str | None, user_id: str | None, thread_id: str, as_of: datetime) -> Any:
        """The active and superseded items the run sees (its agent, user and thread), as known
        at ``as_of``; ``None`` when the builder has no item store or no agent."""
        adapter = self._item_store()
        if adapter is None or agent_id is None:
            return None
        scope: dict[str, Any] = {"agent_id": agent_id, "thread_id": thread_id}
        if user_id is not None:
            scope["user_id"] = user_id
        found: list[MemoryItem] = unwrap(
            await adapter.query_items({"visible_to": scope, "statuses": ["active", "superseded"], "known_at": as_of})
        )
        return found

    # ----- the search and its blocks -------------------------------------------------------------

    async def search(
        self,
        analysis: QueryAnalysis,
        turns: Sequence[MemoryEntry],
        turn_cos: dict[str, float] | None,
        items: Sequence[MemoryItem] | None,
        item_cos: dict[str, float] | None,
        errors: list[ContextBuildError],
        indexed: FoundItems | None = None,
    ) -> list[RecallHit]:
        """The hits of the retriever (its failures are ``relevance`` errors). ``indexed`` are
        the items found through the recall index (:meth:`indexed_items`), ranked in place of
        ``items`` and ``item_cos``, their keyword ranking the index's."""
        if indexed is not None:
            items, item_cos = indexed.items, indexed.cosines
        found = await self.retriever.retrieve(
            analysis.text,
            analysis=analysis,
            history=turns,
            cosines=turn_cos,
            items=items,
            item_cosines=item_cos,
            item_keyword_hits=indexed.keyword if indexed is not None else None,
            item_terms=indexed.terms if indexed is not None else None,
            limit=self.settings.hybrid_limit,
        )
        errors.extend(ContextBuildError("relevance", exc) for exc in found.errors)
        return found.hits

    async def other_channels(
        self, agent_id: str | None, user_id: str | None, analysis: QueryAnalysis
    ) -> ChannelHits | None:
        """What the recall index's keyword and time channels find of the user's turns for
        :meth:`other_conversations` (which needs no vector for them, so a build asks them while
        the input is embedded); ``None`` when that search finds nothing by its rules."""
        memory = self.deps.memory_adapter
        if agent_id is None or user_id is None or not is_recall_index(memory):
            return None
        flt = RecallFilter(agent_id=agent_id, user_id=user_id, kinds=["turn"])
        return await channel_hits(memory, analysis.text, flt, analysis, self.retriever.settings.depth)

    async def other_conversations(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        analysis: QueryAnalysis,
        vector: Sequence[float] | None,
        zone: ZoneInfo,
        errors: list[ContextBuildError],
        found: ChannelHits | None = None,
    ) -> list[ContextBlock]:
        """Blocks of the turns of the user's other conversations (of the same agent) that answer
        the input, best first (at most :data:`OTHER_LIMIT`), each dated: found through the store's
        recall index, ranked by the retriever, read again from the store. Nothing when the store
        keeps no recall index, or the thread has no agent or no user (whose other conversations
        would be anyone's). ``found`` is what :meth:`other_channels` asked already."""
        memory = self.deps.memory_adapter
        if agent_id is None or user_id is None or not is_recall_index(memory):
            return []
        flt = RecallFilter(agent_id=agent_id, user_id=user_id)
        vectors = self.deps.embedding_adapter if self.deps.message_index is not None else None
        found_turns = await gather_turns(
            memory,
            analysis.text,
            flt,
            analysis,
            vectors=vectors,
            query_vector=vector if vectors is not None else None,
            keyword_depth=self.retriever.settings.depth,
            found=found,
        )
        others = [e for e in found_turns.history if e.thread_id != thread_id]
        if not others:
            return []
        kept = {e.id for e in others}
        ranked = await self.retriever.retrieve(
            analysis.text,
            analysis=analysis,
            history=others,
            cosines={k: v for k, v in found_turns.cosines.items() if k in kept},
            keyword_hits=[k for k in found_turns.keyword if k in kept],
            turn_terms={rid: r.term_map() for rid, r in found_turns.records.items()},
            items=[],
            limit=OTHER_LIMIT * 2,
        )
        errors.extend(ContextBuildError("relevance", exc) for exc in ranked.errors)
        ids = [h.id for h in ranked.hits if h.entry is not None]
        stored = await verified_turns(memory, ids)
        out: list[ContextBlock] = []
        for hit in ranked.hits:
            entry = stored.get(hit.id)
            if entry is None:
                continue
            message = entry.message
            text = message.text if message is not None else ""
            limit = self.settings.turn_tokens
            body, _tokens = self.tokens.cut(text[: limit * 8], limit, " ...")
            line = f"[{_date(entry.created_at, zone)}] {said_by(entry)}: {body}"
            out.append(ContextBlock("recall", line, count_tokens(line) + 2, hit.id, OtherTurn(entry), hit.score))
            if len(out) == OTHER_LIMIT:
                break
        return out

    def exchange(self, entry: MemoryEntry, turns: Sequence[MemoryEntry], at: int | None) -> list[MemoryEntry]:
        """The turns that make a recalled turn readable: for a user turn the answer (the turn
        after it), for any other the turn it answers (the turn before it); a short reply (at most
        :data:`SHORT_REPLY` tokens) also brings what it replies to, and a short reply to the
        turn comes with it."""
        if at is None:
            return []
        role = entry.message.role if entry.message is not None else ""
        near = [at + 1] if role == "user" else [at - 1]
        if role == "user" and self.tokens.tokens(entry) <= SHORT_REPLY:
            near.append(at - 1)
        elif role != "user" and at + 1 < len(turns) and self.tokens.tokens(turns[at + 1]) <= SHORT_REPLY:
            near.append(at + 1)
        return [turns[i] for i in near if 0 <= i < len(turns)]

    def turn_lines(
        self,
        sent: Sequence[MemoryEntry],
        group: Sequence[MemoryEntry],
        zone: ZoneInfo,
        terms: frozenset[str],
        neighbours: str = "short",
    ) -> tuple[str, int, RecalledTurns]:
        """The text of a block of turns (each line dated), its tokens and what it shows. The
        recalled turns (``sent``) are sent whole, or with ``neighbours="passage"`` a turn longer
        than ``turn_tokens`` as its passage holding most of the input's terms. A neighbour (a
        turn of ``group`` not in ``sent``) is sent whole when it is at most ``neighbour_tokens``
        long; a longer one is left out (``short``, ``passage``), sent as its opening cut at a
        sentence end and marked ``[...]`` (``open``), or whole (``whole``)."""
        wanted = {e.id for e in sent}
        limit = self.settings.turn_tokens
        cut = self.settings.neighbour_tokens
        lines: list[str] = []
        tokens = 2
        shown = RecalledTurns([], [])
        for entry in group:
            message = entry.message
            text = message.text if message is not None else ""
            if not text.strip() and entry.id not in wanted:
                continue
            head = f"[{_date(entry.created_at, zone)}] {said_by(entry)}: "
            whole = self.tokens.tokens(entry)
            if entry.id in wanted:
                if neighbours == "passage" and whole > limit:
                    text = best_passage(text, terms, limit, self.tokens)
                    shown.passages.append(entry.id)
                    whole = count_tokens(text)
            elif whole > cut:
                if neighbours in ("short", "passage") or cut <= 0:
                    continue
                if neighbours == "open":
                    text, whole = opening(text, cut, self.tokens)
                    if not text:
                        continue
                    shown.opened.append(entry.id)
            shown.entries.append(entry)
            if entry.id not in shown.opened:
                shown.hits.append(entry)
            lines.append(head + text)
            tokens += whole + self.tokens.text_tokens(head[: head.index("]") + 1]) + 3
        return "\n".join(lines), tokens, shown

    def blocks(
        self,
        hits: Sequence[RecallHit],
        turns: Sequence[MemoryEntry],
        zone: ZoneInfo,
        as_of: datetime,
        terms: Sequence[str] = (),
        places: Mapping[str, int] | None = None,
    ) -> list[ContextBlock]:
        """The recall blocks of ``hits``: a turn with the turns of its exchange (see
        :meth:`exchange`; a hit among them is sent whole, in the same block), an item alone.
        Blocks come in the order :func:`fit_recall` fills them: by worth over tokens (the hit
        of rank ``r``, 0 the best, in a block of ``t`` tokens is worth ``1 / ((r + 1) * t)``), so a
        budget holds more of the turns that answer (see :func:`fit_recall` for the forms of a
        block with turns longer than ``neighbour_tokens`` or ``turn_tokens``)."""
        wanted_terms = frozenset(terms)
        pos = places if places is not None else {e.id: i for i, e in enumerate(turns)}
        hit_ids = {h.id for h in hits if h.kind == "turn"}
        short = self.settings.neighbour_tokens
        used: set[str] = set()
        ranked: list[tuple[float, int, ContextBlock]] = []
        for rank, hit in enumerate(hits):
            if hit.kind == "item":
                assert hit.item is not None
                text = item_line(hit.item, as_of, zone)
                block = ContextBlock("recall", text, count_tokens(text) + 2, hit.id, hit.item, hit.score)
            else:
                if hit.id in used or hit.entry is None:
                    continue
                near = [e for e in self.exchange(hit.entry, turns, pos.get(hit.id)) if e.id not in used]
                group = sorted([hit.entry, *near], key=lambda e: pos.get(e.id, 0))
                # a neighbour found too is sent as a hit when it is short; a longer one keeps its own block
                sent = [e for e in group if e.id == hit.id or (e.id in hit_ids and self.tokens.tokens(e) <= short)]
                used.update(e.id for e in sent)
                block = self._turn_block(hit, sent, group, zone, wanted_terms)
            ranked.append((1.0 / ((rank + 1) * max(1, block.tokens)), rank, block))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return [block for _worth, _rank, block in ranked]

    def _turn_block(
        self,
        hit: RecallHit,
        sent: list[MemoryEntry],
        group: list[MemoryEntry],
        zone: ZoneInfo,
        terms: frozenset[str],
    ) -> ContextBlock:
        """The block of one exchange at its smallest whole form (neighbours longer than
        ``neighbour_tokens`` left out), able to make its other forms (see :class:`RecalledTurns`)."""
        text, tokens, shown = self.turn_lines(sent, group, zone, terms)
        limit = self.settings.turn_tokens
        fuller = len(shown.entries) < len(group) and self.settings.neighbour_tokens > 0
        long = [self.tokens.tokens(e) for e in sent if self.tokens.tokens(e) > limit]
        if fuller or long:

            def form(kind: str) -> ContextBlock:
                text, tokens, found = self.turn_lines(sent, group, zone, terms, kind)
                return ContextBlock("recall", text, tokens, hit.id, found, hit.score)

            shown.form = form
            ids = {e.id for e in shown.entries}
            shown.whole_tokens = tokens + sum(self.tokens.tokens(e) for e in group if e.id not in ids)
            if long:  # a passage is about ``limit`` tokens, "..." marks aside
                shown.passage_tokens = tokens - sum(long) + len(long) * (limit + 4)
        return ContextBlock("recall", text, tokens, hit.id, shown, hit.score)


def _versions(block: ContextBlock) -> list[ContextBlock]:
    """The block and the other forms of it made so far."""
    item = block.item
    return [block, *item.made.values()] if isinstance(item, RecalledTurns) else [block]


def fit_recall(blocks: Sequence[ContextBlock], room: int) -> Fit:
    """The recall partition's fitter. First each block that fits the room left, in the order
    given (:meth:`HybridRecall.blocks` gives them by worth over tokens), at its smallest whole
    form; then, best first, each kept exchange at the fullest form the room left holds (its
    longer neighbours whole, else their openings), a neighbour never shown twice; then each
    exchange left out whose found turns fit as passages (``recall.turn_tokens``), as those.
    Turns come out in conversation order, the other blocks (items, other conversations, the
    graph) in the order given."""
    fit = fit_in_order(blocks, room)
    left = max(0, room) - fit.used
    shown = {e.id for b in fit.kept if isinstance(b.item, RecalledTurns) for e in b.item.entries}
    for i, block in enumerate(fit.kept):
        if left < OPENING_LEAST:
            break
        if not isinstance(block.item, RecalledTurns) or block.item.form is None:
            continue
        for kind in ("whole", "open"):  # the opening is made only when the whole does not fit
            if kind == "whole" and block.item.whole_tokens - block.tokens > left:
                continue
            fuller = block.item.fuller(kind, block.tokens)
            if fuller is None:
                continue
            more = {e.id for e in fuller.item.entries} - {e.id for e in block.item.entries}
            if fuller.tokens - block.tokens <= left and not more & shown:
                left -= fuller.tokens - block.tokens
                shown |= more
                fit.kept[i] = fuller
                break
    if left > 0:
        dropped: list[tuple[ContextBlock, DropReason]] = []
        for block, reason in fit.dropped:
            item = block.item
            if isinstance(item, RecalledTurns) and 0 < item.passage_tokens <= left:
                cut = item.passage()
                if cut is not None and cut.tokens <= left and not {e.id for e in cut.item.entries} & shown:
                    fit.kept.append(cut)
                    left -= cut.tokens
                    shown |= {e.id for e in cut.item.entries}
                    continue
            dropped.append((block, reason))
        fit.dropped = dropped
    turns = [b for b in fit.kept if isinstance(b.item, RecalledTurns)]
    turns.sort(key=lambda b: min((e.seq for e in b.item.entries), default=0))
    fit.kept = [*(b for b in fit.kept if not isinstance(b.item, RecalledTurns)), *turns]
    fit.used = sum(b.tokens for b in fit.kept)
    return fit


async def gather_vectors(
    recall: HybridRecall,
    thread_id: str,
    turns: Sequence[MemoryEntry],
    items: Sequence[MemoryItem] | None,
    vector: Sequence[float] | None,
    embed_turns: Any,
    errors: list[ContextBuildError],
) -> tuple[dict[str, float] | None, dict[str, float] | None]:
    """The turn and item cosines of the input, ``None`` for a part that failed (a ``relevance``
    error: the search runs without those vectors)."""
    if vector is None:
        return None, None

    async def turn_part() -> dict[str, float] | None:
        try:
            return await recall.turn_cosines(thread_id, turns, vector, embed_turns)
        except Exception as exc:
            errors.append(ContextBuildError("relevance", exc))
            return None

    async def item_part() -> dict[str, float] | None:
        if not items:
            return None
        try:
            return await recall.item_cosines(items, vector)
        except Exception as exc:
            errors.append(ContextBuildError("relevance", exc))
            return None

    turn_cos, item_cos = await asyncio.gather(turn_part(), item_part())
    return turn_cos, item_cos


def _entries_of(block: ContextBlock) -> list[MemoryEntry]:
    item = block.item
    if isinstance(item, list):
        return item
    return [item] if isinstance(item, MemoryEntry) else []


async def stale_blocks(memory: Any, assembly: Assembly) -> set[int]:
    """The kept recall blocks (by ``id()``) holding a turn the store changed or deleted since
    it was read."""
    kept = [b for b in assembly.kept.get("recall", ()) if isinstance(b.item, RecalledTurns)]
    entries = {e.id: e for b in kept for e in b.item.entries}
    if not entries:
        return set()
    found = await asyncio.gather(*(memory.get_entry(i) for i in entries))
    changed: set[str] = set()
    for (eid, old), result in zip(entries.items(), found, strict=True):
        fresh = result.data if result.success else None
        if fresh is None or entry_text(fresh) != entry_text(old):
            changed.add(eid)
    return {id(b) for b in kept if any(e.id in changed for e in b.item.entries)}


async def settle_recall(
    recall: HybridRecall,
    thread_id: str,
    assembler: ContextAssembler,
    budget: int,
    blocks: dict[ContextPartition, list[ContextBlock]],
    overhead: dict[ContextPartition, int],
    fitter: Fitter,
    assembly: Assembly,
) -> Assembly:
    """Assemble again until recall repeats nothing the history or the facts kept and, when the
    turns came from what the builder keeps between builds, what it sends is what the store holds
    now (a turn may have been redacted or deleted since)."""
    checked = recall.deps.message_index is None
    for _ in range(4):
        in_history = {e.id for b in assembly.kept.get("recent", ()) for e in _entries_of(b)}
        in_facts = {b.source_id for b in assembly.kept.get("facts", ()) if b.source_id}
        repeat: set[int] = set()
        for b in assembly.kept.get("recall", ()):
            item = b.item
            if (isinstance(item, RecalledTurns) and any(e.id in in_history for e in item.entries)) or (
                isinstance(item, MemoryItem) and item.id in in_facts
            ):
                repeat.add(id(b))
        if not repeat and not checked:
            checked = True
            repeat = await stale_blocks(recall.deps.memory_adapter, assembly)
            if repeat:
                recall.forget(thread_id)
        if not repeat:
            return assembly
        blocks["recall"] = [b for b in blocks.get("recall", ()) if not any(id(v) in repeat for v in _versions(b))]
        assembly = assembler.assemble(
            budget, blocks, fitters={"recent": fitter, "recall": fit_recall}, overhead=overhead
        )
    return assembly


def estimated_cut(window: HistoryWindow, room: int, counter: TokenCache, blocks: Sequence[ContextBlock]) -> int:
    """The index in ``window.entries`` of the oldest entry the history keeps in ``room`` tokens
    (``len(entries)`` when it keeps none)."""
    fit = fit_recent(blocks, room, complete=window.complete, counter=counter)
    if not fit.kept:
        return len(window.entries)
    first = fit.kept[0].source_id
    for i, entry in enumerate(window.entries):
        if entry.id == first:
            return i
    return len(window.entries)


__all__ = [
    "ITEMS_HEADING",
    "OTHER_HEADING",
    "OTHER_LIMIT",
    "SHORT_REPLY",
    "TURNS_HEADING",
    "HybridRecall",
    "OtherTurn",
    "RecallPlan",
    "RecalledTurns",
    "best_passage",
    "estimated_cut",
    "fit_recall",
    "gather_vectors",
    "item_holds",
    "item_line",
    "opening",
    "settle_recall",
    "stale_blocks",
]
