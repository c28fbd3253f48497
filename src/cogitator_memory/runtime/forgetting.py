"""Forgetting through :class:`~cogitator_memory.runtime.Memory`: deleting, redacting and
rewinding entries, deleting threads and forgetting users, through the cascade (a mixin of the
facade), once what the indexes have queued is written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import clock as package_clock
from ..cascade import CascadeCounts, MemoryCascade
from ..errors import InvalidArgumentError, MemoryStoreError
from ..result import unwrap
from ..threads import tree

if TYPE_CHECKING:
    from ..facts.core import CoreFacts


class Forgetting:
    """The facade's forgetting calls, each through the cascade (see :mod:`~cogitator_memory.cascade`)."""

    if TYPE_CHECKING:  # the facade's (see :class:`~cogitator_memory.runtime.Memory`)
        enabled: bool
        cascade: MemoryCascade | None
        indexer: Any
        message_index: Any
        adapter: Any
        _core: dict[tuple[str, str | None], CoreFacts]
        _tools: dict[tuple[str, str | None], Any]

        def _require(self) -> None: ...
        def _agent(self, agent_id: str | None) -> str: ...

    # ----- forgetting: the cascade -------------------------------------------------------------

    async def _cascade(self) -> MemoryCascade:
        """The cascade, once what the indexes have queued is written: a turn added a moment ago
        is in the indexes before it is forgotten, never written into them after."""
        self._require()
        if not self.enabled or self.cascade is None:
            raise MemoryStoreError("memory is disabled: the store could not be reached when it started")
        if self.indexer is not None:
            await self.indexer.flush()
        if self.message_index is not None:
            await self.message_index.flush()
        return self.cascade

    async def delete_entries(
        self, entry_ids: Sequence[str], *, agent_id: str | None = None, keep_replies: bool = False
    ) -> CascadeCounts:
        """Delete entries with their replies (unless ``keep_replies``), their copies in forks and
        everything memory derived from them: summaries over them, the items, facts, graph
        nodes and edges, vectors, file versions, observations and playbook rules that stood on
        them (see :meth:`MemoryCascade.delete_entries
        <cogitator_memory.cascade.MemoryCascade.delete_entries>`). ``agent_id`` (default the
        config's) is searched besides the agents of the threads touched."""
        cascade = await self._cascade()
        agent = self._agent(agent_id)
        return await cascade.delete_entries(entry_ids, {"agent_ids": [agent]}, keep_replies=keep_replies)

    async def redact_entries(
        self,
        entry_ids: Sequence[str],
        *,
        reason: str | None = None,
        agent_id: str | None = None,
        keep_replies: bool = False,
    ) -> CascadeCounts:
        """Redact entries in place (their text becomes ``[redacted]``, their place in the thread
        stays; ``reason`` is recorded), with their replies (unless ``keep_replies``) and copies in
        forks, and take what memory derived from them, as :meth:`delete_entries` does."""
        cascade = await self._cascade()
        agent = self._agent(agent_id)
        if reason is not None and not isinstance(reason, str):
            raise InvalidArgumentError("reason", f"must be text or None, got {type(reason).__name__}")
        redaction: dict[str, Any] = {"at": package_clock.now(), "reason": reason}
        return await cascade.redact_entries(entry_ids, redaction, {"agent_ids": [agent]}, keep_replies=keep_replies)

    async def rewind(self, thread_id: str, to_entry_id: str, *, agent_id: str | None = None) -> CascadeCounts:
        """Move the thread back to ``to_entry_id`` (the entries after it stay, on a branch of
        their own) after marking stale the memory items that stood only on those entries."""
        cascade = await self._cascade()
        tid = tree.check_id("thread_id", thread_id)
        eid = tree.check_id("to_entry_id", to_entry_id)
        agent = self._agent(agent_id)
        return await cascade.rewind(tid, eid, {"agent_ids": [agent]})

    async def delete_thread(self, thread_id: str, *, agent_id: str | None = None) -> CascadeCounts:
        """Delete a thread whole with what memory derived from it and what was kept for it
        alone, and the copies of its entries in its forks."""
        cascade = await self._cascade()
        tid = tree.check_id("thread_id", thread_id)
        agent = self._agent(agent_id)
        return await cascade.delete_thread(tid, {"agent_ids": [agent]})

    async def forget_user(self, user_id: str, *, agent_id: str | None = None) -> CascadeCounts:
        """Forget a user: their threads whole, what they wrote in threads of others, what was
        kept for them (memory items, core facts, memory files, observations, graph facts) and the
        vectors of their turns. ``agent_id`` (default the config's) is searched besides the agents
        of their threads; their core facts (agent ``core``) always are."""
        cascade = await self._cascade()
        user = tree.check_id("user_id", user_id)
        agent = self._agent(agent_id)
        for key in [k for k in self._core if k[1] == user]:
            await self._core.pop(key).close()
        for key in [k for k in self._tools if k[1] == user]:
            del self._tools[key]
        counts = await cascade.delete_user(user, {"agent_ids": [agent]})
        if self.indexer is not None:
            await self.indexer.flush()
            unwrap(await cast(Any, self.adapter).delete_recall_scope(user_id=user))
        return counts
