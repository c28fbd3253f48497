"""Graph edges and memory-file sections in the recall index: how a file is cut into sections and
an edge said as text (no I/O), ``reindex`` writing both for data held before, and ``search``
returning them as ``fact`` and ``file`` hits on every store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.facts.core import CoreFacts
from cogitator_memory.files import MAX_FILE_BYTES, MemoryFiles, MemoryFileVersion
from cogitator_memory.graph.records import GraphEdge
from cogitator_memory.index.build import (
    MAX_FILE_SECTIONS,
    SECTION_CHARS,
    edge_text,
    file_section_ids,
    file_section_records,
    file_sections,
)
from cogitator_memory.index.indexer import WATERMARK_KEY, RecallIndexer
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.search import search_memory
from engine_configs import memory_config

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ANA = {"scope": {"agent_id": "agent", "user_id": "ana"}}


# --- sections (no I/O) -------------------------------------------------------------------------


def test_a_file_is_cut_at_its_headings() -> None:
    text = (
        "Notes kept for Ana.\n\n# Health\nAllergic to peanuts.\n#hashtag is not a heading\n"
        "## Home\nLisbon.\n```\n# a comment in code, not a heading\n```\n###\n\n#### Work\nPainter.\n"
    )
    assert file_sections(text) == [
        "Notes kept for Ana.",
        "# Health\nAllergic to peanuts.\n#hashtag is not a heading",
        "## Home\nLisbon.\n```\n# a comment in code, not a heading\n```",
        "###",
        "#### Work\nPainter.",
    ]
    assert file_sections("no headings here\nat all") == ["no headings here\nat all"]
    assert file_sections("# Only a title\n") == ["# Only a title"]
    assert file_sections("  \n\n") == []


def test_the_largest_file_fits_in_its_sections_whole() -> None:
    one_long = "x" * MAX_FILE_BYTES
    pieces = file_sections(one_long)
    assert all(len(p) <= SECTION_CHARS for p in pieces) and "".join(pieces) == one_long
    many = "".join(f"# h{i}\n{'y' * 40}\n" for i in range(MAX_FILE_BYTES // 48))
    packed = file_sections(many)
    assert len(packed) <= MAX_FILE_SECTIONS, "tiny sections are packed together"
    assert all(len(p) <= SECTION_CHARS for p in packed)
    assert sum(p.count("#") for p in packed) == MAX_FILE_BYTES // 48, "no section is lost"


def test_a_files_records_and_ids() -> None:
    version = MemoryFileVersion(
        id="v2",
        scope={"agent_id": "agent", "user_id": "ana"},
        path="/memories/ana.md",
        sequence=2,
        content="# A\none\n# B\ntwo",
        place={"thread_id": "t1", "entry_id": "e9"},
        author="user",
        created_at=T0,
    )
    records = file_section_records(version)
    assert [r.text for r in records] == ["/memories/ana.md\n# A\none", "/memories/ana.md\n# B\ntwo"]
    assert [(r.kind, r.user_id, r.role, r.said_at, r.lineage) for r in records] == [
        ("file_section", "ana", "user", T0, ["e9"])
    ] * 2
    ids = file_section_ids(version.scope, version.path)
    assert [r.id for r in records] == ids[:2] and len(ids) == MAX_FILE_SECTIONS
    other = file_section_ids(version.scope.model_copy(update={"user_id": "bo"}), version.path)
    assert not set(ids) & set(other), "another scope's file has other records"
    assert file_section_records(version.model_copy(update={"content": None, "sha256": None, "size": 0})) == []
    redacted = version.model_copy(update={"content": "[redacted]", "redacted": {"at": T0}})
    assert file_section_records(redacted) == [], "a redacted head is not indexed"


def test_an_edge_is_said_as_text() -> None:
    edge = GraphEdge(
        id="g1",
        scope={"agent_id": "agent"},
        source_id="n1",
        target_id="n2",
        type="works_at",
        created_at=T0,
        updated_at=T0,
    )
    names = {"n1": "Ana", "n2": "Acme"}
    assert edge_text(edge, names) == "Ana works at Acme"
    labelled = edge.model_copy(update={"label": "has worked for", "properties": {"since": 2019, "role": "cto"}})
    assert edge_text(labelled, names) == "Ana has worked for Acme; role: cto; since: 2019"
    assert edge_text(edge, {}) == "n1 works at n2", "an end without a name is said by its id"


# --- reindex -----------------------------------------------------------------------------------


async def test_reindex_writes_the_edges_and_file_sections_held_before(tmp_path: Path) -> None:
    async with SQLiteAdapter(path=str(tmp_path / "r.db")) as store:
        unwrap(await store.create_thread("agent", {"user_id": "ana"}))
        ana, porto = unwrap(
            await store.add_nodes(
                [
                    {"type": "person", "name": "Ana", "scope": ANA["scope"]},
                    {"type": "location", "name": "Porto", "scope": ANA["scope"]},
                ]
            )
        )
        [edge] = unwrap(
            await store.add_edges(
                [{"source_id": ana.id, "target_id": porto.id, "type": "lives_in", "scope": ANA["scope"]}]
            )
        )
        version = await MemoryFiles(adapter=store).put(ANA, "/memories/ana.md", "# Pets\nA cat named Quokka.")
        [section_id] = [r.id for r in file_section_records(version)]
        held = [f"graph_fact:{edge.id}", section_id]
        assert len(unwrap(await store.get_recall_records(held))) == 2, "written with their sources"
        unwrap(await store.delete_recall_records(held))  # as a store indexed before these kinds were
        report = await RecallIndexer(store).catch_up(full=True)
        assert report.records_written == 2, "the edge and the section: the nodes' records were held"
        got = {r.id: r.text for r in unwrap(await store.get_recall_records(held))}
        assert got == {held[0]: "Ana lives in Porto", held[1]: "/memories/ana.md\n# Pets\nA cat named Quokka."}


async def test_a_first_catch_up_writes_only_the_records_the_index_does_not_hold(tmp_path: Path) -> None:
    # a store no indexer has checked (no watermark): the items', nodes' and edges' records its
    # writes made are held as they are and not written again; one missing or differing is
    async with SQLiteAdapter(path=str(tmp_path / "r.db")) as store:
        unwrap(await store.create_thread("agent", {"user_id": "ana"}))
        nodes = unwrap(
            await store.add_nodes([{"type": "person", "name": f"Friend {n}", "scope": ANA["scope"]} for n in range(30)])
        )
        first = await RecallIndexer(store).catch_up()
        assert first.records_written == 0
        gone, changed = f"graph_fact:{nodes[0].id}", f"graph_fact:{nodes[1].id}"
        unwrap(await store.delete_recall_records([gone]))
        [held] = unwrap(await store.get_recall_records([changed]))
        unwrap(
            await store.index_recall_records(
                [held.model_copy(update={"text": "stale text", "terms": ["stale"], "term_counts": [1]})]
            )
        )
        unwrap(await store.set_recall_state(WATERMARK_KEY, ""))  # as if never checked
        again = await RecallIndexer(store).catch_up()
        assert again.records_written == 2
        got = {r.id: r.text for r in unwrap(await store.get_recall_records([gone, changed]))}
        assert got == {gone: "Friend 0", changed: "Friend 1"}


async def test_a_store_opened_empty_is_current_from_the_start(tmp_path: Path) -> None:
    # nothing a first catch-up would index: the index is marked current when Memory opens it, so
    # the first search does not read back every item and fact written meanwhile
    path = tmp_path / "new.db"
    async with Memory({"adapter": "sqlite", "path": str(path)}) as memory:
        assert unwrap(await memory.adapter.get_recall_state(WATERMARK_KEY))
        await memory.add([{"role": "user", "content": "I keep bees."}], user_id="ana", thread_id="t1")
        assert memory.graph is not None
        nodes = unwrap(
            await memory.graph.add_nodes(
                [{"type": "person", "name": f"Friend {n}", "scope": ANA["scope"]} for n in range(5)]
            )
        )
        # a record the store's own write made, then lost: only a full reindex looks for it
        unwrap(await memory.adapter.delete_recall_records([f"graph_fact:{nodes[0].id}"]))
        assert memory.indexer is not None
        report = await memory.indexer.catch_up()
        assert (report.threads_checked, report.records_written) == (1, 0)
        assert [h.text for h in await memory.search("bees", user_id="ana")] == ["I keep bees."]
        assert (await memory.indexer.catch_up(full=True)).records_written == 1
    # a store holding a thread, or only a core fact, is not marked: its first catch-up indexes it
    async with SQLiteAdapter(path=str(tmp_path / "held.db")) as store:
        unwrap(await store.create_thread("agent", {"user_id": "ana"}))
        assert not await RecallIndexer(store).mark_if_new()
        assert not unwrap(await store.get_recall_state(WATERMARK_KEY))
    async with SQLiteAdapter(path=str(tmp_path / "core.db")) as store:
        indexer = RecallIndexer(store)
        facts = CoreFacts(adapter=store, scope={"agent_id": "core", "user_id": "ana"})
        await facts.initialize()
        await facts.set("city", "Porto")
        assert not await indexer.mark_if_new()
    async with SQLiteAdapter(path=str(tmp_path / "empty.db")) as store:
        indexer = RecallIndexer(store)
        assert await indexer.mark_if_new() and not await indexer.mark_if_new()  # once


# --- search ------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis", "mongodb"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory({**memory_config(request.param, tmp_path, "gf"), "files": {"enabled": True}}) as opened:
        yield opened


async def test_search_finds_edges_and_file_sections(memory: Memory) -> None:
    scope = {"scope": {"agent_id": "default", "user_id": "ana"}}
    assert memory.files is not None
    await memory.files.put(scope, "/memories/ana.md", "# Hobbies\nAna paints watercolours.\n# Food\nLoves figs.")
    await memory.files.put({"scope": {"agent_id": "default", "user_id": "bo"}}, "/memories/bo.md", "Bo paints too.")
    store: Any = memory.graph
    if store is not None:
        ana, club = unwrap(
            await store.add_nodes(
                [
                    {"type": "person", "name": "Ana", **scope},
                    {"type": "organization", "name": "Watercolour Club", **scope},
                ]
            )
        )
        unwrap(await store.add_edge({"source_id": ana.id, "target_id": club.id, "type": "member_of", **scope}))

    async def hits(kinds: tuple[str, ...] | None) -> list[tuple[str, str]]:
        found = await search_memory(
            memory,
            "painting watercolour",
            agent="default",
            user="ana",
            thread_id=None,
            limit=10,
            kinds=kinds,  # type: ignore[arg-type]
        )
        return [(h.kind, h.text) for h in found]

    files = [("file", "/memories/ana.md\n# Hobbies\nAna paints watercolours.")]
    assert await hits(("file",)) == files, "the matching section only, not bo's file"
    facts = [("fact", "Ana member of Watercolour Club"), ("fact", "Watercolour Club")] if store is not None else []
    assert sorted(await hits(("fact",))) == facts, "the edge and the node it reaches"
    assert sorted(await hits(None)) == sorted(facts + files)
    await memory.files.run(scope, {"command": "delete", "path": "/memories/ana.md"})
    assert await hits(("file",)) == [], "a deleted file is not found"


async def test_an_edit_rewrites_only_the_sections_it_changed(tmp_path: Path) -> None:
    async with SQLiteAdapter(path=str(tmp_path / "s.db")) as store:
        files = MemoryFiles(adapter=store)
        first = await files.put(ANA, "/memories/ana.md", "# Pets\nA cat.\n# Food\nFigs.\n# Work\nPainter.")
        ids = [r.id for r in file_section_records(first)]
        second = await files.put(ANA, "/memories/ana.md", "# Pets\nA cat.\n# Food\nPlums.")
        got = {r.id: r for r in unwrap(await store.get_recall_records(ids))}
        assert sorted(got) == sorted(ids[:2]), "the section past the new count is gone"
        assert (got[ids[0]].text, got[ids[0]].said_at) == ("/memories/ana.md\n# Pets\nA cat.", first.created_at)
        assert (got[ids[1]].text, got[ids[1]].said_at) == ("/memories/ana.md\n# Food\nPlums.", second.created_at)
