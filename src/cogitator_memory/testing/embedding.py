"""Conformance cases of embedding stores: run them on your own :class:`EmbeddingAdapter`.

:func:`embedding_adapter_conformance_cases` returns named cases; each ``await case.run(store)``
takes a fresh, connected, empty store whose vectors have **8 dimensions** (configured with
``dimensions=8``, or without a size so that it learns 8 from the first vector). A store's test
file runs them all::

    CASES = embedding_adapter_conformance_cases()

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
    async def test_conformance(case, store):
        await case.run(store)

Vectors come from :func:`axis_vector`, :func:`blend` and :func:`seeded_vector`, so every
cosine the cases expect is known. Returned vectors are compared by direction (a store may keep
float32 values or unit-length vectors, as Qdrant does).
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError, InvalidArgumentError
from ..index.records import NO_USER
from ..result import MemoryResult
from ..threads.values import MAX_JSON_DEPTH
from ..vectors.base import EmbeddingAdapter, nearest_ids
from ..vectors.records import MAX_CONTENT_CHARS, Embedding, EmbeddingFilter, NewEmbedding, ScoredEmbedding

#: The vector size every case uses.
CONFORMANCE_DIMENSIONS = 8


def axis_vector(axis: int, dims: int = CONFORMANCE_DIMENSIONS, scale: float = 1.0) -> list[float]:
    """The vector ``scale`` along ``axis`` and 0 elsewhere."""
    vec = [0.0] * dims
    vec[axis] = scale
    return vec


def blend(weights: dict[int, float], dims: int = CONFORMANCE_DIMENSIONS) -> list[float]:
    """A vector with the given value on each axis (``{0: 1, 1: 1}`` is 45 degrees from axes 0 and 1)."""
    vec = [0.0] * dims
    for axis, value in weights.items():
        vec[axis] = float(value)
    return vec


def seeded_vector(seed: int, dims: int = CONFORMANCE_DIMENSIONS) -> list[float]:
    """A deterministic pseudo-random vector whose values are exact in float32 (multiples of 1/256)."""
    rng = random.Random(seed)
    vec = [round(rng.gauss(0.0, 1.0) * 256) / 256 for _ in range(dims)]
    if not any(vec):
        vec[0] = 1.0
    return vec


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors, in pure Python."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@dataclass(frozen=True)
class EmbeddingConformanceCase:
    """One named check of the embedding contract."""

    name: str
    check: Callable[[EmbeddingAdapter], Awaitable[None]]

    async def run(self, store: EmbeddingAdapter) -> None:
        """Run the case on a fresh, connected, empty store of 8 dimensions."""
        await self.check(store)


# --- helpers -----------------------------------------------------------------------------


def _ok(result: MemoryResult[Any], what: str) -> Any:
    assert result.success, f"{what} failed: {result.error}"
    return result.data


def _failed(result: MemoryResult[Any], what: str, *needles: str) -> str:
    assert not result.success, f"{what} should have failed, got {result.data!r}"
    message = result.error or ""
    for needle in needles:
        assert needle in message, f"{what}: the error {message!r} should name {needle!r}"
    return message


def _new(
    content: str = "text",
    vector: list[float] | None = None,
    *,
    source_id: str = "src-1",
    source_type: str = "document",
    metadata: dict[str, Any] | None = None,
    id: str | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "source_id": source_id,
        "source_type": source_type,
        "content": content,
        "vector": vector if vector is not None else axis_vector(0),
    }
    if metadata is not None:
        item["metadata"] = metadata
    if id is not None:
        item["id"] = id
    return item


async def _add(store: EmbeddingAdapter, *items: dict[str, Any]) -> list[Embedding]:
    return list(_ok(await store.add_embeddings(list(items)), "add_embeddings"))


async def _ids(result: Awaitable[MemoryResult[list[ScoredEmbedding]]]) -> list[str]:
    return [hit.id for hit in _ok(await result, "search")]


async def _everything(store: EmbeddingAdapter) -> set[str]:
    """The ids of every embedding, found by a search that lets all through."""
    hits = _ok(await store.search(axis_vector(0), limit=10_000, threshold=-1.0), "search")
    return {h.id for h in hits}


def _same_direction(a: Sequence[float], b: Sequence[float]) -> None:
    assert len(a) == len(b), f"vector sizes differ: {len(a)} vs {len(b)}"
    assert cosine(a, b) > 0.99999, f"vectors point elsewhere: {list(a)} vs {list(b)}"


# --- cases -------------------------------------------------------------------------------


async def _add_and_get(store: EmbeddingAdapter) -> None:
    vec = seeded_vector(1)
    added = _ok(
        await store.add_embedding(_new("hello there", vec, metadata={"agent_id": "a1", "k": [1, 2]})), "add_embedding"
    )
    assert isinstance(added, Embedding)
    assert added.id.startswith("emb_")
    assert (added.source_id, added.source_type, added.content) == ("src-1", "document", "hello there")
    assert added.metadata == {"agent_id": "a1", "k": [1, 2]}
    assert added.created_at.tzinfo is not None
    _same_direction(added.vector, vec)
    got = _ok(await store.get_embedding(added.id), "get_embedding")
    assert isinstance(got, Embedding)
    assert (got.id, got.source_id, got.source_type, got.content) == (
        added.id,
        "src-1",
        "document",
        "hello there",
    )
    assert got.metadata == {"agent_id": "a1", "k": [1, 2]}
    assert abs((got.created_at - added.created_at).total_seconds()) < 0.01
    _same_direction(got.vector, vec)
    assert store.dimensions == CONFORMANCE_DIMENSIONS


async def _add_model_and_own_id(store: EmbeddingAdapter) -> None:
    model = NewEmbedding(id="emb_custom-1", source_id="s", source_type="fact", content="c", vector=axis_vector(2))
    added = _ok(await store.add_embedding(model), "add_embedding")
    assert added.id == "emb_custom-1"
    assert added.metadata == {}
    got = _ok(await store.get_embedding("emb_custom-1"), "get_embedding")
    assert got is not None and got.source_type == "fact"


async def _get_missing(store: EmbeddingAdapter) -> None:
    assert _ok(await store.get_embedding("emb_missing"), "get_embedding") is None
    _failed(await store.get_embedding(""), "get_embedding('')", "embedding_id")


async def _search_by_cosine(store: EmbeddingAdapter) -> None:
    same, diag, near_orth, opposite = await _add(
        store,
        _new("same", axis_vector(0, scale=3.0)),
        _new("diagonal", blend({0: 1, 1: 1})),
        _new("nearly orthogonal", blend({0: 0.1, 1: 1})),
        _new("opposite", axis_vector(0, scale=-2.0)),
    )
    hits = _ok(await store.search(axis_vector(0), limit=10, threshold=-1.0), "search")
    assert [h.id for h in hits] == [same.id, diag.id, near_orth.id, opposite.id]
    expected = [1.0, 1 / math.sqrt(2), 0.1 / math.sqrt(1.01), -1.0]
    for hit, score in zip(hits, expected, strict=True):
        assert isinstance(hit, ScoredEmbedding)
        assert abs(hit.score - score) < 1e-4, f"{hit.content}: score {hit.score}, expected {score}"
    assert hits[1].content == "diagonal" and hits[1].source_id == "src-1"
    _same_direction(hits[1].vector, blend({0: 1, 1: 1}))
    # the default threshold (0.0) leaves out negative scores
    default = await _ids(store.search(axis_vector(0)))
    assert default == [same.id, diag.id, near_orth.id]
    assert await _ids(store.search(axis_vector(0), limit=2, threshold=-1.0)) == [same.id, diag.id]
    assert await _ids(store.search(axis_vector(0), threshold=0.5)) == [same.id, diag.id]
    assert await _ids(store.search(axis_vector(0), threshold=1.0 - 1e-6)) == [same.id]
    assert await _ids(store.search(axis_vector(0, scale=-1.0), limit=1, threshold=-1.0)) == [opposite.id]


async def _search_matches_brute_force(store: EmbeddingAdapter) -> None:
    items = [_new(f"doc {i}", seeded_vector(100 + i), source_id=f"s{i}") for i in range(120)]
    added = await _add(store, *items)
    by_id = {e.id: seeded_vector(100 + i) for i, e in enumerate(added)}
    for q in range(5):
        query = seeded_vector(9000 + q)
        expected = sorted(by_id, key=lambda i: -cosine(query, by_id[i]))[:7]
        hits = _ok(await store.search(query, limit=7, threshold=-1.0), "search")
        assert [h.id for h in hits] == expected
        for h in hits:
            assert abs(h.score - cosine(query, by_id[h.id])) < 1e-4


async def _writes_invalidate_search(store: EmbeddingAdapter) -> None:
    first = (await _add(store, _new("first", blend({0: 1, 1: 1}), metadata={"agent_id": "a"})))[0]
    assert await _ids(store.search(axis_vector(0), filter={"agent_id": "a"})) == [first.id]
    assert await _ids(store.search(axis_vector(0))) == [first.id]
    better = (await _add(store, _new("better", axis_vector(0), metadata={"agent_id": "a"})))[0]
    assert await _ids(store.search(axis_vector(0), filter={"agent_id": "a"})) == [better.id, first.id]
    assert await _ids(store.search(axis_vector(0))) == [better.id, first.id]
    _ok(await store.delete_embedding(better.id), "delete_embedding")
    assert await _ids(store.search(axis_vector(0), filter={"agent_id": "a"})) == [first.id]
    assert _ok(await store.delete_by_filter(agent_id="a"), "delete_by_filter") == 1
    assert await _ids(store.search(axis_vector(0), filter={"agent_id": "a"})) == []
    assert _ok(await store.keyword_search("first"), "keyword_search") == []


async def _scoping(store: EmbeddingAdapter) -> None:
    a, b, shared, a_t1, u1, u2 = await _add(
        store,
        _new("of agent a", metadata={"agent_id": "a"}),
        _new("of agent b", metadata={"agent_id": "b"}),
        _new("shared knowledge", metadata={"kind": "kb"}),
        _new("agent a in thread t1", metadata={"agent_id": "a", "thread_id": "t1"}),
        _new("user one", metadata={"user_id": "u1"}),
        _new("user two", metadata={"user_id": "u2", "agent_id": None}),
    )
    everything = {a.id, b.id, shared.id, a_t1.id, u1.id, u2.id}

    async def seen(flt: dict[str, Any] | EmbeddingFilter | None) -> set[str]:
        vec_hits = set(await _ids(store.search(axis_vector(0), limit=100, filter=flt)))
        return vec_hits

    assert await seen(None) == everything
    assert await seen({"agent_id": "a"}) == {a.id, shared.id, a_t1.id, u1.id, u2.id}
    assert await seen({"agent_id": "c"}) == {shared.id, u1.id, u2.id}
    assert await seen({"thread_id": "t1"}) == everything
    assert await seen({"thread_id": "t2"}) == {a.id, b.id, shared.id, u1.id, u2.id}
    assert await seen({"agent_id": "a", "thread_id": "t2"}) == {a.id, shared.id, u1.id, u2.id}
    assert await seen({"user_id": "u1"}) == {a.id, b.id, shared.id, a_t1.id, u1.id}
    assert await seen(EmbeddingFilter(agent_id="b", user_id="u2")) == {b.id, shared.id, u2.id}


async def _no_user_sees_the_shared_ones(store: EmbeddingAdapter) -> None:
    """``user_id=NO_USER`` (a user no embedding can belong to) lets through only what belongs to
    no user, by the scoping rule itself: with an index named in the metadata (the recall
    index's vector channels) and without, in ``search`` and ``search_ids``."""
    searcher: Any = store
    added = await _add(
        store,
        *(
            _new(f"{who} {index}", axis_vector(0), source_id=f"{who}-{index}", metadata=meta | {"index": index})
            for index in ("messages", "items")
            for who, meta in (("ana", {"user_id": "ana"}), ("bob", {"user_id": "bob"}), ("shared", {}))
        ),
    )
    by_source = {e.source_id: e.id for e in added}
    for index in ("messages", None):
        flt: dict[str, Any] = {"user_id": NO_USER, "agent_id": "a"}
        if index is not None:
            flt["metadata"] = {"index": index}
        wanted = {by_source[f"shared-{i}"] for i in (("messages",) if index else ("messages", "items"))}
        assert set(await _ids(store.search(axis_vector(0), limit=50, threshold=-1.0, filter=flt))) == wanted, flt
        ids = _ok(await searcher.search_ids(axis_vector(0), limit=50, threshold=-1.0, filter=flt), "search_ids")
        assert {h.id for h in ids} == wanted, flt


async def _filters(store: EmbeddingAdapter) -> None:
    doc, fact, flagged, numbered = await _add(
        store,
        _new("a document chunk", source_type="document", metadata={"source": "manual.pdf", "page": 3}),
        _new("a fact", source_type="fact", metadata={"source": "chat"}),
        _new("flagged doc", source_type="document", metadata={"pinned": True, "page": 4}),
        _new("numbered doc", source_type="document", metadata={"pinned": False, "page": 3}),
    )
    assert set(await _ids(store.search(axis_vector(0), filter={"source_type": "fact"}))) == {fact.id}
    assert set(await _ids(store.search(axis_vector(0), filter={"metadata": {"source": "manual.pdf"}}))) == {doc.id}
    assert set(await _ids(store.search(axis_vector(0), filter={"metadata": {"page": 3}}))) == {doc.id, numbered.id}
    assert set(await _ids(store.search(axis_vector(0), filter={"metadata": {"pinned": True}}))) == {flagged.id}
    assert set(await _ids(store.search(axis_vector(0), filter={"metadata": {"pinned": False}}))) == {numbered.id}
    both = {"source_type": "document", "metadata": {"page": 3, "source": "manual.pdf"}}
    assert set(await _ids(store.search(axis_vector(0), filter=both))) == {doc.id}
    assert await _ids(store.search(axis_vector(0), filter={"metadata": {"missing": "x"}})) == []
    kw = await _ids(store.keyword_search("doc", filter={"metadata": {"page": 4}}))
    assert kw == [flagged.id]


async def _values_left_out(store: EmbeddingAdapter) -> None:
    """``metadata_not`` leaves out what holds one of its values (exactly: type too), keeps what
    lacks the key, in every search, with the other conditions, before the limit."""
    turn, item, doc, plain, one, text_one = await _add(
        store,
        _new("said in a chat", axis_vector(0), metadata={"index": "messages", "user_id": "u"}),
        _new("an item of memory", blend({0: 1, 1: 0.1}), metadata={"index": "items", "user_id": "u"}),
        _new("a document in chat", blend({0: 1, 1: 0.2}), metadata={"index": "docs", "user_id": "u"}),
        _new("a note of chat", blend({0: 1, 1: 0.3}), metadata={"user_id": "u"}),
        _new("numbered chat", blend({0: 1, 1: 0.4}), metadata={"n": 1}),
        _new("texted chat", blend({0: 1, 1: 0.5}), metadata={"n": "1"}),
    )
    own = {"metadata_not": {"index": ["messages", "items"]}}
    assert set(await _ids(store.search(axis_vector(0), filter=own))) == {doc.id, plain.id, one.id, text_one.id}
    got = await _ids(store.search(axis_vector(0), limit=2, filter=own))
    assert got == [doc.id, plain.id], f"left out before the limit: {got}"
    hits = _ok(
        await nearest_ids(store, axis_vector(0), limit=10, threshold=-1.0, filter={**own, "user_id": "u"}),
        "nearest_ids",
    )
    assert {h.id for h in hits} == {doc.id, plain.id, one.id, text_one.id}  # n: shared, no user
    kw = await _ids(store.keyword_search("chat", filter=own))
    assert set(kw) == {doc.id, plain.id, one.id, text_one.id}
    assert set(await _ids(store.search(axis_vector(0), filter={"metadata_not": {"n": [1]}}))) == {
        turn.id,
        item.id,
        doc.id,
        plain.id,
        text_one.id,
    }
    both = {"metadata": {"user_id": "u"}, "metadata_not": {"index": ["docs"], "n": [True]}}
    assert set(await _ids(store.search(axis_vector(0), filter=both))) == {turn.id, item.id, plain.id}
    assert len(await _ids(store.search(axis_vector(0), filter={"metadata_not": {"index": []}}))) == 6
    _failed(
        await store.search(axis_vector(0), filter={"metadata_not": {"index": "messages"}}),
        "metadata_not not a list",
        "filter.metadata_not.index",
    )
    _failed(
        await store.search(axis_vector(0), filter={"metadata_not": {"index": [["a"]]}}),
        "metadata_not list in list",
        "filter.metadata_not",
    )


async def _filters_before_the_limit(store: EmbeddingAdapter) -> None:
    """Filters narrow the candidates before the ``limit`` best are taken, whatever the key (dots,
    spaces, quotes, non-Latin letters) and whatever else the key holds elsewhere (a list holding
    the value, a nested object, ``1`` for ``True``): a store that filtered after its top ``limit``
    returns fewer hits than match."""
    keys = ["plain_key", "dotted.key", "with space", 'quo"te', "ключ", "a.b"]
    decoys = []
    for i, key in enumerate(keys):  # closer to the query than any match, and never matching
        decoys += [
            _new(f"decoy list {i}", blend({0: 1, 1: 0.01 * i}), metadata={key: ["x", "y"]}),
            _new(f"decoy other {i}", blend({0: 1, 1: 0.01 * i + 0.001}), metadata={key: "other"}),
            _new(f"decoy missing {i}", blend({0: 1, 1: 0.01 * i + 0.002})),
        ]
    decoys += [
        _new("decoy nested", axis_vector(0), metadata={"a": {"b": "x"}}),
        _new("decoy one", axis_vector(0), metadata={"flag": 1}),
        _new("decoy true", axis_vector(0), metadata={"count": True}),
        _new("decoy float", axis_vector(0), metadata={"count": 1.5}),
    ]
    await _add(store, *decoys)
    for key in keys:
        matches = await _add(
            store,
            *[_new(f"match {key} {i} needle", blend({0: 1, 1: 1 + i}), metadata={key: "x"}) for i in range(3)],
        )
        wanted = [m.id for m in matches]
        flt = {"metadata": {key: "x"}}
        assert await _ids(store.search(axis_vector(0), limit=3, filter=flt)) == wanted, f"search on {key!r}"
        kw = await _ids(store.keyword_search("needle", limit=3, filter=flt))
        assert set(kw) == set(wanted), f"keyword_search on {key!r}: {kw}"
    flag, count = await _add(
        store,
        _new("flag true", blend({0: 1, 1: 5}), metadata={"flag": True}),
        _new("count one", blend({0: 1, 1: 5}), metadata={"count": 1}),
    )
    assert await _ids(store.search(axis_vector(0), limit=1, filter={"metadata": {"flag": True}})) == [flag.id]
    assert await _ids(store.search(axis_vector(0), limit=1, filter={"metadata": {"count": 1}})) == [count.id]
    assert _ok(await store.delete_by_filter(metadata={"with space": "x"}), "delete_by_filter") == 3
    assert _ok(await store.delete_by_filter(metadata={"flag": True}), "delete_by_filter") == 1


async def _keyword_long_query(store: EmbeddingAdapter) -> None:
    """A query as long as a query may be, with about 100,000 distinct terms (CJK text gives one
    per character pair), is searched, not refused or failed: a text-search expression that nests
    one level per term overflows PostgreSQL's stack."""
    target, kiwi = await _add(store, _new("zebra migration report"), _new("a note about kiwis"))
    rng = random.Random(7)
    cjk = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(MAX_CONTENT_CHARS - 20))
    query = f"{cjk} zebra"
    hits = _ok(await store.keyword_search(query), "keyword_search (a long CJK query)")
    assert [h.id for h in hits] == [target.id]
    words = " ".join(_letters(i) for i in range(16_000))  # 16,000 distinct Latin terms
    hits = _ok(await store.keyword_search(f"kiwis {words} zebra"), "keyword_search (a long Latin query)")
    assert {h.id for h in hits} == {target.id, kiwi.id}


def _letters(n: int) -> str:
    """A made-up word per number (``qaaaa``, ``qaaab``...): letters only, never a stopword."""
    out = ""
    for _ in range(4):
        out = "abcdefghijklmnopqrstuvwxyz"[n % 26] + out
        n //= 26
    return "q" + out


async def _hits_without_vectors(store: EmbeddingAdapter) -> None:
    """``include_vectors=False`` leaves the vectors out of the hits; ids, scores and the rest stay."""
    added = await _add(
        store,
        _new("vectors left out", axis_vector(0), metadata={"agent_id": "a"}),
        _new("vectors left out too", blend({0: 1, 1: 1})),
    )
    full = _ok(await store.search(axis_vector(0), filter={"agent_id": "a"}), "search")
    bare = _ok(await store.search(axis_vector(0), filter={"agent_id": "a"}, include_vectors=False), "search")
    assert [h.id for h in bare] == [h.id for h in full] == [e.id for e in added]
    for with_vector, without in zip(full, bare, strict=True):
        assert without.vector == [] and len(with_vector.vector) == CONFORMANCE_DIMENSIONS
        assert abs(without.score - with_vector.score) < 1e-6
        assert (without.content, without.metadata, without.source_id) == (
            with_vector.content,
            with_vector.metadata,
            with_vector.source_id,
        )
    kw_full = _ok(await store.keyword_search("vectors"), "keyword_search")
    kw_bare = _ok(await store.keyword_search("vectors", include_vectors=False), "keyword_search")
    assert [h.id for h in kw_bare] == [h.id for h in kw_full] and len(kw_bare) == 2
    assert all(h.vector == [] for h in kw_bare) and all(len(h.vector) == CONFORMANCE_DIMENSIONS for h in kw_full)
    assert [h.score for h in kw_bare] == [h.score for h in kw_full]
    _failed(await store.search(axis_vector(0), include_vectors="no"), "include_vectors='no'", "include_vectors")  # type: ignore[arg-type]
    _failed(await store.keyword_search("x", include_vectors=None), "include_vectors=None", "include_vectors")  # type: ignore[arg-type]
    got = _ok(await store.get_embedding(added[0].id), "get_embedding")
    _same_direction(got.vector, axis_vector(0))  # the stored vector is still there


async def _ids_only_search(store: EmbeddingAdapter) -> None:
    """``search_ids`` (what recall's vector channel asks) finds what ``search`` finds, in its
    order: the same ids, source ids and cosines, scoped, cut by ``threshold`` and ``limit``;
    its arguments are checked the same way."""
    searcher: Any = store
    await _add(
        store,
        *(
            _new(
                f"turn {i}",
                blend({0: 1, 1: i / 4}),
                source_id=f"src-{i}",
                metadata={"user_id": "u1" if i % 2 else "u2"},
            )
            for i in range(8)
        ),
        _new("a twin", axis_vector(0), source_id="twin-a"),
        _new("a twin", axis_vector(0), source_id="twin-b"),  # the same cosine: ties go by id
    )
    for flt, limit, threshold in (
        (None, 10, 0.0),
        (None, 3, 0.0),
        ({"user_id": "u1"}, 10, 0.0),
        (None, 10, 0.9),
        ({"user_id": "nobody"}, 10, -1.0),
    ):
        full = _ok(await store.search(axis_vector(0), limit=limit, threshold=threshold, filter=flt), "search")
        ids = _ok(await searcher.search_ids(axis_vector(0), limit=limit, threshold=threshold, filter=flt), "search_ids")
        assert [(h.id, h.source_id) for h in ids] == [(h.id, h.source_id) for h in full], (flt, limit, threshold)
        assert all(abs(a.score - b.score) < 1e-6 for a, b in zip(ids, full, strict=True))
    assert len(_ok(await searcher.search_ids(axis_vector(0), limit=3), "search_ids")) == 3
    _failed(await searcher.search_ids(axis_vector(0), limit=0), "search_ids(limit=0)", "limit")
    _failed(await searcher.search_ids(axis_vector(0), threshold=2.0), "search_ids(threshold=2)", "threshold")
    _failed(await searcher.search_ids(axis_vector(0), filter={"bogus": 1}), "search_ids(bogus)", "filter", "bogus")
    _failed(await searcher.search_ids([1.0, 2.0]), "search_ids(a vector of another size)", "vector")


async def _unknown_filter_keys(store: EmbeddingAdapter) -> None:
    await _add(store, _new("x"))
    _failed(await store.search(axis_vector(0), filter={"agentId": "a"}), "search(agentId)", "filter", "agentId")
    _failed(await store.keyword_search("x", filter={"bogus": 1}), "keyword_search(bogus)", "filter", "bogus")
    _failed(await store.search(axis_vector(0), filter={"metadata": {"k": [1]}}), "metadata list", "filter.metadata")
    _failed(await store.search(axis_vector(0), filter="agent"), "search(filter=str)", "filter")  # type: ignore[arg-type]


async def _keyword_ranking(store: EmbeddingAdapter) -> None:
    one, two, _lazy = await _add(
        store,
        _new("The quick brown fox"),
        _new("quick quick fox jumps"),
        _new("a lazy dog sleeps all day"),
    )
    hits = _ok(await store.keyword_search("Quick FOX!"), "keyword_search")
    assert [h.id for h in hits] == [two.id, one.id]
    assert hits[0].score > hits[1].score > 0
    assert hits[0].content == "quick quick fox jumps"
    assert await _ids(store.keyword_search("quick fox", limit=1)) == [two.id]
    assert await _ids(store.keyword_search("brown")) == [one.id]
    assert await _ids(store.keyword_search("cat")) == []
    assert await _ids(store.keyword_search("the of and")) == []  # only stopwords
    assert await _ids(store.keyword_search("!!! ...")) == []
    _failed(await store.keyword_search(42), "keyword_search(42)", "query")  # type: ignore[arg-type]


async def _keyword_unicode(store: EmbeddingAdapter) -> None:
    cafe, tokyo, moscow = await _add(
        store,
        _new("Un café à München"),
        _new("東京タワーに行きました"),
        _new("Привет из Москвы"),
    )
    assert await _ids(store.keyword_search("MÜNCHEN")) == [cafe.id]
    assert await _ids(store.keyword_search("café")) == [cafe.id]
    assert await _ids(store.keyword_search("東京")) == [tokyo.id]
    assert await _ids(store.keyword_search("москвы")) == [moscow.id]


async def _keyword_scoping(store: EmbeddingAdapter) -> None:
    a, b, shared = await _add(
        store,
        _new("project alpha notes", metadata={"agent_id": "a"}),
        _new("project alpha secrets", metadata={"agent_id": "b"}),
        _new("project alpha handbook"),
    )
    assert set(await _ids(store.keyword_search("alpha", filter={"agent_id": "a"}))) == {a.id, shared.id}
    assert set(await _ids(store.keyword_search("alpha", filter={"agent_id": "z"}))) == {shared.id}
    assert set(await _ids(store.keyword_search("alpha"))) == {a.id, b.id, shared.id}
    assert await _ids(store.keyword_search("secrets", filter={"agent_id": "a"})) == []


async def _delete_embedding(store: EmbeddingAdapter) -> None:
    keep, gone = await _add(store, _new("keep me", axis_vector(1)), _new("delete me", axis_vector(0)))
    _ok(await store.delete_embedding(gone.id), "delete_embedding")
    assert _ok(await store.get_embedding(gone.id), "get_embedding") is None
    assert await _everything(store) == {keep.id}
    assert await _ids(store.keyword_search("delete")) == []
    _ok(await store.delete_embedding(gone.id), "delete_embedding (again)")
    _ok(await store.delete_embedding("emb_never"), "delete_embedding (missing)")


async def _delete_embeddings(store: EmbeddingAdapter) -> None:
    keep, one, two = await _add(
        store, _new("keep me", axis_vector(1)), _new("delete one", axis_vector(0)), _new("delete two", axis_vector(2))
    )
    _failed(await store.delete_embeddings([one.id, ""]), "delete_embeddings (a bad id)", "embedding_ids[1]")
    _failed(await store.delete_embeddings(one.id), "delete_embeddings (a string)", "embedding_ids")
    assert await _everything(store) == {keep.id, one.id, two.id}, "a refused batch deletes nothing"
    gone = _ok(await store.delete_embeddings([one.id, "emb_never", two.id, one.id]), "delete_embeddings")
    assert gone == 2, f"delete_embeddings counted {gone}, not the 2 that existed"
    assert await _everything(store) == {keep.id}
    assert await _ids(store.keyword_search("delete")) == []
    assert _ok(await store.delete_embeddings([]), "delete_embeddings ([])") == 0


async def _delete_by_filter(store: EmbeddingAdapter) -> None:
    a_doc, a_fact, b_doc, shared, a_t1, tagged = await _add(
        store,
        _new("a doc", source_type="document", metadata={"agent_id": "a"}),
        _new("a fact", source_type="fact", metadata={"agent_id": "a"}),
        _new("b doc", source_type="document", metadata={"agent_id": "b"}),
        _new("shared doc", source_type="document"),
        _new("a thread doc", source_type="document", metadata={"agent_id": "a", "thread_id": "t1"}),
        _new("tagged", source_type="chunk", metadata={"source": "x.md", "v": 2}),
    )
    _failed(await store.delete_by_filter(), "delete_by_filter()", "condition")
    _failed(await store.delete_by_filter(metadata={}), "delete_by_filter(metadata={})", "condition")
    _failed(await store.delete_by_filter(metadata={"k": 1.5}), "float metadata", "metadata.k")
    assert len(await _everything(store)) == 6
    assert _ok(await store.delete_by_filter(metadata={"source": "x.md", "v": 3}), "delete") == 0
    assert _ok(await store.delete_by_filter(metadata={"source": "x.md", "v": 2}), "delete") == 1
    assert _ok(await store.delete_by_filter(thread_id="t1"), "delete") == 1
    assert _ok(await store.delete_by_filter(agent_id="a", source_type="fact"), "delete") == 1
    assert await _everything(store) == {a_doc.id, b_doc.id, shared.id}
    assert _ok(await store.delete_by_filter(agent_id="a"), "delete") == 1  # the shared doc stays
    assert await _everything(store) == {b_doc.id, shared.id}
    assert _ok(await store.delete_by_filter(source_type="document"), "delete") == 2
    assert await _everything(store) == set()
    del a_fact, a_t1, tagged


async def _get_by_sources(store: EmbeddingAdapter) -> None:
    m1a, m2, m1b, _other = await _add(
        store,
        _new("m1 part a", source_id="msg-1"),
        _new("m2", source_id="msg-2"),
        _new("m1 part b", source_id="msg-1"),
        _new("other", source_id="msg-3"),
    )
    found = _ok(await store.get_by_sources(["msg-2", "msg-1", "msg-9", "msg-2"]), "get_by_sources")
    assert [e.id for e in found] == [m2.id, m1a.id, m1b.id]
    assert all(isinstance(e, Embedding) for e in found)
    _same_direction(found[0].vector, axis_vector(0))
    assert _ok(await store.get_by_sources([]), "get_by_sources([])") == []
    assert _ok(await store.get_by_sources(["nope"]), "get_by_sources") == []
    _failed(await store.get_by_sources("msg-1"), "get_by_sources(str)", "source_ids")


async def _batch_all_or_nothing(store: EmbeddingAdapter) -> None:
    existing = (await _add(store, _new("existing", id="emb_taken")))[0]
    result = await store.add_embeddings([_new("fresh", id="emb_fresh"), _new("clash", id="emb_taken")])
    _failed(result, "add_embeddings with a taken id", "emb_taken")
    assert result.error_type is ConflictError
    assert _ok(await store.get_embedding("emb_fresh"), "get_embedding") is None
    got = _ok(await store.get_embedding("emb_taken"), "get_embedding")
    assert got is not None and got.content == "existing"
    bad = await store.add_embeddings([_new("ok one"), _new("bad", [1.0, float("nan")] + [0.0] * 6), _new("ok two")])
    _failed(bad, "batch with NaN", "embeddings[1].vector")
    dup = await store.add_embeddings([_new("x", id="emb_dup"), _new("y", id="emb_dup")])
    _failed(dup, "batch with a repeated id", "emb_dup")
    assert await _everything(store) == {existing.id}
    assert _ok(await store.add_embeddings([]), "add_embeddings([])") == []
    many = await _add(store, *[_new(f"n{i}", seeded_vector(i)) for i in range(20)])
    assert len(many) == 20 and len({e.id for e in many}) == 20
    assert len(await _everything(store)) == 21


async def _bad_input_writes_nothing(store: EmbeddingAdapter) -> None:
    base = (await _add(store, _new("base")))[0]
    dims = CONFORMANCE_DIMENSIONS
    cases: list[tuple[Any, tuple[str, ...]]] = [
        (_new(vector=[]), ("embedding.vector", "empty")),
        (_new(vector=[float("nan")] * dims), ("embedding.vector", "nan")),
        (_new(vector=[float("inf")] + [0.0] * (dims - 1)), ("embedding.vector", "inf")),
        (_new(vector=[0.0] * dims), ("embedding.vector", "zero")),
        (_new(vector=[1.0] * (dims - 1)), ("embedding.vector", str(dims - 1), str(dims))),
        ({**_new(), "vector": ["1"] * dims}, ("embedding.vector",)),
        (_new(vector=[True] * dims), ("embedding.vector",)),
        (_new("x" * (MAX_CONTENT_CHARS + 1)), ("embedding.content", str(MAX_CONTENT_CHARS))),
        ({**_new(), "content": 5}, ("embedding.content",)),
        ({**_new(), "source_id": ""}, ("embedding.source_id",)),
        ({**_new(), "source_type": None}, ("embedding.source_type",)),
        ({k: v for k, v in _new().items() if k != "vector"}, ("embedding.vector", "required")),
        ({**_new(), "bogus": 1}, ("embedding", "bogus")),
        (_new(metadata={"agent_id": 7}), ("embedding.metadata.agent_id",)),
        (_new(metadata={"x": float("nan")}), ("embedding.metadata",)),
        ("not an embedding", ("embedding",)),
    ]
    for item, needles in cases:
        message = _failed(await store.add_embedding(item), f"add_embedding({str(item)[:60]})", *needles)
        assert "invalid argument" in message, message
    assert await _everything(store) == {base.id}
    _failed(await store.add_embeddings("nope"), "add_embeddings(str)", "embeddings")  # type: ignore[arg-type]


async def _values_stores_cannot_keep(store: EmbeddingAdapter) -> None:
    """Metadata and text go through the checks of thread stores (``threads.values``): nested at
    most ``MAX_JSON_DEPTH`` deep, JSON only, 64-bit integers, no lone surrogates; refused values
    name the argument and write nothing, the deepest allowed metadata round-trips."""
    base = (await _add(store, _new("base")))[0]
    deep: Any = "bottom"
    for _ in range(MAX_JSON_DEPTH - 1):
        deep = [deep]
    lone = "\ud800"
    cases: list[tuple[Any, tuple[str, ...]]] = [
        (_new(metadata={"x": [deep]}), ("embedding.metadata", str(MAX_JSON_DEPTH))),
        (_new(metadata={"k": lone}), ("embedding.metadata", "surrogate")),
        (_new(metadata={lone: 1}), ("embedding.metadata", "surrogate")),
        (_new(metadata={"k": 2**63}), ("embedding.metadata", str(2**63))),
        (_new(metadata={"k": b"bytes"}), ("embedding.metadata", "bytes")),
        (_new(f"a{lone}b"), ("embedding.content", "surrogate")),
    ]
    for item, needles in cases:
        message = _failed(await store.add_embedding(item), f"add_embedding({str(item)[:60]})", *needles)
        assert "invalid argument" in message, message
    for flt in ({"metadata": {"k": 2**63}}, {"metadata": {"k": lone}}):
        _failed(await store.search(axis_vector(0), filter=flt), f"search(filter={flt!r})", "filter.metadata")
    assert await _everything(store) == {base.id}
    kept = (await _add(store, _new("deep", metadata={"x": deep, "max": 2**63 - 1})))[0]
    got = _ok(await store.get_embedding(kept.id), "get_embedding")
    assert got is not None and got.metadata == {"x": deep, "max": 2**63 - 1}, got
    hits = await _ids(store.search(axis_vector(0), filter={"metadata": {"max": 2**63 - 1}}))
    assert hits == [kept.id], hits


async def _bad_search_arguments(store: EmbeddingAdapter) -> None:
    await _add(store, _new("x"))
    dims = CONFORMANCE_DIMENSIONS
    _failed(await store.search([1.0] * (dims + 1)), "search wrong size", "vector", str(dims + 1), str(dims))
    _failed(await store.search([]), "search([])", "vector")
    _failed(await store.search([float("nan")] * dims), "search(NaN)", "vector")
    _failed(await store.search([0.0] * dims), "search(zeros)", "vector")
    _failed(await store.search(axis_vector(0), limit=0), "limit=0", "limit")
    _failed(await store.search(axis_vector(0), limit=-1), "limit=-1", "limit")
    _failed(await store.search(axis_vector(0), limit=10**6), "limit=10**6", "limit")
    _failed(await store.search(axis_vector(0), threshold=1.5), "threshold=1.5", "threshold")
    _failed(await store.search(axis_vector(0), threshold=float("nan")), "threshold=nan", "threshold")
    _failed(await store.keyword_search("x", limit=0), "keyword limit=0", "limit")
    _failed(await store.keyword_search("x" * (MAX_CONTENT_CHARS + 1)), "long query", "query")


async def _copies(store: EmbeddingAdapter) -> None:
    item = _new("original", blend({0: 1, 1: 2}), metadata={"agent_id": "a", "tags": ["x"]})
    added = _ok(await store.add_embedding(item), "add_embedding")
    item["metadata"]["tags"].append("changed by caller")
    item["vector"][0] = 99.0
    added.metadata["tags"].append("mutated")
    added.vector[0] = -5.0
    hit = _ok(await store.search(axis_vector(0)), "search")[0]
    hit.metadata["agent_id"] = "b"
    hit.vector[1] = 0.0
    (_ok(await store.get_by_sources(["src-1"]), "get_by_sources")[0]).metadata.clear()
    got = _ok(await store.get_embedding(added.id), "get_embedding")
    assert got.metadata == {"agent_id": "a", "tags": ["x"]}
    _same_direction(got.vector, blend({0: 1, 1: 2}))
    again = _ok(await store.search(axis_vector(0), filter={"agent_id": "a"}), "search")
    assert [h.id for h in again] == [added.id]
    assert abs(again[0].score - 1 / math.sqrt(5)) < 1e-4


async def _health_and_dimensions(store: EmbeddingAdapter) -> None:
    _ok(await store.health_check(), "health_check")
    assert store.dimensions in (None, CONFORMANCE_DIMENSIONS)
    assert _ok(await store.search(axis_vector(0)), "search of an empty store") == []
    assert _ok(await store.keyword_search("anything"), "keyword_search of an empty store") == []
    await _add(store, _new("x"))
    assert store.dimensions == CONFORMANCE_DIMENSIONS
    _failed(await store.add_embedding(_new(vector=[1.0] * 16)), "16 dims", "16", str(CONFORMANCE_DIMENSIONS))


async def _failed_results_have_types(store: EmbeddingAdapter) -> None:
    await _add(store, _new("x"))
    result = await store.search([1.0] * 3)
    _failed(result, "search(3 dims)", "3", str(CONFORMANCE_DIMENSIONS))
    assert result.error_type is InvalidArgumentError


_CASES: tuple[tuple[str, Callable[[EmbeddingAdapter], Awaitable[None]]], ...] = (
    ("add_and_get", _add_and_get),
    ("add_model_and_own_id", _add_model_and_own_id),
    ("get_missing", _get_missing),
    ("search_by_cosine", _search_by_cosine),
    ("search_matches_brute_force", _search_matches_brute_force),
    ("writes_invalidate_search", _writes_invalidate_search),
    ("scoping", _scoping),
    ("no_user_sees_the_shared_ones", _no_user_sees_the_shared_ones),
    ("filters", _filters),
    ("metadata_not", _values_left_out),
    ("filters_before_the_limit", _filters_before_the_limit),
    ("unknown_filter_keys", _unknown_filter_keys),
    ("keyword_ranking", _keyword_ranking),
    ("keyword_unicode", _keyword_unicode),
    ("keyword_scoping", _keyword_scoping),
    ("keyword_long_query", _keyword_long_query),
    ("hits_without_vectors", _hits_without_vectors),
    ("ids_only_search", _ids_only_search),
    ("delete_embedding", _delete_embedding),
    ("delete_embeddings", _delete_embeddings),
    ("delete_by_filter", _delete_by_filter),
    ("get_by_sources", _get_by_sources),
    ("batch_all_or_nothing", _batch_all_or_nothing),
    ("bad_input_writes_nothing", _bad_input_writes_nothing),
    ("values_stores_cannot_keep", _values_stores_cannot_keep),
    ("bad_search_arguments", _bad_search_arguments),
    ("returned_objects_are_copies", _copies),
    ("health_and_dimensions", _health_and_dimensions),
    ("failed_results_have_types", _failed_results_have_types),
)


def embedding_adapter_conformance_cases() -> list[EmbeddingConformanceCase]:
    """Every conformance case of the embedding contract, each to run on a fresh store of 8 dimensions."""
    return [EmbeddingConformanceCase(name, check) for name, check in _CASES]


__all__ = [
    "CONFORMANCE_DIMENSIONS",
    "EmbeddingConformanceCase",
    "axis_vector",
    "blend",
    "cosine",
    "embedding_adapter_conformance_cases",
    "seeded_vector",
]
