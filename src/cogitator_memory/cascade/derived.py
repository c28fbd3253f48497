"""Derived memory a cascade takes before the entries it stands on: memory items (facts among
them), the entities no item is about any more, graph nodes and edges, vectors, memory file
versions, observations and playbook rules.

Each sweep reads what stands on the entries that go, changes it through the store's own calls
and returns what it did; running one again after it finished finds nothing more to do, so a
cascade that failed part of the way can be made again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import clock
from ..files.paths import OBSERVATIONS_DIRECTORY, PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from ..files.records import MemoryFileVersion
from ..files.service import MemoryFiles
from ..items.facts import fact_fields, is_fact_item
from ..items.records import MemoryItem, MemoryScope
from ..items.service import MemoryItems, without_entries
from ..result import unwrap
from ..upkeep.playbook import parse_playbook, playbook_file
from .records import CascadeCounts

T = TypeVar("T")

#: Ids asked of a store in one call.
CHUNK = 500

#: The author of the versions a cascade writes (a playbook without its rules, a file's deletion).
CASCADE_AUTHOR = "memory"


def chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[list[T]]:
    """``values`` in lists of at most ``size``."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _entry_ids(evidence: Iterable[Any]) -> list[str | None]:
    return [getattr(e, "entry_id", None) for e in evidence]


def stands_only_on(evidence: Sequence[Any], gone: Collection[str]) -> bool:
    """Whether every quote names an entry of ``gone`` (and there is one)."""
    named = _entry_ids(evidence)
    return bool(named) and all(entry_id is not None and entry_id in gone for entry_id in named)


def names_any(evidence: Sequence[Any], gone: Collection[str]) -> bool:
    """Whether a quote names an entry of ``gone``."""
    return any(entry_id is not None and entry_id in gone for entry_id in _entry_ids(evidence))


@dataclass
class Gone:
    """What went in a cascade so far: items purged (their ids name them in observations and
    playbooks), entities deleted, and the sources whose vectors go."""

    items: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)


# --- items and facts ---------------------------------------------------------------------------


async def items_on_entries(adapter: Any, agents: Iterable[str], entry_ids: Collection[str]) -> list[MemoryItem]:
    """Every item (any status) of the agents quoting one of ``entry_ids``."""
    found: dict[str, MemoryItem] = {}
    wanted = sorted(entry_ids)
    for agent in agents:
        for part in chunks(wanted):
            for item in unwrap(await adapter.query_items({"within": {"agent_id": agent}, "entry_ids": part})):
                found[item.id] = item
    return list(found.values())


def _count_item(counts: CascadeCounts, item: MemoryItem, purged: bool) -> None:
    if is_fact_item(item):
        if purged:
            counts.facts.deleted += 1
        else:
            counts.facts.trimmed += 1
    elif purged:
        counts.items.purged += 1
    else:
        counts.items.trimmed += 1


async def sweep_items(
    items: MemoryItems, agents: Iterable[str], entry_ids: Collection[str], counts: CascadeCounts, gone: Gone
) -> None:
    """Purge the items standing only on ``entry_ids`` and trim the quotes of them from the
    others (:meth:`MemoryItems.revise_evidence`)."""
    found = await items_on_entries(items.adapter, agents, entry_ids)
    if not found:
        return
    wanted = frozenset(entry_ids)
    purged = {i.id for i in found if stands_only_on(i.evidence, wanted)}
    for part in chunks([i.id for i in found]):
        changed = set(await items.revise_evidence(part, without_entries(wanted)))
        for item in found:
            if item.id in changed:
                _count_item(counts, item, item.id in purged)
    for item in found:
        if item.id in purged:
            gone.items.add(item.id)
            gone.sources.update(sources_of(item))
            gone.entities.update(entities_of(item))


def sources_of(item: MemoryItem) -> set[str]:
    """The source ids an item's vectors may carry: its id, and a fact's own id."""
    out = {item.id}
    held = fact_fields(item)
    if held is not None and isinstance(held.get("id"), str):
        out.add(held["id"])
    return out


def entities_of(item: MemoryItem) -> set[str]:
    """The entities (graph nodes) an item is about."""
    out = set(item.related_entity_ids or ())
    if item.entity_id:
        out.add(item.entity_id)
    return out


async def purge_scope(adapter: Any, scope: MemoryScope, counts: CascadeCounts, gone: Gone) -> None:
    """Delete every item kept in ``scope`` or a narrower one (a thread's or a user's)."""
    found = unwrap(await adapter.query_items({"within": scope}))
    if not found:
        return
    for part in chunks([i.id for i in found]):
        unwrap(await adapter.delete_items(part))
    for item in found:
        _count_item(counts, item, True)
        gone.items.add(item.id)
        gone.sources.update(sources_of(item))
        gone.entities.update(entities_of(item))


# --- graph -------------------------------------------------------------------------------------


async def sweep_graph(
    graph: Any, agents: Iterable[str], entry_ids: Collection[str], counts: CascadeCounts, *, user_id: str | None = None
) -> None:
    """Delete the graph nodes and edges of the agents standing only on ``entry_ids`` (or kept
    for ``user_id``: scope or ``metadata["user_id"]``), and trim the quotes of them from the others."""
    wanted = frozenset(entry_ids)
    indexed = user_id is None and callable(getattr(graph, "find_by_evidence", None))
    for agent in agents:
        if indexed:  # only what quotes the entries, and the edges of the nodes that go
            nodes, edges = unwrap(await graph.find_by_evidence(agent, sorted(wanted)))
            doomed_nodes = {n.id for n in nodes if goes_with(n, wanted, user_id)}
            seen = {e.id for e in edges}
            for chunk in chunks(sorted(doomed_nodes)):
                touching = unwrap(await graph.query_edges({"agent_id": agent, "node_ids": chunk}))
                edges += [e for e in touching if e.id not in seen]
                seen.update(e.id for e in touching)
        else:
            edges = unwrap(await graph.query_edges({"agent_id": agent}))
            nodes = unwrap(await graph.query_nodes({"agent_id": agent}))
            doomed_nodes = {n.id for n in nodes if goes_with(n, wanted, user_id)}
        for edge in edges:
            if goes_with(edge, wanted, user_id) or edge.source_id in doomed_nodes or edge.target_id in doomed_nodes:
                if unwrap(await graph.delete_edge(edge.id)):
                    counts.graph.edges += 1
            elif names_any(edge.evidence, wanted):
                kept = [e for e in edge.evidence if e.entry_id not in wanted]
                unwrap(await graph.update_edge(edge.id, {"evidence": kept}))
                counts.graph.trimmed += 1
        for node in nodes:
            if node.id in doomed_nodes:
                if unwrap(await graph.delete_node(node.id)):
                    counts.graph.nodes += 1
            elif names_any(node.evidence, wanted):
                kept = [e for e in node.evidence if e.entry_id not in wanted]
                unwrap(await graph.update_node(node.id, {"evidence": kept}))
                counts.graph.trimmed += 1


def goes_with(record: Any, wanted: frozenset[str], user_id: str | None) -> bool:
    """Whether a graph record goes with a forget: it is ``user_id``'s, or every quote it stands
    on is of an entry in ``wanted``."""
    if user_id is not None and (record.scope.user_id == user_id or record.metadata.get("user_id") == user_id):
        return True
    return stands_only_on(record.evidence, wanted)


async def sweep_entities(items: Any, graph: Any, agents: Iterable[str], gone: Gone, counts: CascadeCounts) -> None:
    """Delete the entities (graph nodes) an item that went was about when no item is about them any more."""
    if graph is None or not gone.entities:
        return
    agent_list = list(agents)
    for entity_id in sorted(gone.entities):
        about = False
        for agent in agent_list:
            left = unwrap(await items.query_items({"within": {"agent_id": agent}, "entity_id": entity_id}))
            if left:
                about = True
                break
        if not about and unwrap(await graph.delete_node(entity_id)):
            counts.entities += 1
    gone.entities.clear()


# --- vectors -----------------------------------------------------------------------------------


async def sweep_vectors(embeddings: Any, sources: Collection[str], counts: CascadeCounts) -> None:
    """Delete the vectors of ``sources`` (entries, summaries, items and facts that went)."""
    if embeddings is None or not sources:
        return
    batch = getattr(embeddings, "delete_embeddings", None)
    for part in chunks(sorted(sources)):
        found = unwrap(await embeddings.get_by_sources(part))
        if callable(batch):  # one write per chunk where the store can
            counts.vectors += unwrap(await batch([e.id for e in found]))
            continue
        for embedding in found:
            unwrap(await embeddings.delete_embedding(embedding.id))
            counts.vectors += 1


# --- memory files ------------------------------------------------------------------------------


def _redaction(reason: str | None) -> dict[str, Any]:
    return {"at": clock.now(), "reason": reason}


async def redact_versions(
    files: MemoryFiles, versions: Iterable[MemoryFileVersion], reason: str | None, counts: CascadeCounts
) -> list[MemoryFileVersion]:
    """Redact the versions still holding text, then delete each file whose version in front
    was redacted (its path may name what was forgotten). Returns the versions redacted."""
    todo = sorted({v.id: v for v in versions if not v.is_deletion and v.redacted is None}.values(), key=lambda v: v.id)
    done: list[MemoryFileVersion] = []
    for part in chunks([v.id for v in todo]):
        redacted: list[MemoryFileVersion] = unwrap(await files.adapter.redact_file_versions(part, _redaction(reason)))
        done.extend(redacted)
    counts.file_versions += len(done)
    await delete_redacted_heads(files, done, counts)
    return done


async def delete_redacted_heads(
    files: MemoryFiles, versions: Iterable[MemoryFileVersion], counts: CascadeCounts
) -> None:
    """Delete the files of ``versions``' scopes and paths whose version in front is redacted."""
    places = {(v.scope.key, v.path): v.scope for v in versions}
    for (_, path), scope in sorted(places.items(), key=lambda kv: kv[0]):
        heads = unwrap(await files.adapter.find_file_heads({"scope": scope, "paths": [path], "content": False}))
        for head in heads:
            if head.is_deletion or head.redacted is None:
                continue
            access = {"scope": scope, "author": CASCADE_AUTHOR}
            await files.run(access, {"command": "delete", "path": head.path})
            counts.files += 1


async def sweep_file_versions(
    files: MemoryFiles, agents: Iterable[str], entry_ids: Collection[str], reason: str | None, counts: CascadeCounts
) -> None:
    """Redact the memory file versions written at ``entry_ids`` (their place), and delete the
    files whose version in front went so."""
    wanted = sorted(entry_ids)
    found: list[MemoryFileVersion] = []
    for agent in agents:
        for part in chunks(wanted):
            batch: list[MemoryFileVersion] = unwrap(
                await files.adapter.query_file_versions({"within": {"agent_id": agent}, "entry_ids": part})
            )
            found.extend(batch)
    if found:
        await redact_versions(files, found, reason, counts)


async def purge_file_scope(files: MemoryFiles, scope: MemoryScope, reason: str | None, counts: CascadeCounts) -> None:
    """Redact every version of the files kept in ``scope`` or a narrower one and delete the files."""
    found = unwrap(await files.adapter.query_file_versions({"within": scope}))
    redacted = await redact_versions(files, found, reason, counts)
    # a file whose head was already redacted (a cascade run before) still goes
    await delete_redacted_heads(files, [v for v in found if v.id not in {r.id for r in redacted}], counts)


#: How observations and playbooks name what they stand on: ``[item:<id>]`` and ``[lesson:<id>]``
#: (see :mod:`cogitator_memory.upkeep`).
_MARK = re.compile(r"\[(?:item|lesson):([A-Za-z0-9_\-]{1,200})\]")


def named_items(text: str | None) -> set[str]:
    """The item ids a text names with ``[item:<id>]`` or ``[lesson:<id>]`` marks."""
    return set() if text is None else set(_MARK.findall(text))


def without_rules_of(text: str, ids: Collection[str]) -> tuple[str, int]:
    """A playbook's text without the rules that stand on a lesson of ``ids`` (and without those
    lessons among the ones waiting for a draft); how many rules went."""
    playbook = parse_playbook(text)
    kept = tuple(rule for rule in playbook.rules if not set(rule.lesson_ids) & set(ids))
    waiting = tuple(i for i in playbook.waiting if i not in ids)
    trimmed = dataclasses.replace(playbook, rules=kept, waiting=waiting)
    return playbook_file(trimmed), len(playbook.rules) - len(kept)


async def sweep_upkeep_files(
    files: MemoryFiles, agents: Iterable[str], gone: Gone, reason: str | None, counts: CascadeCounts
) -> None:
    """Redact every version of an observation or a playbook that names an item that went; a
    playbook in front is first written again without the rules standing on such a lesson, so the
    other rules stay (an observation is written again by its next refresh)."""
    if not gone.items:
        return
    ids = frozenset(gone.items)
    for agent in agents:
        within = {"within": {"agent_id": agent}}
        versions: list[MemoryFileVersion] = unwrap(
            await files.adapter.query_file_versions({**within, "prefix": OBSERVATIONS_DIRECTORY})
        )
        playbooks: list[MemoryFileVersion] = unwrap(
            await files.adapter.query_file_versions({**within, "paths": [PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH]})
        )
        versions.extend(playbooks)
        naming = [v for v in versions if named_items(v.content) & ids]
        if not naming:
            continue
        for path in (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH):
            scopes = {v.scope.key: v.scope for v in naming if v.path == path}
            for scope in scopes.values():
                heads = unwrap(await files.adapter.find_file_heads({"scope": scope, "paths": [path]}))
                for head in heads:
                    if head.content is None or not named_items(head.content) & ids:
                        continue
                    text, dropped = without_rules_of(head.content, ids)
                    counts.playbook_rules += dropped
                    await files.put({"scope": scope, "author": CASCADE_AUTHOR}, path, text, head.sha256)
        await redact_versions(files, naming, reason, counts)


__all__ = [
    "CASCADE_AUTHOR",
    "CHUNK",
    "Gone",
    "chunks",
    "delete_redacted_heads",
    "items_on_entries",
    "named_items",
    "names_any",
    "purge_file_scope",
    "purge_scope",
    "redact_versions",
    "stands_only_on",
    "sweep_entities",
    "sweep_file_versions",
    "sweep_graph",
    "sweep_items",
    "sweep_upkeep_files",
    "sweep_vectors",
    "without_rules_of",
]
