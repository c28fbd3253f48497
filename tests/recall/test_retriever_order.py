"""The retriever's neighbour bonus and MMR give the order of their plain definitions."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from cogitator_memory import InMemoryAdapter, unwrap
from cogitator_memory.recall import MemoryRetriever
from cogitator_memory.recall.retriever import _mmr, _with_neighbours


def _thread_of(rid: str) -> str:
    return "a" if int(rid[1:]) < 30 else "b"


def _neighbours_by_definition(
    fused: list[tuple[str, float]], order: list[str], held: set[str], weight: float
) -> list[tuple[str, float]]:
    place = {rid: i for i, rid in enumerate(order)}
    out = dict(fused)
    bonus: dict[str, float] = {}
    for key, score in fused:
        if key.startswith("t:") and key[2:] in place:
            at = place[key[2:]]
            for j in (at - 1, at + 1):
                if 0 <= j < len(order) and order[j] not in held and _thread_of(order[j]) == _thread_of(key[2:]):
                    near = f"t:{order[j]}"
                    bonus[near] = max(bonus.get(near, 0.0), weight * score)
    for key, extra in bonus.items():
        out[key] = out.get(key, 0.0) + extra
    return sorted(out.items(), key=lambda pair: (-pair[1], pair[0]))


def _mmr_by_definition(
    scored: list[tuple[float, str]], sets: dict[str, frozenset[str]], lam: float, pool: int
) -> list[str]:
    ids = [rid for _, rid in scored]
    if lam >= 1.0 or pool < 2 or len(ids) < 2:
        return ids
    head = scored[:pool]
    best = head[0][0] or 1.0
    rel = {rid: sc / best for sc, rid in head}
    left = [rid for _, rid in head]
    alike = dict.fromkeys(left, 0.0)
    taken: list[str] = []
    while left:
        pick = max(left, key=lambda r: (lam * rel[r] - (1.0 - lam) * alike[r], -left.index(r)))
        taken.append(pick)
        left.remove(pick)
        for rid in left:
            a, b = sets.get(pick, frozenset()), sets.get(rid, frozenset())
            if a or b:
                alike[rid] = max(alike[rid], len(a & b) / len(a | b))
    return taken + ids[pool:]


def test_the_neighbour_bonus_is_its_definition() -> None:
    """Turns next to each other in the order but in two threads (e29, e30) are not neighbours."""
    rng = random.Random(4)
    order = [f"e{i}" for i in range(60)]
    docs = {rid: SimpleNamespace(record=SimpleNamespace(thread_id=_thread_of(rid))) for rid in order}
    for _ in range(300):
        chosen = rng.sample(order, rng.randint(0, 20))
        fused = [(f"t:{rid}", rng.choice([0.5, 0.25, rng.random()])) for rid in chosen]
        fused += [(f"i:item{i}", rng.random()) for i in range(rng.randint(0, 3))]
        fused += [("t:gone", 0.3)]  # a turn that is no longer in the order
        held = set(rng.sample(order, rng.randint(0, 5)))
        weight = rng.choice([0.4, 1.0, 0.01])
        assert _with_neighbours(fused, order, {r: i for i, r in enumerate(order)}, held, weight, docs) == (
            _neighbours_by_definition(fused, order, held, weight)
        )


def test_mmr_order_is_its_definition_ties_included() -> None:
    rng = random.Random(9)
    vocab = [f"w{i}" for i in range(25)]
    for _ in range(300):
        n = rng.randint(0, 40)
        ids = [f"t:{i}" for i in range(n)]
        sets = {rid: frozenset(rng.sample(vocab, rng.randint(0, 8))) for rid in ids if rng.random() < 0.95}
        scored = sorted(((rng.choice([1.0, 0.5, rng.random()]), rid) for rid in ids), key=lambda t: (-t[0], t[1]))
        lam = rng.choice([0.0, 0.5, 0.85, 1.0])
        pool = rng.choice([0, 2, 10, 30])
        assert _mmr(scored, sets, lam, pool) == _mmr_by_definition(scored, sets, lam, pool)


async def test_the_best_hits_do_not_depend_on_how_many_are_asked_for() -> None:
    """Turns that cannot reach the best ``limit`` are not scored: the first hits of a search
    are those of a search asking for every hit, with the same scores."""
    memory = InMemoryAdapter()
    await memory.connect()
    rng = random.Random(6)
    words = ["hotel", "booking", "refund", "flight", "train", "museum", "dinner", "cello", "garden", "plan"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) for _ in range(400)]
    thread = unwrap(await memory.create_thread("agent"))
    turns = [
        unwrap(
            await memory.add_entry(
                {"thread_id": thread.id, "message": {"role": rng.choice(["user", "assistant"]), "content": text}}
            )
        )
        for text in texts
    ]
    checked = 0
    for trial in range(40):
        settings: dict[str, Any] = {
            "mmr_lambda": rng.choice([0.85, 1.0]),
            "mmr_pool": rng.choice([0, 10, 30]),
            "user_weight": rng.choice([0.0, 1.0, 3.0]),
            "coverage_weight": rng.choice([0.0, 0.1, 1.0]),
            "recency_weight": rng.choice([0.0, 0.05, 0.5]),
            "neighbour_weight": rng.choice([0.0, 0.4]),
            "vector_min_cosine": 0.0,
            "vector_relative": 0.0,
        }
        retriever = MemoryRetriever(settings)
        question = " ".join(rng.sample(words, rng.randint(1, 3)))
        cosines = {t.id: rng.random() for t in rng.sample(turns, 120)}
        held = {t.id for t in rng.sample(turns, 5)} if trial % 2 else set()
        every = await retriever.retrieve(question, history=turns, cosines=cosines, held=held, limit=10_000)
        for limit in (1, 5, 20, 40):
            some = await retriever.retrieve(question, history=turns, cosines=cosines, held=held, limit=limit)
            assert [(h.id, h.score) for h in some.hits] == [(h.id, h.score) for h in every.hits[:limit]]
            checked += len(some.hits)
    assert checked > 1000
    await memory.disconnect()
