"""``MemoryRetriever``: the multi-channel search of recall, turns and items in one ranked list.

A turn (the input) is read by :func:`~cogitator_memory.recall.analyze_query`; small talk is not
searched. Otherwise each channel ranks what it finds:

- turns: ``vector`` (the cosines the caller gives, kept when at least ``vector_min_cosine`` and
  ``vector_relative`` of the best), ``bm25`` (BM25 of the input's terms over the turns given),
  ``time`` (turns said during the time the input names, or naming a time in it; for a temporal
  question naming no time, the turns the other channels found that name a time), ``entity``
  (turns naming, as whole words, the names in the input and the subjects of memory items it
  names), ``evidence`` (the turns the best items quote), ``standing`` (the user's turns stating
  a lasting instruction or preference, :mod:`~cogitator_memory.recall.standing`) and ``hop`` (a
  second search with the telling terms of the best turns of the others,
  :mod:`~cogitator_memory.recall.hops`);
- items: ``item_bm25``, ``item_vector`` (the item cosines the caller gives), ``item_entity``
  (items about a subject the input names), ``item_time`` (items whose time in the world overlaps
  the time the input names) and ``item_graph`` (a personalized PageRank walk over items and
  their entities, from the items the other channels found).

The rankings are fused by weighted reciprocal rank (weights by kind of question,
:class:`~cogitator_memory.recall.RetrieverSettings`), each hit's score grows with the share of the
input's terms it holds, a little for newer turns and for items sent to a model more often, by
who said it (:mod:`~cogitator_memory.recall.speakers`), the hits of a question across the
conversation are spread over its sessions, the best ``mmr_pool`` are laid out by maximal
marginal relevance (alike meaning sharing terms), and a
:class:`~cogitator_memory.recall.Reranker` reorders the best ``rerank_top``; one that fails leaves
the order and is reported in ``errors``.

The retriever keeps the terms of what it searched (per thread and per agent's items), so a
thread of 10,000 turns is tokenized once; it changes nothing it is given.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from operator import attrgetter
from typing import Any, Literal

from ..errors import InvalidArgumentError
from ..index.terms import recall_terms, stemmed_terms
from ..items.base import is_memory_item_adapter
from ..items.records import MemoryItem, MemoryScope, check_scope
from ..result import unwrap
from ..search.fusion import reciprocal_rank_fusion
from ..threads.records import EVENT_TYPES, MemoryEntry
from . import item_search
from .corpus import Corpus, CorpusCache, Doc, phrase_pattern, turn_text
from .hops import (
    asks_across,
    asks_summary,
    exchanges,
    facet_ranking,
    facets,
    hop_ranking,
    session_spread,
    sessions,
)
from .query import QueryAnalysis, analyze_query_async, query_terms
from .rerank import Reranker, check_results, reranked_order
from .settings import Channel, RetrieverSettings, check_settings
from .speakers import Asked, Participants, asked_speakers, participants, speaker_boost, speaker_name
from .standing import standing_ranking

HitKind = Literal["turn", "item"]

_ID = attrgetter("id")
_WORD = re.compile(r"\w+")
#: The most names (of the input and of the items it names) the entity channel looks for.
MAX_ENTITY_NAMES = 64
#: The fewest terms an input needs for the ``hop`` channel: a search for a word or two ("banjo")
#: looks that word up; a second hop from its best turns would add what is only near them.
HOP_MIN_TERMS = 3
#: Past this many turns, a term held by more than half of them is not searched by BM25 (its
#: weight is under a tenth of a rare term's, and its postings cost the most to read).
COMMON_TERMS_FROM = 2000


@dataclass(slots=True)
class RecallHit:
    """One thing recall found: a turn (``entry``) or a memory item (``item``).

    ``id`` is the entry's or item's id, ``score`` its final score (higher is better; the list is
    in order already), ``channels`` the 1-based rank it had in each channel that found it, and
    ``relevance`` the reranker's score when a reranker ordered it.
    """

    kind: HitKind
    id: str
    score: float
    entry: MemoryEntry | None = None
    item: MemoryItem | None = None
    channels: dict[Channel, int] = field(default_factory=dict)
    relevance: float | None = None

    @property
    def text(self) -> str:
        """The text the hit was searched by."""
        if self.entry is not None:
            return turn_text(self.entry)
        assert self.item is not None
        return item_search.item_text(self.item)


@dataclass(slots=True)
class Retrieval:
    """What :meth:`MemoryRetriever.retrieve` found: the reading of the input (``analysis``), the
    hits best first, and what failed on the way (``errors``: a reranker, an item store)."""

    analysis: QueryAnalysis
    hits: list[RecallHit] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    @property
    def entries(self) -> list[MemoryEntry]:
        """The turns found, best first."""
        return [h.entry for h in self.hits if h.entry is not None]

    @property
    def items(self) -> list[MemoryItem]:
        """The items found, best first."""
        return [h.item for h in self.hits if h.item is not None]


def _scores(name: str, value: object) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a dict of id -> cosine, got {type(value).__name__}")
    out: dict[str, float] = {}
    for key, score in value.items():
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
            raise InvalidArgumentError(f"{name}[{key!r}]", f"must be a number, got {score!r}")
        out[str(key)] = float(score)
    return out


class MemoryRetriever:
    """Finds the turns and memory items that answer a turn (see the module docs).

    ``settings`` is a :class:`RetrieverSettings` or a dict of its fields; ``reranker`` any
    :class:`~cogitator_memory.recall.Reranker`. One retriever serves many threads and turns.
    """

    def __init__(self, settings: RetrieverSettings | Mapping[str, Any] | None = None, *, reranker: Any = None) -> None:
        self.settings = check_settings(settings)
        if reranker is not None and not hasattr(reranker, "rerank"):
            raise InvalidArgumentError("reranker", "must have an async rerank(query, documents)")
        self.reranker: Reranker | None = reranker
        self._turns: CorpusCache[MemoryEntry] = CorpusCache(64)
        self._items: CorpusCache[MemoryItem] = CorpusCache(64)

    async def retrieve(
        self,
        input: str,
        *,
        anchor: datetime | None = None,
        time_zone: str | tzinfo = "UTC",
        history: Sequence[MemoryEntry] = (),
        held: Collection[str] = (),
        cosines: Mapping[str, float] | None = None,
        items: Sequence[MemoryItem] | None = None,
        item_adapter: Any = None,
        scope: MemoryScope | Mapping[str, Any] | None = None,
        item_cosines: Mapping[str, float] | None = None,
        keyword_hits: Sequence[str] | None = None,
        limit: int | None = None,
        analysis: QueryAnalysis | None = None,
        turn_terms: Mapping[str, Sequence[str] | Mapping[str, int]] | None = None,
        item_keyword_hits: Sequence[str] | None = None,
        item_terms: Mapping[str, Sequence[str] | Mapping[str, int]] | None = None,
    ) -> Retrieval:
        """The turns of ``history`` and the memory items that answer ``input``, best first.

        ``anchor`` (default now) and ``time_zone`` read the time words of the input (see
        :func:`analyze_query`; pass ``analysis`` when it was read already). ``history`` is the
        turns to search, in conversation order; ``held`` ids of turns or items already in the
        context, never returned. ``cosines`` (entry id -> cosine with the input's vector) and
        ``item_cosines`` (item id -> cosine) feed the vector channels; without them those
        channels find nothing. ``keyword_hits`` (entry ids, best first) replaces the BM25 of the
        turns by a keyword search done elsewhere (an embedding store's, over a whole thread).
        ``items`` are the items to search; or give ``item_adapter`` (a
        :class:`~cogitator_memory.items.MemoryItemAdapter`) and ``scope``, and the active and
        superseded items the scope sees, known at ``anchor``, are read. ``limit`` (default
        ``settings.limit``) caps the hits. ``turn_terms`` (entry id -> stemmed terms: every occurrence
        in order, or each term with its count, as :meth:`RecallRecord.term_map
        <cogitator_memory.index.RecallRecord.term_map>` gives them) says the
        turns are candidates of a recall index (whose records carry their terms): they are
        searched in a corpus of their own, not kept between calls, their terms not read again.
        ``item_keyword_hits`` (item ids, best first) and ``item_terms`` (item id -> stemmed
        terms) do the same for ``items``: the keyword search done elsewhere (a recall index's,
        over every record in scope) replaces their BM25, and the items are searched in a corpus
        made for this call, with the terms given (an item missing from them is read).
        Raises
        :class:`~cogitator_memory.errors.InvalidArgumentError` naming a bad argument.
        """
        s = self.settings
        if limit is None:
            limit = s.limit
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError("limit", f"must be a positive integer, got {limit!r}")
        if isinstance(history, str) or not isinstance(history, Sequence):
            raise InvalidArgumentError("history", "must be a list of entries")
        if not all(issubclass(t, MemoryEntry) for t in set(map(type, history))):  # checked at C speed
            for i, entry in enumerate(history):
                if not isinstance(entry, MemoryEntry):
                    raise InvalidArgumentError(f"history[{i}]", f"must be a MemoryEntry, got {type(entry).__name__}")
        if isinstance(held, str):
            raise InvalidArgumentError("held", "must be a collection of ids, not one string")
        held_ids = frozenset(held)
        turn_cos = _scores("cosines", cosines)
        item_cos = _scores("item_cosines", item_cosines)
        if analysis is None:
            analysis = await analyze_query_async(input, anchor, time_zone)
        elif not isinstance(analysis, QueryAnalysis):
            raise InvalidArgumentError("analysis", f"must be a QueryAnalysis, got {type(analysis).__name__}")
        result = Retrieval(analysis)
        if not analysis.search:
            return result
        zone = analysis.time_zone
        found_items = await self._read_items(items, item_adapter, scope, analysis, result)

        rankings: list[tuple[Channel, list[str]]] = []
        # --- items -----------------------------------------------------------------------------
        item_map: dict[str, MemoryItem] = {}
        named: dict[str, str] = {}
        corpus_i: Corpus[MemoryItem] | None = None
        if found_items:
            item_map = {i.id: i for i in found_items if i.id not in held_ids}
            pool = list(item_map.values())
            if item_terms is not None or item_keyword_hits is not None:
                corpus_i = Corpus.new(s.bm25_k1, s.bm25_b, lazy=True)
                corpus_i.known_terms = item_terms or {}
            else:
                key = f"{pool[0].scope.agent_id}" if pool else "-"
                corpus_i = self._items.get(key, s.bm25_k1, s.bm25_b)
            corpus_i.sync(pool, _ID, item_search.item_text)
            named = item_search.named_subjects(analysis, pool)
            if item_keyword_hits is not None:
                item_bm25 = [r for r in dict.fromkeys(item_keyword_hits) if r in item_map][: s.depth]
            else:
                item_bm25 = item_search.bm25_ranking(corpus_i, analysis, s.depth)
            item_rank: list[tuple[Channel, list[str]]] = [
                ("item_bm25", item_bm25),
                (
                    "item_vector",
                    item_search.vector_ranking(item_cos, item_map, s.vector_min_cosine, s.vector_relative, s.depth),
                ),
                ("item_entity", item_search.entity_ranking(pool, named)[: s.depth]),
                ("item_time", item_search.time_ranking(pool, analysis)[: s.depth]),
            ]
            seeds: dict[str, float] = {}
            for _channel, ranking in item_rank:
                for rank, rid in enumerate(ranking[:10], start=1):
                    seeds[rid] = seeds.get(rid, 0.0) + 1.0 / rank
            item_rank.append(
                (
                    "item_graph",
                    item_search.graph_ranking(
                        pool, seeds, named, damping=s.graph_damping, iterations=s.graph_iterations, depth=s.depth
                    ),
                )
            )
            rankings.extend((c, [f"i:{r}" for r in ranking]) for c, ranking in item_rank)

        # --- turns -----------------------------------------------------------------------------
        entry_map: _Turns = _Turns({}, held_ids)
        index_of: Mapping[str, int] = {}
        span = 1
        corpus_t: Corpus[MemoryEntry] | None = None
        keep: Any = None
        asked_terms: list[str] = []
        if history:
            if turn_terms is not None:
                corpus_t = Corpus.new(s.bm25_k1, s.bm25_b, lazy=True)
                corpus_t.known_terms = turn_terms
            else:
                corpus_t = self._turns.get(history[0].thread_id, s.bm25_k1, s.bm25_b)
            corpus_t.sync(history, _ID, turn_text, skip=_is_event)
            index_of = corpus_t.index()
            span = max(1, len(index_of) - 1)
            entry_map = _Turns(corpus_t.docs, held_ids)
            # every document of the BM25 index is a turn of the corpus: only held ones are left out
            keep = entry_map.__contains__ if held_ids else None

            vector = item_search.vector_ranking(turn_cos, entry_map, s.vector_min_cosine, s.vector_relative, s.depth)
            if keyword_hits is not None:
                bm25 = [r for r in dict.fromkeys(keyword_hits) if r in entry_map][: s.depth]
            else:
                asked_terms = _telling(corpus_t, stemmed_terms(analysis.terms))
                bm25 = [r for r, _ in corpus_t.bm25.search_terms(asked_terms, limit=s.depth, keep=keep)]
            entity = self._entity_turns(corpus_t, analysis, named, keep) if s.weight(analysis.kind, "entity") else []
            time: list[str] = []
            if s.weight(analysis.kind, "time") > 0:
                time = self._time_turns(corpus_t, analysis, entry_map, [vector, bm25, entity], zone)
            evidence: list[str] = []
            if item_map and s.evidence_items:
                best = reciprocal_rank_fusion(
                    [r for c, r in rankings], k=s.rrf_k, weights=[s.weight(analysis.kind, c) for c, _ in rankings]
                )
                for rid, _score in best[: s.evidence_items]:
                    item = item_map.get(rid[2:])
                    for ev in item.evidence if item is not None else ():
                        quoted = ev.entry_id
                        if quoted is not None and quoted in entry_map and quoted not in evidence:
                            evidence.append(quoted)
            standing: list[str] = []
            if s.weight(analysis.kind, "standing") > 0:
                if not asked_terms:
                    asked_terms = _telling(corpus_t, stemmed_terms(analysis.terms))
                standing = standing_ranking(corpus_t, asked_terms, turn_cos, s.depth, keep, s.rrf_k)
            facet: list[str] = []
            if s.weight(analysis.kind, "facet") > 0 and (named_things := facets(analysis.text)):
                facet_terms = [_telling(corpus_t, stemmed_terms(query_terms(thing))) for thing in named_things]
                facet = facet_ranking(corpus_t, facet_terms, s.depth, keep)
            turn_rankings: list[tuple[Channel, list[str]]] = [
                ("vector", vector),
                ("bm25", bm25),
                ("time", time),
                ("entity", entity),
                ("evidence", evidence),
                ("standing", standing),
                ("facet", facet),
            ]
            for channel, ranking in turn_rankings:
                rankings.append((channel, [f"t:{r}" for r in ranking]))

        rankings = [(c, r) for c, r in rankings if r and s.weight(analysis.kind, c) > 0]
        if not rankings:
            return result
        fused = reciprocal_rank_fusion(
            [r for _, r in rankings], k=s.rrf_k, weights=[s.weight(analysis.kind, c) for c, _ in rankings]
        )
        if (
            corpus_t is not None
            and s.hop_seeds
            and len(analysis.terms) >= HOP_MIN_TERMS  # a lookup of a word or two is no question of several pieces
            and s.weight(analysis.kind, "hop") > 0
        ):
            best_turns = list(itertools.islice((rid[2:] for rid, _ in fused if rid[0] == "t"), s.hop_seeds))
            if not asked_terms:
                asked_terms = _telling(corpus_t, stemmed_terms(analysis.terms))
            hop = hop_ranking(corpus_t, asked_terms, best_turns, s.hop_terms, s.depth, keep)
            if hop:
                rankings.append(("hop", [f"t:{r}" for r in hop]))
                fused = reciprocal_rank_fusion(
                    [r for _, r in rankings], k=s.rrf_k, weights=[s.weight(analysis.kind, c) for c, _ in rankings]
                )
        if s.neighbour_weight > 0 and corpus_t is not None:
            fused = _with_neighbours(
                fused,
                corpus_t.order,
                index_of,
                held_ids,
                s.neighbour_weight,
                corpus_t.docs,
                sparse=turn_terms is not None,
            )
        places: dict[str, dict[Channel, int]] = {}
        for channel, ranking in rankings:
            for rank, rid in enumerate(ranking, start=1):
                places.setdefault(rid, {}).setdefault(channel, rank)

        terms = frozenset(stemmed_terms(analysis.terms))
        n_terms = len(terms)
        recency, user, coverage, retrieved = s.recency_weight, s.user_weight, s.coverage_weight, s.retrieved_weight
        summary = s.exchanges and corpus_t is not None and asks_summary(analysis.text)
        if summary:
            user = 0.0  # the replies hold most of what a summary is asked about
        turn_docs = corpus_t.docs if corpus_t is not None else {}
        people = _participants(corpus_t)
        asked_speaker = asked_speakers(analysis.text, people) if s.speaker_from_question else Asked()
        # A turn's score only grows below, by at most ``most``: a turn whose fused score, grown by
        # that much, stays under the fused score of the ``wanted``-th best cannot be among the
        # ``wanted`` best (the hits and the pool of MMR) and is not scored.
        wanted = max(limit, s.mmr_pool) if s.mmr_lambda < 1.0 else limit
        most = (1.0 + recency) * (1.0 + max(user, s.speaker_weight)) * (1.0 + coverage) * (1.0 + 1e-9)
        floor = fused[wanted - 1][1] if len(fused) > wanted else 0.0
        term_sets: dict[str, AbstractSet[str]] = {}
        scored: list[tuple[float, str]] = []
        for rid, score in fused:
            raw = rid[2:]
            if rid[0] == "t":
                if score * most < floor:
                    continue
                doc: Doc[Any] = turn_docs[raw]
                score *= 1.0 + recency * index_of.get(raw, 0) / span
                if not s.speaker_from_question:
                    if user and (message := doc.record.message) is not None and message.role == "user":
                        score *= 1.0 + user
                else:
                    score *= 1.0 + speaker_boost(doc.record, asked_speaker, people, s.speaker_weight, user)
            else:
                assert corpus_i is not None
                doc = corpus_i.docs[raw]
                score *= 1.0 + retrieved * math.log1p(item_map[raw].times_retrieved)
            term_sets[rid] = doc.term_set
            if n_terms:
                score *= 1.0 + coverage * len(terms & doc.term_set) / n_terms
            scored.append((score, rid))
        scored.sort(key=_best_first)
        if s.session_spread > 0 and corpus_t is not None and asks_across(analysis.text):
            placed = sessions(corpus_t, s.session_gap_hours)
            scored = session_spread(
                scored, lambda rid: placed.get(rid[2:]) if rid[0] == "t" else None, s.session_spread, wanted
            )
        by_id = dict((rid, sc) for sc, rid in scored)
        if summary:
            assert corpus_t is not None
            partner = _partner(corpus_t.order, index_of, held_ids, corpus_t.docs)
            ranked = _mmr(scored, term_sets, s.mmr_lambda, s.mmr_pool)
            order = exchanges(ranked, partner, limit)
            for i, rid in enumerate(order):
                if rid not in by_id:  # a partner nothing found: it ranks with the hit it answers
                    by_id[rid] = by_id[order[i - 1]] if i else 0.0
        else:
            order = _mmr(scored, term_sets, s.mmr_lambda, s.mmr_pool)[:limit]

        hits: list[RecallHit] = []
        for rid in order:
            raw = rid[2:]
            if rid[0] == "t":
                hits.append(RecallHit("turn", raw, by_id[rid], entry=entry_map[raw], channels=places.get(rid, {})))
            else:
                hits.append(RecallHit("item", raw, by_id[rid], item=item_map[raw], channels=places.get(rid, {})))
        result.hits = await self._rerank(analysis.text, hits, result)
        return result

    # ----- channels ------------------------------------------------------------------------------

    def _entity_turns(self, corpus: Any, analysis: QueryAnalysis, named: Mapping[str, str], keep: Any) -> list[str]:
        """Turns naming the input's names and the item subjects it names, more names first."""
        names = list(dict.fromkeys([*analysis.entities, *named.values()]))[:MAX_ENTITY_NAMES]
        if not names:
            return []
        counts: dict[str, int] = {}
        first: dict[str, int] = {}
        order = 0
        depth = self.settings.depth
        for name in names:
            pattern = phrase_pattern(name)
            terms = recall_terms(name)
            if pattern is None or not terms:
                continue
            needed = frozenset(terms)  # a turn holding the phrase holds each of its terms
            # one word of letters and digits: holding its term is holding the word
            one_word = len(terms) == 1 and terms[0].isalnum() and [terms[0]] == _WORD.findall(name.casefold())
            if corpus.lazy:  # a few hundred candidates of an index: read their terms, not a BM25 index
                holding = [r for r in corpus.order if needed <= corpus.docs[r].term_set and (keep is None or keep(r))]
                found = holding[: depth * 4]
            else:
                if any(corpus.bm25.doc_freq(t) == 0 for t in needed):
                    continue
                found = [rid for rid, _score in corpus.bm25.search_terms(terms, limit=depth * 4, keep=keep)]
            for rid in found:
                doc = corpus.docs[rid]
                if needed <= doc.term_set and (one_word or pattern.search(doc.folded)):
                    counts[rid] = counts.get(rid, 0) + 1
                    if rid not in first:
                        first[rid] = order
                        order += 1
        ranked = sorted(counts, key=lambda r: (-counts[r], first[r]))
        return ranked[:depth]

    def _time_turns(
        self,
        corpus: Any,
        analysis: QueryAnalysis,
        entries: Mapping[str, MemoryEntry],
        found: Sequence[Sequence[str]],
        zone: str,
    ) -> list[str]:
        """Turns said during the time the input names, or that name a time in it; for a temporal
        question naming no time, the turns found by other channels that name any time."""
        depth = self.settings.depth
        # the time words of a turn are read (once, then kept) only for the best of each channel
        # the best of each channel in turn (first of each, then second...), ``time_checked`` in all
        interleaved = (r for rank in itertools.zip_longest(*found) for r in rank if r is not None)
        candidates = list(itertools.islice(dict.fromkeys(interleaved), self.settings.time_checked))
        interval = analysis.interval
        if interval is None:
            if analysis.kind != "temporal":
                return []
            return [r for r in candidates if corpus.times_of(r, entries[r].created_at, zone)][:depth]
        start, end = interval.start, interval.end
        said = [rid for rid in _said_between(corpus, start, end) if rid in entries]
        if len(said) > 1:  # those sharing most terms with the input first, then the other channels' best
            terms = frozenset(stemmed_terms(analysis.terms))
            placed: dict[str, int] = {}
            for ranking in found:
                for at, rid in enumerate(ranking):
                    if at < placed.get(rid, at + 1):
                        placed[rid] = at
            unplaced = len(entries)
            said.sort(key=lambda r: (-len(terms & corpus.docs[r].term_set), placed.get(r, unplaced)))
        naming = [
            r for r in candidates if any(t.overlaps(interval) for t in corpus.times_of(r, entries[r].created_at, zone))
        ]
        said_set = set(said)
        both = [r for r in naming if r in said_set]
        return list(dict.fromkeys([*both, *naming, *said]))[:depth]

    async def _read_items(
        self,
        items: Sequence[MemoryItem] | None,
        adapter: Any,
        scope: Any,
        analysis: QueryAnalysis,
        result: Retrieval,
    ) -> list[MemoryItem]:
        if items is not None:
            if isinstance(items, str) or not isinstance(items, Sequence):
                raise InvalidArgumentError("items", "must be a list of MemoryItem")
            for i, item in enumerate(items):
                if not isinstance(item, MemoryItem):
                    raise InvalidArgumentError(f"items[{i}]", f"must be a MemoryItem, got {type(item).__name__}")
            return [i for i in items if i.status in ("active", "superseded")]
        if adapter is None:
            return []
        if not is_memory_item_adapter(adapter):
            raise InvalidArgumentError("item_adapter", "must be a MemoryItemAdapter (a store that keeps items)")
        if scope is None:
            raise InvalidArgumentError("scope", "is required with item_adapter")
        checked = check_scope("scope", scope)
        try:
            found: list[MemoryItem] = unwrap(
                await adapter.query_items(
                    {"visible_to": checked, "statuses": ["active", "superseded"], "known_at": analysis.anchor}
                )
            )
        except Exception as exc:  # the items are left out, the turns still searched
            result.errors.append(exc)
            return []
        return found

    async def _rerank(self, query: str, hits: list[RecallHit], result: Retrieval) -> list[RecallHit]:
        reranker = self.reranker
        top = min(self.settings.rerank_top, len(hits))
        if reranker is None or top < 2:
            return hits
        head = hits[:top]
        try:
            answer = await reranker.rerank(query, [h.text for h in head])
            checked = check_results(answer, top)
        except Exception as exc:
            result.errors.append(exc)
            return hits
        for r in checked:
            head[r.index].relevance = r.score
        return [head[i] for i in reranked_order(checked, top)] + hits[top:]


def _participants(corpus: Corpus[MemoryEntry] | None) -> Participants:
    """The speakers of the corpus' turns (kept per state of the corpus)."""
    if corpus is None:
        return Participants(frozenset(), {})
    found: Participants | None = corpus.derived.get("participants")
    if found is None:
        docs = corpus.docs.values()
        found = corpus.derived["participants"] = participants((d.record for d in docs), (d.length for d in docs))
    return found


def _is_event(entry: MemoryEntry) -> bool:
    return entry.type in EVENT_TYPES


def _said_between(corpus: Any, start: datetime, end: datetime) -> list[str]:
    """The ids of the turns said in ``[start, end)``, in the order of the corpus' documents: two
    bisections of their times, sorted once per state of the corpus (kept in ``derived``)."""
    found = corpus.derived.get("said_at")
    if found is None:
        ids = list(corpus.docs)
        times = [corpus.docs[rid].record.created_at for rid in ids]
        order = sorted(range(len(ids)), key=times.__getitem__)
        found = corpus.derived["said_at"] = (ids, [times[i] for i in order], order)
    ids, times, order = found
    chosen = order[bisect.bisect_left(times, start) : bisect.bisect_left(times, end)]
    return [ids[i] for i in sorted(chosen)]


def _telling(corpus: Any, terms: Sequence[str]) -> list[str]:
    """``terms`` without those more than half of a large corpus holds (see :data:`COMMON_TERMS_FROM`)."""
    if len(corpus.docs) < COMMON_TERMS_FROM:
        return list(terms)
    size, held = corpus.doc_freqs(terms)
    kept = [t for t in terms if held[t] * 2 <= size]
    return kept or list(terms)


def _with_neighbours(
    fused: list[tuple[str, float]],
    order: Sequence[str],
    index_of: Mapping[str, int],
    held: Collection[str],
    weight: float,
    docs: Mapping[str, Doc[Any]],
    sparse: bool = False,
) -> list[tuple[str, float]]:
    """Each turn's fused score plus ``weight`` times the best score of the turns next to it in
    the same thread (a question is found through its answer, and the answer through its
    question; ``order`` is every turn, ``held`` those never returned), best first. With
    ``sparse`` (``order`` is an index's candidates, not a whole thread) a turn is next to
    another only when their ``seq`` says so, not because no candidate lies between them."""
    out = dict(fused)
    bonus: dict[str, float] = {}
    last = len(order) - 1
    for key, score in fused:
        if key[0] != "t":
            continue
        at = index_of.get(key[2:])
        if at is None:
            continue
        extra = weight * score
        record = docs[key[2:]].record
        thread = record.thread_id
        for j in (at - 1, at + 1):
            if 0 <= j <= last and (not held or order[j] not in held):
                other = docs[order[j]].record
                if other.thread_id != thread or (sparse and abs(other.seq - record.seq) != 1):
                    continue
                near = "t:" + order[j]
                kept = bonus.get(near, 0.0)
                bonus[near] = extra if extra > kept else kept
    for key, extra in bonus.items():
        out[key] = out.get(key, 0.0) + extra
    ranked = sorted([(-score, key) for key, score in out.items()])  # best first, then by id
    return [(key, -score) for score, key in ranked]


def _partner(
    order: Sequence[str], index_of: Mapping[str, int], held: Collection[str], docs: Mapping[str, Doc[Any]]
) -> Callable[[str], str | None]:
    """The other turn of a hit's exchange (``None`` for an item or a turn without one): the turn
    after a user's turn (its reply), the turn before another role's (what it answers), in the
    same thread, next to it there (``seq``), said by another speaker (role or name) and not held."""
    last = len(order) - 1

    def partner(rid: str) -> str | None:
        if rid[0] != "t":
            return None
        at = index_of.get(rid[2:])
        if at is None:
            return None
        record = docs[rid[2:]].record
        message = record.message
        step = 1 if message is None or message.role == "user" else -1
        j = at + step
        if not 0 <= j <= last:
            return None
        other = order[j]
        near = docs[other].record
        if (held and other in held) or near.thread_id != record.thread_id or near.seq != record.seq + step:
            return None  # a turn of another thread, or (over an index's candidates) not next to it
        if _speaker(near) == _speaker(record):
            return None  # the same speaker going on: no reply
        return "t:" + other

    return partner


def _speaker(entry: MemoryEntry) -> tuple[str | None, str | None]:
    message = entry.message
    return (message.role if message is not None else None), speaker_name(entry)


class _Turns(Mapping[str, MemoryEntry]):
    """The turns of a corpus a search may return (those not held), by id, without a copy."""

    __slots__ = ("_docs", "_held")

    def __init__(self, docs: Mapping[str, Any], held: Collection[str]) -> None:
        self._docs = docs
        self._held = held

    def __getitem__(self, key: str) -> MemoryEntry:
        if key in self._held:
            raise KeyError(key)
        entry: MemoryEntry = self._docs[key].record
        return entry

    def __contains__(self, key: object) -> bool:
        return key in self._docs and key not in self._held

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._docs if k not in self._held)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _best_first(pair: tuple[float, str]) -> tuple[float, str]:
    return -pair[0], pair[1]


def _mmr(
    scored: list[tuple[float, str]], term_sets: Mapping[str, AbstractSet[str]], lam: float, pool: int
) -> list[str]:
    """Ids in maximal-marginal-relevance order over the best ``pool`` (the rest after them, as
    they were): each step takes the hit maximising ``lam * relevance - (1 - lam) * likeness``
    to those taken (the first of equals), relevance being the score over the best score,
    likeness the share of terms (Jaccard)."""
    ids = [rid for _, rid in scored]
    if lam >= 1.0 or pool < 2 or len(ids) < 2:
        return ids
    head = scored[:pool]
    best = head[0][0] or 1.0
    rel = [sc / best for sc, _ in head]
    sets: list[AbstractSet[str]] = [term_sets.get(rid, frozenset()) for _, rid in head]
    alike = [0.0] * len(head)
    left = list(range(len(head)))
    taken: list[str] = []
    while left:
        pick = left[0]
        top = lam * rel[pick] - (1.0 - lam) * alike[pick]
        for i in left:
            value = lam * rel[i] - (1.0 - lam) * alike[i]
            if value > top:
                pick, top = i, value
        taken.append(head[pick][1])
        left.remove(pick)
        chosen = sets[pick]
        size = len(chosen)
        for i in left:
            other = len(sets[i])
            if size or other:
                shared = len(chosen & sets[i])
                share = shared / (size + other - shared)
                if share > alike[i]:
                    alike[i] = share
    return taken + ids[pool:]


__all__ = ["HitKind", "MemoryRetriever", "RecallHit", "Retrieval"]
