"""The memory tools (remember, recall, forget) on real stores: the in-process one and a SQLite file,
with the core facts kept in the same store; their definitions checked by the OpenAI and Anthropic
SDKs' own types (and MCP's, when the MCP SDK is installed)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from cogitator_memory import CoreFactsStore, InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.embeddings.hashing import HashingEmbedder
from cogitator_memory.embeddings.openai import OpenAIEmbeddingService
from cogitator_memory.errors import InvalidArgumentError, NotConnectedError
from cogitator_memory.testing.scripted_server import RecordedRequest, ScriptedResponse, ScriptedServer
from cogitator_memory.tools import (
    BROAD_FORGET,
    MAX_FORGET,
    MIN_RECALL_SCORE,
    RELATIVE_RECALL_SCORE,
    MemoryTool,
    anthropic_tools,
    call_tool,
    create_memory_tools,
    is_broad,
    mcp_tools,
    openai_tools,
)

AGENT = "jarvis"


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    memory = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=str(tmp_path / "memory.db"))
    async with memory:
        yield memory


@pytest.fixture
async def core(store: Any) -> AsyncIterator[CoreFactsStore]:
    async with CoreFactsStore(adapter=store) as facts:
        yield facts


@pytest.fixture
def tools(store: Any, core: CoreFactsStore) -> list[MemoryTool]:
    return create_memory_tools(graph=store, core_facts=core, agent_id=AGENT)


async def _call(tools: list[MemoryTool], name: str, arguments: object) -> dict[str, Any]:
    answer = await call_tool(tools, name, arguments)
    json.dumps(answer)  # every answer is JSON as it is
    return answer


# ----- definitions -------------------------------------------------------------------------------


def test_definitions_fit_each_api(tools: list[MemoryTool]) -> None:
    from anthropic.types import ToolParam
    from openai.types.chat import ChatCompletionToolParam

    assert [t.name for t in tools] == ["remember", "recall", "forget"]
    for definition in openai_tools(tools):
        TypeAdapter(ChatCompletionToolParam).validate_python(definition)
        assert definition["type"] == "function" and definition["function"]["parameters"]["type"] == "object"
    for definition in anthropic_tools(tools):
        TypeAdapter(ToolParam).validate_python(definition)
        assert set(definition) == {"name", "description", "input_schema"}
    mcp = mcp_tools(tools)
    assert [d["annotations"] for d in mcp] == [
        {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
    ]
    if importlib.util.find_spec("mcp") is not None:
        from mcp.types import Tool

        assert [Tool.model_validate(d).name for d in mcp] == ["remember", "recall", "forget"]
    remember = tools[0].to_anthropic()["input_schema"]
    assert remember["required"] == ["fact"] and remember["additionalProperties"] is False
    assert set(remember["properties"]) == {"fact", "category", "is_core_fact", "core_fact_key"}
    assert remember["properties"]["is_core_fact"]["type"] == "boolean"
    assert tools[1].to_json_schema()["parameters"]["required"] == ["query"]
    # each rendering is a copy: changing it changes no other
    openai_tools(tools)[0]["function"]["parameters"]["required"].append("x")
    assert tools[0].parameters["required"] == ["fact"]
    with pytest.raises(InvalidArgumentError, match="shape"):
        tools[0].definition("gemini")  # type: ignore[arg-type]


def test_schemas_are_valid_json_schema(tools: list[MemoryTool]) -> None:
    for tool in tools:  # what the handlers check is what the schema says
        schema = tool.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert all(spec["type"] in ("string", "boolean") for spec in schema["properties"].values())
    if importlib.util.find_spec("jsonschema") is None:  # comes with the MCP SDK
        return
    import jsonschema

    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
    validator = jsonschema.Draft202012Validator(tools[0].parameters)
    assert validator.is_valid({"fact": "User's dog is named Luna", "category": "pets"})
    assert not validator.is_valid({"category": "pets"})
    assert not validator.is_valid({"fact": "x", "isCoreFact": True})


# ----- remember and recall ---------------------------------------------------------------------


async def test_remember_then_recall(tools: list[MemoryTool], store: Any, core: CoreFactsStore) -> None:
    saved = await _call(tools, "remember", {"fact": "User's dog is named Luna", "category": "pets"})
    assert saved["saved"] is True and saved["updated"] is False and saved["category"] == "pets"
    node = unwrap(await store.get_node(saved["id"]))
    assert (node.type, node.name, node.origin, node.properties) == (
        "fact",
        "User's dog is named Luna",
        "user",
        {"category": "pets"},
    )
    name = await _call(tools, "remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"})
    assert name["core_fact"] == {"key": "user_name", "value": "Alex"}
    assert await core.get("user_name") == "Alex"
    await _call(tools, "remember", {"fact": "User works at the Lisbon harbour", "category": "work"})

    found = await _call(tools, "recall", {"query": "dog"})
    assert [r["fact"] for r in found["results"]] == ["User's dog is named Luna"]
    assert found["results"][0]["category"] == "pets" and found["results"][0]["type"] == "fact"
    assert found["core_facts"] == {"user_name": "Alex"}
    assert (await _call(tools, "recall", {"query": "LUNA dog"}))["results"][0]["id"] == saved["id"]
    nothing = await _call(tools, "recall", {"query": "cat"})
    assert nothing == {"results": [], "core_facts": {"user_name": "Alex"}}, "core facts come always"

    again = await _call(tools, "remember", {"fact": "User's dog is named Luna"})
    assert (again["id"], again["updated"], again["category"]) == (saved["id"], True, "pets"), "the same fact once"
    assert unwrap(await store.get_node(saved["id"])).version == 2
    moved = await _call(tools, "remember", {"fact": "User's dog is named Luna", "category": "family"})
    assert moved["category"] == "family"
    assert len(unwrap(await store.query_nodes({"agent_id": AGENT, "types": ["fact"]}))) == 3


async def test_recall_gives_at_most_ten_the_whole_query_first(tools: list[MemoryTool], store: Any) -> None:
    for i in range(12):
        await _call(tools, "remember", {"fact": f"Trip {i}: the user flew to a city"})
    await _call(tools, "remember", {"fact": "The user loves a city trip"})
    results = (await _call(tools, "recall", {"query": "city trip"}))["results"]
    assert len(results) == 10
    assert results[0]["fact"] == "The user loves a city trip", "the whole query before words found apart"
    # extracted entities are recalled too, as their name and description
    unwrap(
        await store.add_node(
            {
                "name": "Luna",
                "type": "animal",
                "description": "the user's dog",
                "agent_id": AGENT,
                "origin": "extracted",
            }
        )
    )
    luna = (await _call(tools, "recall", {"query": "luna"}))["results"]
    assert [(r["type"], r["fact"]) for r in luna] == [("animal", "Luna: the user's dog")]


async def test_semantic_recall(store: Any, core: CoreFactsStore) -> None:
    """With an embedding service the text matches come first, then the nodes near the query by
    meaning with their cosine; an unrelated fact (a cosine of 0, or under the floor) never comes."""
    embedder = HashingEmbedder(dimensions=64)
    tools = create_memory_tools(graph_adapter=store, core_facts=core, agent_id=AGENT, embedding_service=embedder)
    for fact in ("User's dog is named Luna", "User lives in Porto", "User drinks green tea"):
        saved = await _call(tools, "remember", {"fact": fact})
        assert unwrap(await store.get_node(saved["id"])).embedding is not None, "embedded when written"
    by_meaning = (await _call(tools, "recall", {"query": "the dog called Luna"}))["results"]
    assert [r["fact"] for r in by_meaning] == ["User's dog is named Luna"]  # no word match: "called"
    assert by_meaning[0]["score"] >= MIN_RECALL_SCORE
    dog = (await _call(tools, "recall", {"query": "dog"}))["results"]
    assert [r["fact"] for r in dog] == ["User's dog is named Luna"]  # by its words; Porto never
    assert "score" not in dog[0]  # its cosine (0.35) is under the floor: found by its words only
    assert (await _call(tools, "recall", {"query": "weather tomorrow"}))["results"] == []
    words_only = create_memory_tools(graph_adapter=store, core_facts=core, agent_id=AGENT)
    assert (await _call(words_only, "recall", {"query": "the dog called Luna"}))["results"] == []
    # every content word of a question in some form is a word match, with or without vectors
    named = (await _call(words_only, "recall", {"query": "the dog named Luna"}))["results"]
    assert [r["fact"] for r in named] == ["User's dog is named Luna"] and "score" not in named[0]


_VECTORS = {  # what the scripted embedding API answers for each text
    "User keeps bees on the roof": [1.0, 0.0, 0.0],
    "User sings in a choir": [0.5, 0.866, 0.0],  # 0.5 from the first query: at the floor, not near the best
    "User lives in Porto": [0.0, 1.0, 0.0],  # 0 from the first query
    "honey": [1.0, 0.0, 0.0],
    "pollen": [0.5, 0.0, 0.866],  # 0.5 from the bees, 0.25 from the choir, 0 from Porto
    "weather": [0.0, 0.0, 1.0],
}


def _scripted_vectors(request: RecordedRequest) -> ScriptedResponse:
    texts = request.json()["input"]
    data = [{"object": "embedding", "index": i, "embedding": _VECTORS[t]} for i, t in enumerate(texts)]
    return ScriptedResponse(200, {"object": "list", "data": data, "model": "m", "usage": {}})


async def test_recall_by_meaning_keeps_only_what_is_near(store: Any) -> None:
    """Through a real embedding API: a node comes by meaning only at MIN_RECALL_SCORE or more and
    at RELATIVE_RECALL_SCORE of the best; an unrelated one (cosine 0) never."""
    with ScriptedServer() as server:
        server.fallback("/v1/embeddings", _scripted_vectors)
        async with OpenAIEmbeddingService(
            base_url=server.url + "/v1", api_key="sk-test", model="m", dimensions=3
        ) as embeddings:
            tools = create_memory_tools(graph_adapter=store, agent_id=AGENT, embedding_service=embeddings)
            for fact in ("User keeps bees on the roof", "User sings in a choir", "User lives in Porto"):
                await _call(tools, "remember", {"fact": fact})
            honey = (await _call(tools, "recall", {"query": "honey"}))["results"]
            assert [(r["fact"], r["score"]) for r in honey] == [("User keeps bees on the roof", 1.0)]
            pollen = (await _call(tools, "recall", {"query": "pollen"}))["results"]
            assert [(r["fact"], r["score"]) for r in pollen] == [("User keeps bees on the roof", 0.5)]
            assert (await _call(tools, "recall", {"query": "weather"}))["results"] == []
    assert 0.25 < MIN_RECALL_SCORE <= 0.5 and RELATIVE_RECALL_SCORE > 0.5


async def test_scope_narrows_what_tools_see(store: Any, core: CoreFactsStore) -> None:
    ana = create_memory_tools(graph=store, agent_id=AGENT, scope={"agent_id": AGENT, "user_id": "ana"})
    bo = create_memory_tools(graph=store, agent_id=AGENT, scope={"agent_id": AGENT, "user_id": "bo"})
    shared = create_memory_tools(graph=store, agent_id=AGENT)
    await _call(ana, "remember", {"fact": "Ana's cat is Mia"})
    await _call(shared, "remember", {"fact": "The office cat is Tom"})
    assert [r["fact"] for r in (await _call(bo, "recall", {"query": "cat"}))["results"]] == ["The office cat is Tom"]
    assert sorted(r["fact"] for r in (await _call(ana, "recall", {"query": "cat"}))["results"]) == [
        "Ana's cat is Mia",
        "The office cat is Tom",
    ]
    assert (await _call(bo, "forget", {"query": "Mia"}))["forgotten"] == 0, "bo cannot forget ana's facts"
    assert (await _call(ana, "recall", {"query": "Mia"}))["results"]
    assert (await _call(bo, "recall", {"query": "cat"}))["core_facts"] == {}, "no core facts store: none"
    refused = await _call(bo, "remember", {"fact": "Bo", "is_core_fact": True, "core_fact_key": "user_name"})
    assert refused["error"].startswith("is_core_fact:")


# ----- forget ------------------------------------------------------------------------------------


async def test_forget_deletes_what_matches(tools: list[MemoryTool], store: Any, core: CoreFactsStore) -> None:
    await _call(tools, "remember", {"fact": "User's old address is 5 Rua Augusta"})
    await _call(tools, "remember", {"fact": "User's new address is 9 Rua Nova"})
    await _call(tools, "remember", {"fact": "User's dog is named Luna"})
    await _call(tools, "remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"})
    gone = await _call(tools, "forget", {"query": "old address"})
    assert gone == {"forgotten": 1, "facts": ["User's old address is 5 Rua Augusta"], "core_fact_keys": []}
    left = await _call(tools, "recall", {"query": "address"})
    assert [r["fact"] for r in left["results"]] == ["User's new address is 9 Rua Nova"]
    named = await _call(tools, "forget", {"query": "user name"})
    assert named["core_fact_keys"] == ["user_name"] and await core.get("user_name") is None
    assert [h.value for h in await core.get_history("user_name")] == ["Alex"], "the history keeps it"
    assert (await _call(tools, "forget", {"query": "nothing like this"}))["forgotten"] == 0


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("", "query: must not be empty"),
        ("   ", "query: must not be empty"),
        ("*", "query: must name what to forget"),
        ("%", "query: must name what to forget"),
        (".*", "query: must name what to forget"),
        ("everything", "query: matches everything"),
        ("  ALL  ", "query: matches everything"),
        ("all facts!", "query: matches everything"),
        ("a", "query: is too short"),
    ],
)
async def test_forget_refuses_match_everything(tools: list[MemoryTool], store: Any, query: str, problem: str) -> None:
    await _call(tools, "remember", {"fact": "User's dog is named Luna"})
    answer = await _call(tools, "forget", {"query": query})
    assert answer["error"].startswith(problem), answer
    assert len(unwrap(await store.query_nodes({"agent_id": AGENT}))) == 1, "nothing deleted"


async def test_a_broad_forget_lists_what_it_would_take_and_deletes_nothing(
    tools: list[MemoryTool], store: Any, core: CoreFactsStore
) -> None:
    """The red-team's case: forget("user") took 20 of 22 facts. Now it lists them and asks."""
    for i in range(20):
        await _call(tools, "remember", {"fact": f"User fact number {i} about topic{i}"})
    await _call(tools, "remember", {"fact": "Dog is named Luna"})
    await _call(tools, "remember", {"fact": "Alex", "is_core_fact": True, "core_fact_key": "user_name"})
    answer = await _call(tools, "forget", {"query": "user"})
    assert answer["forgotten"] == 0 and answer["facts"] == [] and answer["core_fact_keys"] == []
    broad = answer["too_broad"]
    assert (broad["matched"], broad["stored"]) == (21, 23), broad  # 22 nodes (Alex's too) and the core fact
    assert len(broad["facts"]) == 20 and "User fact number 7 about topic7" in broad["facts"]
    assert broad["core_fact_keys"] == ["user_name"]
    assert "all: true" in answer["message"] and "more precisely" in answer["message"]
    assert len(unwrap(await store.query_nodes({"agent_id": AGENT}))) == 22, "nothing deleted"
    assert await core.get("user_name") == "Alex"
    # a narrow query goes through as before
    assert (await _call(tools, "forget", {"query": "topic7"}))["forgotten"] == 1
    # told to take them all, it does
    everything = await _call(tools, "forget", {"query": "user", "all": True})
    assert everything["forgotten"] == 20 and everything["core_fact_keys"] == ["user_name"]  # 19 nodes, 1 core
    left = sorted(n.name for n in unwrap(await store.query_nodes({"agent_id": AGENT})))
    assert left == ["Alex", "Dog is named Luna"]


@pytest.mark.parametrize(
    ("stored", "matching", "broad"),
    [
        (10, BROAD_FORGET, False),  # a few of many: taken
        (10, BROAD_FORGET + 1, True),  # more than BROAD_FORGET: listed
        (4, 3, True),  # most of what is stored: listed
        (4, 2, False),  # half: taken
        (2, 2, False),  # two facts of two: taken
    ],
)
async def test_what_is_broad(tools: list[MemoryTool], store: Any, stored: int, matching: int, broad: bool) -> None:
    assert is_broad(matching, stored) is broad
    for i in range(stored):
        word = "shared" if i < matching else f"other{i}"
        await _call(tools, "remember", {"fact": f"Fact {i} {word}"})
    answer = await _call(tools, "forget", {"query": "shared"})
    assert ("too_broad" in answer) is broad, answer
    assert answer["forgotten"] == (0 if broad else matching)


async def test_forget_refuses_more_than_max_forget_even_with_all(tools: list[MemoryTool], store: Any) -> None:
    await _call(tools, "remember", {"fact": "User likes jazz"})
    unwrap(
        await store.add_nodes(
            [{"name": f"Place {i}", "type": "location", "agent_id": AGENT} for i in range(MAX_FORGET + 1)]
        )
    )
    for arguments in ({"query": "place"}, {"query": "place", "all": True}):
        many = await _call(tools, "forget", arguments)
        assert many["error"].startswith(f"query: matches {MAX_FORGET + 1} facts, more than {MAX_FORGET}")
    assert len(unwrap(await store.query_nodes({"agent_id": AGENT}))) == MAX_FORGET + 2
    assert (await _call(tools, "forget", {"query": "everything", "all": True}))["error"].startswith(
        "query: matches everything"
    ), "all: true does not lift the refusals"
    refused = await _call(tools, "forget", {"query": "jazz", "all": "yes"})
    assert refused["error"].startswith("all:"), refused


# ----- bad calls ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("remember", {}, "fact: is required"),
        ("remember", {"fact": None}, "fact: is required"),
        ("remember", {"fact": 42}, "fact: must be a string, got a number"),
        ("remember", {"fact": ["a"]}, "fact: must be a string, got an array"),
        ("remember", {"fact": "x", "is_core_fact": "yes"}, "is_core_fact: must be a boolean, got a string"),
        ("remember", {"fact": "x", "is_core_fact": True}, "core_fact_key: is required when is_core_fact is true"),
        ("remember", {"fact": "x", "is_core_fact": False, "core_fact_key": "k"}, "is_core_fact: must be true"),
        ("remember", {"fact": "x", "isCoreFact": True}, "isCoreFact: is not an argument of remember"),
        ("remember", {"fact": "x" * 10_001}, "fact: must be at most 10000 characters"),
        ("remember", {"fact": "x", "category": 3}, "category: must be a string"),
        ("remember", "{not json", "arguments: are not valid JSON"),
        ("remember", [1, 2], "arguments: must be a JSON object, got list"),
        ("recall", {"query": 3}, "query: must be a string, got a number"),
        ("recall", {"query": True}, "query: must be a string, got a boolean"),
        ("recall", {"q": "dog"}, "q: is not an argument of recall"),
        ("recall", None, "query: is required"),
        ("forget", {}, "query: is required"),
        ("fly", {}, "name: no tool is called 'fly'"),
    ],
)
async def test_bad_calls_get_an_error_the_model_reads(
    tools: list[MemoryTool], store: Any, name: str, arguments: object, error: str
) -> None:
    answer = await _call(tools, name, arguments)
    assert set(answer) == {"error"} and answer["error"].startswith(error), answer
    assert unwrap(await store.query_nodes({"agent_id": AGENT})) == [], "nothing written"


async def test_run_gives_a_tool_result(tools: list[MemoryTool]) -> None:
    ok = await tools[0].run('{"fact": "User drinks green tea", "category": "food"}')
    assert not ok.is_error and json.loads(ok.content)["fact"] == "User drinks green tea"
    bad = await tools[1].run({"query": ""})
    assert bad.is_error and json.loads(bad.content) == {"error": "query: must not be empty"}


async def test_a_store_failure_raises(store: Any, core: CoreFactsStore) -> None:
    tools = create_memory_tools(graph=store, core_facts=core, agent_id=AGENT)
    unwrap(await store.disconnect())
    with pytest.raises(NotConnectedError):
        await tools[1].call({"query": "dog"})


def test_create_memory_tools_checks_its_arguments(store: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="graph"):
        create_memory_tools(graph=object(), agent_id=AGENT)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="agent_id"):
        create_memory_tools(graph=store, agent_id="")
    with pytest.raises(InvalidArgumentError, match=r"scope\.agent_id"):
        create_memory_tools(graph=store, agent_id=AGENT, scope={"agent_id": "other"})
    with pytest.raises(InvalidArgumentError, match="core_facts"):
        create_memory_tools(graph=store, agent_id=AGENT, core_facts={})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="recall_limit"):
        create_memory_tools(graph=store, agent_id=AGENT, recall_limit=0)


async def test_recall_finds_a_question_s_words_in_other_forms_but_forget_does_not(tools: list[MemoryTool]) -> None:
    await _call(tools, "remember", {"fact": "Ana has allergies to peanuts"})
    await _call(tools, "remember", {"fact": "Ana lives in Porto"})
    asked = await _call(tools, "recall", {"query": "what is Ana allergic to?"})
    assert [r["fact"] for r in asked["results"]] == ["Ana has allergies to peanuts"]
    lived = await _call(tools, "recall", {"query": "where does Ana live now?"})
    assert [r["fact"] for r in lived["results"]] == ["Ana lives in Porto"]
    # every content word must be there in some form: a word the facts do not hold finds nothing
    assert (await _call(tools, "recall", {"query": "what is Ana's dog called?"}))["results"] == []
    assert (await _call(tools, "recall", {"query": "what?"}))["results"] == []
    # forget matches only the words as written, so a question's other forms delete nothing
    kept = await _call(tools, "forget", {"query": "allergic"})
    assert kept["forgotten"] == 0
    assert len((await _call(tools, "recall", {"query": "allergies"}))["results"]) == 1


async def test_recall_reads_other_word_forms_through_the_recall_index(store: Any) -> None:
    def made(scope: dict[str, str]) -> list[MemoryTool]:
        return create_memory_tools(graph=store, agent_id=AGENT, scope={"agent_id": AGENT, **scope})

    ana, bo = made({"user_id": "ana"}), made({"user_id": "bo"})
    elsewhere = made({"user_id": "ana", "project_id": "garden"})
    saved = await _call(ana, "remember", {"fact": "Ana has allergies to peanuts"})
    await _call(bo, "remember", {"fact": "Bo has allergies to cats"})
    await _call(elsewhere, "remember", {"fact": "Ana's roses have allergies to aphids"})
    shared = await _call(made({}), "remember", {"fact": "Allergies are written down in the kitchen"})
    asked = await _call(ana, "recall", {"query": "who is allergic?"})
    # ana's own and the agent's shared facts; not bo's, nor those of a project ana's tool is not in
    assert sorted(r["fact"] for r in asked["results"]) == [
        "Allergies are written down in the kitchen",
        "Ana has allergies to peanuts",
    ]
    # the other forms are found through the index: a fact whose record it lost is not found so
    gone = [f"graph_fact:{saved['id']}", f"graph_fact:{shared['id']}"]
    assert unwrap(await store.delete_recall_records(gone)) == 2
    assert (await _call(ana, "recall", {"query": "who is allergic?"}))["results"] == []
    # the words as written are still matched in the facts themselves
    assert [r["fact"] for r in (await _call(ana, "recall", {"query": "allergies"}))["results"]] == [
        "Allergies are written down in the kitchen",
        "Ana has allergies to peanuts",
    ]


async def test_recall_of_no_user_asks_the_index_for_the_shared_facts_alone(store: Any) -> None:
    """A tool of no user (the agent's shared memory) asks the index for the facts of no user: more
    than WORD_CANDIDATES facts of users holding the question's words take none of its candidates
    (before, they took them all, and the shared fact in other word forms was not found)."""
    from cogitator_memory.tools.memory import WORD_CANDIDATES

    for i in range(WORD_CANDIDATES + 10):
        user = create_memory_tools(graph=store, agent_id=AGENT, scope={"agent_id": AGENT, "user_id": f"u{i}"})
        await _call(user, "remember", {"fact": f"Peanut allergies {i}"})
    shared = create_memory_tools(graph=store, agent_id=AGENT)
    await _call(shared, "remember", {"fact": "The peanut allergies of our visitors are listed in the office binder"})
    asked = await _call(shared, "recall", {"query": "allergic to peanut"})
    assert [r["fact"] for r in asked["results"]] == [
        "The peanut allergies of our visitors are listed in the office binder"
    ]
