"""mem0 beside our mem0-compatible calls (``memory.mem0``): add until searchable, search, get_all.

**Both sides.** mem0 (``mem0ai`` 2.x, the ``[bench]`` extra) as its quick start makes it, offline:
its default local vector store (Qdrant in local mode, a folder of its own) and its SQLite
history, ``infer=False`` (no model is asked), dummy API keys where its constructor insists and
telemetry off. Its embedder is replaced by :class:`MiniLMEmbedder`, an adapter over the very
:class:`~cogitator_memory.embeddings.LocalEmbeddingService` object our side uses (the local
all-MiniLM-L6-v2, 384 dimensions, loaded once in this process), so both sides embed with the
same model. Ours: :class:`~cogitator_memory.runtime.Memory` on the SQLite default, through
``memory.mem0`` (:class:`~cogitator_memory.compat.Mem0Compat`).

**Texts.** The lines of the BEAM-100k messages (``benchmarks/beam.py``) of at least 40
characters, deduplicated, in order (70,854 lines, 126 characters on average: memory-sized), the
first N for N memories, one user (past 70,854, the lines again, marked " (visit 2)"). Queries:
the BEAM probing questions.

**Seeded load** (``--seeded-load``, what the 100,000 run uses): the memories are embedded
while loading by :class:`LoadEmbedder` in its seeded mode, a fast deterministic unit vector per
text (``bench_recall_index``'s ``SeededEmbedder``), on BOTH sides; the queries (and the last
memory searched for) are embedded by the local MiniLM model on both sides. Loading 100,000
memories through the model would take most of an hour per side on this machine, and the
embedding is the same work on both sides; what is compared is the stores' writes and searches.
The output says which load was used.

**Figures**, per size, both warm (the model embeds before any timing and each side answers a
few searches first). The adds take turns with the other side (the machine is shared: a load
that comes and goes falls on both); the searches and ``get_all`` calls of each side run alone,
in a loop of their own, one side after the other:

* *add until searchable*: the first N - 200 memories by ``add(messages, user_id=,
  infer=False)`` calls of 20 messages (a conversation's worth; each message is a memory), the
  sides taking turns every 200 memories, then the last 200 one per call (the sides taking
  turns every 20), then ``search`` for the last text until it returns the last memory's id;
  memories a second for each part (the wait for searchable counted in both);
* *search* p50/p95 of ``search(question, filters={"user_id": ...}, top_k=10)`` over
  ``QUERIES`` questions;
* *get_all* p50 of ``get_all(filters={"user_id": ...}, top_k=100)`` (100 is the most one page
  returns here).

Target (issue 32): ours at least 3x faster than mem0 at 100,000 memories on add-until-searchable
and search p50. Run: ``python -m benchmarks --only mem0`` (``--quick``: 500 and 2,000) or
``python -m benchmarks.bench_mem0 --sizes 2000 10000 [--seeded-load]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import Row, percentiles

SIZES = (2_000, 10_000)
QUICK_SIZES = (500, 2_000)
USER = "bench_user"
TOP_K = 10
QUERIES = 40
WARM_QUERIES = 3
GET_ALL_ROUNDS = 10
#: Seconds the last memory may take to become searchable after the last add.
SEARCHABLE_WAIT = 60.0
MIN_LINE = 40
MAX_LINE = 2_000
#: Memories one side adds before the other takes its turn.
CHUNK = 200
#: Messages in one ``add`` call while loading (a conversation's worth).
PER_CALL = 20
#: The last memories of each size, added one per call.
SINGLES = 200


def memory_texts(count: int) -> list[str]:
    """The first ``count`` distinct lines of the BEAM messages (of :data:`MIN_LINE` to
    :data:`MAX_LINE` characters); past the 70,854 there are, the lines again with " (visit 2)",
    " (visit 3)"... after them, so every text stays distinct."""
    from .beam import load_chats

    seen: set[str] = set()
    lines: list[str] = []
    for chat in load_chats():
        for message in chat.messages:
            for line in message.content.split("\n"):
                line = line.strip()
                if MIN_LINE <= len(line) <= MAX_LINE and line not in seen:
                    seen.add(line)
                    lines.append(line)
                    if len(lines) == count:
                        return lines
    out = list(lines)
    visit = 2
    while len(out) < count:
        out.extend(f"{line} (visit {visit})" for line in lines[: count - len(out)])
        visit += 1
    return out


def questions() -> list[str]:
    """The BEAM probing questions, in order."""
    from .beam import load_chats

    return [q.question for chat in load_chats() for q in chat.questions]


def seeded_vectors(texts: Sequence[str], dimensions: int) -> list[list[float]]:
    """A deterministic unit vector per text, seeded by its hash (``bench_recall_index``'s
    ``SeededEmbedder``): the fast embedder of a seeded load."""
    import numpy as np

    out = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)
        out.append((vector / np.linalg.norm(vector)).tolist())
    return out


def load_embedder_class() -> Any:
    """:class:`LoadEmbedder`, made when first asked (the package is imported lazily)."""
    from cogitator_memory.embeddings.base import BaseEmbeddingService

    class LoadEmbedder(BaseEmbeddingService):
        """The local MiniLM model, or while ``seeded`` is set, :func:`seeded_vectors` (the
        seeded load); both sides embed through one of these."""

        provider = "local"

        def __init__(self, model: Any) -> None:
            super().__init__(dimensions=model.dimensions, batch_size=256)
            self.model_service = model
            self.model = model.model
            self.seeded = False

        def vectors(self, texts: Sequence[str]) -> list[list[float]]:
            """The vectors of ``texts`` in the calling thread (mem0's side)."""
            if self.seeded:
                return seeded_vectors(texts, self.dimensions)
            vectors: list[list[float]] = self.model_service._encode(list(texts))
            return vectors

        async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
            if self.seeded:
                return seeded_vectors(texts, self.dimensions)
            vectors: list[list[float]] = await self.model_service._embed_chunk(texts)
            return vectors

    return LoadEmbedder


class MiniLMEmbedder:
    """mem0's embedder interface (``embed(text, memory_action)``, ``embed_batch``) over the
    ``LoadEmbedder`` our side uses (the local MiniLM model, or the seeded vectors while loading),
    run in the calling thread."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.config = type("Config", (), {"embedding_dims": service.dimensions, "model": service.model})()

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.service.vectors([text])[0]  # type: ignore[no-any-return]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return self.service.vectors(list(texts))  # type: ignore[no-any-return]


def make_mem0(folder: Path, service: Any) -> Any:
    """mem0's ``Memory`` offline in ``folder``, embedding with ``service``."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(folder / "mem0-home"))
    try:
        from mem0 import Memory as Mem0Memory
    except ImportError:
        raise SystemExit('bench_mem0 needs mem0ai: pip install "cogitator-memory[bench]"') from None
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "bench", "path": str(folder / "qdrant"), "embedding_model_dims": 384},
        },
        "embedder": {"provider": "openai", "config": {"api_key": "sk-offline", "embedding_dims": 384}},
        "llm": {"provider": "openai", "config": {"api_key": "sk-offline"}},
        "history_db_path": str(folder / "history.db"),
    }
    memory = Mem0Memory.from_config(config)
    memory.embedding_model = MiniLMEmbedder(service)
    return memory


class Mem0Side:
    """mem0's calls, timed (synchronous: nothing else runs while one is timed)."""

    def __init__(self, folder: Path, service: Any) -> None:
        self.memory = make_mem0(folder, service)
        self.filters = {"user_id": USER}

    async def add(self, texts: list[str]) -> str:
        messages = [{"role": "user", "content": text} for text in texts]
        memory_id: str = self.memory.add(messages, user_id=USER, infer=False)["results"][-1]["id"]
        return memory_id

    async def search(self, query: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.memory.search(query, filters=self.filters, top_k=TOP_K)["results"]
        return found

    async def get_all(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.memory.get_all(filters=self.filters, top_k=100)["results"]
        return listed

    async def close(self) -> None:
        self.memory.close()


class OursSide:
    """Our mem0-compatible calls (``memory.mem0``) on the SQLite default, timed."""

    def __init__(self, folder: Path, service: Any) -> None:
        from cogitator_memory.runtime import Memory

        self.memory = Memory({"adapter": "sqlite", "path": str(folder / "memory.db")}, embedding_service=service)
        self.filters = {"user_id": USER}

    async def open(self) -> None:
        await self.memory.connect()
        await self.memory.mem0.add("warming up the store", user_id="warm_user", infer=False)

    async def add(self, texts: list[str]) -> str:
        messages = [{"role": "user", "content": text} for text in texts]
        memory_id: str = (await self.memory.mem0.add(messages, user_id=USER, infer=False))["results"][-1]["id"]
        return memory_id

    async def search(self, query: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await self.memory.mem0.search(query, filters=self.filters, top_k=TOP_K))[
            "results"
        ]
        return found

    async def get_all(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = (await self.memory.mem0.get_all(filters=self.filters, top_k=100))["results"]
        return listed

    async def close(self) -> None:
        await self.memory.close()


Side = Mem0Side | OursSide


async def _timed(call: Any) -> tuple[float, Any]:
    at = time.perf_counter()
    value = await call
    return time.perf_counter() - at, value


async def _until_searchable(side: Side, text: str, wanted: str) -> tuple[float, bool]:
    at = time.perf_counter()
    while time.perf_counter() - at < SEARCHABLE_WAIT:
        if any(r["id"] == wanted for r in await side.search(text)):
            return time.perf_counter() - at, True
        await asyncio.sleep(0.01)
    return time.perf_counter() - at, False


async def measure_size(
    folder: Path, service: Any, texts: list[str], queries: list[str], *, seeded: bool = False
) -> dict[str, dict[str, Any]]:
    """Both sides' figures at one size. The machine is shared, so the sides take turns (never
    at once): the adds in chunks of :data:`CHUNK`, one side's chunk then the other's; then each
    side's searches and ``get_all`` calls in a loop of its own. With ``seeded`` the memories are
    embedded by the seeded vectors (``service.seeded``), the queries by the model."""
    sides: dict[str, Side] = {"mem0": Mem0Side(folder / "mem0", service), "ours": OursSide(folder, service)}
    ours = sides["ours"]
    assert isinstance(ours, OursSide)
    await ours.open()
    out: dict[str, dict[str, Any]] = {
        name: {"add_seconds": 0.0, "single_seconds": 0.0, "search": [], "get_all": []} for name in sides
    }
    bulk, single = texts[: len(texts) - SINGLES], texts[len(texts) - SINGLES :]
    try:
        for query in queries[:WARM_QUERIES]:
            for side in sides.values():
                await side.search(query)
        last: dict[str, str] = {}
        service.seeded = seeded
        for start in range(0, len(bulk), CHUNK):
            for name, side in sides.items():
                at = time.perf_counter()
                for first in range(start, min(start + CHUNK, len(bulk)), PER_CALL):
                    last[name] = await side.add(bulk[first : min(first + PER_CALL, start + CHUNK, len(bulk))])
                out[name]["add_seconds"] += time.perf_counter() - at
        for start in range(0, len(single), PER_CALL):
            for name, side in sides.items():
                at = time.perf_counter()
                for text in single[start : start + PER_CALL]:
                    last[name] = await side.add([text])
                out[name]["single_seconds"] += time.perf_counter() - at
        service.seeded = False  # the queries are embedded by the model
        for name, side in sides.items():
            waited, found = await _until_searchable(side, texts[-1], last[name])
            out[name]["add_seconds"] += waited
            out[name]["single_seconds"] += waited
            out[name]["searchable"] = found
        for name, side in sides.items():  # each side alone in its loop, warm
            for query in queries[:WARM_QUERIES]:
                await side.search(query)
            for query in queries[:QUERIES]:
                took, _ = await _timed(side.search(query))
                out[name]["search"].append(took)
            for _ in range(GET_ALL_ROUNDS):
                took, page = await _timed(side.get_all())
                assert len(page) == min(100, len(texts)), (name, len(page))
                out[name]["get_all"].append(took)
    finally:
        for side in sides.values():
            await side.close()
    return out


def rows_for(size: int, mem0: dict[str, Any], ours: dict[str, Any], *, seeded: bool = False) -> list[Row]:
    """The rows of one size: ours beside mem0 (the baseline)."""
    group = f"mem0 {size:,}" + (" (seeded load)" if seeded else "")
    out: list[Row] = []
    bulk = size - SINGLES
    ours_rate, mem0_rate = bulk / ours["add_seconds"], bulk / mem0["add_seconds"]
    found = {"ours_searchable": ours["searchable"], "mem0_searchable": mem0["searchable"]}
    out.append(
        Row(
            group,
            f"add until searchable ({PER_CALL} a call)",
            ours_rate,
            "memories/s",
            mem0_rate,
            "mem0",
            ours_rate / mem0_rate,
            ">= 3x mem0 at 100k",
            extra=found,
        )
    )
    ours_one, mem0_one = SINGLES / ours["single_seconds"], SINGLES / mem0["single_seconds"]
    out.append(
        Row(group, "add until searchable (1 a call)", ours_one, "memories/s", mem0_one, "mem0", ours_one / mem0_one)
    )
    ours_p50, ours_p95 = percentiles(ours["search"])
    mem0_p50, mem0_p95 = percentiles(mem0["search"])
    out.append(
        Row(
            group,
            "search p50",
            ours_p50 * 1000,
            "ms",
            mem0_p50 * 1000,
            "mem0",
            mem0_p50 / ours_p50,
            "mem0/ours >= 3 at 100k",
        )
    )
    out.append(Row(group, "search p95", ours_p95 * 1000, "ms", mem0_p95 * 1000, "mem0", mem0_p95 / ours_p95))
    ours_list, _ = percentiles(ours["get_all"])
    mem0_list, _ = percentiles(mem0["get_all"])
    out.append(
        Row(group, "get_all(top_k=100) p50", ours_list * 1000, "ms", mem0_list * 1000, "mem0", mem0_list / ours_list)
    )
    return out


async def measure(sizes: Sequence[int], *, seeded: bool = False) -> list[Row]:
    """Both sides at each size, in fresh folders (``seeded``: a seeded load, see the module docs)."""
    from cogitator_memory.embeddings import LocalEmbeddingService

    service = load_embedder_class()(LocalEmbeddingService())
    await service.embed_batch(["load the model before any timing"])
    load = "seeded vectors on both sides" if seeded else "the MiniLM model on both sides"
    print(f"[mem0] memories embedded while loading by {load}; queries by the MiniLM model on both sides")
    queries = questions()
    rows: list[Row] = []
    for size in sizes:
        texts = memory_texts(size)
        folder = Path(tempfile.mkdtemp(prefix=f"bench-mem0-{size}-"))
        try:
            measured = await measure_size(folder, service, texts, queries, seeded=seeded)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        made = rows_for(size, measured["mem0"], measured["ours"], seeded=seeded)
        for row in made:
            ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
            print(
                f"[mem0] {row.group} {row.name}: ours {row.value:,.2f} {row.unit}, mem0 {row.baseline:,.2f} ({ratio})"
            )
        rows.extend(made)
    return rows


async def run(quick: bool) -> list[Row]:
    """The runner's entry (``python -m benchmarks --only mem0``)."""
    return await measure(QUICK_SIZES if quick else SIZES)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_mem0")
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument(
        "--seeded-load", action="store_true", help="embed the memories loaded by seeded vectors on both sides"
    )
    args = parser.parse_args()
    asyncio.run(measure(args.sizes, seeded=args.seeded_load))


if __name__ == "__main__":
    main()
