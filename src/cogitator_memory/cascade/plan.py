"""What a forget would take, named, found without changing anything: the plan every surface shows
before it forgets (the inspector's forget dialog, the CLI's ``forget --dry-run`` and its real run).

The cascade's own dry run (:meth:`MemoryCascade.plan_user <cogitator_memory.cascade.MemoryCascade.plan_user>`,
``plan_thread``, ``plan_entries``) names the threads and entries that go, not what memory derived
from them. :func:`forget_plan` starts from that plan and reads, with the cascade's own finders
and rules (:mod:`cogitator_memory.cascade.derived`: ``items_on_entries``, ``stands_only_on``,
``names_any``; :mod:`cogitator_memory.cascade.entries`: ``thread_entries``, ``summaries_over``,
``follow_forks``), the memory items, core facts, facts, graph nodes and edges, entities, vectors,
memory file versions and files the same call would take. It writes nothing; the forget itself
is :meth:`Memory.forget_user <cogitator_memory.runtime.Memory.forget_user>` (and
``delete_thread``, ``delete_entries``), the one cascade.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..facts.core import core_key
from ..files.paths import OBSERVATIONS_DIRECTORY, PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from ..files.records import MemoryFileVersion
from ..items.facts import is_fact_item
from ..items.records import MemoryItem, MemoryScope
from ..result import unwrap
from ..threads import tree
from ..threads.records import MEMORY_AGENTS_KEY, Thread
from .derived import (
    chunks,
    entities_of,
    goes_with,
    items_on_entries,
    named_items,
    names_any,
    sources_of,
    stands_only_on,
)
from .entries import follow_forks, listed_ids, summaries_over, thread_entries
from .service import CORE_AGENT, MemoryCascade
from .users import find_user_threads


@dataclass
class _Found:
    """What the plan reads before it names it."""

    agents: list[str] = field(default_factory=list)
    entry_ids: set[str] = field(default_factory=set)
    summaries: set[str] = field(default_factory=set)
    entry_count: int = 0
    scopes: list[dict[str, str]] = field(default_factory=list)
    user_id: str | None = None
    threads: list[Thread] = field(default_factory=list)


def _agents(first: Iterable[str], threads: Iterable[Thread | None], skipped: list[str]) -> list[str]:
    out = list(first)
    for thread in threads:
        if thread is not None:
            out.extend([thread.agent_id, *listed_ids(thread, MEMORY_AGENTS_KEY, skipped)])
    return list(dict.fromkeys(out))


async def _user(cascade: MemoryCascade, user: str, agent: list[str], plan_entries: dict[str, list[str]]) -> _Found:
    store = cascade.memory
    found = await find_user_threads(store, user)
    out = _Found(user_id=user, threads=[*found.owned, *found.joined])
    skipped: list[str] = []
    out.agents = _agents([*agent, CORE_AGENT], out.threads, skipped)
    for thread in found.owned:
        ids = {e.id for e in await thread_entries(store, thread.id)}
        out.entry_ids.update(ids)
        out.entry_count += len(ids)
        out.scopes.append({"thread_id": thread.id})
    for thread in found.joined:
        mine = set(plan_entries.get(thread.id, ()))
        if mine:
            out.entry_ids.update(mine)
            out.entry_count += len(mine)
            out.summaries.update(s.id for s in summaries_over(await thread_entries(store, thread.id), mine))
    out.scopes.append({"user_id": user})
    return out


async def _thread(cascade: MemoryCascade, tid: str, agent: list[str]) -> _Found:
    store = cascade.memory
    thread = unwrap(await store.get_thread(tid))
    out = _Found()
    if thread is None:
        return out
    skipped: list[str] = []
    ids = {e.id for e in await thread_entries(store, tid)}
    out.entry_ids.update(ids)
    out.entry_count += len(ids)
    forks = await follow_forks(store, thread, ids, False, {tid}, skipped)
    out.threads = [thread]
    for fork_id, copies in forks.items():
        fork = unwrap(await store.get_thread(fork_id))
        if fork is not None:
            out.threads.append(fork)
        out.entry_ids.update(copies)
        out.entry_count += len(copies)
        out.summaries.update(s.id for s in summaries_over(await thread_entries(store, fork_id), copies))
    out.agents = _agents(agent, out.threads, skipped)
    out.scopes.append({"thread_id": tid})
    return out


async def _entries(cascade: MemoryCascade, planned: dict[str, list[str]], agent: list[str]) -> _Found:
    store = cascade.memory
    out = _Found()
    for thread_id, ids in planned.items():
        thread = unwrap(await store.get_thread(thread_id))
        if thread is not None:
            out.threads.append(thread)
        out.entry_ids.update(ids)
        out.entry_count += len(ids)
        out.summaries.update(s.id for s in summaries_over(await thread_entries(store, thread_id), set(ids)))
    out.agents = _agents(agent, out.threads, [])
    return out


def _item_row(item: MemoryItem, action: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": item.id,
        "kind": item.kind,
        "subject": item.subject,
        "value": item.value,
        "status": item.status,
        "agent_id": item.scope.agent_id,
        "action": action,
    }
    if item.attribute is not None:
        row["attribute"] = item.attribute
    key = core_key(item)
    if key is not None:
        row["core_key"] = key
    return row


async def _items(cascade: MemoryCascade, found: _Found) -> tuple[dict[str, MemoryItem], dict[str, MemoryItem]]:
    """The items that would be purged and those that would lose quotes (by id)."""
    purged: dict[str, MemoryItem] = {}
    trimmed: dict[str, MemoryItem] = {}
    gone = found.entry_ids | found.summaries
    for service in (cascade.items, cascade.facts):
        if service is None:
            continue
        if gone:
            for item in await items_on_entries(service.adapter, found.agents, gone):
                (purged if stands_only_on(item.evidence, gone) else trimmed)[item.id] = item
        for agent in found.agents:
            for limit in found.scopes:
                within = MemoryScope(agent_id=agent, **limit)
                for item in unwrap(await service.adapter.query_items({"within": within})):
                    purged[item.id] = item
                    trimmed.pop(item.id, None)
    return purged, trimmed


async def _graph(graph: Any, found: _Found) -> tuple[list[Any], list[Any], int]:
    """The graph nodes and edges that would go, and how many would lose quotes."""
    if graph is None:
        return [], [], 0
    gone = frozenset(found.entry_ids | found.summaries)
    if not gone and found.user_id is None:
        return [], [], 0
    nodes_out: list[Any] = []
    edges_out: list[Any] = []
    trimmed = 0
    # as the cascade's sweep_graph reads: through the evidence index when only entries go
    indexed = found.user_id is None and callable(getattr(graph, "find_by_evidence", None))
    for agent in found.agents:
        if indexed:
            nodes, edges = unwrap(await graph.find_by_evidence(agent, sorted(gone)))
            doomed = {n.id for n in nodes if goes_with(n, gone, None)}
            seen = {e.id for e in edges}
            for part in chunks(sorted(doomed)):
                touching = unwrap(await graph.query_edges({"agent_id": agent, "node_ids": part}))
                edges += [e for e in touching if e.id not in seen]
                seen.update(e.id for e in touching)
        else:
            nodes = unwrap(await graph.query_nodes({"agent_id": agent}))
            edges = unwrap(await graph.query_edges({"agent_id": agent}))
            doomed = {n.id for n in nodes if goes_with(n, gone, found.user_id)}
        for edge in edges:
            if goes_with(edge, gone, found.user_id) or edge.source_id in doomed or edge.target_id in doomed:
                edges_out.append(edge)
            elif names_any(edge.evidence, gone):
                trimmed += 1
        for node in nodes:
            if node.id in doomed:
                nodes_out.append(node)
            elif names_any(node.evidence, gone):
                trimmed += 1
    return nodes_out, edges_out, trimmed


async def _entities(
    cascade: MemoryCascade, found: _Found, purged: dict[str, MemoryItem], doomed: set[str]
) -> list[Any]:
    """The graph nodes an item that goes was about, when no item left would be about them."""
    if cascade.graph is None or cascade.items is None:
        return []
    wanted = sorted({e for item in purged.values() for e in entities_of(item)} - doomed)
    out: list[Any] = []
    for entity_id in wanted:
        about = False
        for agent in found.agents:
            left = unwrap(
                await cascade.items.adapter.query_items({"within": {"agent_id": agent}, "entity_id": entity_id})
            )
            if any(i.id not in purged for i in left):
                about = True
                break
        node = None if about else unwrap(await cascade.graph.get_node(entity_id))
        if node is not None:
            out.append(node)
    return out


async def _vectors(embeddings: Any, sources: set[str]) -> list[str]:
    if embeddings is None or not sources:
        return []
    found: set[str] = set()
    for part in chunks(sorted(sources)):
        found.update(e.id for e in unwrap(await embeddings.get_by_sources(part)))
    return sorted(found)


async def _files(
    cascade: MemoryCascade, found: _Found, purged_ids: set[str]
) -> tuple[list[MemoryFileVersion], list[dict[str, Any]]]:
    """The file versions that would be redacted and the files that would be deleted."""
    files = cascade.files
    if files is None:
        return [], []
    versions: dict[str, MemoryFileVersion] = {}
    purged_places: set[tuple[str, str]] = set()
    gone = sorted(found.entry_ids | found.summaries)
    for agent in found.agents:
        for part in chunks(gone):
            query = {"within": {"agent_id": agent}, "entry_ids": part}
            versions.update((v.id, v) for v in unwrap(await files.adapter.query_file_versions(query)))
        for limit in found.scopes:
            within = MemoryScope(agent_id=agent, **limit)
            for version in unwrap(await files.adapter.query_file_versions({"within": within})):
                versions[version.id] = version
                purged_places.add((version.scope.key, version.path))
        if purged_ids:
            within_agent = {"within": {"agent_id": agent}}
            upkeep = unwrap(
                await files.adapter.query_file_versions({**within_agent, "prefix": OBSERVATIONS_DIRECTORY})
            ) + unwrap(
                await files.adapter.query_file_versions({**within_agent, "paths": [PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH]})
            )
            versions.update((v.id, v) for v in upkeep if named_items(v.content) & purged_ids)
    redacted = {v.id: v for v in versions.values() if not v.is_deletion and v.redacted is None}
    places = {(v.scope.key, v.path): v.scope for v in versions.values()}
    deleted: list[dict[str, Any]] = []
    for (key, path), scope in sorted(places.items(), key=lambda kv: kv[0]):
        heads = unwrap(await files.adapter.find_file_heads({"scope": scope, "paths": [path], "content": False}))
        for head in heads:
            if head.is_deletion:
                continue
            if head.id in redacted or (head.redacted is not None and (key, path) in purged_places):
                deleted.append({"path": head.path, "agent_id": scope.agent_id, "user_id": scope.user_id})
    return sorted(redacted.values(), key=lambda v: v.id), deleted


async def forget_plan(
    cascade: MemoryCascade,
    target: str,
    value: Any,
    *,
    agent_id: str | Sequence[str],
    keep_replies: bool = False,
    recall_index: bool = False,
) -> dict[str, Any]:
    """Everything a forget of ``target`` (``user_id``, ``thread_id`` or ``entry_ids``) would take,
    named and counted, without changing anything: the cascade's own plan (``threads``,
    ``entries``, ``entry_count``, ``skipped``) and, read with its finders, the ``summaries``,
    ``items``, ``core_facts``, ``facts`` (each with ``action``: ``delete``, or ``trim`` when only
    quotes go), ``graph_nodes``, ``graph_edges``, ``entities``, ``vectors``, ``file_versions``
    and ``files``; ``counts`` sums them up. ``agent_id`` is the agent searched besides those of
    the threads touched (as the forget does; a list names several); ``recall_index`` says the store keeps a recall
    index, whose records of a forgotten user go too."""
    agents = [agent_id] if isinstance(agent_id, str) else list(agent_id)
    if target == "user_id":
        user = tree.check_id("user_id", value)
        plan = await cascade.plan_user(user)
        found = await _user(cascade, user, agents, plan.entries)
    elif target == "thread_id":
        tid = tree.check_id("thread_id", value)
        plan = await cascade.plan_thread(tid)
        found = await _thread(cascade, tid, agents)
    else:
        plan = await cascade.plan_entries(value, keep_replies=keep_replies)
        found = await _entries(cascade, plan.entries, agents)
    purged, trimmed = await _items(cascade, found)
    nodes, edges, graph_trimmed = await _graph(cascade.graph, found)
    entities = await _entities(cascade, found, purged, {n.id for n in nodes})
    sources = set(found.entry_ids | found.summaries)
    for item in purged.values():
        sources.update(sources_of(item))
    vectors = await _vectors(cascade.embeddings, sources)
    versions, files = await _files(cascade, found, set(purged))
    rows = [_item_row(i, "delete") for i in purged.values()] + [_item_row(i, "trim") for i in trimmed.values()]
    rows.sort(key=lambda r: (r["agent_id"], r["subject"], r.get("attribute") or "", r["id"]))
    core = [r for r in rows if "core_key" in r]
    facts = [r for r in rows if "core_key" not in r and is_fact_item((purged | trimmed)[r["id"]])]
    items = [r for r in rows if "core_key" not in r and r not in facts]

    def count(group: Sequence[dict[str, Any]], action: str) -> int:
        return sum(1 for r in group if r["action"] == action)

    counts = {
        "threads": len(plan.threads),
        "entries": found.entry_count,
        "summaries": len(found.summaries),
        "items": count(items, "delete"),
        "items_trimmed": count(items, "trim"),
        "core_facts": count(core, "delete"),
        "facts": count(facts, "delete"),
        "facts_trimmed": count(facts, "trim"),
        "graph_nodes": len(nodes),
        "graph_edges": len(edges),
        "graph_trimmed": graph_trimmed,
        "entities": len(entities),
        "vectors": len(vectors),
        "file_versions": len(versions),
        "files": len(files),
    }
    return {
        "threads": plan.threads,
        "entries": plan.entries,
        "entry_count": plan.entry_count,
        "skipped": plan.skipped,
        "agents": found.agents,
        "summaries": sorted(found.summaries),
        "items": items,
        "core_facts": core,
        "facts": facts,
        "graph_nodes": [{"id": n.id, "type": n.type, "name": n.name, "agent_id": n.agent_id} for n in nodes],
        "graph_edges": [
            {"id": e.id, "type": e.type, "source_id": e.source_id, "target_id": e.target_id, "label": e.label}
            for e in edges
        ],
        "entities": [{"id": n.id, "type": n.type, "name": n.name} for n in entities],
        "vectors": vectors,
        "file_versions": [{"id": v.id, "path": v.path, "sequence": v.sequence} for v in versions],
        "files": files,
        "recall_index": bool(recall_index and found.user_id is not None),
        "counts": counts,
    }


__all__ = ["forget_plan"]
