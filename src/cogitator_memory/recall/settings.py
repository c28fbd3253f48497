"""The settings of :class:`~cogitator_memory.recall.MemoryRetriever`: thresholds, channel weights, rerank.

Every number the search uses is here, so a builder's config can carry them
(``ContextBuilderConfig(recall={...})``) and a benchmark can try others. The defaults were chosen
on chats 1-10 of the BEAM 100K dev set and checked on chats 11-20 (``docs/benchmarks.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InvalidArgumentError
from ..threads import tree
from .query import QUERY_KINDS, QueryKind

Channel: TypeAlias = Literal[
    "vector",
    "bm25",
    "time",
    "entity",
    "item_bm25",
    "item_vector",
    "item_entity",
    "item_time",
    "item_graph",
    "evidence",
    "hop",
    "standing",
    "facet",
]
#: Every channel: four find turns, five find items, ``evidence`` finds the turns the best
#: items quote, ``hop`` the turns sharing telling terms with the best turns of the others,
#: ``standing`` the user's turns stating a lasting instruction or preference and ``facet`` the
#: best turns about each of several things a question names (see :mod:`~cogitator_memory.recall.hops`).
CHANNELS: tuple[Channel, ...] = get_args(Channel)
TURN_CHANNELS: tuple[Channel, ...] = ("vector", "bm25", "time", "entity", "evidence", "hop", "standing", "facet")
ITEM_CHANNELS: tuple[Channel, ...] = ("item_bm25", "item_vector", "item_entity", "item_time", "item_graph")

_BASE: dict[Channel, float] = {
    "vector": 2.0,
    "bm25": 1.0,
    "time": 0.6,
    "entity": 0.6,
    "item_bm25": 1.0,
    "item_vector": 1.2,
    "item_entity": 0.8,
    "item_time": 0.6,
    "item_graph": 0.5,
    "evidence": 0.6,
    "hop": 0.6,
    "standing": 0.6,
    "facet": 1.0,
}


def _weights(**changes: float) -> dict[Channel, float]:
    out: dict[str, float] = {str(c): w for c, w in _BASE.items()}
    for name, value in changes.items():
        assert name in out, name
        out[name] = value
    return {c: out[c] for c in _BASE}


#: The channel weights of each kind of question.
DEFAULT_WEIGHTS: dict[QueryKind, dict[Channel, float]] = {
    "general": _weights(),
    "temporal": _weights(time=1.5, item_time=1.5, entity=0.8),
    "aggregate": _weights(bm25=1.2, entity=0.8, item_bm25=1.2, item_graph=0.8),
    "update": _weights(item_vector=1.5, item_bm25=1.3, item_entity=1.0),
    "preference": _weights(item_vector=1.5, item_bm25=1.2),
}


#: Hits each channel hands to the fusion unless ``depth`` says otherwise.
DEFAULT_DEPTH = 100


class RetrieverSettings(BaseModel):
    """How :class:`~cogitator_memory.recall.MemoryRetriever` searches (every field has a default).

    - ``vector_min_cosine`` / ``vector_relative``: a turn or item is found by its vector when
      its cosine with the input is at least this much, and at least this share of the best one.
      The defaults (0.1 and 0) keep nearly every cosine: the fusion ranks by place, not by
      cosine, and with the default local model related turns often score only 0.3-0.45. A floor
      of 0.45 and 0.6 of the best (the defaults before stop 32) lost .038 of R@10 on the
      held-out BEAM chats and .089 on the held-out two-person chat (``docs/benchmarks.md``).
    - ``depth``: hits each channel hands to the fusion.
    - ``rrf_k`` and ``weights``: weighted reciprocal rank fusion, weights per kind of question
      (given kinds and channels are merged over :data:`DEFAULT_WEIGHTS`).
    - ``bm25_k1`` / ``bm25_b``: BM25 over the turns and items (``b=1`` normalises length fully,
      so long replies do not win every keyword search of a chat).
    - ``coverage_weight``: the fused score grows by up to this share for a hit holding every
      term of the input (rerank by the share of input words a hit holds).
    - ``recency_weight``: up to this share more for the newest turn (0 for the oldest), and
      ``retrieved_weight`` times ``log(1 + times_retrieved)`` more for an item sent often.
    - ``mmr_lambda`` / ``mmr_pool``: maximal marginal relevance over the best ``mmr_pool`` hits
      (1 keeps the order; lower trades relevance for variety), alike meaning sharing terms.
    - ``rerank_top``: how many of the best hits a :class:`~cogitator_memory.recall.Reranker` reorders.
    - ``limit``: hits returned unless ``retrieve(limit=...)`` says otherwise.
    - ``neighbour_weight``: a turn's score grows by this share of the best score of the turns
      next to it (a question found through its answer, an answer through its question).
    - ``graph_damping`` / ``graph_iterations``: the personalized PageRank walk over items and entities.
    - ``evidence_items``: the best items whose quoted turns the ``evidence`` channel finds.
    - ``user_weight``: in a chat between a user and an assistant, a turn the user said scores
      this share more when the question asks about no speaker (what a conversation is asked
      about later is mostly what the user told: on the BEAM dev chats three evidence turns in
      four are the user's, of half the turns); no speaker is favoured in a conversation between
      peers: named people (two names or more in ``message.name``), or an unnamed "user" and
      "assistant" whose turns run alike (see :mod:`~cogitator_memory.recall.speakers`).
    - ``speaker_from_question`` / ``speaker_weight``: a question asking about one speaker ("what
      did you recommend?", "what did I tell you?", "what did Melanie paint?") makes that
      speaker's turns score ``speaker_weight`` more, and no other speaker's (see
      :mod:`~cogitator_memory.recall.speakers`); ``False`` applies ``user_weight`` to every
      question.
    - ``hop_seeds`` / ``hop_terms``: the ``hop`` channel searches again with the question's terms
      and the ``hop_terms`` most telling terms of the ``hop_seeds`` best turns the other
      channels found (0 seeds: no second hop; an input of fewer than ``HOP_MIN_TERMS`` (3) terms,
      a lookup of a word or two, gets none either; see :mod:`~cogitator_memory.recall.hops`).
    - ``session_spread`` / ``session_gap_hours``: for a question about something across the
      conversation ("over time", "in order", "summarize"), the best hits are taken so that each
      hit's score is divided by ``1 + session_spread * n``, ``n`` the hits of its session taken
      before it (0, the default: off; 0.5 won on the BEAM tuning chats but not on the held-out
      ones); a session is a run of turns without a pause of ``session_gap_hours``.
    - ``exchanges``: for a question asking for a summary ("summarize", "an overview", "recap"),
      each turn hit brings the other turn of its exchange next to it (a user's turn its reply,
      a reply the turn it answers), and ``user_weight`` does not apply (a speaker the question
      names still does); ``False`` ranks those questions like any other. On the BEAM dev chats
      the summary questions' R@10 went .115 -> .178 (tuning) and .020 -> .114 (held out).
    - ``time_checked``: how many turns the ``time`` channel reads the time words of, the best
      of the other channels taken in turn (read once per turn and kept; reading them is the
      dearest step of a search).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    vector_min_cosine: float = Field(default=0.1, ge=-1.0, le=1.0)
    vector_relative: float = Field(default=0.0, ge=0.0, le=1.0)
    depth: int = Field(default=DEFAULT_DEPTH, ge=1, le=10_000)
    rrf_k: float = Field(default=10.0, ge=0.0)
    weights: dict[QueryKind, dict[Channel, float]] = Field(default_factory=lambda: _copy(DEFAULT_WEIGHTS))
    bm25_k1: float = Field(default=3.0, ge=0.0)
    bm25_b: float = Field(default=1.0, ge=0.0, le=1.0)
    coverage_weight: float = Field(default=0.1, ge=0.0)
    recency_weight: float = Field(default=0.05, ge=0.0)
    retrieved_weight: float = Field(default=0.05, ge=0.0)
    mmr_lambda: float = Field(default=0.85, ge=0.0, le=1.0)
    mmr_pool: int = Field(default=30, ge=0, le=1000)
    rerank_top: int = Field(default=30, ge=0, le=1000)
    limit: int = Field(default=20, ge=1, le=10_000)
    neighbour_weight: float = Field(default=0.4, ge=0.0)
    graph_damping: float = Field(default=0.5, gt=0.0, lt=1.0)
    graph_iterations: int = Field(default=20, ge=1, le=200)
    evidence_items: int = Field(default=5, ge=0, le=1000)
    time_checked: int = Field(default=8, ge=0, le=1000)
    user_weight: float = Field(default=1.0, ge=0.0)
    speaker_from_question: bool = True
    speaker_weight: float = Field(default=1.0, ge=0.0)
    hop_seeds: int = Field(default=3, ge=0, le=100)
    hop_terms: int = Field(default=10, ge=1, le=100)
    session_spread: float = Field(default=0.0, ge=0.0)
    exchanges: bool = True
    session_gap_hours: float = Field(default=4.0, gt=0.0)

    @field_validator("weights", mode="before")
    @classmethod
    def _merge(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        merged = _copy(DEFAULT_WEIGHTS)
        for kind, table in value.items():
            if kind not in QUERY_KINDS:
                raise ValueError(f"unknown kind of question {kind!r}; known: {', '.join(QUERY_KINDS)}")
            if not isinstance(table, Mapping):
                raise ValueError(f"the weights of {kind} must be a dict of channel weights")
            for channel, weight in table.items():
                if channel not in CHANNELS:
                    raise ValueError(f"unknown channel {channel!r}; known: {', '.join(CHANNELS)}")
                if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
                    raise ValueError(f"the weight of {kind}.{channel} must be a finite number >= 0, got {weight!r}")
                merged[kind][channel] = float(weight)
        return merged

    def weight(self, kind: QueryKind, channel: Channel) -> float:
        """The weight of ``channel`` for a question of ``kind``."""
        return self.weights.get(kind, DEFAULT_WEIGHTS[kind]).get(channel, _BASE[channel])


def _copy(weights: Mapping[QueryKind, Mapping[Channel, float]]) -> dict[QueryKind, dict[Channel, float]]:
    return {kind: dict(table) for kind, table in weights.items()}


def check_settings(value: object, name: str = "settings") -> RetrieverSettings:
    """:class:`RetrieverSettings` from one, a dict of its fields or ``None`` (the defaults);
    ``InvalidArgumentError`` naming the field otherwise."""
    if value is None:
        return RetrieverSettings()
    if isinstance(value, RetrieverSettings):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be RetrieverSettings or a dict, got {type(value).__name__}")
    try:
        return RetrieverSettings.model_validate(dict(value))
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


__all__ = [
    "CHANNELS",
    "DEFAULT_DEPTH",
    "DEFAULT_WEIGHTS",
    "ITEM_CHANNELS",
    "TURN_CHANNELS",
    "Channel",
    "RetrieverSettings",
    "check_settings",
]
