"""Graph extraction's own cost: ``GraphExtractor.extract`` of one message, the model's time left out.

Each of ``MESSAGES`` user messages says ``"<Person> lives in <City>. <City> is part of <Region>."``
(200 people, 40 cities, 8 regions, so later messages name nodes already stored). The model is an
in-process ``SummarizeFn`` that reads the message block it is sent and answers at once with the
three entities and two relations, quoting the message, plus one entity whose quote no message
holds (which the extractor must leave out). Its own time is measured around each call and
subtracted, so the figure is the extractor's: rendering the window, reading the answer, checking
the quotes, looking up the nodes it names and writing.

Baseline, in the same run and alternating message by message with the extractor on a store of the
same engine: writing the same nodes and edges straight through the graph calls a caller would use
without a model (``get_node_by_name`` for each name, ``add_nodes``, ``add_edges``). ``own`` is the
extractor's time less that. The inference pass over the resulting graph is timed too.

Run: ``python -m benchmarks --only graph_extract``.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.graph import GraphExtractor, run_inference
from cogitator_memory.models import SummarizeOptions
from cogitator_memory.threads.records import Message

from .common import Row, percentiles

AGENT = "bench"
SCOPE = {"agent_id": AGENT, "user_id": "u"}
BLOCK = re.compile(r'<message number="1"[^>]*>\n(.*?)\n</message>', re.S)
SAID = re.compile(r"(\w+) lives in (\w+)\. (\w+) is part of (\w+)\.")


def message(i: int) -> str:
    city = f"City{i % 40}"
    return f"Person{i} lives in {city}. {city} is part of Region{i % 8}."


class Model:
    """The benchmark's model: answers from the message at once, timing itself."""

    def __init__(self) -> None:
        self.seconds = 0.0

    async def __call__(self, messages: Sequence[Message], options: SummarizeOptions) -> str:
        start = time.perf_counter()
        content = messages[0].content
        assert isinstance(content, str)
        match = BLOCK.search(content)
        assert match is not None
        text = match.group(1)
        found = SAID.match(text)
        assert found is not None
        person, city, _, region = found.groups()

        def q(words: str) -> list[dict[str, Any]]:
            return [{"message": 1, "quote": words}]

        answer = json.dumps(
            [
                {"entity": person, "type": "person", "quotes": q(person)},
                {"entity": city, "type": "location", "quotes": q(city)},
                {"entity": region, "type": "location", "quotes": q(f"part of {region}")},
                {"entity": "Atlantis", "type": "location", "quotes": q("Atlantis")},  # made up
                {"relation": "located_in", "source": person, "target": city, "quotes": q(f"{person} lives in {city}")},
                {"relation": "part_of", "source": city, "target": region, "quotes": q(f"{city} is part of {region}")},
            ]
        )
        self.seconds += time.perf_counter() - start
        return answer


async def direct_write(store: Any, entry: Any) -> None:
    """The baseline: the same nodes and edges, with the same quotes, written without a model: names
    looked up, a stored node or edge given the new quote, the others added."""
    text = entry.message.content
    found = SAID.match(text)
    assert found is not None
    person, city, _, region = found.groups()

    def quote(words: str) -> list[dict[str, Any]]:
        return [{"entry_id": entry.id, "thread_id": entry.thread_id, "quote": words}]

    ids: dict[str, str] = {}
    new: list[dict[str, Any]] = []
    for name, kind, words in (
        (person, "person", person),
        (city, "location", city),
        (region, "location", f"part of {region}"),
    ):
        node = unwrap(await store.get_node_by_name(AGENT, name))
        if node is None:
            new.append({"name": name, "type": kind, "scope": SCOPE, "evidence": quote(words)})
            continue
        ids[name] = node.id
        evidence = [*(e.model_dump() for e in node.evidence), *quote(words)]
        unwrap(await store.update_node(node.id, {"evidence": evidence}))
    for node in unwrap(await store.add_nodes(new)):
        ids[node.name] = node.id
    edges = []
    for source, kind, target, words in (
        (person, "located_in", city, f"{person} lives in {city}"),
        (city, "part_of", region, f"{city} is part of {region}"),
    ):
        stored = unwrap(
            await store.query_edges({"agent_id": AGENT, "between": [ids[source], ids[target]], "types": [kind]})
        )
        if stored:
            evidence = [*(e.model_dump() for e in stored[0].evidence), *quote(words)]
            unwrap(await store.update_edge(stored[0].id, {"evidence": evidence}))
        else:
            edges.append(
                {
                    "source_id": ids[source],
                    "target_id": ids[target],
                    "type": kind,
                    "scope": SCOPE,
                    "evidence": quote(words),
                }
            )
    unwrap(await store.add_edges(edges))


async def _engine(name: str, make: Any, count: int) -> list[Row]:
    model = Model()
    ours: list[float] = []
    base: list[float] = []
    async with make("a") as store, make("b") as plain:
        thread = unwrap(await store.create_thread(AGENT, {"user_id": "u"}))
        other = unwrap(await plain.create_thread(AGENT, {"user_id": "u"}))
        extractor = GraphExtractor(graph=store, summarize=model)
        for i in range(count):
            text = message(i)
            entry = unwrap(
                await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": text}})
            )
            before = model.seconds
            start = time.perf_counter()
            report = await extractor.extract([entry], scope=SCOPE)
            ours.append(time.perf_counter() - start - (model.seconds - before))
            window = report.windows[0]
            assert window.unverified == 1 and window.edges_added + window.edges_updated == 2
            said = unwrap(await plain.add_entry({"thread_id": other.id, "message": {"role": "user", "content": text}}))
            start = time.perf_counter()
            await direct_write(plain, said)
            base.append(time.perf_counter() - start)
        start = time.perf_counter()
        inferred = await run_inference(store, AGENT)
        infer_s = time.perf_counter() - start
        stats = unwrap(await store.get_graph_stats(AGENT))
    p50, p95 = percentiles(ours)
    b50, b95 = percentiles(base)
    own = [o - b for o, b in zip(ours, base, strict=True)]
    return [
        Row(
            "graph_extract",
            f"{name} extract one message, model excluded, p50 ms",
            p50 * 1e3,
            "ms",
            b50 * 1e3,
            "same nodes and edges written by the graph calls, no model",
            p50 / b50,
            None,
            None,
            {
                "p95_ms": p95 * 1e3,
                "baseline_p95_ms": b95 * 1e3,
                "own_p50_ms": percentiles(own)[0] * 1e3,
                "messages": count,
            },
        ),
        Row(
            "graph_extract",
            f"{name} inference pass over {stats.edge_count - len(inferred.added)} stated edges, ms",
            infer_s * 1e3,
            "ms",
            extra={"inferred_added": len(inferred.added), "complete": inferred.complete},
        ),
    ]


async def run(quick: bool) -> list[Row]:
    count = 40 if quick else 200
    rows = await _engine("memory", lambda _: InMemoryAdapter(), count)
    with tempfile.TemporaryDirectory() as folder:
        rows += await _engine("sqlite", lambda tag: SQLiteAdapter(path=str(Path(folder) / f"{tag}.db")), count)
    return rows


if __name__ == "__main__":
    import asyncio

    for row in asyncio.run(run(quick=False)):
        print(row.name, f"{row.value:.3f}", row.baseline, row.extra)
