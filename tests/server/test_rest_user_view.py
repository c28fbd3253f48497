"""The user view's routes over a real SQLite memory (hashing embeddings, the graph and files on):
what memory believes about a user (``GET /api/users/{user_id}``), every state of a scope's slots
(``GET /api/items/states``), and the forget plan (``POST /api/forget/preview``) that names
everything the cascade then takes. Ada's view never holds Bob's memory, and forgetting her
leaves him whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from user_view_seed import config, seed

from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.rest import create_app

TOKEN = "a-user-view-test-token-0123"


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory(config(tmp_path)) as opened:
        yield opened


def _client(memory: Memory, token: str | None = TOKEN) -> httpx.AsyncClient:
    app = create_app(memory, token=TOKEN)
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", headers=headers)


def _slot(slots: list[dict[str, Any]], attribute: str) -> dict[str, Any]:
    found = [s for s in slots if s["attribute"] == attribute]
    assert len(found) == 1, [s["attribute"] for s in slots]
    return found[0]


async def test_the_user_view_shows_beliefs_with_quotes_and_what_they_replaced(memory: Memory) -> None:
    seeded = await seed(memory)
    async with _client(memory) as client:
        answer = await client.get("/api/users/ada")
        assert answer.status_code == 200, answer.text
        view = answer.json()
    assert view["user_id"] == "ada"
    assert [t["id"] for t in view["threads"]] == [seeded["thread"]] and view["threads"][0]["owned"]
    # Core facts: city moved from Lisbon to Porto; the history keeps Lisbon, marked and closed.
    city = _slot(view["core_facts"]["slots"], "core:city")
    assert [(s["item"]["value"], s["item"]["status"], s["held_now"]) for s in city["states"]] == [
        ("Porto", "active", True),
        ("Lisbon", "superseded", False),
    ]
    assert city["states"][1]["replaced_by"] == {"id": city["states"][0]["item"]["id"], "value": "Porto"}
    assert city["states"][1]["core_key"] == "city"
    # Memory items: the value held now with its quote, and the one it replaced with its interval.
    (agent,) = view["agents"]
    assert agent["agent_id"] == memory.agent_id
    lives = _slot(agent["items"]["slots"], "lives in")
    assert lives["held_now"] and not lives["shared"]
    porto, lisbon = lives["states"]
    assert porto["item"]["id"] == seeded["porto"] and porto["held_now"]
    assert porto["item"]["evidence"][0] == {
        "entry_id": seeded["ids"][2],
        "thread_id": seeded["thread"],
        "quote": "I moved to Porto last June",
    }
    assert lisbon["item"]["id"] == seeded["lisbon"] and lisbon["item"]["status"] == "superseded"
    assert not lisbon["held_now"]
    assert lisbon["item"]["valid_from"] == "2024-01-01T00:00:00Z"
    assert lisbon["item"]["valid_to"] == "2025-06-01T00:00:00Z"
    assert lisbon["replaced_by"] == {"id": seeded["porto"], "value": "Porto"}
    assert lisbon["item"]["evidence"][0]["entry_id"] == seeded["ids"][0]
    # The graph: the fact remember saved, the entities and the relation, with their quotes.
    graph = agent["graph"]
    assert [n["name"] for n in graph["facts"]] == ["Ada is allergic to peanuts"]
    assert sorted(n["name"] for n in graph["entities"]) == ["Maria", "Porto"]
    assert all("embedding" not in n for n in graph["facts"] + graph["entities"])
    (relation,) = graph["relations"]
    assert (relation["source"], relation["target"], relation["edge"]["id"]) == ("Maria", "Porto", seeded["edge"])
    assert relation["edge"]["evidence"][0]["entry_id"] == seeded["ids"][2]


async def test_a_users_view_holds_nothing_of_another_user_and_needs_the_token(memory: Memory) -> None:
    seeded = await seed(memory)
    async with _client(memory) as client:
        ada = (await client.get("/api/users/ada")).json()
        bob = (await client.get("/api/users/bob")).json()
        states = (await client.get("/api/items/states", params={"user_id": "ada"})).json()
    ada_text, bob_text = json.dumps(ada), json.dumps(bob)
    for other in ("Berlin", "cello", seeded["bob_thread"], seeded["bob_item"], '"bob"'):
        assert other not in ada_text and other not in json.dumps(states)
    for other in ("Lisbon", "Porto", "peanuts", seeded["thread"], '"ada"'):
        assert other not in bob_text
    assert [s["states"][0]["item"]["value"] for s in bob["core_facts"]["slots"]] == ["Berlin"]
    # The agent's shared memory shows in both, marked shared.
    for view in (ada, bob):
        office = _slot(view["agents"][0]["items"]["slots"], "opens at")
        assert office["shared"] and office["states"][0]["item"]["id"] == seeded["shared"]
    # Someone memory holds nothing about: an empty view, not an error.
    async with _client(memory) as client:
        nobody = (await client.get("/api/users/nobody")).json()
    assert nobody["threads"] == [] and nobody["core_facts"]["slots"] == []
    assert [s["attribute"] for s in nobody["agents"][0]["items"]["slots"]] == ["opens at"]
    assert nobody["agents"][0]["graph"]["facts"] == []
    # The token: asked of the new routes as of every other.
    async with _client(memory, token=None) as client:
        for path in ("/api/users/ada", "/api/items/states"):
            refused = await client.get(path)
            assert refused.status_code == 401 and refused.json()["error_class"] == "Unauthorized"
        assert (await client.post("/api/forget/preview", json={"user_id": "ada"})).status_code == 401
    # The context box's call, for Ada, in Bob's thread: refused (one rule for reading a thread).
    async with _client(memory) as client:
        crossed = await client.post("/api/context", json={"thread_id": seeded["bob_thread"], "user_id": "ada"})
    assert crossed.status_code == 400 and crossed.json()["error_class"] == "InvalidArgumentError"


async def test_the_slot_states_show_superseded_values_that_the_items_read_leaves_out(memory: Memory) -> None:
    seeded = await seed(memory)
    async with _client(memory) as client:
        held = (await client.get("/api/items", params={"user_id": "ada", "status": "all"})).json()["items"]
        states = (await client.get("/api/items/states", params={"user_id": "ada"})).json()
    # As of now a slot holds one value: "all statuses" never shows the Lisbon that Porto replaced.
    assert seeded["lisbon"] not in {i["id"] for i in held}
    lives = _slot(states["slots"], "lives in")
    assert [(s["item"]["value"], s["item"]["status"]) for s in lives["states"]] == [
        ("Porto", "active"),
        ("Lisbon", "superseded"),
    ]
    assert states["truncated"] is False
    # A stale item shows too, marked, with why.
    async with _client(memory) as client:
        marked = await client.post("/api/items/stale", json={"ids": [seeded["porto"]], "because": "moved again"})
        assert marked.status_code == 200
        states = (await client.get("/api/items/states", params={"user_id": "ada"})).json()
    lives = _slot(states["slots"], "lives in")
    porto = next(s for s in lives["states"] if s["item"]["id"] == seeded["porto"])
    assert porto["item"]["status"] == "stale" and not porto["held_now"]
    assert porto["item"]["metadata"]["stale_because"]["reason"] == "moved again"


async def test_the_forget_plan_names_everything_the_forget_then_takes(memory: Memory) -> None:
    seeded = await seed(memory)
    async with _client(memory) as client:
        answer = await client.post("/api/forget/preview", json={"user_id": "ada"})
        assert answer.status_code == 200, answer.text
        plan = answer.json()
        bob_before = (await client.get("/api/users/bob")).json()
        done = (await client.post("/api/forget", json={"user_id": "ada"})).json()["counts"]
        after = (await client.get("/api/users/ada")).json()
        bob_after = (await client.get("/api/users/bob")).json()
    counts = plan["counts"]
    assert plan["threads"] == [seeded["thread"]]
    assert {r["id"] for r in plan["items"]} == {seeded["lisbon"], seeded["porto"]}
    assert sorted((r["core_key"], r["value"]) for r in plan["core_facts"]) == [
        ("city", "Lisbon"),
        ("city", "Porto"),
        ("name", "Ada"),
    ]
    assert {n["name"] for n in plan["graph_nodes"]} == {"Ada is allergic to peanuts", "Maria", "Porto"}
    assert [e["id"] for e in plan["graph_edges"]] == [seeded["edge"]]
    assert [f["path"] for f in plan["files"]] == ["/memories/ada.md"]
    assert counts["vectors"] >= 4 and plan["recall_index"] is True
    plan_text = json.dumps(plan)
    assert "Berlin" not in plan_text and "cello" not in plan_text and "bob.md" not in plan_text
    # The plan's counts are what the cascade then did.
    assert counts["threads"] == done["threads"] == 1
    assert counts["entries"] == done["entries"]["deleted"] == 4
    assert (
        counts["items"] + counts["core_facts"] + counts["facts"] == done["items"]["purged"] + done["facts"]["deleted"]
    )
    assert counts["items_trimmed"] == done["items"]["trimmed"]
    assert (counts["graph_nodes"], counts["graph_edges"]) == (done["graph"]["nodes"], done["graph"]["edges"])
    assert counts["entities"] == done["entities"]
    assert counts["vectors"] == done["vectors"]
    assert (counts["file_versions"], counts["files"]) == (done["file_versions"], done["files"])
    # Nothing of Ada is left to show; Bob's view is as it was.
    assert seeded["shared"] not in plan_text
    assert after["threads"] == [] and after["core_facts"]["slots"] == []
    assert [s["attribute"] for s in after["agents"][0]["items"]["slots"]] == ["opens at"]  # shared: kept
    assert after["agents"][0]["graph"]["entities"] == [] and after["agents"][0]["graph"]["facts"] == []
    assert bob_after == bob_before


@pytest.mark.parametrize("engine", ["memory", "postgres", "redis", "mongodb"])
async def test_on_every_engine_the_view_shows_lisbon_and_the_plan_counts_what_the_forget_takes(
    tmp_path: Path, engine: str
) -> None:
    async with Memory(config(tmp_path, engine)) as memory:
        seeded = await seed(memory)
        async with _client(memory) as client:
            view = (await client.get("/api/users/ada")).json()
            plan = (await client.post("/api/forget/preview", json={"user_id": "ada"})).json()
            done = (await client.post("/api/forget", json={"user_id": "ada"})).json()["counts"]
            after = (await client.get("/api/users/ada")).json()
            bob = (await client.get("/api/users/bob")).json()
    lives = _slot(view["agents"][0]["items"]["slots"], "lives in")
    assert [(s["item"]["id"], s["held_now"]) for s in lives["states"]] == [
        (seeded["porto"], True),
        (seeded["lisbon"], False),
    ]
    assert lives["states"][1]["replaced_by"]["value"] == "Porto"
    counts = plan["counts"]
    assert counts["items"] == 2 and counts["core_facts"] == 3 and counts["files"] == 1
    assert (
        counts["items"] + counts["core_facts"] + counts["facts"] == done["items"]["purged"] + done["facts"]["deleted"]
    )
    assert (counts["threads"], counts["entries"]) == (done["threads"], done["entries"]["deleted"]) == (1, 4)
    assert (counts["graph_nodes"], counts["graph_edges"]) == (done["graph"]["nodes"], done["graph"]["edges"])
    assert counts["graph_nodes"] == (3 if memory.graph is not None else 0)
    assert counts["vectors"] == done["vectors"] and counts["vectors"] >= 4
    assert (counts["file_versions"], counts["files"]) == (done["file_versions"], done["files"])
    assert after["threads"] == [] and after["core_facts"]["slots"] == []
    assert [s["attribute"] for s in after["agents"][0]["items"]["slots"]] == ["opens at"]
    assert [s["states"][0]["item"]["value"] for s in bob["core_facts"]["slots"]] == ["Berlin"]


async def test_the_plan_of_an_entry_names_the_memory_standing_on_it(memory: Memory) -> None:
    seeded = await seed(memory)
    first = seeded["ids"][0]  # "I live in Lisbon." and its reply: Lisbon stands only on it
    async with _client(memory) as client:
        plan = (await client.post("/api/forget/preview", json={"entry_ids": [first]})).json()
        done = (await client.post("/api/forget", json={"entry_ids": [first]})).json()["counts"]
    assert plan["entries"] == {seeded["thread"]: sorted(seeded["ids"][:2])}
    assert [(r["id"], r["action"]) for r in plan["items"]] == [(seeded["lisbon"], "delete")]
    assert plan["graph_nodes"] == [] and plan["core_facts"] == [] and plan["threads"] == []
    assert plan["recall_index"] is False
    assert plan["counts"]["items"] == done["items"]["purged"] == 1
    assert plan["counts"]["vectors"] == done["vectors"]
    assert plan["counts"]["entries"] == done["entries"]["deleted"] == 2


async def test_the_plan_of_a_thread_names_what_stands_on_it(memory: Memory) -> None:
    seeded = await seed(memory)
    async with _client(memory) as client:
        plan = (await client.post("/api/forget/preview", json={"thread_id": seeded["thread"]})).json()
        done = (await client.post("/api/forget", json={"thread_id": seeded["thread"]})).json()["counts"]
    assert plan["threads"] == [seeded["thread"]] and plan["recall_index"] is False
    # Lisbon and Porto stand only on the thread's entries; the core facts and remember's fact do not.
    assert {r["id"] for r in plan["items"]} == {seeded["lisbon"], seeded["porto"]}
    assert plan["core_facts"] == [] and plan["facts"] == []
    assert {n["id"] for n in plan["graph_nodes"]} == {seeded["maria"], seeded["porto_node"]}
    assert [e["id"] for e in plan["graph_edges"]] == [seeded["edge"]]
    counts = plan["counts"]
    assert (counts["threads"], counts["entries"]) == (done["threads"], done["entries"]["deleted"])
    assert counts["items"] == done["items"]["purged"] == 2
    assert (counts["graph_nodes"], counts["graph_edges"]) == (done["graph"]["nodes"], done["graph"]["edges"]) == (2, 1)
    assert counts["vectors"] == done["vectors"]
    assert (counts["file_versions"], counts["files"]) == (done["file_versions"], done["files"]) == (0, 0)


@pytest.mark.parametrize(
    ("method", "path", "body", "named"),
    [
        ("GET", "/api/users/%01ada", None, "user_id"),
        ("GET", "/api/users/" + "u" * 300, None, "user_id"),
        ("GET", "/api/users/ada?limit=0", None, "limit"),
        ("GET", "/api/users/ada?agent_id=%07", None, "agent_id"),
        ("GET", "/api/items/states?thread_id=%01", None, "scope"),
        ("GET", "/api/items/states?limit=abc", None, "limit"),
        ("POST", "/api/forget/preview", {}, "exactly one"),
        ("POST", "/api/forget/preview", {"user_id": "ada", "thread_id": "t"}, "exactly one"),
        ("POST", "/api/forget/preview", {"user": "ada"}, "user"),
        ("POST", "/api/forget/preview", {"entry_ids": []}, "entry_ids"),
        ("POST", "/api/forget/preview", {"user_id": "a\x01b"}, "user_id"),
    ],
)
async def test_bad_input_is_a_400_naming_what_was_wrong(
    memory: Memory, method: str, path: str, body: Any, named: str
) -> None:
    async with _client(memory) as client:
        answer = await client.request(method, path, json=body)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["error_class"] == "InvalidArgumentError"
    assert named in problem["detail"], problem["detail"]
