"""What :class:`~cogitator_memory.runtime.Memory` does between runs: the pre-turn brief, the
observations per entity and consolidation (a mixin of the facade, as the search functions are a
module of their own)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, MemoryStoreError
from ..items.records import MemoryScope
from ..threads import tree
from ..upkeep import BriefCard, BriefSource, DedupeReport, FoldResult, RefreshReport

if TYPE_CHECKING:
    from ..upkeep.brief import MemoryBriefer
    from ..upkeep.consolidation import MemoryConsolidator
    from ..upkeep.observations import MemoryObservations
    from .config import MemoryConfig
    from .search import SearchHit


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """What :meth:`Memory.consolidate` did: the ``dedupe`` pass (``None`` when the config turns
    it off or memory is disabled) and the lessons folded into the playbook (``fold``: ``None``
    when it is off or nothing was folded)."""

    dedupe: DedupeReport | None = None
    fold: FoldResult | None = None


class BetweenRuns:
    """:meth:`brief`, :meth:`refresh_observations` and :meth:`consolidate` of the facade."""

    if TYPE_CHECKING:  # the facade's (see :class:`~cogitator_memory.runtime.Memory`)
        config: MemoryConfig
        enabled: bool
        summarize: Any
        briefer: MemoryBriefer | None
        observations: MemoryObservations | None
        consolidator: MemoryConsolidator | None
        files: Any

        def _require(self) -> None: ...
        def _agent(self, agent_id: str | None) -> str: ...
        async def search(
            self,
            query: str,
            *,
            user_id: str | None = None,
            agent_id: str | None = None,
            thread_id: str | None = None,
            limit: int = 10,
        ) -> list[SearchHit]: ...

    # ----- between runs: brief, observations, consolidation ------------------------------------

    def _scope(self, agent_id: str | None, user_id: str | None) -> MemoryScope:
        return MemoryScope(agent_id=self._agent(agent_id), user_id=tree.check_optional_id("user_id", user_id))

    def _model(self, call: str) -> Any:
        if self.summarize is None:
            raise MemoryStoreError(f"{call} asks a model: add a 'model' section to the memory config")
        return self.summarize

    async def brief(
        self,
        input: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        limit: int = 10,
    ) -> list[BriefCard]:
        """The cards of a brief for the turn whose input is ``input``: what :meth:`search` finds
        for it (at most ``limit`` hits, ``thread_id`` to look in one thread) is shown to the model,
        and only the cards that quote one of those hits word for word are kept (at most
        ``brief.max_cards``). ``[]``, with no model call, for a blank input or when nothing is
        found. Render them with :func:`~cogitator_memory.upkeep.brief_block` and give that to
        :meth:`build_context` as ``brief``."""
        self._require()
        if not isinstance(input, str):
            raise InvalidArgumentError("input", f"must be a string, got {type(input).__name__}")
        self._model("brief")
        if not input.strip():
            self._scope(agent_id, user_id)
            return []
        hits = await self.search(input, user_id=user_id, agent_id=agent_id, thread_id=thread_id, limit=limit)
        sources = [
            BriefSource(
                ref=f"{'turn' if hit.kind == 'entry' else 'item'}:{hit.id}",
                text=hit.text,
                date=hit.created_at.date().isoformat() if hit.created_at is not None else None,
            )
            for hit in hits
        ]
        assert self.briefer is not None
        return await self.briefer.brief(input, sources)

    async def refresh_observations(self, *, user_id: str | None = None, agent_id: str | None = None) -> RefreshReport:
        """Write again the observations of the scope ``{agent_id, user_id}`` whose facts changed
        (at most ``observations.max_entities`` model calls) and delete those whose entity has
        fewer than ``observations.min_items`` facts. :meth:`build_context` shows up to three of
        them next to the facts when the input names their entity."""
        self._require()
        scope = self._scope(agent_id, user_id)
        if self.observations is None:
            raise MemoryStoreError("observations are memory files, and memory files are off (files.enabled: false)")
        summarize = self._model("refresh_observations")
        if not self.enabled:
            return RefreshReport()
        cfg = self.config.observations
        return await self.observations.refresh(
            scope, summarize=summarize, max_entities=cfg.max_entities, min_items=cfg.min_items
        )

    async def consolidate(
        self, *, user_id: str | None = None, agent_id: str | None = None, since: datetime | None = None
    ) -> ConsolidationReport:
        """Look over the memory items of exactly ``{agent_id, user_id}`` as the ``consolidation``
        config says: mark stale the repeats and contradictions (``dedupe``; ``since`` looks only at
        subjects with an item recorded after it, as :meth:`MemoryConsolidator.dedupe
        <cogitator_memory.upkeep.MemoryConsolidator.dedupe>` reports in ``through``), then fold the
        lessons into the playbook (``fold_lessons``, a draft with ``playbook: shadow``)."""
        self._require()
        scope = self._scope(agent_id, user_id)
        after = tree.check_datetime("since", since)
        cfg = self.config.consolidation
        summarize = self._model("consolidate")
        if not self.enabled:
            return ConsolidationReport()
        dedupe: DedupeReport | None = None
        fold: FoldResult | None = None
        if self.consolidator is None:
            raise MemoryStoreError("consolidation needs a store that keeps memory files")
        if cfg.dedupe:
            dedupe = await self.consolidator.dedupe(
                scope, summarize=summarize, since=after, max_changes=cfg.max_changes, max_subjects=cfg.max_subjects
            )
        if cfg.fold_lessons and self.files is not None:
            fold = await self.consolidator.fold_lessons(scope, summarize=summarize, mode=cfg.playbook)
        return ConsolidationReport(dedupe=dedupe, fold=fold)
