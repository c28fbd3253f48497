"""``MemoryCascade``: deleting, redacting and rewinding entries together with what memory derived
from them, in every store it is given. See ``docs/cascade.md``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationError

from .. import clock as package_clock
from ..errors import InvalidArgumentError
from ..facts.core import DEFAULT_CORE_SCOPE
from ..files.base import is_memory_file_adapter
from ..files.service import MemoryFiles
from ..items.base import is_memory_item_adapter
from ..items.records import MemoryScope
from ..items.service import MemoryItems
from ..result import unwrap
from ..threads import tree
from ..threads.records import EVENT_TYPES, MEMORY_AGENTS_KEY, EntryRedaction, MemoryEntry, Thread
from . import derived, scrub
from .entries import follow_forks, listed_ids, summaries_over, thread_entries, with_replies
from .records import CascadeCounts, CascadePlan, CascadeWho, WhoInput, check_who
from .users import UserThreads, find_user_threads, written_by

Mode = Literal["delete", "redact"]
#: The agent a user's core facts are kept under (:data:`~cogitator_memory.facts.core.DEFAULT_CORE_SCOPE`):
#: :meth:`MemoryCascade.delete_user` always goes through it.
CORE_AGENT = DEFAULT_CORE_SCOPE["agent_id"]


def _items_service(value: object, name: str) -> MemoryItems | None:
    if value is None:
        return None
    if isinstance(value, MemoryItems):
        return value
    if is_memory_item_adapter(value):
        return MemoryItems(adapter=value)  # type: ignore[arg-type]
    raise InvalidArgumentError(name, "must keep memory items (a MemoryItemAdapter or MemoryItems)")


def _files_service(value: object) -> MemoryFiles | None:
    if value is None:
        return None
    if isinstance(value, MemoryFiles):
        return value
    if is_memory_file_adapter(value):
        return MemoryFiles(adapter=value)  # type: ignore[arg-type]
    raise InvalidArgumentError("files", "must keep memory files (a MemoryFileAdapter or MemoryFiles)")


def _check_ids(name: str, value: object) -> list[str]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgumentError(name, "must be a list of entry ids")
    return list(dict.fromkeys(tree.check_id(f"{name}[{i}]", v) for i, v in enumerate(value)))


def _check_redaction(value: object) -> EntryRedaction:
    if isinstance(value, EntryRedaction):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("redaction", "must be an EntryRedaction or a dict with 'at' and 'reason'")
    try:
        return EntryRedaction.model_validate(dict(value))
    except ValidationError as exc:
        raise tree.validation_error("redaction", exc) from None


def _agents_of(thread: Thread | None, skipped: list[str]) -> list[str]:
    if thread is None:
        return []
    return [thread.agent_id, *listed_ids(thread, MEMORY_AGENTS_KEY, skipped)]


class MemoryCascade:
    """Takes entries out of memory with everything derived from them (see ``docs/cascade.md``).

    ``memory`` is the thread store. ``items`` keeps memory items (a store or
    :class:`~cogitator_memory.items.MemoryItems`; by default ``memory`` when it keeps items),
    ``files`` memory files (a store or :class:`~cogitator_memory.files.MemoryFiles`; by default
    ``memory`` when it keeps them), ``graph`` a knowledge graph, ``facts`` a store of facts other
    than ``items`` (facts kept as items of ``items`` are reached through it), ``embeddings`` a
    vector store. Each call returns :class:`CascadeCounts` and raises the store's error when one
    fails; derived memory goes before the entries it stands on, so the same call made again
    finishes the work. ``who`` (``{"agent_ids": [...]}``) names the agents whose derived memory
    to go through, beyond those of the threads touched. Every erasing call clears the bytes of
    the SQLite files the stores keep (:mod:`.scrub`), and goes past what it cannot read of the
    threads it meets (``CascadeCounts.skipped``); :meth:`delete_user` is the one routine every
    surface forgets a user through.
    """

    def __init__(
        self,
        *,
        memory: Any,
        items: Any = None,
        files: Any = None,
        graph: Any = None,
        facts: Any = None,
        embeddings: Any = None,
        reason: str | None = None,
    ) -> None:
        for call in ("get_thread", "get_entries", "delete_entry", "delete_thread", "list_threads"):
            if not callable(getattr(memory, call, None)):
                raise InvalidArgumentError("memory", f"must be a thread store (it has no {call})")
        self.memory = memory
        if items is None and is_memory_item_adapter(memory):
            items = memory
        if files is None and is_memory_file_adapter(memory):
            files = memory
        self.items = _items_service(items, "items")
        self.files = _files_service(files)
        facts_service = _items_service(facts, "facts") if facts is not None else None
        if facts_service is not None and self.items is not None and facts_service.adapter is self.items.adapter:
            facts_service = None
        self.facts = facts_service
        if graph is not None and not callable(getattr(graph, "query_nodes", None)):
            raise InvalidArgumentError("graph", "must be a graph store (it has no query_nodes)")
        self.graph = graph
        if embeddings is not None and not callable(getattr(embeddings, "get_by_sources", None)):
            raise InvalidArgumentError("embeddings", "must be an embedding store (it has no get_by_sources)")
        self.embeddings = embeddings
        self.reason = reason

    # ----- what goes -----------------------------------------------------------------------

    async def _targets(
        self, ids: Sequence[str], keep_replies: bool, skipped: list[str]
    ) -> tuple[dict[str, set[str]], dict[str, Thread]]:
        """The entries to take by thread (replies and copies in forks included) and the threads
        read; what cannot be read is described in ``skipped``."""
        by_thread: dict[str, set[str]] = {}
        for entry_id in ids:
            entry = unwrap(await self.memory.get_entry(entry_id))
            if entry is not None:
                by_thread.setdefault(entry.thread_id, set()).add(entry.id)
        threads: dict[str, Thread] = {}
        out: dict[str, set[str]] = {}
        seen = set(by_thread)
        for thread_id, chosen in by_thread.items():
            thread = unwrap(await self.memory.get_thread(thread_id))
            if thread is None:
                continue
            threads[thread_id] = thread
            entries = await thread_entries(self.memory, thread_id)
            taken = chosen if keep_replies else with_replies(entries, chosen)
            out.setdefault(thread_id, set()).update(taken)
            forks = await follow_forks(self.memory, thread, taken, keep_replies, seen, skipped)
            for fork_id, copies in forks.items():
                out.setdefault(fork_id, set()).update(copies)
        for thread_id in out:
            if thread_id not in threads:
                thread = unwrap(await self.memory.get_thread(thread_id))
                if thread is not None:
                    threads[thread_id] = thread
        return out, threads

    async def plan_entries(self, entry_ids: Sequence[str], *, keep_replies: bool = False) -> CascadePlan:
        """The entries :meth:`delete_entries` would take, by thread (nothing is changed)."""
        plan = CascadePlan()
        targets, _ = await self._targets(_check_ids("entry_ids", entry_ids), keep_replies, plan.skipped)
        plan.entries = {t: sorted(ids) for t, ids in sorted(targets.items()) if ids}
        return plan

    async def plan_thread(self, thread_id: str) -> CascadePlan:
        """The thread and the copies in its forks :meth:`delete_thread` would take."""
        tid = tree.check_id("thread_id", thread_id)
        thread = unwrap(await self.memory.get_thread(tid))
        if thread is None:
            return CascadePlan()
        plan = CascadePlan(threads=[tid])
        ids = {e.id for e in await thread_entries(self.memory, tid)}
        forks = await follow_forks(self.memory, thread, ids, False, {tid}, plan.skipped)
        plan.entries = {t: sorted(e) for t, e in sorted(forks.items()) if e}
        return plan

    async def plan_user(self, user_id: str) -> CascadePlan:
        """The threads and the entries in threads of others :meth:`delete_user` would take."""
        user = tree.check_id("user_id", user_id)
        found = await find_user_threads(self.memory, user)
        plan = CascadePlan(threads=sorted(t.id for t in found.owned))
        for thread in found.joined:
            entries = await thread_entries(self.memory, thread.id)
            mine = with_replies(entries, {e.id for e in entries if written_by(e, user)})
            if mine:
                plan.entries[thread.id] = sorted(mine)
        return plan

    # ----- derived memory ------------------------------------------------------------------

    def _agents(self, who: CascadeWho, threads: Iterable[Thread | None], skipped: list[str]) -> list[str]:
        out = list(who.agent_ids)
        for thread in threads:
            out.extend(_agents_of(thread, skipped))
        return list(dict.fromkeys(out))

    async def _sweep(
        self,
        agents: list[str],
        entry_ids: set[str],
        counts: CascadeCounts,
        gone: derived.Gone,
        reason: str | None,
        *,
        graph: bool = True,
    ) -> None:
        """Take what stands on ``entry_ids``: items and facts, graph (unless ``graph`` is false:
        the caller sweeps it once for many threads), entities, observations and playbook rules,
        file versions, vectors."""
        if entry_ids:
            if self.items is not None:
                await derived.sweep_items(self.items, agents, entry_ids, counts, gone)
            if self.facts is not None:
                await derived.sweep_items(self.facts, agents, entry_ids, counts, gone)
            if self.graph is not None and graph:
                await derived.sweep_graph(self.graph, agents, entry_ids, counts)
        await self._after_items(agents, counts, gone, reason)
        if entry_ids and self.files is not None:
            await derived.sweep_file_versions(self.files, agents, entry_ids, reason, counts)
        gone.sources.update(entry_ids)
        await derived.sweep_vectors(self.embeddings, gone.sources, counts)
        gone.sources.clear()

    async def _after_items(
        self, agents: list[str], counts: CascadeCounts, gone: derived.Gone, reason: str | None
    ) -> None:
        if self.items is not None:
            await derived.sweep_entities(self.items.adapter, self.graph, agents, gone, counts)
        if self.files is not None:
            await derived.sweep_upkeep_files(self.files, agents, gone, reason, counts)

    async def _take(
        self,
        targets: dict[str, set[str]],
        threads: dict[str, Thread],
        who: CascadeWho,
        mode: Mode,
        redaction: EntryRedaction | None,
        counts: CascadeCounts,
    ) -> None:
        """Delete or redact ``targets`` (entries by thread) after what stands on them."""
        reason = redaction.reason if redaction is not None else self.reason
        agents = self._agents(who, threads.values(), counts.skipped)
        plan: dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]] = {}
        everything: set[str] = set()
        for thread_id, ids in targets.items():
            entries = await thread_entries(self.memory, thread_id)
            chosen = [e for e in entries if e.id in ids]
            summaries = summaries_over(entries, ids)
            plan[thread_id] = (chosen, summaries)
            everything.update(ids)
            everything.update(s.id for s in summaries)
        if not everything:
            return
        gone = derived.Gone()
        await self._sweep(agents, everything, counts, gone, reason)
        # copies in forks before their originals, replies before what they answer: a cascade that
        # stops part of the way still finds what is left from the entries it was given
        for chosen, summaries in reversed(list(plan.values())):
            for summary in summaries:
                unwrap(await self.memory.delete_entry(summary.id))
                counts.summaries += 1
            for entry in sorted(chosen, key=lambda e: e.seq, reverse=True):
                if mode == "redact" and entry.type not in EVENT_TYPES:
                    assert redaction is not None
                    unwrap(await self.memory.redact_entry(entry.id, redaction))
                    counts.entries.redacted += 1
                else:
                    if entry.type == "compaction":
                        counts.summaries += 1
                    unwrap(await self.memory.delete_entry(entry.id))
                    counts.entries.deleted += 1
            if chosen or summaries:
                counts.threads_changed += 1
        # a second look: what was derived from these entries while they went
        for thread_id in plan:
            entries = await thread_entries(self.memory, thread_id)
            for summary in summaries_over(entries, everything):
                unwrap(await self.memory.delete_entry(summary.id))
                counts.summaries += 1
                everything.add(summary.id)
        await self._sweep(agents, everything, counts, gone, reason)

    # ----- public calls --------------------------------------------------------------------

    def _erasing(self) -> list[sqlite3.Connection]:
        """Before an erasing call: ``secure_delete`` on every SQLite file the stores keep (see
        :mod:`.scrub`); the connections to checkpoint after it."""
        services = (self.items, self.facts, self.files)
        stores = [self.memory, self.graph, self.embeddings, *(s.adapter for s in services if s is not None)]
        connections = scrub.sqlite_connections(stores)
        scrub.secure_delete(connections)
        return connections

    async def delete_entries(
        self, entry_ids: Sequence[str], who: WhoInput = None, *, keep_replies: bool = False
    ) -> CascadeCounts:
        """Delete entries with their replies (unless ``keep_replies``), their copies in forks,
        and what memory derived from them."""
        ids = _check_ids("entry_ids", entry_ids)
        checked = check_who(who)
        counts = CascadeCounts()
        erasing = self._erasing()
        targets, threads = await self._targets(ids, keep_replies, counts.skipped)
        await self._take(targets, threads, checked, "delete", None, counts)
        scrub.checkpoint(erasing, counts.skipped)
        return counts

    async def redact_entries(
        self,
        entry_ids: Sequence[str],
        redaction: EntryRedaction | Mapping[str, Any],
        who: WhoInput = None,
        *,
        keep_replies: bool = False,
    ) -> CascadeCounts:
        """Redact entries in place (events among them or their replies are deleted), with their
        replies and copies in forks, and take what memory derived from them."""
        ids = _check_ids("entry_ids", entry_ids)
        checked_redaction = _check_redaction(redaction)
        checked = check_who(who)
        if not callable(getattr(self.memory, "redact_entry", None)):
            raise InvalidArgumentError("memory", "must be able to redact entries (it has no redact_entry)")
        counts = CascadeCounts()
        erasing = self._erasing()
        targets, threads = await self._targets(ids, keep_replies, counts.skipped)
        await self._take(targets, threads, checked, "redact", checked_redaction, counts)
        scrub.checkpoint(erasing, counts.skipped)
        return counts

    async def delete_thread(self, thread_id: str, who: WhoInput = None) -> CascadeCounts:
        """Delete a thread whole with what memory derived from it, what was kept for it alone
        (items, files) and the copies of its entries in its forks."""
        tid = tree.check_id("thread_id", thread_id)
        checked = check_who(who)
        counts = CascadeCounts()
        erasing = self._erasing()
        await self._delete_thread(tid, checked, counts)
        scrub.checkpoint(erasing, counts.skipped)
        return counts

    async def _delete_thread(self, tid: str, who: CascadeWho, counts: CascadeCounts, *, graph: bool = True) -> None:
        thread = unwrap(await self.memory.get_thread(tid))
        agents = self._agents(who, [thread], counts.skipped)
        reason = self.reason
        ids: set[str] = set()
        if thread is not None:
            ids = {e.id for e in await thread_entries(self.memory, tid)}
            forks = await follow_forks(self.memory, thread, ids, False, {tid}, counts.skipped)
            if forks:
                fork_threads = {t: unwrap(await self.memory.get_thread(t)) for t in forks}
                await self._take(
                    forks, {k: v for k, v in fork_threads.items() if v is not None}, who, "delete", None, counts
                )
        if self.embeddings is not None and callable(getattr(self.embeddings, "delete_by_filter", None)):
            # the thread's vectors in one call of the store, before they are looked up by source
            counts.vectors += unwrap(await self.embeddings.delete_by_filter(thread_id=tid))
        gone = derived.Gone()
        await self._sweep(agents, ids, counts, gone, reason, graph=graph)
        await self._purge_scopes(agents, {"thread_id": tid}, counts, gone, reason)
        if thread is not None:
            unwrap(await self.memory.delete_thread(tid))
            counts.threads += 1
            counts.entries.deleted += len(ids)
            # a second look for derived memory written while the thread went
            await self._sweep(agents, ids, counts, gone, reason, graph=graph)
            await self._purge_scopes(agents, {"thread_id": tid}, counts, gone, reason)

    async def _purge_scopes(
        self,
        agents: list[str],
        limit: dict[str, str],
        counts: CascadeCounts,
        gone: derived.Gone,
        reason: str | None,
    ) -> None:
        """Take the items and files kept for a thread or a user alone."""
        for agent in agents:
            scope = MemoryScope(agent_id=agent, **limit)
            for service in (self.items, self.facts):
                if service is not None:
                    await derived.purge_scope(service.adapter, scope, counts, gone)
            if self.files is not None:
                await derived.purge_file_scope(self.files, scope, reason, counts)
        await self._after_items(agents, counts, gone, reason)
        await derived.sweep_vectors(self.embeddings, gone.sources, counts)
        gone.sources.clear()

    async def delete_user(self, user_id: str, who: WhoInput = None) -> CascadeCounts:
        """Forget a user: their threads whole, the messages they wrote in threads of others
        (with their replies), what was kept for them (items, their core facts, facts, files,
        graph) and the vectors with their ``user_id``. The one routine every surface forgets a
        user through (:meth:`Memory.forget_user <cogitator_memory.runtime.Memory.forget_user>`,
        the CLI's ``forget user``, REST ``POST /api/forget`` and the inspector)."""
        user = tree.check_id("user_id", user_id)
        checked = check_who(who)
        checked = CascadeWho(tuple(dict.fromkeys([*checked.agent_ids, CORE_AGENT])))
        counts = CascadeCounts()
        erasing = self._erasing()
        found: UserThreads = await find_user_threads(self.memory, user)
        agents = self._agents(checked, [*found.owned, *found.joined], counts.skipped)
        for thread in found.joined:
            entries = await thread_entries(self.memory, thread.id)
            mine = {e.id for e in entries if written_by(e, user)}
            if mine:
                targets, threads = await self._targets(sorted(mine), False, counts.skipped)
                await self._take(targets, threads, checked, "delete", None, counts)
        who_all = CascadeWho(tuple(agents))
        # the graph is read once for every thread of the user (not once per thread), before and after
        owned_ids: set[str] = set()
        if self.graph is not None:
            for thread in found.owned:
                owned_ids.update(e.id for e in await thread_entries(self.memory, thread.id))
            await derived.sweep_graph(self.graph, agents, owned_ids, counts, user_id=user)
        for thread in found.owned:
            await self._delete_thread(thread.id, who_all, counts, graph=False)
        gone = derived.Gone()
        await self._purge_scopes(agents, {"user_id": user}, counts, gone, self.reason)
        if self.graph is not None:
            await derived.sweep_graph(self.graph, agents, owned_ids, counts, user_id=user)
        if self.embeddings is not None and callable(getattr(self.embeddings, "delete_by_filter", None)):
            counts.vectors += unwrap(await self.embeddings.delete_by_filter(metadata={"user_id": user}))
        scrub.checkpoint(erasing, counts.skipped)
        return counts

    async def rewind(
        self, thread_id: str, to_entry_id: str, who: WhoInput = None, *, at: datetime | None = None
    ) -> CascadeCounts:
        """Move the thread back to ``to_entry_id`` (nothing is deleted) after making stale the
        items that stood only on the entries after it (``metadata["stale_because"]``)."""
        tid = tree.check_id("thread_id", thread_id)
        eid = tree.check_id("to_entry_id", to_entry_id)
        checked = check_who(who)
        when = tree.check_datetime("at", at) or package_clock.now()
        counts = CascadeCounts()
        thread = unwrap(await self.memory.get_thread(tid))
        if thread is not None and thread.active_leaf_id == eid:
            return counts
        path: list[MemoryEntry] = (
            unwrap(await self.memory.get_path(tid, types="all", include_tool_calls=True)) if thread else []
        )
        ids = [e.id for e in path]
        if eid not in ids:
            unwrap(await self.memory.rewind(tid, eid))  # the store says why it refuses
            return counts
        after = set(ids[ids.index(eid) + 1 :])
        if self.items is not None and after:
            agents = self._agents(checked, [thread], counts.skipped)
            found = await derived.items_on_entries(self.items.adapter, agents, after)
            stale = [i.id for i in found if i.status != "stale" and derived.stands_only_on(i.evidence, after)]
            because = {"reason": "rewound", "thread_id": tid, "to_entry_id": eid, "at": when.isoformat()}
            for part in derived.chunks(stale):
                counts.items.stale += len(await self.items.mark_stale(part, because))
        unwrap(await self.memory.rewind(tid, eid))
        counts.threads_changed += 1
        return counts


__all__ = ["CORE_AGENT", "MemoryCascade"]
