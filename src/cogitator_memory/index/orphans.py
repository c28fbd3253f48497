"""Which records of the recall index have lost their source: what a full reindex removes.

A record stays in the index after its source is gone when the source was deleted by a writer
that kept no index (an older version, another program on the same database), or when the store
was restored from a backup taken before the deletions of the index were undone. Each kind is
checked against the store it comes from, a page of records at a time, in one read per store
and page (a thread read per thread):

- ``turn``: the record's thread is gone. (The turns of a thread that is still there are
  written again by the reindex's thread pass, which deletes the records of its deleted or
  redacted entries.)
- ``item`` and ``core_fact``: the item is gone, or is one recall never shows (``suggested``).
- ``graph_fact``: neither a node nor an edge has the record's source id.
- ``file_section``: the head of its file (the scope and the path its text starts with) is gone,
  redacted or a deletion, or has fewer sections than the record's number.

A kind whose store the adapter does not keep (a graph on Redis) is left as it is: nothing can
say its records are stale.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from ..errors import InvalidArgumentError
from ..result import unwrap
from .build import file_section_records, item_record
from .records import MAX_RECORD_BATCH, RecallRecord

#: Threads read at once when checking turn records.
THREAD_READS = 32


async def orphan_ids(store: Any, records: list[RecallRecord]) -> list[str]:
    """The ids of ``records`` (at most :data:`~cogitator_memory.index.records.MAX_RECORD_BATCH`)
    whose source ``store`` no longer holds (see the module docs)."""
    kinds: dict[str, list[RecallRecord]] = defaultdict(list)
    for record in records:
        kinds["item" if record.kind == "core_fact" else record.kind].append(record)
    gone: list[str] = []
    gone += await _turns(store, kinds["turn"])
    gone += await _items(store, kinds["item"])
    gone += await _graph_facts(store, kinds["graph_fact"])
    gone += await _file_sections(store, kinds["file_section"])
    return gone


async def _turns(store: Any, records: list[RecallRecord]) -> list[str]:
    if not records or not callable(getattr(store, "get_thread", None)):
        return []
    threads = sorted({r.thread_id for r in records if r.thread_id is not None})
    missing: set[str] = set()
    for start in range(0, len(threads), THREAD_READS):  # a few reads at once (a page may name many)
        chunk = threads[start : start + THREAD_READS]
        found = await asyncio.gather(*(store.get_thread(t) for t in chunk))
        missing.update(t for t, result in zip(chunk, found, strict=True) if unwrap(result) is None)
    return [r.id for r in records if r.thread_id in missing]


async def _items(store: Any, records: list[RecallRecord]) -> list[str]:
    if not records or not callable(getattr(store, "get_items", None)):
        return []
    held: set[str] = set()
    sources = sorted({r.source_id for r in records})
    for start in range(0, len(sources), MAX_RECORD_BATCH):
        for item in unwrap(await store.get_items(sources[start : start + MAX_RECORD_BATCH])):
            record = item_record(item)
            if record is not None:
                held.add(record.id)
    return [r.id for r in records if r.id not in held]


async def _graph_facts(store: Any, records: list[RecallRecord]) -> list[str]:
    if not records or not callable(getattr(store, "_get_edges", None)):
        return []
    sources = sorted({r.source_id for r in records})
    held = {n.id for n in await store._get_nodes(sources)}
    held.update(e.id for e in await store._get_edges([s for s in sources if s not in held]))
    return [r.id for r in records if r.source_id not in held]


async def _file_sections(store: Any, records: list[RecallRecord]) -> list[str]:
    if not records or not callable(getattr(store, "query_file_versions", None)):
        return []
    files: dict[tuple[str, str | None, str | None, str], list[RecallRecord]] = defaultdict(list)
    for record in records:
        if record.agent_id is not None:
            path = record.text.split("\n", 1)[0]
            files[(record.agent_id, record.user_id, record.thread_id, path)].append(record)
    gone: list[str] = []
    for (agent, user, thread, path), held in sorted(files.items(), key=lambda kv: tuple(map(str, kv[0]))):
        within = {"agent_id": agent, "user_id": user, "thread_id": thread}
        found = await store.query_file_versions({"within": within, "paths": [path]})
        if not found.success and found.error_type is InvalidArgumentError:  # a path no file can have
            gone.extend(r.id for r in held)
            continue
        versions: list[Any] = unwrap(found)
        heads: dict[tuple[str, str], Any] = {}
        for version in versions:
            kept = heads.get((version.scope_key, version.path))
            if kept is None or version.sequence > kept.sequence:
                heads[(version.scope_key, version.path)] = version
        live = {r.id for head in heads.values() for r in file_section_records(head)}
        gone.extend(r.id for r in held if r.id not in live)
    return gone


__all__ = ["orphan_ids"]
