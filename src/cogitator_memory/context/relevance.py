"""The ``relevant`` strategy of :class:`~cogitator_memory.context.ContextBuilder`: history ranked for the input.

Kept apart from the builder as a mixin: :class:`RelevanceRanking` scores the history units of a
build (an entry, or a tool call with its results) with the builder's retriever, the cosines of
the entries' vectors (cached per entry id, read from the message index or embedded) and, with a
message index, finds older entries of the branch by a search of the index.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..recall.query import QueryAnalysis
from ..result import unwrap
from ..threads.records import CONVERSATION_ENTRY_TYPES, MemoryEntry
from .config import ContextBuilderConfig
from .history import HistoryWindow, TokenCache, compaction_of
from .message_index import entry_text
from .records import ContextBlock, ContextBuildError
from .strategies import as_array, cosines, group_units

if TYPE_CHECKING:
    from .hybrid import HybridRecall
    from .sources import ContextBuilderDeps


@dataclass(slots=True)
class _Branch:
    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)


class RelevanceRanking:
    """The relevance ranking of a builder (mixed into :class:`~cogitator_memory.context.ContextBuilder`)."""

    config: ContextBuilderConfig
    deps: ContextBuilderDeps
    max_cached_vectors: int
    _tokens: TokenCache
    _recall: HybridRecall
    _vectors: OrderedDict[str, tuple[str, Any]]
    _branches: OrderedDict[str, _Branch]

    async def _rank(
        self,
        thread_id: str,
        leaf_id: str | None,
        window: HistoryWindow,
        vector: list[float],
        analysis: QueryAnalysis,
        errors: list[ContextBuildError],
    ) -> list[ContextBlock] | None:
        try:
            return await self._rank_entries(thread_id, leaf_id, window, vector, analysis, errors)
        except Exception as exc:
            errors.append(ContextBuildError("relevance", exc))
            return None

    async def _rank_entries(
        self,
        thread_id: str,
        leaf_id: str | None,
        window: HistoryWindow,
        vector: list[float],
        analysis: QueryAnalysis,
        errors: list[ContextBuildError],
    ) -> list[ContextBlock]:
        """The history units scored for ``relevant``: the turns the retriever finds first (by
        its rank), then the others by their cosine with the input."""
        entries = list(window.entries)
        scores: dict[str, float] = {}
        index = self.deps.message_index
        if index is not None:
            index.use(thread_id)
            hits = await index.search(thread_id, vector, limit=self.config.recall.search_limit)
            present = {e.id for e in entries}
            extra_ids = [h.source_id for h in hits if h.source_id not in present]
            for hit in hits:
                scores[hit.source_id] = float(hit.score)
            if extra_ids:
                entries.extend(await self._older_on_branch(thread_id, leaf_id, window, extra_ids))
                entries.sort(key=lambda e: e.seq)
        known = await self._embed_entries([e for e in entries if e.id not in scores], from_index=True)
        ids = list(known)
        for eid, score in zip(ids, cosines(vector, [known[i] for i in ids]), strict=True):
            scores[eid] = score
        found = await self._recall.retriever.retrieve(
            analysis.text, analysis=analysis, history=entries, cosines=scores, limit=max(1, len(entries))
        )
        errors.extend(ContextBuildError("relevance", exc) for exc in found.errors)
        top = found.hits[0].score if found.hits else 1.0
        ranked = {h.id: 1.0 + h.score / top for h in found.hits if h.kind == "turn"}
        blocks: list[ContextBlock] = []
        for unit in group_units(entries):
            tokens = sum(self._tokens.tokens(e) for e in unit)
            unit_scores = [
                ranked[e.id] if e.id in ranked else 0.5 * scores[e.id] for e in unit if e.id in scores or e.id in ranked
            ]
            blocks.append(
                ContextBlock(
                    "recent",
                    "\n".join(e.message.text for e in unit if e.message is not None),
                    tokens,
                    unit[0].id,
                    unit,
                    max(unit_scores) if unit_scores else 0.0,
                )
            )
        return blocks

    async def _embed_entries(self, entries: Sequence[MemoryEntry], *, from_index: bool = False) -> dict[str, Any]:
        """The vectors of ``entries`` with a text: from the builder's cache, from the message
        index (``from_index``), else embedded now in one batch; entries without text are left out."""
        known: dict[str, Any] = {}
        need: dict[str, tuple[MemoryEntry, str]] = {}
        for entry in entries:
            text = entry_text(entry)
            if not text.strip():
                continue
            cached = self._vectors.get(entry.id)
            if cached is not None and cached[0] == text:
                known[entry.id] = cached[1]
            else:
                need[entry.id] = (entry, text)
        index = self.deps.message_index
        if need and from_index and index is not None:
            for eid, vec in (await index.vectors_of(list(need))).items():
                known[eid] = self._remember(eid, need.pop(eid)[1], vec)
        service = self.deps.embedding_service
        if need and service is not None:
            wanted = list(need.values())
            vectors = await service.embed_batch([t for _, t in wanted])
            for (entry, text), vec in zip(wanted, vectors, strict=True):
                known[entry.id] = self._remember(entry.id, text, vec)
        return known

    def _remember(self, entry_id: str, text: str, vector: Sequence[float]) -> Any:
        """Cache an entry's vector (as a numpy array when numpy is there) and return it."""
        value = as_array(vector)
        self._vectors[entry_id] = (text, value)
        if len(self._vectors) > self.max_cached_vectors:
            self._vectors.popitem(last=False)
        return value

    async def _older_on_branch(
        self, thread_id: str, leaf_id: str | None, window: HistoryWindow, ids: list[str]
    ) -> list[MemoryEntry]:
        """The entries of ``ids`` that are on the branch and in its compacted view."""
        branch = await self._branch(thread_id, leaf_id, window)
        memory = self.deps.memory_adapter
        floor = -1
        if window.summary is not None:
            event = compaction_of(window.summary)
            first = event.first_kept_entry_id if event is not None else None
            floor = window.summary.seq
            if first is not None:
                got = await memory.get_entry(first)
                if got.success and got.data is not None:
                    floor = got.data.seq
        on_branch = [i for i in ids if i in branch.pos]
        found = await asyncio.gather(*(memory.get_entry(i) for i in on_branch))
        out: list[MemoryEntry] = []
        for result in found:
            entry = result.data if result.success else None
            if entry is not None and not entry.is_event and entry.seq >= floor:
                out.append(entry)
        return out

    async def _branch(self, thread_id: str, leaf_id: str | None, window: HistoryWindow) -> _Branch:
        """The conversation entry ids of the branch, oldest first, kept up to date by the newest
        entries a build reads (read whole only when the branch moved past what is known)."""
        cached = self._branches.get(thread_id)
        if cached is not None:
            newest = window.entries
            for j in range(len(newest) - 1, -1, -1):
                at = cached.pos.get(newest[j].id)
                if at is None:
                    continue
                if at != len(cached.ids) - 1:
                    cached.ids = cached.ids[: at + 1]
                    cached.pos = {eid: i for i, eid in enumerate(cached.ids)}
                for entry in newest[j + 1 :]:
                    cached.pos[entry.id] = len(cached.ids)
                    cached.ids.append(entry.id)
                self._branches.move_to_end(thread_id)
                return cached
        path = unwrap(
            await self.deps.memory_adapter.get_path(
                thread_id=thread_id, leaf_id=leaf_id, types=CONVERSATION_ENTRY_TYPES
            )
        )
        branch = _Branch([e.id for e in path], {e.id: i for i, e in enumerate(path)})
        self._branches[thread_id] = branch
        while len(self._branches) > 64:
            self._branches.popitem(last=False)
        return branch


__all__ = ["RelevanceRanking"]
