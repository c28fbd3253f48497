"""The context builder's configuration: strategies, partitions and their budgets, and the checks.

:class:`ContextBuilderConfig` is what :class:`~cogitator_memory.context.ContextBuilder` takes
(a model or a dict of its fields). Every check raises
:class:`~cogitator_memory.errors.InvalidArgumentError` naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeAlias, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidArgumentError
from ..recall.settings import RetrieverSettings, check_settings
from ..threads import tree
from ..threads.values import check_optional_text

ContextStrategy: TypeAlias = Literal["recent", "relevant", "hybrid"]
ContextPartition: TypeAlias = Literal[
    "system", "pinned", "index", "summaries", "brief", "facts", "recall", "recent", "final"
]

#: Every strategy, in the order the docs list them.
STRATEGIES: tuple[ContextStrategy, ...] = get_args(ContextStrategy)
#: Every partition, from the most lasting (the system prompt) to the turn's input. A block that a
#: kept block of a partition earlier in this order holds word for word is a duplicate.
PARTITIONS: tuple[ContextPartition, ...] = get_args(ContextPartition)
#: The partitions that split what the required ones leave, in fill order.
FILL_ORDER: tuple[ContextPartition, ...] = ("facts", "recall", "recent")
#: The default share of the recall partition with the hybrid strategy.
HYBRID_RECALL_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class ContextPartitionBudget:
    """What a partition may take: ``required`` ones are fitted first; the others take up to
    ``share`` (0..1) of what the required ones leave. ``share=None`` on ``recent`` means what
    the other shares leave."""

    share: float | None = None
    required: bool = False


def check_share(name: str, value: object) -> float | None:
    """``None`` or a finite number in [0, 1]."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidArgumentError(name, f"must be a number from 0 to 1, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidArgumentError(name, f"must be from 0 to 1, got {value}")
    return float(value)


def merge_partitions(
    defaults: Mapping[ContextPartition, ContextPartitionBudget],
    overrides: Mapping[str, Any] | None,
    name: str = "partitions",
) -> dict[ContextPartition, ContextPartitionBudget]:
    """``overrides`` merged field by field over ``defaults``, checked.

    An override is a :class:`ContextPartitionBudget` or a dict with ``share`` and/or
    ``required``. ``system`` and ``final`` stay required. The shares of the partitions that are
    not required may add up to 1 at most.
    """
    merged = dict(defaults)
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise InvalidArgumentError(name, f"must be a dict of partition budgets, got {type(overrides).__name__}")
        for key, value in overrides.items():
            if key not in PARTITIONS:
                raise InvalidArgumentError(name, f"unknown partition {key!r}; known: {', '.join(PARTITIONS)}")
            base = merged[key]
            if isinstance(value, ContextPartitionBudget):
                share, required = value.share, value.required
            elif isinstance(value, Mapping):
                unknown = sorted(str(k) for k in value if k not in ("share", "required"))
                if unknown:
                    raise InvalidArgumentError(f"{name}.{key}", f"unknown key(s) {', '.join(unknown)}")
                share = value.get("share", base.share)
                required = value.get("required", base.required)
            else:
                raise InvalidArgumentError(
                    f"{name}.{key}", f"must be a ContextPartitionBudget or a dict, got {type(value).__name__}"
                )
            share = check_share(f"{name}.{key}.share", share)
            if not isinstance(required, bool):
                raise InvalidArgumentError(f"{name}.{key}.required", f"must be a boolean, got {required!r}")
            if key in ("system", "final") and not required:
                raise InvalidArgumentError(f"{name}.{key}.required", f"the {key} partition is always required")
            merged[key] = ContextPartitionBudget(share=share, required=required)
    total = sum(b.share or 0.0 for b in merged.values() if not b.required)
    if total > 1.0 + 1e-9:
        raise InvalidArgumentError(
            name, f"the shares of the partitions that are not required add up to {total:g}, more than 1"
        )
    return merged


class RecallSettings(RetrieverSettings):
    """The search settings of the ``relevant`` and ``hybrid`` strategies: every field of
    :class:`~cogitator_memory.recall.RetrieverSettings`, and what the builder reads for it.

    - ``window``: without a message index, the newest entries scored (``relevant``: of the
      history; ``hybrid``: of the turns older than the history it keeps).
    - ``search_limit``: how many hits a search of the message index asks for.
    - ``neighbour_tokens``: a recalled turn comes with the turns that make it readable (its
      question or answer, a short reply and what it replies to): those of at most this many
      tokens always, longer ones whole or as their opening (about this long, marked ``[...]``)
      only with room left after the turns found; 0 sends no neighbours.
    - ``turn_tokens``: a recalled turn too long for the room left is sent, if room is left, as
      its passage (about this long) that holds most of the input's terms, ``...`` marking what
      was left out (and a turn of another conversation is cut to about this long).
    - ``hybrid_limit``: the most hits ``hybrid`` ranks in one build.

    ``neighbour_tokens`` 60 and ``hybrid_limit`` 120 were chosen on BEAM chats 1-10, counting
    the evidence turns whose whole text reaches the context (see docs/benchmarks.md).
    """

    window: int = Field(default=200, ge=1, le=100_000)
    search_limit: int = Field(default=50, ge=1, le=10_000)
    neighbour_tokens: int = Field(default=60, ge=0, le=100_000)
    turn_tokens: int = Field(default=200, ge=20, le=1_000_000)
    hybrid_limit: int = Field(default=120, ge=1, le=10_000)


class GraphContextOptions(BaseModel):
    """What ``include_graph_context`` sends: the entities the turn names and those within
    ``max_depth`` hops of them (0: only the named ones), at most ``max_nodes`` of them and
    ``max_edges`` relations; ``include_inferred`` keeps relations (and entities) the inference
    pass added; ``entity_types`` keeps only entities of those types (all when ``None``)."""

    model_config = ConfigDict(extra="forbid")

    max_nodes: int = Field(default=20, ge=1, le=1_000)
    max_edges: int = Field(default=40, ge=0, le=10_000)
    max_depth: int = Field(default=2, ge=0, le=8)
    include_inferred: bool = True
    entity_types: list[str] | None = None


def check_graph_options(value: object, name: str = "config.graph_context_options") -> GraphContextOptions:
    """:class:`GraphContextOptions` from one, a dict of its fields or ``None`` (the defaults)."""
    if value is None:
        return GraphContextOptions()
    if isinstance(value, GraphContextOptions):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be GraphContextOptions or a dict, got {type(value).__name__}")
    types = value.get("entity_types")
    if types is not None and (
        not isinstance(types, list | tuple) or not all(isinstance(t, str) and t.strip() for t in types)
    ):
        raise InvalidArgumentError(f"{name}.entity_types", f"must be a list of type names, got {types!r}")
    try:
        return GraphContextOptions.model_validate(dict(value))
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_recall(value: object, name: str = "config.recall") -> RecallSettings:
    """:class:`RecallSettings` from one, a dict of its fields or ``None`` (the defaults)."""
    if value is None:
        return RecallSettings()
    if isinstance(value, RecallSettings):
        return value
    if isinstance(value, RetrieverSettings):
        return RecallSettings.model_validate(value.model_dump())
    if isinstance(value, Mapping):
        known = set(RetrieverSettings.model_fields)
        base = check_settings({k: v for k, v in value.items() if k in known}, name)
        extra = {k: v for k, v in value.items() if k not in known}
        try:
            return RecallSettings.model_validate({**base.model_dump(), **extra})
        except ValidationError as exc:
            raise tree.validation_error(name, exc) from None
    raise InvalidArgumentError(name, f"must be RecallSettings or a dict, got {type(value).__name__}")


class ContextBuilderConfig(BaseModel):
    """How a :class:`~cogitator_memory.context.ContextBuilder` builds.

    ``max_tokens`` is the total budget (without it, ``build()`` takes one); ``reserve_tokens``
    the tokens kept free for the reply (default 10% of the budget, at least 100). ``partitions``
    is merged over the defaults (see :data:`~cogitator_memory.context.DEFAULT_PARTITIONS`).
    ``time_zone`` is an IANA zone (``"Europe/Lisbon"``), default UTC: recalled turns are dated
    in it and the time a turn names is read in it. ``recall`` holds the search settings of
    ``relevant`` and ``hybrid`` (:class:`RecallSettings`, or a dict of its fields).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    strategy: ContextStrategy = "recent"
    max_tokens: int | None = Field(default=None, gt=0)
    reserve_tokens: int | None = Field(default=None, ge=0)
    include_system_prompt: bool = True
    include_facts: bool = False
    include_semantic_context: bool = False
    include_graph_context: bool = False
    graph_context_options: GraphContextOptions = Field(default_factory=GraphContextOptions)
    partitions: dict[str, Any] | None = None
    time_zone: str = "UTC"
    recall: RecallSettings = Field(default_factory=RecallSettings)


def check_config(value: object) -> ContextBuilderConfig:
    """A checked :class:`ContextBuilderConfig` from a model, a dict or ``None`` (the defaults)."""
    if value is None:
        return ContextBuilderConfig()
    if isinstance(value, ContextBuilderConfig):
        raw: dict[str, Any] = value.model_dump()
    elif isinstance(value, Mapping):
        raw = dict(value)
    else:
        raise InvalidArgumentError("config", f"must be a ContextBuilderConfig or a dict, got {type(value).__name__}")
    if "strategy" in raw:
        check_strategy("config.strategy", raw["strategy"])
    for key in ("max_tokens",):
        if raw.get(key) is not None:
            check_budget(f"config.{key}", raw[key])
    if raw.get("reserve_tokens") is not None:
        check_reserve("config.reserve_tokens", raw["reserve_tokens"])
    if "time_zone" in raw:
        check_time_zone("config.time_zone", raw["time_zone"])
    if "recall" in raw:
        raw["recall"] = check_recall(raw["recall"])
    if "graph_context_options" in raw:
        raw["graph_context_options"] = check_graph_options(raw["graph_context_options"])
    try:
        config = ContextBuilderConfig.model_validate(raw)
    except ValidationError as exc:
        raise tree.validation_error("config", exc) from None
    if (
        config.max_tokens is not None
        and config.reserve_tokens is not None
        and config.reserve_tokens >= config.max_tokens
    ):
        raise InvalidArgumentError(
            "config.reserve_tokens", f"must be less than max_tokens ({config.max_tokens}), got {config.reserve_tokens}"
        )
    return config


def check_strategy(name: str, value: object) -> ContextStrategy:
    """One of ``recent``, ``relevant``, ``hybrid``."""
    if value not in STRATEGIES:
        raise InvalidArgumentError(name, f"unknown strategy {value!r}; known: {', '.join(STRATEGIES)}")
    return value


def check_budget(name: str, value: object) -> int:
    """A token budget: an integer above 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(name, f"must be an integer number of tokens, got {value!r}")
    if value <= 0:
        raise InvalidArgumentError(name, f"must be above 0, got {value}")
    return value


def check_reserve(name: str, value: object) -> int:
    """Reserved tokens: an integer of 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(name, f"must be an integer number of tokens, got {value!r}")
    if value < 0:
        raise InvalidArgumentError(name, f"must be 0 or more, got {value}")
    return value


def check_time_zone(name: str, value: object) -> ZoneInfo:
    """An IANA time zone name."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(name, f"must be an IANA time zone name, got {value!r}")
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgumentError(name, f"unknown time zone {value!r}") from None


def check_text(name: str, value: object) -> str | None:
    """``None`` or a string without lone surrogates (they cannot be encoded for a model)."""
    return check_optional_text(name, value)


def check_texts(name: str, value: object) -> list[str]:
    """``None`` (nothing), a string (one text) or a list of strings; empty texts are left out."""
    if value is None:
        return []
    if isinstance(value, str):
        check_text(name, value)
        return [value] if value.strip() else []
    if not isinstance(value, list | tuple):
        raise InvalidArgumentError(name, f"must be a list of strings, got {type(value).__name__}")
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidArgumentError(f"{name}[{i}]", f"must be a string, got {type(item).__name__}")
        check_text(f"{name}[{i}]", item)
        if item.strip():
            out.append(item)
    return out


def check_as_of(value: object) -> datetime | None:
    """``None`` or a datetime (made aware UTC)."""
    return tree.check_datetime("as_of", value)


def default_reserve(max_tokens: int) -> int:
    """10% of the budget, at least 100."""
    return max(100, math.ceil(max_tokens * 0.1))


__all__ = [
    "FILL_ORDER",
    "HYBRID_RECALL_SHARE",
    "PARTITIONS",
    "STRATEGIES",
    "ContextBuilderConfig",
    "ContextPartition",
    "ContextPartitionBudget",
    "ContextStrategy",
    "GraphContextOptions",
    "RecallSettings",
    "check_as_of",
    "check_budget",
    "check_config",
    "check_graph_options",
    "check_recall",
    "check_reserve",
    "check_share",
    "check_strategy",
    "check_text",
    "check_texts",
    "check_time_zone",
    "default_reserve",
    "merge_partitions",
]
