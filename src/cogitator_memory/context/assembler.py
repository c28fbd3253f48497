"""Partitions and their budgets: :class:`ContextAssembler`, :data:`DEFAULT_PARTITIONS`, :func:`fit_in_order`.

A context is assembled from partitions, each with a share of the budget it may take, some
required. Required partitions are fitted first (``system`` is kept whole even over the budget,
``final``, the input, is always counted); the others split what they leave by their shares, no
more than each needs, and what the shares cannot place goes to those still short of room in
fill order (``facts``, ``recall``, ``recent``). A partition without a share (``recent`` by
default) has what the other shares leave. A block that a kept block of a more lasting partition
holds in full, word for word (whitespace and case aside), is left out as a ``duplicate``.

The assembler does no I/O and knows nothing of threads: give it blocks per partition and,
where a partition chooses its own way (the history strategies), a fitter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import InvalidArgumentError
from .config import (
    FILL_ORDER,
    HYBRID_RECALL_SHARE,
    PARTITIONS,
    ContextPartition,
    ContextPartitionBudget,
    ContextStrategy,
    check_strategy,
    merge_partitions,
)
from .records import ContextBlock, DroppedBlock, DropReason

_REQUIRED = ContextPartitionBudget(required=True)

#: The default budget of every partition (``recall`` takes 0.6 with the hybrid strategy).
DEFAULT_PARTITIONS: Mapping[ContextPartition, ContextPartitionBudget] = MappingProxyType(
    {
        "system": _REQUIRED,
        "pinned": _REQUIRED,
        "index": _REQUIRED,
        "summaries": _REQUIRED,
        "brief": _REQUIRED,
        "facts": ContextPartitionBudget(share=0.15),
        "recall": ContextPartitionBudget(share=0.35),
        "recent": ContextPartitionBudget(share=None),
        "final": _REQUIRED,
    }
)

#: Partitions whose blocks are never dropped as duplicates: the system prompt (kept whole), the
#: history (a turn is part of the conversation even when it repeats a fact) and the input.
NO_DEDUP: frozenset[ContextPartition] = frozenset({"system", "recent", "final"})


def default_partitions(strategy: ContextStrategy = "recent") -> dict[ContextPartition, ContextPartitionBudget]:
    """The default partitions of a strategy (``recall`` takes 0.6 with ``hybrid``)."""
    parts = dict(DEFAULT_PARTITIONS)
    if strategy == "hybrid":
        parts["recall"] = ContextPartitionBudget(share=HYBRID_RECALL_SHARE)
    return parts


@dataclass(slots=True)
class Fit:
    """What a fitter kept (blocks in the order they are to be sent), what it left out and why,
    the tokens it used, and warnings for the build (in :attr:`Assembly.warnings`)."""

    kept: list[ContextBlock] = field(default_factory=list)
    dropped: list[tuple[ContextBlock, DropReason]] = field(default_factory=list)
    used: int = 0
    warnings: list[str] = field(default_factory=list)


Fitter = Callable[[Sequence[ContextBlock], int], Fit]
"""Chooses blocks of one partition for ``room`` tokens: ``fitter(blocks, room) -> Fit``."""


def fit_in_order(blocks: Sequence[ContextBlock], room: int, *, capacity: int | None = None) -> Fit:
    """Keep each block that fits the room left, in the order given (best first); skip the others.

    A block larger than ``capacity`` (the whole room of its partition, ``room`` by default) is
    left out as ``oversized``, one that does not fit what is left as ``budget``.
    """
    whole = room if capacity is None else capacity
    fit = Fit()
    left = max(0, room)
    for block in blocks:
        if block.tokens <= left:
            fit.kept.append(block)
            left -= block.tokens
            fit.used += block.tokens
        else:
            fit.dropped.append((block, "oversized" if block.tokens > whole else "budget"))
    return fit


def normalize(text: str) -> str:
    """The text as duplicates are compared: whitespace runs as one space, case folded."""
    return " ".join(text.split()).casefold()


@dataclass(slots=True)
class Assembly:
    """The outcome of :meth:`ContextAssembler.assemble`.

    ``kept`` holds the blocks kept per partition (in the order to send them), ``dropped`` every
    block left out with its reason, ``tokens`` the tokens used per partition (overheads
    included), ``rooms`` the room each partition had, ``budget`` the budget assembled for.
    """

    budget: int
    kept: dict[ContextPartition, list[ContextBlock]] = field(default_factory=dict)
    dropped: list[tuple[ContextBlock, DropReason]] = field(default_factory=list)
    tokens: dict[ContextPartition, int] = field(default_factory=dict)
    rooms: dict[ContextPartition, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def used(self) -> int:
        """Tokens of every partition together."""
        return sum(self.tokens.values())

    @property
    def dropped_blocks(self) -> list[DroppedBlock]:
        """The left-out blocks as :class:`DroppedBlock` records."""
        return [DroppedBlock(b.partition, reason, b.tokens, b.source_id) for b, reason in self.dropped]


class ContextAssembler:
    """Fits blocks into partitions by the partition budgets (see the module docs).

    ``partitions`` is merged over the defaults of ``strategy``; the shares of the partitions
    that are not required may add up to 1 at most, else this raises
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``partitions``.
    """

    def __init__(
        self,
        partitions: Mapping[str, ContextPartitionBudget | Mapping[str, object]] | None = None,
        *,
        strategy: ContextStrategy = "recent",
    ) -> None:
        check_strategy("strategy", strategy)
        self.partitions: dict[ContextPartition, ContextPartitionBudget] = merge_partitions(
            default_partitions(strategy), partitions
        )

    def shares(self) -> dict[ContextPartition, float]:
        """The share of each partition that is not required; those without one split what the
        others leave."""
        free = [p for p in PARTITIONS if not self.partitions[p].required]
        explicit = {p: self.partitions[p].share for p in free if self.partitions[p].share is not None}
        rest = [p for p in free if p not in explicit]
        left = max(0.0, 1.0 - sum(s for s in explicit.values() if s is not None))
        out: dict[ContextPartition, float] = {p: float(s or 0.0) for p, s in explicit.items()}
        for p in rest:
            out[p] = left / len(rest)
        return out

    def assemble(
        self,
        budget: int,
        blocks: Mapping[ContextPartition, Sequence[ContextBlock]],
        *,
        fitters: Mapping[ContextPartition, Fitter] | None = None,
        overhead: Mapping[ContextPartition, int] | None = None,
    ) -> Assembly:
        """Fit ``blocks`` (per partition, best first or in the order a fitter expects) into
        ``budget`` tokens.

        ``fitters`` choose for partitions of their own (default :func:`fit_in_order`);
        ``overhead`` is what a partition costs once when it keeps anything (a heading, framing).
        """
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise InvalidArgumentError("budget", f"must be an integer, got {budget!r}")
        for key in blocks:
            if key not in PARTITIONS:
                raise InvalidArgumentError("blocks", f"unknown partition {key!r}")
        budget = max(0, budget)
        fitters = fitters or {}
        overhead = overhead or {}
        out = Assembly(budget=budget)
        held: list[str] = []
        used = 0

        def dedup(partition: ContextPartition, candidates: Sequence[ContextBlock]) -> list[ContextBlock]:
            if partition in NO_DEDUP or not held:
                return list(candidates)
            fresh: list[ContextBlock] = []
            for block in candidates:
                text = normalize(block.text)
                if text and any(text in h for h in held):
                    out.dropped.append((block, "duplicate"))
                else:
                    fresh.append(block)
            return fresh

        def run(partition: ContextPartition, candidates: list[ContextBlock], room: int, capacity: int) -> int:
            extra = overhead.get(partition, 0) if candidates else 0
            fitter = fitters.get(partition)
            inner = max(0, room - extra)
            if fitter is not None:
                fit = fitter(candidates, inner)
            else:
                fit = fit_in_order(candidates, inner, capacity=max(0, capacity - extra))
            spent = fit.used + (extra if fit.kept else 0)
            out.kept[partition] = fit.kept
            out.dropped.extend(fit.dropped)
            out.warnings.extend(w for w in fit.warnings if w not in out.warnings)
            out.rooms[partition] = room
            if fit.kept or spent:
                out.tokens[partition] = spent
            for block in fit.kept:
                if partition not in NO_DEDUP:
                    text = normalize(block.text)
                    if text:
                        held.append(text)
            return spent

        # 1. The system prompt (whole, whatever its size) and the input (always counted).
        for partition in ("system", "final"):
            candidates = list(blocks.get(partition, ()))
            if not candidates:
                continue
            spent = sum(b.tokens for b in candidates) + overhead.get(partition, 0)
            out.kept[partition] = candidates
            out.tokens[partition] = spent
            out.rooms[partition] = spent
            if partition == "system":
                held.extend(t for t in (normalize(b.text) for b in candidates) if t)
            used += spent
        if out.tokens.get("system", 0) > budget:
            out.warnings.append(
                f"the system prompt takes {out.tokens['system']} tokens, more than the budget of {budget}:"
                " it is sent whole and nothing else fits"
            )
        elif used > budget:
            out.warnings.append(f"the system prompt and the input take {used} tokens, more than the budget of {budget}")

        # 2. The other required partitions, most lasting first.
        capacity = max(0, budget - used)
        for partition in PARTITIONS:
            if partition in ("system", "final") or not self.partitions[partition].required:
                continue
            candidates = dedup(partition, blocks.get(partition, ()))
            if candidates:
                used += run(partition, candidates, max(0, budget - used), capacity)

        # 3. The others split what is left by their shares, spare room in fill order.
        left = max(0, budget - used)
        shares = self.shares()
        free = [p for p in PARTITIONS if not self.partitions[p].required]
        order = [p for p in FILL_ORDER if p in free] + [p for p in free if p not in FILL_ORDER]
        pending: dict[ContextPartition, list[ContextBlock]] = {}
        need: dict[ContextPartition, int] = {}
        for partition in free:
            candidates = dedup(partition, blocks.get(partition, ()))
            pending[partition] = candidates
            need[partition] = sum(b.tokens for b in candidates) + (overhead.get(partition, 0) if candidates else 0)
        alloc = {p: min(need[p], math.floor(shares.get(p, 0.0) * left)) for p in free}
        spare = left - sum(alloc.values())
        for partition in order:
            if spare <= 0:
                break
            extra = min(spare, need[partition] - alloc[partition])
            if extra > 0:
                alloc[partition] += extra
                spare -= extra
        carry = 0
        for partition in order:
            room = alloc[partition] + carry
            candidates = pending[partition]
            if partition not in NO_DEDUP:  # dedup again against what was really kept before it
                candidates = dedup(partition, candidates)
            if not candidates:
                carry = room
                out.rooms[partition] = room
                out.kept.setdefault(partition, [])
                continue
            spent = run(partition, candidates, room, room)
            used += spent
            carry = max(0, room - spent)
        return out


__all__ = [
    "DEFAULT_PARTITIONS",
    "NO_DEDUP",
    "Assembly",
    "ContextAssembler",
    "Fit",
    "Fitter",
    "default_partitions",
    "fit_in_order",
    "normalize",
]
