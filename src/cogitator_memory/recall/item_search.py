"""The item channels of recall: BM25, vectors, entities, time and a personalized PageRank walk.

Pure functions over :class:`~cogitator_memory.items.MemoryItem` records (no I/O), used by
:class:`~cogitator_memory.recall.MemoryRetriever`. An item's *entities* are the keys of what it is
about: its subject (or the entity its subject is linked to) and the entities it names
(``related_entity_ids``). The graph of the walk joins each item to its entities, so items about
the same person or thing reach each other through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from ..index.build import item_text
from ..index.terms import stemmed_terms
from ..items.records import MemoryItem, normalize_key_text
from .corpus import Corpus, phrase_pattern
from .query import QueryAnalysis


def item_entities(item: MemoryItem) -> list[str]:
    """The entity keys of an item: ``e:<id>`` for its linked and related entities, ``s:<subject>``."""
    keys = [f"e:{item.entity_id}" if item.entity_id else f"s:{normalize_key_text(item.subject)}"]
    for related in item.related_entity_ids or ():
        keys.append(f"e:{related}")
    return list(dict.fromkeys(keys))


def named_subjects(analysis: QueryAnalysis, items: Sequence[MemoryItem]) -> dict[str, str]:
    """The subjects of ``items`` the input names as whole words (entity key -> subject), and the
    subjects matching a name the analysis found."""
    folded = " ".join(analysis.text.casefold().split())
    names = {normalize_key_text(e) for e in analysis.entities}
    found: dict[str, str] = {}
    checked: set[str] = set()
    for item in items:
        subject = normalize_key_text(item.subject)
        if subject in checked:
            if subject in names or subject in found.values():
                found.setdefault(item_entities(item)[0], item.subject)
            continue
        checked.add(subject)
        pattern = phrase_pattern(subject)
        if subject in names or (pattern is not None and len(subject) > 2 and pattern.search(folded)):
            found[item_entities(item)[0]] = item.subject
    return found


def entity_ranking(items: Sequence[MemoryItem], named: Mapping[str, str]) -> list[str]:
    """Items about an entity the input names, those touching more of them first, newer first."""
    scored: list[tuple[int, datetime, str]] = []
    for item in items:
        hits = sum(1 for key in item_entities(item) if key in named)
        if hits:
            scored.append((hits, item.start, item.id))
    scored.sort(key=lambda t: (-t[0], -t[1].timestamp(), t[2]))
    return [s[2] for s in scored]


def time_ranking(items: Sequence[MemoryItem], analysis: QueryAnalysis) -> list[str]:
    """Items whose time in the world overlaps the time the input names, the closest start first."""
    interval = analysis.interval
    if interval is None:
        return []
    middle = interval.start + (interval.end - interval.start) / 2
    scored: list[tuple[float, str]] = []
    for item in items:
        start = item.start
        end = item.valid_to or item.ends_at
        if start < interval.end and (end is None or end > interval.start):
            scored.append((abs((start - middle).total_seconds()), item.id))
    scored.sort()
    return [s[1] for s in scored]


def bm25_ranking(corpus: Corpus[MemoryItem], analysis: QueryAnalysis, depth: int) -> list[str]:
    """Items by BM25 of the input's terms."""
    return [rid for rid, _ in corpus.bm25.search_terms(stemmed_terms(analysis.terms), limit=depth)]


def vector_ranking(
    cosines: Mapping[str, float], allowed: Mapping[str, object], min_cosine: float, relative: float, depth: int
) -> list[str]:
    """Ids by cosine, those at least ``min_cosine`` and ``relative`` of the best, among ``allowed``."""
    scored = [(c, rid) for rid, c in cosines.items() if rid in allowed]
    if not scored:
        return []
    best = max(c for c, _ in scored)
    floor = max(min_cosine, relative * best) if best > 0 else min_cosine
    chosen = sorted(((c, rid) for c, rid in scored if c >= floor), key=lambda t: (-t[0], t[1]))
    return [rid for _, rid in chosen[:depth]]


def graph_ranking(
    items: Sequence[MemoryItem],
    seeds: Mapping[str, float],
    named: Mapping[str, str],
    *,
    damping: float,
    iterations: int,
    depth: int,
) -> list[str]:
    """Items by a personalized PageRank walk over the item-entity graph.

    The walk restarts (probability ``1 - damping``) at the seed items (weights ``seeds``) and at
    the entities the input names; each step moves from an item to its entities and from an
    entity to its items, evenly. Seeds are left out of the result: the walk finds what they lead to.
    """
    if not items or (not seeds and not named):
        return []
    links: dict[str, list[str]] = {}
    members: dict[str, list[str]] = {}
    for item in items:
        keys = item_entities(item)
        links[item.id] = keys
        for key in keys:
            members.setdefault(key, []).append(item.id)
    restart: dict[str, float] = {}
    for rid, weight in seeds.items():
        if rid in links and weight > 0:
            restart[rid] = restart.get(rid, 0.0) + weight
    for key in named:
        if key in members:
            restart[key] = restart.get(key, 0.0) + 1.0
    total = sum(restart.values())
    if total <= 0:
        return []
    restart = {k: v / total for k, v in restart.items()}
    rank = dict(restart)
    for _ in range(iterations):
        nxt: dict[str, float] = {k: (1.0 - damping) * v for k, v in restart.items()}
        for node, mass in rank.items():
            out = links.get(node) if node in links else members.get(node)
            if not out:
                continue
            share = damping * mass / len(out)
            for target in out:
                nxt[target] = nxt.get(target, 0.0) + share
        rank = nxt
    scored = [(mass, rid) for rid, mass in rank.items() if rid in links and rid not in seeds and mass > 0]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [rid for _, rid in scored[:depth]]


__all__ = [
    "bm25_ranking",
    "entity_ranking",
    "graph_ranking",
    "item_entities",
    "item_text",
    "named_subjects",
    "time_ranking",
    "vector_ranking",
]
