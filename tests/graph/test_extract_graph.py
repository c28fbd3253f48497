"""GraphExtractor over a real HTTP model (ScriptedServer) on real stores: in process, SQLite, PostgreSQL.

The scripted models read the window the extractor sent and answer as models do: honestly, with
quotes no message holds, with relations naming entities they never listed, cut at the token limit,
or with no JSON at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from graph_extract_world import (
    STORES,
    Model,
    array,
    entity,
    graph_of,
    open_store,
    relation,
    say,
    scripted_model,
    shown,
)

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.graph.extract import (
    GraphAnswerCutError,
    GraphExtractor,
    GraphWindowError,
    parse_graph_extraction,
    select_writable,
)
from cogitator_memory.graph.prompts import GRAPH_EXTRACTION_PROMPT, GRAPH_EXTRACTION_RETRY_PROMPT
from cogitator_memory.items.extract import EXTRACTION_ATTEMPTS, EXTRACTION_CONTINUATIONS, ExtractionAnswerError
from cogitator_memory.result import MemoryResult, err
from cogitator_memory.testing.scripted_server import ScriptedChatRequest

ANA = {"agent_id": "concierge", "user_id": "ana"}
SAID = "My sister Ana moved to Porto last year. Porto is a city in Portugal."


def honest(chat: ScriptedChatRequest) -> str:
    """Entities and relations quoting the one message shown."""
    assert shown(chat)[1] == SAID
    return (
        "Here you go:\n```json\n"
        + array(
            entity("user", "person", (1, "My sister Ana")),
            entity("Ana", "person", (1, "My sister Ana"), description="the user's sister"),
            entity("Porto", "location", (1, "moved to Porto"), aliases=["Oporto"]),
            entity("Portugal", "location", (1, "a city in Portugal")),
            relation("sibling_of", "user", "Ana", (1, "My sister Ana"), confidence=0.95),
            relation("located_in", "Ana", "Porto", (1, "Ana moved to Porto")),
            relation("part_of", "Porto", "Portugal", (1, "Porto is a city in Portugal")),
        )
        + "\n```"
    )


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    async with open_store(request.param, tmp_path) as opened:
        yield opened


@pytest.fixture
async def model() -> AsyncIterator[Model]:
    async with scripted_model() as scripted:
        yield scripted


async def thread_of(store: Any) -> str:
    return str(unwrap(await store.create_thread("concierge", {"user_id": "ana"})).id)


def extractor(store: Any, model: Model, **options: Any) -> GraphExtractor:
    return GraphExtractor(graph=store, summarize=model.client.as_summarize_fn(), **options)


# ----- what is written ---------------------------------------------------------------------------


async def test_an_honest_answer_writes_nodes_and_edges_with_their_quotes(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    model.answer(honest)
    report = await extractor(store, model).extract([entry], scope=ANA)

    nodes, edges = await graph_of(store, "concierge")
    assert sorted(nodes) == ["Ana", "Porto", "Portugal", "user"]
    assert edges == [("Ana", "located_in", "Porto"), ("Porto", "part_of", "Portugal"), ("user", "sibling_of", "Ana")]
    porto = nodes["Porto"]
    assert porto.origin == "extracted" and porto.type == "location" and porto.aliases == ["Oporto"]
    assert porto.scope.user_id == "ana" and porto.metadata == {"trust": "user"}
    assert [(e.entry_id, e.thread_id, e.quote) for e in porto.evidence] == [(entry.id, thread, "moved to Porto")]
    assert nodes["Ana"].description == "the user's sister"
    stored = unwrap(await store.query_edges({"agent_id": "concierge", "types": ["sibling_of"]}))
    assert stored[0].confidence == 0.95 and stored[0].evidence[0].quote == "My sister Ana"
    window = report.windows[0]
    assert (window.status, window.entities_read, window.relations_read, window.quotes_verified) == ("read", 4, 3, 7)
    assert (window.nodes_added, window.edges_added, window.quotes_rejected, report.left_out) == (4, 3, 0, 0)
    sent = model.requests()[0]
    assert sent["messages"][0] == {"role": "system", "content": GRAPH_EXTRACTION_PROMPT}
    assert "Answer with the JSON array of entities and relations only" in sent["messages"][1]["content"]


async def test_a_second_extraction_adds_its_quotes_to_the_nodes_and_edges_it_names(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    first = await say(store, thread, SAID)
    model.answer(honest)
    await extractor(store, model).extract([first], scope=ANA)
    again = await say(store, thread, "Ana still lives in Oporto, she loves it.")
    model.answer(
        array(
            entity("Ana", "person", (1, "Ana still lives")),
            entity("Oporto", "location", (1, "lives in Oporto")),
            relation("located_in", "Ana", "Oporto", (1, "Ana still lives in Oporto"), confidence=0.99),
        )
    )
    report = await extractor(store, model).extract([again], scope=ANA)

    nodes, edges = await graph_of(store, "concierge")
    assert sorted(nodes) == ["Ana", "Porto", "Portugal", "user"]  # Oporto is Porto's alias: no new node
    assert edges.count(("Ana", "located_in", "Porto")) == 1
    assert [q.quote for q in nodes["Porto"].evidence] == ["moved to Porto", "lives in Oporto"]
    edge = unwrap(await store.query_edges({"agent_id": "concierge", "types": ["located_in"]}))[0]
    assert [q.quote for q in edge.evidence] == ["Ana moved to Porto", "Ana still lives in Oporto"]
    assert edge.confidence == 0.99
    assert (report.windows[0].nodes_added, report.windows[0].nodes_updated) == (0, 2)
    assert (report.windows[0].edges_added, report.windows[0].edges_updated) == (0, 1)


# ----- what is not written -------------------------------------------------------------------------


async def test_a_lying_model_writes_nothing_of_what_it_made_up(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    model.answer(
        array(
            entity("Ana", "person", (1, "My sister Ana")),
            entity("Lisbon", "location", (1, "Ana moved to Lisbon")),  # not in the message
            entity("Porto", "location", (1, "moved to Porto"), (1, "Porto, the capital")),  # one quote of two lies
            relation("located_in", "Ana", "Lisbon", (1, "My sister Ana moved")),  # an end that lied
            relation("works_at", "Ana", "Porto", (1, "Ana works in Porto")),  # its own quote lies
        )
    )
    report = await extractor(store, model).extract([entry], scope=ANA)

    nodes, edges = await graph_of(store, "concierge")
    assert sorted(nodes) == ["Ana"] and edges == []
    window = report.windows[0]
    assert (window.unverified, window.unknown_entities, window.quotes_rejected) == (3, 1, 3)
    assert report.left_out == 4


async def test_relations_naming_entities_the_answer_did_not_list_write_nothing(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    model.answer(
        array(
            entity("Ana", "person", (1, "My sister Ana")),
            relation("located_in", "Ana", "Porto", (1, "Ana moved to Porto")),  # Porto never listed
            relation("knows", "Ana", "ana", (1, "My sister Ana")),  # herself
        )
    )
    report = await extractor(store, model).extract([entry], scope=ANA)
    nodes, edges = await graph_of(store, "concierge")
    assert sorted(nodes) == ["Ana"] and edges == []
    assert report.windows[0].unknown_entities == 1 and report.windows[0].elements_dropped == 1


async def test_what_the_assistant_said_is_not_written_unless_asked(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    said = await say(store, thread, "Your sister Ana works at Acme, right?", role="assistant")
    answer = array(
        entity("Ana", "person", (1, "Your sister Ana")),
        entity("Acme", "organization", (1, "works at Acme")),
        relation("works_at", "Ana", "Acme", (1, "Ana works at Acme")),
    )
    model.answer(answer)
    report = await extractor(store, model).extract([said], scope=ANA)
    assert (await graph_of(store, "concierge")) == ({}, [])
    assert report.windows[0].untrusted == 3

    await extractor(store, model, min_trust="model").extract([said], scope=ANA)
    nodes, edges = await graph_of(store, "concierge")
    assert edges == [("Ana", "works_at", "Acme")] and nodes["Acme"].metadata == {"trust": "model"}


async def test_an_answer_without_an_array_is_asked_again_then_fails_writing_nothing(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    model.answer("I cannot help with that.")
    with pytest.raises(GraphWindowError) as caught:
        await extractor(store, model).extract([entry], scope=ANA)
    assert isinstance(caught.value.__cause__, ExtractionAnswerError)
    assert caught.value.report is not None and caught.value.report.windows[0].status == "failed"
    assert len(model.requests()) == EXTRACTION_ATTEMPTS
    assert model.requests()[1]["messages"][-1]["content"] == GRAPH_EXTRACTION_RETRY_PROMPT
    assert (await graph_of(store, "concierge")) == ({}, [])


async def test_a_cut_answer_is_continued_and_written_whole(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    full = json.loads(honest_text())

    def answer(chat: ScriptedChatRequest) -> str:
        if len(chat.messages) == 1:
            return array(*full)  # cut by max_tokens
        done = int(re.search(r"Continue after element (\d+)", chat.messages[-1][1]).group(1))  # type: ignore[union-attr]
        return array(*full[done:])

    model.answer(answer)
    report = await extractor(store, model, max_tokens=80).extract([entry], scope=ANA)
    nodes, edges = await graph_of(store, "concierge")
    assert sorted(nodes) == ["Ana", "Porto", "Portugal", "user"] and len(edges) == 3
    assert report.windows[0].continuations >= 1 and report.windows[0].complete


async def test_an_answer_still_cut_after_the_last_continuation_writes_nothing(store: Any, model: Model) -> None:
    thread = await thread_of(store)
    entry = await say(store, thread, SAID)
    model.answer(
        lambda chat: (
            '[{"entity": "Ana", "type": "person", "quotes": [{"message": 1, "quote": "My sister Ana"}]}, '
            + '{"entity": "Porto", "type": "location", "quotes": [{"message": 1, "quote": "moved to Porto"}]}, ' * 40
        )
    )
    with pytest.raises(GraphWindowError) as caught:
        await extractor(store, model, max_tokens=60).extract([entry], scope=ANA)
    assert isinstance(caught.value.__cause__, GraphAnswerCutError)
    assert len(model.requests()) == 1 + EXTRACTION_CONTINUATIONS
    assert (await graph_of(store, "concierge")) == ({}, [])


def honest_text() -> str:
    return array(
        entity("user", "person", (1, "My sister Ana")),
        entity("Ana", "person", (1, "My sister Ana")),
        entity("Porto", "location", (1, "moved to Porto")),
        entity("Portugal", "location", (1, "a city in Portugal")),
        relation("sibling_of", "user", "Ana", (1, "My sister Ana")),
        relation("located_in", "Ana", "Porto", (1, "Ana moved to Porto")),
        relation("part_of", "Porto", "Portugal", (1, "Porto is a city in Portugal")),
    )


# ----- failures and arguments ----------------------------------------------------------------------


class EdgesFail(InMemoryAdapter):
    """An in-process store whose edge writes fail (as a store going away would)."""

    async def add_edges(self, edges: Any) -> MemoryResult[Any]:
        return err(MemoryStoreError("the store went away"))


async def test_a_store_failure_takes_back_what_the_window_wrote(model: Model) -> None:
    async with EdgesFail() as store:
        thread = await thread_of(store)
        first = await say(store, thread, "My sister Ana lives in Porto.")
        unwrap(await store.add_node({"name": "Ana", "type": "person", "scope": ANA, "evidence": []}))
        model.answer(
            array(
                entity("Ana", "person", (1, "My sister Ana")),
                entity("Porto", "location", (1, "lives in Porto")),
                relation("located_in", "Ana", "Porto", (1, "Ana lives in Porto")),
            )
        )
        with pytest.raises(GraphWindowError, match="the store went away") as caught:
            await extractor(store, model).extract([first], scope=ANA)
        nodes, edges = await graph_of(store, "concierge")
        assert sorted(nodes) == ["Ana"] and edges == []
        assert nodes["Ana"].evidence == []  # its update taken back
        assert caught.value.report is not None and caught.value.report.windows[0].status == "failed"


async def test_bad_arguments_are_refused_naming_them(model: Model) -> None:
    async with InMemoryAdapter() as store:
        summarize = model.client.as_summarize_fn()
        cases: list[tuple[dict[str, Any], str]] = [
            ({"graph": object(), "summarize": summarize}, "graph"),
            ({"graph": store, "summarize": "no"}, "summarize"),
            ({"graph": store, "summarize": summarize, "min_trust": "friend"}, "min_trust"),
            ({"graph": store, "summarize": summarize, "window_tokens": 5}, "window_tokens"),
            ({"graph": store, "summarize": summarize, "max_tokens": 0}, "max_tokens"),
        ]
        for kwargs, name in cases:
            with pytest.raises(InvalidArgumentError) as caught:
                GraphExtractor(**kwargs)
            assert caught.value.argument == name
        with pytest.raises(InvalidArgumentError) as caught:
            await GraphExtractor(graph=store, summarize=summarize).extract([], scope={"agent_id": ""})
        assert caught.value.argument.startswith("scope")
        assert model.requests() == []


def test_parse_graph_extraction_reads_what_fits_and_checks_every_quote() -> None:
    from datetime import UTC, datetime

    from cogitator_memory.threads.records import MemoryEntry

    entry = MemoryEntry.model_validate(
        {
            "id": "entry_1",
            "thread_id": "t",
            "seq": 1,
            "type": "message",
            "message": {"role": "user", "content": "Bo  works at\nAcme."},
            "token_count": 5,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC),
        }
    )
    text = "Sure [1]: " + array(
        entity("Bo", "Person", (1, "Bo works at Acme")),  # spacing aside, holds; the type is lowered
        entity("Acme", "organization", (1, "ACME")),  # case counts: does not hold
        relation("works at", "Bo", "Acme", (1, "works at")),  # the type becomes works_at
        {"entity": "Zed", "relation": "knows"},  # both: does not fit
        {"entity": "Zed", "type": "person"},  # no quote: does not fit
        entity("Cy", "person", (7, "Cy")),  # a message not shown
        relation("knows", "Bo", "Bo", (1, "Bo")),  # to itself
    )
    answer = parse_graph_extraction(text, {1: entry})
    assert [(e.name, e.type, e.verified) for e in answer.entities] == [
        ("Bo", "person", True),
        ("Acme", "organization", False),
    ]
    assert [(r.type, r.verified, r.trust) for r in answer.relations] == [("works_at", True, "user")]
    assert (answer.dropped, answer.unknown_messages) == (3, 1)
    chosen = select_writable(answer)
    assert [e.name for e in chosen.entities] == ["Bo"]
    assert (chosen.unverified, chosen.unknown_entities, chosen.relations) == (1, 1, [])
    with pytest.raises(InvalidArgumentError):
        select_writable(answer, min_trust="friend")  # type: ignore[arg-type]


async def test_a_failed_window_writes_nothing_and_the_others_are_written(model: Model) -> None:
    def answer(chat: ScriptedChatRequest) -> str:
        text = shown(chat)[1]
        if text.startswith("Ana"):
            return "No JSON today."
        return array(
            entity("Bo", "person", (1, "Bo")),
            entity("Faro", "location", (1, "Faro")),
            relation("located_in", "Bo", "Faro", (1, "Bo lives in Faro")),
        )

    model.answer(answer)
    async with InMemoryAdapter() as store:
        thread = await thread_of(store)
        entries = [await say(store, thread, "Ana lives in Porto."), await say(store, thread, "Bo lives in Faro.")]
        with pytest.raises(GraphWindowError) as caught:
            await extractor(store, model, window_tokens=100).extract(entries, scope=ANA)
        report = caught.value.report
        assert report is not None and [w.status for w in report.windows] == ["failed", "read"]
        assert caught.value.window == 1 and caught.value.windows == 2
        assert (await graph_of(store, "concierge"))[1] == [("Bo", "located_in", "Faro")]
        assert [n.name for n in report.nodes] == ["Bo", "Faro"]


async def test_a_relation_stated_after_it_was_inferred_becomes_extracted_and_stays(model: Model) -> None:
    from cogitator_memory.graph.inference import run_inference

    async with InMemoryAdapter() as store:
        thread = await thread_of(store)
        model.answer(honest)
        await extractor(store, model).extract([await say(store, thread, SAID)], scope=ANA)
        await run_inference(store, "concierge")
        inferred = unwrap(await store.query_edges({"agent_id": "concierge", "origins": ["inferred"]}))
        assert any(e.type == "located_in" for e in inferred)  # Ana in Portugal, through Porto

        said = await say(store, thread, "Ana lives in Portugal now.")
        model.answer(
            array(
                entity("Ana", "person", (1, "Ana lives")),
                entity("Portugal", "location", (1, "Portugal")),
                relation("located_in", "Ana", "Portugal", (1, "Ana lives in Portugal")),
            )
        )
        report = await extractor(store, model).extract([said], scope=ANA)
        assert (report.windows[0].edges_added, report.windows[0].edges_updated) == (0, 1)
        (edge,) = [e for e in report.edges if e.type == "located_in"]
        assert edge.origin == "extracted" and edge.evidence[-1].quote == "Ana lives in Portugal"
        again = await run_inference(store, "concierge")
        assert edge.id not in again.deleted
        assert unwrap(await store.get_edge(edge.id)) is not None


class Racing(InMemoryAdapter):
    """An in-process store where someone else changes a node once, right before the extractor's
    change of it (as a concurrent writer would)."""

    raced = False

    async def _update_records(self, nodes: Any, edges: Any) -> Any:
        if nodes and not self.raced:
            self.raced = True
            unwrap(await super().update_node(nodes[0][0], {"description": "changed meanwhile"}))
        return await super()._update_records(nodes, edges)


async def test_a_window_said_again_changes_its_stored_records_in_one_write(tmp_path: Path, model: Model) -> None:
    from cogitator_memory import SQLiteAdapter

    async with SQLiteAdapter(path=tmp_path / "graph.db") as store:
        thread = await thread_of(store)
        model.answer(honest)
        await extractor(store, model).extract([await say(store, thread, SAID)], scope=ANA)
        again = await say(store, thread, SAID)
        model.answer(honest)
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        try:
            report = await extractor(store, model).extract([again], scope=ANA)
        finally:
            store.connection.set_trace_callback(None)
        assert len(report.nodes) == 4 and len(report.edges) == 3, "every node and edge got the new quotes"
        puts = [
            s
            for s in statements
            if s.startswith(("INSERT OR REPLACE INTO graph_nodes", "INSERT OR REPLACE INTO graph_edges"))
        ]
        assert len(puts) == 7
        first, last = statements.index(puts[0]), statements.index(puts[-1])
        between = statements[first:last]
        assert not [s for s in between if s.startswith(("BEGIN", "COMMIT"))], "the 4 nodes and 3 edges in one write"
        nodes, _ = await graph_of(store, "concierge")
        assert len(nodes["Ana"].evidence) == 2


async def test_a_node_changed_meanwhile_fails_the_window_and_nothing_of_it_stays(model: Model) -> None:
    from cogitator_memory.errors import ConflictError

    async with Racing() as store:
        thread = await thread_of(store)
        unwrap(await store.add_node({"name": "Ana", "type": "person", "scope": ANA}))
        model.answer(honest)
        with pytest.raises(GraphWindowError) as caught:
            await extractor(store, model).extract([await say(store, thread, SAID)], scope=ANA)
        assert isinstance(caught.value.__cause__, ConflictError)
        nodes, edges = await graph_of(store, "concierge")
        assert sorted(nodes) == ["Ana"] and edges == []  # the nodes added before the conflict are gone
        assert nodes["Ana"].description == "changed meanwhile" and nodes["Ana"].evidence == []

        await extractor(store, model).extract([await say(store, thread, SAID)], scope=ANA)  # read again: goes
        nodes, _ = await graph_of(store, "concierge")
        assert sorted(nodes) == ["Ana", "Porto", "Portugal", "user"]
        assert nodes["Ana"].description == "changed meanwhile" and len(nodes["Ana"].evidence) == 1
